"""The per-query rows the gate reads besides the metric matrix (``QueryRow``): a query's
text, tags, document, failure label per cutoff, and the gold spans it left below tau with
the chunks behind their labels, from a v1 report's rows (``row_query_row``) or a v2
report's columns (``column_rows``: each question a ``ColumnRow``, its fields read from the
columns when first asked for)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET, UnsetType

from ragspan.base.errors import InputError
from ragspan.records.compare_details import LostSpan
from ragspan.records.score_columns import DocColumns, SpanColumns, SpanRows, check_columns
from ragspan.records.score_rows import Evidence, EvidenceChunk, MissingSpan, Row

Spot = tuple[str, int, int]  # a gold span: its document, start and end


@dataclass(frozen=True, slots=True)
class QueryRow:
    """What the gate reads of a query besides its metrics: its text, its tags, per k its
    failure label and the gold spans it left below tau, and the chunks behind each such
    span's label."""

    id: str
    query: str
    tags: dict[str, str]
    missing_spans: Mapping[str, list[MissingSpan]]
    failure: Mapping[str, str]  # k -> failure label (``metrics.failures``), where it failed
    evidence: Mapping[Spot, list[EvidenceChunk]]  # a span missing somewhere -> its chunks
    doc_id: str | None = None  # the document the query asks about (its cluster by doc_id)

    def lost(self, k: str) -> list[LostSpan]:
        """The gold spans missing at ``k``, each with the chunks behind its label."""
        return [LostSpan(doc_id=s.doc_id, start=s.start, end=s.end, covered=s.covered,
                         text=s.text, chunks=list(self.evidence.get((s.doc_id, s.start, s.end),
                                                                    [])))
                for s in self.missing_spans.get(k, [])]


class ColumnSpans:
    """A v2 report's question ``i``: its failure labels, missing spans and their evidence,
    read from the columns when first asked for (most questions are never shown)."""

    __slots__ = ("_spans", "_i", "_read", "_failure")

    def __init__(self, spans: SpanRows, i: int):
        self._spans, self._i = spans, i
        self._read: tuple[dict[str, list[MissingSpan]],
                          dict[Spot, list[EvidenceChunk]]] | None = None
        self._failure: dict[str, str] | None = None

    def read(self) -> tuple[dict[str, list[MissingSpan]], dict[Spot, list[EvidenceChunk]]]:
        if self._read is None:
            missing, _, evidence = self._spans.of(self._i)
            self._read = (missing, _evidence_of(evidence))
        return self._read

    def missing(self) -> dict[str, list[MissingSpan]]:
        return self.read()[0]

    def evidence(self) -> dict[Spot, list[EvidenceChunk]]:
        return self.read()[1]

    def failure(self) -> dict[str, str]:
        if self._failure is None:
            self._failure = self._spans.failure_of(self._i)
        return self._failure


class _Questions:
    """A v2 report's questions as its column rows read them."""

    def __init__(self, details: SpanColumns, spans: SpanRows):
        q = details.questions
        self.ids, self.spans = q.id, spans
        self.tags = list(q.tags.items()) if not isinstance(q.tags, UnsetType) else []
        self.texts = q.query if not isinstance(q.query, UnsetType) else None
        self.docs = q.doc_id if not isinstance(q.doc_id, UnsetType) else None
        self.read: dict[int, ColumnSpans] = {}  # the questions whose spans were asked for


class ColumnRow(QueryRow):
    """A v2 report's question ``i`` as the gate reads it, each field read from the columns
    when asked for (a report of 10,000 questions shows a few; ``QueryRow``'s fields as
    read-only properties)."""

    __slots__ = ("_at",)
    _at: tuple[_Questions, int]

    def __init__(self, table: _Questions, i: int):  # noqa: D107 - the class says it
        object.__setattr__(self, "_at", (table, i))

    @property
    def id(self) -> str:
        table, i = self._at
        return table.ids[i]

    @property
    def query(self) -> str:
        table, i = self._at
        return "" if table.texts is None else table.texts[i]

    @property
    def tags(self) -> dict[str, str]:
        table, i = self._at
        return {key: t for key, v in table.tags if (t := v[i]) is not None}

    @property
    def doc_id(self) -> str | None:
        table, i = self._at
        return None if table.docs is None else table.docs[i]

    @property
    def failure(self) -> Mapping[str, str]:
        return self._column_spans().failure()

    @property
    def missing_spans(self) -> Mapping[str, list[MissingSpan]]:
        return self._column_spans().missing()

    @property
    def evidence(self) -> Mapping[Spot, list[EvidenceChunk]]:
        return self._column_spans().evidence()

    def _column_spans(self) -> ColumnSpans:
        table, i = self._at
        spans = table.read.get(i)
        if spans is None:
            spans = table.read[i] = ColumnSpans(table.spans, i)
        return spans


def _evidence_of(evidence: list[Evidence]) -> dict[Spot, list[EvidenceChunk]]:
    return {(e.doc_id, e.start, e.end): [] if isinstance(e.chunks, UnsetType) else e.chunks
            for e in evidence}


def row_query_row(r: Row) -> QueryRow:
    """A v1 report's row as the gate reads it."""
    failure = r.failure if r.failure is not UNSET else {}
    return QueryRow(r.id, r.query if r.query is not UNSET else "",
                    r.tags if r.tags is not UNSET else {},
                    r.missing_spans if r.missing_spans is not UNSET else {}, failure,
                    _evidence_of(r.failure_evidence) if r.failure_evidence is not UNSET
                    else {}, r.doc_id if r.doc_id is not UNSET else None)


def column_rows(details: SpanColumns | DocColumns, pred: dict[str, Any], role: str,
                 name: str) -> list[QueryRow]:
    """A v2 report's rows as the gate reads them (no metrics: those are the columns; the
    missing spans and evidence read from the columns when first asked for), once its columns
    are shown readable (``check_columns``)."""
    problem = check_columns(details)
    if problem is not None:
        raise InputError(f"not a valid ragspan report: $.predicate.details: {problem}", name)
    if not details.questions.id:
        raise InputError(f"the {role} report has no per-query rows", name)
    tau = None
    if isinstance(details, SpanColumns):
        tau = pred["parameters"].get("grounding_threshold")
        if not isinstance(tau, (int, float)) or isinstance(tau, bool):
            raise InputError(f"the {role} report's parameters.grounding_threshold is needed "
                             "to read its gold spans", name)
    q = details.questions
    if isinstance(details, DocColumns):
        return [QueryRow(qid, "", {}, {}, {}, {}) for qid in q.id]
    assert tau is not None
    table = _Questions(details, SpanRows(details, float(tau)))
    return [ColumnRow(table, i) for i in range(len(q.id))]
