"""Doc-level runs: TREC runs (``qid Q0 docid rank score tag``) and JSONL (``retrieved_ids``).

A run is held column-wise and already in trec_eval order: per query, score descending, ties
broken by doc id descending (trec_eval sorts this way and ignores the rank column). A JSONL
run's order is the listed order. A document listed twice for one query is an error.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np

from ragspan.errors import InputError
from ragspan.io.evalset import parse_id
from ragspan.io.files import decode_utf8, iter_json_lines, read_bytes, sha256_hex

RUN_FORMATS = ("trec", "jsonl", "span")
BLOCK_BYTES = 1 << 23


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

    def per_query(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for q, d in zip(self.query.tolist(), self.doc.tolist()):
            out.setdefault(self.qids[q], []).append(self.docs[d])
        return out


def detect_run_format(text: str, path: str) -> str:
    for raw in text.split("\n", 20)[:20]:
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise InputError("malformed JSON on the first line", path, 1) from None
            if isinstance(obj, dict) and "retrieved" in obj:
                return "span"
            if isinstance(obj, dict) and ("retrieved_ids" in obj or "_header" in obj):
                return "jsonl"
            raise InputError("a JSONL run row needs 'retrieved' or 'retrieved_ids'", path, 1)
        if len(line.split()) >= 6:
            return "trec"
        raise InputError("cannot tell the run format from its first line "
                         "(expected TREC 'qid Q0 docid rank score tag' or JSONL)", path)
    raise InputError("the run file is empty", path)


class _Coder(dict):
    def code(self, key: str) -> int:
        c = self.get(key)
        if c is None:
            c = self[key] = len(self)
        return c


def _parse_trec_block(block: str, first_line: int, path: str, qc: _Coder, dc: _Coder,
                      out: list[tuple[np.ndarray, ...]]) -> None:
    """Parse whole lines of a TREC run; a fast path for clean 6-column blocks."""
    tokens = block.split()
    n_lines = block.count("\n") + (0 if block.endswith("\n") else 1)
    scores = None
    if len(tokens) == 6 * n_lines and "#" not in block:
        try:
            scores = np.array(tokens[4::6], dtype=np.float64)
        except ValueError:
            scores = None
    if scores is not None and np.isfinite(scores).all():
        q = np.fromiter(map(qc.code, tokens[0::6]), dtype=np.int64, count=n_lines)
        d = np.fromiter(map(dc.code, tokens[2::6]), dtype=np.int64, count=n_lines)
        lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
        out.append((q, d, scores, lines))
        return
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
        q_l.append(qc.code(parts[0]))
        d_l.append(dc.code(parts[2]))
        s_l.append(score)
        n_l.append(number)
    out.append((np.asarray(q_l, np.int64), np.asarray(d_l, np.int64),
                np.asarray(s_l, np.float64), np.asarray(n_l, np.int64)))


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


def _finish(path: str, sha: str, fmt: str, qc: _Coder, dc: _Coder,
            parts: list[tuple[np.ndarray, ...]], sort_by_score: bool) -> DocRun:
    q = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    d = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    s = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    ln = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
    qids, docs = list(qc), list(dc)
    if sort_by_score:
        doc_order = np.empty(len(docs), dtype=np.int64)
        doc_order[np.asarray(sorted(range(len(docs)), key=docs.__getitem__), dtype=np.int64)] = (
            np.arange(len(docs))
        )
        order = np.lexsort((-doc_order[d], -s, q))
    else:
        order = np.lexsort((np.arange(q.size), q))
    q, d, s, ln = q[order], d[order], s[order], ln[order]
    pair = q * max(len(docs), 1) + d
    srt = np.argsort(pair, kind="stable")
    dup = np.flatnonzero(pair[srt][1:] == pair[srt][:-1])
    if dup.size:
        i, j = srt[dup[0]], srt[dup[0] + 1]
        first, second = sorted((int(ln[i]), int(ln[j])))
        raise InputError(f"document '{docs[d[i]]}' listed twice for query '{qids[q[i]]}' "
                         f"(first on line {first})", path, second)
    start = np.ones(q.size, dtype=bool)
    start[1:] = q[1:] != q[:-1]
    first_idx = np.flatnonzero(start)
    rank = np.arange(q.size) - np.repeat(first_idx, np.diff(np.append(first_idx, q.size)))
    return DocRun(path, sha, fmt, qids, docs, q, d, s, rank, ln)


def read_doc_run(path: str | os.PathLike[str], fmt: str = "auto") -> DocRun:
    """Read a TREC or JSONL doc run (``fmt``: ``auto``, ``trec``, ``jsonl``)."""
    name = str(path)
    data = read_bytes(path)
    text = decode_utf8(data, name)
    if fmt == "auto":
        fmt = detect_run_format(text, name)
    if fmt == "span":
        raise InputError("this is a span run; score it with --eval-set", name)
    qc, dc = _Coder(), _Coder()
    parts: list[tuple[np.ndarray, ...]] = []
    if fmt == "trec":
        for first_line, block in _blocks(text):
            _parse_trec_block(block, first_line, name, qc, dc, parts)
        if not qc:
            raise InputError("the run holds no rows", name)
        return _finish(name, sha256_hex(data), fmt, qc, dc, parts, sort_by_score=True)
    seen: dict[str, int] = {}
    for line, obj in iter_json_lines(text, name):
        if "_header" in obj:
            continue
        if "id" not in obj:
            raise InputError("missing 'id'", name, line)
        qid = parse_id(obj["id"], name, line)
        if qid in seen:
            raise InputError(f"repeated query id '{qid}' (first on line {seen[qid]})", name, line)
        seen[qid] = line
        ids = obj.get("retrieved_ids")
        if not isinstance(ids, list):
            raise InputError("'retrieved_ids' must be a list of doc ids", name, line)
        qcode = qc.code(qid)
        docs = [dc.code(parse_id(x, name, line, "retrieved_ids[]")) for x in ids]
        scores = np.full(len(docs), np.nan)
        if "scores" in obj:
            raw = obj["scores"]
            if (not isinstance(raw, list) or len(raw) != len(ids) or any(
                    isinstance(x, bool) or not isinstance(x, (int, float)) for x in raw)):
                raise InputError("'scores' must be a list of numbers, one per retrieved id",
                                 name, line)
            scores = np.asarray(raw, dtype=float)
            if not np.isfinite(scores).all():
                raise InputError("non-finite score in 'scores'", name, line)
        parts.append((np.full(len(docs), qcode, np.int64), np.asarray(docs, np.int64),
                      scores, np.full(len(docs), line, np.int64)))
    if not qc:
        raise InputError("the run holds no rows", name)
    return _finish(name, sha256_hex(data), fmt, qc, dc, parts, sort_by_score=False)


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
