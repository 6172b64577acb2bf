"""Doc-level runs: TREC runs (``qid Q0 docid rank score tag``) and JSONL (``retrieved_ids``).

A run is held column-wise and already in trec_eval order: per query, score descending, ties
broken by doc id descending (trec_eval sorts this way and ignores the rank column). A JSONL
run's order is the listed order. A document listed twice for one query is an error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
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
from ragspan.io.ranking import Groups, group_by_query
from ragspan.io.runcolumns import (
    DocRun,
    RawRun,
    arrow_keys,
    assemble,
    byte_keys,
    code_column,
    key_codes,
    sorted_codes,
)

__all__ = ["DocRun", "detect_run_format", "read_doc_run", "write_doc_run"]

RUN_FORMATS = ("trec", "jsonl", "span")
BOM_BYTES = b"\xef\xbb\xbf"
BLOCK_BYTES = 1 << 23
# whitespace str.split() splits on besides spaces and newlines: a clean file has none
ODD_WHITESPACE = (b"\t", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")


def detect_run_format(text: str, path: str) -> str:
    """``span``, ``jsonl`` or ``trec``, from the first row (after a ``_header``); a row that
    is not JSON is an InputError naming its own line."""
    for number, raw in enumerate(text.split("\n", 20)[:20], start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            obj = loads_json(line, path, number)
            if isinstance(obj, dict) and "retrieved" in obj:
                return "span"
            if isinstance(obj, dict) and "_header" in obj:
                continue
            if isinstance(obj, dict) and "retrieved_ids" in obj:
                return "jsonl"
            raise InputError("a JSONL run row needs 'retrieved' or 'retrieved_ids'", path,
                             number)
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
                      out: list[tuple[Any, ...]]) -> None:
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


def _raw_of_parts(parts: list[tuple], name: str, sha: str, fmt: str, ranked_by: str) -> RawRun:
    """The RawRun of parsed pieces ``(qid strings, doc strings, scores, line numbers)``."""
    qids, q = code_column(_strings(parts, 0))
    docs, d = code_column(_strings(parts, 1))
    return RawRun(name, sha, fmt, qids, np.concatenate([p[2] for p in parts]), ranked_by,
                  query=q, docs=docs, doc=d, line=np.concatenate([p[3] for p in parts]))


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


def _numpy_trec(data: bytes, name: str, sha: str, keys: bool = True) -> RawRun | None:
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


def _fast_read(name: str, fmt: str, top: int | None, keys: bool = True) -> DocRun | None:
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
        raw = _arrow_trec(name, "", head.split("\n", 1)[0], keys=keys and top is not None)
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


def _arrow_trec(path: str, sha: str, first_line: str = "", keys: bool = False) -> RawRun | None:
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

    raw = read_arrow_jsonl(data, name, sha, top)
    return None if raw is None else assemble(raw, top)


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
    if name == "-":
        fast = False  # standard input: the plain parser reads the bytes already read
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
            raw = _numpy_trec(data, name, sha)
            if raw is not None:
                return assemble(raw, top)
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
        return assemble(_raw_of_parts(parts, name, sha, fmt, "score"), top)
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
    return assemble(_raw_of_parts(parts, name, sha, fmt, "listed"), top)


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
        ids: Any = list(dict.fromkeys(parse_id(x["doc_id"], name, line, "doc_id")
                                      for x in spans))
    else:
        ids = obj.get("retrieved_ids")  # checked to be a list below
    if not isinstance(ids, list):
        raise InputError("'retrieved_ids' must be a list of doc ids", name, line)
    docs = _json_ids(ids, name, line, "retrieved_ids[]")
    if len(set(docs)) != len(docs):
        repeated = _first_repeat(docs)
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
    """Serialise a doc run (``write_doc_rows``)."""
    rows, pos = [], 0
    for q, docs in run.per_query().items():
        rows.append((q, docs, run.score[pos: pos + len(docs)]))
        pos += len(docs)
    return write_doc_rows(rows, fmt, tag)


def write_doc_rows(rows: list[tuple[str, list[str], np.ndarray]], fmt: str,
                   tag: str = "ragspan") -> str:
    """Serialise ranked ``(qid, doc ids, scores)`` rows (a score NaN where there is none) as
    JSONL (``scores`` only when every one is finite) or TREC; TREC output gets strictly
    decreasing scores when the row has none (or has ties), so trec_eval reproduces the order
    exactly."""
    if fmt == "jsonl":
        out = []
        for q, docs, s in rows:
            row: dict[str, object] = {"id": q, "retrieved_ids": docs}
            if s.size and np.isfinite(s).all():
                row["scores"] = s.tolist()
            out.append(json.dumps(row, ensure_ascii=False) + "\n")
        return "".join(out)
    if fmt != "trec":
        raise ValueError(f"cannot write a run as {fmt!r}")
    lines = []
    for q, docs, s in rows:
        keep = bool(np.isfinite(s).all()) and all(
            s[r] > s[r + 1] or (s[r] == s[r + 1] and docs[r] > docs[r + 1])
            for r in range(len(docs) - 1)
        )  # trec_eval (score desc, doc id desc) would give back exactly this order
        for r, d in enumerate(docs):
            value = repr(float(s[r])) if keep else str(len(docs) - r)
            lines.append(f"{q} Q0 {d} {r + 1} {value} {tag}\n")
    return "".join(lines)


def _first_repeat(items: list[str]) -> str:
    """The first item of ``items`` that an earlier one equals (one must)."""
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    raise ValueError("no item repeats")
