"""What a chunking allows before any retriever runs, measured against an eval set's gold
spans: span integrity (the share of gold spans one chunk contains whole), spans no set of
chunks covers to tau, relevant chunks per query and the ``precision@k`` ceiling they set.
Offsets are Python string indices into the corpus documents; chunks are half-open."""

from __future__ import annotations

import bisect

import numpy as np
from msgspec import UNSET, structs

from ragspan.io.chunks import Chunk, ChunkManifest
from ragspan.io.evalset import EvalSet
from ragspan.records.validate import (
    ChunkingDiagnostics,
    Distribution,
    Finding,
    ScoreChunking,
    SpanIntegrity,
)
from ragspan.scoring.metrics.failures import chunk_pairs
from ragspan.scoring.metrics.span import GoldColumns
from ragspan.scoring.span_scoring import DocCodes, chunk_columns
from ragspan.scoring.spans import merged


class DocChunks:
    """Chunks of one document, for containment and union-coverage queries."""

    def __init__(self, chunks: list[Chunk]):
        cs = sorted(chunks, key=lambda c: (c.start, c.end))
        self.starts = [c.start for c in cs]
        self.max_end: list[int] = []
        best = -1
        for c in cs:
            best = max(best, c.end)
            self.max_end.append(best)
        self.union = merged((c.start, c.end) for c in cs)

    def contains(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self.starts, start)
        return i > 0 and self.max_end[i - 1] >= end

    def covered(self, start: int, end: int) -> int:
        return sum(max(0, min(e, end) - max(s, start)) for s, e in self.union)


def check_chunks(evalset: EvalSet, by_doc: dict[str, DocChunks], tau: float
                 ) -> tuple[list[Finding], SpanIntegrity]:
    """Each gold span no chunk holds whole (a warning) or that no set of chunks covers to
    ``tau`` (an error), and the coverage counts."""
    findings: list[Finding] = []
    total = whole = unreachable = 0
    for q in evalset.queries:
        for i, s in enumerate(q.gold_spans):
            total += 1
            dc = by_doc.get(s.doc_id)
            if dc is not None and dc.contains(s.start, s.end):
                whole += 1
                continue
            cover = dc.covered(s.start, s.end) / s.length if dc is not None else 0.0
            where = f"gold_spans[{i}] '{s.doc_id}'[{s.start}:{s.end}]"
            if cover < tau:
                unreachable += 1
                findings.append(Finding("unreachable_span", "error", q.id,
                                        f"{where}: at most {cover:.3f} coverable < tau {tau}"))
            else:
                findings.append(Finding("severed_span", "warning", q.id,
                                        f"{where}: no single chunk holds it whole"))
    integrity = whole / total if total else 1.0
    return findings, SpanIntegrity(gold_spans=total, contained_whole=whole,
                                   span_integrity=integrity, unreachable_spans=unreachable)


def _distribution(values: list[int] | list[float]) -> Distribution:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Distribution(mean=0.0, median=0.0, p90=0.0, max=0.0)
    return Distribution(mean=float(arr.mean()), median=float(np.median(arr)),
                        p90=float(np.percentile(arr, 90)), max=float(arr.max()))


def relevant_chunks(evalset: EvalSet, manifest: ChunkManifest) -> list[int]:
    """Per query, the chunks relevant to it: in a gold span's document and overlapping one
    of its gold spans (the relevance of ``precision@k``), found by the failure labels' own
    overlap join (``metrics.failures.chunk_pairs``)."""
    codes = DocCodes()
    spans = [(i, s) for i, q in enumerate(evalset.queries) for s in q.gold_spans]
    query, start, end = (np.asarray(v, dtype=np.int64).reshape(-1) for v in (
        [i for i, _ in spans], [s.start for _, s in spans], [s.end for _, s in spans]))
    gold = GoldColumns(query, codes.many([s.doc_id for _, s in spans]), start, end,
                       np.zeros(len(evalset.queries), dtype=bool), len(evalset.queries))
    g, c = chunk_pairs(gold, chunk_columns(manifest, codes))
    pairs = np.unique(gold.query[g] * max(len(manifest.chunks), 1) + c)
    counts: list[int] = np.bincount(pairs // max(len(manifest.chunks), 1),
                                    minlength=gold.n_queries).tolist()
    return counts


def chunking_diagnostics(evalset: EvalSet, manifest: ChunkManifest, ks: tuple[int, ...],
                         attained: dict[int, float] | None = None) -> ChunkingDiagnostics:
    """What the chunking allows before any retriever runs: relevant chunks per query, the
    ceiling it puts on ``precision@k`` (relevant chunks available / k, capped at 1,
    averaged over queries), the chunk lengths in characters; with a run's mean
    ``precision@k`` (``attained``), the share of the ceiling it reached."""
    relevant = relevant_chunks(evalset, manifest)
    n = max(len(relevant), 1)
    ceiling = {k: sum(min(r / k, 1.0) for r in relevant) / n for k in ks}
    return ChunkingDiagnostics(
        chunks=len(manifest.chunks),
        chunk_chars=_distribution([c.end - c.start for c in manifest.chunks]),
        relevant_chunks_per_query=_distribution(relevant),
        queries_without_a_relevant_chunk=sum(1 for r in relevant if r == 0),
        precision_ceiling={str(k): v for k, v in ceiling.items()},
        precision_attained=UNSET if attained is None else {str(k): attained[k] for k in ks},
        precision_share_of_ceiling=UNSET if attained is None else {
            str(k): attained[k] / ceiling[k] if ceiling[k] > 0 else 0.0 for k in ks})


def span_integrity(evalset: EvalSet, manifest: ChunkManifest, tau: float) -> SpanIntegrity:
    """The coverage counts of a chunking: gold spans, those one chunk contains whole, the
    contained share (*span integrity*; 1.0 with no gold span), and those no set of chunks
    covers to tau."""
    by_doc = {d: DocChunks(cs) for d, cs in manifest.by_doc().items()}
    return check_chunks(evalset, by_doc, tau)[1]


def chunking_summary(evalset: EvalSet, manifest: ChunkManifest, ks: tuple[int, ...],
                     tau: float, attained: dict[int, float]) -> ScoreChunking:
    """What ``score --chunks`` states of the chunking it scored over: the span integrity
    counts and the chunking diagnostics with the run's attained ``precision@k``."""
    whole = span_integrity(evalset, manifest, tau)
    return ScoreChunking(**structs.asdict(chunking_diagnostics(evalset, manifest, ks, attained)),
                         gold_spans=whole.gold_spans, contained_whole=whole.contained_whole,
                         span_integrity=whole.span_integrity,
                         unreachable_spans=whole.unreachable_spans)
