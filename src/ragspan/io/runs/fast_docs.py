"""Large doc runs read column-wise: TREC parsed with numpy, and the ``fast`` extra's pyarrow
paths (CSV and JSON), each used only where its result is certain to equal the plain reader's
(``runs.docs.read_doc_run`` decides; None here means: use the plain reader)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.io.files import (
    read_bytes,
    read_head,
)
from ragspan.io.runs.arrow_jsonl import read_arrow_jsonl
from ragspan.io.runs.columns import (
    DocRun,
    RawRun,
    arrow_keys,
    assemble,
    byte_keys,
    code_column,
    key_codes,
    sorted_codes,
)
from ragspan.io.runs.detect import BOM_BYTES, ODD_WHITESPACE, detect_run_format
from ragspan.io.runs.ranking import Groups, group_by_query

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


def numpy_trec(data: bytes, name: str, sha: str, keys: bool = True) -> RawRun | None:
    """A clean TREC run parsed with numpy alone (no pyarrow): ASCII, no NUL, every line six
    fields separated by single spaces or tabs, no blank or comment lines. Anything else
    returns None (the line-by-line parser reads it and names the offending line). ``keys``:
    doc ids of at most 8 bytes stay byte keys (``assemble`` selects on them)."""
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
    cut = np.flatnonzero((buf == 32) | (buf == 9))
    if cut.size != 5 * n:
        return None
    cut = cut.reshape(n, 5)  # type: ignore[assignment]  # one row of 5 cutarators per line
    if not ((cut[:, 0] > starts).all() and (cut[:, 4] < ends - 1).all()
            and (np.diff(cut, axis=1) > 1).all()):
        return None  # a blank line, an empty field, or a line with more or fewer fields
    s_raw = _field_strings(buf, cut[:, 3] + 1, cut[:, 4])
    s = _decimals(s_raw)
    if s is None:
        try:
            s = s_raw.astype(np.float64)
        except ValueError:
            return None
    if not np.isfinite(s).all():
        return None
    q_len = cut[:, 0] - starts
    if int(q_len.max()) <= 8:
        qnames, q = key_codes(byte_keys(buf, starts, q_len))
    else:
        q_names, q = code_column(_field_strings(buf, starts, cut[:, 0]))
        qnames = [x.decode("ascii") for x in q_names]
    d_lo, d_hi = cut[:, 1] + 1, cut[:, 2]
    if keys and int((d_hi - d_lo).max()) <= 8:
        return RawRun(name, sha, "trec", qnames, s, "score", query=q,
                      doc_keys=byte_keys(buf, d_lo, d_hi - d_lo))
    dnames, d = _bytes_codes(_field_strings(buf, d_lo, d_hi))
    return RawRun(name, sha, "trec", qnames, s, "score", query=q, docs=dnames, doc=d)


SCAN_BYTES = 1 << 24


def _scan(path: str) -> tuple[str, str] | None:
    """Stream the file once: its sha256 and first lines, or None when the fast path cannot
    take it (not ASCII, NUL, comment lines, whitespace other than the delimiter in lines).
    Tab-separated files are checked field by field by the fast path instead."""
    digest = hashlib.sha256()
    head, tabs, prev = "", False, b"\n"
    block = bytearray(SCAN_BYTES)  # one buffer read into again and again: no fresh pages
    try:
        with open(path, "rb", buffering=0) as fh:
            while n := fh.readinto(block):
                chunk = block if n == SCAN_BYTES else block[:n]
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
                prev = bytes(chunk[-1:])
    except OSError:
        return None  # the plain path reports it with the file's name
    return (digest.hexdigest(), head) if head else None


def fast_available() -> bool:
    """pyarrow (extra ``fast``) is installed and ``RAGSPAN_NO_FAST`` is not set."""
    if os.environ.get("RAGSPAN_NO_FAST"):
        return False
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def fast_read(name: str, fmt: str, top: int | None, keys: bool = True) -> DocRun | None:
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
        raw = arrow_trec(name, "", head.split("\n", 1)[0], keys=keys and top is not None)
        checked = scan.result()
    if raw is None or checked is None:
        return None
    try:
        return assemble(dataclasses.replace(raw, sha256=checked[0]), top)
    except InputError:
        return None  # a repeated document: the plain parser names the exact lines


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


def _take_strings(column: Any, positions: np.ndarray) -> list[str]:
    """``column.take(positions).to_pylist()`` for ascending ``positions``, taken chunk by
    chunk (a take across a chunked column first combines its chunks: a copy of every
    string)."""
    import pyarrow as pa

    bounds = np.cumsum([0, *(len(c) for c in column.chunks)])
    chunk_of = np.searchsorted(bounds, positions, "right") - 1
    out: list[str] = []
    for c in np.unique(chunk_of).tolist():
        local = positions[chunk_of == c] - bounds[c]
        out.extend(column.chunk(c).take(pa.array(local)).to_pylist())
    return out


def _arrow_groups(column: Any) -> tuple[list[str], Groups]:
    """``(distinct ids in code-point order, their grouping)`` of an arrow string column (a
    run's query ids): from the runs of equal adjacent values when no id has two runs, with
    no per-entry code at all; else through ``_arrow_codes``."""
    import pyarrow.compute as pc

    n = len(column)
    change = pc.not_equal(column.slice(1), column.slice(0, n - 1))
    starts = np.concatenate([[0], np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1])
    if starts.size * 16 <= n:  # long runs (a shuffled file has runs of one: no ids taken)
        ids = _take_strings(column, starts)
        if len(set(ids)) == len(ids):
            names, remap = sorted_codes(ids)
            return names, Groups(None, starts, remap)
    del starts, change
    names, q = _arrow_codes(column)
    return names, group_by_query(q)


def arrow_trec(path: str, sha: str, first_line: str = "", keys: bool = False) -> RawRun | None:
    """The TREC run through pyarrow's CSV reader: six columns separated by single spaces, or
    by tabs when the first line has one (trec_eval's own test files); no comment lines,
    finite scores, no whitespace inside ids. Anything else returns None and the plain parser
    reads the file, naming the offending line. ``keys``: doc ids of at most 8 bytes become
    byte keys straight from arrow's buffers, and query ids are grouped from their runs.
    Arrow's copy of the file is freed before this returns."""
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
    if keys:
        with ThreadPoolExecutor(max_workers=1) as pool:  # numpy releases the GIL
            doc_keys = pool.submit(arrow_keys, table.column("doc"))
            qnames, groups = _arrow_groups(table.column("q"))
            d_keys = doc_keys.result()
        if d_keys is not None:
            del table
            pa.default_memory_pool().release_unused()
            return RawRun(path, sha, "trec", qnames, s, "score", query=groups.entries,
                          groups=groups, doc_keys=d_keys)
        del d_keys, groups
    (qnames, q), (dnames, d) = (_arrow_codes(table.column(col)) for col in ("q", "doc"))
    del table
    return RawRun(path, sha, "trec", qnames, s, "score", query=q, docs=dnames, doc=d)


def fast_jsonl(data: bytes, name: str, sha: str, fmt: str, top: int | None) -> DocRun | None:
    """A JSONL doc run through pyarrow's JSON reader (``io.runs.arrow_jsonl``), or None."""
    if fmt == "auto":
        try:
            head = data[:65536].decode("utf-8", "ignore")
            if not head.lstrip().startswith("{") or detect_run_format(head, name) != "jsonl":
                return None
        except InputError:
            return None  # the plain reader reports it

    raw = read_arrow_jsonl(data, name, sha, top)
    return None if raw is None else assemble(raw, top)
