"""``ragspan import traces``: the retrieval an application logged as OpenTelemetry traces,
read into a run with steps (``io.runs.steps``).

Input: OTLP JSON, as the OpenTelemetry file exporter writes it (one
``ExportTraceServiceRequest`` object per line: ``resourceSpans[].scopeSpans[].spans[]``), or a
single exported JSON document of that shape. Attribute values are OTLP ``AnyValue`` objects
(``stringValue``, ``intValue`` as a string or number, ``doubleValue``, ``boolValue``,
``arrayValue``, ``kvlistValue``).

Retriever spans:

- OpenInference: ``openinference.span.kind`` = ``RETRIEVER``; the query is ``input.value``;
  the documents ``retrieval.documents.N.document.{id, content, score}``, N from 0;
- the GenAI semantic conventions: ``gen_ai.operation.name`` = ``retrieval``; the query is
  ``gen_ai.retrieval.query.text`` (else ``input.value``); the documents
  ``gen_ai.retrieval.documents`` (a list, or its JSON text) of objects with ``id``, ``score``
  and ``content`` (or ``text``). A retriever span whose documents carry no content cannot be
  placed: it is refused, naming the span.

Each trace is one question: the trace whose span (any span) carries ``query_id_attribute``
with the question's id, or, without it, whose root span's ``input.value`` is the question's
text (stripped; two questions of the same text cannot be told apart and are refused). Its
retriever spans, ordered by start time (then span id), are the steps. Every document's
content is placed in the corpus (``io.placement``: exact, normalised, fuzzy; ambiguity
refused unless ``first``) in its ``id`` when that names a corpus document, else in the
question's ``doc_id``, else anywhere. Traces that match no question and questions with no
trace are counted and listed (the first ``LISTED``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet
from ragspan.io.files import decode_records, loads_json, read_bytes
from ragspan.io.placement import Placer, Unplaced, preview
from ragspan.io.runs.steps import MAX_STEPS

LISTED = 20
MAX_SPANS = 1_000_000  # spans read from one file
DOC_KEY = "retrieval.documents."


@dataclass(frozen=True)
class Span:
    trace: str
    span: str
    parent: str
    start: int
    attributes: dict[str, Any]


@dataclass
class TraceRun:
    """The steps run (``rows``) and what was counted on the way."""

    rows: list[dict[str, Any]]
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


MAX_NESTING = 32  # arrays and key-value lists inside one attribute value
INT64 = 2 ** 63
_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class BadValue(ValueError):
    """An attribute value that is not the OTLP ``AnyValue`` it claims to be."""


def any_value(v: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` (proto3 JSON) as a Python value: ``stringValue`` a string;
    ``intValue`` an integer or its decimal string, within int64; ``doubleValue`` a number, or
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` as proto3 JSON writes those; ``boolValue``
    true or false; ``bytesValue`` base64 text (kept as text); ``arrayValue`` ``{"values":
    [AnyValue]}``; ``kvlistValue`` ``{"values": [{"key", "value"}]}``, nested at most
    ``MAX_NESTING`` deep; an empty ``{}`` is no value (None). Anything else is BadValue
    saying what was expected."""
    if depth > MAX_NESTING:
        raise BadValue(f"nested more than {MAX_NESTING} deep")
    if not isinstance(v, dict):
        raise BadValue(f"expected an AnyValue object, got {_shown(v)}")
    if not v:
        return None
    if len(v) != 1:
        raise BadValue(f"an AnyValue holds one of its kinds, got {', '.join(sorted(v))}")
    kind, x = next(iter(v.items()))
    if kind in ("stringValue", "bytesValue"):
        if not isinstance(x, str):
            raise BadValue(f"{kind} must be a string, got {_shown(x)}")
        return x
    if kind == "intValue":
        if isinstance(x, str) and re.fullmatch(r"-?[0-9]{1,20}", x):
            x = int(x)
        if isinstance(x, bool) or not isinstance(x, int) or not -INT64 <= x < INT64:
            raise BadValue(f"intValue must be a 64-bit integer (or its decimal string), got "
                           f"{_shown(x)}")
        return x
    if kind == "doubleValue":
        if isinstance(x, str) and x in _DOUBLE_WORDS:
            return _DOUBLE_WORDS[x]
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise BadValue(f"doubleValue must be a number, got {_shown(x)}")
        return float(x)
    if kind == "boolValue":
        if not isinstance(x, bool):
            raise BadValue(f"boolValue must be true or false, got {_shown(x)}")
        return x
    if kind in ("arrayValue", "kvlistValue"):
        values = x.get("values", []) if isinstance(x, dict) else None
        if not isinstance(values, list):
            raise BadValue(f"{kind} must be an object with a 'values' list, got {_shown(x)}")
        if kind == "arrayValue":
            return [any_value(item, depth + 1) for item in values]
        out = {}
        for kv in values:
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise BadValue(f"kvlistValue entries must be objects with a string 'key', "
                               f"got {_shown(kv)}")
            out[kv["key"]] = any_value(kv.get("value", {}), depth + 1)
        return out
    raise BadValue(f"unknown AnyValue kind '{kind}'")


