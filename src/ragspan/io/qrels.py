"""Doc-level judgments: TREC qrels, BEIR qrels TSV, JSONL (``relevant_ids`` or ``relevance``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ragspan.base.errors import InputError
from ragspan.io.evalset import parse_relevance
from ragspan.io.files import decode_records, iter_json_lines, read_bytes, sha256_hex, split_rows
from ragspan.io.rows import HEADER_KEY, INT64_MAX, Skipped, header_record, out_of_range, row_id

QRELS_FORMATS = ("trec", "beir", "jsonl")


@dataclass(frozen=True)
class Qrels:
    """``judgments[qid][doc_id] = grade``, in file order. A query may have an empty dict
    (listed, but with no judgments): such queries are excluded from averages and counted."""

    path: str
    sha256: str
    format: str
    judgments: dict[str, dict[str, int]]


def detect_qrels_format(text: str, path: str) -> str:
    for raw in text.split("\n", 50)[:50]:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            return "jsonl"
        if line.lower().startswith("query-id") or line.count("\t") == 2 and len(line.split()) == 3:
            return "beir"
        if len(line.split()) == 4:
            return "trec"
        raise InputError("cannot tell the qrels format from its first line "
                         "(expected TREC 'qid iter docid grade', BEIR TSV or JSONL)", path)
    raise InputError("the qrels file is empty", path)


def _grade(token: str, path: str, line: int) -> int:
    try:
        grade = int(token)
    except ValueError:
        raise InputError(f"grade {token!r} is not an integer", path, line) from None
    if out_of_range(grade):
        raise InputError(f"grade {token} is out of range (more than 2^40)", path, line)
    return grade


def _add(j: dict[str, dict[str, int]], qid: str, doc: str, grade: int, path: str, line: int,
         seen: dict[tuple[str, str], int]) -> None:
    key = (qid, doc)
    if key in seen:
        raise InputError(f"document '{doc}' judged twice for query '{qid}' "
                         f"(first on line {seen[key]})", path, line)
    seen[key] = line
    j.setdefault(qid, {})[doc] = grade


def _read_columns(text: str, fmt: str) -> dict[str, dict[str, int]] | None:
    """Judgments of a clean TREC or BEIR file in one split (every line exactly its columns,
    no comments, each (query, document) pair once); None sends the file to the
    line-by-line reader, which names the offending line."""
    if "#" in text:
        return None
    width = 4 if fmt == "trec" else 3
    if fmt == "beir":
        if text.lower().startswith("query-id"):
            text = text.partition("\n")[2]
        lines = text.count("\n") + (not text.endswith("\n"))
        if (not text.isascii() or any(ch in text for ch in " \x0b\x0c\x1c\x1d\x1e\x1f")
                or text.count("\r") != text.count("\r\n") or text.count("\t") != 2 * lines):
            return None  # only then is every field separated by exactly one tab
    tokens = split_rows(text, width)
    if tokens is None:
        return None
    try:
        grades = list(map(int, tokens[width - 1::width]))
    except ValueError:
        return None
    if grades and (max(grades) > INT64_MAX or min(grades) < -INT64_MAX):
        return None  # the line reader names it
    judgments: dict[str, dict[str, int]] = {}
    for qid, doc, grade in zip(tokens[0::width], tokens[width - 2::width], grades):
        judgments.setdefault(qid, {})[doc] = grade
    if sum(map(len, judgments.values())) != len(grades):
        return None  # a pair judged twice
    return judgments


def read_qrels(path: str | os.PathLike[str], fmt: str = "auto",
               skipped: Skipped | None = None) -> Qrels:
    """Read judgments; ``fmt`` is ``auto`` (from the first line) or one of QRELS_FORMATS.
    ``skipped`` (``--on-duplicate first``): a JSON-lines row without id or repeating one is
    counted there and skipped (TREC and BEIR lines are judgments, not rows of a query)."""
    name = str(path)
    data = read_bytes(path)
    text = decode_records(data, name)
    if fmt == "auto":
        fmt = detect_qrels_format(text, name)
    judgments: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    if fmt == "jsonl":
        rows = 0
        first: dict[str, int] = {}
        for line, obj in iter_json_lines(text, name):
            if HEADER_KEY in obj:  # an eval set's provenance header (import beir writes one)
                header_record(obj, rows, name, line)
                continue
            rows += 1
            qid = row_id(obj, first, name, line, skipped)
            if qid is None:
                continue
            judgments[qid] = {}
            for doc, grade in parse_relevance(obj, name, line).items():
                _add(judgments, qid, doc, grade, name, line, seen)
    else:
        fast = _read_columns(text, fmt)
        if fast is not None:
            return Qrels(name, sha256_hex(data), fmt, fast)
        width = 4 if fmt == "trec" else 3
        for number, raw in enumerate(text.split("\n"), start=1):
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            parts = stripped.split("\t") if fmt == "beir" else stripped.split()
            parts = [p.strip() for p in parts]
            if fmt == "beir" and number == 1 and parts[0].lower() == "query-id":
                continue
            if len(parts) != width:
                raise InputError(f"expected {width} columns, found {len(parts)}", name, number)
            qid, doc, grade_text = (parts[0], parts[2], parts[3]) if fmt == "trec" else parts
            _add(judgments, qid, doc, _grade(grade_text, name, number), name, number, seen)
    if not judgments:
        raise InputError("the qrels file holds no judgments", name)
    return Qrels(name, sha256_hex(data), fmt, judgments)


def write_qrels(qrels: dict[str, dict[str, int]], fmt: str) -> str:
    """Serialise judgments as TREC qrels (``qid 0 docid grade``) or JSONL (``relevance``)."""
    if fmt == "trec":
        return "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    if fmt == "jsonl":
        return "".join(
            json.dumps({"id": q, "relevance": docs}, ensure_ascii=False) + "\n"
            for q, docs in qrels.items()
        )
    raise ValueError(f"cannot write qrels as {fmt!r}")
