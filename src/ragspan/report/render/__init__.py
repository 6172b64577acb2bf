"""Renderers: report envelope -> text for people.

``render(doc, fmt)`` dispatches on ``(kind, format)``. Every kind has a record
(``records.kinds.TYPED_KINDS``): the report is decoded into its predicate record (or the
part of it its renderer reads, ``VIEWS``, or the whole statement, ``STATEMENTS``) and
rendered from it by its module's ``table`` / ``markdown`` (``RENDERERS``; a kind with
nothing to show but its summary by ``summary_only``). All are built on the text primitives
of ``render.text``; ``json`` is the canonical JSON itself. Every renderer returns text
ending in a newline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.records.envelope import Statement, decode
from ragspan.records.kinds import TYPED_KINDS
from ragspan.records.readout import ReadoutPredicate
from ragspan.report.render import (
    compare,
    contamination,
    migrate,
    plan,
    report,
    score,
    summary_only,
    sweep,
    validate,
)

# a typed kind's renderers by format, each taking its predicate record
RENDERERS: dict[str, dict[str, Callable[[Any], str]]] = {
    "validate": {"table": validate.table, "markdown": validate.markdown},
    "leakage": {"table": contamination.leakage_table,
                "markdown": contamination.leakage_markdown},
    "overlap": {"table": contamination.overlap_table,
                "markdown": contamination.overlap_markdown},
    "migrate": {"table": migrate.table, "markdown": migrate.markdown},
    "plan": {"table": plan.table, "markdown": plan.markdown},
    "sweep": {"table": sweep.table, "markdown": sweep.markdown},
    "error": {"table": summary_only.table, "markdown": summary_only.markdown},
    "adapt": {"table": summary_only.table, "markdown": summary_only.markdown},
    "import": {"table": summary_only.table, "markdown": summary_only.markdown},
    "run-retriever": {"table": summary_only.table, "markdown": summary_only.markdown},
    "score.span": {"table": score.table, "markdown": score.markdown},
    "score.doc": {"table": score.table, "markdown": score.markdown},
    "compare": {"table": compare.table, "markdown": compare.markdown},
    "report": {"table": report.table, "markdown": report.markdown},
}
# what a renderer is handed, where it reads less than the whole record: a score report's
# parameters and summary (its rows are left as read)
VIEWS: dict[str, object] = {"score.span": score.SpanView, "score.doc": score.DocView}
# a renderer that reads the whole statement: the readout names the file it wrote (its
# subject)
STATEMENTS: dict[str, object] = {"report": Statement[ReadoutPredicate]}
# per kind: the record a report is decoded into, and its renderers by format
TYPED: dict[str, tuple[Any, dict[str, Callable[[Any], str]]]] = {
    kind: (STATEMENTS.get(kind) or VIEWS.get(kind, TYPED_KINDS[kind]), by_format)
    for kind, by_format in RENDERERS.items()}

FORMATS = ("json", "table", "markdown")


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return canonical_dumps(doc)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    kind = doc["predicate"]["kind"]
    record, by_format = TYPED[kind]  # every kind has a record (records.kinds)
    return by_format[fmt](decode(doc if kind in STATEMENTS else doc["predicate"], record))
