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
the text is placed in the corpus (``io.anchoring``, with ``align``) and the placement
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


def _doc_id(meta: dict[str, Any], fallback: Any = None, id_key: str | None = None) -> Any:
    for key in (id_key,) if id_key else DOC_KEYS:
        if meta.get(key) not in (None, ""):
            return meta[key]
    return fallback


Raw = tuple[Any, Any, Any, Any, Any]  # (doc_id, start, end, score, text)


def _spans_from(obj: Any, query: EvalQuery, id_key: str | None = None) -> list[Raw]:
    """The retriever's results for ``query`` as ``(doc_id, start, end, score, text)``; any of
    them may be None (placement and the checks in ``run_user_retriever`` decide)."""
    row = {"id": query.id, "doc_id": query.doc_id, "filters": query.filters}
    if hasattr(obj, "invoke") and not callable(getattr(obj, "retrieve", None)):
        out: list[Raw] = []
        for d in obj.invoke(query.query):
            meta = dict(getattr(d, "metadata", {}) or {})
            text = getattr(d, "page_content", None)
            start = meta.get("start_index")
            end = None if start is None or text is None else start + len(text)
            doc = _doc_id(meta, None if id_key else getattr(d, "id", None), id_key)
            out.append((doc, start, end, meta.get("score"), text))
        return out
    if callable(getattr(obj, "retrieve", None)):
        out = []
        for nws in obj.retrieve(query.query):
            node = getattr(nws, "node", nws)
            meta = dict(getattr(node, "metadata", {}) or {})
            text = getattr(node, "text", None)
            fallback = None if id_key else (getattr(node, "ref_doc_id", None)
                                            or getattr(node, "node_id", None))
            out.append((_doc_id(meta, fallback, id_key),
                        getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None),
                        getattr(nws, "score", None), text if isinstance(text, str) else None))
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
            doc = item.get(id_key) if id_key else item.get("doc_id")
            out.append((doc, item.get("start"), item.get("end"), item.get("score"),
                        item.get("text")))
        elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
            out.append((*item, None, None) if len(item) == 3 else (*item, None))
        else:
            raise InputError(f"query '{query.id}': a result must be a dict or "
                             f"(doc_id, start, end[, score]), got {type(item).__name__}")
    return out


def run_user_retriever(obj: Any, queries: list[EvalQuery], corpus: Corpus,
                       progress: Any = None, depth: int | None = None,
                       id_key: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One run row per query, and the placement counts (``io.anchoring``; empty when no
    result carried its text). A result's text is checked against the corpus at its offsets,
    and placed by its text where they disagree (a page-relative ``start_index``) or are
    missing (recorded in the row's ``placed``), never taken as is. The same span twice keeps
    its first rank; ``depth`` then keeps the first ``depth``."""
    from ragspan.io.anchoring import Anchor

    anchor = Anchor(corpus, {q.id: q.doc_id for q in queries}, align=True)
    rows = []
    lengths = corpus.lengths()
    for n, q in enumerate(queries, start=1):
        t0 = time.perf_counter()
        try:
            raw = _spans_from(obj, q, id_key)
        except (InputError, UsageError):
            raise
        except Exception as exc:  # the user's code failed: say where, not a traceback
            raise InputError(f"query '{q.id}': the retriever raised {type(exc).__name__}: "
                             f"{exc}") from None
        latency = (time.perf_counter() - t0) * 1000.0
        spans: list[dict[str, Any]] = []
        seen: set[tuple[str, int, int]] = set()
        for rank, (doc, start, end, score, text) in enumerate(raw, start=1):
            where = f"query '{q.id}': result {rank}"
            if text is not None:
                placed = anchor.resolve("retrieved", rank - 1, q.id,
                                        None if doc is None else str(doc), start, end, text,
                                        None, None)
                if placed is not None:
                    doc, start, end = placed
            if doc is None:
                raise InputError(f"{where} has no doc id (metadata "
                                 f"{id_key or 'doc_id/source/id'})")
            doc = str(doc)
            if doc not in lengths:
                raise InputError(f"{where}: '{doc}' is not a document of the corpus")
            if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
                raise InputError(f"{where} has no character offsets (start_index / "
                                 f"start_char_idx) and no text to place")
            if not 0 <= start < end <= lengths[doc]:
                raise InputError(f"{where}: [{start}, {end}) is not inside '{doc}' "
                                 f"({lengths[doc]} characters)")
            if (doc, start, end) in seen:
                continue  # the same span again: its first rank counts
            seen.add((doc, start, end))
            item: dict[str, Any] = {"doc_id": doc, "start": start, "end": end}
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                if not math.isfinite(score):
                    raise InputError(f"{where} has the score {score!r}: a score must be a "
                                     "finite number (or absent)")
                item["score"] = float(score)
            spans.append(item)
        row: dict[str, Any] = {"id": q.id, "retrieved": spans[:depth] if depth else spans,
                               "latency_ms": round(latency, 3)}
        if q.id in anchor.records:
            row["placed"] = anchor.records[q.id]
        rows.append(row)
        if progress:
            progress("querying", n, len(queries))
    return rows, anchor.summary() or {}
