"""A doc run's columns: what every parser returns (``RawRun``), the one ``assemble`` that
turns it into the run scoring reads (``DocRun``), and the id coding the parsers share
(code-point-ordered codes; order-preserving uint64 keys of ids of at most 8 ASCII bytes,
``byte_keys``, whose integer order is the ids' byte order, trec_eval's order for UTF-8).

The parsers (``io.runs.docs``: pyarrow CSV, numpy bytes, line by line, plain JSON;
``io.runs.arrow_jsonl``: pyarrow JSON) only read; the repeat check, trec_eval's order, the top cut
and the ranks are made here once, by ``assemble`` (with ``io.runs.ranking``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.io.runs.ranking import (
    Groups,
    group_by_query,
    selects_per_query,
    top_of_groups,
    trec_order,
    trec_top,
)


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


def code_column(values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """``(distinct ids in code-point order, codes)``: ``str`` ids for a unicode array, ``bytes``
    for an ``S`` array; ``np.unique`` orders unicode arrays by
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


# KEY_MASKS[n] keeps the first n bytes of a big-endian 8-byte word
KEY_MASKS = np.array([0] + [((1 << 8 * j) - 1) << 8 * (8 - j) for j in range(1, 9)],
                     dtype=np.uint64)


def byte_keys(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """uint64 keys of the byte strings ``data[starts[i]:starts[i] + lens[i]]`` (each at most
    8 bytes; ``data`` a contiguous uint8 array): big-endian, NUL-padded, so integer order is
    the strings' byte order. One gather of the 8 bytes at each start (an unaligned view),
    masked to the string's length; starts in the last 7 bytes read from a padded copy."""
    size = data.size
    if size >= 8 and starts.size and int(starts.max()) <= size - 8:  # no start in the tail
        view = np.ndarray((size - 7,), dtype=">u8", buffer=data, strides=(1,))
        keys: np.ndarray = view[starts].astype(np.uint64) & KEY_MASKS[lens]
        return keys
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
    out: np.ndarray = words.astype(np.uint64) & KEY_MASKS[lens]
    return out


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


@dataclass(frozen=True)
class RawRun:
    """A parsed run: entries as columns in file order, not yet checked for repeats, ordered
    or cut.

    Queries: ``qids`` (code-point order) with each entry's code ``query``, or ``groups``
    (entries grouped by query, ``query`` then may be None). Documents: ``docs`` (code-point
    order) with each entry's code ``doc``, or ``doc_keys`` alone (each entry's ``byte_keys``
    key; the top selection then runs on the keys and only the survivors are named).
    ``line``: each entry's source line (None: entry i is on line i + 1). ``ranked_by``:
    ``score`` (trec_eval's order) or ``listed`` (the file's order within each query).
    ``repeats_checked``: the parser has already refused a document listed twice."""

    path: str
    sha256: str
    format: str
    qids: list[str]
    score: np.ndarray
    ranked_by: str
    query: np.ndarray | None = None
    docs: list[str] | None = None
    doc: np.ndarray | None = None
    line: np.ndarray | None = None
    groups: Groups | None = None
    doc_keys: np.ndarray | None = None
    repeats_checked: bool = False


def assemble(raw: RawRun, top: int | None = None) -> DocRun:
    """The DocRun of ``raw``: a document listed twice for a query is an InputError naming
    both lines (checked over every entry, also those past ``top``); entries in trec_eval's
    order (or the listed order), with their ranks; with ``top``, only each query's first
    ``top`` entries and the documents they name."""
    n = raw.score.size
    if raw.docs is None:  # ids are byte keys, with their query codes
        if raw.doc_keys is None:
            raise ValueError("a run without document ids needs their byte keys")
        groups = raw.groups
        if groups is None:
            if raw.query is None:
                raise ValueError("a run needs its query codes or its query groups")
            groups = group_by_query(raw.query)
        if (raw.ranked_by == "score" and top is not None
                and selects_per_query(n, groups.starts.size, top)):
            run = _top_by_keys(raw, groups, top)
            if run is not None:
                return run
        docs, doc = key_codes(raw.doc_keys)  # a repeat is then named with its lines
        raw = dataclasses.replace(raw, docs=docs, doc=doc, doc_keys=None, groups=groups)
    q = raw.query if raw.query is not None else _groups(raw).entry_queries(n)
    ln = raw.line if raw.line is not None else np.arange(1, n + 1, dtype=np.int64)
    if not raw.repeats_checked:
        _refuse_repeats(raw, q, ln)
    return _ordered(raw, q, _doc(raw), raw.score, ln, top)


def _groups(raw: RawRun) -> Groups:
    if raw.groups is None:
        raise ValueError("a run without query codes needs its query groups")
    return raw.groups


def _docs(raw: RawRun) -> list[str]:
    if raw.docs is None:
        raise ValueError("the run's document ids are not decoded yet")
    return raw.docs


def _doc(raw: RawRun) -> np.ndarray:
    if raw.doc is None:
        raise ValueError("the run's document codes are not assigned yet")
    return raw.doc


def _refuse_repeats(raw: RawRun, q: np.ndarray, ln: np.ndarray) -> None:
    docs, doc = _docs(raw), _doc(raw)
    pair = q * max(len(docs), 1) + doc
    sorted_pairs = np.sort(pair)
    if not (sorted_pairs[1:] == sorted_pairs[:-1]).any():
        return
    srt = np.argsort(pair, kind="stable")
    dup = np.flatnonzero(pair[srt][1:] == pair[srt][:-1])
    i, j = srt[dup[0]], srt[dup[0] + 1]
    first, second = sorted((int(ln[i]), int(ln[j])))
    raise InputError(f"document '{docs[doc[i]]}' listed twice for query "
                     f"'{raw.qids[q[i]]}' (first on line {first})", raw.path, second)


def _ranks(q: np.ndarray) -> np.ndarray:
    """Each entry's rank within its query (entries grouped by query, in order)."""
    start = np.ones(q.size, dtype=bool)
    start[1:] = q[1:] != q[:-1]
    first = np.flatnonzero(start)
    return np.arange(q.size) - np.repeat(first, np.diff(np.append(first, q.size)))


def _ordered(raw: RawRun, q: np.ndarray, d: np.ndarray, s: np.ndarray, ln: np.ndarray,
             top: int | None) -> DocRun:
    if raw.ranked_by == "score":
        order = trec_order(q, d, s) if top is None else trec_top(q, d, s, top)
    else:
        order = np.lexsort((ln, q))
    q, d, s, ln = q[order], d[order], s[order], ln[order]
    rank = _ranks(q)
    docs = _docs(raw)
    if top is not None and raw.ranked_by != "score":
        keep = rank < top
        q, d, s, ln, rank = q[keep], d[keep], s[keep], ln[keep], rank[keep]
    if top is not None:  # only the documents that survived the cut
        used, d = np.unique(d, return_inverse=True)
        docs = [docs[i] for i in used.tolist()]
        d = d.reshape(-1).astype(np.int64, copy=False)
    return DocRun(raw.path, raw.sha256, raw.format, raw.qids, docs, q, d, s, rank, ln,
                  text_keys(docs))


def _top_by_keys(raw: RawRun, groups: Groups, top: int) -> DocRun | None:
    """The top selection on the byte keys themselves: repeated documents are checked and
    each query's top entries chosen on the keys, and only the survivors get dense codes.
    None when a document repeats (the dense path then names the lines)."""
    keys, s = raw.doc_keys, raw.score
    keys ^= np.uint64(1 << 63)  # the same order as signed integers (undone below)
    order = top_of_groups(groups, keys.view(np.int64), s, top, check_repeats=True)
    keys ^= np.uint64(1 << 63)
    if order is None:
        return None
    uniq, d = np.unique(keys[order], return_inverse=True)
    docs = [x.decode("ascii") for x in uniq.astype(">u8").view("S8").tolist()]
    q = groups.queries_of(order, keys.size)
    ln = order + 1 if raw.line is None else raw.line[order]
    return DocRun(raw.path, raw.sha256, raw.format, raw.qids, docs, q,
                  d.reshape(-1).astype(np.int64, copy=False), s[order], _ranks(q), ln, uniq)
