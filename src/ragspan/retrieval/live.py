"""Evaluate the index you run: a Qdrant collection built by your own pipeline, read-only.

``run-retriever --collection NAME`` (with ``--qdrant-url`` or ``--qdrant-path``) embeds the
eval set's queries with the named model (through the embedding cache), searches the
collection exactly (``SearchParams(exact=True)``; its HNSW graph only with ``--hnsw-ef``, on a
server, recorded) with its vector (``--vector-name`` for a
named one) and each query's filters as payload filters, in batches (``query_batch_points``),
and turns each point's payload into a run item: the document id (``--doc-key``, default
``doc_id``), offsets (``--start-key``/``--end-key``) and the chunk text (``--text-key``).
Offsets are checked against the text where both are given; a text without offsets is placed in
the corpus (``io.runs.anchoring``), so an index that stores only chunk text can be scored.

Nothing is written to the collection: the client is wrapped in ``ReadOnlyClient``, which lets
only reads through (``READS``) and refuses anything else before it reaches the server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError, MissingExtraError, RagspanError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.io.runs.anchoring import Anchor
from ragspan.records.retrieval import Collection, PayloadKeys, Search, TextPlacement, Vector
from ragspan.records.run_rows import RunRow
from ragspan.retrieval.filters import query_filters
from ragspan.retrieval.index import payload_filter, search_params
from ragspan.retrieval.user import span_row

READS = frozenset({"collection_exists", "get_collection", "count", "query_batch_points",
                   "close"})


class ReadOnlyClient:
    """A qdrant client through which only ``READS`` pass; ``calls`` lists them in order."""

    def __init__(self, client: Any):
        self._client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name not in READS:
            raise RagspanError(f"internal error: '{name}' is not a read; a collection ragspan "
                               "evaluates is never written to")
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return method(*args, **kwargs)

        return call


@dataclass(frozen=True)
class LiveSpec:
    """Where the collection is and how its payloads map to run items."""

    collection: str
    url: str | None = None
    path: str | None = None
    vector_name: str | None = None
    hnsw_ef: int | None = None  # None: exact search; else HNSW with this beam (a server only)
    doc_key: str = "doc_id"
    start_key: str = "start"
    end_key: str = "end"
    text_key: str = "text"
    depth: int = 10
    batch: int = 64
    scope: str = "doc_id"


def connect(spec: LiveSpec) -> ReadOnlyClient:
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise MissingExtraError("qdrant_client", "retrieval") from None
    if (spec.url is None) == (spec.path is None):
        raise UsageError("--collection needs exactly one of --qdrant-url or --qdrant-path")
    if spec.hnsw_ef is not None and spec.url is None:
        raise UsageError("--hnsw-ef searches a server's HNSW graph: local mode (--qdrant-path) "
                         "always searches exactly")
    if spec.hnsw_ef is not None and spec.hnsw_ef < spec.depth:
        raise UsageError(f"--hnsw-ef {spec.hnsw_ef} is below --depth {spec.depth}: the search "
                         "beam must hold the results it returns")
    where = spec.url or spec.path
    if spec.path is not None and not os.path.isdir(spec.path):
        raise InputError(f"--qdrant-path {spec.path}: no such folder (a collection is "
                         "evaluated read-only, so none is created)")
    try:
        client = QdrantClient(url=spec.url) if spec.url else QdrantClient(path=spec.path)
        ro = ReadOnlyClient(client)
        exists = ro.collection_exists(spec.collection)
    except RagspanError:
        raise
    except Exception as exc:  # connection refused, auth, a locked local store
        raise UsageError(f"cannot use Qdrant at {where}: {exc}") from None
    if not exists:
        raise UsageError(f"Qdrant at {where} has no collection '{spec.collection}'")
    return ro


def searched_with(spec: LiveSpec, vector_name: bool = True) -> Search:
    """How the index was searched, as the run's header records it: exact or the graph's
    beam, the depth, the scope, the vector (``vector_name`` False: left out, as a
    collection's search leaves it) and the payload keys."""
    return Search(exact=spec.hnsw_ef is None, limit=spec.depth, batch=spec.batch,
                  scope=spec.scope, vector_name=spec.vector_name if vector_name else UNSET,
                  hnsw_ef=UNSET if spec.hnsw_ef is None else spec.hnsw_ef,
                  payload_keys=PayloadKeys(spec.doc_key, spec.start_key, spec.end_key,
                                           spec.text_key))


def describe(client: ReadOnlyClient, spec: LiveSpec) -> Collection:
    """The collection as the run report records it: name, point count, vector config."""
    info = client.get_collection(spec.collection)
    vectors = info.config.params.vectors
    if isinstance(vectors, dict):
        if spec.vector_name is None:
            raise UsageError(f"collection '{spec.collection}' has named vectors "
                             f"({', '.join(sorted(vectors))}): give --vector-name")
        if spec.vector_name not in vectors:
            raise UsageError(f"collection '{spec.collection}' has no vector "
                             f"'{spec.vector_name}' ({', '.join(sorted(vectors))})")
        params = vectors[spec.vector_name]
    else:
        if spec.vector_name is not None:
            raise UsageError(f"collection '{spec.collection}' has one unnamed vector: drop "
                             "--vector-name")
        params = vectors
    return Collection(
        name=spec.collection, points=int(client.count(spec.collection, exact=True).count),
        vector=Vector(spec.vector_name, int(params.size),
                      str(getattr(params.distance, "value", params.distance))),
        search=searched_with(spec, vector_name=False))


def _item(point: Any, spec: LiveSpec, qid: str, rank: int) -> tuple[Any, Any, Any, Any, Any]:
    """A point's payload as a run item; a value of the wrong type is an InputError naming
    the query, the result, the point and the payload key (never written into the run)."""
    payload = point.payload or {}
    doc, text = payload.get(spec.doc_key), payload.get(spec.text_key)
    start, end = payload.get(spec.start_key), payload.get(spec.end_key)
    where = f"query '{qid}': result {rank} (point {point.id})"
    if doc is None and text is None:
        raise InputError(f"{where} has neither '{spec.doc_key}' nor '{spec.text_key}' in its "
                         "payload")
    checks = ((spec.doc_key, doc, (str, int), "a document id (a string)"),
              (spec.start_key, start, (int,), "an integer offset"),
              (spec.end_key, end, (int,), "an integer offset"),
              (spec.text_key, text, (str,), "a string"))
    for key, value, types, what in checks:
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise InputError(f"{where}: payload '{key}' is {value!r}, expected {what}")
    return doc, start, end, float(point.score), text


def search(client: ReadOnlyClient, spec: LiveSpec, queries: list[EvalQuery],
           vectors: np.ndarray, progress: Any = None) -> list[list[tuple[Any, ...]]]:
    """Per query, its results as ``(doc_id, start, end, score, text)``, best first (ties by
    point id), from batched searches (exact unless ``hnsw_ef``)."""
    from qdrant_client import models

    out: list[list[tuple[Any, ...]]] = []
    for lo in range(0, len(queries), spec.batch):
        part = queries[lo:lo + spec.batch]
        requests = [models.QueryRequest(
            query=vectors[lo + i].tolist(), using=spec.vector_name, limit=spec.depth,
            filter=payload_filter(models, query_filters(spec.scope, q.doc_id, q.filters),
                                  {"doc_id": spec.doc_key}),
            params=search_params(models, spec.url, spec.hnsw_ef),
            with_payload=True)
            for i, q in enumerate(part)]
        for q, res in zip(part, client.query_batch_points(spec.collection, requests)):
            pts = sorted(res.points, key=lambda p: (-p.score, str(p.id)))
            out.append([_item(p, spec, q.id, r) for r, p in enumerate(pts, start=1)])
        if progress:
            progress("querying", min(lo + spec.batch, len(queries)), len(queries))
    return out


def run_live(spec: LiveSpec, queries: list[EvalQuery], corpus: Corpus, embedder: Any,
             progress: Any = None) -> tuple[list[RunRow], Collection]:
    """The span run of the collection over ``queries``, and what the report records of it
    (the collection, the placement counts, the calls made: reads only)."""
    client = connect(spec)
    try:
        info = describe(client, spec)
        vectors = embedder.embed([q.query for q in queries], "embedding queries")
        if vectors.shape[1] != info.vector.size:
            raise UsageError(f"the query model gives {vectors.shape[1]} dimensions, the "
                             f"collection's vectors have {info.vector.size}: give the "
                             "model that built it (--model)")
        results = search(client, spec, queries, vectors, progress)
    finally:
        client.close()
    anchor = Anchor(corpus, {q.id: q.doc_id for q in queries}, suggest_flags=False)
    rows = [span_row(q, raw, None, corpus, anchor, None, spec.doc_key, False)
            for q, raw in zip(queries, results)]
    placed = anchor.summary()
    info.placement = TextPlacement() if placed is None else placed
    info.calls = sorted(set(client.calls))
    return rows, info
