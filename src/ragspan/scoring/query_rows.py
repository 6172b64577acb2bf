"""The per-query rows of a span report (``details.queries``): each query's metrics, and for
a query failing complete grounding at k its failure label, the gold spans below tau and the
chunks behind each label (``Evidence``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from msgspec import UNSET

from ragspan.io.evalset import EvalQuery, GoldSpan
from ragspan.records.score_rows import Evidence as SpanEvidence
from ragspan.records.score_rows import EvidenceChunk, MissingSpan, Row
from ragspan.scoring.metrics.failures import NOT_IN_POOL
from ragspan.scoring.metrics.registry import LABELS, format_name
from ragspan.scoring.span_scoring import SpanReport

MAX_EVIDENCE = 20


class Evidence:
    """The chunks behind each failing gold span's label: with a manifest, every chunk that
    overlaps the span (its id, offsets, and its rank in the pool, 1 = first, or None when
    the run did not retrieve it); without one, the retrieved spans that overlap it (chunk id
    when the run gave one, offsets, rank), best first; at most ``MAX_EVIDENCE`` each.

    The overlapping pairs are sorted and cut into per-span ranges once, as plain lists, so
    each span's list is a short Python loop."""

    def __init__(self, report: SpanReport):
        facts, ranked = report.labels.facts, report.ranked
        self.facts = facts
        n_gold = facts.first_rank.size
        g, r = facts.pool_pairs
        order = np.lexsort((ranked.start[r], ranked.rank[r], g))
        g, r = g[order], r[order]
        self.pool_bounds = self._bounds(g, n_gold)
        chunk_ids = report.run.spans.chunk_id
        ids = ([chunk_ids[i] for i in ranked.source[r].tolist()] if ranked.source is not None
               else [None] * r.size)  # no source: the chunk ids are not known
        self.pool = list(zip(ranked.start[r].tolist(), ranked.end[r].tolist(),
                             (ranked.rank[r] + 1).tolist(), ids))
        self.chunks = None
        if facts.chunk_pairs is not None and report.manifest is not None:
            g, c = facts.chunk_pairs
            chunks = report.manifest.chunks
            starts = np.fromiter((chunks[i].start for i in c.tolist()), np.int64, c.size)
            ends = np.fromiter((chunks[i].end for i in c.tolist()), np.int64, c.size)
            order = np.lexsort((ends, starts, g))
            self.chunk_bounds = self._bounds(g[order], n_gold)
            self.chunks = [chunks[i] for i in c[order].tolist()]

    @staticmethod
    def _bounds(sorted_g: np.ndarray, n: int) -> list[tuple[int, int]]:
        spans = np.arange(n)
        lo = np.searchsorted(sorted_g, spans, "left").tolist()
        hi = np.searchsorted(sorted_g, spans, "right").tolist()
        return list(zip(lo, hi))

    def entry(self, g: int, span: GoldSpan) -> SpanEvidence:
        """A failing span's evidence, whatever the k: its chunks; its first rank in the pool
        (1-based; None when no retrieved span overlaps it); with a manifest the share of it
        its chunks together can cover (``chunk_ceiling``) and whether one chunk holds it
        whole. The label at each k follows from these (``metrics.failures``)."""
        facts = self.facts
        first = int(facts.first_rank[g])
        ceiling, piece = facts.ceiling, facts.largest_piece
        decided = ceiling is not None and piece is not None
        return SpanEvidence(
            doc_id=span.doc_id, start=span.start, end=span.end, chunks=self.of(g),
            first_rank=None if first == NOT_IN_POOL else first + 1,
            chunk_ceiling=float(ceiling[g]) if ceiling is not None and decided else UNSET,
            whole_in_one_chunk=bool(piece[g] >= 1.0) if piece is not None and decided
            else UNSET)

    def of(self, g: int) -> list[EvidenceChunk]:
        lo, hi = self.pool_bounds[g]
        pool = self.pool[lo:hi]
        if self.chunks is None:
            out: list[EvidenceChunk] = []
            seen = set()
            for start, end, rank, chunk_id in pool:
                if (start, end) in seen:
                    continue
                seen.add((start, end))
                out.append(EvidenceChunk(start=start, end=end, rank=rank,
                                         chunk_id=UNSET if chunk_id is None else chunk_id))
                if len(out) == MAX_EVIDENCE:
                    break
            return out
        rank_at: dict[tuple[int, int], int] = {}
        for start, end, rank, _ in pool:
            rank_at.setdefault((start, end), rank)
        lo, hi = self.chunk_bounds[g]
        return [EvidenceChunk(chunk_id=c.chunk_id, start=c.start, end=c.end,
                              rank=rank_at.get((c.start, c.end)))
                for c in self.chunks[lo:min(hi, lo + MAX_EVIDENCE)]]


