"""Qdrant's engine in-process (``qdrant-edge-py``): ``[dense] backend = "qdrant-edge"``
(exact search equal to the numpy index, HNSW with its ann_recall), and a user's edge shard or
snapshot evaluated offline and read-only; the filters of the server paths as payload
conditions on the engine."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile

import numpy as np
import pytest

from conftest import ROOT, run_cli

pytest.importorskip("qdrant_edge", reason="the retrieval extra is not installed")


def _vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_edge_exact_equals_the_numpy_index_with_and_without_filters():
    from ragspan.retrieval.edge_index import EdgeIndex
    from ragspan.retrieval.index import ExactIndex

    vecs = _vectors(3000, 48)
    payloads = [{"doc_id": f"d{i % 40}", "kind": "odd" if i % 2 else "even", "year": i % 7}
                for i in range(3000)]
    queries = _vectors(60, 48, seed=1)
    filters = [None, {"doc_id": "d3"}, {"kind": "odd", "year": [1, 2]}] * 20
    edge = EdgeIndex(vecs, payloads)
    try:
        got = edge.search_batch(queries, 10, filters)
        single = edge.search(queries[5], 10, None, filters[5])
    finally:
        edge.close()
    exact = ExactIndex(vecs)
    for q, f, (ids, scores) in zip(queries, filters, got):
        allowed = None if f is None else np.array(
            [i for i, p in enumerate(payloads) if all(
                p[k] in (v if isinstance(v, list) else [v]) for k, v in f.items())])
        want_ids, want_scores = exact.search(q, 10, allowed)
        assert ids.tolist() == want_ids.tolist()
        np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    assert single[0].tolist() == got[5][0].tolist()
    assert edge.ann_recall(10) is None  # exact search: nothing approximate to measure
    assert not os.path.exists(edge.dir)  # its folder is removed


def test_hnsw_reports_its_recall():
    """HNSW measured as HNSW: the graph is searched whatever the corpus size (400 points, far
    under Qdrant's 10 MB full-scan threshold, reach it too), the report says how many points
    the graph holds, and a 20,000-point shard's recall at a narrow beam is below 1 where the
    exact search's is 1."""
    from ragspan.retrieval.edge_index import EdgeIndex, query_recall
    from ragspan.retrieval.index import Hnsw

    vecs = _vectors(400, 16)
    payloads = [{"doc_id": f"d{i % 4}"} for i in range(400)]
    queries = _vectors(30, 16, seed=2)
    for ef, low in ((400, 1.0), (10, None)):
        small = EdgeIndex(vecs, payloads, hnsw=Hnsw(m=4, ef_construct=8, ef=ef))
        try:
            small.search_batch(queries, 10, [None] * 30)
            recall = small.ann_recall(10)
        finally:
            small.close()
        assert recall is not None and recall.queries == 30
        assert recall.points_in_graph == 400 and recall.points_scanned == 0
        assert recall.mean == 1.0 if low == 1.0 else recall.mean < 1.0, recall
    big, q = _vectors(20_000, 32), _vectors(40, 32, seed=3)
    narrow = EdgeIndex(big, [{"doc_id": "d"}] * 20_000, hnsw=Hnsw(m=4, ef_construct=8, ef=10))
    exact = EdgeIndex(big, [{"doc_id": "d"}] * 20_000)
    try:
        found = narrow.search_batch(q, 10, [None] * 40)
        recall = narrow.ann_recall(10)
        truth = exact.search_batch(q, 10, [None] * 40)
    finally:
        narrow.close()
        exact.close()
    assert recall is not None and 0.0 <= recall.min <= recall.mean < 1.0
    assert recall.points_in_graph == 20_000
    # the same queries searched exactly: recall 1 against brute force over the vectors
    brute = np.argsort(-(q @ big.T), axis=1, kind="stable")[:, :10]
    assert all(query_recall(ids.tolist(), b.tolist()) == 1.0 for (ids, _), b in zip(truth, brute))
    assert np.mean([query_recall(ids.tolist(), b.tolist())
                    for (ids, _), b in zip(found, brute)]) == pytest.approx(recall.mean)


def test_hnsw_config_needs_a_graph_backend(tmp_path):
    from ragspan.base.errors import InputError
    from ragspan.retrieval.config import load_config

    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "x"\n[dense]\nsearch = "hnsw"\n', encoding="utf-8")
    with pytest.raises(InputError, match="qdrant-edge"):
        load_config(str(cfg))
    cfg.write_text('name = "x"\n[dense]\nbackend = "qdrant-edge"\nqdrant_path = "/tmp/x"\n',
                   encoding="utf-8")
    with pytest.raises(InputError, match="in-process"):
        load_config(str(cfg))


def _digests(folder) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.mark.model
def test_a_user_s_shard_and_snapshot_offline_and_read_only(tmp_path):
    """The bundled example chunked and embedded by 'the user's pipeline' into an edge shard:
    run-retriever evaluates it (exact, as the numpy index ranks the same vectors) and leaves
    every file of it as it was; a snapshot of it gives the same run."""
    pytest.importorskip("sentence_transformers")
    import qdrant_edge as qe

    from ragspan.retrieval.embed import Embedder

    corpus = [json.loads(x) for x in (ROOT / "examples" / "cuad" / "corpus.jsonl")
              .read_text(encoding="utf-8").splitlines()]
    chunks = [(d["id"], s, min(s + 800, len(d["text"]))) for d in corpus
              for s in range(0, len(d["text"]), 800)]
    texts = {d["id"]: d["text"] for d in corpus}
    vecs = Embedder("all-MiniLM-L6-v2", tmp_path / "cache").embed(
        [texts[d][s:e] for d, s, e in chunks], "embedding")
    shard_dir = tmp_path / "user-shard"
    shard = qe.EdgeShard.create(str(shard_dir), qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=int(vecs.shape[1]), distance=qe.Distance.Dot)))
    shard.update(qe.UpdateOperation.upsert_points([
        qe.Point(i, vecs[i].tolist(), {"source": d, "from": s, "to": e})
        for i, (d, s, e) in enumerate(chunks)]))
    shard.flush()
    shard.close()
    before = _digests(shard_dir)
    common = ["--corpus", ROOT / "examples" / "cuad" / "corpus.jsonl", "--eval-set",
              ROOT / "examples" / "cuad" / "eval.jsonl", "--doc-key", "source", "--start-key",
              "from", "--end-key", "to", "--cache-dir", tmp_path / "cache", "--depth", "5"]
    res = run_cli("run-retriever", "--edge-shard", shard_dir, *common, "--out",
                  tmp_path / "run.jsonl", "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    assert _digests(shard_dir) == before  # not one byte of the user's shard changed
    rows = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()][1:]
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert report["edge_shard"]["points"] == len(chunks)
    assert report["edge_shard"]["search"]["exact"] is True
    # what the run was made with is in its header: the scope, and the shard's identity (its
    # files' digest), so two runs of other settings never have the same header
    header = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])["_header"]
    assert header["edge_shard"]["search"]["scope"] == "doc_id"
    assert len(header["edge_shard"]["sha256"]) == 64
    res = run_cli("run-retriever", "--edge-shard", shard_dir, *common, "--scope", "none",
                  "--out", tmp_path / "run-none.jsonl")
    assert res.exit_code == 0, res.stderr
    other = json.loads((tmp_path / "run-none.jsonl").read_text().splitlines()[0])["_header"]
    assert other["edge_shard"]["search"]["scope"] == "none"
    assert other["edge_shard"]["sha256"] == header["edge_shard"]["sha256"]
    # exact: the numpy index over the same vectors ranks each scoped query the same
    qvecs = Embedder("all-MiniLM-L6-v2", tmp_path / "cache").embed(
        [json.loads(x)["query"] for x in (ROOT / "examples" / "cuad" / "eval.jsonl")
         .read_text(encoding="utf-8").splitlines()[1:]], "queries")
    evalrows = [json.loads(x) for x in (ROOT / "examples" / "cuad" / "eval.jsonl")
                .read_text(encoding="utf-8").splitlines()[1:]]
    for q, row, qv in zip(evalrows, rows, qvecs):
        mine = np.array([i for i, c in enumerate(chunks) if c[0] == q["doc_id"]])
        scores = vecs[mine] @ qv
        order = mine[np.lexsort((mine, -scores))][:5]
        assert [(s["doc_id"], s["start"]) for s in row["retrieved"]] == \
            [(chunks[i][0], chunks[i][1]) for i in order]
    snap = tmp_path / "user.snapshot"
    with tarfile.open(snap, "w") as tar:
        for name in os.listdir(shard_dir):
            tar.add(shard_dir / name, arcname=name)
    res = run_cli("run-retriever", "--snapshot", snap, *common, "--out",
                  tmp_path / "run-snap.jsonl")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "run-snap.jsonl").read_text().splitlines()[1:] == \
        (tmp_path / "run.jsonl").read_text().splitlines()[1:]  # the header names its source
    res = run_cli("run-retriever", "--edge-shard", shard_dir, *common, "--hnsw-ef", "64",
                  "--out", tmp_path / "run-hnsw.jsonl", "--report", tmp_path / "rh.json")
    assert res.exit_code == 0, res.stderr
    recall = json.loads((tmp_path / "rh.json").read_text())["predicate"]["summary"]["ann_recall"]
    assert 0.0 <= recall["mean"] <= 1.0 and recall["k"] == 5
    assert _digests(shard_dir) == before


