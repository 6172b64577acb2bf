"""Interval arithmetic (``ragspan.scoring.spans``) against brute-force character sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ragspan.scoring import spans as sp

interval = st.tuples(st.integers(0, 60), st.integers(1, 25)).map(lambda t: (t[0], t[0] + t[1]))
intervals = st.lists(interval, max_size=12)


def chars(ivs):
    return {c for s, e in ivs for c in range(s, e)}


def arrays(ivs):
    return (np.array([s for s, _ in ivs], dtype=np.int64),
            np.array([e for _, e in ivs], dtype=np.int64))


@given(intervals)
def test_union_is_the_character_set(ivs):
    u = sp.union(*arrays(ivs))
    assert chars(zip(u.start.tolist(), u.end.tolist())) == chars(ivs)
    assert int(u.lengths.sum()) == len(chars(ivs))
    assert np.all(u.start[1:] > u.end[:-1])  # disjoint, sorted, not touching


@given(intervals)
def test_union_idempotent_and_order_independent(ivs):
    u = sp.union(*arrays(ivs))
    again = sp.union(u.start, u.end)
    assert np.array_equal(u.start, again.start) and np.array_equal(u.end, again.end)
    rev = sp.union(*arrays(list(reversed(ivs))))
    assert np.array_equal(u.start, rev.start) and np.array_equal(u.end, rev.end)


@given(intervals, st.randoms())
def test_union_sorted_needs_only_the_starts_sorted(ivs, rnd):
    """``union_sorted`` of intervals sorted by start, equal starts in any order of their
    ends, is ``union`` of the same intervals in any order."""
    ivs = sorted(ivs, key=lambda iv: (iv[0], rnd.random()))
    u, got = sp.union(*arrays(ivs)), sp.union_sorted(*arrays(ivs))
    assert np.array_equal(u.start, got.start) and np.array_equal(u.end, got.end)
    assert np.array_equal(u.before, got.before)


@given(intervals, intervals)
def test_covered_matches_brute_force(ivs, queries):
    u = sp.union(*arrays(ivs))
    got = sp.covered(u, *arrays(queries)) if queries else np.zeros(0)
    cs = chars(ivs)
    for (s, e), g in zip(queries, got.tolist()):
        assert g == len(cs & set(range(s, e)))
        assert 0 <= g <= e - s


@given(intervals, intervals)
def test_pairwise_overlap_matches_brute_force(ivs, queries):
    p = sp.pile(*arrays(ivs), width=1000)
    got = sp.pairwise_overlap(p, *arrays(queries)) if queries else np.zeros(0)
    for (s, e), g in zip(queries, got.tolist()):
        assert g == sum(max(0, min(e, b) - max(s, a)) for a, b in ivs)


def test_groups_on_one_line_never_interact():
    line = sp.make_line(3, 99)
    s = line.place(np.array([0, 1, 2]), np.array([0, 0, 50]))
    e = line.place(np.array([0, 1, 2]), np.array([100 - 1, 99, 99]))
    u = sp.union(s, e)
    assert len(u) == 3  # group 0 ends at 99, group 1 starts at 100: kept apart
    assert line.group_of(u.start).tolist() == [0, 1, 2]


def test_pairwise_overlap_with_groups():
    line = sp.make_line(2, 50)
    p = sp.pile(line.place(np.array([0, 1]), np.array([0, 0])),
                line.place(np.array([0, 1]), np.array([40, 40])), line.width)
    got = sp.pairwise_overlap(p, line.place(np.array([1]), np.array([10])),
                              line.place(np.array([1]), np.array([20])))
    assert got.tolist() == [10]


def test_empty_inputs():
    u = sp.union(np.zeros(0), np.zeros(0))
    assert len(u) == 0
    assert sp.covered(u, np.array([1]), np.array([5])).tolist() == [0]
