"""The ``run-retriever`` report as typed records: how the run was made (ragspan's pipeline,
the user's Qdrant collection or edge shard, the user's own retriever), what it retrieved
from and what that cost. The retrieval modules describe what they searched as plain maps
(``retrieval.live``, ``retrieval.edge_live``, ``Embedder.describe``: JSON at the boundary,
the same maps the run's header carries); the command turns them into these records
(``retrieving``), which name every field any of them writes and refuse one they do not
name, so a new field is added here, typed, or the command fails in the tests that run it.

The pipeline configuration (``parameters.config``) is ``PipelineJson``: the configuration
as ``retrieval.config.PipelineConfig.as_json`` writes it (every default filled in; a
character chunker's tokenizer and exact search's HNSW settings left out, so the digests of
earlier releases hold)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate
from ragspan.records.score_facts import Count, Latency


class ChunkerJson(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The chunker: its kind, size and overlap (characters, or tokens of ``tokenizer``) and
    whether chunks snap to word boundaries."""

    kind: str
    size: int
    overlap: int
    snap: bool
    tokenizer: str | UnsetType = UNSET


class DenseJson(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Dense retrieval: the model, the backend (and its Qdrant path or URL), the depth, the
    batch size, and the HNSW settings of a graph search."""

    model: str
    backend: str
    depth: int
    batch_size: int
    qdrant_path: str | None
    qdrant_url: str | None
    search: str | UnsetType = UNSET
    hnsw_m: int | UnsetType = UNSET
    hnsw_ef_construct: int | UnsetType = UNSET
    hnsw_ef: int | UnsetType = UNSET


class SparseJson(Struct, kw_only=True, forbid_unknown_fields=True):
    """Sparse retrieval (BM25): the backend, ``k1``, ``b`` and the depth."""

    backend: str
    k1: Finite
    b: Finite
    depth: int


class RerankJson(Struct, kw_only=True, forbid_unknown_fields=True):
    """The cross-encoder rerank: the model, the depth, the batch size, and what it keeps
    (the top k, a least score, a least count)."""

    model: str
    depth: int
    batch_size: int
    top_k: int | None
    min_score: Finite | None
    min_keep: int


class PipelineJson(Struct, kw_only=True, forbid_unknown_fields=True):
    """ragspan's retrieval pipeline as its configuration reads in full: the name, the
    depth, the chunker, dense and sparse retrieval, the fusion's k, the rerank, the scope."""

    name: str
    depth: int
    chunker: ChunkerJson
    dense: DenseJson | None
    sparse: SparseJson | None
    fusion_k: int
    rerank: RerankJson | None
    scope: str


class Recall(Struct, kw_only=True, forbid_unknown_fields=True):
    """``ann_recall@k``: the approximate search's share of the exact search's top ``k``,
    over ``queries``: the mean, the minimum and how many queries fell below 1."""

    k: int
    queries: Count
    mean: Finite
    min: Finite
    below_1: Count


class AnnRecall(Recall, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """``ann_recall`` with what the graph was: its beam, its build parameters, the points in
    it and scanned outside it, the vectors' size against the full-scan threshold, whether
    the vectors are quantized (then the loss split: ``hnsw`` its own, ``quantization`` the
    quantized vectors' against it) and a note when the recall says nothing of the graph."""

    ef: int | None | UnsetType = UNSET
    m: int | UnsetType = UNSET
    ef_construct: int | UnsetType = UNSET
    full_scan_threshold_kb: int | UnsetType = UNSET
    points_in_graph: Count | UnsetType = UNSET
    points_scanned: Count | UnsetType = UNSET
    vectors_kb: int | UnsetType = UNSET
    quantized: bool | UnsetType = UNSET
    hnsw: Recall | UnsetType = UNSET
    quantization: Recall | UnsetType = UNSET
    note: str | UnsetType = UNSET


class PayloadKeys(Struct, frozen=True, forbid_unknown_fields=True):
    """The payload keys a point's document, offsets and text were read from."""

    doc_id: str
    start: str
    end: str
    text: str


class Search(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """How the index was searched: exactly or with the graph's beam, the depth, the batch,
    the scope, the vector and the payload keys (in the order a run's header writes them)."""

    exact: bool
    limit: int
    batch: int
    scope: str
    vector_name: str | None | UnsetType = UNSET
    hnsw_ef: int | UnsetType = UNSET
    payload_keys: PayloadKeys


class Vector(Struct, frozen=True, forbid_unknown_fields=True):
    """The collection's vector: its name, size and distance."""

    name: str | None
    size: int
    distance: str


class TextPlacement(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """How the results' texts were placed in the corpus (``io.runs.anchoring``): each
    outcome counted, and the rule that decided them (empty when no result had a text)."""

    checked: Count | UnsetType = UNSET
    unchecked: Count | UnsetType = UNSET
    exact: Count | UnsetType = UNSET
    normalized: Count | UnsetType = UNSET
    fuzzy: Count | UnsetType = UNSET
    realigned: Count | UnsetType = UNSET
    ambiguous_first: Count | UnsetType = UNSET
    dropped: Count | UnsetType = UNSET
    align: bool | UnsetType = UNSET
    on_ambiguous: str | UnsetType = UNSET
    unplaced: str | UnsetType = UNSET
    threshold: Finite | UnsetType = UNSET


class EmbeddingModel(Struct, kw_only=True, omit_defaults=True):
    """The embedding model as a run-retriever report records it: its name, and once loaded
    its identity, the cache key (its shard folder) and its dimension."""

    model: str
    model_identity: str | UnsetType = UNSET
    cache_key: str | UnsetType = UNSET
    dimension: int | UnsetType = UNSET


class Collection(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The user's Qdrant collection, read-only: its name, points, vector and how it was
    searched; in the summary also the engine's calls made and the texts' placement."""

    name: str
    points: Count
    vector: Vector
    search: Search
    calls: list[str] | UnsetType = UNSET
    placement: TextPlacement | UnsetType = UNSET


class EdgeShard(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The user's edge shard or snapshot, offline and read-only: where, which, its points
    and sha256, how it was searched; in the summary also the texts' placement and the
    graph's recall."""

    source: str
    kind: str
    points: Count
    sha256: str
    search: Search
    placement: TextPlacement | UnsetType = UNSET
    ann_recall: AnnRecall | UnsetType = UNSET


class Execution(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """How this execution went (``--record-latency``): the wall time, the per-query and
    per-stage latency, the queries per second, and the embedding cache's use."""

    elapsed_s: Finite
    latency_ms: Latency
    queries_per_second: Finite | UnsetType = UNSET
    embedded: Count | UnsetType = UNSET
    embeddings_from_cache: Count | UnsetType = UNSET
    queries_embedded: Count | UnsetType = UNSET
    queries_from_cache: Count | UnsetType = UNSET
    cache_shards_ignored: Count | UnsetType = UNSET


class RetrievalParameters(Struct, kw_only=True, omit_defaults=True,
                          forbid_unknown_fields=True):
    """How the run was made: ragspan's pipeline (its configuration and digest), the user's
    collection or edge shard (as described), or the user's retriever (its import path,
    framework, and for a doc-level one the run's level, format and tag); the embedding
    model, its identity, cache key and dimension."""

    config: PipelineJson | UnsetType = UNSET
    config_digest: str | UnsetType = UNSET
    collection: Collection | UnsetType = UNSET
    edge_shard: EdgeShard | UnsetType = UNSET
    retriever: str | UnsetType = UNSET
    framework: str | UnsetType = UNSET
    level: str | UnsetType = UNSET
    format: str | UnsetType = UNSET
    tag: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    model_identity: str | UnsetType = UNSET
    cache_key: str | UnsetType = UNSET
    dimension: int | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class RetrievalSummary(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The queries run (and those the qrels left unjudged), the documents, what each way of
    retrieving adds (the pipeline's chunks and chunker notes counted, the collection or
    shard as searched, the graph's recall, the texts' placement, an agent's steps folded),
    the embedding model, and the execution when recorded."""

    queries: Count
    documents: Count
    queries_not_judged: Count | UnsetType = UNSET
    config: str | UnsetType = UNSET
    config_digest: str | UnsetType = UNSET
    chunks: Count | UnsetType = UNSET
    chunker_fallback_documents: Count | UnsetType = UNSET
    invisible_chunks_dropped: Count | UnsetType = UNSET
    unscoped_queries: Count | UnsetType = UNSET
    kept_collection: str | UnsetType = UNSET
    ann_recall: AnnRecall | UnsetType = UNSET
    collection: Collection | UnsetType = UNSET
    edge_shard: EdgeShard | UnsetType = UNSET
    placement: TextPlacement | UnsetType = UNSET
    agent_steps: dict[str, Count] | UnsetType = UNSET
    level: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    model_identity: str | UnsetType = UNSET
    cache_key: str | UnsetType = UNSET
    dimension: int | UnsetType = UNSET
    execution: Execution | UnsetType = UNSET


class RetrievalDetails(Struct, forbid_unknown_fields=True):
    """The chunker's notes per document (a sentence fallback, invisible chunks dropped)."""

    chunker_notes: dict[str, dict[str, str | int]]


RetrievalPredicate = Predicate[RetrievalParameters, RetrievalSummary, RetrievalDetails]


def retrieving(parameters: object, summary: object, details: object
               ) -> tuple[RetrievalParameters, RetrievalSummary, RetrievalDetails]:
    """The command's parameters, summary and details (the retrieval modules' maps) as the
    report's records; a field no record names is ``msgspec.ValidationError`` (a bug)."""
    return (msgspec.convert(parameters, RetrievalParameters),
            msgspec.convert(summary, RetrievalSummary),
            msgspec.convert(details, RetrievalDetails))


FilterScalar = str | int | float | bool | None
Filters = dict[str, FilterScalar | list[FilterScalar]]
"""A query's payload filters, by payload key: a value, or a list of values any of which
matches (``io.evalset`` checks them when the eval set is read)."""

Payload = dict[str, str | int | bool]
"""A chunk's payload in the index: its ``doc_id`` and its document's scalar metadata
(``retrieval.pipeline.scalar_metadata``)."""
