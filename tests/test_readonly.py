"""Read-only is read-only: a user's shard folder is copied without a link copied as a link
(which the engine would write through), holes kept, pipes and devices refused; a snapshot's
members are checked, and its declared size bounded, before a byte is unpacked; a corrupt
shard is one input-error line naming it, never a traceback or a Rust panic's text."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, assert_input_error, run_cli
from ragspan.base.errors import InputError
from ragspan.io.readonly import UNPACK_RATIO, check_archive, copy_tree

EX = ROOT / "examples" / "cuad"


def _state(folder: Path) -> dict[str, tuple[str, int]]:
    """Each file under ``folder`` (links followed): its sha256 and mtime."""
    out = {}
    for root, _, files in os.walk(folder, followlinks=True):
        for name in files:
            path = Path(root) / name
            out[str(path.relative_to(folder))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


# ---- copy_tree -----------------------------------------------------------------------------


def test_a_sparse_file_stays_sparse(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "wal", "wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # 64 MB apparent, nothing written
        fh.seek(10 * 1024 * 1024)
        fh.write(b"data in the middle")
    if (src / "wal").stat().st_blocks * 512 > 1024 * 1024:
        pytest.skip("this file system does not keep holes")
    copy_tree(str(src), str(tmp_path / "copy"))
    copied = tmp_path / "copy" / "wal"
    assert copied.read_bytes() == (src / "wal").read_bytes()
    assert copied.stat().st_size == 64 * 1024 * 1024
    assert copied.stat().st_blocks * 512 <= 1024 * 1024  # not written out dense


def test_a_link_is_copied_as_what_it_points_at(tmp_path):
    """The shard's segments/ a link to another folder (a user's second disk): the copy holds
    a real folder with the same bytes, so nothing the engine writes can reach the original."""
    elsewhere = tmp_path / "disk2" / "segments"
    elsewhere.mkdir(parents=True)
    (elsewhere / "a.dat").write_bytes(b"segment bytes")
    src = tmp_path / "shard"
    src.mkdir()
    (src / "segments").symlink_to(elsewhere)
    (src / "config.json").symlink_to(elsewhere / "a.dat")
    copy_tree(str(src), str(tmp_path / "copy"))
    seg = tmp_path / "copy" / "segments"
    assert seg.is_dir() and not seg.is_symlink()
    assert not (tmp_path / "copy" / "config.json").is_symlink()
    assert (seg / "a.dat").read_bytes() == b"segment bytes"
    (seg / "a.dat").write_bytes(b"written by the engine")
    assert (elsewhere / "a.dat").read_bytes() == b"segment bytes"


@pytest.mark.parametrize("make, expected", [
    (lambda d: (d / "loop").symlink_to(d), "links back into a folder it is in"),
    (lambda d: (d / "gone").symlink_to(d / "nowhere"), "is a link to nothing"),
    (lambda d: os.mkfifo(d / "pipe"), "'pipe' is a named pipe"),
])
def test_what_cannot_be_copied_is_refused_naming_it(tmp_path, make, expected):
    src = tmp_path / "shard"
    src.mkdir()
    (src / "ok.dat").write_bytes(b"x")
    make(src)
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=expected) as err:
        copy_tree(str(src), str(tmp_path / "copy"))
    assert time.perf_counter() - t0 < 5  # a pipe is never opened (it would block)
    assert err.value.path == str(src)


# ---- check_archive -------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar makes the sparse member")
def test_a_snapshot_declaring_200_gb_is_refused_before_unpacking(tmp_path):
    """A GNU sparse member of 200 GB in an archive of a few KB: refused from its header."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "segment.dat", "wb") as fh:
        fh.truncate(200 * 1024 ** 3)
    snap = tmp_path / "bomb.snapshot"
    subprocess.run(["tar", "-S", "-cf", str(snap), "-C", str(src), "."], check=True)
    assert snap.stat().st_size < 100_000
    opened = []  # from the headers: no member's data is read
    real = tarfile.TarFile.extractfile
    tarfile.TarFile.extractfile = lambda self, m: opened.append(m) or real(self, m)
    try:
        with pytest.raises(InputError, match=r"declare 214,748,364,800 bytes unpacked"):
            check_archive(str(snap))
    finally:
        tarfile.TarFile.extractfile = real
    assert opened == []
    res = run_cli("run-retriever", "--snapshot", snap, "--corpus", EX / "corpus.jsonl",
                  "--eval-set", EX / "eval.jsonl", "--out", tmp_path / "run.jsonl",
                  "--no-cache")
    assert_input_error(res, "bomb.snapshot", "past the limit of", "--max-unpacked-bytes")
    assert not (tmp_path / "run.jsonl").exists()


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w") as tar:
        for m in members:
            tar.addfile(m, None if not m.isreg() else __import__("io").BytesIO(b"x" * m.size))
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0,
            link: str = "") -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type, m.size, m.linkname = kind, size, link
    return m


