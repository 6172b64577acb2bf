"""Payload filters over chunks: a query's filters -> the chunk indices they allow."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.records.retrieval import Filters, Payload


def query_filters(scope: str, doc_id: str | None, filters: Filters) -> Filters:
    """``doc_id`` (and ``doc_id-or-all``): the query's own document plus its filters;
    ``filters``: its filters only; ``none``: corpus-wide. A query without a document under
    ``doc_id`` is refused before any search (``unscoped_rows``)."""
    if scope == "none":
        return {}
    out = dict(filters)
    if scope in ("doc_id", "doc_id-or-all") and doc_id is not None:
        out["doc_id"] = doc_id
    return out


def unscoped_rows(scope: str, queries: list[Any], path: str | None = None,
                  flag: bool = False) -> int:
    """How many queries have no ``doc_id`` to scope by. Under ``scope = "doc_id"`` one is an
    InputError naming the first (and the count; ``flag``: the scope came from ``--scope``,
    which the message names, else a config's ``[filter] scope``): a scoped search must never silently
    become a corpus-wide one; under ``doc_id-or-all`` they are counted (and searched
    corpus-wide); other scopes do not use the document (0)."""
    if scope not in ("doc_id", "doc_id-or-all"):
        return 0
    missing = [q.id for q in queries if q.doc_id is None]
    if missing and scope == "doc_id":
        where, fix = (("--scope is doc_id (the default)", "give --scope doc_id-or-all") if flag
                      else ("the config's [filter] scope is \"doc_id\"",
                            "set [filter] scope = \"doc_id-or-all\""))
        raise InputError(f"query '{missing[0]}' has no 'doc_id' but {where} ({len(missing)} "
                         f"of {len(queries)} rows lack one): give each row its doc_id, or "
                         f"{fix} to search those rows corpus-wide", path)
    return len(missing)


class PayloadTable:
    """One payload per chunk (``doc_id`` plus the document's scalar metadata)."""

    def __init__(self, payloads: list[Payload]):
        self.payloads = payloads
        self.keys = {k for p in payloads for k in p}
        self._index: dict[str, dict[Any, list[int]]] = {}
        self._allowed: dict[str, np.ndarray] = {}  # queries of one document share its filter

    def _values(self, key: str) -> dict[Any, list[int]]:
        if key not in self._index:
            table: dict[Any, list[int]] = {}
            for i, p in enumerate(self.payloads):
                if key in p:
                    table.setdefault(p[key], []).append(i)
            self._index[key] = table
        return self._index[key]

    def allowed(self, filters: Filters, qid: str) -> np.ndarray | None:
        """Chunk indices matching every filter (a list value matches any of its items);
        ``None`` when there is no filter. A key no chunk carries, or a filter nothing
        matches, is an error naming the query."""
        if not filters:
            return None
        key = json.dumps(filters, sort_keys=True, default=str)
        if key not in self._allowed:
            self._allowed[key] = self._match(filters, qid)
        return self._allowed[key]

    def _match(self, filters: Filters, qid: str) -> np.ndarray:
        mask: set[int] | None = None
        for key, value in sorted(filters.items()):
            if key not in self.keys:
                raise InputError(f"query '{qid}': filter on '{key}', which no document carries")
            table = self._values(key)
            wanted = value if isinstance(value, list) else [value]
            hits = {i for v in wanted for i in table.get(v, [])}
            mask = hits if mask is None else mask & hits
        if not mask:
            raise InputError(f"query '{qid}': filters {filters} match no chunk")
        return np.array(sorted(mask), dtype=np.int64)
