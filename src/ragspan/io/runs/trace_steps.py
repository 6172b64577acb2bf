"""The retrieval a trace recorded, as a run with steps (``io.runs.steps``): one step per
retriever call the model saw (``trace_run``).

Spans (``io.runs.trace_files``) of two conventions are read:

- OpenInference: ``openinference.span.kind`` (or Phoenix's ``span_kind``) ``RETRIEVER``, the
  query ``input.value``, the documents ``retrieval.documents.N.document.{id, content, score,
  metadata}``; ``RERANKER`` spans with ``reranker.output_documents.N.document.*``;
- the GenAI semantic conventions: ``gen_ai.operation.name`` = ``retrieval``, the query
  ``gen_ai.retrieval.query.text`` (else ``input.value``), the documents
  ``gen_ai.retrieval.documents`` (a list, or its JSON text) of ``{id, score[, content]}``.

**One step per call the model saw.** A retriever span with a retriever span among its
ancestors is not a step: a wrapping retriever (LangChain's ensemble, compression or
multi-query retrievers, LlamaIndex's fusion and router retrievers, and LlamaIndex's own
``retrieve`` > ``_retrieve`` pair) calls inner retrievers with its caller's callbacks, and
only the outermost call's documents reached the model; each is counted
(``nested_calls_folded``). A ``RERANKER`` span outside every retriever consumes the
retriever step it follows: the latest step started before it whose documents are its input
documents (by content, in order), else the latest step under the same parent; that step's
results are then the reranker's ``output_documents`` in their order (``reranked_steps``). A
reranker inside a retriever is already in that retriever's output; a reranker that consumes
no step is counted (``rerankers_without_a_step``).

**Each trace is one question**: the trace whose spans carry ``query_id_attribute`` with the
question's id (the attribute path may reach inside a JSON attribute: ``metadata.KEY`` is
``KEY`` of OpenInference's ``metadata`` JSON, ``input.value.KEY`` of a JSON input), or,
without it, whose earliest root span's question text is the question's (stripped). A JSON
``input.value`` (``input.mime_type`` ``application/json``, as agent root spans usually
have) gives its question from the usual keys (``question``, ``query``, ``input``,
``query_str``, ``text``; one level down too: LlamaIndex's ``{"qb": {"query_str": ...}}``).

**Each document is placed** in the corpus, first by what it says of itself, then by its
text: its ``metadata`` (OpenInference's JSON text, or an object) naming its document
(``doc_key``, else ``doc_id``, ``document_id``, ``source``, ``file_name``, ``file_path``;
a file path names the document of its file name without extension, counted as
``doc_ids_from_paths``) and its offset
(``offset_key``, else LangChain's ``start_index``, ``start``, ``start_char_idx``; the end
``end``, ``end_char_idx``, else start plus the content's length) are taken when the corpus
text there is its content (``placed_by_offsets``; where it is not, the text decides and
``offsets_disagreed`` counts it); a document without content (the GenAI conventions') is
placed by its id in ``chunks`` (a chunk manifest, ``placed_by_chunk_id``) or as the whole
corpus document it names (``placed_by_document_id``), and is refused with the count when
neither can; otherwise its content is placed as ``io.placement`` places texts (exact,
normalised, fuzzy; ambiguity refused unless ``first``), in the document it names, else the
question's ``doc_id``, else anywhere. Ids of any scalar type are read as text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError
from ragspan.io.chunks import ChunkManifest
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet
from ragspan.io.placement import DEFAULT_THRESHOLD
from ragspan.io.runs.steps import MAX_STEPS
from ragspan.io.runs.trace_documents import Doc, documents, lookup, question_text, role
from ragspan.io.runs.trace_otlp import BadValue, Span, shown
from ragspan.io.runs.trace_places import Places
from ragspan.records.imported import ImportDetails
from ragspan.records.run_rows import RunRow, RunStep

LISTED = 20


@dataclass(frozen=True)
class TraceOptions:
    """How traces become a run: the attribute that names each question, how ambiguous text
    is settled and how close a fuzzy placement must be, the metadata keys of a document's
    id and offset, and a chunk manifest to place documents given by id alone."""

    query_id_attribute: str | None = None
    first: bool = False
    threshold: float = DEFAULT_THRESHOLD
    doc_key: str | None = None
    offset_key: str | None = None
    chunks: ChunkManifest | None = None


@dataclass
class TraceRun:
    """The steps run (``rows``) and what was counted on the way."""

    rows: list[RunRow]
    counts: dict[str, int] = field(default_factory=dict)
    details: ImportDetails = field(default_factory=ImportDetails)


# ---- the structure of a trace --------------------------------------------------------------


def _under_retriever(members: list[Span], roles: Mapping[str, str | None], path: str
                     ) -> dict[str, bool]:
    """Span id -> whether one of its ancestors (same trace) is a retriever: each span's
    ancestry walked once (memoised), so a trace of n spans costs O(n) however deep it
    nests. Parents that form a loop are an InputError naming the span."""
    spans = {s.span: s for s in members}
    memo: dict[str, bool] = {}
    for s in members:
        chain: list[Span] = []
        on_chain: set[str] = set()
        cur: Span | None = s
        while cur is not None and cur.span not in memo:
            if cur.span in on_chain:
                raise InputError(f"span {cur.span} (trace {cur.trace}) is its own ancestor: "
                                 "its parents form a loop", path)
            chain.append(cur)
            on_chain.add(cur.span)
            cur = spans.get(cur.parent) if cur.parent else None
        for node in reversed(chain):
            parent = spans.get(node.parent) if node.parent else None
            memo[node.span] = parent is not None and (
                roles[parent.span] == "retriever" or memo[parent.span])
    return memo


@dataclass
class _Step:
    span: Span
    query: str | None
    docs: list[Doc]
    reranked: bool = False


@dataclass(frozen=True)
class _Shape:
    """A trace's structure, read in linear time before any document is: its outermost
    retriever spans and its rerankers outside every retriever, each in start order, and
    every retriever span (the nested ones too: what the trace retrieved)."""

    retrievers: list[Span]
    rerankers: list[Span]
    every_retriever: list[Span]


def _shape_of(members: list[Span], path: str, counts: dict[str, int]) -> _Shape:
    roles = {s.span: role(s) for s in members}
    nested = _under_retriever(members, roles, path)
    retrievers: list[Span] = []
    rerankers: list[Span] = []
    every: list[Span] = []
    for s in sorted(members, key=lambda x: (x.start, x.span)):
        kind = roles[s.span]
        if kind is None:
            continue
        if kind == "retriever":
            every.append(s)
        if nested[s.span]:
            counts["nested_calls_folded" if kind == "retriever"
                   else "rerankers_inside_a_retriever"] += 1
            continue
        (retrievers if kind == "retriever" else rerankers).append(s)
    return _Shape(retrievers, rerankers, every)


def _steps_of(shape: _Shape, path: str, counts: dict[str, int]) -> list[_Step]:
    """The steps of one trace: its outermost retriever spans in start order, each with the
    documents the model saw (a reranker's output where one consumed it). A reranker's
    output document that no retriever of the trace returned is an InputError: a reranker
    reorders what was retrieved, and its output is never taken as new context."""
    steps = []
    for s in shape.retrievers:
        query = s.attributes.get("gen_ai.retrieval.query.text")
        steps.append(_Step(s, query if isinstance(query, str) else _question(s, path),
                           documents(s, "retriever", path) or []))
    retrieved: set[tuple[str, str | None]] | None = None
    for r, step in zip(shape.rerankers, _consumed(shape.rerankers, steps, path)):
        if step is None:
            counts["rerankers_without_a_step"] += 1
            continue
        out = documents(r, "reranker", path) or []
        if retrieved is None:
            retrieved = {key for s in shape.every_retriever
                         for d in documents(s, "retriever", path) or [] for key in _keys(d)}
        stray = [i for i, d in enumerate(out) if not set(_keys(d)) & retrieved]
        if stray:
            raise InputError(f"reranker span {r.span} (trace {r.trace}) outputs "
                             f"{len(stray)} document{'s' if len(stray) != 1 else ''} no "
                             f"retriever of the trace returned (e.g. document {stray[0]}): a "
                             "reranker reorders what was retrieved", path)
        step.docs = out
        step.reranked = True
        counts["reranked_steps"] += 1
    return steps


def _keys(d: Doc) -> list[tuple[str, str | None]]:
    """What identifies a document across a retriever and a reranker: its content, or its
    id when it carries none (an id may name a whole corpus document its chunks share)."""
    if d.content is not None:
        return [("content", d.content)]
    return [("id", d.id)]


def _consumed(rerankers: list[Span], steps: list[_Step], path: str) -> list[_Step | None]:
    """For each reranker (in start order) the step it consumed: the latest step started
    before it, not consumed yet, whose documents are its input documents (by content, in
    order), else the latest one under the same parent. Each key's steps wait on a stack
    filled as the rerankers advance in time, so the pairing is linear in the spans."""
    order = sorted(range(len(steps)), key=lambda i: (steps[i].span.start, steps[i].span.span))
    stacks: dict[tuple[Any, ...], list[int]] = {}
    taken: set[int] = set()
    cursor = 0
    out: list[_Step | None] = []
    for r in rerankers:
        while cursor < len(order) and (steps[order[cursor]].span.start,
                                       steps[order[cursor]].span.span) <= (r.start, r.span):
            i = order[cursor]
            stacks.setdefault(("docs", tuple(d.content for d in steps[i].docs)), []).append(i)
            stacks.setdefault(("parent", steps[i].span.parent), []).append(i)
            cursor += 1
        given = tuple(d.content for d in documents(r, "reranker_input", path) or [])
        found = None
        for key in ([("docs", given)] if given else []) + [("parent", r.parent)]:
            stack = stacks.get(key, [])
            while stack and stack[-1] in taken:
                stack.pop()
            if stack:
                found = stack.pop()
                break
        if found is not None:
            taken.add(found)
        out.append(None if found is None else steps[found])
    return out


def _question(span: Span, path: str) -> str | None:
    """``question_text`` of a span, a JSON ``input.value`` nested too deeply an InputError
    naming the span and the key."""
    try:
        return question_text(span.attributes)
    except BadValue as exc:
        raise InputError(f"span {span.span} (trace {span.trace}): 'input.value': {exc}",
                         path) from None


def _question_ids(evalset: EvalSet, by_trace: dict[str, list[Span]], attribute: str | None,
                  path: str) -> dict[str, str]:
    """Trace id -> question id (module docstring)."""
    ids = {q.id for q in evalset.queries}
    out: dict[str, str] = {}
    if attribute is not None:
        for trace, members in by_trace.items():
            found = set()
            for s in members:
                try:
                    value = lookup(s.attributes, attribute)
                except BadValue as exc:
                    raise InputError(f"span {s.span} (trace {trace}): '{attribute}': {exc}",
                                     path) from None
                if value is not None and not isinstance(value, (dict, list)):
                    found.add(str(value))
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
        known = {s.span for s in members}
        roots = sorted((s for s in members if not s.parent or s.parent not in known),
                       key=lambda s: (s.start, s.span))
        text = _question(roots[0], path) if roots else None
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


def _check_calls(shapes: dict[str, _Shape], path: str) -> None:
    """A question with more retriever calls than a run row may hold (``MAX_STEPS``) is
    refused with its count as soon as the traces' structure is read, before a document is
    read or paired."""
    long = {q: len(shape.retrievers) for q, shape in shapes.items()
            if len(shape.retrievers) > MAX_STEPS}
    if long:
        first = min(long)
        who = "1 question has" if len(long) == 1 else f"{len(long)} questions have"
        raise InputError(f"{who} more than {MAX_STEPS} retriever calls, the most a run row "
                         f"holds (e.g. '{first}': {long[first]:,})", path)


def _check_scores(steps_of: dict[str, list[_Step]], path: str) -> None:
    """A document score that is not a finite number (NaN, infinite, text), which ``score``
    would refuse, is refused here with its count before a document is placed."""
    bad: list[str] = []
    for steps in steps_of.values():
        for step in steps:
            for i, d in enumerate(step.docs):
                if d.score is None:
                    continue
                if isinstance(d.score, bool) or not isinstance(d.score, (int, float)) \
                        or not math.isfinite(d.score):
                    bad.append(f"span {step.span.span} document {i}: {shown(d.score)}")
    if bad:
        what = "1 document score is not a finite number" if len(bad) == 1 else \
            f"{len(bad)} document scores are not finite numbers"
        raise InputError(f"{what} (e.g. {bad[0]}): a run's scores must be", path)


def trace_run(spans: list[Span], path: str, evalset: EvalSet, corpus: Corpus,
              opts: TraceOptions) -> TraceRun:
    """The steps run of ``spans`` for ``evalset``'s questions over ``corpus``."""
    by_trace: dict[str, list[Span]] = {}
    ids: set[tuple[str, str]] = set()
    for s in spans:
        if (s.trace, s.span) in ids:
            raise InputError(f"span {s.span} appears twice in trace {s.trace}: a trace's span "
                             "ids are unique", path)
        ids.add((s.trace, s.span))
        by_trace.setdefault(s.trace, []).append(s)
    asked = _question_ids(evalset, by_trace, opts.query_id_attribute, path)
    seen: dict[str, str] = {}
    for trace, qid in sorted(asked.items()):
        if qid in seen:
            raise InputError(f"question '{qid}' has two traces ({seen[qid]}, {trace})", path)
        seen[qid] = trace
    counts = {k: 0 for k in ("nested_calls_folded", "reranked_steps",
                             "rerankers_inside_a_retriever", "rerankers_without_a_step")}
    shapes = {qid: _shape_of(by_trace[trace], path, counts) for qid, trace in seen.items()}
    _check_calls(shapes, path)
    steps_of = {qid: _steps_of(shape, path, counts) for qid, shape in shapes.items()}
    _check_scores(steps_of, path)
    places = Places(corpus, opts, path)
    rows: list[RunRow] = []
    total = 0
    for q in evalset.queries:
        if q.id not in steps_of:
            continue
        steps: list[RunStep] = []
        for step in steps_of[q.id]:
            retrieved = []
            for i, d in enumerate(step.docs):
                item = places.place(d, q.doc_id, f"span {step.span.span} (trace "
                                    f"{step.span.trace}) document {i}")
                if item is not None:
                    retrieved.append(item)
            steps.append(RunStep(query=UNSET if step.query is None else step.query,
                                 retrieved=retrieved))
        total += len(steps)
        rows.append(RunRow(id=q.id, steps=steps or [RunStep(retrieved=[])]))
    if places.unplaceable:
        n = len(places.unplaceable)
        raise InputError(f"{n} document{'s' if n != 1 else ''} carry no content and no id "
                         f"that names a chunk of --chunks or a corpus document, so "
                         f"{'they' if n != 1 else 'it'} cannot be placed (e.g. "
                         f"{places.unplaceable[0]}): give --chunks, the manifest of the "
                         "chunks those ids name", path)
    unmatched = sorted(t for t in by_trace if t not in asked)
    missing = [q.id for q in evalset.queries if q.id not in seen]
    counts = {"traces": len(by_trace), "questions_with_a_trace": len(rows),
              "traces_without_a_question": len(unmatched),
              "questions_without_a_trace": len(missing), "steps": total, **counts,
              **places.counts}
    details = ImportDetails(traces_without_a_question=unmatched[:LISTED],
                            questions_without_a_trace=missing[:LISTED])
    return TraceRun(rows, counts, details)
