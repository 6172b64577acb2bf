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
from ragspan.records.score import DocPredicate, DocPredicateV1, SpanPredicate, SpanPredicateV1
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

# the kinds whose predicate format v1 (``https://ragspan.dev/report/v1``) differs from v2: the
# score reports, their details then per-query rows; every other kind reads the same in both
V1_KINDS: dict[str, type[Predicate[Any, Any, Any]]] = {
    "score.span": SpanPredicateV1,
    "score.doc": DocPredicateV1,
}
