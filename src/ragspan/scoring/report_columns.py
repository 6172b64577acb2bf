"""A span report's per-question detail as columns (format v2, ``records.score_columns``):
each question's metrics, per cutoff its failure label, every gold span's covered fraction
per cutoff and first rank, and the chunks behind the label of each gold span missing at some
cutoff (``Evidence``), built from the scores' arrays in one numpy pass each."""

from __future__ import annotations

import numpy as np
from msgspec import UNSET, UnsetType

from ragspan.io.evalset import EvalQuery, GoldSpan
from ragspan.records.score_columns import EvidenceTable, GoldSpans, Questions, SpanColumns
from ragspan.records.score_rows import EvidenceChunk
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


def metric_columns(report: SpanReport, values: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Each metric's column as plain floats, in the order given. A value that is not finite is
    refused before any column is written (a metric that computes NaN is a bug, named here)."""
    out: dict[str, list[float]] = {}
    for name, arr in values.items():
        column = np.asarray(arr, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            i = int(bad[0])
            raise RuntimeError(f"internal error: {name} of query "
                               f"'{report.evalset.queries[i].id}' is {column[i]}, not finite")
        out[name] = column.tolist()
    return out


def span_columns(report: SpanReport, values: dict[str, np.ndarray]) -> SpanColumns:
    """A span score's details in format v2 (``records.score_columns``) but for what a run
    with texts or steps adds and the slices (``report_body``): the questions, the metric
    columns of ``values``, per cutoff each question's failure label (None where grounded),
    the gold spans with their covered fraction per cutoff, and the chunks behind the label of
    every gold span missing at some cutoff (a span below tau at a cutoff its question fails)."""
    queries = report.evalset.queries
    sizes = np.fromiter((len(q.gold_spans) for q in queries), np.int64, len(queries))
    owner = np.repeat(np.arange(len(queries)), sizes)
    failure: dict[str, list[str | None]] = {}
    covered: dict[str, list[float]] = {}
    shown = np.zeros(owner.size, dtype=bool)
    names = np.array(LABELS, dtype=object)
    for k in report.ks:
        failing = values[format_name("complete_grounding", k)] < 1.0
        labels = names[np.asarray(report.labels.query[k])]
        labels[~failing] = None
        failure[str(k)] = labels.tolist()
        fraction = np.asarray(report.scores.gold_fraction[k], dtype=np.float64)
        shown |= (fraction < report.tau) & failing[owner]
        covered[str(k)] = fraction.tolist()
    spans = [s for q in queries for s in q.gold_spans]
    return SpanColumns(
        questions=_questions(report), metrics=metric_columns(report, values),
        failure=failure, gold=_gold(report, spans, owner, covered, shown),
        evidence=_evidence(report, np.flatnonzero(shown).tolist()))


def _questions(report: SpanReport) -> Questions:
    queries = report.evalset.queries
    keys = sorted({key for q in queries for key in q.tags})
    return Questions(
        id=[q.id for q in queries], in_run=np.asarray(report.in_run, dtype=bool).tolist(),
        query=[q.query for q in queries], doc_id=[query_document(q) for q in queries],
        tags={key: [q.tags.get(key) for q in queries] for key in keys} or UNSET)


def _gold(report: SpanReport, spans: list[GoldSpan], owner: np.ndarray,
          covered: dict[str, list[float]], shown: np.ndarray) -> GoldSpans:
    """The gold table: every span, its covered fraction per cutoff, first rank, its text
    where it is missing somewhere (with a corpus), and with a manifest its chunk ceiling."""
    facts, corpus = report.labels.facts, report.corpus
    first = [None if f == NOT_IN_POOL else f + 1 for f in facts.first_rank.tolist()]
    decided = facts.ceiling is not None and facts.largest_piece is not None
    text: list[str | None] | UnsetType = UNSET
    if corpus is not None:
        text = [corpus.text(s.doc_id)[s.start: s.end] if show else None
                for s, show in zip(spans, shown.tolist())]
    return GoldSpans(
        question=owner.tolist(), doc_id=[s.doc_id for s in spans],
        start=[s.start for s in spans], end=[s.end for s in spans], covered=covered,
        first_rank=first, text=text,
        chunk_ceiling=np.asarray(facts.ceiling, dtype=np.float64).tolist()
        if decided else UNSET,
        whole_in_one_chunk=(np.asarray(facts.largest_piece) >= 1.0).tolist()
        if decided else UNSET)


def _evidence(report: SpanReport, shown: list[int]) -> EvidenceTable:
    """The chunks behind the label of each span of ``shown`` (gold indices, in order)."""
    found = Evidence(report)
    table = EvidenceTable(gold=[], start=[], end=[], chunk_id=[], rank=[])
    for g in shown:
        for chunk in found.of(g):
            table.gold.append(g)
            table.start.append(chunk.start)
            table.end.append(chunk.end)
            table.chunk_id.append(None if chunk.chunk_id is UNSET else chunk.chunk_id)
            table.rank.append(None if chunk.rank is UNSET else chunk.rank)
    return table


def query_document(q: EvalQuery) -> str | None:
    """The document a query asks about: its scope ``doc_id``, else the one document of its
    gold spans, else its gold documents joined by ``+`` (None without either)."""
    if q.doc_id:
        return str(q.doc_id)
    docs = sorted({s.doc_id for s in q.gold_spans})
    return "+".join(docs) if docs else None
