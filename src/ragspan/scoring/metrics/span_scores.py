"""The span metrics (``metrics.span``'s conventions) of all queries at every cutoff, read off
one order of the run.

The run's entries are placed on the shared line (``spans.Line``) and sorted by start once.
Every cutoff, count or budget, is then a mask over that one order (and, at a budget, each
entry's end as the budget cuts it), so no cutoff sorts the run again:

* the union of what a cutoff keeps, whose length is the denominator of
  ``char_precision_merged``, is merged from the sorted order as it stands
  (``spans.union_sorted``);
* everything measured against the gold spans (each gold span's covered fraction, coverage,
  grounding, the pairwise overlaps of ``char_precision`` and ``char_recall``) is computed
  over the entries that overlap a gold span at all, taken in the same order: an entry that
  overlaps none adds no character inside one, so the counts are the same integers as over
  the whole run, for the small part of a ranking that reaches a gold span.

Each number is the one a cutoff computed alone gives, bit for bit: the character counts are
exact integers, and every fraction is reduced from them in the one order a cutoff alone uses
(``tests/test_span_sweep.py`` holds all cutoffs at once against each alone and against the
definitions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragspan.scoring import spans as sp
from ragspan.scoring.metrics.registry import Cutoff, Tokens, format_name, is_budget
from ragspan.scoring.metrics.span import (
    GoldColumns,
    RankedColumns,
    dedup_mask,
    group_max,
    kept_lengths,
)

NO_RANK = np.iinfo(np.int64).max  # a query's first relevant rank when it has none


@dataclass(frozen=True)
class SpanScores:
    """Per-query values (``values[name@k]``, shape ``(n_queries,)``) and, per k, the covered
    fraction of every gold span (``gold_fraction[k]``, aligned with the gold columns)."""

    ks: tuple[int, ...]
    tau: float
    values: dict[str, np.ndarray]
    gold_fraction: dict[int, np.ndarray]
    # per k, per query: the results within the cutoff (k itself for a count; at a budget
    # those with a non-empty kept part): where "ranked below the cutoff" begins
    slots: dict[int, np.ndarray] | None = None


@dataclass(frozen=True)
class _Layout:
    """What every cutoff reads, computed once: the shared line and each group's query; the
    gold spans placed on it and their union; the run's entries placed (``start``, ``end``,
    in the order of ``start``); which of them overlap a gold span (``touches``, and their
    indices ``touching``)."""

    line: sp.Line
    group_query: np.ndarray
    gs: np.ndarray
    ge: np.ndarray
    gold_union: sp.Union
    start: np.ndarray
    end: np.ndarray
    touches: np.ndarray
    touching: np.ndarray


def _layout(gold: GoldColumns, ranked: RankedColumns) -> tuple[_Layout, RankedColumns]:
    """The layout, and ``ranked`` taken in the order of the entries' placed starts."""
    n_docs = int(max(gold.doc.max(initial=-1), ranked.doc.max(initial=-1))) + 1
    gkey = gold.query.astype(np.int64) * n_docs + gold.doc
    rkey = ranked.query.astype(np.int64) * n_docs + ranked.doc
    keys, inverse = np.unique(np.concatenate([gkey, rkey]), return_inverse=True)
    ggroup, rgroup = inverse[: gkey.size], inverse[gkey.size:]
    max_off = int(max(gold.end.max(initial=0), ranked.end.max(initial=0)))
    line = sp.make_line(keys.size, max_off)
    gs, ge = line.place(ggroup, gold.start), line.place(ggroup, gold.end)
    gold_union = sp.union(gs, ge)
    rs = line.place(rgroup, ranked.start)
    by_start = np.argsort(rs, kind="stable")
    rs, re_ = rs[by_start], line.place(rgroup[by_start], ranked.end[by_start])
    touches = sp.covered(gold_union, rs, re_) > 0
    return _Layout(line, (keys // n_docs).astype(np.int64), gs, ge, gold_union, rs, re_,
                   touches, np.flatnonzero(touches)), ranked.taken(by_start)


@dataclass(frozen=True)
class _Gold:
    """Per gold span its length; per query the gold's total, its spans' summed lengths and
    count, and the query of each span of the gold union."""

    length: np.ndarray
    union_query: np.ndarray
    total: np.ndarray
    length_sum: np.ndarray
    count: np.ndarray


@dataclass(frozen=True)
class _Within:
    """The ranked entries within one cutoff: ``sel`` (repeats removed), the relevant ones,
    per query the rank slots it gives and its first relevant rank (``NO_RANK``: none), and
    per entry its placed end as the cutoff keeps it (cut short at a budget)."""

    sel: np.ndarray
    relevant: np.ndarray
    slots: np.ndarray
    first: np.ndarray
    end: np.ndarray


def _first_ranks(ranked: RankedColumns, mask: np.ndarray, n: int,
                 rank: np.ndarray | None = None) -> np.ndarray:
    """Per query, the smallest rank (``rank``, default ``ranked.rank``) among its entries in
    ``mask`` (``NO_RANK``: none)."""
    out = np.full(n, NO_RANK, dtype=np.int64)
    q, r = ranked.query[mask], (ranked.rank if rank is None else rank)[mask]
    o = np.lexsort((r, q))
    uq, at = np.unique(q[o], return_index=True)
    out[uq] = r[o][at]
    return out


def _within_budget(ranked: RankedColumns, k: Cutoff, keep: np.ndarray, relevant: np.ndarray,
                   lay: _Layout, n: int) -> _Within:
    """``_Within`` a character or token budget: each entry's kept part (``kept_lengths``);
    an entry kept whole is relevant as it is, the one the budget cuts when its kept part
    still overlaps a gold span."""
    kept = kept_lengths(ranked, k)
    within = kept > 0
    sel = keep & within
    cut_end = lay.start + kept
    whole = kept == ranked.end - ranked.start
    relevant_k = relevant & sel & whole
    cut = np.flatnonzero(sel & ~whole)  # at most one per query: the crossing result
    if cut.size:
        relevant_k[cut] = sp.covered(lay.gold_union, lay.start[cut], cut_end[cut]) > 0
    return _Within(sel, relevant_k, np.bincount(ranked.query[within], minlength=n),
                   _first_ranks(ranked, relevant_k, n), cut_end)


def _within(ranked: RankedColumns, k: Cutoff, lay: _Layout, keep: np.ndarray,
            relevant: np.ndarray, first_rel: np.ndarray, n: int) -> _Within:
    """What the cutoff ``k`` keeps: a budget's kept parts; the first ``k`` of the ranking;
    or, in a run with steps, the first ``k`` of each step, ranked in the context they make,
    a repeat removed only among what the cut keeps (a result a later call finds again is
    kept where the earlier call had it past the cutoff). ``relevant``: the entries kept
    that overlap a gold span; ``first_rel``: per query the first one's rank."""
    if is_budget(k):
        return _within_budget(ranked, k, keep, relevant, lay, n)
    if ranked.step_rank is None:
        top = ranked.rank < k
        return _Within(keep & top, relevant & top, np.full(n, k, dtype=np.int64),
                       np.where(first_rel < k, first_rel, NO_RANK), lay.end)
    sel = dedup_mask(ranked, ranked.within(k))
    return _Within(sel, sel & lay.touches, ranked.slots(k, n),
                   _first_ranks(ranked, sel & lay.touches, n, ranked.positions(k)), lay.end)


def _unions(lay: _Layout, cut: _Within, n: int) -> tuple[np.ndarray, sp.Union, sp.Pile]:
    """Per query the length of the union of what the cutoff keeps (merged in the order of
    the starts, no sort); the union and the pile of the kept entries that overlap a gold
    span."""
    whole = sp.union_sorted(lay.start[cut.sel], cut.end[cut.sel])
    length = _sum_by(lay.group_query[lay.line.group_of(whole.start)],
                     whole.lengths.astype(float), n)
    t = lay.touching[cut.sel[lay.touching]]
    ts, te = lay.start[t], cut.end[t]
    return length, sp.union_sorted(ts, te), sp.pile(ts, te, lay.line.width)


def _sum_by(index: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(index, weights=weights, minlength=n).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


def score_spans(
    gold: GoldColumns, ranked: RankedColumns, ks: Sequence[int], tau: float,
    chroma: bool = False,
) -> SpanScores:
    """Compute every span metric at every ``k`` in ``ks`` (``metrics.span``'s conventions);
    with ``chroma``, also Chroma's chunking-evaluation metrics (``registry.CHROMA_METRICS``)."""
    n = gold.n_queries
    if any(is_budget(k) and not isinstance(k, Tokens) for k in ks):
        ranked.chars_before  # noqa: B018  (summed in rank order, then carried: ``taken``)
    lay, ranked = _layout(gold, ranked)
    glen = (gold.end - gold.start).astype(float)
    gu_query = lay.group_query[lay.line.group_of(lay.gold_union.start)]
    g = _Gold(glen, gu_query, _sum_by(gu_query, lay.gold_union.lengths.astype(float), n),
              _sum_by(gold.query, glen, n), np.bincount(gold.query, minlength=n))
    keep = dedup_mask(ranked)
    relevant = keep & lay.touches
    first_rel = _first_ranks(ranked, relevant, n)
    values: dict[str, np.ndarray] = {}
    fractions: dict[int, np.ndarray] = {}
    slots: dict[int, np.ndarray] = {}
    for k in ks:
        cut = _within(ranked, k, lay, keep, relevant, first_rel, n)
        slots[k] = cut.slots
        fractions[k] = _values_at(k, cut, gold, g, ranked, lay, tau, chroma, values)
    return SpanScores(tuple(ks), tau, values, fractions, slots)


def _values_at(k: Cutoff, cut: _Within, gold: GoldColumns, g: _Gold, ranked: RankedColumns,
               lay: _Layout, tau: float, chroma: bool, values: dict[str, np.ndarray]) -> np.ndarray:
    """Put every metric at ``k`` into ``values``; return each gold span's covered fraction."""
    n = gold.n_queries
    merged_len, union, pile = _unions(lay, cut, n)
    sel = cut.sel
    r_len = _sum_by(ranked.query[sel], (cut.end[sel] - lay.start[sel]).astype(float), n)
    frac = _ratio(sp.covered(union, lay.gs, lay.ge).astype(float), g.length)
    covered_union = _sum_by(g.union_query, sp.covered(union, lay.gold_union.start,
                                                      lay.gold_union.end).astype(float), n)
    frac_max = group_max(gold.query, frac, n)
    frac_mean = _ratio(_sum_by(gold.query, frac, n), g.count.astype(float))
    reached = np.bincount(gold.query, weights=(frac >= tau).astype(float), minlength=n)
    grounded_all = (g.count > 0) & (reached == g.count)
    pair_sum = _sum_by(gold.query, sp.pairwise_overlap(pile, lay.gs, lay.ge).astype(float), n)
    n_rel = np.bincount(ranked.query[cut.relevant], minlength=n)
    hit = cut.first < NO_RANK

    any_ = gold.match_any
    put = values.__setitem__
    put(format_name("complete_grounding", k),
        np.where(any_, reached > 0, grounded_all).astype(float))
    put(format_name("span_coverage", k), np.where(any_, frac_max, _ratio(covered_union, g.total)))
    put(format_name("span_recall", k), np.where(any_, frac_max, frac_mean))
    put(format_name("char_precision", k), _ratio(pair_sum, r_len))
    put(format_name("char_recall", k), _ratio(pair_sum, g.length_sum))
    put(format_name("char_precision_merged", k), _ratio(covered_union, merged_len))
    put(format_name("retrieved_chars", k), r_len)
    put(format_name("precision", k), _ratio(n_rel.astype(float), cut.slots.astype(float)))
    put(format_name("hit_rate", k), hit.astype(float))
    mrr = np.zeros(n)
    np.divide(1.0, cut.first + 1.0, out=mrr, where=hit)
    put(format_name("mrr", k), mrr)
    if chroma:  # numerator |∪R ∩ ∪G|; unused: each reference's uncovered characters
        unused = g.length_sum - _sum_by(gold.query, frac * g.length, n)
        put(format_name("chroma_recall", k), _ratio(covered_union, g.length_sum))
        put(format_name("chroma_precision", k), _ratio(covered_union, r_len))
        put(format_name("iou", k), _ratio(covered_union, r_len + unused))
    return frac
