"""The eval set: one query per line with its gold character spans (DESIGN.md, "Eval set")."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragspan.base.errors import InputError
from ragspan.io.files import decode_records, iter_json_records, read_bytes, sha256_hex
from ragspan.io.rows import (
    HEADER_KEY,
    Skipped,
    check_offsets,
    header_record,
    is_offset,
    out_of_range,
    parse_id,
    refuse_other_kind,
    row_id,
)
from ragspan.io.span_anchors import Drift, SpanAnchor, drift, parse_anchor
from ragspan.records.retrieval import Filters

if TYPE_CHECKING:
    from ragspan.io.corpus import Corpus

MATCH_MODES = ("all", "any")


@dataclass(frozen=True)
class GoldSpan:
    """A gold answer location: ``text[start:end]`` of document ``doc_id`` (code points, end exclusive)."""

    doc_id: str
    start: int
    end: int
    text: str | None = field(default=None, compare=False)  # the answer text, when recorded
    # the digests of its text and context, when recorded (``io.span_anchors``)
    anchor: SpanAnchor | None = field(default=None, compare=False)

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class EvalQuery:
    """One eval query. ``relevance`` holds doc-level grades (empty for a pure span eval set)."""

    id: str
    query: str
    gold_spans: tuple[GoldSpan, ...]
    doc_id: str | None = None
    match: str = "all"
    tags: dict[str, str] = field(default_factory=dict)
    filters: Filters = field(default_factory=dict)
    relevance: dict[str, int] = field(default_factory=dict)
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalSet:
    path: str
    sha256: str
    queries: tuple[EvalQuery, ...]
    header: dict[str, Any] | None = None


def query_digests(evalset: EvalSet) -> dict[str, list[str]]:
    """Per query id, the first 16 hex digits of the sha256 of its text and of its judgments
    (gold spans with ``match``, doc-level grades): what a run made for this eval set records
    in its header, so that scoring it against another version can say which questions
    changed and which only changed their answers."""
    out = {}
    for q in evalset.queries:
        judged = json.dumps([q.match, sorted((s.doc_id, s.start, s.end) for s in q.gold_spans),
                             sorted(q.relevance.items())], ensure_ascii=False)
        out[q.id] = [hashlib.sha256(q.query.encode("utf-8")).hexdigest()[:16],
                     hashlib.sha256(judged.encode("utf-8")).hexdigest()[:16]]
    return out


def corpus_drift(evalset: EvalSet, corpus: Corpus) -> tuple[list[Drift], list[str]]:
    """The documents of ``corpus`` that drifted from what ``evalset`` was made on, and those
    that changed with their gold spans intact (``io.span_anchors.drift``)."""
    recorded = (evalset.header or {}).get("documents") or {}
    docs = corpus.documents
    return drift(recorded, [(q.id, s) for q in evalset.queries for s in q.gold_spans],
                 {d: doc.text for d, doc in docs.items()},
                 {d: doc.sha256 for d, doc in docs.items()})


def parse_gold_span(raw: Any, scope: str | None, path: str, line: int, index: int) -> GoldSpan:
    what = f"gold_spans[{index}]"
    if isinstance(raw, list):
        if len(raw) != 2:
            raise InputError(f"{what}: a list span must be [start, end]", path, line)
        if scope is None:
            raise InputError(f"{what}: [start, end] needs the row's 'doc_id'", path, line)
        start, end = check_offsets(raw[0], raw[1], path, line, what)
        return GoldSpan(scope, start, end)
    if not isinstance(raw, dict):
        raise InputError(f"{what}: expected an object with doc_id, start, end", path, line)
    doc_id = raw.get("doc_id", scope)
    if doc_id is None:
        raise InputError(f"{what}: missing 'doc_id'", path, line)
    doc_id = parse_id(doc_id, path, line, f"{what}.doc_id")
    if "start" not in raw or "end" not in raw:
        raise InputError(f"{what}: missing 'start' or 'end'", path, line)
    start, end = check_offsets(raw["start"], raw["end"], path, line, what)
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        raise InputError(f"{what}: 'text' must be a string", path, line)
    anchor = None if raw.get("anchor") is None else parse_anchor(raw["anchor"], path, line,
                                                                  what)
    return GoldSpan(doc_id, start, end, text, anchor)


def parse_tags(raw: Any, path: str, line: int) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError("'tags' must be an object", path, line)
    tags: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bool):
            tags[str(key)] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            tags[str(key)] = str(value)
        elif value is None:
            continue
        else:
            raise InputError(f"tag '{key}' must be a string or number", path, line)
    return tags


def parse_relevance(obj: dict[str, Any], path: str, line: int) -> dict[str, int]:
    """Doc-level judgments on an eval row: ``relevant_ids`` (grade 1) or ``relevance`` (graded)."""
    grades: dict[str, int] = {}
    if "relevant_ids" in obj and "relevance" in obj:
        raise InputError("give either 'relevant_ids' or 'relevance', not both "
                         "(they could disagree)", path, line)
    if "relevant_ids" in obj:
        ids = obj["relevant_ids"]
        if not isinstance(ids, list):
            raise InputError("'relevant_ids' must be a list", path, line)
        for doc in ids:
            grades[parse_id(doc, path, line, "relevant_ids[]")] = 1
    if "relevance" in obj:
        rel = obj["relevance"]
        if not isinstance(rel, dict):
            raise InputError("'relevance' must be an object of doc id -> grade", path, line)
        for doc, grade in rel.items():
            if out_of_range(grade):
                raise InputError(f"relevance grade of '{doc}' is out of range (more than "
                                 "2^40)", path, line)
            if not is_offset(grade):
                raise InputError(f"relevance grade of '{doc}' must be an integer", path, line)
            grades[str(doc)] = grade
    return grades


SWAPPED = " (are --eval-set and --run, or --corpus, swapped?)"

KNOWN_KEYS = {
    "id", "query", "doc_id", "gold_spans", "gold_texts", "match", "tags", "filters",
    "relevant_ids", "relevance",
}


def parse_query(obj: dict[str, Any], path: str, line: int) -> EvalQuery:
    if "id" not in obj:
        raise InputError("missing 'id'", path, line)
    qid = parse_id(obj["id"], path, line)
    query = obj.get("query", "")
    if not isinstance(query, str):
        raise InputError("'query' must be a string", path, line)
    scope = obj.get("doc_id")
    if scope is not None:
        scope = parse_id(scope, path, line, "doc_id")
    raw_spans = obj.get("gold_spans")
    if raw_spans is None:
        if "gold_texts" in obj:
            raise InputError(
                "'gold_texts' must be resolved to 'gold_spans' first (ragspan adapt)", path, line
            )
        raw_spans = []
    if not isinstance(raw_spans, list):
        raise InputError("'gold_spans' must be a list", path, line)
    spans = tuple(parse_gold_span(s, scope, path, line, i) for i, s in enumerate(raw_spans))
    match = obj.get("match", "all")
    if match not in MATCH_MODES:
        raise InputError(f"'match' must be 'all' or 'any', got {match!r}", path, line)
    filters = obj.get("filters") or {}
    if not isinstance(filters, dict):
        raise InputError("'filters' must be an object", path, line)
    for key, value in filters.items():
        values = value if isinstance(value, list) else [value]
        if not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
            raise InputError(f"filters.{key}: a filter value must be a string, number, boolean "
                             f"or a list of them, got {type(value).__name__}", path, line)
    extra = {k: v for k, v in obj.items() if k not in KNOWN_KEYS}
    return EvalQuery(
        id=qid,
        query=query,
        gold_spans=spans,
        doc_id=scope,
        match=match,
        tags=parse_tags(obj.get("tags"), path, line),
        filters=filters,
        relevance=parse_relevance(obj, path, line),
        line=line,
        extra=extra,
    )


def read_eval_set(path: str | os.PathLike[str], skipped: Skipped | None = None) -> EvalSet:
    """Read an eval set (JSONL, or a JSON array). An optional first record ``{"_header": {...}}``
    carries provenance. Query ids must be unique; with ``skipped`` (``--on-duplicate
    first``) a row without id or repeating one is counted there and skipped."""
    name = str(path)
    data = read_bytes(path)
    text = decode_records(data, name)
    header: dict[str, Any] | None = None
    queries: list[EvalQuery] = []
    seen: dict[str, int] = {}
    for line, obj in iter_json_records(text, name):
        if HEADER_KEY in obj:
            header = header_record(obj, len(queries) + (header is not None), name, line)
            documents = header.get("documents", {})
            if not isinstance(documents, dict) or not all(
                    isinstance(v, str) for v in documents.values()):
                raise InputError("'_header.documents' must map each document id to its "
                                 f"sha256, got {type(documents).__name__}", name, line)
            continue
        if not queries:
            refuse_other_kind(obj, "an eval set", name, line, SWAPPED)
        if row_id(obj, seen, name, line, skipped) is None:
            continue
        queries.append(parse_query(obj, name, line))
    if not queries:
        raise InputError("the eval set holds no queries", name)
    return EvalSet(path=name, sha256=sha256_hex(data), queries=tuple(queries), header=header)