@pytest.mark.parametrize("args,expected", [
    (["--edge-shard", "nope"], "no such folder"),
    (["--snapshot", "nope.snapshot"], "no such file"),
    (["--edge-shard", "x", "--snapshot", "y"], "not both"),
    (["--edge-shard", "x", "--qdrant-url", "http://h:6333"], "in-process"),
])
def test_bad_shard_arguments(tmp_path, args, expected):
    shutil.copy(ROOT / "examples" / "cuad" / "corpus.jsonl", tmp_path / "c.jsonl")
    res = run_cli("run-retriever", "--corpus", tmp_path / "c.jsonl", "--eval-set",
                  ROOT / "examples" / "cuad" / "eval.jsonl", "--out", tmp_path / "r.jsonl",
                  *[str(tmp_path / a) if a in ("nope", "nope.snapshot") else a for a in args])
    assert res.exit_code in (2, 3) and expected in res.stderr, res.stderr


@pytest.mark.model
def test_the_pipeline_on_the_edge_backend_equals_the_exact_one(tmp_path):
    """``[dense] backend = "qdrant-edge"`` on the bundled example gives the exact backend's
    run (order equal, scores within 1e-5); with ``search = "hnsw"`` the report states its
    ann_recall."""
    pytest.importorskip("sentence_transformers")
    base = ('name = "{n}"\ndepth = 5\n[chunker]\nkind = "fixed"\nsize = 1000\n[filter]\n'
            'scope = "doc_id"\n[dense]\nbackend = "{b}"\ndepth = 20\n{extra}')
    runs = {}
    for name, backend, extra in (("exact", "exact", ""), ("edge", "qdrant-edge", ""),
                                 ("hnsw", "qdrant-edge", 'search = "hnsw"\nhnsw_ef = 64\n')):
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(base.format(n=name, b=backend, extra=extra), encoding="utf-8")
        res = run_cli("run-retriever", "--corpus", ROOT / "examples" / "cuad" / "corpus.jsonl",
                      "--eval-set", ROOT / "examples" / "cuad" / "eval.jsonl", "--config", cfg,
                      "--cache-dir", tmp_path / "cache", "--out", tmp_path / f"{name}.jsonl",
                      "--report", tmp_path / f"{name}.json")
        assert res.exit_code == 0, res.stderr
        runs[name] = [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text()
                      .splitlines()][1:]
    for a, b in zip(runs["exact"], runs["edge"]):
        assert [s["chunk_id"] for s in a["retrieved"]] == [s["chunk_id"] for s in b["retrieved"]]
        np.testing.assert_allclose([s["score"] for s in a["retrieved"]],
                                   [s["score"] for s in b["retrieved"]], atol=1e-5)
    summary = json.loads((tmp_path / "hnsw.json").read_text())["predicate"]["summary"]
    assert 0.0 <= summary["ann_recall"]["mean"] <= 1.0 and summary["ann_recall"]["k"] == 20
    assert "ann_recall" not in json.loads((tmp_path / "edge.json").read_text())["predicate"][
        "summary"]


