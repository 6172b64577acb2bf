"""Qdrant's own engine in-process (``qdrant-edge-py``, the ``retrieval`` extra): segments,
payload indexes, exact and HNSW search, run here without a server.

``EdgeIndex`` (``[dense] backend = "qdrant-edge"``) indexes the chunks into an edge shard in
a temporary folder of its own (removed by ``close``): points carry the chunk index as id and
``doc_id`` plus the document's metadata as payload, every key a filter can name gets a
payload index, and a query's filters are payload conditions. The search is exact by default
(``SearchParams(exact=True)``: every vector of the filtered set, the same run as the exact
numpy index); with ``hnsw`` the shard builds Qdrant's graph (``optimize``) and searches it
with the beam ``ef``, and every query is searched exactly too, so that ``ann_recall`` (the
share of the exact top k the approximate search returned) is a number in the report. Ties:
lower chunk index first, as the exact index orders them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import numpy as np

from ragspan.base.errors import MissingExtraError, UsageError
from ragspan.records.retrieval import AnnRecall, Filters, Payload, Recall
from ragspan.retrieval.index import Hnsw, _payload_kinds, payload_filter

UPSERT_BATCH = 1_000
# Qdrant's default full-scan threshold: a (filtered) set whose vectors take less than this
# many KB is scanned exactly, so an eval corpus of under ~6,700 chunks of 384 dimensions never
# reaches its graph. With search = "hnsw" the graph is what is measured: the threshold is
# set to its least, 1 KB, so every search goes through the graph whatever the corpus size
FULL_SCAN_KB = 10_000
GRAPH_FULL_SCAN_KB = 1
KIND = {"keyword": "Keyword", "integer": "Integer", "bool": "Bool"}


def edge_module() -> Any:
    try:
        import qdrant_edge
    except ImportError:
        raise MissingExtraError("qdrant_edge", "retrieval") from None
    return qdrant_edge


def ordered(points: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scored points as ``(ids, scores)``, best first, ties by lower id."""
    pts = sorted(points, key=lambda p: (-p.score, int(p.id)))
    return (np.array([int(p.id) for p in pts], dtype=np.int64),
            np.array([p.score for p in pts], dtype=np.float64))


class EdgeIndex:
    def __init__(self, vectors: np.ndarray, payloads: list[Payload],
                 hnsw: Hnsw | None = None):
        qe = edge_module()
        self.qe = qe
        self.hnsw = hnsw
        self.recalls: list[float] = []
        self.dir = tempfile.mkdtemp(prefix="ragspan-edge-")
        dim = int(vectors.shape[1])
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Dot),
            hnsw_config=None if hnsw is None else qe.HnswIndexConfig(
                m=hnsw.m, ef_construct=hnsw.ef_construct,
                full_scan_threshold=GRAPH_FULL_SCAN_KB),
            # exact search needs no graph: indexing off; with hnsw, every segment indexed
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=0 if hnsw is None else 1))
        try:
            self.shard = qe.EdgeShard.create(self.dir, config)
            vecs = np.ascontiguousarray(vectors, dtype=np.float32)
            for lo in range(0, len(payloads), UPSERT_BATCH):
                hi = min(lo + UPSERT_BATCH, len(payloads))
                self.shard.update(qe.UpdateOperation.upsert_points(
                    [qe.Point(i, vecs[i].tolist(), payloads[i]) for i in range(lo, hi)]))
            for key, kind in _payload_kinds(payloads).items():
                self.shard.update(qe.UpdateOperation.create_field_index(
                    key, getattr(qe.PayloadSchemaType, KIND[kind])))
            self.in_graph = (0, len(payloads))  # (points in the graph, points in all)
            if hnsw is not None:
                self.shard.optimize()
                info = self.shard.info()
                self.in_graph = (int(info.indexed_vectors_count), int(info.points_count))
        except Exception as exc:
            self.close()
            raise UsageError(f"cannot build the Qdrant edge shard: {exc}") from None

    def _request(self, query: np.ndarray, k: int, filters: Filters | None,
                 exact: bool) -> Any:
        qe = self.qe
        params = qe.SearchParams(exact=True) if exact else qe.SearchParams(
            hnsw_ef=None if self.hnsw is None else self.hnsw.ef)
        return qe.QueryRequest(limit=k, query=qe.Query.Nearest(query.tolist()),
                               filter=payload_filter(qe, filters), params=params,
                               with_payload=False)

    def search(self, query: np.ndarray, k: int,
               allowed: np.ndarray | None = None,  # noqa: ARG002 - the index protocol's; filters here
               filters: Filters | None = None) -> tuple[np.ndarray, np.ndarray]:
        return self.search_batch(query[None, :], k, [filters])[0]

    def search_batch(self, queries: np.ndarray, k: int, filters: list[Filters | None],
                     batch: int = 64) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each query's top ``k``; with HNSW, each query's ``ann_recall`` is kept too."""
        qe = self.qe
        exact = self.hnsw is None
        out = []
        for lo in range(0, len(queries), batch):
            requests = [self._request(queries[i], k, filters[i], exact)
                        for i in range(lo, min(lo + batch, len(queries)))]
            got = self.shard.query_batch(qe.QueryBatchRequest(requests))
            out += [ordered(points) for points in got]
            if not exact:
                truth = self.shard.query_batch(qe.QueryBatchRequest(
                    [self._request(queries[i], k, filters[i], True)
                     for i in range(lo, min(lo + batch, len(queries)))]))
                self.recalls += [query_recall(ids.tolist(), [int(p.id) for p in points])
                                 for (ids, _), points in zip(out[lo:], truth)]
        return out

    def ann_recall(self, k: int) -> AnnRecall | None:
        """``ann_recall@k`` over the queries searched so far (None for exact search)."""
        if self.hnsw is None or not self.recalls:
            return None
        graph, points = self.in_graph
        return AnnRecall(**msgspec.structs.asdict(recall_summary(self.recalls, k)),
                         ef=self.hnsw.ef, m=self.hnsw.m, ef_construct=self.hnsw.ef_construct,
                         full_scan_threshold_kb=GRAPH_FULL_SCAN_KB, points_in_graph=graph,
                         points_scanned=points - graph)

    def close(self) -> None:
        """Close the shard and remove its folder; safe to call twice."""
        shard = getattr(self, "shard", None)
        if shard is not None:
            shard.close()
            self.shard = None
        shutil.rmtree(self.dir, ignore_errors=True)


def query_recall(found: Iterable[Any], truth: Iterable[Any]) -> float:
    """The share of an exact search's results (``truth``) the approximate one found (1.0
    when the exact search found nothing)."""
    want = set(truth)
    return len(want & set(found)) / len(want) if want else 1.0


def recall_summary(recalls: Sequence[float], k: int) -> Recall:
    """``ann_recall@k`` over queries: their count, mean, minimum and how many below 1."""
    r = np.asarray(recalls, dtype=float)
    return Recall(k=k, queries=int(r.size), mean=float(r.mean()) if r.size else 1.0,
                  min=float(r.min()) if r.size else 1.0, below_1=int((r < 1.0).sum()))
