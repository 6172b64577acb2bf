"""trec_eval's ordering and the per-query top selection, on integer columns (pure numpy).

trec_eval orders each query's entries by score descending, ties by doc id descending, and
ignores the rank column; ``trec_order`` gives that permutation, ``top_of_groups`` each
query's first ``top`` entries of it without sorting every entry. Doc ids are integer keys
whose order is the ids' order: dense codes into code-point-sorted names, or the uint64 byte
keys of ``columns.byte_keys`` (shifted to int64).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

PAD_KEY = np.iinfo(np.int64).max


def repeats_in_rows(d_mat: np.ndarray, sizes: np.ndarray | None) -> bool:
    """Whether a row of ``d_mat`` repeats a key among its first ``sizes[row]`` entries (all
    entries when ``sizes`` is None; padding holds the largest key and sorts last)."""
    srt = np.sort(d_mat, axis=1)
    same = srt[:, 1:] == srt[:, :-1]
    if sizes is not None:
        same &= np.arange(1, d_mat.shape[1]) < sizes[:, None]
    return bool(same.any())


def trec_order(q: np.ndarray, d: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Permutation putting entries in trec_eval order: query, score desc, doc id desc
    (``q`` and ``d`` integer keys whose order is the ids' order).

    One sort by score, then a stable sort by query (a radix sort when query codes fit in 16
    bits); only entries tied on (query, score) are then re-ordered by doc id. ``-0.0`` and
    ``0.0`` are one score.
    """
    n = q.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    neg = np.negative(s)
    neg += 0.0  # -0.0 and 0.0 are one score
    by_score = np.argsort(neg)
    q_small = q.astype(np.uint16) if int(q.max()) < 1 << 16 else q
    order = by_score[np.argsort(q_small[by_score], kind="stable")]
    qs, ss = q[order], neg[order]
    tie = (qs[1:] == qs[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        member = np.zeros(n, dtype=bool)
        member[:-1] |= tie
        member[1:] |= tie
        pos = np.flatnonzero(member)
        starts = np.ones(pos.size, dtype=bool)
        starts[1:] = ~tie[pos[1:] - 1]  # a member not tied to its predecessor opens a group
        group = np.cumsum(starts)
        within = np.lexsort((~d[order[pos]], group))
        order[pos] = order[pos][within]
    return order


@dataclass(frozen=True)
class Groups:
    """Entries grouped by query: group i holds entries ``perm[starts[i]:starts[i + 1]]``
    (``perm`` None: the identity, the file listing each query's lines together), all of
    query code ``query[i]``; codes are distinct."""

    perm: np.ndarray | None
    starts: np.ndarray
    query: np.ndarray
    entries: np.ndarray | None = None  # each entry's query code, when at hand

    def entry_queries(self, n: int) -> np.ndarray:
        """The query code of each of the ``n`` entries."""
        if self.entries is not None:
            return self.entries
        q = np.repeat(self.query, np.diff(np.append(self.starts, n)))
        if self.perm is None:
            return q
        out = np.empty(n, dtype=q.dtype)
        out[self.perm] = q
        return out

    def queries_of(self, entries: np.ndarray, n: int) -> np.ndarray:
        """The query code of the given entries (of ``n``)."""
        if self.perm is None:
            found: np.ndarray = self.query[np.searchsorted(self.starts, entries,
                                                           side="right") - 1]
            return found
        queries: np.ndarray = self.entry_queries(n)[entries]
        return queries


def group_by_query(q: np.ndarray) -> Groups:
    """Group entries by their dense query codes (stably; no permutation when the file
    already lists each query's lines together)."""
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    starts = np.concatenate([[0], change])
    codes = int(q.max()) + 1
    if starts.size <= codes and np.unique(q[starts]).size == starts.size:
        return Groups(None, starts, q[starts], q)
    perm = np.argsort(q.astype(np.uint16) if codes <= 1 << 16 else q, kind="stable")
    counts = np.bincount(q, minlength=codes)
    present = np.flatnonzero(counts)
    starts = np.concatenate([[0], np.cumsum(counts[present])[:-1]])
    return Groups(perm, starts, present, q)


def trec_top(q: np.ndarray, d: np.ndarray, s: np.ndarray, top: int,
             check_repeats: bool = False) -> np.ndarray | None:
    """Indices of each query's first ``top`` entries in trec_eval order, grouped by query in
    code order: what ``trec_order`` followed by a cut at rank ``top`` gives, without sorting
    every entry (``top_of_groups`` on ``group_by_query(q)``)."""
    if q.size == 0:
        return np.zeros(0, dtype=np.int64)
    return top_of_groups(group_by_query(q), d, s, top, check_repeats)


def selects_per_query(entries: int, queries: int, top: int) -> bool:
    """Whether queries hold enough entries (4 ``top`` on average) for the per-query
    selection of ``top_of_groups``; below that one full sort is as quick."""
    return entries >= 4 * top * queries


def top_of_groups(groups: Groups, d: np.ndarray, s: np.ndarray, top: int,
                  check_repeats: bool = False) -> np.ndarray | None:
    """``trec_top`` of grouped entries. Each query's candidates are found with
    ``argpartition`` (plus every entry tied with the ``top``-th score), then ordered
    exactly. Falls back to ``trec_order`` when queries hold few entries. ``check_repeats``:
    return None when a query lists a document twice (``d`` may then be any order-preserving
    integer key, not a dense code); also None when queries hold few entries."""
    n, count = d.size, groups.starts.size
    if not selects_per_query(n, count, top):
        if check_repeats:
            return None
        q = groups.entry_queries(n)
        order = trec_order(q, d, s)
        qs = q[order]
        first = np.concatenate([[0], np.flatnonzero(qs[1:] != qs[:-1]) + 1])
        rank = np.arange(n) - np.repeat(first, np.diff(np.append(first, n)))
        kept: np.ndarray = order[rank < top]
        return kept
    sizes = np.diff(np.append(groups.starts, n))
    if int(sizes.max()) * count > 2 * n:  # very unequal queries: one at a time
        return _top_per_query(groups, d, s, top, check_repeats)
    return _top_padded(groups, d, s, top, sizes, check_repeats)




def _top_padded(groups: Groups, d: np.ndarray, s: np.ndarray, top: int, sizes: np.ndarray,
                check_repeats: bool) -> np.ndarray | None:
    """``top_of_groups`` on a (queries x longest query) matrix, short queries padded with
    score -inf (never chosen): the repeat check, the partition and the ordering are one
    numpy call each over all queries, the repeat check on a second thread."""
    perm, starts = groups.perm, groups.starts
    n, count, width = d.size, starts.size, int(sizes.max())
    neg = np.negative(s)
    neg += 0.0  # -0.0 and 0.0 are one score
    idx: np.ndarray | None = None  # matrix cell -> entry; None: cell (r, c) is r * width + c
    pad: np.ndarray | None = None
    if width * count == n and perm is None:
        g_mat, d_mat = neg.reshape(count, width), d.reshape(count, width)
    else:
        rows = np.repeat(np.arange(count), sizes)
        idx = np.full((count, width), -1, dtype=np.int64)
        idx[rows, np.arange(n) - np.repeat(starts, sizes)] = np.arange(n) if perm is None else perm
        del rows
        pad = idx < 0
        g_mat, d_mat = neg[idx], d[idx]
        g_mat[pad], d_mat[pad] = np.inf, PAD_KEY
    with ThreadPoolExecutor(max_workers=1) as pool:  # numpy releases the GIL
        repeats = (pool.submit(repeats_in_rows, d_mat, None if pad is None else sizes)
                   if check_repeats else None)
        chosen = _select_padded(groups.query, d, s, top, idx, pad, g_mat)
        if repeats is not None and repeats.result():
            return None
    return chosen


def _select_padded(row_query: np.ndarray, d: np.ndarray, s: np.ndarray, top: int,
                   idx: np.ndarray | None, pad: np.ndarray | None, g_mat: np.ndarray
                   ) -> np.ndarray:
    """The selection and ordering half of ``_top_padded`` (``row_query``: each row's query
    code)."""
    groups, width = g_mat.shape
    if width > top:
        part = np.argpartition(g_mat, top - 1, axis=1)[:, :top]
        kth = np.take_along_axis(g_mat, part, axis=1).max(axis=1)
        keep = g_mat <= kth[:, None]  # the top entries and every entry tied with the last
        del part
        if pad is not None:
            keep &= ~pad
    else:
        keep = np.ones(g_mat.shape, dtype=bool) if pad is None else ~pad
    rows, cols = np.nonzero(keep)
    del keep
    cand = rows * width + cols if idx is None else idx[rows, cols]
    row_rank = np.empty(groups, dtype=np.int64)  # queries in code order
    row_rank[np.argsort(row_query, kind="stable")] = np.arange(groups)
    rows = row_rank[rows]
    order = trec_order(rows, d[cand], s[cand])
    cand, rows = cand[order], rows[order]
    first = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))
    rank = np.arange(cand.size) - np.repeat(first, np.diff(np.append(first, cand.size)))
    chosen: np.ndarray = cand[rank < top]
    return chosen


def _top_per_query(groups: Groups, d: np.ndarray, s: np.ndarray, top: int,
                   check_repeats: bool) -> np.ndarray | None:
    """``top_of_groups`` one query at a time (a loop per query, never per entry)."""
    perm, starts = groups.perm, groups.starts
    ends = np.append(starts[1:], d.size)
    neg = np.negative(s)
    neg += 0.0
    pieces: dict[int, np.ndarray] = {}
    for code, a, b in zip(groups.query.tolist(), starts.tolist(), ends.tolist()):
        idx = np.arange(a, b) if perm is None else perm[a:b]
        g = neg[idx]
        if check_repeats:
            dd = np.sort(d[idx])
            if (dd[1:] == dd[:-1]).any():
                return None
        if b - a > top:
            kth = g[np.argpartition(g, top - 1)[:top]].max()
            keep = g <= kth
            idx, g = idx[keep], g[keep]
        pieces[code] = idx[np.lexsort((~d[idx], g))][:top]
    return np.concatenate([pieces[k] for k in sorted(pieces)])
