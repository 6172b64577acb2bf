"""Doc-level runs: TREC runs (``qid Q0 docid rank score tag``) and JSONL (``retrieved_ids``).

A run is held column-wise and already in trec_eval order: per query, score descending, ties
broken by doc id descending (trec_eval sorts this way and ignores the rank column). A JSONL
run's order is the listed order. A document listed twice for one query is an error.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.errors import InputError
from ragspan.io.evalset import header_record, parse_id, unique_row_id
from ragspan.io.files import (
    decode_records,
    iter_json_lines,
    loads_json,
    read_bytes,
    read_head,
    sha256_hex,
    split_rows,
)
from ragspan.io.runcolumns import (
    PAD_KEY,
    DocRun,
    arrow_keys,
    byte_keys,
    code_column,
    key_codes,
    repeats_in_rows,
    sorted_codes,
    text_keys,
)

__all__ = ["DocRun", "PAD_KEY", "arrow_keys", "byte_keys", "code_column", "key_codes",
           "read_doc_run", "repeats_in_rows", "sorted_codes", "text_keys", "write_doc_run"]

RUN_FORMATS = ("trec", "jsonl", "span")
BOM_BYTES = b"\xef\xbb\xbf"
BLOCK_BYTES = 1 << 23
# whitespace str.split() splits on besides spaces and newlines: a clean file has none
ODD_WHITESPACE = (b"\t", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")


def detect_run_format(text: str, path: str) -> str:
    for raw in text.split("\n", 20)[:20]:
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            obj = loads_json(line, path, 1)
            if isinstance(obj, dict) and "retrieved" in obj:
                return "span"
            if isinstance(obj, dict) and "_header" in obj:
                continue
            if isinstance(obj, dict) and "retrieved_ids" in obj:
                return "jsonl"
            raise InputError("a JSONL run row needs 'retrieved' or 'retrieved_ids'", path, 1)
        if len(line.split()) >= 6:
            return "trec"
        raise InputError("cannot tell the run format from its first line "
                         "(expected TREC 'qid Q0 docid rank score tag' or JSONL)", path)
    raise InputError("the run file is empty", path)


def _floats(tokens: list[str]) -> np.ndarray | None:
    try:
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        return None
    return values if np.isfinite(values).all() else None


def _parse_trec_block(block: str, first_line: int, path: str,
                      out: list[tuple[np.ndarray, ...]]) -> None:
    """Parse whole lines of a TREC run into (qid strings, doc strings, scores, line numbers);
    a fast path for clean 6-column blocks, a line-by-line path that names bad lines."""
    tokens = split_rows(block, 6) if "#" not in block else None
    if tokens is not None:
        scores = _floats(tokens[4::6])
        if scores is not None:
            n_lines = len(tokens) // 6
            lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
            out.append((tokens[0::6], tokens[2::6], scores, lines))
            return
        del tokens
    q_l, d_l, s_l, n_l = [], [], [], []
    for i, raw in enumerate(block.split("\n")):
        parts = raw.split()
        if not parts or parts[0].startswith("#"):
            continue
        number = first_line + i
        if len(parts) < 6:
            raise InputError(f"expected 6 columns 'qid Q0 docid rank score tag', found "
                             f"{len(parts)}", path, number)
        try:
            score = float(parts[4])
        except ValueError:
            raise InputError(f"score {parts[4]!r} is not a number", path, number) from None
        if not math.isfinite(score):
            raise InputError(f"non-finite score {parts[4]}", path, number)
        q_l.append(parts[0])
        d_l.append(parts[2])
        s_l.append(score)
        n_l.append(number)
    if q_l:
        out.append((q_l, d_l, np.asarray(s_l, np.float64), np.asarray(n_l, np.int64)))


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


def _blocks(text: str) -> list[tuple[int, str]]:
    """Split into blocks of whole lines, each with its first line number."""
    blocks = []
    pos, line = 0, 1
    while pos < len(text):
        end = text.find("\n", min(pos + BLOCK_BYTES, len(text)))
        end = len(text) if end < 0 else end + 1
        block = text[pos:end]
        blocks.append((line, block))
        line += block.count("\n")
        pos = end
    return blocks


def _strings(parts: list[tuple], i: int) -> np.ndarray:
    arrays = [np.array(p[i]) for p in parts if len(p[i])]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype="<U1")


def _code_parts(parts: list[tuple]) -> tuple[list[str], list[str], np.ndarray, np.ndarray,
                                              np.ndarray, np.ndarray]:
    qids, q = code_column(_strings(parts, 0))
    docs, d = code_column(_strings(parts, 1))
    s = np.concatenate([p[2] for p in parts])
    ln = np.concatenate([p[3] for p in parts])
    return qids, docs, q, d, s, ln


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
            return self.query[np.searchsorted(self.starts, entries, side="right") - 1]
        return self.entry_queries(n)[entries]


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
        return order[rank < top]
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
    return cand[rank < top]


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


def _finish(path: str, sha: str, fmt: str, qids: list[str], docs: list[str], q: np.ndarray,
            d: np.ndarray, s: np.ndarray, ln: np.ndarray, sort_by_score: bool,
            top: int | None = None) -> DocRun:
    """Check for repeated documents (over every entry), then put entries in order; with
    ``top``, keep only each query's first ``top`` entries."""
    pair = q * max(len(docs), 1) + d
    sorted_pairs = np.sort(pair)
    if (sorted_pairs[1:] == sorted_pairs[:-1]).any():
        srt = np.argsort(pair, kind="stable")
        dup = np.flatnonzero(pair[srt][1:] == pair[srt][:-1])
        i, j = srt[dup[0]], srt[dup[0] + 1]
        first, second = sorted((int(ln[i]), int(ln[j])))
        raise InputError(f"document '{docs[d[i]]}' listed twice for query '{qids[q[i]]}' "
                         f"(first on line {first})", path, second)
    del pair, sorted_pairs
    if sort_by_score and top is not None:
        order = trec_top(q, d, s, top)
    elif sort_by_score:
        order = trec_order(q, d, s)
    else:
        order = np.lexsort((ln, q))
    q, d, s, ln = q[order], d[order], s[order], ln[order]
    start = np.ones(q.size, dtype=bool)
    start[1:] = q[1:] != q[:-1]
    first_idx = np.flatnonzero(start)
    rank = np.arange(q.size) - np.repeat(first_idx, np.diff(np.append(first_idx, q.size)))
    if top is not None and not sort_by_score:
        keep = rank < top
        q, d, s, ln, rank = q[keep], d[keep], s[keep], ln[keep], rank[keep]
    if top is not None:  # only the documents that survived the cut
        used, d = np.unique(d, return_inverse=True)
        docs = [docs[i] for i in used.tolist()]
        d = d.reshape(-1).astype(np.int64, copy=False)
    return DocRun(path, sha, fmt, qids, docs, q, d, s, rank, ln)


