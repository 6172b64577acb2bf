"""The gate across a corpus change: a baseline scored on the old corpus with eval set E, a
candidate scored on the edited corpus with E2, the eval set ``ragspan migrate`` carried over
(its report, ``kind: migrate``, links the four digests).

``across`` checks that each report is what the migration links (the baseline's eval set and
corpus are E and the old corpus, the candidate's E2 and the new corpus) and that the
candidate's questions are the baseline's less those the migration set aside or dropped.

What happens to the questions left out (docs/gate.md, "Across a corpus change") depends on
whether the migrated eval set is trusted:

- **untrusted** (the default: the gate job migrated the base branch's eval set onto the pull
  request's corpus, so the pull request chose which spans changed): every left-out question
  is decided conservatively, as lost by the candidate (``counted_lost``: its quality metrics
  0 on the candidate's side, its cost columns the baseline's), so the baseline's grounding
  of it counts against the candidate. An edit that sets aside exactly the regressed
  questions cannot hide them.
- **trusted** (the setting ``migrated-eval-set-trusted`` names a reviewed, committed file
  whose sha256 is the migrated eval set's): the left-out questions were reviewed and are left out of the
  pairing; the baseline is restricted to the survivors.

Either way the share of questions left out is bounded (``max_set_aside``, default 5%): past
it the verdict fails (``bound_failure``), and the summary states how many were left out, how
many of them the baseline grounded, and how they were counted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.base.voice import setting
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.query_rows import QueryRow
from ragspan.records.compare import MigrationPart
from ragspan.scoring.metrics.registry import is_budget, parse_name

POPULATION = "whose answers survived the corpus edit"
SET_ASIDE = "set aside by the migration"  # the label of a question counted as lost
POPULATION_COUNTED = ("across the corpus edit, those it left out counted as lost by the "
                      "candidate")


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
    # the migrated eval set's content digest (``summary.content_sha256``; None in a report
    # written before it was recorded)
    to_content_sha256: str | None = None


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
    content = pred["summary"].get("content_sha256")
    if content is not None and (not isinstance(content, str) or len(content) != 64):
        raise InputError("summary.content_sha256 must be a sha256 in hex", name)
    return Migration(name, _sha(pred["inputs"], "eval_set", name),
                     _sha(pred["inputs"], "corpus", name), to_eval,
                     _sha(pred["inputs"], "to_corpus", name),
                     {q["id"]: q["fate"] for q in questions}, dict(spans), content)


def _check_links(base: ScoreReport, cand: ScoreReport, m: Migration, role: str) -> None:
    """Each report is what the migration links, else an InputError naming it; the
    candidate's questions are the old report's less those the migration left out."""
    links = ((base, role, base.eval_sha256, m.eval_sha256, "eval set it was made from"),
             (base, role, base.corpus_sha256, m.corpus_sha256, "corpus it was made on"),
             (cand, "candidate", cand.eval_sha256, m.to_eval_sha256, "migrated eval set"),
             (cand, "candidate", cand.corpus_sha256, m.to_corpus_sha256, "edited corpus"))
    for report, who, got, want, what in links:
        if got != want:
            raise InputError(f"the {who} report was not scored on the migration's {what} "
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


def across(base: ScoreReport, cand: ScoreReport, m: Migration, role: str = "baseline",
           trusted: bool = False) -> ScoreReport:
    """The baseline (or, as ``role`` says, the anchor or the noise report: a report of the
    old corpus) as if scored with the candidate's eval set and corpus: all its questions
    (untrusted: the left-out ones are then paired with ``counted_lost``), or, ``trusted``,
    only those that survived; an InputError naming the report that is not what the
    migration links."""
    _check_links(base, cand, m, role)
    rows = list(range(len(base.ids)))
    if trusted:
        kept = set(cand.ids)
        rows = [i for i, q in enumerate(base.ids) if q in kept]
    return dataclasses.replace(
        base, ids=tuple(base.ids[i] for i in rows), values=base.values[rows],
        rows=tuple(base.rows[i] for i in rows), eval_sha256=cand.eval_sha256,
        corpus_sha256=cand.corpus_sha256)


def counted_lost(base: ScoreReport, cand: ScoreReport) -> ScoreReport:
    """The candidate with a row for each baseline question it lacks (those the migration
    left out), decided as lost: each metric where higher is better at its worst (0), each
    cost column (``retrieved_chars``) at the baseline's value, so the budget check is not
    moved; the row keeps the baseline's text, tags and document (its cluster)."""
    have = set(cand.ids)
    add = [i for i, q in enumerate(base.ids) if q not in have]
    if not add:
        return cand
    b_col = {n: j for j, n in enumerate(base.names)}
    lost = np.zeros((len(add), len(cand.names)))
    for j, name in enumerate(cand.names):
        if not parse_name(name).spec.higher_is_better and name in b_col:
            lost[:, j] = base.values[add, b_col[name]]
    said = {str(k): SET_ASIDE for k in cand.ks}  # the Why line and the table say so
    rows = tuple(QueryRow(base.rows[i].id, base.rows[i].query, dict(base.rows[i].tags), {},
                          dict(said), {}, base.rows[i].doc_id) for i in add)
    return dataclasses.replace(
        cand, ids=cand.ids + tuple(base.ids[i] for i in add),
        values=np.vstack([cand.values, lost]), rows=cand.rows + rows)


