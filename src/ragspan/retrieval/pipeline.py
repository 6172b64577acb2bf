"""The configured pipeline: chunk -> embed/index -> retrieve (dense, BM25, fused) -> rerank.

Every returned chunk carries exact offsets into its source document. Each run row records the
ranking, the first-stage ranking when a reranker ran, the wall-clock latency of answering the
query (query embedding, search, fusion, reranking) and the config digest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError, present
from ragspan.base.warned import said
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.records.retrieval import Payload
from ragspan.records.run_rows import ManifestRow, RunItem, RunRow
from ragspan.retrieval.chunkers import Chunk, chunk_document
from ragspan.retrieval.config import PipelineConfig
from ragspan.retrieval.edge_index import EdgeIndex
from ragspan.retrieval.embed import Embedder
from ragspan.retrieval.filters import PayloadTable, query_filters
from ragspan.retrieval.fusion import Candidate, rrf
from ragspan.retrieval.index import ExactIndex, QdrantIndex
from ragspan.retrieval.rerank import Reranker, kept
from ragspan.retrieval.sparse import BM25Index

log = logging.getLogger("ragspan")


@dataclass
class ChunkTable:
    """All chunks of a corpus, in document order, with the text each retriever sees."""

    chunks: list[Chunk]
    texts: list[str]
    payloads: list[Payload]
    notes: dict[str, dict[str, int | str]] = field(default_factory=dict)  # by document


def scalar_metadata(meta: Mapping[str, object]) -> Payload:
    """A document's metadata that a payload can carry: its string, integer and boolean
    values (its own ``doc_id`` key left out: the payload's is the corpus id)."""
    return {k: v for k, v in meta.items() if isinstance(v, (str, int, bool)) and k != "doc_id"}


def build_chunks(corpus: Corpus, cfg: PipelineConfig, progress: Any = None) -> ChunkTable:
    chunks, texts, payloads, notes = [], [], [], {}
    docs = [corpus.documents[d] for d in sorted(corpus.documents)]
    for n, doc in enumerate(docs, start=1):
        part, note = chunk_document(doc.id, doc.text, cfg.chunker)
        if note:
            notes[doc.id] = note
        meta = {**scalar_metadata(doc.metadata), "doc_id": doc.id}
        for c in part:
            chunks.append(c)
            body = doc.text[c.start:c.end]
            texts.append(f"{doc.title}\n{body}" if cfg.chunker.kind == "none" and doc.title else body)
            payloads.append(meta)
        if progress:
            progress("chunking", n, len(docs))
    return ChunkTable(chunks, texts, payloads, notes)


class Pipeline:
    def __init__(self, cfg: PipelineConfig, corpus: Corpus, *, cache_dir: Path | None = None,
                 progress: Any = None, strict_cache: bool = False,
                 keep_collection: bool = False):
        self.cfg = cfg
        self.corpus = corpus
        self.progress = progress
        self.table = build_chunks(corpus, cfg, progress)
        if not self.table.chunks:
            raise InputError("the corpus yields no chunk to retrieve (every document is empty "
                             "or holds only whitespace)", corpus.path)
        self.filters = PayloadTable(self.table.payloads)
        self.embedder: Any = None
        self.chunk_counts = (0, 0)  # chunks embedded, chunks read from the cache
        self.query_counts = (0, 0)  # the same for the queries (``run``)
        self.dense: Any = None
        self.sparse: Any = None
        self.reranker: Any = None
        self.rerank_dropped = 0  # candidates [rerank] top_k / min_score left out, all queries
        try:
            self._build(cfg, cache_dir, progress, strict_cache, keep_collection)
        except BaseException:  # a server collection made so far is deleted, Ctrl-C too
            self.close()
            raise

    def _build(self, cfg: PipelineConfig, cache_dir: Path | None, progress: Any,
               strict_cache: bool, keep_collection: bool) -> None:
        if cfg.dense is not None:
            embedder = Embedder(cfg.dense.model, cache_dir, cfg.dense.batch_size, progress,
                                strict_cache=strict_cache)
            self.embedder = embedder
            vectors = embedder.embed(self.table.texts, "embedding")
            self.chunk_counts = (embedder.embedded, embedder.cached)
            if cfg.dense.backend == "qdrant-edge":
                self.dense = EdgeIndex(vectors, self.table.payloads, hnsw=cfg.dense.hnsw())
            elif cfg.dense.backend == "qdrant":
                self.dense = QdrantIndex(vectors, self.table.payloads, path=cfg.dense.qdrant_path,
                                         url=cfg.dense.qdrant_url, keep=keep_collection,
                                         hnsw=cfg.dense.hnsw())
            else:
                self.dense = ExactIndex(vectors)
        if cfg.sparse is not None:
            self.sparse = BM25Index(self.table.texts, k1=cfg.sparse.k1, b=cfg.sparse.b,
                                    backend=cfg.sparse.backend)
        if cfg.rerank is not None:
            self.reranker = Reranker(cfg.rerank.model, cfg.rerank.batch_size)

    def rank(self, query: EvalQuery, qvec: Any = None, dense_hits: Any = None,
             stages: dict[str, float] | None = None
             ) -> tuple[list[Candidate], list[Candidate] | None]:
        """The final ranking and, when a reranker ran, the first-stage ranking; ``qvec`` is
        the query's embedding when it was computed already (``run`` embeds them in
        batches); ``dense_hits`` its dense ``(indices, scores)`` when searched already (a
        Qdrant index is searched in batches). ``stages`` receives the milliseconds each
        stage took (``search``, ``fusion``, ``rerank``, as they ran)."""
        cfg = self.cfg
        stages = {} if stages is None else stages
        t0 = time.perf_counter()
        filters = query_filters(cfg.scope, query.doc_id, query.filters)
        allowed = self.filters.allowed(filters, query.id)
        rankings: dict[str, list[int]] = {}
        scores: dict[str, dict[int, float]] = {}
        if self.dense is not None and dense_hits is not None:
            idx, sc = dense_hits
            rankings["dense"] = idx.tolist()
            scores["dense"] = dict(zip(idx.tolist(), sc.tolist()))
        elif self.dense is not None:
            if qvec is None:
                qvec = present(self.embedder, "the query embedder").embed([query.query],
                                                                           "queries")[0]
            idx, sc = self.dense.search(qvec, present(cfg.dense, "the dense settings").depth,
                                        allowed, filters)
            rankings["dense"] = idx.tolist()
            scores["dense"] = dict(zip(idx.tolist(), sc.tolist()))
        if self.sparse is not None:
            idx, sc = self.sparse.search(query.query,
                                         present(cfg.sparse, "the BM25 settings").depth, allowed)
            rankings["bm25"] = idx.tolist()
            scores["bm25"] = dict(zip(idx.tolist(), sc.tolist()))
        t1 = time.perf_counter()
        stages["search"] = stages.get("search", 0.0) + (t1 - t0) * 1000.0
        if len(rankings) == 1:
            (name, ranking), = rankings.items()
            fused = [Candidate(i, float(scores[name][i]), {name: r})
                     for r, i in enumerate(ranking, start=1)]
        else:
            fused = rrf(rankings, cfg.fusion_k)
            stages["fusion"] = (time.perf_counter() - t1) * 1000.0
        if self.reranker is None:
            return fused[:cfg.depth], None
        t2 = time.perf_counter()
        spec = present(cfg.rerank, "the rerank settings")
        pool = fused[:spec.depth]
        rs = self.reranker.scores(query.query, [self.table.texts[c.index] for c in pool])
        order = sorted(range(len(pool)), key=lambda j: (-rs[j], j))
        keep = kept([float(rs[j]) for j in order], spec.top_k, spec.min_score, spec.min_keep)
        self.rerank_dropped += len(order) - keep
        final = [Candidate(pool[j].index, float(rs[j]), {**pool[j].sources, "rerank": r})
                 for r, j in enumerate(order[:keep], start=1)]
        stages["rerank"] = (time.perf_counter() - t2) * 1000.0
        return final[:cfg.depth], fused[:cfg.depth]

    def spans(self, ranking: list[Candidate]) -> list[RunItem]:
        """The run items of a ranking: offsets, score, chunk id, the fused retrievers' ranks,
        and the chunk's text (the corpus slice), so a score against the corpus checks every
        item instead of taking its offsets on trust."""
        out = []
        for c in ranking:
            ch = self.table.chunks[c.index]
            out.append(RunItem(doc_id=ch.doc_id, start=ch.start, end=ch.end,
                               score=round(c.score, 8), chunk_id=ch.chunk_id,
                               sources=dict(sorted(c.sources.items())),
                               text=self.corpus.text(ch.doc_id)[ch.start:ch.end]))
        return out

    def run(self, queries: list[EvalQuery]) -> list[RunRow]:
        """One row per query. Dense queries are embedded first, all in batches and through
        the embedding cache (keyed by model and text, as chunks are); each row's
        ``latency_ms`` is its search time plus its share of that embedding time, and
        ``stage_ms`` the same split by stage (``embed``, ``search``, ``fusion``,
        ``rerank``: those that ran; a batched search is shared out like the embedding)."""
        rows = []
        digest = self.cfg.digest[:16]
        qvecs: Any = None
        share = embed_share = search_share = 0.0
        if self.embedder is not None and queries:
            t0 = time.perf_counter()
            before = (self.embedder.embedded, self.embedder.cached)
            qvecs = self.embedder.embed([q.query for q in queries], "embedding queries")
            share = embed_share = (time.perf_counter() - t0) * 1000.0 / len(queries)
            self.query_counts = (self.embedder.embedded - before[0],
                                 self.embedder.cached - before[1])
        batched = None
        if qvecs is not None and hasattr(self.dense, "search_batch"):  # Qdrant, server or edge
            t0 = time.perf_counter()
            cfg = self.cfg
            batched = self.dense.search_batch(
                qvecs, present(cfg.dense, "the dense settings").depth,
                [query_filters(cfg.scope, q.doc_id, q.filters) for q in queries])
            search_share = (time.perf_counter() - t0) * 1000.0 / len(queries)
            share += search_share
        for n, q in enumerate(queries, start=1):
            t0 = time.perf_counter()
            stages = {"search": search_share}
            final, first = self.rank(q, None if qvecs is None else qvecs[n - 1],
                                     None if batched is None else batched[n - 1], stages)
            latency = (time.perf_counter() - t0) * 1000.0 + share
            if qvecs is not None:
                stages["embed"] = embed_share
            rows.append(RunRow(
                id=q.id, retrieved=self.spans(final),
                retrieved_first_stage=UNSET if first is None else self.spans(first),
                latency_ms=round(latency, 3),
                stage_ms={s: round(v, 3) for s, v in sorted(stages.items())},
                config_digest=digest))
            if self.progress:
                self.progress("querying", n, len(queries))
        if self.rerank_dropped:
            log.warning("[rerank] top_k / min_score left out %d reranked candidates over %d "
                        "queries", self.rerank_dropped, len(queries),
                        extra=said("rerank_dropped", self.rerank_dropped))
        return rows

    def close(self) -> None:
        if hasattr(self.dense, "close"):
            self.dense.close()


def manifest_rows(table: ChunkTable) -> list[ManifestRow]:
    """The chunk manifest's rows of ``table`` (``--chunks-out``)."""
    return [ManifestRow(chunk_id=c.chunk_id, doc_id=c.doc_id, start=c.start, end=c.end)
            for c in table.chunks]
