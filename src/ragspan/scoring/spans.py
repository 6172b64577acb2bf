"""Interval arithmetic on numpy arrays, vectorised across all queries at once.

Every interval is half-open ``[start, end)`` in integer code-point offsets. To work on many
(query, document) groups in one pass, each group is laid on one shared line at its own base
(``group * width``, ``width`` larger than any offset), so intervals of different groups can
never touch. Functions here take and return positions on that line.

References for the arithmetic: a union is a sort plus a running maximum of ends; the length
of a union below a point is a prefix sum plus one partial interval (searchsorted).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

INT = np.int64
IntArray = npt.NDArray[np.int64]
"""An int64 array: offsets, lengths and positions on the shared line."""


@dataclass(frozen=True)
class Union:
    """Disjoint intervals sorted by start; ``before[i]`` is the total length of intervals ``< i``."""

    start: IntArray
    end: IntArray
    before: IntArray

    @property
    def lengths(self) -> IntArray:
        return self.end - self.start

    def __len__(self) -> int:
        return int(self.start.size)


def merged(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(start, end)`` intervals merged into a disjoint sorted list (touching intervals
    merged, as ``union`` merges them): the one pure-Python merge, for the few intervals of
    one document or one step (``union`` is the vectorised one)."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(pairs):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def union(starts: IntArray, ends: IntArray) -> Union:
    """Merge intervals (any order, overlapping or touching) into a disjoint sorted union.

    Empty input gives an empty union. Touching intervals (``a.end == b.start``) are merged.
    """
    starts = np.asarray(starts, dtype=INT)
    ends = np.asarray(ends, dtype=INT)
    order = np.argsort(starts, kind="stable")
    return union_sorted(starts[order], ends[order])


def union_sorted(s: IntArray, e: IntArray) -> Union:
    """``union`` of intervals already sorted by start (``s`` non-decreasing; ``e`` in the
    same order): no sort. The union is the same whatever the order of equal starts."""
    if s.size == 0:
        empty = np.zeros(0, dtype=INT)
        return Union(empty, empty, empty)
    reach = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.greater(s[1:], reach[:-1], out=new[1:])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    us = s[first]
    ue = reach[last]
    before = np.zeros(us.size, dtype=INT)
    np.cumsum(ue[:-1] - us[:-1], out=before[1:])
    return Union(us, ue, before)


def measure_below(u: Union, x: IntArray) -> IntArray:
    """Length of ``u`` lying in ``(-inf, x)``, for each point of ``x``."""
    x = np.asarray(x, dtype=INT)
    if len(u) == 0:
        return np.zeros(x.shape, dtype=INT)
    j = np.searchsorted(u.start, x, side="right") - 1
    inside = j >= 0
    jj = np.where(inside, j, 0)
    partial = np.minimum(x, u.end[jj]) - u.start[jj]
    return np.where(inside, u.before[jj] + partial, 0)


def covered(u: Union, starts: IntArray, ends: IntArray) -> IntArray:
    """For each interval ``[starts[i], ends[i])``, the number of its positions inside ``u``."""
    return measure_below(u, ends) - measure_below(u, starts)


@dataclass(frozen=True)
class Pile:
    """Possibly overlapping intervals, each group's sorted separately, for pairwise sums.

    ``starts``/``ends`` are sorted positions on the shared line; ``*_sum`` are prefix sums of
    positions *relative to each group's base*, so that sums never overflow int64.
    """

    starts: IntArray
    ends: IntArray
    start_sum: IntArray
    end_sum: IntArray
    width: int


def pile(starts: IntArray, ends: IntArray, width: int) -> Pile:
    s = np.sort(np.asarray(starts, dtype=INT))
    e = np.sort(np.asarray(ends, dtype=INT))
    ssum = np.zeros(s.size + 1, dtype=INT)
    esum = np.zeros(e.size + 1, dtype=INT)
    np.cumsum(s % width, out=ssum[1:])
    np.cumsum(e % width, out=esum[1:])
    return Pile(s, e, ssum, esum, width)


def _mass_below(p: Pile, x: IntArray, base: IntArray) -> IntArray:
    """Sum over the group's intervals r of ``|r ∩ [base, x)|`` (x and base on the shared line)."""
    local = x - base
    s_hi = np.searchsorted(p.starts, x, side="left")
    s_lo = np.searchsorted(p.starts, base, side="left")
    e_hi = np.searchsorted(p.ends, x, side="left")
    e_lo = np.searchsorted(p.ends, base, side="left")
    opened = (s_hi - s_lo) * local - (p.start_sum[s_hi] - p.start_sum[s_lo])
    closed = (e_hi - e_lo) * local - (p.end_sum[e_hi] - p.end_sum[e_lo])
    mass: IntArray = opened - closed
    return mass


def pairwise_overlap(p: Pile, starts: IntArray, ends: IntArray) -> IntArray:
    """For each interval ``[starts[i], ends[i])``: the sum of its overlaps with every interval of
    the pile in the same group, counted once per pile interval (no merging)."""
    starts = np.asarray(starts, dtype=INT)
    ends = np.asarray(ends, dtype=INT)
    if p.starts.size == 0:
        return np.zeros(starts.shape, dtype=INT)
    base = starts - starts % p.width
    return _mass_below(p, ends, base) - _mass_below(p, starts, base)


@dataclass(frozen=True)
class Line:
    """Places (group, offset) pairs on one shared line: ``position = group * width + offset``."""

    width: int

    def place(self, group: IntArray, offset: IntArray) -> IntArray:
        return np.asarray(group, dtype=INT) * self.width + np.asarray(offset, dtype=INT)

    def group_of(self, position: IntArray) -> IntArray:
        return np.asarray(position, dtype=INT) // self.width


def make_line(n_groups: int, max_offset: int) -> Line:
    """A line wide enough for ``max_offset``; refuses layouts that would overflow int64."""
    width = int(max_offset) + 1
    if n_groups * width >= 2**62:
        raise OverflowError(f"{n_groups} groups x width {width} overflow the int64 line")
    return Line(width)
