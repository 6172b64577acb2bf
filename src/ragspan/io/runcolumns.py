"""The columns a doc run is held in (``DocRun``) and the id coding that every run reader
shares: code-point-ordered codes, and order-preserving uint64 keys of ids of at most 8 ASCII
bytes (``byte_keys``; integer order is the ids' byte order, trec_eval's order for UTF-8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

PAD_KEY = np.iinfo(np.int64).max


@dataclass
class DocRun:
    """``query``/``doc`` are codes into ``qids``/``docs``; entries grouped by query in rank
    order; ``score`` NaN for JSONL runs without scores; ``line`` the source line of each."""

    path: str
    sha256: str
    format: str
    qids: list[str]
    docs: list[str]
    query: np.ndarray
    doc: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    line: np.ndarray
    doc_keys: np.ndarray | None = None  # ``text_keys(docs)`` when known (docs then sorted)

    def per_query(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for q, d in zip(self.query.tolist(), self.doc.tolist()):
            out.setdefault(self.qids[q], []).append(self.docs[d])
        return out


def sorted_codes(names: list[str]) -> tuple[list[str], np.ndarray]:
    """``(names sorted by code point, remap)`` with ``remap[old code] = new code``."""
    order = sorted(range(len(names)), key=names.__getitem__)
    remap = np.empty(len(names), dtype=np.int64)
    remap[order] = np.arange(len(names), dtype=np.int64)
    return [names[i] for i in order], remap


def code_column(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(distinct ids in code-point order, codes)``; ``np.unique`` orders unicode arrays by
    code point, trec_eval's byte order for UTF-8. Runs of one id (a run's query column) are
    coded by their first element only."""
    if values.size == 0:
        return [], np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(values[1:] != values[:-1]) + 1])
    if starts.size * 4 < values.size:
        names, inverse = np.unique(values[starts], return_inverse=True)
        codes = np.repeat(inverse.reshape(-1), np.diff(np.append(starts, values.size)))
    else:
        names, codes = np.unique(values, return_inverse=True)
    return names.tolist(), codes.reshape(-1).astype(np.int64, copy=False)


def repeats_in_rows(d_mat: np.ndarray, sizes: np.ndarray | None) -> bool:
    """Whether a row of ``d_mat`` repeats a key among its first ``sizes[row]`` entries (all
    entries when ``sizes`` is None; padding holds the largest key and sorts last)."""
    srt = np.sort(d_mat, axis=1)
    same = srt[:, 1:] == srt[:, :-1]
    if sizes is not None:
        same &= np.arange(1, d_mat.shape[1]) < sizes[:, None]
    return bool(same.any())


# KEY_MASKS[n] keeps the first n bytes of a big-endian 8-byte word
KEY_MASKS = np.array([0] + [((1 << 8 * j) - 1) << 8 * (8 - j) for j in range(1, 9)],
                     dtype=np.uint64)


def byte_keys(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """uint64 keys of the byte strings ``data[starts[i]:starts[i] + lens[i]]`` (each at most
    8 bytes; ``data`` a contiguous uint8 array): big-endian, NUL-padded, so integer order is
    the strings' byte order. One gather of the 8 bytes at each start (an unaligned view),
    masked to the string's length; starts in the last 7 bytes read from a padded copy."""
    size = data.size
    words = np.zeros(starts.size, dtype=">u8")
    inside = starts <= size - 8
    if size >= 8:
        view = np.ndarray((size - 7,), dtype=">u8", buffer=data, strides=(1,))
        words[inside] = view[starts[inside]]
    if not inside.all():
        base = max(size - 8, 0)
        tail = np.zeros(16, dtype=np.uint8)
        tail[:size - base] = data[base:]
        tail_view = np.ndarray((9,), dtype=">u8", buffer=tail, strides=(1,))
        words[~inside] = tail_view[starts[~inside] - base]
    return words.astype(np.uint64) & KEY_MASKS[lens]


def text_keys(ids: list[str]) -> np.ndarray | None:
    """``byte_keys`` of string ids when every one is ASCII of at most 8 characters without
    NUL (else None)."""
    joined = "".join(ids)
    if not ids or not joined.isascii() or "\x00" in joined or max(map(len, ids)) > 8:
        return None
    return np.array(ids, dtype="S8").view(">u8").astype(np.uint64)


def key_codes(keys: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``code_column`` for ``byte_keys`` of ASCII ids: (distinct ids in byte order, codes)."""
    names, codes = code_column(keys)
    return [x.decode("ascii") for x in np.asarray(names, dtype=np.uint64).astype(">u8")
            .view("S8").tolist()], codes


def arrow_keys(column: Any) -> np.ndarray | None:
    """Order-preserving uint64 keys of an arrow string column whose values are at most 8
    ASCII bytes (``byte_keys`` of arrow's offset and data buffers, no Python object per
    value); None when a value is longer."""
    keys = []
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        _, off_buf, data_buf = chunk.buffers()
        if data_buf is None or off_buf is None:
            return None
        offsets = np.frombuffer(off_buf, dtype=np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
        lens = np.diff(offsets)
        if lens.max() > 8:
            return None
        keys.append(byte_keys(np.frombuffer(data_buf, dtype=np.uint8), offsets[:-1], lens))
    return np.concatenate(keys) if keys else None
