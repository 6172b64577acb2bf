"""JSONL doc runs (``retrieved_ids``, optional ``scores``) through pyarrow's JSON reader.

Only files whose reading is certain to equal the plain reader's are taken: one JSON object
per line (every line starts with ``{``, no blank line), an optional ``_header`` object on the
first line only, no ``null`` anywhere, string ids and doc ids, finite numeric scores one per
id, no query id twice, no document twice in a row, no empty id or row. For anything else
the reader answers None and the plain reader reads the file, naming the offending line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.io.runs.columns import RawRun, arrow_keys, sorted_codes
from ragspan.io.runs.ranking import PAD_KEY, repeats_in_rows


def _header_length(data: bytes) -> int | None:
    """Bytes taken by a ``_header`` first line (0 when the first line is a row); None when
    the first line is not a JSON object."""
    end = data.find(b"\n")
    first, newline = (data, b"") if end < 0 else (data[:end], b"\n")
    if b'"_header"' not in first:
        return 0
    try:
        obj = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict):
        return None
    if "_header" not in obj:
        return 0
    return len(first) + len(newline) if isinstance(obj["_header"], dict) else None


def _repeats(codes: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether a row (``codes[offsets[i]:offsets[i + 1]]``) holds a code twice: rows sorted
    as one matrix (short rows padded with a key no code takes), or as (row, code) pairs
    when rows are very unequal."""
    sizes = np.diff(offsets)
    rows, width = sizes.size, int(sizes.max())
    if width * rows == codes.size:
        return repeats_in_rows(codes.reshape(rows, width), None)
    row = np.repeat(np.arange(rows, dtype=np.int64), sizes)
    if width * rows > 2 * codes.size:  # very unequal rows: sort (row, code) pairs
        order = np.lexsort((codes, row))
        r, c = row[order], codes[order]
        return bool(((r[1:] == r[:-1]) & (c[1:] == c[:-1])).any())
    mat = np.full((rows, width), PAD_KEY, dtype=np.int64)
    mat[row, np.arange(codes.size) - np.repeat(offsets[:-1], sizes)] = codes
    return repeats_in_rows(mat, sizes)


