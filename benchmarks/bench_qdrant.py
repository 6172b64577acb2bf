"""Benchmark: Qdrant upload and query throughput, the earlier code path against the bulk/batch
path, side by side in one run.

- upload: sequential ``upsert`` batches of 512 with ``.tolist()`` and ``wait=True`` (the
  earlier path) against ``upload_collection`` (what ``retrieval.index.QdrantIndex`` does now);
- query: one ``query_points`` request per query against ``query_batch_points`` in batches of
  64 (what ``retrieval.live`` does), half the queries with a payload filter.

Local mode always (it scores in Python: for tests, not scale); a server where
``RAGSPAN_QDRANT_URL`` is set (the CI job's service container; target: the bulk/batch path at
least 3x faster on 100,000 points and 1,000 filtered queries).

    python benchmarks/bench_qdrant.py [local_points] [local_queries]
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import numpy as np

DIM = 384


def make(n: int, seed: int = 0) -> tuple[np.ndarray, list[dict[str, object]]]:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v, [{"doc_id": f"d{i % 1000}", "kind": "even" if i % 2 == 0 else "odd"}
               for i in range(n)]


def measure(client: object, where: str, n: int, n_queries: int) -> None:
    from qdrant_client import models

    vectors, payloads = make(n)
    queries = make(n_queries, seed=1)[0]
    remote = where != "local"
    names = {}
    for path in ("sequential", "bulk"):
        name = f"bench-{uuid.uuid4().hex[:8]}"
        names[path] = name
        client.create_collection(name, vectors_config=models.VectorParams(  # type: ignore[attr-defined]
            size=DIM, distance=models.Distance.DOT))
        if remote:
            client.create_payload_index(name, "kind",  # type: ignore[attr-defined]
                                        field_schema=models.PayloadSchemaType.KEYWORD)
        t0 = time.perf_counter()
        if path == "sequential":
            for lo in range(0, n, 512):
                client.upsert(name, points=models.Batch(  # type: ignore[attr-defined]
                    ids=list(range(lo, min(lo + 512, n))), vectors=vectors[lo:lo + 512].tolist(),
                    payloads=payloads[lo:lo + 512]), wait=True)
        else:
            client.upload_collection(name, vectors=vectors, payload=payloads,  # type: ignore[attr-defined]
                                     ids=list(range(n)), batch_size=512,
                                     parallel=2 if remote else 1, wait=True)
        dt = time.perf_counter() - t0
        print(f"{where}: upload {n:,} x {DIM} ({path}): {dt:.1f} s = {n / dt:,.0f} points/s")
    exact = models.SearchParams(exact=True) if remote else None

    def filt(i: int) -> object:
        return models.Filter(must=[models.FieldCondition(
            key="kind", match=models.MatchValue(value="even"))]) if i % 2 else None

    name = names["bulk"]
    t0 = time.perf_counter()
    for i, q in enumerate(queries):
        client.query_points(name, query=q.tolist(), limit=10, query_filter=filt(i),  # type: ignore[attr-defined]
                            search_params=exact)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    for lo in range(0, n_queries, 64):
        client.query_batch_points(name, requests=[models.QueryRequest(  # type: ignore[attr-defined]
            query=queries[i].tolist(), limit=10, filter=filt(i), params=exact)
            for i in range(lo, min(lo + 64, n_queries))])
    batch = time.perf_counter() - t0
    print(f"{where}: {n_queries:,} queries (half filtered), one request each: {one:.1f} s = "
          f"{n_queries / one:,.0f} q/s; batches of 64: {batch:.1f} s = {n_queries / batch:,.0f} "
          f"q/s (x{one / batch:.1f})")
    for name in names.values():
        client.delete_collection(name)  # type: ignore[attr-defined]


def main() -> None:
    from qdrant_client import QdrantClient

    n_local = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    q_local = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    local = QdrantClient(":memory:")
    measure(local, "local", n_local, q_local)
    local.close()
    url = os.environ.get("RAGSPAN_QDRANT_URL")
    if not url:
        print("server: skipped (set RAGSPAN_QDRANT_URL; the CI job runs qdrant/qdrant)")
        return
    server = QdrantClient(url=url, timeout=60)
    measure(server, f"server {url}", 100_000, 1_000)
    server.close()


if __name__ == "__main__":
    main()
