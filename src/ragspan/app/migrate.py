"""``ragspan migrate``: an eval set made on one corpus, carried over to an edited one.

Every gold span gets a status (``evalsets.migrate``); every question a fate:

- ``kept``: each of its spans ``unchanged`` or ``moved`` (or ``edited`` to a similarity of
  ``threshold`` or more, with ``keep_edited``: the row then lists them under
  ``migration.edited``), or, for
  ``match: any``, at least one span left after its ``deleted`` ones are taken out;
- ``set_aside`` (for a person to review): a span ``ambiguous``, or ``edited`` (without
  ``keep_edited``, or below ``threshold``), or a document it judges at doc level removed;
- ``dropped``: a span ``deleted`` (``match: all``), or every span (``match: any``).

The new eval set keeps each kept row as it was but for its gold spans, written out in full
(``doc_id``, ``start``, ``end``, ``text``) and anchored on the new texts; its ``_header``
records the new corpus's documents and what it was migrated from. Nothing is written when no
question survives.
"""

from __future__ import annotations

import logging
from typing import Any

from msgspec import UNSET

from ragspan.app.eval_build import input_ref
from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.evalsets.adapt import provenance
from ragspan.evalsets.build import anchor_spans
from ragspan.evalsets.checks import refuse_errors
from ragspan.evalsets.migrate import STATUSES, Moved, locate_all
from ragspan.io.corpus import Corpus, read_corpus
from ragspan.io.evalset import EvalQuery, EvalSet, corpus_drift, read_eval_set
from ragspan.io.files import decode_records, iter_json_records, read_bytes, sha256_hex
from ragspan.io.rows import HEADER_KEY, content_sha256
from ragspan.io.serialize import built_span, eval_set_text
from ragspan.records.migrate import (
    DocumentChanges,
    DocumentCounts,
    Fate,
    MigrateDetails,
    MigrateParameters,
    MigrateSummary,
    QuestionCounts,
    QuestionFate,
    SpanCounts,
    SpanMove,
)
from ragspan.report.envelope import statement

log = logging.getLogger("ragspan")
FATES = ("kept", "set_aside", "dropped")


def _raw_rows(path: str) -> list[dict[str, Any]]:
    """The eval set's rows as written (the reader has checked them), without its header."""
    text = decode_records(read_bytes(path), path)
    return [obj for _, obj in iter_json_records(text, path) if HEADER_KEY not in obj]


def _fate(q: EvalQuery, moved: list[Moved], new: Corpus, keep_edited: bool,
          threshold: float) -> tuple[Fate, str, list[int]]:
    """A question's fate, why, and the indices of its spans the new row keeps."""
    statuses = [m.status for m in moved]
    if "ambiguous" in statuses:
        return "set_aside", "a gold span has no decidable place", []
    if "edited" in statuses and not keep_edited:
        return "set_aside", f"a gold span's text was edited ({setting('keep-edited')} keeps it)", []
    low = [m.similarity or 0.0 for m in moved if m.status == "edited"
           and (m.similarity or 0.0) < threshold]
    if low:
        return "set_aside", (f"a gold span's text was edited to similarity {min(low):.2f}, "
                             f"below {setting('min-similarity')} {threshold:g}"), []
    gone = [d for d in q.relevance if d not in new.documents]
    if gone:
        return "set_aside", f"judged document '{gone[0]}' was removed", []
    kept = [i for i, s in enumerate(statuses) if s != "deleted"]
    if len(kept) < len(statuses) and (q.match == "all" or not kept):
        return "dropped", "a gold span was deleted" if q.match == "all" else \
            "every gold span was deleted", []
    return "kept", "", kept


def _new_row(raw: dict[str, Any], q: EvalQuery, moved: list[Moved], kept: list[int],
             new: Corpus) -> dict[str, Any]:
    row = {k: v for k, v in raw.items() if k not in ("gold_spans", "migration")}
    spans = []
    edited = []
    for i in kept:
        old, m = q.gold_spans[i], moved[i]
        start, end = int(m.start or 0), int(m.end or 0)
        spans.append(built_span(old.doc_id, start, end, new.text(old.doc_id)[start:end]))
        if m.status == "edited":
            edited.append({"span": len(spans) - 1, "similarity": m.similarity,
                           "old_text": q.gold_spans[i].text
                           if q.gold_spans[i].text is not None else None})
    if q.gold_spans:
        row["gold_spans"] = spans
    if edited:
        row["migration"] = {"edited": [{k: v for k, v in e.items() if v is not None}
                                       for e in edited]}
    return row