def _parse_lines(body: bytes, schema: Any) -> Any:
    """pyarrow's table of ``body`` under ``schema`` (chunks combined), or None."""
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        table = pj.read_json(pa.BufferReader(body), parse_options=pj.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore"))
    except pa.ArrowException:
        return None
    return table.combine_chunks()


BLOCK = 1 << 22  # bytes per numpy pass of ``byte_facts``: temporaries stay in the cache


@dataclass(frozen=True)
class ByteFacts:
    """What one pass over a JSON-lines body finds: its ``lines`` (a last line without a
    line feed counts), whether every line starts with ``{`` (``objects``), the control
    bytes other than the line feed (``controls``: tab and carriage return included) and
    the backslashes (``backslashes``: without one, no string holds an escape)."""

    lines: int
    objects: bool
    controls: int
    backslashes: int


def byte_facts(body: bytes) -> ByteFacts:
    """``ByteFacts`` of ``body``, counted with numpy a block at a time (no temporary the
    size of the file; numpy releases the GIL while it counts)."""
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = controls = backslashes = 0
    objects = buf.size > 0 and buf[0] == 0x7B
    for at in range(0, buf.size, BLOCK):
        block = buf[at:at + BLOCK]
        ends = np.flatnonzero(block == 0x0A) + at
        newlines += ends.size
        controls += int(np.count_nonzero(block < 0x20))
        backslashes += int(np.count_nonzero(block == 0x5C))
        after = ends[ends + 1 < buf.size] + 1
        objects = objects and bool((buf[after] == 0x7B).all())
    ends_with_newline = buf.size > 0 and buf[-1] == 0x0A
    return ByteFacts(newlines + (0 if ends_with_newline or not buf.size else 1), bool(objects),
                     controls - newlines, backslashes)


def read_lines_table(body: bytes, schema: Any,
                     also: Callable[[ByteFacts], bool] | None = None) -> Any:
    """pyarrow's reading of ``body`` (JSON lines after any header) under ``schema``, chunks
    combined; None unless every line is one object starting with ``{`` (no blank, indented
    or continued line, no second header), pyarrow reads each as one row, and ``also`` (a
    further check of the caller's, given the body's ``byte_facts``) answers True. pyarrow
    parses on a worker thread (its own threads, without the GIL) while this thread checks
    the lines and runs ``also``."""
    if not body.startswith(b"{"):
        return None
    with ThreadPoolExecutor(max_workers=1) as pool:
        parsing = pool.submit(_parse_lines, body, schema)
        facts = byte_facts(body)
        ok = (facts.objects and b'"_header"' not in body
              and (also is None or also(facts)))
        table = parsing.result()
    if not ok or table is None:
        return None
    return table if table.num_rows == facts.lines else None  # else: two on a line


def read_arrow_jsonl(data: bytes, name: str, sha: str, top: int | None) -> RawRun | None:
    """The columns of the JSONL doc run in ``data``, as the plain reader reads it (see the
    module docstring), repeats already refused and each row cut to its first ``top`` ids;
    or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    skip = _header_length(data)
    if skip is None:
        return None
    schema = pa.schema([("id", pa.string()), ("retrieved_ids", pa.list_(pa.string())),
                        ("scores", pa.list_(pa.float64()))])
    table = read_lines_table(data[skip:] if skip else data, schema)
    if table is None:
        return None
    ids, lists, scores = (table.column(c).chunk(0) for c in ("id", "retrieved_ids", "scores"))
    values = lists.flatten()
    if ids.null_count or lists.null_count or values.null_count:
        return None  # a row without 'id' or 'retrieved_ids', or a null id
    if scores.null_count and b"null" in data:
        return None  # "scores": null is an error, a missing "scores" is not: tell them apart
    qids = ids.to_pylist()
    sizes = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    if (len(set(qids)) != len(qids) or "" in qids or not sizes.all()
            or pc.any(pc.equal(values, "")).as_py()):
        return None
    if scores.null_count < len(scores):  # some rows carry scores: one finite number per id
        given = scores.is_valid().to_numpy(zero_copy_only=False)
        lengths = pc.list_value_length(scores).fill_null(0).to_numpy(zero_copy_only=False)
        flat = scores.flatten().to_numpy(zero_copy_only=False)
        if (lengths[given] != sizes[given]).any() or not np.isfinite(flat).all():
            return None
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    # ids of up to 8 bytes: integer keys (equal ids, equal keys; two ids whose keys meet
    # only by NUL padding look repeated and go to the plain reader)
    keys = arrow_keys(pa.chunked_array([values])) if values.type == pa.string() else None
    if keys is not None:
        codes = (keys ^ np.uint64(1 << 63)).view(np.int64)
    else:
        codes = values.dictionary_encode().indices.to_numpy(zero_copy_only=False)
        codes = codes.astype(np.int64)
    if _repeats(codes, offsets):
        return None
    del codes, keys
    return _build(name, sha, qids, lists, scores, sizes, 1 if skip else 0, top)


def _build(name: str, sha: str, qids: list[str], lists: Any, scores: Any, sizes: np.ndarray,
           header_lines: int, top: int | None) -> RawRun:
    """The RawRun of checked rows (their listed order is the ranking), cut to the first
    ``top`` ids of each row."""
    import pyarrow.compute as pc

    names, row_code = sorted_codes(qids)
    if top is not None:
        lists = pc.list_slice(lists, 0, top)
        scores = pc.list_slice(scores, 0, top)
        sizes = np.minimum(sizes, top)
    n = int(sizes.sum())
    row_of = np.repeat(np.arange(len(qids), dtype=np.int64), sizes)
    flat_scores = np.full(n, np.nan)
    given = np.repeat(scores.is_valid().to_numpy(zero_copy_only=False), sizes)
    flat_scores[given] = scores.flatten().to_numpy(zero_copy_only=False)
    enc = lists.flatten().dictionary_encode()
    docs, remap = sorted_codes(enc.dictionary.to_pylist())
    doc = remap[enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    return RawRun(name, sha, "jsonl", names, flat_scores, "listed", query=row_code[row_of],
                  docs=docs, doc=doc, line=row_of + 1 + header_lines, repeats_checked=True)
