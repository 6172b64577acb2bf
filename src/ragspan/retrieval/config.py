"""Pipeline config (TOML): the four levers that move grounding, plus the run's depth.

```toml
name = "hybrid-clause"
depth = 10                      # results per query in the run
[chunker]                       # kind = fixed | sentence | recursive | clause | none
kind = "clause"
size = 1500
[dense]                         # sentence-transformers; backend = exact | qdrant | qdrant-edge
model = "all-MiniLM-L6-v2"
backend = "exact"
depth = 50
[sparse]                        # BM25; backend = rank-bm25 | bm25s
backend = "rank-bm25"
k1 = 1.5
b = 0.75
depth = 50
[fusion]                        # reciprocal rank fusion when both retrievers run
k = 60
[rerank]                        # CrossEncoder over the top `depth` fused candidates
model = "path/or/name"
depth = 20
[filter]
scope = "doc_id"                # doc_id (the query's document + its filters) | filters | none
```

A section that is absent is off (``dense``, ``sparse``, ``rerank``); at least one retriever
must be on. Unknown keys are an error. The digest is the sha256 of the canonical JSON of the
complete config (defaults filled in, declared once in ``ragspan.base.options``), so two
spellings of one pipeline share a digest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import InputError, UsageError
from ragspan.base.options import PIPELINE_SECTIONS, PIPELINE_TOP, check_table, pipeline_default
from ragspan.io.files import decode_records, read_bytes
from ragspan.io.toml import parse_toml
from ragspan.retrieval.chunkers import TOKEN_KINDS, ChunkerSpec
from ragspan.retrieval.index import Hnsw

D = pipeline_default  # every default below is the one declared in ragspan.base.options
HNSW_KEYS = ("search", "hnsw_m", "hnsw_ef_construct", "hnsw_ef")


@dataclass(frozen=True)
class DenseSpec:
    model: str = D("dense", "model")
    backend: str = D("dense", "backend")
    depth: int = D("dense", "depth")
    qdrant_path: str | None = D("dense", "qdrant_path")
    qdrant_url: str | None = D("dense", "qdrant_url")
    search: str = D("dense", "search")
    hnsw_m: int = D("dense", "hnsw_m")
    hnsw_ef_construct: int = D("dense", "hnsw_ef_construct")
    hnsw_ef: int = D("dense", "hnsw_ef")
    batch_size: int = D("dense", "batch_size")

    def hnsw(self) -> Hnsw | None:
        """The HNSW settings when ``search = "hnsw"``, else None (exact search)."""
        if self.search != "hnsw":
            return None
        return Hnsw(self.hnsw_m, self.hnsw_ef_construct, self.hnsw_ef)


@dataclass(frozen=True)
class SparseSpec:
    backend: str = D("sparse", "backend")
    k1: float = D("sparse", "k1")
    b: float = D("sparse", "b")
    depth: int = D("sparse", "depth")


@dataclass(frozen=True)
class RerankSpec:
    model: str = D("rerank", "model")
    depth: int = D("rerank", "depth")
    batch_size: int = D("rerank", "batch_size")
    top_k: int | None = D("rerank", "top_k")
    min_score: float | None = D("rerank", "min_score")
    min_keep: int = D("rerank", "min_keep")


@dataclass(frozen=True)
class PipelineConfig:
    name: str
    depth: int = D("", "depth")
    chunker: ChunkerSpec = field(default_factory=ChunkerSpec)
    dense: DenseSpec | None = None
    sparse: SparseSpec | None = None
    fusion_k: int = D("fusion", "k")
    rerank: RerankSpec | None = None
    scope: str = D("filter", "scope")

    def as_json(self) -> dict[str, Any]:
        """The complete config; a chunker that counts characters has no tokenizer, and exact
        dense search no HNSW settings (so the configs of earlier releases keep their
        digests)."""
        out = asdict(self)
        if out["chunker"]["kind"] not in TOKEN_KINDS:
            out["chunker"].pop("tokenizer")
        if out["dense"] is not None and out["dense"]["search"] == "exact":
            for key in HNSW_KEYS:  # exact search: the configs of earlier releases, as they were
                out["dense"].pop(key)
        canonical: dict[str, Any] = json.loads(canonical_dumps(out))
        return canonical

    @property
    def digest(self) -> str:
        """sha256 of the config's canonical JSON (``ragspan.base.canonical``), its line end left
        out."""
        text = canonical_dumps(self.as_json()).removesuffix("\n")
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _section(raw: dict[str, Any], key: str, cls: type, path: str) -> Any:
    """The section's dataclass, every key type-checked (``ragspan.base.options``); None when the
    section is absent or ``enabled = false``."""
    table = raw.get(key)
    if table is None:
        return None
    values = check_table(table, PIPELINE_SECTIONS[key], path, f"[{key}]")
    if values.pop("enabled", True) is False:
        return None
    return cls(**values)


def parse_config(raw: dict[str, Any], path: str) -> PipelineConfig:
    top = check_table(raw, PIPELINE_TOP, path, "the config")
    name = top.get("name")
    if not name:
        raise InputError("'name' (a non-empty string) is required", path)
    chunker = _section(raw, "chunker", ChunkerSpec, path) or ChunkerSpec()
    dense = _section(raw, "dense", DenseSpec, path)
    sparse = _section(raw, "sparse", SparseSpec, path)
    rerank = _section(raw, "rerank", RerankSpec, path)
    fusion = check_table(raw.get("fusion") or {}, PIPELINE_SECTIONS["fusion"], path, "[fusion]")
    filt = check_table(raw.get("filter") or {}, PIPELINE_SECTIONS["filter"], path, "[filter]")
    cfg = PipelineConfig(name=name, depth=top.get("depth", D("", "depth")), chunker=chunker,
                         dense=dense, sparse=sparse, fusion_k=fusion.get("k", D("fusion", "k")),
                         rerank=rerank, scope=filt.get("scope", D("filter", "scope")))
    check(cfg, path)
    return cfg


def check(cfg: PipelineConfig, path: str) -> None:
    """What the per-key types cannot say: overlap below size, a retriever on, a rerank model."""
    try:
        cfg.chunker.check()
    except UsageError as exc:
        raise InputError(f"[chunker] {exc}", path) from None
    if cfg.dense is None and cfg.sparse is None:
        raise InputError("turn on at least one retriever: [dense] or [sparse]", path)
    if cfg.rerank is not None and not cfg.rerank.model:
        raise InputError("[rerank] needs a model (name or path)", path)
    if cfg.dense is not None and cfg.dense.backend == "qdrant-edge" and \
            (cfg.dense.qdrant_path or cfg.dense.qdrant_url):
        raise InputError("[dense] qdrant_path and qdrant_url are for backend = \"qdrant\"; "
                         "backend = \"qdrant-edge\" runs Qdrant's engine in-process in a "
                         "folder of its own", path)
    if cfg.dense is not None and cfg.dense.search == "hnsw":
        if cfg.dense.backend not in ("qdrant", "qdrant-edge"):
            raise InputError("[dense] search = \"hnsw\" needs backend = \"qdrant-edge\" (Qdrant's "
                             "engine in-process) or \"qdrant\" with a server (the exact "
                             "backend has no graph)", path)
        if cfg.dense.hnsw_ef < cfg.dense.depth:
            raise InputError(f"[dense] hnsw_ef = {cfg.dense.hnsw_ef} is below [dense] depth = "
                             f"{cfg.dense.depth}, the candidates the dense retriever passes on "
                             f"(default 50; the top-level depth = {cfg.depth} is the results "
                             "per query): the search beam must hold the candidates it "
                             "returns", path)


def load_config(path: str) -> PipelineConfig:
    """The pipeline configuration in the TOML file ``path``."""
    return config_of_bytes(read_bytes(path), path)


def config_of_bytes(data: bytes, path: str) -> PipelineConfig:
    """The pipeline configuration in ``data``, the bytes of the TOML file ``path`` (a caller
    that also digests the file reads it once)."""
    return parse_config(parse_toml(decode_records(data, path), path), path)
