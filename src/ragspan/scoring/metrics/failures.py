"""Why a query failed complete grounding: one label per failing query and cutoff, decided by
span arithmetic alone (the gold spans, the run's ranked pool, the chunk manifest).

Only the gold spans that failed count (covered below tau at k): a clause that was split but
retrieved whole is never blamed. In precedence order, the first label that some failing span
of the query meets wins:

=====================  ===================================================  =====================
label                  the failing span ...                                 points at
=====================  ===================================================  =====================
``ceiling-bound``      is covered below tau even by the union of every      nothing: the chunker
                       manifest chunk that overlaps it                      dropped text
``chunk-severance``    is split: no single chunk holds all of it            chunking
``retrieval-miss``     overlaps no retrieved span anywhere in the pool      embeddings / hybrid
``rank-miss``          overlaps a retrieved span, but only at rank >= k     reranking / k
``partial-grounding``  overlaps a span within the top k, not enough of it   filtering / k
=====================  ===================================================  =====================

A failing span is below tau by definition, so a split span (the chunker's span integrity
broken) that failed is severance whatever was retrieved of it: clause-whole chunks would
have let one retrieval ground it. Without a chunk manifest the first two cannot be decided;
labels then start at ``retrieval-miss`` and the report says which were undecided. The pool
is every span the run ranked for the query (its depth is the longest row). Ranks here are
0-based positions in the ranking, repeats included (as for the metrics); the report's
evidence gives them 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragspan.scoring import spans as sp
from ragspan.scoring.metrics.registry import LABELS, is_budget
from ragspan.scoring.metrics.span import GoldColumns, RankedColumns, group_max

NEEDS_MANIFEST = LABELS[:2]
NOT_IN_POOL = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ChunkColumns:
    """The chunk manifest's chunks, documents coded as the gold columns are."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    ids: tuple[str, ...]


@dataclass(frozen=True)
class SpanFacts:
    """Per gold span (aligned with the gold columns), whatever k: the first rank at which a
    retrieved span overlaps it (``NOT_IN_POOL`` if none), and with a manifest the share of
    it the union of its overlapping chunks covers (``ceiling``) and the largest share one
    chunk holds (``largest_piece``); ``pool_pairs`` and ``chunk_pairs`` are the overlapping
    (gold span, ranked entry) and (gold span, chunk) index pairs, the evidence."""

    first_rank: np.ndarray
    ceiling: np.ndarray | None
    largest_piece: np.ndarray | None
    pool_pairs: tuple[np.ndarray, np.ndarray]
    chunk_pairs: tuple[np.ndarray, np.ndarray] | None
    # a run with steps: the first rank inside its step at which a result overlaps it (what
    # a count cutoff, k per step, is compared with); None without steps
    first_step_rank: np.ndarray | None = None


@dataclass(frozen=True)
class Labels:
    """``query[k]``: each query's label code at k (an index into ``LABELS``; -1 when it is
    grounded). ``undecided``: the labels no manifest allowed to decide."""

    ks: tuple[int, ...]
    query: dict[int, np.ndarray]
    facts: SpanFacts
    undecided: tuple[str, ...]

    def counts(self, k: int, rows: np.ndarray | None = None) -> dict[str, int]:
        """How many queries (of ``rows``, default all) carry each label at ``k``."""
        codes = self.query[k] if rows is None else self.query[k][rows]
        found = np.bincount(codes[codes >= 0], minlength=len(LABELS))
        return {label: int(n) for label, n in zip(LABELS, found)}


def _expand(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Item ``i`` repeated ``count[i]`` times, and each repeat's index within its item."""
    owner = np.repeat(np.arange(count.size, dtype=np.int64), count)
    return owner, np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)


def pool_pairs(gold: GoldColumns, ranked: RankedColumns) -> tuple[np.ndarray, np.ndarray]:
    """Every (gold span, ranked entry) of the same query and document that overlap."""
    n = gold.n_queries
    order = np.argsort(ranked.query, kind="stable")
    per_query = np.bincount(ranked.query, minlength=n)
    first = np.concatenate([[0], np.cumsum(per_query)[:-1]])
    g, within = _expand(per_query[gold.query])
    r = order[first[gold.query][g] + within] if g.size else np.zeros(0, dtype=np.int64)
    hit = ((ranked.doc[r] == gold.doc[g]) & (ranked.start[r] < gold.end[g])
           & (ranked.end[r] > gold.start[g]))
    return g[hit], r[hit]


