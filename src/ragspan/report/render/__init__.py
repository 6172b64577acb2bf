"""Renderers: report envelope -> text for people.

``render(doc, fmt)`` dispatches on ``(kind, format)``: one module per report kind
(``score``, ``compare``, ``validate``, and ``generic`` for every other kind), each with ``table(doc)`` and
``markdown(doc)``, built on the text primitives of ``render.text``; ``json`` is the canonical
JSON itself. A kind typed in ``records`` is decoded into its predicate record and rendered
from it (``TYPED``, dispatched by the record's type); the others take the envelope (a dict
read back from canonical JSON). Every renderer returns text ending in a newline.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.records.contamination import LeakagePredicate, OverlapPredicate
from ragspan.records.envelope import decode
from ragspan.records.error import ErrorPredicate
from ragspan.records.migrate import MigratePredicate
from ragspan.records.plan import PlanPredicate
from ragspan.records.sweep import SweepPredicate
from ragspan.records.validate import ValidatePredicate
from ragspan.report.render import contamination, error, migrate, plan, sweep, validate

# a typed kind: its predicate record, and its renderers by format, taking that record
TYPED: dict[str, tuple[type[Any], dict[str, Callable[[Any], str]]]] = {
    "validate": (ValidatePredicate, {"table": validate.table, "markdown": validate.markdown}),
    "leakage": (LeakagePredicate, {"table": contamination.leakage_table,
                                   "markdown": contamination.leakage_markdown}),
    "overlap": (OverlapPredicate, {"table": contamination.overlap_table,
                                   "markdown": contamination.overlap_markdown}),
    "migrate": (MigratePredicate, {"table": migrate.table, "markdown": migrate.markdown}),
    "error": (ErrorPredicate, {"table": error.table, "markdown": error.markdown}),
    "plan": (PlanPredicate, {"table": plan.table, "markdown": plan.markdown}),
    "sweep": (SweepPredicate, {"table": sweep.table, "markdown": sweep.markdown}),
}

FORMATS = ("json", "table", "markdown")
MODULE_OF_KIND = {"score.span": "score", "score.doc": "score", "compare": "compare",
                  "report": "report"}


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return canonical_dumps(doc)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    kind = doc["predicate"]["kind"]
    if kind in TYPED:
        record, by_format = TYPED[kind]
        return by_format[fmt](decode(doc["predicate"], record))
    module = MODULE_OF_KIND.get(kind, "generic")
    text: str = getattr(import_module(f"ragspan.report.render.{module}"), fmt)(doc)
    return text
