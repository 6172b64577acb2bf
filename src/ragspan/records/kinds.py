"""Every report kind typed in ``records``, by its ``kind``: its predicate record. The
renderers dispatch on it (``report.render``), the published schema's part for each kind is
generated from it (``report.schema_build``), and the round-trip tests walk it."""

from __future__ import annotations

from typing import Any

from ragspan.records.compare import ComparePredicate
from ragspan.records.contamination import LeakagePredicate, OverlapPredicate
from ragspan.records.envelope import Predicate
from ragspan.records.error import ErrorPredicate
from ragspan.records.evalbuild import AdaptPredicate
from ragspan.records.imported import ImportPredicate
from ragspan.records.migrate import MigratePredicate
from ragspan.records.plan import PlanPredicate
from ragspan.records.readout import ReadoutPredicate
from ragspan.records.retrieval import RetrievalPredicate
from ragspan.records.score import DocPredicate, SpanPredicate
from ragspan.records.sweep import SweepPredicate
from ragspan.records.validate import ValidatePredicate

TYPED_KINDS: dict[str, type[Predicate[Any, Any, Any]]] = {
    "score.span": SpanPredicate,
    "score.doc": DocPredicate,
    "compare": ComparePredicate,
    "report": ReadoutPredicate,
    "import": ImportPredicate,
    "run-retriever": RetrievalPredicate,
    "validate": ValidatePredicate,
    "leakage": LeakagePredicate,
    "overlap": OverlapPredicate,
    "migrate": MigratePredicate,
    "plan": PlanPredicate,
    "sweep": SweepPredicate,
    "error": ErrorPredicate,
    "adapt": AdaptPredicate,
}