CHUNK_LINES = 1 << 20


def _has_comment_lines(data: bytes) -> bool:
    return data.startswith(b"#") or (b"#" in data and b"\n#" in data)  # memchr first


def _field_strings(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The byte fields ``buf[lo[i]:hi[i]]`` as a fixed-width ``S`` array, gathered a million
    lines at a time (no Python object per field)."""
    width = int((hi - lo).max())
    out = np.empty(lo.size, dtype=f"S{width}")
    cols = np.arange(width, dtype=np.int64)
    for a in range(0, lo.size, CHUNK_LINES):
        l_, h_ = lo[a:a + CHUNK_LINES], hi[a:a + CHUNK_LINES]
        idx = l_[:, None] + cols
        mat = buf[np.minimum(idx, buf.size - 1)]
        mat[idx >= h_[:, None]] = 0
        out[a:a + CHUNK_LINES] = np.ascontiguousarray(mat).view(f"S{width}").ravel()
    return out


def _bytes_codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``code_column`` for an ASCII ``S`` array; ids of up to 8 bytes go through their
    integer keys (``key_codes``), which sort several times faster than strings."""
    if values.dtype.itemsize > 8 or values.size == 0:
        names, codes = code_column(values)
        return [x.decode("ascii") for x in names], codes
    return key_codes(values.astype("S8").view(">u8").astype(np.uint64))


def _decimals(values: np.ndarray) -> np.ndarray | None:
    """Parse an ``S`` array of plain decimals (``[-+]digits[.digits]``, at most 15 digits)
    exactly as ``float()`` does: the integer of all digits divided by a power of ten is the
    correctly rounded result when both are exact doubles. Anything else returns None."""
    width = values.dtype.itemsize
    mat = np.frombuffer(values.tobytes(), dtype=np.uint8).reshape(values.size, width)
    digit = (mat >= 48) & (mat <= 57)
    dot = mat == 46
    sign = (mat == 45) | (mat == 43)
    pad = mat == 0
    if not (digit | dot | sign | pad).all():
        return None
    if (sign[:, 1:].any() or (dot.sum(axis=1) > 1).any() or (digit.sum(axis=1) == 0).any()
            or (digit.sum(axis=1) > 15).any()):
        return None
    mantissa = np.zeros(values.size, dtype=np.int64)
    frac = np.zeros(values.size, dtype=np.int64)
    seen_dot = np.zeros(values.size, dtype=bool)
    for j in range(width):
        col, is_digit = mat[:, j], digit[:, j]
        mantissa = np.where(is_digit, mantissa * 10 + (col.astype(np.int64) - 48), mantissa)
        frac += is_digit & seen_dot
        seen_dot |= dot[:, j]
    out = mantissa.astype(np.float64) / np.power(10.0, frac)
    return np.where(mat[:, 0] == 45, -out, out)


def _top_by_keys(name: str, sha: str, qids: list[str], groups: Groups, keys: np.ndarray,
                 s: np.ndarray, top: int) -> DocRun | None:
    """Entry i (on line i + 1) ranks the document of ``byte_keys`` ``keys[i]`` (which this
    changes): repeated documents are checked and each query's top entries chosen on the
    keys, and only the survivors get dense codes. None when a document repeats (the
    caller's parser names the lines) or when queries hold too few entries for the
    per-query selection."""
    keys ^= np.uint64(1 << 63)  # the same order as signed integers
    order = top_of_groups(groups, keys.view(np.int64), s, top, check_repeats=True)
    if order is None:
        return None
    kept = keys[order]
    kept ^= np.uint64(1 << 63)
    uniq, d = np.unique(kept, return_inverse=True)
    docs = [x.decode("ascii") for x in uniq.astype(">u8").view("S8").tolist()]
    q, s = groups.queries_of(order, keys.size), s[order]
    ln = order + 1
    start = np.ones(q.size, dtype=bool)
    start[1:] = q[1:] != q[:-1]
    first = np.flatnonzero(start)
    rank = np.arange(q.size) - np.repeat(first, np.diff(np.append(first, q.size)))
    return DocRun(name, sha, "trec", qids, docs, q, d.reshape(-1).astype(np.int64, copy=False), s,
                  rank, ln, uniq)


def _numpy_trec(data: bytes, name: str, sha: str, top: int | None) -> DocRun | None:
    """A clean TREC run parsed with numpy alone (no pyarrow): ASCII, no NUL, every line six
    fields separated by single spaces or tabs, no blank or comment lines. Anything else
    returns None (the line-by-line parser reads it and names the offending line)."""
    if not data or not data.isascii() or b"\x00" in data or _has_comment_lines(data):
        return None
    if any(ch in data for ch in ODD_WHITESPACE if ch != b"\t"):
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if ends.size == 0 or ends[-1] != buf.size - 1:
        ends = np.append(ends, buf.size)
    starts = np.concatenate([[0], ends[:-1] + 1])
    n = starts.size
    sep = np.flatnonzero((buf == 32) | (buf == 9))
    if sep.size != 5 * n:
        return None
    sep = sep.reshape(n, 5)
    if not ((sep[:, 0] > starts).all() and (sep[:, 4] < ends - 1).all()
            and (np.diff(sep, axis=1) > 1).all()):
        return None  # a blank line, an empty field, or a line with more or fewer fields
    s_raw = _field_strings(buf, sep[:, 3] + 1, sep[:, 4])
    s = _decimals(s_raw)
    if s is None:
        try:
            s = s_raw.astype(np.float64)
        except ValueError:
            return None
    if not np.isfinite(s).all():
        return None
    q_len = sep[:, 0] - starts
    if int(q_len.max()) <= 8:
        qnames, q = key_codes(byte_keys(buf, starts, q_len))
    else:
        q_names, q = code_column(_field_strings(buf, starts, sep[:, 0]))
        qnames = [x.decode("ascii") for x in q_names]
    d_lo, d_hi = sep[:, 1] + 1, sep[:, 2]
    if top is not None and int((d_hi - d_lo).max()) <= 8:
        run = _top_by_keys(name, sha, qnames, group_by_query(q), byte_keys(buf, d_lo, d_hi - d_lo),
                           s, top)
        if run is not None:
            return run
    dnames, d = _bytes_codes(_field_strings(buf, d_lo, d_hi))
    ln = np.arange(1, n + 1, dtype=np.int64)
    return _finish(name, sha, "trec", qnames, dnames, q, d, s, ln, sort_by_score=True, top=top)


SCAN_BYTES = 1 << 24


def _scan(path: str) -> tuple[str, str] | None:
    """Stream the file once: its sha256 and first lines, or None when the fast path cannot
    take it (not ASCII, NUL, comment lines, whitespace other than the delimiter in lines).
    Tab-separated files are checked field by field by the fast path instead."""
    digest = hashlib.sha256()
    head, tabs, prev = "", False, b"\n"
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(SCAN_BYTES):
                digest.update(chunk)
                if not head:
                    head = chunk[:65536].rsplit(b"\n", 1)[0].decode("ascii", "replace")
                    tabs = "\t" in head.split("\n", 1)[0]
                if not chunk.isascii() or b"\x00" in chunk or (
                        b"#" in chunk  # memchr first: "\n#" is slow to find
                        and (prev[-1:] + chunk).find(b"\n#") >= 0):
                    return None
                if not tabs and any(ch in chunk for ch in ODD_WHITESPACE):
                    return None
                prev = chunk
    except OSError:
        return None  # the plain path reports it with the file's name
    return (digest.hexdigest(), head) if head else None


def fast_available() -> bool:
    """pyarrow (extra ``fast``) is installed and ``RAGSPAN_NO_FAST`` is not set."""
    if os.environ.get("RAGSPAN_NO_FAST"):
        return False
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def _fast_read(name: str, fmt: str, top: int | None) -> DocRun | None:
    """pyarrow parses the file while a second thread streams it for its sha256 and the checks
    of ``_scan`` (hashlib and pyarrow both release the GIL); the run is kept only if both
    succeed. The file's bytes are never held whole."""
    try:
        head = read_head(name)
        if read_bytes(name, 3) == BOM_BYTES:
            return None  # the plain readers drop the mark
    except InputError:
        return None  # the other parsers report it, naming the file
    if not head.strip() or (fmt != "trec" and detect_run_format(head, name) != "trec"):
        return None
    with ThreadPoolExecutor(max_workers=1) as pool:
        scan = pool.submit(_scan, name)
        run = _arrow_trec(name, "", head.split("\n", 1)[0], top)
        checked = scan.result()
    if run is None or checked is None:
        return None
    run.sha256 = checked[0]
    return run


def _arrow_codes(column: Any) -> tuple[list[str], np.ndarray]:
    """``code_column`` for an arrow string column, through arrow's dictionary encoding (one
    hash table over all chunks: every chunk carries the same dictionary, checked)."""
    import pyarrow as pa

    enc = column.dictionary_encode()
    chunks = [c for c in enc.chunks if len(c)]
    dictionary = chunks[0].dictionary
    if not all(c.dictionary.equals(dictionary) for c in chunks[1:]):
        enc = column.combine_chunks().dictionary_encode()
        chunks, dictionary = [enc], enc.dictionary
    names, remap = sorted_codes(dictionary.to_pylist())
    indices = pa.chunked_array([c.indices for c in chunks]).to_numpy()
    return names, remap[indices]


def _arrow_groups(column: Any) -> tuple[list[str], Groups]:
    """``(distinct ids in code-point order, their grouping)`` of an arrow string column (a
    run's query ids): from the runs of equal adjacent values when no id has two runs, with
    no per-entry code at all; else through ``_arrow_codes``."""
    import pyarrow.compute as pc

    n = len(column)
    change = pc.not_equal(column.slice(1), column.slice(0, n - 1))
    starts = np.concatenate([[0], np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1])
    if starts.size * 16 <= n:  # long runs (a shuffled file has runs of one: no ids taken)
        ids = column.take(starts).to_pylist()
        if len(set(ids)) == len(ids):
            names, remap = sorted_codes(ids)
            return names, Groups(None, starts, remap)
    del starts, change
    names, q = _arrow_codes(column)
    return names, group_by_query(q)


def _arrow_trec(path: str, sha: str, first_line: str = "", top: int | None = None) -> DocRun | None:
    """The TREC run through pyarrow's CSV reader: six columns separated by single spaces, or
    by tabs when the first line has one (trec_eval's own test files); no comment lines,
    finite scores, no whitespace inside ids, no repeated documents. Anything else returns
    None and the plain parser reads the file, naming the offending line."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    names = ["q", "q0", "doc", "rank", "score", "tag"]
    delimiter = "\t" if "\t" in first_line else " "
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False),
            convert_options=pcsv.ConvertOptions(
                include_columns=["q", "doc", "score"],
                column_types={"q": pa.string(), "doc": pa.string(), "score": pa.float64()},
                strings_can_be_null=False, quoted_strings_can_be_null=False,
                null_values=[]),
        )
    except pa.ArrowException:  # any file pyarrow does not take goes to the other parsers
        return None
    if table.num_rows == 0:
        return None
    if delimiter == "\t":  # the plain parser splits on any whitespace: ids never hold any
        for col in ("q", "doc"):
            if pc.any(pc.match_substring_regex(table.column(col), r"[ \x0b\x0c\r\x1c-\x1f]|^$")).as_py():
                return None
    s = table.column("score").to_numpy()
    if not np.isfinite(s).all():
        return None
    if top is not None:  # short doc ids: integer keys straight from arrow's buffers
        with ThreadPoolExecutor(max_workers=1) as pool:  # numpy releases the GIL
            doc_keys = pool.submit(arrow_keys, table.column("doc"))
            qnames, groups = _arrow_groups(table.column("q"))
            d_keys = doc_keys.result()
        if d_keys is not None and selects_per_query(s.size, len(qnames), top):
            # the selection runs on the keys alone: free arrow's copy of the file first; it
            # answers None only for a repeated document, which the plain parser then names
            del table
            pa.default_memory_pool().release_unused()
            return _top_by_keys(path, sha, qnames, groups, d_keys, s, top)
        del d_keys, groups
    coded = [_arrow_codes(table.column(col)) for col in ("q", "doc")]
    del table
    ln = np.arange(1, s.size + 1, dtype=np.int64)
    try:
        return _finish(path, sha, "trec", coded[0][0], coded[1][0], coded[0][1], coded[1][1], s, ln,
                       sort_by_score=True, top=top)
    except InputError:
        return None  # repeated document: the plain parser names the exact lines


def _fast_jsonl(data: bytes, name: str, sha: str, fmt: str, top: int | None) -> DocRun | None:
    """A JSONL doc run through pyarrow's JSON reader (``io.arrowjson``), or None."""
    if fmt == "auto":
        try:
            head = data[:65536].decode("utf-8", "ignore")
            if not head.lstrip().startswith("{") or detect_run_format(head, name) != "jsonl":
                return None
        except InputError:
            return None  # the plain reader reports it
    from ragspan.io.arrowjson import read_arrow_jsonl

    return read_arrow_jsonl(data, name, sha, top)


def read_doc_run(path: str | os.PathLike[str], fmt: str = "auto", fast: bool | None = None,
                 top: int | None = None) -> DocRun:
    """Read a TREC or JSONL doc run (``fmt``: ``auto``, ``trec``, ``jsonl``), or the doc-level
    view of a span run (``span``: each document ranked at its first occurrence).

    ``fast`` (default: when pyarrow is installed) reads clean TREC runs with pyarrow's CSV
    reader and clean JSONL runs with its JSON reader; both paths give identical runs
    (tested), and any file the fast path does not accept is read by the plain parser.
    ``top`` keeps each query's first ``top`` entries (scoring at cutoffs up to ``top`` needs
    no more); repeated documents are still checked over the whole run."""
    name = str(path)
    if fmt in ("auto", "trec") and (fast_available() if fast is None else fast):
        run = _fast_read(name, fmt, top)
        if run is not None:
            return run
    data = read_bytes(path)
    sha = sha256_hex(data)
    if data.startswith(BOM_BYTES):
        data = decode_records(data[:3], name).encode("utf-8") + data[3:]  # logs the drop
    if fmt in ("auto", "jsonl") and (fast_available() if fast is None else fast):
        run = _fast_jsonl(data, name, sha, fmt, top)
        if run is not None:
            return run
    if fmt in ("auto", "trec"):
        head = data[:65536].split(b"\n", 1)[0].decode("utf-8", "replace")
        if fmt == "trec" or (head.strip() and not head.lstrip().startswith("{")
                             and len(head.split()) >= 6):
            run = _numpy_trec(data, name, sha, top)
            if run is not None:
                return run
    text = decode_records(data, name)
    del data  # keep one copy of a large run in memory
    if fmt == "auto":
        fmt = detect_run_format(text, name)
    parts: list[tuple] = []
    if fmt == "trec":
        for first_line, block in _blocks(text):
            _parse_trec_block(block, first_line, name, parts)
        if not parts:
            raise InputError("the run holds no rows", name)
        return _finish(name, sha, fmt, *_code_parts(parts), sort_by_score=True, top=top)
    seen: dict[str, int] = {}
    for line, obj in iter_json_lines(text, name):
        if "_header" in obj:
            header_record(obj, len(seen), name, line)
            continue
        qid = unique_row_id(obj, seen, name, line)
        docs, scores = _json_row(obj, fmt, qid, name, line)
        if top is not None:  # the listed order is the ranking: the rest is never scored
            docs, scores = docs[:top], scores[:top]
        parts.append(([qid] * len(docs), docs, scores, np.full(len(docs), line, np.int64)))
    if not seen:
        raise InputError("the run holds no rows", name)
    return _finish(name, sha, fmt, *_code_parts(parts), sort_by_score=False, top=top)


def _json_ids(ids: list[Any], name: str, line: int, what: str) -> list[str]:
    """``parse_id`` over a list: checked in bulk when every id is a non-empty string, else
    one by one (naming the first bad id's field)."""
    if set(map(type, ids)) <= {str} and "" not in ids:
        return ids
    return [parse_id(x, name, line, what) for x in ids]


def _json_row(obj: dict[str, Any], fmt: str, qid: str, name: str, line: int
              ) -> tuple[list[str], np.ndarray]:
    """One JSONL run row's ranked doc ids and scores (NaN when the row has none): every id
    checked, no document twice."""
    if fmt == "span":  # doc-level view of a span run: first occurrence of each document
        spans = obj.get("retrieved")
        if not isinstance(spans, list) or not all(isinstance(x, dict) and "doc_id" in x
                                                  for x in spans):
            raise InputError("'retrieved' must be a list of spans with 'doc_id'", name, line)
        ids = list(dict.fromkeys(parse_id(x["doc_id"], name, line, "doc_id") for x in spans))
    else:
        ids = obj.get("retrieved_ids")
    if not isinstance(ids, list):
        raise InputError("'retrieved_ids' must be a list of doc ids", name, line)
    docs = _json_ids(ids, name, line, "retrieved_ids[]")
    if len(set(docs)) != len(docs):
        seen: set[str] = set()
        repeated = next(d for d in docs if d in seen or seen.add(d))
        raise InputError(f"document '{repeated}' listed twice for query '{qid}' "
                         f"(first on line {line})", name, line)
    if "scores" not in obj:
        return docs, np.full(len(docs), np.nan)
    raw = obj["scores"]
    if (not isinstance(raw, list) or len(raw) != len(ids)
            or not set(map(type, raw)) <= {int, float}):  # bool is neither
        raise InputError("'scores' must be a list of numbers, one per retrieved id", name, line)
    try:
        scores = np.asarray(raw, dtype=float)
    except OverflowError:  # an integer beyond any double
        scores = np.array([np.inf])
    if not np.isfinite(scores).all():
        raise InputError("non-finite score in 'scores'", name, line)
    return docs, scores


def write_doc_run(run: DocRun, fmt: str, tag: str = "ragspan") -> str:
    """Serialise a doc run. TREC output gets strictly decreasing scores when the run has none
    (or has ties), so trec_eval reproduces the order exactly."""
    per_query = run.per_query()
    if fmt == "jsonl":
        rows, pos = [], 0
        for q, docs in per_query.items():
            row: dict[str, object] = {"id": q, "retrieved_ids": docs}
            s = run.score[pos: pos + len(docs)]
            pos += len(docs)
            if s.size and np.isfinite(s).all():
                row["scores"] = s.tolist()
            rows.append(json.dumps(row, ensure_ascii=False) + "\n")
        return "".join(rows)
    if fmt != "trec":
        raise ValueError(f"cannot write a run as {fmt!r}")
    lines = []
    scores = run.score
    pos = 0
    for q, docs in per_query.items():
        s = scores[pos: pos + len(docs)]
        pos += len(docs)
        keep = bool(np.isfinite(s).all()) and all(
            s[r] > s[r + 1] or (s[r] == s[r + 1] and docs[r] > docs[r + 1])
            for r in range(len(docs) - 1)
        )  # trec_eval (score desc, doc id desc) would give back exactly this order
        for r, d in enumerate(docs):
            value = repr(float(s[r])) if keep else str(len(docs) - r)
            lines.append(f"{q} Q0 {d} {r + 1} {value} {tag}\n")
    return "".join(lines)
