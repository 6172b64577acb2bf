"""Pipeline config (TOML): the four levers that move grounding, plus the run's depth.

```toml
name = "hybrid-clause"
depth = 10                      # results per query in the run
[chunker]                       # kind = fixed | sentence | recursive | clause | none
kind = "clause"
size = 1500
[dense]                         # sentence-transformers; backend = exact | qdrant
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
complete config (defaults filled in), so two spellings of one pipeline share a digest.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from ragspan.errors import InputError
from ragspan.retrieval.chunkers import ChunkerSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SCOPES = ("doc_id", "filters", "none")


@dataclass(frozen=True)
class DenseSpec:
    model: str = "all-MiniLM-L6-v2"
    backend: str = "exact"
    depth: int = 50
    qdrant_path: str | None = None
    qdrant_url: str | None = None
    batch_size: int = 64


@dataclass(frozen=True)
class SparseSpec:
    backend: str = "rank-bm25"
    k1: float = 1.5
    b: float = 0.75
    depth: int = 50


@dataclass(frozen=True)
class RerankSpec:
    model: str = ""
    depth: int = 20
    batch_size: int = 32


@dataclass(frozen=True)
class PipelineConfig:
    name: str
    depth: int = 10
    chunker: ChunkerSpec = field(default_factory=ChunkerSpec)
    dense: DenseSpec | None = None
    sparse: SparseSpec | None = None
    fusion_k: int = 60
    rerank: RerankSpec | None = None
    scope: str = "doc_id"

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        return json.loads(json.dumps(out, sort_keys=True))

    @property
    def digest(self) -> str:
        text = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _section(raw: dict[str, Any], key: str, cls: type, path: str) -> Any:
    table = raw.get(key)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InputError(f"[{key}] must be a table", path)
    allowed = set(cls.__dataclass_fields__)
    if key == "chunker":
        allowed = {"kind", "size", "overlap", "snap"}
    unknown = sorted(set(table) - allowed - {"enabled"})
    if unknown:
        raise InputError(f"[{key}]: unknown keys {unknown} (allowed: {sorted(allowed)})", path)
    if table.get("enabled", True) is False:
        return None
    try:
        return cls(**{k: v for k, v in table.items() if k != "enabled"})
    except TypeError as exc:
        raise InputError(f"[{key}]: {exc}", path) from None


def parse_config(raw: dict[str, Any], path: str) -> PipelineConfig:
    top = {"name", "depth", "chunker", "dense", "sparse", "fusion", "rerank", "filter"}
    unknown = sorted(set(raw) - top)
    if unknown:
        raise InputError(f"unknown keys {unknown} (allowed: {sorted(top)})", path)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("'name' (a non-empty string) is required", path)
    chunker = _section(raw, "chunker", ChunkerSpec, path) or ChunkerSpec()
    dense = _section(raw, "dense", DenseSpec, path)
    sparse = _section(raw, "sparse", SparseSpec, path)
    rerank = _section(raw, "rerank", RerankSpec, path)
    fusion = raw.get("fusion") or {}
    if set(fusion) - {"k", "method"} or fusion.get("method", "rrf") != "rrf":
        raise InputError("[fusion] takes k (and method = \"rrf\")", path)
    filt = raw.get("filter") or {}
    if set(filt) - {"scope"} or filt.get("scope", "doc_id") not in SCOPES:
        raise InputError(f"[filter] takes scope, one of {SCOPES}", path)
    cfg = PipelineConfig(name=name, depth=raw.get("depth", 10), chunker=chunker, dense=dense,
                         sparse=sparse, fusion_k=fusion.get("k", 60), rerank=rerank,
                         scope=filt.get("scope", "doc_id"))
    check(cfg, path)
    return cfg


def check(cfg: PipelineConfig, path: str) -> None:
    from ragspan.errors import UsageError

    def positive(value: Any, what: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{what} must be a positive integer, got {value!r}", path)

    positive(cfg.depth, "depth")
    positive(cfg.chunker.size, "[chunker] size")
    positive(cfg.fusion_k, "[fusion] k")
    try:
        cfg.chunker.check()
    except UsageError as exc:
        raise InputError(str(exc), path) from None
    if cfg.dense is None and cfg.sparse is None:
        raise InputError("turn on at least one retriever: [dense] or [sparse]", path)
    if cfg.dense is not None:
        positive(cfg.dense.depth, "[dense] depth")
        if cfg.dense.backend not in ("exact", "qdrant"):
            raise InputError(f"[dense] backend must be exact or qdrant, got {cfg.dense.backend!r}", path)
    if cfg.sparse is not None:
        positive(cfg.sparse.depth, "[sparse] depth")
        if cfg.sparse.backend not in ("rank-bm25", "bm25s"):
            raise InputError(f"[sparse] backend must be rank-bm25 or bm25s, "
                             f"got {cfg.sparse.backend!r}", path)
    if cfg.rerank is not None:
        positive(cfg.rerank.depth, "[rerank] depth")
        if not cfg.rerank.model:
            raise InputError("[rerank] needs a model (name or path)", path)


def load_config(path: str) -> PipelineConfig:
    from ragspan.io.files import decode_utf8, read_bytes

    text = decode_utf8(read_bytes(path), path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path) from None
    return parse_config(raw, path)
