"""The doc-level view of a span run (``scoring.doc_scoring.first_occurrences``): each row's
documents in the order each first occurs, against the loop that defines it."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ragspan.scoring.doc_scoring import first_occurrences


def brute(rows: list[list[int]]) -> list[tuple[int, int, int]]:
    out = []
    for i, codes in enumerate(rows):
        seen: list[int] = []
        for c in codes:
            if c not in seen:
                out.append((i, c, len(seen)))
                seen.append(c)
    return out


@given(st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=8))
def test_first_occurrences_match_the_loop(rows):
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    codes = np.array([c for r in rows for c in r], dtype=np.int64)
    rq, rd, rr = first_occurrences(offsets, codes)
    assert list(zip(rq.tolist(), rd.tolist(), rr.tolist())) == brute(rows)
