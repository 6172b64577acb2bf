"""One vector-index interface, two backends.

- ``exact`` (default): exact inner-product search with numpy over L2-normalised vectors (=
  cosine). An evaluation should carry no approximate-search noise. Ties: lower chunk index
  first.
- ``qdrant``: qdrant-client with ``:memory:``, an on-disk local store (``path``) or a server
  (``url``). Its local mode is slow (it scores in Python; measured about 32 queries/s
  unfiltered and 4/s with a payload filter over 20,000 points); use a server for scale.
  The collection is ragspan's own, uniquely named (``ragspan-<random>``, or the name given,
  which must not exist: ragspan never overwrites or deletes a collection it did not create);
  points go up through the client's bulk upload, every filter key gets a payload index, the
  search is exact (``SearchParams(exact=True)``: no approximate-search noise in an
  evaluation) unless HNSW is asked for by name (``Hnsw``: a server only), and ``close``
  deletes the collection unless it is kept (``keep``).

``search(q, k, allowed)`` returns ``(indices, scores)`` of the top ``k`` chunks, restricted
to the chunk indices in ``allowed`` when given (a payload filter).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragspan.base.errors import MissingExtraError, UsageError
from ragspan.records.retrieval import Filters, Payload


@dataclass(frozen=True)
class Hnsw:
    """Approximate search on a Qdrant server, asked for by name (``[dense] search =
    "hnsw"``): the graph's links per point (``m``) and build beam (``ef_construct``), and
    the beam of each search (``ef``)."""

    m: int
    ef_construct: int
    ef: int


def search_params(models: Any, url: str | None, hnsw_ef: int | None = None) -> Any:
    """The ``SearchParams`` of every query: exact on a server unless an HNSW beam is given;
    None in local mode (which always compares every vector)."""
    if not url:
        return None
    if hnsw_ef is None:
        return models.SearchParams(exact=True)
    return models.SearchParams(exact=False, hnsw_ef=hnsw_ef)


class VectorIndex(Protocol):
    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None,
               filters: Filters | None = None) -> tuple[np.ndarray, np.ndarray]: ...


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores, best first; ties broken by lower index."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < scores.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(scores.shape[0])
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][:k]


class ExactIndex:
    def __init__(self, vectors: np.ndarray):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None,
               filters: Filters | None = None,  # noqa: ARG002 - the protocol's; rows by allowed
               ) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            scores = self.vectors @ query
            idx = top_k(scores, k)
            return idx, scores[idx]
        scores = self.vectors[allowed] @ query
        idx = top_k(scores, k)
        return allowed[idx], scores[idx]


class QdrantIndex:
    """Points carry the chunk index as id and ``doc_id`` plus the document's metadata as
    payload, so a query's filters become Qdrant payload filters."""

    def __init__(self, vectors: np.ndarray, payloads: list[Payload], *,
                 location: str = ":memory:", path: str | None = None, url: str | None = None,
                 collection: str | None = None, keep: bool = False, batch_size: int = 512,
                 parallel: int = 1, hnsw: Hnsw | None = None):
        try:
            from qdrant_client import QdrantClient, models
        except ImportError:
            raise MissingExtraError("qdrant_client", "retrieval") from None
        self.models = models
        if url:
            self.client = QdrantClient(url=url)
        elif path:
            self.client = QdrantClient(path=path)
        else:
            self.client = QdrantClient(location=location)
        self.collection = collection or f"ragspan-{uuid.uuid4().hex[:12]}"
        self.url = url
        self.keep = keep
        self.created = False
        self.hnsw = hnsw
        dim = int(vectors.shape[1])
        where = url or path or location
        if hnsw is not None and not url:
            self.client.close()
            raise UsageError("[dense] search = \"hnsw\" needs a Qdrant server (qdrant_url or "
                             f"--qdrant-url): {where} is local mode, which always searches "
                             "exactly")
        try:
            exists = self.client.collection_exists(self.collection)
        except Exception as exc:  # connection refused, auth, a locked local store
            raise UsageError(f"cannot use Qdrant at {where}: {exc}") from None
        if exists:
            raise UsageError(f"Qdrant collection '{self.collection}' already exists at {where}: "
                             "ragspan never overwrites a collection it did not create (name "
                             "another, or evaluate that one with --collection)")
        try:
            self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT),
                hnsw_config=None if hnsw is None else models.HnswConfigDiff(
                    m=hnsw.m, ef_construct=hnsw.ef_construct),
            )
            self.created = True
            if url:  # local mode has no payload indexes (and says so on every call)
                for key, kind in _payload_kinds(payloads).items():
                    self.client.create_payload_index(self.collection, key,
                                                     field_schema=models.PayloadSchemaType(kind))
            self.client.upload_collection(
                self.collection, vectors=np.ascontiguousarray(vectors, dtype=np.float32),
                payload=payloads, ids=list(range(len(payloads))), batch_size=batch_size,
                parallel=parallel, max_retries=3, wait=True)
        except UsageError:
            raise
        except Exception as exc:
            self.close()
            raise UsageError(f"cannot use Qdrant at {where}: {exc}") from None

    def _params(self) -> Any:
        return search_params(self.models, self.url, None if self.hnsw is None else self.hnsw.ef)

    def _filter(self, filters: Filters | None) -> Any:
        return payload_filter(self.models, filters)

    def search(self, query: np.ndarray, k: int,
               allowed: np.ndarray | None = None,  # noqa: ARG002 - the protocol's; filters here
               filters: Filters | None = None) -> tuple[np.ndarray, np.ndarray]:
        res = self.client.query_points(self.collection, query=query.tolist(), limit=k,
                                       query_filter=self._filter(filters), with_payload=False,
                                       search_params=self._params())
        pts = sorted(res.points, key=lambda p: (-p.score, int(p.id)))
        return (np.array([int(p.id) for p in pts], dtype=np.int64),
                np.array([p.score for p in pts], dtype=np.float64))

    def search_batch(self, queries: np.ndarray, k: int,
                     filters: list[Filters], batch: int = 64
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
        """``search`` for many queries, ``batch`` per request (``query_batch_points``)."""
        m = self.models
        params = self._params()
        out = []
        for lo in range(0, len(queries), batch):
            requests = [m.QueryRequest(query=queries[i].tolist(), limit=k,
                                       filter=payload_filter(m, filters[i]), params=params,
                                       with_payload=False)
                        for i in range(lo, min(lo + batch, len(queries)))]
            for res in self.client.query_batch_points(self.collection, requests):
                pts = sorted(res.points, key=lambda p: (-p.score, int(p.id)))
                out.append((np.array([int(p.id) for p in pts], dtype=np.int64),
                            np.array([p.score for p in pts], dtype=np.float64)))
        return out

    def close(self) -> None:
        """Delete the collection this index created (unless ``keep``), then close the client;
        safe to call twice."""
        if self.created and not self.keep:
            try:
                self.client.delete_collection(self.collection)
            finally:
                self.created = False
        self.client.close()


def payload_filter(models: Any, filters: Filters | None,
                   keys: dict[str, str] | None = None) -> Any:
    """A query's filters as a Qdrant ``Filter`` (every condition must hold; a list matches
    any of its values); ``keys`` renames filter keys to payload keys. None without filters."""
    if not filters:
        return None
    must = []
    for key, value in sorted(filters.items()):
        field = (keys or {}).get(key, key)
        if isinstance(value, list):
            must.append(models.FieldCondition(key=field, match=models.MatchAny(any=value)))
        elif isinstance(value, (str, int, bool)):
            must.append(models.FieldCondition(key=field, match=models.MatchValue(value=value)))
        else:
            raise UsageError(f"filter '{key}': only strings, integers, booleans or lists")
    return models.Filter(must=must)


def _payload_kinds(payloads: list[Payload]) -> dict[str, str]:
    """A payload index schema for every key whose values are all strings, integers or
    booleans (the keys a filter can name)."""
    kinds: dict[str, set[str]] = {}
    for p in payloads:
        for key, value in p.items():
            kind = ("bool" if isinstance(value, bool) else "integer" if isinstance(value, int)
                    else "keyword" if isinstance(value, str) else "other")
            kinds.setdefault(key, set()).add(kind)
    return {k: next(iter(v)) for k, v in sorted(kinds.items()) if len(v) == 1 and "other" not in v}
