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

from ragspan.base.errors import InputError
from ragspan.io.chunks import ChunkManifest
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet
from ragspan.io.placement import DEFAULT_THRESHOLD
from ragspan.io.runs.steps import MAX_STEPS
from ragspan.io.runs.trace_documents import Doc, documents, lookup, question_text, role
from ragspan.io.runs.trace_otlp import Span, shown
from ragspan.io.runs.trace_places import Places

LISTED = 20
MAX_DEPTH = 10_000  # parents followed up a span's ancestry


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

    rows: list[dict[str, Any]]
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


# ---- the structure of a trace --------------------------------------------------------------


def _inside(span: Span, spans: Mapping[str, Span], kinds: set[str]) -> bool:
    """Whether an ancestor of ``span`` (same trace) has one of ``kinds`` as its role."""
    seen = {span.span}
    parent = span.parent
    for _ in range(MAX_DEPTH):
        if not parent or parent in seen or parent not in spans:
            return False
        seen.add(parent)
        up = spans[parent]
        if role(up) in kinds:
            return True
        parent = up.parent
    return False


@dataclass
class _Step:
    span: Span
    query: str | None
    docs: list[Doc]
    reranked: bool = False


def _steps_of(members: list[Span], path: str, counts: dict[str, int]) -> list[_Step]:
    """The steps of one trace: outermost retriever spans in start order, each with the
    documents the model saw (a reranker's output where one consumed it)."""
    spans = {s.span: s for s in members}
    steps: list[_Step] = []
    rerankers: list[Span] = []
    for s in sorted(members, key=lambda x: (x.start, x.span)):
        kind = role(s)
        if kind is None:
            continue
        if _inside(s, spans, {"retriever"}):
            counts["nested_calls_folded" if kind == "retriever"
                   else "rerankers_inside_a_retriever"] += 1
            continue
        if kind == "retriever":
            query = s.attributes.get("gen_ai.retrieval.query.text")
            steps.append(_Step(s, query if isinstance(query, str) else question_text(
                s.attributes), documents(s, "retriever", path) or []))
        else:
            rerankers.append(s)
    for r in rerankers:
        step = _consumed(r, steps, path)
        if step is None:
            counts["rerankers_without_a_step"] += 1
            continue
        step.docs = documents(r, "reranker", path) or []
        step.reranked = True
        counts["reranked_steps"] += 1
    return steps


def _consumed(reranker: Span, steps: list[_Step], path: str) -> _Step | None:
    """The step a reranker consumed: the latest one started before it whose documents are
    its input documents (by content), else the latest one under the same parent."""
    before = [s for s in steps if (s.span.start, s.span.span) <= (reranker.start, reranker.span)
              and not s.reranked]
    given = [d.content for d in documents(reranker, "reranker_input", path) or []]
    for step in reversed(before):
        if given and [d.content for d in step.docs] == given:
            return step
    for step in reversed(before):
        if step.span.parent == reranker.parent:
            return step
    return None


def _question_ids(evalset: EvalSet, by_trace: dict[str, list[Span]], attribute: str | None,
                  path: str) -> dict[str, str]:
    """Trace id -> question id (module docstring)."""
    ids = {q.id for q in evalset.queries}
    out: dict[str, str] = {}
    if attribute is not None:
        for trace, members in by_trace.items():
            found = set()
            for s in members:
                value = lookup(s.attributes, attribute)
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
        text = question_text(roots[0].attributes) if roots else None
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


def _check_importable(steps_of: dict[str, list[_Step]], path: str) -> None:
    """What ``score`` refuses is refused here, with its count, before a document is placed:
    a question with more retriever calls than a run row may hold (``MAX_STEPS``), and a
    document score that is not a finite number (NaN, infinite, text)."""
    long = {q: len(steps) for q, steps in steps_of.items() if len(steps) > MAX_STEPS}
    if long:
        first = min(long)
        who = "1 question has" if len(long) == 1 else f"{len(long)} questions have"
        raise InputError(f"{who} more than {MAX_STEPS} retriever calls, the most a run row "
                         f"holds (e.g. '{first}': {long[first]:,})", path)
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
    steps_of = {qid: _steps_of(by_trace[trace], path, counts) for qid, trace in seen.items()}
    _check_importable(steps_of, path)
    places = Places(corpus, opts, path)
    rows: list[dict[str, Any]] = []
    total = 0
    for q in evalset.queries:
        if q.id not in steps_of:
            continue
        steps: list[dict[str, Any]] = []
        for step in steps_of[q.id]:
            retrieved = []
            for i, d in enumerate(step.docs):
                item = places.place(d, q.doc_id, f"span {step.span.span} (trace "
                                    f"{step.span.trace}) document {i}")
                if item is not None:
                    retrieved.append(item)
            steps.append({"query": step.query, "retrieved": retrieved}
                         if step.query is not None else {"retrieved": retrieved})
        total += len(steps)
        rows.append({"id": q.id, "steps": steps or [{"retrieved": []}]})
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
    details = {"traces_without_a_question": unmatched[:LISTED],
               "questions_without_a_trace": missing[:LISTED]}
    return TraceRun(rows, counts, details)
