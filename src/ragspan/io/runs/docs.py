"""Doc-level runs: TREC runs (``qid Q0 docid rank score tag``) and JSONL (``retrieved_ids``).

A run is held column-wise and already in trec_eval order: per query, score descending, ties
broken by doc id descending (trec_eval sorts this way and ignores the rank column). A JSONL
run's order is the listed order. A document listed twice for one query is an error.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.io.files import (
    decode_records,
    iter_json_lines,
    read_bytes,
    sha256_hex,
    split_rows,
)
from ragspan.io.rows import Skipped, header_record, parse_id, row_id
from ragspan.io.runs import fast_docs
from ragspan.io.runs.columns import (
    DocRun,
    RawRun,
    assemble,
    code_column,
)
from ragspan.io.runs.detect import BOM_BYTES, detect_run_format

__all__ = ["DocRun", "detect_run_format", "read_doc_run", "write_doc_run"]


BLOCK_BYTES = 1 << 23


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


def _strings(parts: list[tuple[Any, ...]], i: int) -> np.ndarray:
    arrays = [np.array(p[i]) for p in parts if len(p[i])]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype="<U1")


def _raw_of_parts(parts: list[tuple[Any, ...]], name: str, sha: str, fmt: str, ranked_by: str) -> RawRun:
    """The RawRun of parsed pieces ``(qid strings, doc strings, scores, line numbers)``."""
    qids, q = code_column(_strings(parts, 0))
    docs, d = code_column(_strings(parts, 1))
    return RawRun(name, sha, fmt, qids, np.concatenate([p[2] for p in parts]), ranked_by,
                  query=q, docs=docs, doc=d, line=np.concatenate([p[3] for p in parts]))


def read_doc_run(path: str | os.PathLike[str], fmt: str = "auto", fast: bool | None = None,
                 top: int | None = None, skipped: Skipped | None = None) -> DocRun:
    """Read a TREC or JSONL doc run (``fmt``: ``auto``, ``trec``, ``jsonl``), or the doc-level
    view of a span run (``span``: each document ranked at its first occurrence).

    ``fast`` (default: when pyarrow is installed) reads clean TREC runs with pyarrow's CSV
    reader and clean JSONL runs with its JSON reader; both paths give identical runs
    (tested), and any file the fast path does not accept is read by the plain parser.
    ``top`` keeps each query's first ``top`` entries (scoring at cutoffs up to ``top`` needs
    no more); repeated documents are still checked over the whole run. ``skipped``
    (``--on-duplicate first``): JSON-lines rows without id or repeating one are counted
    there and skipped (``io.rows.row_id``), read by the plain parser; a TREC run's lines are
    not rows of a query, so nothing is skipped there."""
    name = str(path)
    if name == "-" or skipped is not None:
        fast = False  # standard input: the plain parser reads the bytes already read
    if fmt in ("auto", "trec") and (fast_docs.fast_available() if fast is None else fast):
        run = fast_docs.fast_read(name, fmt, top)
        if run is not None:
            return run
    data = read_bytes(path)
    sha = sha256_hex(data)
    if data.startswith(BOM_BYTES):
        data = decode_records(data[:3], name).encode("utf-8") + data[3:]  # logs the drop
    if fmt in ("auto", "jsonl") and (fast_docs.fast_available() if fast is None else fast):
        run = fast_docs.fast_jsonl(data, name, sha, fmt, top)
        if run is not None:
            return run
    if fmt in ("auto", "trec"):
        head = data[:65536].split(b"\n", 1)[0].decode("utf-8", "replace")
        if fmt == "trec" or (head.strip() and not head.lstrip().startswith("{")
                             and len(head.split()) >= 6):
            raw = fast_docs.numpy_trec(data, name, sha)
            if raw is not None:
                return assemble(raw, top)
    text = decode_records(data, name)
    del data  # keep one copy of a large run in memory
    if fmt == "auto":
        fmt = detect_run_format(text, name)
    if fmt == "trec":
        parts: list[tuple[Any, ...]] = []
        for first_line, block in _blocks(text):
            _parse_trec_block(block, first_line, name, parts)
        if not parts:
            raise InputError("the run holds no rows", name)
        return assemble(_raw_of_parts(parts, name, sha, fmt, "score"), top)
    return _read_json_lines(text, name, sha, fmt, top, skipped)


def _read_json_lines(text: str, name: str, sha: str, fmt: str, top: int | None,
                     skipped: Skipped | None) -> DocRun:
    """The plain parser's JSON-lines path of ``read_doc_run`` (``fmt``: ``jsonl`` or
    ``span``)."""
    parts: list[tuple[Any, ...]] = []
    seen: dict[str, int] = {}
    for line, obj in iter_json_lines(text, name):
        if "_header" in obj:
            header_record(obj, len(seen), name, line)
            continue
        qid = row_id(obj, seen, name, line, skipped)
        if qid is None:
            continue
        docs, scores = _json_row(obj, fmt, qid, name, line, skipped)
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


def _json_row(obj: dict[str, Any], fmt: str, qid: str, name: str, line: int,
              skipped: Skipped | None = None) -> tuple[list[str], np.ndarray]:
    """One JSONL run row's ranked doc ids and scores (NaN when the row has none): every id
    checked, no document twice (with ``skipped``, ``--on-duplicate first``: each document's
    first place kept, the later ones dropped and counted)."""
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
    keep: list[int] | None = None
    if len(set(docs)) != len(docs):
        if skipped is None:
            repeated = _first_repeat(docs)
            raise InputError(f"document '{repeated}' listed twice for query '{qid}' "
                             f"(first on line {line}; --on-duplicate first keeps its first "
                             "place)", name, line)
        first = {d: i for i, d in reversed(list(enumerate(docs)))}
        keep = sorted(first.values())
        skipped.skip_docs(line, len(docs) - len(keep))
        docs = [docs[i] for i in keep]
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
    return docs, (scores if keep is None else scores[keep])


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
