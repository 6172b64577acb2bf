"""The embedding cache: content-addressed, checked on read, crash-safe (docs/retrieval.md).

A vector's key is ``(model identity, normalisation, sha256 of the text)``:

- the **model identity** is the sha256 of the model's files (weights, configs, tokenizer,
  pooling and module files: every regular file of its folder but hidden files and ``*.md``),
  so a model retrained or re-configured at the same path never receives the old vectors; a
  hub model is identified by the files of its resolved snapshot. Computed once per folder
  and remembered by each file's (path, size, mtime), so a warm run only stats the files;
- the **normalisation** is ``l2`` (every vector is L2-normalised);
- the folder of a model's shards is named by the first 16 hex digits of
  ``sha256(identity | normalisation)``; inside it, vectors are keyed by the text's sha256.

A shard (``<content digest>.npz``) holds ``keys`` (n x 32 bytes), ``vectors`` (n x d
float32) and ``meta`` (JSON: format, identity, normalisation, dimension, dtype, count and
the sha256 of the keys' and vectors' bytes). On load a shard is used only if it reads whole,
its meta names this identity and normalisation, its arrays have the recorded shapes and
checksum, and every vector is finite and of unit norm; otherwise it is ignored with one
warning naming it (its texts are embedded again), or with ``strict`` it is an InputError.

Writes go to a unique temporary file in the shard folder (``mkstemp``, a name starting with
``.``), are fsync'd, then renamed into place (and the folder fsync'd): a reader never opens a
temporary file (it lists ``[!.]*.npz`` only), a killed writer leaves at most a hidden
temporary file, and two writers of the same texts each rename a whole shard.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragspan.base.errors import InputError, UsageError, present
from ragspan.io.outputs import current_umask

log = logging.getLogger("ragspan")
CACHE_FORMAT = 2
NORMALISATION = "l2"
UNIT_NORM_TOLERANCE = 1e-3
_CHUNK = 1 << 20


# ---- model identity --------------------------------------------------------------------------

def model_files(folder: Path) -> list[Path]:
    """Every file that can change what a model computes: the regular files under
    ``folder`` (links followed), but hidden ones (``.git``, ``.cache``) and ``*.md``."""
    out = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and not name.lower().endswith(".md"):
                out.append(Path(root) / name)
    return out


def _stats(folder: Path, files: list[Path]) -> list[list[Any]]:
    rows = []
    for f in files:
        st = f.stat()
        rows.append([f.relative_to(folder).as_posix(), st.st_size, st.st_mtime_ns])
    return rows


def folder_digest(folder: Path, files: list[Path]) -> str:
    """sha256 over each file's relative path, size and contents, in path order."""
    h = hashlib.sha256()
    for f in files:
        rel = f.relative_to(folder).as_posix().encode("utf-8")
        h.update(len(rel).to_bytes(8, "big") + rel + f.stat().st_size.to_bytes(8, "big"))
        with f.open("rb") as fh:
            while block := fh.read(_CHUNK):
                h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class ModelIdentity:
    """What a cached vector was made by: ``digest`` of the model's files, the ``folder`` they
    were read from, and the vector dimension when known (remembered with the digest)."""

    digest: str
    folder: str
    dim: int | None = None

    @property
    def key(self) -> str:
        """The shard folder's name: first 16 hex digits of sha256(identity | normalisation)."""
        return hashlib.sha256(f"{self.digest}|{NORMALISATION}".encode()).hexdigest()[:16]