def chunk_pairs(gold: GoldColumns, chunks: ChunkColumns) -> tuple[np.ndarray, np.ndarray]:
    """Every (gold span, chunk) of the same document that overlap: the chunks are laid on
    one line by document, sorted by start; a gold span's candidates run from the first chunk
    whose running maximum end passes its start to the last chunk starting before its end."""
    if chunks.start.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    line = sp.make_line(int(max(gold.doc.max(initial=0), chunks.doc.max(initial=0))) + 1,
                        int(max(gold.end.max(initial=0), chunks.end.max(initial=0))))
    c_start = line.place(chunks.doc, chunks.start)
    order = np.argsort(c_start, kind="stable")
    c_start = c_start[order]
    reach = np.maximum.accumulate(line.place(chunks.doc, chunks.end)[order])
    g_start, g_end = line.place(gold.doc, gold.start), line.place(gold.doc, gold.end)
    lo = np.searchsorted(reach, g_start, side="right")
    hi = np.searchsorted(c_start, g_end, side="left")
    g, within = _expand(np.maximum(hi - lo, 0))
    c = order[lo[g] + within]
    hit = (chunks.doc[c] == gold.doc[g]) & (chunks.end[c] > gold.start[g])
    return g[hit], c[hit]


def span_facts(gold: GoldColumns, ranked: RankedColumns,
               chunks: ChunkColumns | None) -> SpanFacts:
    n_gold = gold.query.size
    pg, pr = pool_pairs(gold, ranked)
    first_rank = np.full(n_gold, NOT_IN_POOL, dtype=np.int64)
    np.minimum.at(first_rank, pg, ranked.rank[pr])
    first_step = None
    if ranked.step_rank is not None:
        first_step = np.full(n_gold, NOT_IN_POOL, dtype=np.int64)
        np.minimum.at(first_step, pg, ranked.step_rank[pr])
    if chunks is None:
        return SpanFacts(first_rank, None, None, (pg, pr), None, first_step)
    cg, cc = chunk_pairs(gold, chunks)
    lo = np.maximum(chunks.start[cc], gold.start[cg])
    hi = np.minimum(chunks.end[cc], gold.end[cg])
    glen = (gold.end - gold.start).astype(float)
    piece = np.zeros(n_gold)
    np.divide(group_max(cg, (hi - lo).astype(float), n_gold), glen, out=piece, where=glen > 0)
    line = sp.make_line(n_gold, int(gold.end.max(initial=0)))
    merged = sp.union(line.place(cg, lo), line.place(cg, hi))
    covered = np.bincount(line.group_of(merged.start), weights=merged.lengths.astype(float),
                          minlength=n_gold)
    ceiling = np.zeros(n_gold)
    np.divide(covered, glen, out=ceiling, where=glen > 0)
    return SpanFacts(first_rank, ceiling, piece, (pg, pr), (cg, cc), first_step)


def label_failures(gold: GoldColumns, facts: SpanFacts, fractions: dict[int, np.ndarray],
                   grounded: dict[int, np.ndarray], tau: float,
                   slots: dict[int, np.ndarray] | None = None) -> Labels:
    """The labels at every k of ``fractions`` (each gold span's covered share at k) for the
    queries not ``grounded`` at k (complete grounding < 1). ``slots[k]``: per query, the
    results within cutoff k (default k itself; at a character budget, those it reaches):
    a first overlapping rank at or past it is "ranked below the cutoff"."""
    manifest = facts.ceiling is not None
    query_codes: dict[int, np.ndarray] = {}
    for k, frac in fractions.items():
        failing = (frac < tau) & ~grounded[k][gold.query]
        first = facts.first_rank
        if facts.first_step_rank is not None and not is_budget(k):
            first, cut = facts.first_step_rank, k  # k per step
        else:
            cut = k if slots is None or k not in slots else slots[k][gold.query]
        code = np.where(first == NOT_IN_POOL, 2, np.where(first >= cut, 3, 4))
        if facts.ceiling is not None and facts.largest_piece is not None:
            code = np.where(facts.largest_piece < 1.0, 1, code)
            code = np.where(facts.ceiling < tau, 0, code)
        per_query = np.full(gold.n_queries, len(LABELS), dtype=np.int64)
        np.minimum.at(per_query, gold.query[failing], code[failing])
        per_query[per_query == len(LABELS)] = -1
        query_codes[k] = per_query
    return Labels(tuple(fractions), query_codes, facts, () if manifest else NEEDS_MANIFEST)
