"""``io.runs.columns.byte_keys``: the uint64 key of each byte string of at most 8 bytes is its
bytes big-endian, NUL-padded (so integer order is byte order), whether or not a string
starts in the buffer's last 7 bytes."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ragspan.io.runs.columns import byte_keys

IDS = st.lists(st.binary(min_size=1, max_size=8).filter(lambda b: b"\x00" not in b),
               min_size=1, max_size=20)


@given(IDS, st.binary(max_size=10))
def test_keys_are_the_padded_bytes(ids, trailer):
    data = b"".join(ids) + trailer
    lens = np.array([len(i) for i in ids], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    keys = byte_keys(np.frombuffer(data, dtype=np.uint8), starts, lens)
    assert keys.tolist() == [int.from_bytes(i.ljust(8, b"\x00"), "big") for i in ids]
    assert sorted(range(len(ids)), key=lambda j: (keys[j], j)) == \
        sorted(range(len(ids)), key=lambda j: (ids[j], j))
