"""Span runs through pyarrow's JSON reader (the ``fast`` extra): the columns of a large run
without a Python object per span.

Only files whose reading is certain to equal the plain reader's (``runs.read_span_run``) are
taken: valid UTF-8 with no byte-order mark, no ``\\u`` escape (a lone surrogate must be
refused), no control character, tab or carriage return; one JSON object per line (every line
starts with ``{``, no blank line), an optional ``_header`` object on the first line only;
no item that carries its ``text`` (placing texts is the plain reader's), no ``stage_ms``, no
``steps`` and no ``retrieved_first_stage``; string ids, every row with a list ``retrieved`` of objects with a
string ``doc_id`` and integer offsets ``0 <= start < end <= 2^40``, ``score`` a number or
absent, ``chunk_id`` a string or absent, ``latency_ms`` a number or absent; no id twice,
none empty. pyarrow refuses a repeated key, a float or boolean where an integer belongs, a
number where a string belongs, so those too go to the plain reader. For anything else the
reader answers None and the plain reader reads the file, naming the offending line.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ragspan.io.rows import MAX_OFFSET
from ragspan.io.runs.arrow_jsonl import ByteFacts, read_lines_table

# what the plain reader treats in ways pyarrow may not (escapes), or does not read here
ESCAPE = b"\\u"
UNSURE = (ESCAPE, b'"text"', b'"retrieved_first_stage"', b'"stage_ms"', b'"steps"')
BOM = b"\xef\xbb\xbf"
FUSED_SOURCES = ("dense", "bm25")  # the retrievers a pipeline fuses, as ``sources`` names them


def _sure(data: bytes, skip: int, facts: ByteFacts) -> bool:
    """Valid UTF-8, no control byte other than the line feed (``facts`` of the body after
    the ``skip`` bytes of the header line; that line is checked here), and no byte sequence
    of ``UNSURE`` (escapes looked for only where there is a backslash)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    header = data[:skip].removesuffix(b"\n")
    if facts.controls or any(b < 0x20 for b in header):
        return False
    escapes = bool(facts.backslashes) or b"\\" in header
    return not any(u in data for u in UNSURE if escapes or u != ESCAPE)


def _header(data: bytes) -> tuple[int, dict[str, Any] | None] | None:
    """(bytes the first line takes when it is the ``_header`` record, that record's object);
    (0, None) when the first line is a row; None when it cannot be told."""
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]
    if b'"_header"' not in first:
        return 0, None
    try:
        obj = json.loads(first)
    except ValueError:
        return None
    if not isinstance(obj, dict) or set(obj) != {"_header"}:
        return None
    return (len(data) if end < 0 else end + 1), obj


def _source_ranks(sources: Any) -> dict[str, np.ndarray] | None | bool:
    """Each fused retriever's ranks (0 where an item's ``sources`` lacks it), None when no
    item names one, False when a rank is below 1 (the plain reader's error)."""
    out, given = {}, False
    for s in FUSED_SOURCES:
        col = sources.field(s)
        given |= col.null_count < len(col)
        arr = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        if sources.null_count:
            valid &= sources.is_valid().to_numpy(zero_copy_only=False)
            arr = np.where(valid, arr, 0)
        if (arr[valid] < 1).any():
            return False
        out[s] = arr
    return out if given else None


def read_arrow_spans(data: bytes) -> dict[str, Any] | None:
    """The checked columns of the span run in ``data`` (see the module docstring): ``ids``,
    ``lines`` (1-based file lines of the rows), ``offsets``, ``doc_id``, ``start``, ``end``,
    ``score`` (NaN where absent), ``chunk_id``, ``latency_ms``, the ``header`` record (or
    None), and the documents coded in order of first occurrence (``doc_names``,
    ``doc_code``); None where the plain reader must read the file."""
    import pyarrow as pa

    if not data or data.startswith(BOM):
        return None
    head = _header(data)
    if head is None:
        return None
    skip, header = head
    sources = pa.struct([(s, pa.int64()) for s in FUSED_SOURCES])
    item = pa.struct([("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("score", pa.float64()), ("chunk_id", pa.string()),
                      ("sources", sources)])
    schema = pa.schema([("id", pa.string()), ("retrieved", pa.list_(item)),
                        ("latency_ms", pa.float64())])
    table = read_lines_table(data[skip:], schema, lambda facts: _sure(data, skip, facts))
    return None if table is None else _columns(table, header)


def _columns(table: Any, header: dict[str, Any] | None) -> dict[str, Any] | None:
    """``read_arrow_spans``'s columns of the parsed ``table``, each checked as the plain
    reader checks it; None at the first value it would refuse."""
    import pyarrow.compute as pc

    ids, lists, latency = (table.column(c).chunk(0) for c in ("id", "retrieved", "latency_ms"))
    items = lists.flatten()
    doc, start, end = (items.field(f) for f in ("doc_id", "start", "end"))
    if ids.null_count or lists.null_count or items.null_count or doc.null_count \
            or start.null_count or end.null_count:
        return None  # a row without 'id' or 'retrieved', an item without doc_id or offsets
    qids = ids.to_pylist()
    if len(set(qids)) != len(qids) or "" in qids:
        return None
    s = start.to_numpy(zero_copy_only=False)
    e = end.to_numpy(zero_copy_only=False)
    if s.size and (s.min() < 0 or (s >= e).any() or e.max() > MAX_OFFSET):
        return None
    scores = items.field("score")
    score = scores.fill_null(np.nan).to_numpy(zero_copy_only=False).astype(float)
    if not np.isfinite(score[scores.is_valid().to_numpy(zero_copy_only=False)]).all():
        return None
    lat = latency.fill_null(np.nan).to_numpy(zero_copy_only=False).astype(float)
    if not np.isfinite(lat[latency.is_valid().to_numpy(zero_copy_only=False)]).all():
        return None
    ranks = _source_ranks(items.field("sources"))
    if ranks is False:
        return None
    sizes = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    first_line = 2 if header is not None else 1
    coded = doc.dictionary_encode()  # codes in order of first occurrence, as the plain reader's
    return {
        "ids": qids, "lines": list(range(first_line, first_line + len(qids))),
        "offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        "doc_id": doc.to_pylist(), "start": s.astype(np.int64), "end": e.astype(np.int64),
        "score": score, "chunk_id": items.field("chunk_id").to_pylist(), "latency_ms": lat,
        "header": header, "doc_names": coded.dictionary.to_pylist(),
        "doc_code": coded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        "source_rank": ranks,
    }
