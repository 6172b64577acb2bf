"""Span metrics (DESIGN.md, "Metrics"), computed for all queries and all cutoffs at once.

Inputs are column arrays; no Python loop runs per (query, span) pair. Conventions:

* ``R_k`` is the first ``k`` entries of a query's ranking with exact repeats of the same
  ``(doc_id, start, end)`` removed (the first kept). A repeat still uses up its rank slot;
  ``retrieved_chars`` counts the characters of ``R_k``, so a repeat's once. In a run with
  steps, ``@k`` is the first ``k`` of each step, and repeats are removed among those only
  (a result a later call finds again counts where an earlier call had it past ``k``).
* Overlap is only counted within the same document.
* ``match = any``: the gold spans are alternatives; ``complete_grounding`` needs one of them,
  and ``span_coverage`` / ``span_recall`` are those of the best-covered alternative.
* A query with nothing retrieved scores 0 everywhere (``retrieved_chars`` 0).
* At a character budget ``Bc`` (``registry.Chars``) ``R_B`` is the results in rank order while
  their lengths (as returned: repeats and overlaps count each time) add up to at most ``B``;
  the result that crosses ``B`` keeps its first characters up to ``B``, later ones are
  dropped. Repeats are removed as at a count. ``precision`` divides by the results with a
  non-empty kept part; a result is relevant when its kept part overlaps a gold span.
* At a token budget ``Bt`` (``registry.Tokens``) the same, with each result's length its
  count of tokens (its text alone, in the named tokenizer's tokens, ``TokenCounts``); the
  crossing result keeps the characters of its first tokens up to ``B``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragspan.scoring import spans as sp
from ragspan.scoring.metrics.registry import Cutoff, Tokens, format_name, is_budget


@dataclass(frozen=True)
class GoldColumns:
    """Gold spans of ``n_queries`` queries: ``query[i]`` owns span ``i``."""

    query: np.ndarray
    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    match_any: np.ndarray  # per query, bool
    n_queries: int


@dataclass(frozen=True)
class RankedColumns:
    """Retrieved spans: ``query[i]`` retrieved span ``i`` at 0-based position ``rank[i]``;
    ``source[i]``: its index in the run's span list (for its chunk id), when known."""

    query: np.ndarray
    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    rank: np.ndarray
    source: np.ndarray | None = None
    tokens: TokenCounts | None = None  # for token budgets: each entry's length in tokens
    # a run with steps (``io.runs.steps``): each entry's step and rank inside it, and per
    # query how many steps it made; ``rank`` is then the position in the steps laid end to
    # end (None for a run without steps)
    step: np.ndarray | None = None
    step_rank: np.ndarray | None = None
    query_steps: np.ndarray | None = None

    def within(self, k: int) -> np.ndarray:
        """The entries within the count cutoff ``k``: the first ``k`` of the ranking, or, in
        a run with steps, the first ``k`` of each step."""
        return (self.rank if self.step_rank is None else self.step_rank) < k

    def slots(self, k: int, n: int) -> np.ndarray:
        """Per query, the results a count cutoff ``k`` gives room for: ``k``, or ``k`` per
        step."""
        if self.query_steps is None:
            return np.full(n, k, dtype=np.int64)
        return k * self.query_steps.astype(np.int64)

    def positions(self, k: int) -> np.ndarray:
        """Per entry, its 0-based position among its query's results within the count
        cutoff ``k`` (``within``): its rank, or, with steps, the results that the earlier
        steps keep at ``k`` plus its rank inside its step."""
        if self.step is None or self.step_rank is None:
            return self.rank
        span = int(self.step.max(initial=0)) + 1
        group = self.query.astype(np.int64) * span + self.step
        keys, inverse, size = np.unique(group, return_inverse=True, return_counts=True)
        room = np.minimum(size, k)
        before = np.cumsum(room) - room
        owner = keys // span
        first = np.searchsorted(owner, owner, side="left")
        placed: np.ndarray = (before - before[first])[inverse] + self.step_rank
        return placed

    @cached_property
    def chars_before(self) -> np.ndarray:
        """Per entry, the total length of its query's results ranked before it (repeats
        counted): what a character budget has used up when the entry is reached. Computed
        once per columns (every character cutoff and run fact reads it)."""
        return _before(self, (self.end - self.start).astype(np.int64))