def _shown(x: Any) -> str:
    text = json.dumps(x, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def read_spans(path: str) -> list[Span]:
    """Every span of an OTLP JSON file (JSON lines, or one document)."""
    text = decode_records(read_bytes(path), path).strip()
    if not text:
        raise InputError("the trace file is empty", path)
    try:
        docs = [loads_json(text, path)]
    except InputError:
        docs = [loads_json(line, path, n) for n, line in enumerate(text.split("\n"), 1)
                if line.strip()]
    out: list[Span] = []
    for n, doc in enumerate(docs, 1):
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            raise InputError("expected OTLP JSON: an object with 'resourceSpans' (the "
                             "OpenTelemetry file exporter's format)", path, n)
        for rs in doc["resourceSpans"]:
            for ss in _listed(rs, "scopeSpans", "resourceSpans[]", path, n):
                for sp in _listed(ss, "spans", "scopeSpans[]", path, n):
                    out.append(_span(sp, path, n))
                    if len(out) > MAX_SPANS:
                        raise InputError(f"more than {MAX_SPANS:,} spans", path)
    return out


def _listed(obj: Any, key: str, what: str, path: str, line: int) -> list[Any]:
    """``obj[key]``, a list (absent or null: empty); anything else an InputError."""
    if not isinstance(obj, dict):
        raise InputError(f"each {what} must be an object, got {_shown(obj)}", path, line)
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{what}.{key} must be a list, got {_shown(value)}", path, line)
    return value


def _span(sp: Any, path: str, line: int) -> Span:
    if not isinstance(sp, dict) or not isinstance(sp.get("traceId"), str) \
            or not isinstance(sp.get("spanId"), str):
        raise InputError("a span needs 'traceId' and 'spanId'", path, line)
    attrs = {}
    listed = sp.get("attributes") or []
    if not isinstance(listed, list):
        raise InputError(f"span {sp['spanId']}: 'attributes' must be a list of key-value "
                         "objects", path, line)
    for kv in listed:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise InputError(f"span {sp['spanId']}: each attribute must be an object with a "
                             f"string 'key', got {_shown(kv)}", path, line)
        try:
            attrs[kv["key"]] = any_value(kv.get("value", {}))
        except BadValue as exc:
            raise InputError(f"span {sp['spanId']}: attribute '{kv['key']}': {exc}", path,
                             line) from None
    try:
        start = int(sp.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError):
        raise InputError(f"span {sp['spanId']}: 'startTimeUnixNano' must be an integer",
                         path, line) from None
    parent = sp.get("parentSpanId") or ""
    if not isinstance(parent, str):
        raise InputError(f"span {sp['spanId']}: 'parentSpanId' must be a string", path, line)
    return Span(sp["traceId"], sp["spanId"], parent, start, attrs)


def _documents(span: Span, path: str) -> tuple[str | None, list[dict[str, Any]]] | None:
    """A retriever span's query and documents (``id``, ``content``, ``score``); None for a
    span that is not a retriever's."""
    a = span.attributes
    if a.get("openinference.span.kind") == "RETRIEVER":
        docs: dict[int, dict[str, Any]] = {}
        for key, value in a.items():
            if key.startswith(DOC_KEY):
                index, _, rest = key[len(DOC_KEY):].partition(".document.")
                if index.isdigit() and rest in ("id", "content", "score"):
                    docs.setdefault(int(index), {})[rest] = value
        listed = [docs[i] for i in sorted(docs)]
        query = a.get("input.value")
    elif a.get("gen_ai.operation.name") == "retrieval":
        raw = a.get("gen_ai.retrieval.documents", [])
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise InputError(f"span {span.span}: gen_ai.retrieval.documents is not JSON",
                                 path) from None
        if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
            raise InputError(f"span {span.span}: gen_ai.retrieval.documents must be a list "
                             "of objects", path)
        listed = [{"id": d.get("id"), "content": d.get("content", d.get("text")),
                   "score": d.get("score")} for d in raw]
        query = a.get("gen_ai.retrieval.query.text", a.get("input.value"))
    else:
        return None
    for i, d in enumerate(listed):
        if not isinstance(d.get("content"), str) or not d["content"].strip():
            raise InputError(f"span {span.span} (trace {span.trace}): document {i} carries no "
                             "content, so it cannot be placed in the corpus", path)
    return (query if isinstance(query, str) else None), listed


def _questions(evalset: EvalSet, spans: list[Span], by_trace: dict[str, list[Span]],
               attribute: str | None, path: str) -> dict[str, str]:
    """Trace id -> question id (see the module docstring)."""
    ids = {q.id for q in evalset.queries}
    out: dict[str, str] = {}
    if attribute is not None:
        for trace, members in by_trace.items():
            found = {str(s.attributes[attribute]) for s in members if attribute in s.attributes}
            if len(found) > 1:
                raise InputError(f"trace {trace} names {len(found)} questions in "
                                 f"'{attribute}' ({', '.join(sorted(found)[:3])})", path)
            if found and next(iter(found)) in ids:
                out[trace] = next(iter(found))
        return out
    by_text: dict[str, list[str]] = {}
    for q in evalset.queries:
        by_text.setdefault(q.query.strip(), []).append(q.id)
    for trace, members in by_trace.items():
        roots = [s for s in members if not s.parent]
        text = roots[0].attributes.get("input.value") if len(roots) == 1 else None
        if not isinstance(text, str):
            continue
        hits = by_text.get(text.strip(), [])
        if len(hits) > 1:
            raise InputError(f"trace {trace}: its question text is the text of {len(hits)} "
                             f"questions ({', '.join(hits[:3])}): give --query-id-attribute",
                             path)
        if hits:
            out[trace] = hits[0]
    return out


def import_traces(path: str, evalset: EvalSet, corpus: Corpus,
                  query_id_attribute: str | None = None, first: bool = False,
                  threshold: float = 0.9) -> TraceRun:
    """The steps run of the traces in ``path`` for ``evalset``'s questions over ``corpus``."""
    spans = read_spans(path)
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace, []).append(s)
    asked = _questions(evalset, spans, by_trace, query_id_attribute, path)
    seen: dict[str, str] = {}
    for trace, qid in sorted(asked.items()):
        if qid in seen:
            raise InputError(f"question '{qid}' has two traces ({seen[qid]}, {trace})", path)
        seen[qid] = trace
    calls_of = {qid: sorted((s for s in by_trace[trace] if _documents(s, path) is not None),
                            key=lambda s: (s.start, s.span)) for qid, trace in seen.items()}
    _check_importable(calls_of, path)
    placer = Placer(corpus, threshold)
    scope = {q.id: q.doc_id for q in evalset.queries}
    rows: list[dict[str, Any]] = []
    placed, steps_total = {"exact": 0, "normalized": 0, "fuzzy": 0}, 0
    for q in evalset.queries:
        if q.id not in seen:
            continue
        trace = seen[q.id]
        calls = calls_of[q.id]
        steps: list[dict[str, Any]] = []
        for s in calls:
            query, docs = _documents(s, path) or (None, [])
            retrieved = []
            for i, d in enumerate(docs):
                item = _place(placer, d, scope[q.id], corpus, first, f"span {s.span} "
                              f"(trace {trace}) document {i}", path)
                placed[item.pop("method")] += 1
                retrieved.append(item)
            steps.append({"query": query, "retrieved": retrieved} if query is not None
                         else {"retrieved": retrieved})
        steps_total += len(steps)
        empty: list[dict[str, Any]] = [{"retrieved": []}]
        rows.append({"id": q.id, "steps": steps or empty})
    unmatched = sorted(t for t in by_trace if t not in asked)
    missing = [q.id for q in evalset.queries if q.id not in seen]
    counts = {"traces": len(by_trace), "questions_with_a_trace": len(rows),
              "traces_without_a_question": len(unmatched),
              "questions_without_a_trace": len(missing), "steps": steps_total,
              **{f"placed_{k}": v for k, v in placed.items()}}
    details = {"traces_without_a_question": unmatched[:LISTED],
               "questions_without_a_trace": missing[:LISTED]}
    return TraceRun(rows, counts, details)