@pytest.mark.parametrize("member, expected", [
    (_member("segments/x", tarfile.SYMTYPE, link="/etc/passwd"), "is a link"),
    (_member("segments/x", tarfile.LNKTYPE, link="a"), "is a link"),
    (_member("../outside.dat", size=1), "points outside"),
    (_member("/abs.dat", size=1), "points outside"),
    (_member("pipe", tarfile.FIFOTYPE), "special file"),
    (_member("dev", tarfile.CHRTYPE), "special file"),
])
def test_a_snapshot_member_that_is_not_a_file_or_folder_is_refused(tmp_path, member, expected):
    snap = _tar(tmp_path / "s.snapshot", [_member("edge_config.json", size=4), member])
    with pytest.raises(InputError, match=expected):
        check_archive(str(snap))


def test_the_limit_is_a_ratio_of_the_archive_and_can_be_raised(tmp_path):
    snap = _tar(tmp_path / "s.snapshot", [_member("a.dat", size=1000)])
    facts = check_archive(str(snap))
    assert facts.limit == UNPACK_RATIO * snap.stat().st_size and facts.declared_bytes == 1000
    with pytest.raises(InputError, match="declare 1,000 bytes"):
        check_archive(str(snap), limit=999)
    # a nested archive counts what its own members declare
    inner = _tar(tmp_path / "inner.tar", [_member("big.dat", size=50_000)])
    with tarfile.open(tmp_path / "outer.snapshot", "w") as tar:
        tar.add(inner, arcname="segments/seg.tar")
    with pytest.raises(InputError, match="segments/seg.tar/big.dat"):
        check_archive(str(tmp_path / "outer.snapshot"), limit=40_000)


def test_max_unpacked_bytes_applies_to_snapshots_only(tmp_path):
    shard = tmp_path / "shard"
    shard.mkdir()
    res = run_cli("run-retriever", "--edge-shard", shard, "--max-unpacked-bytes", "10",
                  "--corpus", EX / "corpus.jsonl", "--eval-set", EX / "eval.jsonl",
                  "--out", tmp_path / "run.jsonl")
    assert res.exit_code == 2 and "--max-unpacked-bytes applies to --snapshot" in res.stderr


# ---- the user's shard, end to end (the real engine and model) -------------------------------


def _shard(folder: Path, dim: int = 384) -> list[tuple[str, int, int]]:
    """A shard of the bundled example's documents cut in 800-character chunks, with random
    vectors (what is checked here is what the copy does, not the ranking)."""
    import qdrant_edge as qe

    docs = [json.loads(x) for x in (EX / "corpus.jsonl").read_text(encoding="utf-8")
            .splitlines()]
    chunks = [(d["id"], s, min(s + 800, len(d["text"]))) for d in docs
              for s in range(0, len(d["text"]), 800)]
    vecs = np.random.default_rng(0).standard_normal((len(chunks), dim)).astype(np.float32)
    shard = qe.EdgeShard.create(str(folder), qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Dot)))
    shard.update(qe.UpdateOperation.upsert_points([
        qe.Point(i, vecs[i].tolist(), {"doc_id": d, "start": s, "end": e})
        for i, (d, s, e) in enumerate(chunks)]))
    shard.flush()
    shard.close()
    return chunks


COMMON = ["--corpus", EX / "corpus.jsonl", "--eval-set", EX / "eval.jsonl", "--depth", "3"]


@pytest.mark.model
def test_a_shard_whose_segments_and_wal_are_links_is_left_as_it_was(tmp_path):
    """Kept as links, the copy was opened in place: a journal deleted, four files
    rewritten. Now every byte and mtime of the linked folders stays as it was, the run is
    the same as the plain shard's, and the copy of its sparse files stays small."""
    pytest.importorskip("qdrant_edge")
    plain = tmp_path / "plain"
    _shard(plain)
    linked = tmp_path / "linked"
    linked.mkdir()
    disk2 = tmp_path / "disk2"
    disk2.mkdir()
    for name in os.listdir(plain):
        if name in ("segments", "wal"):
            shutil.copytree(plain / name, disk2 / name)
            (linked / name).symlink_to(disk2 / name)
        else:
            shutil.copy2(plain / name, linked / name)
    before = _state(disk2)
    runs = {}
    for name, folder in (("plain", plain), ("linked", linked)):
        res = run_cli("run-retriever", "--edge-shard", folder, *COMMON, "--out",
                      tmp_path / f"{name}.jsonl", "--cache-dir", tmp_path / "cache")
        assert res.exit_code == 0, res.stderr
        runs[name] = (tmp_path / f"{name}.jsonl").read_text().splitlines()[1:]
    assert _state(disk2) == before
    assert (linked / "segments").is_symlink() and (linked / "wal").is_symlink()
    assert runs["linked"] == runs["plain"]


