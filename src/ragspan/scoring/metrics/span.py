"""Span metrics (DESIGN.md, "Metrics"): their conventions and the columns they are computed
from. ``span_scores.score_spans`` computes them for all queries and all cutoffs at once;
inputs are column arrays, and no Python loop runs per (query, span) pair. Conventions:

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

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragspan.scoring.metrics.registry import Cutoff, Tokens


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

    def taken(self, order: np.ndarray) -> RankedColumns:
        """The same entries in another order (``order``, a permutation of them): every
        column taken in that order, each entry's token counts with it, and the characters
        before each entry carried over when they were computed (each entry's ``rank`` says
        where it stands in its query's ranking, whatever the order of the columns)."""
        def take(column: np.ndarray | None) -> np.ndarray | None:
            return None if column is None else column[order]

        tokens = self.tokens
        if tokens is not None:
            prefix = tokens.prefix
            tokens = TokenCounts(tokens.count[order],
                                 lambda i, m: prefix(int(order[i]), m))
        out = RankedColumns(self.query[order], self.doc[order], self.start[order],
                            self.end[order], self.rank[order], take(self.source), tokens,
                            take(self.step), take(self.step_rank), self.query_steps)
        if "chars_before" in self.__dict__:  # computed: carried over, not summed again
            out.__dict__["chars_before"] = self.chars_before[order]
        return out

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