@pytest.mark.model
def test_a_users_quantized_shard_reports_each_loss(tmp_path):
    """--hnsw-ef on the user's shard: the graph's own loss (searched at full precision
    against exact search) and quantization's (the graph as configured against it) apart;
    a shard under its full-scan threshold is named as scanned, its recall meaning nothing."""
    pytest.importorskip("sentence_transformers")
    import qdrant_edge as qe

    corpus = [json.loads(x) for x in (ROOT / "examples" / "cuad" / "corpus.jsonl")
              .read_text(encoding="utf-8").splitlines()]
    chunks = [(d["id"], s, min(s + 200, len(d["text"]))) for d in corpus
              for s in range(0, len(d["text"]), 200)]
    vecs = _vectors(len(chunks), 384)
    common = ["--corpus", ROOT / "examples" / "cuad" / "corpus.jsonl", "--eval-set",
              ROOT / "examples" / "cuad" / "eval.jsonl", "--cache-dir", tmp_path / "cache",
              "--depth", "5", "--hnsw-ef", "8", "--scope", "none"]
    for name, threshold, quantize in (("plain", 10_000, False), ("quantized", 1, True)):
        folder = tmp_path / name
        params = qe.EdgeVectorParams(size=384, distance=qe.Distance.Dot,
                                     quantization_config=qe.BinaryQuantizationConfig(
                                         always_ram=True) if quantize else None)
        shard = qe.EdgeShard.create(str(folder), qe.EdgeConfig(
            vectors=params, hnsw_config=qe.HnswIndexConfig(
                m=4, ef_construct=8, full_scan_threshold=threshold),
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1)))
        shard.update(qe.UpdateOperation.upsert_points([
            qe.Point(i, vecs[i].tolist(), {"doc_id": d, "start": s, "end": e})
            for i, (d, s, e) in enumerate(chunks)]))
        shard.optimize()
        shard.close()
        res = run_cli("run-retriever", "--edge-shard", folder, *common, "--out",
                      tmp_path / f"{name}.jsonl", "--report", tmp_path / f"{name}.json")
        assert res.exit_code == 0, res.stderr
        recall = json.loads((tmp_path / f"{name}.json").read_text())["predicate"]["summary"][
            "ann_recall"]
        assert recall["points_in_graph"] == len(chunks) and recall["quantized"] is quantize
        if quantize:
            assert {"hnsw", "quantization"} <= set(recall)
            assert recall["hnsw"]["mean"] < 1.0  # a beam of 8 misses, whatever the vectors
        else:
            assert "full-scan threshold" in recall["note"] and recall["mean"] == 1.0
