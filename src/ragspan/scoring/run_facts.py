"""What a run's results say beside the metrics, each a summary section of the score report:
results from another document than the query's (``off_scope``), saturation of the scoped
document (``saturation``), chunk-level recall with its ceiling (``chunk_recall``), which
fused retriever surfaced the relevant results (``fusion_sources``) and the rows a reorder
stage changed (``reordering``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from ragspan.base.facts import FusionSources, SurfacedAt
from ragspan.base.warned import said
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet
from ragspan.io.runs.spans import SpanList, SpanRun
from ragspan.records.score_facts import (
    ChunkRecall,
    ChunkRecallAt,
    OffScope,
    OutsideAt,
    Reordering,
    Saturated,
    Saturation,
)
from ragspan.scoring import spans as sp
from ragspan.scoring.metrics.failures import ChunkColumns
from ragspan.scoring.metrics.registry import Chars, is_budget
from ragspan.scoring.metrics.span import (
    GoldColumns,
    RankedColumns,
    kept_lengths,
)

log = logging.getLogger("ragspan")
# a document id -> its code among the run\'s and the eval set\'s (``span_scoring.DocCodes.code``)
Code = Callable[[str], int]


def chunk_recall(gold: GoldColumns, ranked: RankedColumns, chunks: ChunkColumns,
                 pairs: tuple[np.ndarray, np.ndarray], ks: Sequence[int],
                 first: RankedColumns | None = None) -> ChunkRecall:
    """Chunk-level recall and nDCG per count cutoff: of a query's relevant chunks (the
    manifest's chunks that overlap one of its gold spans), the share among its top k results
    (a result counts as the chunk with its document and offsets; repeats once, at their
    first position), averaged over the queries with a relevant chunk; its ceiling,
    ``min(1, k / relevant chunks)``, averaged alike: below it no ranking can go higher, so a
    low chunk recall at a small k can be the chunking's, not the ranking's; and nDCG@k with
    binary gains (trec_eval's ``ndcg_cut``), and beside it the same DCG over the ideal of
    the query's candidate set (``ndcg_candidates``, the localGPT harness's: its ranking's own
    relevant results, anywhere in the list, re-sorted to the top; 0 when the list holds
    none). With ``first`` (the run's first-stage ranking, before a rerank or fusion), the
    same of that ranking, so a reranker's gain is read at chunk level."""
    g, c = pairs
    width = np.int64(len(chunks.ids) + 1)
    rel = np.unique(gold.query[g] * width + c)
    relevant = np.bincount(rel // width, minlength=gold.n_queries)
    key = {(int(d), int(s), int(e)): i for i, (d, s, e) in enumerate(
        zip(chunks.doc.tolist(), chunks.start.tolist(), chunks.end.tolist()))}
    final = _chunk_ranking(ranked, key, rel, width, relevant, ks)
    before = None if first is None else _chunk_ranking(first, key, rel, width, relevant, ks)
    return ChunkRecall(int((relevant > 0).sum()), final, before)


def _chunk_ranking(ranked: RankedColumns, key: dict[tuple[int, int, int], int],
                   rel: np.ndarray, width: np.int64, relevant: np.ndarray,
                   ks: Sequence[int]) -> dict[str, ChunkRecallAt]:
    """``chunk_recall``'s figures of one ranking, per count cutoff."""
    n = relevant.size
    hit = np.fromiter((key.get(t, -1) for t in zip(ranked.doc.tolist(), ranked.start.tolist(),
                                                   ranked.end.tolist())),
                      dtype=np.int64, count=ranked.doc.size)
    asked = relevant > 0
    by_k: dict[str, ChunkRecallAt] = {}
    if not asked.any():
        return by_k
    listed = np.unique(ranked.query[hit >= 0] * width + hit[hit >= 0])
    candidates = np.bincount(listed[np.isin(listed, rel)] // width, minlength=n)[asked]
    for k in ks:
        if is_budget(k):
            continue
        sel = np.flatnonzero((hit >= 0) & ranked.within(k))
        pair = ranked.query[sel] * width + hit[sel]
        pos = ranked.positions(k)[sel]
        order = np.lexsort((pos, pair))  # each (query, chunk) at its first position
        pair, pos = pair[order], pos[order]
        first_seen = np.ones(pair.size, dtype=bool)
        first_seen[1:] = pair[1:] != pair[:-1]
        pair, pos = pair[first_seen], pos[first_seen]
        good = np.isin(pair, rel)
        owner = pair[good] // width
        found = np.bincount(owner, minlength=n)
        dcg = np.bincount(owner, weights=1.0 / np.log2(pos[good] + 2.0), minlength=n)
        discounts = np.cumsum(1.0 / np.log2(np.arange(k, dtype=np.float64) + 2.0))
        ideal = discounts[np.minimum(relevant[asked], k) - 1]
        own = np.where(candidates > 0, discounts[np.maximum(np.minimum(candidates, k), 1) - 1],
                       1.0)
        by_k[str(k)] = ChunkRecallAt(
            recall=float((found[asked] / relevant[asked]).mean()),
            ceiling=float(np.minimum(1.0, k / relevant[asked]).mean()),
            ndcg=float((dcg[asked] / ideal).mean()),
            ndcg_candidates=float((dcg[asked] / own).mean()))
    return by_k


def fusion_sources(ranked: RankedColumns, spans: SpanList, pairs: tuple[np.ndarray, np.ndarray],
                   ks: Sequence[int]) -> FusionSources | None:
    """Which retriever surfaced the relevant results (those overlapping a gold span of their
    query), per count cutoff, from each item's ``sources`` (its rank in each fused
    retriever's own list): ``relevant_in_top`` in the final top k; ``promoted``, those each
    retriever alone ranked below k (or not at all), which only the fusion (and rerank) put
    in the top k; ``found_by_<source>_only``, those one retriever listed and the other did
    not. None unless the run's items name both fused retrievers."""
    sr = spans.source_rank
    if sr is None or ranked.source is None or not all((sr[s] > 0).any() for s in sr):
        return None
    ranks = {s: v[ranked.source] for s, v in sr.items()}
    relevant = np.zeros(ranked.rank.size, dtype=bool)
    relevant[pairs[1]] = True
    by_k: dict[str, SurfacedAt] = {}
    for k in ks:
        if is_budget(k):
            continue
        top = relevant & (ranked.within(k))
        only = {s: int((top & (r > 0) & np.logical_and.reduce(
                    [o == 0 for t, o in ranks.items() if t != s])).sum())
                for s, r in ranks.items()}
        by_k[str(k)] = SurfacedAt(
            relevant_in_top=int(top.sum()),
            promoted=int((top & np.logical_and.reduce(
                [(r == 0) | (r > k) for r in ranks.values()])).sum()),
            found_only=only)
    return FusionSources(tuple(sorted(sr)), by_k)


def reordering(run: SpanRun) -> Reordering | None:
    """How many rows the reorder stage (rerank, fusion) changed: a row whose final list is
    not its first-stage list, span for span (document and offsets, in order). None when the
    run records no first stage. A stage that changed no row is said: a reranker that
    reorders nothing is a configuration error, not a result."""
    first = run.first_stage
    if first is None:
        return None
    final = run.spans
    changed = 0
    for i in range(len(final.ids)):
        a, b = final.row(i), first.row(i)
        same = len(a) == len(b) and all(
            final.doc_id[x] == first.doc_id[y] for x, y in zip(a, b)) and bool(
            (final.start[a.start:a.stop] == first.start[b.start:b.stop]).all()
            and (final.end[a.start:a.stop] == first.end[b.start:b.stop]).all())
        changed += not same
    if not changed:
        log.warning("the run's final ranking equals its first stage for every row: the "
                    "reorder stage (rerank or fusion) changed nothing",
                    extra=said("first_stage_unchanged", len(final.ids)))
    return Reordering(len(final.ids), changed)


def off_scope(evalset: EvalSet, ranked: RankedColumns, code: Code, ks: Sequence[int]
              ) -> OffScope | None:
    """Per cutoff, of the results of the queries that name their document (``doc_id``), how
    many come from another document (within the cutoff: rank < k, or a non-empty kept part
    at a character budget; repeats counted, as a reader is given them). An unfiltered
    retriever over many contracts shows here what share of its top k is the wrong contract.
    None when no query names its document or no result lies outside it."""
    scope = np.fromiter((code(q.doc_id) if q.doc_id is not None else -1
                         for q in evalset.queries), dtype=np.int64, count=len(evalset.queries))
    scoped = scope[ranked.query] >= 0 if ranked.query.size else np.zeros(0, dtype=bool)
    if not scoped.any():
        return None
    outside = scoped & (ranked.doc != scope[ranked.query])
    by_k: dict[str, OutsideAt] = {}
    for k in ks:
        within = kept_lengths(ranked, k) > 0 if is_budget(k) else ranked.within(k)
        results, out = int((scoped & within).sum()), int((outside & within).sum())
        if out:
            by_k[str(k)] = OutsideAt(results, out, out / results)
    if not by_k:
        return None
    return OffScope(int((scope >= 0).sum()), by_k)


SATURATED = 0.9  # share of its scoped document a query's results cover


SATURATION_WARN = 0.1  # share of the scoped queries from which score and compare warn


def saturation(evalset: EvalSet, corpus: Corpus, ranked: RankedColumns, code: Code,
               ks: Sequence[int]) -> Saturation | None:
    """Per cutoff, how many of the scoped queries retrieve at least ``SATURATED`` of their
    scope's characters (union of the results inside it; at a character budget, the kept
    parts): there recall is high by construction, not by ranking. A query's scope is its
    document (``doc_id``), or the whole corpus for a corpus-wide question (no ``doc_id``:
    saturated when k results take in most of the corpus, as when k exceeds its chunks).
    None when no query is scoped or no cutoff saturates any."""
    lengths = corpus.lengths()
    codes = {d: code(d) for d in sorted(lengths)}
    top = max([*codes.values(), int(ranked.doc.max()) if ranked.doc.size else 0]) + 1
    base = np.full(top, -1, dtype=np.int64)  # each document's place on one corpus-wide line
    total = 0
    for d, c in codes.items():
        base[c], total = total, total + lengths[d]
    n = len(evalset.queries)
    scope = np.full(n, -1, dtype=np.int64)  # the query's document; -2: the whole corpus
    length = np.zeros(n, dtype=np.int64)
    for i, q in enumerate(evalset.queries):
        if q.doc_id is None:
            scope[i], length[i] = -2, total
        elif q.doc_id in corpus.documents:
            scope[i], length[i] = codes[q.doc_id], lengths[q.doc_id]
    n_scoped = int(((scope != -1) & (length > 0)).sum())
    if not n_scoped or not ranked.query.size:
        return None
    rscope = scope[ranked.query]
    known = base[ranked.doc] >= 0
    inside = known & ((ranked.doc == rscope) | (rscope == -2))
    offset = np.where(known, base[ranked.doc], 0)
    line = sp.make_line(n, int(max(total, int((offset + ranked.end).max()), 1)))
    by_k: dict[str, Saturated] = {}
    for k in ks:
        if is_budget(k):
            kept = kept_lengths(ranked, k)
            sel, end = inside & (kept > 0), ranked.start + kept
        else:
            sel, end = inside & (ranked.within(k)), ranked.end
        u = sp.union(line.place(ranked.query[sel], offset[sel] + ranked.start[sel]),
                     line.place(ranked.query[sel], offset[sel] + end[sel]))
        covered = np.bincount(line.group_of(u.start), weights=u.lengths.astype(float),
                              minlength=n)
        full = (scope != -1) & (length > 0) & (covered >= SATURATED * length)
        if full.any():
            by_k[str(k)] = Saturated(int(full.sum()), float(full.sum() / n_scoped))
    if not by_k:
        return None
    return Saturation(SATURATED, by_k, n_scoped)


def budgets_over_documents(evalset: EvalSet, corpus: Corpus, ks: Sequence[int]
                           ) -> tuple[list[tuple[str, int, int]], bool]:
    """Per character cutoff, ``(cutoff, queries, counted)``: of the ``counted`` queries, how
    many the budget holds whole: the document a query names (``doc_id``), or for a
    corpus-wide query (no ``doc_id``, as in LegalBench-RAG) its gold documents together. A
    retriever may return those documents whole there and ground every such question (the
    published harness's warning). Before any run is read: the budget alone decides it.
    Cutoffs no query fits are left out. The flag: whether corpus-wide queries were counted
    (the warning then says so)."""
    lengths = corpus.lengths()
    sizes, wide = [], False
    for q in evalset.queries:
        if q.doc_id is not None:
            if q.doc_id in lengths:
                sizes.append(lengths[q.doc_id])
            continue
        golds = {s.doc_id for s in q.gold_spans}
        if golds and golds <= lengths.keys():  # every gold document, taken whole
            sizes.append(sum(lengths[d] for d in golds))
            wide = True
    docs = np.array(sizes, dtype=np.int64)
    if not docs.size:
        return [], wide
    out = []
    for k in ks:
        if isinstance(k, Chars):
            fits = int((docs <= int(k)).sum())
            if fits:
                out.append((str(k), fits, int(docs.size)))
    return out, wide
