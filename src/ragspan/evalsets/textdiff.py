"""Where the text of an old document stands in its edited version: the matched blocks of
the two texts, and an old offset mapped through them.

``matched_blocks(old, new)`` returns ``(old_start, new_start, length)`` triples, increasing
in both texts and not overlapping, each a run of equal characters. They are found in
bounded work, coarse to fine:

1. the common prefix and suffix are matched first (a preamble added, an appendix cut);
2. what lies between is aligned on the ``K_GRAMS`` that occur exactly once in each text's
   window (sampled every ``k // 2`` characters of the old text), kept in the longest order
   both texts agree on (so a passage moved elsewhere is not matched in place), each
   verified character by character and grown to a maximal run;
3. the windows between those runs are aligned again at the next, shorter length, and
   windows of at most ``FINE`` characters on both sides by ``difflib`` (exact, no
   heuristics).

A window larger than ``FINE`` with no shorter length left stays unmatched: its characters
map to the window's ends. Nothing here decides a status; ``migrate`` reads the map.
"""

from __future__ import annotations

import bisect
import difflib

import numpy as np

from ragspan.io.fuzzy import seed_hashes

K_GRAMS = (32, 12)
FINE = 2_000

Block = tuple[int, int, int]


def _unique(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hashes that occur once in ``h`` (sorted) and the position of each, in numpy
    arrays: a few bytes per character, never a Python dict of them."""
    values, first, counts = np.unique(h, return_index=True, return_counts=True)
    once = counts == 1
    return values[once], first[once]


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (sorted by their first item) whose second items
    increase (patience sorting)."""
    tails: list[int] = []
    tail_at: list[int] = []
    parent = [-1] * len(pairs)
    for i, (_, y) in enumerate(pairs):
        j = bisect.bisect_left(tails, y)
        if j == len(tails):
            tails.append(y)
            tail_at.append(i)
        else:
            tails[j] = y
            tail_at[j] = i
        parent[i] = tail_at[j - 1] if j else -1
    out = []
    i = tail_at[-1] if tail_at else -1
    while i != -1:
        out.append(pairs[i])
        i = parent[i]
    return out[::-1]


def _anchored(a: str, b: str, k: int) -> list[Block]:
    """Maximal equal runs of ``a`` and ``b`` grown from their shared unique ``k``-grams, in
    the longest order both agree on."""
    ha, hb = seed_hashes(a, k), seed_hashes(b, k)
    if not ha.size or not hb.size:
        return []
    step = max(1, k // 2)
    va, ia = _unique(ha)
    del ha
    grid = ia % step == 0
    va, ia = va[grid], ia[grid]
    vb, ib = _unique(hb)
    del hb
    _, xa, xb = np.intersect1d(va, vb, assume_unique=True, return_indices=True)
    pairs = sorted(zip(ia[xa].tolist(), ib[xb].tolist()))
    blocks: list[Block] = []
    for i, j in _longest_increasing(pairs):
        if blocks:
            o, n, size = blocks[-1]
            if i - o == j - n and i <= o + size:  # on the last run's diagonal, inside it
                continue
            if i < o + size or j < n + size:
                continue  # would overlap the last run
        if a[i:i + k] != b[j:j + k]:
            continue  # a hash collision
        lo_a = blocks[-1][0] + blocks[-1][2] if blocks else 0
        lo_b = blocks[-1][1] + blocks[-1][2] if blocks else 0
        while i > lo_a and j > lo_b and a[i - 1] == b[j - 1]:
            i, j = i - 1, j - 1
        end = 0
        while i + end < len(a) and j + end < len(b) and a[i + end] == b[j + end]:
            end += 1
        blocks.append((i, j, end))
    return blocks


def _fine(a: str, b: str) -> list[Block]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(m.a, m.b, m.size) for m in matcher.get_matching_blocks() if m.size]


def _align(a: str, b: str, level: int) -> list[Block]:
    if not a or not b:
        return []
    if len(a) <= FINE and len(b) <= FINE:
        return _fine(a, b)
    if level >= len(K_GRAMS):
        return []
    out: list[Block] = []
    pa = pb = 0
    for o, n, size in [*_anchored(a, b, K_GRAMS[level]), (len(a), len(b), 0)]:
        out += [(pa + x, pb + y, s) for x, y, s in _align(a[pa:o], b[pb:n], level + 1)]
        if size:
            out.append((o, n, size))
        pa, pb = o + size, n + size
    return out


def matched_blocks(old: str, new: str) -> list[Block]:
    """The matched blocks of ``old`` and ``new`` (see the module docstring)."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    blocks: list[Block] = [(0, 0, head)] if head else []
    middle = _align(old[head:len(old) - tail], new[head:len(new) - tail], 0)
    blocks += [(head + o, head + n, s) for o, n, s in middle]
    if tail:
        blocks.append((len(old) - tail, len(new) - tail, tail))
    return blocks


class OffsetMap:
    """Old offsets mapped into the new text through ``matched_blocks``."""

    def __init__(self, old: str, new: str):
        self.blocks = matched_blocks(old, new)
        self._starts = [o for o, _, _ in self.blocks]
        self.new_length = len(new)

    def start(self, x: int) -> int:
        """Where a span starting at old offset ``x`` starts: inside a block, exactly; in an
        unmatched stretch, where the new text's stretch starts."""
        i = bisect.bisect_right(self._starts, x) - 1
        if i < 0:
            return 0
        o, n, size = self.blocks[i]
        return n + (x - o) if x < o + size else n + size

    def end(self, x: int) -> int:
        """Where a span ending at old offset ``x`` ends: inside a block (or at its end),
        exactly; in an unmatched stretch, where the new text's stretch ends."""
        i = bisect.bisect_left(self._starts, x) - 1  # the last block starting before x
        if i >= 0:
            o, n, size = self.blocks[i]
            if x <= o + size:
                return n + (x - o)
        return self.blocks[i + 1][1] if i + 1 < len(self.blocks) else self.new_length