@dataclass(frozen=True)
class TokenCounts:
    """Each ranked entry's length in tokens (``count``, aligned with its ``RankedColumns``)
    and ``prefix(i, m)``: how many characters the first ``m`` tokens of entry ``i`` take
    (0 < m < count[i])."""

    count: np.ndarray
    prefix: Callable[[int, int], int]


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


def dedup_mask(r: RankedColumns, among: np.ndarray | None = None) -> np.ndarray:
    """True for the first occurrence (in rank order) of each ``(query, doc, start, end)``,
    False for repeats; with ``among`` (a mask), among those entries only (False outside
    them): a repeat is removed only among what a cutoff keeps.

    A wrapping 64-bit hash of the key finds the candidates; only entries whose hash occurs
    more than once are compared exactly, so collisions cannot drop a distinct span.
    """
    if among is not None:
        idx = np.flatnonzero(among)
        part = RankedColumns(r.query[idx], r.doc[idx], r.start[idx], r.end[idx], r.rank[idx])
        out = np.zeros(r.query.size, dtype=bool)
        out[idx] = dedup_mask(part)
        return out
    n = r.query.size
    keep = np.ones(n, dtype=bool)
    if n < 2:
        return keep
    h = (r.query * np.int64(1_000_003) + r.doc) * np.int64(1_000_033)
    h = (h + r.start) * np.int64(998_244_353) + r.end
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = hs[1:] == hs[:-1]
    if not same.any():
        return keep
    flag = np.zeros(n, dtype=bool)
    flag[1:] |= same
    flag[:-1] |= same
    cand = order[flag]
    q, d, s, e, k = r.query[cand], r.doc[cand], r.start[cand], r.end[cand], r.rank[cand]
    sub = np.lexsort((k, e, s, d, q))
    q, d, s, e = q[sub], d[sub], s[sub], e[sub]
    repeat = np.zeros(cand.size, dtype=bool)
    repeat[1:] = (q[1:] == q[:-1]) & (d[1:] == d[:-1]) & (s[1:] == s[:-1]) & (e[1:] == e[:-1])
    keep[cand[sub][repeat]] = False
    return keep