def _documents(old: Corpus, new: Corpus) -> DocumentChanges:
    both = sorted(set(old.documents) & set(new.documents))
    return DocumentChanges(
        added=sorted(set(new.documents) - set(old.documents)),
        removed=sorted(set(old.documents) - set(new.documents)),
        changed=[d for d in both if old.documents[d].sha256 != new.documents[d].sha256])


def _check_made_on(evalset: EvalSet, old: Corpus, corpus: str) -> None:
    """The eval set's offsets must index ``old``: its checks pass there and nothing drifted."""
    drifted, _ = corpus_drift(evalset, old)
    if drifted:
        raise InputError(f"the eval set's offsets do not index {setting('corpus')} {corpus}: document "
                         f"'{drifted[0].doc_id}' is not the text the eval set was made on "
                         "(give the corpus it was made on)", evalset.path)
    refuse_errors(evalset, old)


def run(*, eval_set: str, corpus: str, to_corpus: str, out: str,
        keep_edited: bool = False, threshold: float = 0.8) -> CommandResult:
    evalset = read_eval_set(eval_set)
    old, new = read_corpus(corpus), read_corpus(to_corpus)
    _check_made_on(evalset, old, corpus)
    spans = [(s.doc_id, s.start, s.end) for q in evalset.queries for s in q.gold_spans]
    moved = locate_all(old, new, spans, threshold)
    raws = _raw_rows(eval_set)
    rows: list[dict[str, Any]] = []
    listed: list[SpanMove] = []
    fates: list[QuestionFate] = []
    cursor = 0
    for raw, q in zip(raws, evalset.queries):
        mine = moved[cursor:cursor + len(q.gold_spans)]
        cursor += len(q.gold_spans)
        fate, why, kept = _fate(q, mine, new, keep_edited, threshold)
        fates.append(QuestionFate(id=q.id, fate=fate, reason=why or UNSET))
        if fate == "kept":
            rows.append(_new_row(raw, q, mine, kept, new))
        listed += [SpanMove(query_id=q.id, doc_id=s.doc_id, old=[s.start, s.end],
                            new=None if m.start is None else [m.start, int(m.end or 0)],
                            status=m.status, similarity=m.similarity, reason=m.reason or UNSET)
                   for s, m in zip(q.gold_spans, mine)]
    counts = {status: sum(1 for m in moved if m.status == status) for status in STATUSES}
    by_fate = {fate: sum(1 for f in fates if f.fate == fate) for fate in FATES}
    documents = _documents(old, new)
    if not rows:
        raise InputError(f"no question survived the corpus edit ({by_fate['set_aside']} set "
                         f"aside, {by_fate['dropped']} dropped; spans: "
                         + ", ".join(f"{counts[s]} {s}" for s in STATUSES) + ")", eval_set)
    log.warning("migrate: %d of %d questions kept, %d set aside for review, %d dropped; gold "
                "spans: %s", by_fate["kept"], len(fates), by_fate["set_aside"],
                by_fate["dropped"], ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    header = provenance(new, "migrate", migrated_from={
        "eval_set": {"name": eval_set, "sha256": evalset.sha256},
        "corpus": {"name": corpus, "sha256": old.sha256},
        "source": (evalset.header or {}).get("source")})
    texts = {d: doc.text for d, doc in new.documents.items()}
    text = eval_set_text(header, [{**row, "gold_spans": anchor_spans(row["gold_spans"], texts)}
                                  if row.get("gold_spans") else row for row in rows])
    digest = sha256_hex(text.encode("utf-8"))
    summary = MigrateSummary(
        spans=SpanCounts(**counts),
        questions=QuestionCounts(total=len(fates), **by_fate),
        documents=DocumentCounts(added=len(documents.added), removed=len(documents.removed),
                                 changed=len(documents.changed)),
        content_sha256=content_sha256(text, out))
    doc = statement(
        kind="migrate", subject=[InputRef("eval_set", out, digest)],
        inputs=[input_ref("eval_set", eval_set), InputRef("corpus", corpus, old.sha256),
                InputRef("to_corpus", to_corpus, new.sha256)],
        parameters=MigrateParameters(keep_edited=keep_edited, threshold=threshold),
        summary=summary,
        details=MigrateDetails(spans=listed,
                                      questions=[f for f in fates if f.fate != "kept"],
                                      documents=documents))
    return CommandResult(doc, {out: text})
