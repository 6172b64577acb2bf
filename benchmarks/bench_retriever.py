"""Benchmark: run-retriever on the shared CUAD developer set (32 contracts, 419 queries).

For the dense and the hybrid (dense + BM25, RRF) configs, with a fresh embedding cache:
chunks embedded per second, queries per second (end to end per query: query embedding,
search, fusion), dense search alone per second (exact index, scoped and corpus-wide), and the
wall time of a second run that finds every embedding in the cache. Needs the ``retrieval``
extra and ``../shared/data/cuad_dev``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHED_REPEATS = 7
SHARED = ROOT.parent / "shared" / "data" / "cuad_dev"


def main() -> None:
    from ragspan.evalsets.importers.cuad import import_cuad_csv
    from ragspan.io.corpus import Corpus
    from ragspan.io.evalset import EvalQuery, GoldSpan
    from ragspan.retrieval.config import load_config
    from ragspan.retrieval.pipeline import Pipeline

    if not SHARED.is_dir():
        sys.exit(f"shared data not found: {SHARED}")
    build = import_cuad_csv(str(SHARED / "master_clauses_subset.csv"), str(SHARED / "contracts"),
                            str(SHARED / "category_descriptions.csv"), exclude_metadata=False)
    corpus = Corpus("cuad", "", {d.id: d for d in build.documents})
    queries = [EvalQuery(r["id"], r["query"], tuple(GoldSpan(s["doc_id"], s["start"], s["end"])
                                                    for s in r["gold_spans"]), r["doc_id"])
               for r in build.rows]
    print(f"corpus: {len(corpus)} contracts, {sum(len(d.text) for d in build.documents):,} "
          f"characters; {len(queries)} queries")
    for name in ("dense-fixed", "hybrid-clause"):
        cfg = load_config(str(ROOT / "examples" / "configs" / f"{name}.toml"))
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            pipe = Pipeline(cfg, corpus, cache_dir=Path(cache))
            t_index = time.perf_counter() - t0
            n_chunks = len(pipe.table.chunks)
            t1 = time.perf_counter()
            pipe.run(queries)
            t_query = time.perf_counter() - t1
            scoped = search_only_rate(pipe, queries)
            wide = search_only_rate(_wide(pipe), queries)
            t2 = time.perf_counter()
            again = Pipeline(cfg, corpus, cache_dir=Path(cache))
            again.run(queries)
            t_again = time.perf_counter() - t2
        print(f"\n[{name}] {n_chunks} chunks")
        rate = pipe.embedder.embedded / t_index
        print(f"  chunk + embed + index: {t_index:6.1f} s  ({rate:6.1f} chunks/s embedded)")
        print(f"  queries end to end:    {t_query:6.1f} s  ({len(queries) / t_query:6.1f} queries/s)")
        print(f"  dense search alone:    {scoped:8.0f} queries/s scoped to the contract, "
              f"{wide:8.0f} corpus-wide")
        print(f"  second run (cached):   {t_again:6.1f} s  (embedded {again.chunk_counts[0]} "
              f"chunks, {again.query_counts[0]} queries)")


def scifact_cached() -> None:
    """A fully cached dense doc-level run on BEIR SciFact (5,183 abstracts, the 300 test
    queries): a first run fills a fresh cache, the second finds every chunk and query in it.
    Target: the cached run under 15 s (query embedding used to dominate it: one encode call
    per query)."""
    from ragspan.evalsets.importers.beir import import_beir
    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import EvalQuery
    from ragspan.retrieval.config import load_config
    from ragspan.retrieval.pipeline import Pipeline

    root = ROOT.parent / "shared" / "data" / "beir_scifact"
    if not root.is_dir():
        print(f"\n[scifact] skipped: {root} not found")
        return
    build = import_beir(str(root), "test")
    queries = [EvalQuery(r["id"], r["query"], ()) for r in build.rows]
    corpus = read_corpus(str(root / "corpus.jsonl"))
    cfg = load_config(str(ROOT / "examples" / "configs" / "doc-dense.toml"))
    with tempfile.TemporaryDirectory() as cache:
        times = []
        for _ in range(1 + CACHED_REPEATS):
            t0 = time.perf_counter()
            pipe = Pipeline(cfg, corpus, cache_dir=Path(cache))
            pipe.run(queries)
            times.append(time.perf_counter() - t0)
    cached = sorted(times[1:])[len(times[1:]) // 2]
    print(f"\n[scifact doc-dense] {len(corpus)} documents, {len(queries)} queries")
    print(f"  first run (fresh cache): {times[0]:6.1f} s")
    print(f"  cached run:              {cached * 1000:8.1f} ms, median of {CACHED_REPEATS} "
          f"(chunks embedded {pipe.chunk_counts[0]}, queries embedded {pipe.query_counts[0]}; "
          "target < 15 s; verified shards must stay within 1.2x of the unverified cache)")


def search_only_rate(pipeline, queries) -> float:
    """Queries per second of the dense search alone (for benchmarks)."""
    from ragspan.retrieval.filters import query_filters

    vecs = pipeline.embedder.embed_queries([q.query for q in queries])
    t0 = time.perf_counter()
    for q, v in zip(queries, vecs):
        allowed = pipeline.filters.allowed(
            query_filters(pipeline.cfg.scope, q.doc_id, q.filters), q.id)
        pipeline.dense.search(v, pipeline.cfg.dense.depth, allowed)
    return len(queries) / max(time.perf_counter() - t0, 1e-9)


def _wide(pipe):
    import dataclasses

    clone = object.__new__(type(pipe))
    clone.__dict__.update(pipe.__dict__)
    clone.cfg = dataclasses.replace(pipe.cfg, scope="none")
    return clone


if __name__ == "__main__":
    if sys.argv[1:] == ["scifact"]:
        scifact_cached()
    else:
        main()
        scifact_cached()