def _sum_by(index: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(index, weights=weights, minlength=n).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


def group_max(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Maximum of ``values`` per group id in ``[0, n)`` (0 where a group has none)."""
    out = np.zeros(n)
    if values.size:
        order = np.lexsort((values, group))
        g = group[order]
        last = np.append(np.flatnonzero(g[1:] != g[:-1]), g.size - 1)
        out[g[last]] = values[order][last]
    return out


def _before(ranked: RankedColumns, length: np.ndarray) -> np.ndarray:
    """Per entry, the sum of ``length`` over its query's entries ranked before it. Entries
    laid out as a run gives them (each query's results together, ranks 0, 1, 2, ...) are
    summed in place; any other layout is sorted by query and rank first."""
    if not length.size:
        return np.zeros(0, dtype=np.int64)
    order = None if _in_rank_order(ranked) else np.lexsort((ranked.rank, ranked.query))
    q = ranked.query if order is None else ranked.query[order]
    lens = length if order is None else length[order]
    total = np.cumsum(lens)
    start = np.ones(lens.size, dtype=bool)
    start[1:] = q[1:] != q[:-1]
    first = np.flatnonzero(start)
    base = np.repeat(total[first] - lens[first], np.diff(np.append(first, lens.size)))
    before: np.ndarray = total - lens - base
    if order is None:
        return before
    out = np.empty(lens.size, dtype=np.int64)
    out[order] = before
    return out


def _in_rank_order(ranked: RankedColumns) -> bool:
    """Each query's entries are contiguous (one group per query) and ranked 0, 1, 2, ... in
    order: then the entries are already sorted by query group and rank."""
    q, rank = ranked.query, ranked.rank
    new = np.ones(q.size, dtype=bool)
    new[1:] = q[1:] != q[:-1]
    first = np.flatnonzero(new)
    if np.unique(q[first]).size != first.size or rank[first].any():
        return False
    step = np.diff(rank)
    return bool((step[~new[1:]] == 1).all())


def kept_lengths(ranked: RankedColumns, budget: Cutoff) -> np.ndarray:
    """Per entry, how many of its characters are within the query's ``budget``: its length
    while the earlier results' lengths (rank order, repeats counted) leave room, the rest of
    the budget for the one that crosses it, 0 after. A character budget (or a plain integer)
    measures lengths in characters (``ranked.chars_before``, computed once); a ``Tokens``
    budget in tokens (``ranked.tokens``), the crossing entry keeping the characters of its
    first tokens."""
    if isinstance(budget, Tokens):
        return _kept_tokens(ranked, int(budget))
    kept: np.ndarray = np.clip(int(budget) - ranked.chars_before, 0, ranked.end - ranked.start)
    return kept


def _kept_tokens(ranked: RankedColumns, budget: int) -> np.ndarray:
    """``kept_lengths`` at a token budget: an entry is kept whole while the tokens before it
    leave room for all of its own, cut to the characters of as many tokens as there is room
    for when it crosses the budget, dropped after."""
    if ranked.tokens is None:
        raise ValueError("a token budget needs each result's length in tokens")
    count = ranked.tokens.count
    room = budget - _before(ranked, count)
    tokens = np.clip(room, 0, count)
    kept = np.where((room > 0) & (tokens == count), ranked.end - ranked.start, 0)
    for i in np.flatnonzero((tokens > 0) & (tokens < count)).tolist():
        kept[i] = ranked.tokens.prefix(i, int(tokens[i]))
    return kept.astype(np.int64)


NO_RANK = np.iinfo(np.int64).max  # a query's first relevant rank when it has none


@dataclass(frozen=True)
class _Within:
    """The ranked entries within one cutoff: ``sel`` (repeats removed), the relevant ones,
    per query the rank slots it gives and its first relevant rank (``NO_RANK``: none), and
    the selected entries' placed starts and (kept) ends."""

    sel: np.ndarray
    relevant: np.ndarray
    slots: np.ndarray
    first: np.ndarray
    start: np.ndarray
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
                   rs: np.ndarray, gold_union: sp.Union, n: int) -> _Within:
    """``_Within`` a character or token budget: each entry's kept part (``kept_lengths``);
    an entry kept whole is relevant as it is, the one the budget cuts when its kept part
    still overlaps a gold span."""
    kept = kept_lengths(ranked, k)
    within = kept > 0
    sel = keep & within
    cut_end = rs + kept
    whole = kept == ranked.end - ranked.start
    relevant_k = relevant & sel & whole
    cut = np.flatnonzero(sel & ~whole)  # at most one per query: the crossing result
    if cut.size:
        relevant_k[cut] = sp.covered(gold_union, rs[cut], cut_end[cut]) > 0
    return _Within(sel, relevant_k, np.bincount(ranked.query[within], minlength=n),
                   _first_ranks(ranked, relevant_k, n), rs[sel], cut_end[sel])


def score_spans(
    gold: GoldColumns, ranked: RankedColumns, ks: Sequence[int], tau: float,
    chroma: bool = False,
) -> SpanScores:
    """Compute every span metric at every ``k`` in ``ks`` (see module docstring); with
    ``chroma``, also Chroma's chunking-evaluation metrics (``registry.CHROMA_METRICS``)."""
    n = gold.n_queries
    n_docs = int(max(gold.doc.max(initial=-1), ranked.doc.max(initial=-1))) + 1
    gkey = gold.query.astype(np.int64) * n_docs + gold.doc
    rkey = ranked.query.astype(np.int64) * n_docs + ranked.doc
    keys, inverse = np.unique(np.concatenate([gkey, rkey]), return_inverse=True)
    ggroup, rgroup = inverse[: gkey.size], inverse[gkey.size:]
    max_off = int(max(gold.end.max(initial=0), ranked.end.max(initial=0)))
    line = sp.make_line(keys.size, max_off)
    group_query = (keys // n_docs).astype(np.int64)

    gs, ge = line.place(ggroup, gold.start), line.place(ggroup, gold.end)
    glen = (gold.end - gold.start).astype(float)
    gold_union = sp.union(gs, ge)
    gu_query = group_query[line.group_of(gold_union.start)]
    gold_total = _sum_by(gu_query, gold_union.lengths.astype(float), n)
    gold_len_sum = _sum_by(gold.query, glen, n)
    n_gold = np.bincount(gold.query, minlength=n)

    keep = dedup_mask(ranked)
    rs, re_ = line.place(rgroup, ranked.start), line.place(rgroup, ranked.end)
    touches = sp.covered(gold_union, rs, re_) > 0
    relevant = keep & touches
    first_rel = _first_ranks(ranked, relevant, n)

    values: dict[str, np.ndarray] = {}
    fractions: dict[int, np.ndarray] = {}
    slots: dict[int, np.ndarray] = {}
    for k in ks:
        if is_budget(k):
            cut = _within_budget(ranked, k, keep, relevant, rs, gold_union, n)
        elif ranked.step_rank is None:
            sel = keep & (ranked.rank < k)
            cut = _Within(sel, relevant & (ranked.rank < k), np.full(n, k, dtype=np.int64),
                          np.where(first_rel < k, first_rel, NO_RANK), rs[sel], re_[sel])
        else:  # the first k of each step, ranked in the context they make; a repeat
            # removed only among what the cut keeps (a result a later call finds again is
            # kept where the earlier call had it past the cutoff)
            sel = dedup_mask(ranked, ranked.within(k))
            cut = _Within(sel, sel & touches, ranked.slots(k, n),
                          _first_ranks(ranked, sel & touches, n, ranked.positions(k)),
                          rs[sel], re_[sel])
        sel, relevant_k, first_k = cut.sel, cut.relevant, cut.first
        s_sel, e_sel = cut.start, cut.end
        slots[k] = cut.slots
        q_sel = ranked.query[sel]
        r_union = sp.union(s_sel, e_sel)
        ru_query = group_query[line.group_of(r_union.start)]
        r_union_len = _sum_by(ru_query, r_union.lengths.astype(float), n)
        r_len = _sum_by(q_sel, (e_sel - s_sel).astype(float), n)

        frac = _ratio(sp.covered(r_union, gs, ge).astype(float), glen)
        fractions[k] = frac
        covered_union = _sum_by(gu_query, sp.covered(r_union, gold_union.start, gold_union.end)
                                .astype(float), n)
        frac_max = group_max(gold.query, frac, n)
        frac_mean = _ratio(_sum_by(gold.query, frac, n), n_gold.astype(float))
        reached = np.bincount(gold.query, weights=(frac >= tau).astype(float), minlength=n)
        grounded_all = (n_gold > 0) & (reached == n_gold)
        grounded_any = reached > 0

        pairs = sp.pairwise_overlap(sp.pile(s_sel, e_sel, line.width), gs, ge).astype(float)
        pair_sum = _sum_by(gold.query, pairs, n)
        n_rel = np.bincount(ranked.query[relevant_k], minlength=n)
        hit = first_k < NO_RANK

        any_ = gold.match_any
        put = values.__setitem__
        put(format_name("complete_grounding", k),
            np.where(any_, grounded_any, grounded_all).astype(float))
        put(format_name("span_coverage", k),
            np.where(any_, frac_max, _ratio(covered_union, gold_total)))
        put(format_name("span_recall", k), np.where(any_, frac_max, frac_mean))
        put(format_name("char_precision", k), _ratio(pair_sum, r_len))
        put(format_name("char_recall", k), _ratio(pair_sum, gold_len_sum))
        put(format_name("char_precision_merged", k), _ratio(covered_union, r_union_len))
        put(format_name("retrieved_chars", k), r_len)
        put(format_name("precision", k), _ratio(n_rel.astype(float), slots[k].astype(float)))
        put(format_name("hit_rate", k), hit.astype(float))
        mrr = np.zeros(n)
        np.divide(1.0, first_k + 1.0, out=mrr, where=hit)
        put(format_name("mrr", k), mrr)
        if chroma:  # numerator |∪R ∩ ∪G|; unused: each reference's uncovered characters
            unused = gold_len_sum - _sum_by(gold.query, frac * glen, n)
            put(format_name("chroma_recall", k), _ratio(covered_union, gold_len_sum))
            put(format_name("chroma_precision", k), _ratio(covered_union, r_len))
            put(format_name("iou", k), _ratio(covered_union, r_len + unused))
    return SpanScores(tuple(ks), tau, values, fractions, slots)