def hub_snapshot(name: str) -> Path | None:
    """The local snapshot folder of hub model ``name`` (its resolved revision), if the
    huggingface_hub cache holds it; None otherwise (nothing is downloaded here)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - sentence-transformers brings it
        return None
    for probe in ("modules.json", "config.json"):
        try:
            found = try_to_load_from_cache(name, probe)
        except Exception:  # an invalid repo id: not a hub model
            return None
        if isinstance(found, str):
            return Path(found).parent
    return None


def model_identity(folder: Path, memo_root: Path | None) -> ModelIdentity:
    """The identity of the model in ``folder``, computed once and remembered under
    ``memo_root`` (``models/<sha256 of the folder's path>.json``) by every file's relative
    path, size and mtime: an unchanged folder is only stat'ed."""
    folder = folder.resolve()
    files = model_files(folder)
    if not files:
        raise UsageError(f"the embedding model folder {folder} holds no model files")
    stats = _stats(folder, files)
    memo = memo_path(memo_root, str(folder))
    if memo is not None:
        try:
            known = json.loads(memo.read_text(encoding="utf-8"))
            if known.get("files") == stats and isinstance(known.get("digest"), str):
                dim = known.get("dim")
                return ModelIdentity(known["digest"], str(folder),
                                     dim if isinstance(dim, int) else None)
        except (OSError, ValueError):
            pass
    identity = ModelIdentity(folder_digest(folder, files), str(folder))
    if memo is not None:
        remember(memo, identity, stats)
    return identity


def remember(memo: Path, identity: ModelIdentity, stats: list[list[Any]] | None = None) -> None:
    """Write (atomically) the memo of ``identity``; ``stats`` default to the folder's now."""
    folder = Path(identity.folder)
    if stats is None:
        stats = _stats(folder, model_files(folder))
    body = json.dumps({"folder": identity.folder, "files": stats, "digest": identity.digest,
                       "dim": identity.dim}, sort_keys=True).encode("utf-8")
    try:
        atomic_write(memo, lambda fh: fh.write(body), suffix=".json")
    except OSError as exc:  # a read-only cache still works, it just hashes again next time
        log.debug("cannot remember the model identity in %s: %s", memo, exc)


def memo_path(memo_root: Path | None, folder: str) -> Path | None:
    if memo_root is None:
        return None
    return memo_root / "models" / (hashlib.sha256(str(Path(folder).resolve()).encode())
                                   .hexdigest()[:24] + ".json")


# ---- writing -----------------------------------------------------------------------------------

def atomic_write(path: Path, write: Callable[[Any], Any], suffix: str = "") -> None:
    """``write(file)`` into a unique temporary file beside ``path`` (hidden: its name starts
    with ``.``), fsync it, rename it to ``path`` and fsync the folder. A crash leaves at most
    the hidden temporary file, never a partial ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + suffix,
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory fds
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)


def checksum(keys: np.ndarray, vectors: np.ndarray) -> str:
    h = hashlib.sha256(np.ascontiguousarray(keys).tobytes())
    h.update(np.ascontiguousarray(vectors).tobytes())
    return h.hexdigest()


# ---- the cache -----------------------------------------------------------------------------------

class EmbeddingCache:
    """L2-normalised float32 vectors of one model identity, keyed by sha256(text), in
    verified ``.npz`` shards under ``root / identity.key``. ``root`` None: memory only."""

    def __init__(self, root: Path | None, identity: ModelIdentity | None, strict: bool = False):
        self.identity = identity
        self.strict = strict
        self.dir = None if root is None or identity is None else Path(root) / identity.key
        self.vectors: dict[bytes, np.ndarray] = {}
        self.ignored: list[str] = []
        if self.dir is not None and self.dir.is_dir():
            for shard in sorted(self.dir.glob("[!.]*.npz")):
                self._load(shard)

    def _load(self, shard: Path) -> None:
        try:
            keys, vectors = self.verified(shard)
        except _Unusable as why:
            if self.strict:
                raise InputError(f"embedding cache shard is unusable: {why}", str(shard)) from None
            self.ignored.append(str(shard))
            log.warning("%s: embedding cache shard ignored (%s); its texts are embedded again",
                        shard, why)
            return
        for key, vec in zip(keys, vectors):
            self.vectors[key.tobytes()] = vec

    def verified(self, shard: Path) -> tuple[np.ndarray, np.ndarray]:
        """The shard's keys and vectors if it passes every check (module docstring), else
        ``_Unusable`` with the reason."""
        if self.identity is None:  # pragma: no cover - no folder is read without one
            raise _Unusable("no model identity")
        try:
            if shard.stat().st_size == 0:
                raise _Unusable("empty file")
            with np.load(shard, allow_pickle=False) as data:
                if not {"keys", "vectors", "meta"} <= set(data.files):
                    raise _Unusable("not a shard of cache format "
                                    f"{CACHE_FORMAT} (arrays {sorted(data.files)})")
                keys, vectors, meta_raw = data["keys"], data["vectors"], data["meta"]
        except _Unusable:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise _Unusable(f"unreadable: {exc}") from None
        try:
            meta = json.loads(str(meta_raw))
        except ValueError:
            raise _Unusable("its meta is not JSON") from None
        if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
            raise _Unusable(f"not a shard of cache format {CACHE_FORMAT}")
        if meta.get("identity") != self.identity.digest or meta.get("normalisation") != NORMALISATION:
            raise _Unusable("made by another model (identity "
                            f"{str(meta.get('identity'))[:12]}, this model is "
                            f"{self.identity.digest[:12]})")
        n, dim = meta.get("count"), meta.get("dim")
        if keys.dtype != np.uint8 or keys.shape != (n, 32) or vectors.dtype != np.float32 \
                or vectors.shape != (n, dim):
            raise _Unusable(f"arrays of the wrong shape or type (keys {keys.shape} {keys.dtype}, "
                            f"vectors {vectors.shape} {vectors.dtype}; recorded {n} x {dim})")
        if self.identity.dim is not None and dim != self.identity.dim:
            raise _Unusable(f"vectors of dimension {dim}, the model's is {self.identity.dim}")
        if checksum(keys, vectors) != meta.get("sha256"):
            raise _Unusable("checksum mismatch (the arrays were changed)")
        if not np.isfinite(vectors).all():
            raise _Unusable("a vector holds NaN or infinity")
        norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
        if n and float(np.abs(norms - 1.0).max()) > UNIT_NORM_TOLERANCE:
            raise _Unusable(f"a vector is not of unit norm ({float(norms.min()):.4f} to "
                            f"{float(norms.max()):.4f})")
        return keys, vectors

    def add(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Remember ``vectors`` (n x d float32, L2-normalised) for ``keys`` and write them as
        one shard (atomically, see the module docstring)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        for k, v in zip(keys, vectors):
            self.vectors[k] = v
        if self.dir is None or not keys:
            return
        key_matrix = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        identity = present(self.identity, "the model identity")
        meta = json.dumps({"format": CACHE_FORMAT, "identity": identity.digest,
                           "normalisation": NORMALISATION, "dim": int(vectors.shape[1]),
                           "dtype": "float32", "count": len(keys),
                           "sha256": checksum(key_matrix, vectors)}, sort_keys=True)
        name = hashlib.sha256(b"".join(sorted(keys))).hexdigest()[:24]
        atomic_write(self.dir / f"{name}.npz",
                     lambda fh: np.savez(fh, keys=key_matrix, vectors=vectors,
                                         meta=np.array(meta)), suffix=".npz")


class _Unusable(Exception):
    """Why a shard cannot be used."""


def check_cache_dir(path: Path) -> None:
    """A cache folder that is a file (or cannot be made) is a usage error naming it."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"--cache-dir {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--cache-dir {path}: cannot create it ({exc.strerror})") from None
