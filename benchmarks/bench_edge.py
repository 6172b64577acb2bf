"""Benchmark: Qdrant's engine in-process (``qdrant-edge-py``, ``[dense] backend =
"qdrant-edge"``) against ragspan's exact numpy index, side by side, on N chunks (default
100,000) of 384 float32 dimensions and Q queries (default 1,000), half filtered to one of 200
documents (a payload index on ``doc_id``).

Prints, for each: the time to build (upload; for HNSW the graph, ``m = 16``,
``ef_construct = 100``), queries per second in batches of 64, and for HNSW its recall against
the exact top 10 (``ann_recall@10``) at two beams; peak memory of the process at the end.
The vectors are clustered as embeddings are (2,000 centres, each chunk a centre plus noise,
unit length); on unclustered random vectors, a graph's worst case, HNSW's recall is far
lower (about 0.59 at ef = 256 on 30,000 of them).
Then HNSW at 20,000 chunks, the graph searched whatever the size: ann_recall@10 and the
graph search's queries per second at hnsw_ef 16, 64 and 256.

    python benchmarks/bench_edge.py [n_chunks] [n_queries]
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from ragspan.retrieval.edge_index import EdgeIndex
from ragspan.retrieval.index import ExactIndex, Hnsw


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    """``n`` unit vectors, each a random centre plus noise."""
    noise = 0.08 * rng.standard_normal((n, centres.shape[1]))
    return unit(centres[rng.integers(0, len(centres), n)] + noise)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    q = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    rng = np.random.default_rng(20261203)
    centres = unit(rng.standard_normal((2_000, 384)))
    vecs = clustered(rng, centres, n)
    docs = np.arange(n) % 200
    payloads = [{"doc_id": f"d{int(d)}"} for d in docs]
    queries = clustered(rng, centres, q)
    filters = [None if i % 2 else {"doc_id": f"d{i % 200}"} for i in range(q)]
    allowed = [None if f is None else np.flatnonzero(docs == int(f["doc_id"][1:]))
               for f in filters]
    print(f"{n:,} chunks x 384 dims, {q:,} queries (half filtered to one of 200 documents)")
    print(f"{'':40}{'build s':>9}{'q/s':>10}  recall@10")

    t0 = time.perf_counter()
    exact = ExactIndex(vecs)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    truth = [exact.search(queries[i], 10, allowed[i])[0] for i in range(q)]
    qps = q / (time.perf_counter() - t0)
    print(f"{'numpy exact':40}{build:9.2f}{qps:10.0f}  1.000 (the reference)")

    t0 = time.perf_counter()
    edge = EdgeIndex(vecs, payloads)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = edge.search_batch(queries, 10, filters)
    qps = q / (time.perf_counter() - t0)
    edge.close()
    same = np.mean([g[0].tolist() == t.tolist() for g, t in zip(got, truth)])
    print(f"{'qdrant-edge exact':40}{build:9.2f}{qps:10.0f}  {same:.3f} (same top 10)")

    for ef in (64, 256):
        t0 = time.perf_counter()
        graph = EdgeIndex(vecs, payloads, hnsw=Hnsw(m=16, ef_construct=100, ef=ef))
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        graph.search_batch(queries, 10, filters)
        both = time.perf_counter() - t0  # the approximate search and its exact check
        recall = graph.ann_recall(10) or {}
        graph.close()
        print(f"{f'qdrant-edge hnsw ef={ef} (+exact check)':40}{build:9.2f}{q / both:10.0f}  "
              f"{recall.get('mean', float('nan')):.3f} (min {recall.get('min', 0):.2f})")
    beams(rng, centres)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:,.0f} MB")


def beams(rng: np.random.Generator, centres: np.ndarray, n: int = 20_000, q: int = 1_000,
          efs: tuple[int, ...] = (16, 64, 256)) -> None:
    """HNSW measured as HNSW at ``n`` chunks: one graph (m = 16, ef_construct = 100),
    searched through the graph at every size (full-scan threshold 1 KB, where Qdrant's
    default 10 MB would scan these 30 MB of vectors exactly only below ~6,700 chunks), at
    each beam: ann_recall@10 against the exact search, and queries per second of the graph
    search alone (no exact check), unfiltered."""
    import dataclasses

    vecs = clustered(rng, centres, n)
    queries = clustered(rng, centres, q)
    graph = EdgeIndex(vecs, [{"doc_id": "d"}] * n, hnsw=Hnsw(m=16, ef_construct=100, ef=16))
    try:
        print(f"\nHNSW at {n:,} chunks x 384 dims, {q:,} queries, the graph built once "
              f"({graph.in_graph[0]:,} points in it)")
        print(f"{'hnsw_ef':>8}{'ann_recall@10':>15}{'min':>7}{'graph q/s':>11}")
        qe = graph.qe
        for ef in efs:
            graph.hnsw = dataclasses.replace(graph.hnsw, ef=ef)
            graph.recalls = []
            requests = [graph._request(queries[i], 10, None, False) for i in range(q)]
            t0 = time.perf_counter()
            for lo in range(0, q, 64):
                graph.shard.query_batch(qe.QueryBatchRequest(requests[lo:lo + 64]))
            qps = q / (time.perf_counter() - t0)
            graph.search_batch(queries, 10, [None] * q)
            r = graph.ann_recall(10) or {}
            print(f"{ef:>8}{r.get('mean', float('nan')):>15.3f}{r.get('min', 0):>7.2f}"
                  f"{qps:>11.0f}")
    finally:
        graph.close()


if __name__ == "__main__":
    main()
