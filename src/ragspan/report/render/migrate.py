"""``migrate`` reports as a table and as markdown, from the typed report
(``records.migrate.MigratePredicate``): the spans per status, the questions per fate and the
documents added, removed and changed, then every span a person should review (edited,
deleted, ambiguous)."""

from __future__ import annotations

from msgspec import Struct

from ragspan.records.migrate import MigratePredicate, MigrateSummary
from ragspan.report.render.generic import listed
from ragspan.report.render.text import aligned, md_table

REVIEW = ("edited", "deleted", "ambiguous")


def _counts(record: Struct) -> list[tuple[str, int]]:
    """A record of counts as ``(field, count)``, in the record's order."""
    return [(name, getattr(record, name)) for name in record.__struct_fields__]


def rows(summary: MigrateSummary) -> list[list[str]]:
    out = [[f"gold spans {status}", f"{n:,}"] for status, n in _counts(summary.spans)]
    out += [[f"questions {fate.replace('_', ' ')}", f"{n:,}"]
            for fate, n in _counts(summary.questions)]
    out += [[f"documents {what}", f"{n:,}"] for what, n in _counts(summary.documents)]
    return out


def _review(pred: MigratePredicate, fmt: str) -> str:
    header = ["query", "document", "old", "new", "status", "why", "similarity"]
    found = []
    for s in pred.details.spans:
        if s.status not in REVIEW:
            continue
        new = "-" if s.new is None else f"[{s.new[0]}, {s.new[1]})"
        sim = "-" if s.similarity is None else f"{s.similarity:.3f}"
        found.append([s.query_id, s.doc_id, f"[{s.old[0]}, {s.old[1]})", new, s.status,
                      s.reason or "", sim])
    return listed("To review", header, found, 6, fmt, right_from=6)


def headline(summary: MigrateSummary) -> str:
    """What the migration did, in its counts: never a verdict (a migration decides nothing
    about the pull request; ``compare --migration`` does)."""
    q, sp = summary.questions, summary.spans
    return (f"{q.kept:,} questions kept, {q.set_aside:,} set aside for review, "
            f"{q.dropped:,} dropped; gold spans {sp.unchanged:,} unchanged, "
            f"{sp.moved:,} moved, {sp.edited:,} edited, {sp.deleted:,} deleted, "
            f"{sp.ambiguous:,} ambiguous")


def table(pred: MigratePredicate) -> str:
    return (f"ragspan migrate: {headline(pred.summary)}\n\n"
            + aligned(["what", "count"], rows(pred.summary)) + _review(pred, "table"))


def markdown(pred: MigratePredicate) -> str:
    return (f"### ragspan migrate: {headline(pred.summary)}\n\n"
            + md_table(["what", "count"], rows(pred.summary), right_from=1)
            + _review(pred, "markdown"))