def row_columns(report: SpanReport, values: dict[str, np.ndarray]) -> tuple[Any, ...]:
    """What ``query_rows`` reads per query, as plain Python values made in one numpy pass each
    (no numpy scalar per query): the metric names and one row of floats per query (as
    ``float(arr[i])``), ``in_run``, and per k whether the query is grounded, its label
    code and its gold spans' covered fractions. A value that is not finite is refused on the
    matrix, before any row is built (a metric that computes NaN is a bug, named here)."""
    names = list(values)
    if not names:
        return names, [[] for _ in report.evalset.queries], *_flags(report, values)
    stacked = np.column_stack([np.asarray(values[n], dtype=np.float64) for n in names])
    bad = np.argwhere(~np.isfinite(stacked))
    if bad.size:
        i, j = bad[0].tolist()
        raise RuntimeError(f"internal error: {names[j]} of query "
                           f"'{report.evalset.queries[i].id}' is {stacked[i, j]}, not finite")
    return names, stacked.tolist(), *_flags(report, values)


def _flags(report: SpanReport, values: dict[str, np.ndarray]) -> tuple[Any, ...]:
    """``in_run``, and per k whether each query is grounded, its label code and its gold
    spans' covered fractions, as plain lists."""
    in_run = np.asarray(report.in_run, dtype=bool).tolist()
    grounded = {k: (values[format_name("complete_grounding", k)] >= 1.0).tolist()
                for k in report.ks}
    label_of = {k: np.asarray(report.labels.query[k]).tolist() for k in report.ks}
    fractions = {k: np.asarray(report.scores.gold_fraction[k]).tolist() for k in report.ks}
    return in_run, grounded, label_of, fractions


def query_rows(report: SpanReport, values: dict[str, np.ndarray]) -> list[Row]:
    """Per-query rows; a query failing complete grounding at k has its label at k
    (``failure``) and lists the gold spans below tau (``missing_spans``); what decided the
    label of each failing span is listed once, whatever the k (``failure_evidence``)."""
    rows = []
    gold_pos = 0
    evidence = Evidence(report)
    shown: dict[int, SpanEvidence] = {}
    names, matrix, in_run, grounded, label_of, fractions = row_columns(report, values)
    corpus = report.corpus
    for i, q in enumerate(report.evalset.queries):
        n_gold = len(q.gold_spans)
        missing: dict[str, list[MissingSpan]] = {}
        failure: dict[str, str] = {}
        for k in report.ks:
            if grounded[k][i]:
                continue
            failure[str(k)] = LABELS[label_of[k][i]]
            frac = fractions[k][gold_pos: gold_pos + n_gold]
            spans = []
            for j, (span, f) in enumerate(zip(q.gold_spans, frac)):
                if f >= report.tau:
                    continue
                g = gold_pos + j
                if g not in shown:
                    shown[g] = evidence.entry(g, span)
                spans.append(MissingSpan(
                    doc_id=span.doc_id, start=span.start, end=span.end, covered=float(f),
                    text=UNSET if corpus is None
                    else corpus.text(span.doc_id)[span.start: span.end]))
            missing[str(k)] = spans
        document = query_document(q)
        rows.append(Row(
            id=q.id, query=q.query, in_run=in_run[i], metrics=dict(zip(names, matrix[i])),
            doc_id=UNSET if document is None else document, tags=q.tags or UNSET,
            missing_spans=missing or UNSET, failure=failure if missing else UNSET,
            failure_evidence=[shown[g] for g in range(gold_pos, gold_pos + n_gold)
                              if g in shown] if missing else UNSET))
        gold_pos += n_gold
    return rows


def query_document(q: EvalQuery) -> str | None:
    """The document a query asks about: its scope ``doc_id``, else the one document of its
    gold spans, else its gold documents joined by ``+`` (None without either)."""
    if q.doc_id:
        return str(q.doc_id)
    docs = sorted({s.doc_id for s in q.gold_spans})
    return "+".join(docs) if docs else None
