"""The gate across a corpus change: a baseline scored on the old corpus with eval set E, a
candidate scored on the edited corpus with E2, the eval set ``ragspan migrate`` carried over
(its report, ``kind: migrate``, links the four digests).

``across`` checks that each report is what the migration links (the baseline's eval set and
corpus are E and the old corpus, the candidate's E2 and the new corpus), that the candidate's
questions are the baseline's less those the migration set aside or dropped, and returns the
baseline restricted to the questions that survived, in its own order, so the comparison pairs
only those; the summary states how many were left out and why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError
from ragspan.base.voice import setting
from ragspan.gate.inputs import ScoreReport

POPULATION = "whose answers survived the corpus edit"


@dataclass(frozen=True)
class Migration:
    """What a ``migrate`` report links, and the questions it left out (id -> fate)."""

    path: str
    eval_sha256: str
    corpus_sha256: str
    to_eval_sha256: str
    to_corpus_sha256: str
    left_out: dict[str, str]
    spans: dict[str, int]


def _sha(refs: list[Any], role: str, name: str) -> str:
    for ref in refs:
        if isinstance(ref, dict) and ref.get("role") == role:
            sha = ref.get("digest", {}).get("sha256")
            if isinstance(sha, str) and sha:
                return sha
    raise InputError(f"the migration report records no {role.replace('_', ' ')} digest", name)


def migration_of(doc: dict[str, Any], name: str) -> Migration:
    """A loaded, schema-valid report read as a migration (an InputError naming the file and
    the key when it is not one)."""
    pred = doc["predicate"]
    if pred["kind"] != "migrate":
        raise InputError(f"{setting('migration')} is a '{pred['kind']}' report, not a migrate "
                         "report", name)
    subject = [s for s in doc["subject"] if isinstance(s, dict)]
    to_eval = subject[0]["digest"].get("sha256") if subject else None
    if not isinstance(to_eval, str) or not to_eval:
        raise InputError("the migration report names no migrated eval set (subject)", name)
    questions = pred["details"].get("questions")
    if not isinstance(questions, list) or not all(
            isinstance(q, dict) and isinstance(q.get("id"), str)
            and q.get("fate") in ("set_aside", "dropped") for q in questions):
        raise InputError("details.questions must list each question left out with its id "
                         "and fate (set_aside or dropped)", name)
    spans = pred["summary"].get("spans")
    if not isinstance(spans, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in spans.values()):
        raise InputError("summary.spans must count the gold spans per status", name)
    return Migration(name, _sha(pred["inputs"], "eval_set", name),
                     _sha(pred["inputs"], "corpus", name), to_eval,
                     _sha(pred["inputs"], "to_corpus", name),
                     {q["id"]: q["fate"] for q in questions}, dict(spans))


def across(base: ScoreReport, cand: ScoreReport, m: Migration, role: str = "baseline"
           ) -> tuple[ScoreReport, dict[str, Any]]:
    """The baseline (or, as ``role`` says, the anchor or the noise report: a report of the
    old corpus) restricted to the questions that survived, as if scored with the
    candidate's eval set and corpus, and the summary's ``migration`` part; an InputError
    naming the report that is not what the migration links."""
    links = ((base, role, base.eval_sha256, m.eval_sha256, "eval set it was made from"),
             (base, role, base.corpus_sha256, m.corpus_sha256, "corpus it was made on"),
             (cand, "candidate", cand.eval_sha256, m.to_eval_sha256, "migrated eval set"),
             (cand, "candidate", cand.corpus_sha256, m.to_corpus_sha256, "edited corpus"))
    for report, role, got, want, what in links:
        if got != want:
            raise InputError(f"the {role} report was not scored on the migration's {what} "
                             f"(sha256 {str(got)[:12]} vs {want[:12]})", report.path)
    kept = set(cand.ids)
    extra = sorted(kept - set(base.ids))
    if extra:
        raise InputError(f"{len(extra)} candidate questions are not in the {role} (e.g. "
                         f"{extra[:3]})", cand.path)
    missing = sorted(q for q in base.ids if q not in kept and q not in m.left_out)
    if missing:
        raise InputError(f"{len(missing)} {role} questions are neither in the candidate nor "
                         f"left out by the migration (e.g. {missing[:3]})", cand.path)
    rows = [i for i, q in enumerate(base.ids) if q in kept]
    restricted = dataclasses.replace(
        base, ids=tuple(base.ids[i] for i in rows), values=base.values[rows],
        rows=tuple(base.rows[i] for i in rows), eval_sha256=cand.eval_sha256,
        corpus_sha256=cand.corpus_sha256)
    left = {q: f for q, f in m.left_out.items() if q in set(base.ids)}
    part = {"report": m.path, "questions": len(base.ids), "survived": len(rows),
            "set_aside": sum(1 for f in left.values() if f == "set_aside"),
            "dropped": sum(1 for f in left.values() if f == "dropped"),
            "spans": m.spans, "population": POPULATION}
    return restricted, part
