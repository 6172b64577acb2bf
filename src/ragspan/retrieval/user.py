"""User retrievers: ``--retriever module:attr`` or ``module:factory()``. This imports and runs
user code (the current directory is on the import path).

The object may be:

- a LangChain retriever (``invoke(query) -> [Document]``): the doc id from the metadata
  (``--id-key``, else ``doc_id``, ``source``, ``id``) or ``Document.id``; ``start_index`` (as
  ``RecursiveCharacterTextSplitter(add_start_index=True)`` produces) and the end
  ``start_index + len(page_content)``;
- a LlamaIndex retriever (``retrieve(query) -> [NodeWithScore]``): nodes with
  ``start_char_idx``/``end_char_idx``; the doc id from ``metadata`` (same keys), else
  ``ref_doc_id``, else ``node_id``;
- a callable ``f(query)`` or ``f(query, row)`` (``row``: ``{"id", "doc_id", "filters"}``)
  returning dicts ``{doc_id, start, end[, score][, text]}`` or tuples
  ``(doc_id, start, end[, score])``.

A result's text (``page_content``, the node's text, a dict's ``text``) is checked against the
corpus at its offsets; where they disagree (a page-relative ``start_index``) or are missing,
the text is placed in the corpus (``io.runs.anchoring``, with ``align``) and the placement
recorded in the row's ``placed``: an offset is never taken on trust. A result without doc id
is placed in its query's scope document, else the corpus. A result that has neither offsets
nor a placeable text, or lies outside its document, is an error naming the query.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus, doc_id_hint
from ragspan.io.evalset import EvalQuery
from ragspan.io.runs.anchoring import Anchor
from ragspan.records.retrieval import TextPlacement
from ragspan.records.run_rows import RunItem, RunRow

DOC_KEYS = ("doc_id", "source", "id")


def load_retriever(spec: str) -> Any:
    if ":" not in spec:
        raise UsageError(f"--retriever must be module:attr or module:factory(), got '{spec}'")
    module_name, attr = spec.split(":", 1)
    call = attr.endswith("()")
    attr = attr[:-2] if call else attr
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import '{module_name}': {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"'{module_name}' has no attribute '{attr}'")
        obj = getattr(obj, part)
    return obj() if call else obj


def _doc_id(meta: dict[str, Any], fallback: Any = None, id_key: str | None = None) -> Any:
    for key in (id_key,) if id_key else DOC_KEYS:
        if meta.get(key) not in (None, ""):
            return meta[key]
    return fallback


Raw = tuple[Any, Any, Any, Any, Any]  # (doc_id, start, end, score, text)


def langchain_raw(documents: Any, id_key: str | None = None) -> list[Raw]:
    """LangChain ``Document``s as ``Raw`` results (see the module docstring)."""
    out: list[Raw] = []
    for d in documents:
        meta = dict(getattr(d, "metadata", {}) or {})
        text = getattr(d, "page_content", None)
        start = meta.get("start_index")
        end = None if start is None or text is None else start + len(text)
        doc = _doc_id(meta, None if id_key else getattr(d, "id", None), id_key)
        out.append((doc, start, end, meta.get("score"), text))
    return out


def llamaindex_raw(nodes: Any, id_key: str | None = None) -> list[Raw]:
    """LlamaIndex ``NodeWithScore``s as ``Raw`` results (see the module docstring)."""
    out: list[Raw] = []
    for nws in nodes:
        node = getattr(nws, "node", nws)
        meta = dict(getattr(node, "metadata", {}) or {})
        text = getattr(node, "text", None)
        fallback = None if id_key else (getattr(node, "ref_doc_id", None)
                                        or getattr(node, "node_id", None))
        out.append((_doc_id(meta, fallback, id_key),
                    getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None),
                    getattr(nws, "score", None), text if isinstance(text, str) else None))
    return out


FRAMEWORK_METHODS = {"langchain": "invoke()", "llamaindex": "retrieve()",
                     "callable": "__call__"}


def _offers(obj: Any, framework: str) -> bool:
    if framework == "langchain":
        return hasattr(obj, "invoke")
    if framework == "llamaindex":
        return callable(getattr(obj, "retrieve", None))
    return callable(obj)


def framework_of(obj: Any, framework: str = "auto") -> str:
    """Which interface ``run_user_retriever`` calls on ``obj``: ``framework`` when named
    (``--framework``; a UsageError when ``obj`` lacks its method, naming what it is), else
    told by its methods: a callable ``retrieve`` is LlamaIndex, an ``invoke`` LangChain,
    anything else callable a callable."""
    if framework != "auto":
        if not _offers(obj, framework):
            found = framework_of(obj) if any(_offers(obj, f) for f in FRAMEWORK_METHODS) \
                else None
            raise UsageError(
                f"--framework {framework}: the retriever ({type(obj).__name__}) has no "
                f"{FRAMEWORK_METHODS[framework]}"
                + (f"; it looks like a {found} retriever (--framework {found} or auto)"
                   if found else ""))
        return framework
    for name in ("llamaindex", "langchain", "callable"):
        if _offers(obj, name):
            return name
    raise UsageError("the retriever is neither callable nor a LangChain/LlamaIndex retriever")


def _spans_from(obj: Any, query: EvalQuery, id_key: str | None = None,
                framework: str = "auto") -> list[Raw]:
    """The retriever's results for ``query`` as ``(doc_id, start, end, score, text)``; any of
    them may be None (placement and the checks in ``run_user_retriever`` decide).
    ``framework``: as ``framework_of`` resolves it."""
    row = {"id": query.id, "doc_id": query.doc_id, "filters": query.filters}
    kind = framework_of(obj, framework)
    if kind == "langchain":
        return langchain_raw(obj.invoke(query.query), id_key)
    if kind == "llamaindex":
        return llamaindex_raw(obj.retrieve(query.query), id_key)
    try:
        takes_row = len(inspect.signature(obj).parameters) >= 2
    except (TypeError, ValueError):
        takes_row = False
    result = obj(query.query, row) if takes_row else obj(query.query)
    out: list[Raw] = []
    for item in result or []:
        if isinstance(item, str):  # a doc id alone (BEIR-style)
            out.append((item, None, None, None, None))
        elif isinstance(item, dict):
            doc = item.get(id_key) if id_key else item.get("doc_id")
            out.append((doc, item.get("start"), item.get("end"), item.get("score"),
                        item.get("text")))
        elif isinstance(item, (tuple, list)) and len(item) == 2:  # (doc_id, score)
            out.append((item[0], None, None, item[1], None))
        elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
            out.append((*item, None, None) if len(item) == 3 else (*item, None))
        else:
            raise InputError(f"query '{query.id}': a result must be a doc id, a dict, "
                             f"(doc_id, score) or (doc_id, start, end[, score]), got "
                             f"{type(item).__name__}")
    return out


@dataclass
class UserRun:
    """What a user retriever returned for every query: span rows (``retrieved``), or, when
    every result of every query was a doc id alone, doc rows ``(qid, doc ids, scores)``
    (a score NaN where none was given); ``placement``: the text placement counts."""

    level: str  # "span" or "doc"
    rows: list[RunRow]
    doc_rows: list[tuple[str, list[str], Any]]
    placement: TextPlacement | None  # None: no result gave a text
    latency_ms: list[float]  # per query, the retriever's wall time
    # an agent's: nested retriever calls folded into the outermost, steps reranked
    steps: dict[str, int] | None = None


def _id_only(r: Raw) -> bool:
    return r[1] is None and r[2] is None and r[4] is None


def run_user_retriever(obj: Any, queries: list[EvalQuery], corpus: Corpus,
                       progress: Any = None, depth: int | None = None,
                       id_key: str | None = None, framework: str = "auto") -> UserRun:
    """Run ``obj`` on every query. A result's text is checked against the corpus at its
    offsets, and placed by its text where they disagree (a page-relative ``start_index``) or
    are missing (recorded in the row's ``placed``), never taken as is. The same span (or, at
    doc level, the same document) twice keeps its first rank; ``depth`` then keeps the first
    ``depth``. Results that are doc ids alone, for every query, give a doc-level run; ids
    alone mixed with spans are an error naming the first. ``framework``: which interface
    is called (``framework_of``), checked before the first query."""
    framework = framework_of(obj, framework)
    results = []
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        try:
            raw = _spans_from(obj, q, id_key, framework)
        except (InputError, UsageError):
            raise
        except Exception as exc:  # the user's code failed: say where, not a traceback
            raise InputError(f"query '{q.id}': the retriever raised {type(exc).__name__}: "
                             f"{exc}") from None
        results.append((q, raw, (time.perf_counter() - t0) * 1000.0))
        if progress:
            progress("querying", n, len(queries))
    every = [r for _, raw, _ in results for r in raw]
    if every and all(_id_only(r) for r in every):
        return UserRun("doc", [], _doc_rows(results, corpus, depth, id_key), None,
                       [lat for _, _, lat in results])
    anchor = Anchor(corpus, {q.id: q.doc_id for q in queries}, align=True,
                    suggest_flags=False)
    rows = [span_row(q, raw, latency, corpus, anchor, depth, id_key, bool(every))
            for q, raw, latency in results]
    return UserRun("span", rows, [], anchor.summary(), [lat for _, _, lat in results])


def _doc_rows(results: list[tuple[EvalQuery, list[Raw], float]], corpus: Corpus,
              depth: int | None, id_key: str | None) -> list[tuple[str, list[str], Any]]:
    out = []
    for q, raw, _ in results:
        docs: list[str] = []
        scores: list[float] = []
        for rank, (doc, _s, _e, score, _t) in enumerate(raw, start=1):
            where = f"query '{q.id}': result {rank}"
            if doc is None:
                raise InputError(f"{where} has no doc id (metadata "
                                 f"{id_key or 'doc_id/source/id'})")
            doc = str(doc)
            if doc not in corpus.documents:
                raise InputError(f"{where}: '{doc}' is not a document of the corpus")
            if doc in docs:
                continue  # the same document again: its first rank counts
            docs.append(doc)
            scores.append(_score(score, where) if score is not None else math.nan)
        keep = docs[:depth] if depth else docs
        out.append((q.id, keep, np.asarray(scores[:len(keep)], dtype=float)))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _score(score: Any, where: str) -> float:
    if not _is_number(score) or not math.isfinite(score):
        raise InputError(f"{where} has the score {score!r}: a score must be a finite number "
                         "(or absent)")
    return float(score)


def span_row(q: EvalQuery, raw: list[Raw], latency: float | None, corpus: Corpus, anchor: Any,
             depth: int | None, id_key: str | None, mixed_possible: bool) -> RunRow:
    """One query's span row from its raw results (``Raw``): texts checked or placed by
    ``anchor``, every span checked inside its document, repeats dropped (the first rank
    counts), then cut at ``depth``. A ``placed`` record's rank is the retriever's result
    number, before repeats are dropped. ``latency`` None: the row records no time."""
    spans = span_items(q, raw, corpus, anchor, depth, id_key, mixed_possible)
    return RunRow(id=q.id, retrieved=spans,
                  latency_ms=UNSET if latency is None else round(latency, 3),
                  placed=anchor.records.get(q.id, UNSET))


def span_items(q: EvalQuery, raw: list[Raw], corpus: Corpus, anchor: Any, depth: int | None,
               id_key: str | None, mixed_possible: bool, key: str = "retrieved"
               ) -> list[RunItem]:
    """The span items of one list of raw results (``span_row``; ``key`` names the list in
    placement records and errors: ``retrieved``, or ``steps[j].retrieved``)."""
    spans: list[RunItem] = []
    seen: set[tuple[str, int, int]] = set()
    for rank, (doc, start, end, score, text) in enumerate(raw, start=1):
        where = f"query '{q.id}': {'' if key == 'retrieved' else key + ' '}result {rank}"
        if _id_only((doc, start, end, score, text)) and mixed_possible:
            raise InputError(f"{where} is a doc id alone, while other results carry spans: "
                             "return spans (offsets or text) for every result, or doc ids "
                             "alone for every result (a doc-level run)")
        if text is not None:
            doc, start, end = anchor.resolve(key, rank - 1, q.id,
                                             None if doc is None else str(doc), start, end,
                                             text, None, None)
        if doc is None:
            raise InputError(f"{where} has no doc id (metadata "
                             f"{id_key or 'doc_id/source/id'})")
        doc = str(doc)
        if doc not in corpus.documents:
            raise InputError(f"{where}: '{doc}' is not a document of the corpus"
                             f"{doc_id_hint(doc, corpus.documents)} (--id-key names the "
                             "metadata key that holds the corpus id)")
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
            raise InputError(f"{where} has no character offsets (start_index / "
                             f"start_char_idx) and no text to place")
        size = len(corpus.text(doc))
        if not 0 <= start < end <= size:
            raise InputError(f"{where}: [{start}, {end}) is not inside '{doc}' "
                             f"({size} characters)")
        if (doc, start, end) in seen:
            continue  # the same span again: its first rank counts
        seen.add((doc, start, end))
        spans.append(RunItem(
            doc_id=doc, start=start, end=end,
            # other metadata "score" values are not scores; left out
            score=_score(score, where) if _is_number(score) else UNSET,
            text=corpus.text(doc)[start:end]))  # checked again when the run is scored
    return spans[:depth] if depth else spans