def _check_importable(calls_of: dict[str, list[Span]], path: str) -> None:
    """What ``score`` refuses is refused here, with its count, before a document is placed:
    a question with more retriever calls than a run row may hold (``MAX_STEPS``), and a
    document score that is not a finite number (NaN, infinite, text)."""
    long = {q: len(calls) for q, calls in calls_of.items() if len(calls) > MAX_STEPS}
    if long:
        first = min(long)
        who = "1 question has" if len(long) == 1 else f"{len(long)} questions have"
        raise InputError(f"{who} more than {MAX_STEPS} retriever calls, the most a run row "
                         f"holds (e.g. '{first}': {long[first]:,})", path)
    bad: list[str] = []
    for calls in calls_of.values():
        for s in calls:
            for i, d in enumerate((_documents(s, path) or (None, []))[1]):
                score = d.get("score")
                if score is None:
                    continue
                if isinstance(score, bool) or not isinstance(score, (int, float)) \
                        or not math.isfinite(score):
                    bad.append(f"span {s.span} document {i}: {_shown(score)}")
    if bad:
        what = "1 document score is not a finite number" if len(bad) == 1 else \
            f"{len(bad)} document scores are not finite numbers"
        raise InputError(f"{what} (e.g. {bad[0]}): a run's scores must be", path)


def _place(placer: Placer, doc: dict[str, Any], scope: str | None, corpus: Corpus,
           first: bool, where: str, path: str) -> dict[str, Any]:
    text = doc["content"]
    named = doc.get("id")
    docs = [named] if isinstance(named, str) and named in corpus.documents else \
        [scope] if scope is not None and scope in corpus.documents else sorted(corpus.documents)
    try:
        p = placer.place(text, docs, first=first)
    except Unplaced as exc:
        raise InputError(f"{where}: {preview(text)} cannot be placed in the corpus: "
                         f"{exc.reason}", path) from None
    item: dict[str, Any] = {"doc_id": p.doc_id, "start": p.start, "end": p.end,
                            "text": corpus.text(p.doc_id)[p.start:p.end], "method": p.method}
    score = doc.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        item["score"] = float(score)
    return item
