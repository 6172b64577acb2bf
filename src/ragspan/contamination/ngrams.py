"""Exact n-gram ids and an inverted index over them.

Tokens get exact integer ids from one shared vocabulary; an n-gram's id packs its token ids
into one integer (exact while ``vocabulary ** n < 2**63``; beyond that, rows are numbered
exactly with ``np.unique``), so containment is computed exactly, never estimated, and no
Python set per document is built.

The index holds the distinct (n-gram, document) pairs sorted by n-gram, so the documents that
contain any of an item's n-grams are found with ``searchsorted``.
"""

from __future__ import annotations

import numpy as np


class Vocabulary:
    """Exact word ids (``ids``: word -> id), filled by the index; items only look words up."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def lookup(self, toks: list[str]) -> np.ndarray:
        """Ids for ``toks`` without growing the vocabulary: the k-th distinct unknown token
        gets ``len(vocabulary) + k`` (distinct, and never equal to a known id)."""
        ids, size = self.ids, len(self.ids)
        unknown: dict[str, int] = {}
        return np.fromiter((ids[t] if t in ids else size + unknown.setdefault(t, len(unknown))
                            for t in toks), dtype=np.int64, count=len(toks))


def gram_matrix(seq: np.ndarray, n: int) -> np.ndarray:
    """The (len - n + 1, n) matrix of consecutive n-token windows (a view)."""
    if seq.size < n:
        return np.zeros((0, n), dtype=np.int64)
    return np.lib.stride_tricks.sliding_window_view(seq, n)


class GramCoder:
    """Maps n-gram windows to exact int64 ids, consistently across calls."""

    def __init__(self, vocab_size_bound: int, n: int):
        self.n = n
        self.base = max(vocab_size_bound, 2)
        self.packed = self.base ** n < 2 ** 63
        self._rows: dict[bytes, int] = {}

    def ids(self, windows: np.ndarray) -> np.ndarray:
        if windows.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if self.packed:
            out = np.zeros(windows.shape[0], dtype=np.int64)
            for j in range(windows.shape[1]):
                out = out * self.base + windows[:, j]
            return out
        rows = self._rows
        return np.fromiter((rows.setdefault(r.tobytes(), len(rows)) for r in
                            np.ascontiguousarray(windows)), dtype=np.int64, count=windows.shape[0])


class GramIndex:
    """Distinct (n-gram id, document number) pairs, sorted, for one n."""

    def __init__(self, grams: np.ndarray, docs: np.ndarray, n_docs: int):
        self.grams, self.docs, self.n_docs = grams, docs, n_docs

    @classmethod
    def from_pairs(cls, grams: np.ndarray, docs: np.ndarray, n_docs: int) -> GramIndex:
        """From (gram, document) pairs with ``docs`` ascending: a stable sort by gram keeps
        the documents ascending within each gram; repeated pairs are dropped. When
        ``gram * n_docs + doc`` fits in 64 bits, one sort of that key does it all."""
        top = int(grams.max()) + 1 if grams.size else 0
        if grams.size and top * max(n_docs, 1) < 2 ** 64:
            key = grams.astype(np.uint64) * np.uint64(max(n_docs, 1)) + docs.astype(np.uint64)
            key.sort()
            keep = np.ones(key.size, dtype=bool)
            keep[1:] = key[1:] != key[:-1]
            key = key[keep]
            q, r = np.divmod(key, np.uint64(max(n_docs, 1)))
            return cls(q.astype(np.int64), r.astype(np.int64), n_docs)
        order = np.argsort(grams, kind="stable")
        grams, docs = grams[order], docs[order]
        keep = np.ones(grams.size, dtype=bool)
        keep[1:] = (grams[1:] != grams[:-1]) | (docs[1:] != docs[:-1])
        return cls(grams[keep], docs[keep], n_docs)

    def counts(self, item_grams: np.ndarray) -> np.ndarray:
        """For each document, how many of the (distinct) ``item_grams`` it contains."""
        g = np.unique(item_grams)
        lo = np.searchsorted(self.grams, g, side="left")
        hi = np.searchsorted(self.grams, g, side="right")
        total = int((hi - lo).sum())
        if total == 0:
            return np.zeros(self.n_docs, dtype=np.int64)
        starts = np.repeat(lo, hi - lo)
        offsets = np.arange(total) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo)
        return np.bincount(self.docs[starts + offsets], minlength=self.n_docs)


def longest_shared_run(item_ids: np.ndarray, doc_ids: np.ndarray, n: int) -> tuple[int, int, int]:
    """The longest run of consecutive item n-grams found consecutively in the document:
    ``(doc_token_start, doc_token_end, item_token_start)``, token positions, end exclusive;
    ``(0, 0, 0)`` when nothing is shared. For items shorter than ``n`` the whole item is one
    gram."""
    m = min(n, item_ids.size)
    if m == 0 or doc_ids.size < m:
        return 0, 0, 0
    iw, dw = gram_matrix(item_ids, m), gram_matrix(doc_ids, m)
    # equal windows: compare packed rows
    keys = {r.tobytes(): k for k, r in enumerate(np.unique(np.vstack([iw, dw]), axis=0))}
    ic = np.fromiter((keys[r.tobytes()] for r in iw), dtype=np.int64, count=iw.shape[0])
    dc = np.fromiter((keys[r.tobytes()] for r in dw), dtype=np.int64, count=dw.shape[0])
    best = (0, -1, -1)
    prev = np.zeros(dc.size, dtype=np.int64)
    for i in range(ic.size):
        hit = dc == ic[i]
        cur = np.where(hit, 1, 0)
        cur[1:] = np.where(hit[1:], prev[:-1] + 1, 0)
        if cur.size and cur.max() > best[0]:
            p = int(cur.argmax())
            best = (int(cur[p]), p, i)
        prev = cur
    length, p_end, i_end = best
    if length == 0:
        return 0, 0, 0
    d_start = p_end - length + 1
    return d_start, p_end + m, i_end - length + 1
