"""User retrievers: ``--retriever module:attr`` or ``module:factory()``. This imports and runs
user code (the current directory is on the import path).

The object may be:

- a LangChain retriever (``invoke(query) -> [Document]``): each Document's metadata must
  carry the doc id (``doc_id``, else ``source``, else ``id``) and ``start_index`` (as
  ``RecursiveCharacterTextSplitter(add_start_index=True)`` produces); the end is
  ``start_index + len(page_content)``;
- a LlamaIndex retriever (``retrieve(query) -> [NodeWithScore]``): nodes with
  ``start_char_idx``/``end_char_idx``; the doc id from ``metadata`` (same keys) or
  ``ref_doc_id``;
- a callable ``f(query)`` or ``f(query, row)`` (``row``: ``{"id", "doc_id", "filters"}``)
  returning dicts ``{doc_id, start, end[, score]}`` or tuples ``(doc_id, start, end[, score])``.

A result without offsets or doc id, or outside its document, is an error naming the query.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
import time
from typing import Any

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery

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


def _doc_id(meta: dict[str, Any], fallback: Any = None) -> Any:
    for key in DOC_KEYS:
        if meta.get(key) not in (None, ""):
            return meta[key]
    return fallback


def _spans_from(obj: Any, query: EvalQuery) -> list[tuple[Any, Any, Any, Any]]:
    row = {"id": query.id, "doc_id": query.doc_id, "filters": query.filters}
    if hasattr(obj, "invoke") and not callable(getattr(obj, "retrieve", None)):
        out = []
        for d in obj.invoke(query.query):
            meta = dict(getattr(d, "metadata", {}) or {})
            start = meta.get("start_index")
            end = None if start is None else start + len(d.page_content)
            out.append((_doc_id(meta), start, end, meta.get("score")))
        return out
    if callable(getattr(obj, "retrieve", None)):
        out = []
        for nws in obj.retrieve(query.query):
            node = getattr(nws, "node", nws)
            meta = dict(getattr(node, "metadata", {}) or {})
            out.append((_doc_id(meta, getattr(node, "ref_doc_id", None)),
                        getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None),
                        getattr(nws, "score", None)))
        return out
    if not callable(obj):
        raise UsageError("the retriever is neither callable nor a LangChain/LlamaIndex retriever")
    try:
        takes_row = len(inspect.signature(obj).parameters) >= 2
    except (TypeError, ValueError):
        takes_row = False
    result = obj(query.query, row) if takes_row else obj(query.query)
    out = []
    for item in result or []:
        if isinstance(item, dict):
            out.append((item.get("doc_id"), item.get("start"), item.get("end"), item.get("score")))
        elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
            out.append((*item, None) if len(item) == 3 else tuple(item))
        else:
            raise InputError(f"query '{query.id}': a result must be a dict or "
                             f"(doc_id, start, end[, score]), got {type(item).__name__}")
    return out


def run_user_retriever(obj: Any, queries: list[EvalQuery], corpus: Corpus,
                       progress: Any = None) -> list[dict[str, Any]]:
    rows = []
    lengths = corpus.lengths()
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        try:
            raw = _spans_from(obj, q)
        except (InputError, UsageError):
            raise
        except Exception as exc:  # the user's code failed: say where, not a traceback
            raise InputError(f"query '{q.id}': the retriever raised {type(exc).__name__}: "
                             f"{exc}") from None
        latency = (time.perf_counter() - t0) * 1000.0
        spans = []
        for rank, (doc, start, end, score) in enumerate(raw, start=1):
            where = f"query '{q.id}': result {rank}"
            if doc is None:
                raise InputError(f"{where} has no doc id (metadata doc_id/source/id)")
            doc = str(doc)
            if doc not in lengths:
                raise InputError(f"{where}: '{doc}' is not a document of the corpus")
            if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
                raise InputError(f"{where} has no character offsets (start_index / "
                                 f"start_char_idx)")
            if not 0 <= start < end <= lengths[doc]:
                raise InputError(f"{where}: [{start}, {end}) is not inside '{doc}' "
                                 f"({lengths[doc]} characters)")
            item: dict[str, Any] = {"doc_id": doc, "start": start, "end": end}
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                if not math.isfinite(score):
                    raise InputError(f"{where} has the score {score!r}: a score must be a "
                                     "finite number (or absent)")
                item["score"] = float(score)
            spans.append(item)
        rows.append({"id": q.id, "retrieved": spans, "latency_ms": round(latency, 3)})
        if progress:
            progress("querying", n, len(queries))
    return rows