@pytest.mark.model
def test_a_corrupt_shard_is_one_line_naming_it(tmp_path):
    """A truncated status file makes the engine panic while loading: exit 3, one line
    naming the user's folder, no traceback, no panic text, no temporary path."""
    pytest.importorskip("qdrant_edge")
    shard = tmp_path / "shard"
    _shard(shard)
    (status,) = shard.glob("segments/*/vector_storage/vectors/status.dat")
    os.truncate(status, 3)
    res = run_cli("run-retriever", "--edge-shard", shard, *COMMON, "--out",
                  tmp_path / "run.jsonl", "--cache-dir", tmp_path / "cache")
    assert_input_error(res, str(shard), "not a Qdrant edge shard", "engine stopped on it")
    for noise in ("panicked", "PanicException", "RUST_BACKTRACE", "index out of bounds",
                  "ragspan-edge-copy"):
        assert noise not in res.stderr, res.stderr
    # a payload page overwritten: the engine's own error, with the user's path in it
    shard2 = tmp_path / "shard2"
    _shard(shard2)
    (page,) = shard2.glob("segments/*/payload_storage/page_0.dat")
    with open(page, "r+b") as fh:
        fh.write(os.urandom(4096))
    res = run_cli("run-retriever", "--edge-shard", shard2, *COMMON, "--out",
                  tmp_path / "run2.jsonl", "--cache-dir", tmp_path / "cache")
    assert_input_error(res, str(shard2), "the shard cannot be searched")
    assert "ragspan-edge-copy" not in res.stderr


@pytest.mark.model
def test_a_named_pipe_in_the_shard_is_refused(tmp_path):
    pytest.importorskip("qdrant_edge")
    shard = tmp_path / "shard"
    _shard(shard)
    os.mkfifo(shard / "wal" / "stuck")
    res = run_cli("run-retriever", "--edge-shard", shard, *COMMON, "--out",
                  tmp_path / "run.jsonl", "--cache-dir", tmp_path / "cache")
    assert_input_error(res, str(shard), "'wal/stuck' is a named pipe")


def test_archives_nested_too_deep_are_refused(tmp_path):
    inner = _tar(tmp_path / "a0.tar", [_member("x.dat", size=1)])
    for i in range(1, 8):
        outer = tmp_path / f"a{i}.tar"
        with tarfile.open(outer, "w") as tar:
            tar.add(inner, arcname=f"n{i}.tar")
        inner = outer
    with pytest.raises(InputError, match="nests archives more than 4 deep"):
        check_archive(str(inner), limit=10 ** 9)


def test_a_collection_snapshot_of_several_shards_is_refused_naming_the_count(tmp_path):
    snap = _tar(tmp_path / "c.snapshot", [
        _member("config.json", size=2), _member("0/segments/a.tar", size=10),
        _member("1/segments/b.tar", size=10), _member("2/segments/c.tar", size=10)])
    assert check_archive(str(snap)).shards == ("0", "1", "2")
    res = run_cli("run-retriever", "--snapshot", snap, "--corpus", EX / "corpus.jsonl",
                  "--eval-set", EX / "eval.jsonl", "--out", tmp_path / "run.jsonl",
                  "--no-cache")
    assert_input_error(res, "c.snapshot", "a collection's snapshot of 3 shards (0, 1, 2)")
    one = _tar(tmp_path / "one.snapshot", [_member("segments/a.tar", size=10)])
    assert check_archive(str(one)).shards == ()


@pytest.mark.parametrize("spelled", ["segments/seg.tar/", "./segments//seg.tar",
                                     "segments\\seg.tar"])
def test_a_nested_archive_is_checked_whatever_its_name_spelling(tmp_path, spelled):
    """``segments/<uuid>.tar/`` (a trailing slash) escaped the header check, and Qdrant's
    engine restored it: a 200 GB sparse chunk reached 4 GB in 11 s. Names are normalised
    before they are checked."""
    import io

    inner = _tar(tmp_path / "inner.tar", [_member("big.dat", size=50_000)])
    data = inner.read_bytes()
    with tarfile.open(tmp_path / "outer.snapshot", "w", format=tarfile.GNU_FORMAT) as tar:
        m = tarfile.TarInfo("placeholder")
        m.size = len(data)
        m.name = spelled
        tar.addfile(m, io.BytesIO(data))
    with pytest.raises(InputError, match=r"segments/seg\.tar/big\.dat"):
        check_archive(str(tmp_path / "outer.snapshot"), limit=40_000)


def test_a_member_twice_or_a_folder_with_data_is_refused(tmp_path):
    import io

    snap = tmp_path / "twice.snapshot"
    with tarfile.open(snap, "w") as tar:
        for name in ("segments/a.dat", "./segments/a.dat"):
            m = tarfile.TarInfo(name)
            m.size = 1
            tar.addfile(m, io.BytesIO(b"x"))
    with pytest.raises(InputError, match="'segments/a.dat' appears twice"):
        check_archive(str(snap))
    snap = tmp_path / "dir.snapshot"
    with tarfile.open(snap, "w") as tar:
        m = tarfile.TarInfo("segments")
        m.type, m.size = tarfile.DIRTYPE, 512
        tar.addfile(m, io.BytesIO(b"x" * 512))
    with pytest.raises(InputError, match="is a folder entry that carries 512 bytes"):
        check_archive(str(snap))