def grounding_column(report: ScoreReport, k: int) -> str | None:
    """The column that says a question was answered at count cutoff ``k``: complete
    grounding (span reports), a relevant document found (doc reports)."""
    name = (f"complete_grounding@{k}" if report.kind == "score.span"
            else f"doc_hit_rate@{k}")
    return name if name in report.names else None


def left_out_part(base: ScoreReport, m: Migration, trusted: bool,
                  max_set_aside: float) -> MigrationPart:
    """The summary's ``migration`` part: the questions, those that survived, those set
    aside and dropped, how many of the left-out ones the baseline grounded at each count
    cutoff, how they were counted, and the bound on their share."""
    ids = set(base.ids)
    left = {q: f for q, f in m.left_out.items() if q in ids}
    index = {q: i for i, q in enumerate(base.ids)}
    grounded: dict[str, int] = {}
    for k in base.ks:
        if is_budget(k):
            continue
        column = grounding_column(base, k)
        if column is not None:
            values = base.column(column)
            grounded[str(k)] = int(sum(values[index[q]] >= 1.0 for q in left))
    share = len(left) / len(base.ids) if base.ids else 0.0
    return MigrationPart(
        report=m.path, questions=len(base.ids), survived=len(base.ids) - len(left),
        set_aside=sum(1 for f in left.values() if f == "set_aside"),
        dropped=sum(1 for f in left.values() if f == "dropped"),
        left_out_grounded_by_baseline=grounded,
        counted_as="left out (the migrated eval set is trusted)" if trusted
        else "lost by the candidate",
        trusted=trusted, left_out_share=share, max_set_aside=max_set_aside,
        over_bound=share > max_set_aside + 1e-12, spans=dict(m.spans),
        population=POPULATION if trusted else POPULATION_COUNTED)


def bound_failure(part: MigrationPart) -> str | None:
    """The verdict's reason when the corpus edit left out more than ``max_set_aside`` of
    the questions (None within the bound)."""
    if not part.over_bound:
        return None
    left = part.set_aside + part.dropped
    return (f"the corpus edit left {left} of {part.questions} questions out of the gate "
            f"({part.left_out_share:.1%}: {part.set_aside} set aside, "
            f"{part.dropped} dropped), past {setting('max-set-aside')} "
            f"{part.max_set_aside:.1%}: the verdict would rest on the questions the edit "
            "chose; review the spans the migration lists (or raise the bound)")


def left_out_warning(part: MigrationPart) -> str | None:
    """One line saying what happened to the questions the edit left out."""
    left = part.set_aside + part.dropped
    if not left:
        return None
    grounded = part.left_out_grounded_by_baseline
    said = ", ".join(f"{n} at @{k}" for k, n in grounded.items())
    head = (f"{left} of {part.questions} questions were left out by the corpus edit "
            f"({part.set_aside} set aside for review, {part.dropped} dropped; the "
            f"baseline grounded {said or 'none'})")
    if part.trusted:
        return (head + ": the migrated eval set is trusted, so the verdict is about the "
                "rest; review the spans the migration lists")
    return (head + ": each is counted as lost by the candidate (the migrated eval set is not "
            f"trusted: {setting('migrated-eval-set-trusted')} names a reviewed one)")
