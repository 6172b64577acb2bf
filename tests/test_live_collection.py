"""The index you run: a Qdrant collection a user's own pipeline built, evaluated read-only; and
ragspan's own server collections, never left behind."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from conftest import patch_everywhere, run_cli, write_jsonl
from ragspan.base.errors import InputError

pytest.importorskip("qdrant_client", reason="the retrieval extra is not installed")

TEXTS = [
    "The licensee shall pay royalties of five percent of net sales every quarter.",
    "This agreement is governed by the laws of the State of New York without conflicts.",
    "Either party may terminate this agreement on thirty days written notice to the other.",
    "The supplier warrants the goods for twelve months from the date of delivery.",
    "Confidential information shall not be disclosed to any third party at any time.",
    "Neither party may assign this agreement without the prior written consent of the other.",
]


def test_the_read_only_client_refuses_every_write():
    from qdrant_client import QdrantClient

    from ragspan.base.errors import RagspanError
    from ragspan.retrieval.live import ReadOnlyClient

    ro = ReadOnlyClient(QdrantClient(":memory:"))
    for write in ("upsert", "delete_collection", "create_collection", "delete", "set_payload",
                  "upload_points", "recreate_collection", "update_collection"):
        with pytest.raises(RagspanError, match="never written to"):
            getattr(ro, write)
    assert ro.collection_exists("x") is False and ro.calls == ["collection_exists"]


def _user_collection(path, vectors, with_offsets=True):
    """As a user's own pipeline would: its own ids (UUIDs), its own payload keys."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection("contracts", vectors_config={
        "dense": models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE)})
    points = []
    for i, (text, vec) in enumerate(zip(TEXTS, vectors)):
        payload = {"source": f"d{i // 2}", "chunk": text}
        if with_offsets:
            payload.update(begin=(i % 2) * 200, stop=(i % 2) * 200 + len(text))
        points.append(models.PointStruct(id=str(uuid.UUID(int=i + 1)), vector={"dense": vec.tolist()},
                                         payload=payload))
    client.upsert("contracts", points=points)
    client.close()


def _snapshot(path):
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(path))
    pts, _ = client.scroll("contracts", limit=100, with_payload=True, with_vectors=True)
    info = client.get_collection("contracts")
    client.close()
    return info.points_count, sorted((str(p.id), json.dumps(p.payload, sort_keys=True),
                                      tuple(p.vector["dense"])) for p in pts)


@pytest.mark.model
@pytest.mark.parametrize("with_offsets", [True, False])
def test_a_users_collection_scores_as_ragspans_exact_index_and_is_unchanged(tmp_path,
                                                                            with_offsets):
    from ragspan.retrieval.embed import Embedder
    from ragspan.retrieval.index import ExactIndex

    docs = [{"id": f"d{j}", "text": TEXTS[2 * j] + " " * (200 - len(TEXTS[2 * j])) + TEXTS[2 * j + 1]}
            for j in range(3)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": "q1", "query": "royalties on net sales", "gold_spans": [
            {"doc_id": "d0", "start": 0, "end": 40}]},
        {"id": "q2", "query": "assignment needs consent", "doc_id": "d2",
         "gold_spans": [[200, 260]]}])
    emb = Embedder("all-MiniLM-L6-v2", tmp_path / "cache")
    vectors = emb.embed(TEXTS)
    store = tmp_path / "qdrant"
    _user_collection(store, vectors, with_offsets)
    before = _snapshot(store)
    args = ["run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-path", store,
            "--collection", "contracts", "--vector-name", "dense", "--doc-key", "source",
            "--text-key", "chunk", "--depth", "3", "--scope", "doc_id-or-all",
            "--cache-dir", tmp_path / "cache", "--out", tmp_path / "run.jsonl",
            "--report", tmp_path / "r.json"]
    if with_offsets:
        args += ["--start-key", "begin", "--end-key", "stop"]
    res = run_cli(*args)
    assert res.exit_code == 0, res.stderr
    assert _snapshot(store) == before  # point count, payloads and vectors byte for byte
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]
    live = report["summary"]["collection"]
    assert live["points"] == 6 and live["vector"] == {"name": "dense", "size": 384,
                                                      "distance": "Cosine"}
    assert live["search"]["exact"] is True and set(live["calls"]) <= {
        "collection_exists", "get_collection", "count", "query_batch_points", "close"}
    rows = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()][1:]
    index = ExactIndex(vectors)
    qv = emb.embed(["royalties on net sales", "assignment needs consent"])
    for row, q, allowed in zip(rows, qv, (None, np.array([4, 5]))):
        idx, scores = index.search(q, 3, allowed)
        assert [s["score"] for s in row["retrieved"]] == pytest.approx(scores.tolist(), abs=1e-5)
        expected = [(f"d{i // 2}", (i % 2) * 200, (i % 2) * 200 + len(TEXTS[i])) for i in idx]
        assert [(s["doc_id"], s["start"], s["end"]) for s in row["retrieved"]] == expected
    if not with_offsets:
        assert live["placement"]["exact"] == sum(len(r["retrieved"]) for r in rows)
    score = run_cli("score", "--eval-set", evalset, "--run", tmp_path / "run.jsonl",
                    "--corpus", corpus)
    assert score.exit_code == 0, score.stderr


def test_a_missing_collection_and_bad_options_are_refused(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d0", "text": TEXTS[0]}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "x", "doc_id": "d0",
                                                  "gold_spans": [[0, 5]]}])
    from qdrant_client import QdrantClient

    QdrantClient(path=str(tmp_path / "store")).close()
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-path",
                  tmp_path / "store", "--collection", "nope", "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "no collection 'nope'" in res.stderr
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--collection",
                  "nope", "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "exactly one of --qdrant-url or --qdrant-path" in res.stderr
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "x:y", "--doc-key", "source", "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "--doc-key applies to --collection" in res.stderr


def test_a_run_that_fails_half_way_leaves_no_collection_behind(tmp_path, monkeypatch):
    """ragspan's own collection on Qdrant is deleted when the run ends, also when it fails
    after the collection was made (here: the BM25 index, built after it, fails)."""
    pytest.importorskip("rank_bm25", reason="the retrieval extra is not installed")
    from qdrant_client import QdrantClient

    from ragspan.retrieval import embed, sparse

    class Fake:  # no model needed: deterministic vectors
        def __init__(self, *a, **k):
            self.embedded = self.cached = 0

        def embed(self, texts, what=""):
            rng = np.random.default_rng(len(texts))
            v = rng.normal(size=(len(texts), 8)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    def broken(*a, **k):
        raise RuntimeError("injected failure after the collection was made")

    patch_everywhere(monkeypatch, embed, "Embedder", Fake)
    patch_everywhere(monkeypatch, sparse, "BM25Index", broken)
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": f"d{i}", "text": t}
                                                for i, t in enumerate(TEXTS)])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "x", "doc_id": "d0",
                                                  "gold_spans": [[0, 5]]}])
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "h"\n[dense]\n[sparse]\n', encoding="utf-8")
    store = tmp_path / "store"
    with pytest.raises(RuntimeError, match="injected"):
        run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                "--qdrant-path", store, "--out", tmp_path / "r.jsonl")
    client = QdrantClient(path=str(store))
    assert client.get_collections().collections == []
    client.close()
    assert not (tmp_path / "r.jsonl").exists()


def test_an_existing_collection_is_never_overwritten(tmp_path):
    from qdrant_client import QdrantClient, models

    from ragspan.base.errors import UsageError
    from ragspan.retrieval.index import QdrantIndex

    client = QdrantClient(path=str(tmp_path / "s"))
    client.create_collection("mine", vectors_config=models.VectorParams(
        size=4, distance=models.Distance.DOT))
    client.close()
    with pytest.raises(UsageError, match="never overwrites a collection it did not create"):
        QdrantIndex(np.eye(4, dtype=np.float32), [{}] * 4, path=str(tmp_path / "s"),
                    collection="mine")
    client = QdrantClient(path=str(tmp_path / "s"))
    assert [c.name for c in client.get_collections().collections] == ["mine"]
    client.close()
    idx = QdrantIndex(np.eye(4, dtype=np.float32), [{"doc_id": "a"}] * 4,
                      path=str(tmp_path / "s"))
    name = idx.collection
    assert idx.search(np.array([0, 1, 0, 0], dtype=np.float32), 1)[0].tolist() == [1]
    idx.close()
    client = QdrantClient(path=str(tmp_path / "s"))
    assert name.startswith("ragspan-") and [c.name for c in client.get_collections().collections] == ["mine"]
    client.close()


# ---- against a real Qdrant server (the CI job's service container; skipped elsewhere) ------

@pytest.fixture
def server():
    import os

    url = os.environ.get("RAGSPAN_QDRANT_URL")
    if not url:
        pytest.skip("no Qdrant server: set RAGSPAN_QDRANT_URL (the CI job runs one)")
    from qdrant_client import QdrantClient

    client = QdrantClient(url=url, timeout=5)
    try:
        client.get_collections()
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"Qdrant at {url} is not reachable: {exc}")
    yield url, client
    client.close()


class FakeEmbedder:
    """Deterministic unit vectors by text (no model needed)."""

    def __init__(self, *a, **k):
        self.embedded = self.cached = 0
        self.model_id = "fake"

    def embed(self, texts, what=""):
        out = np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8)
                        for t in texts]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def describe(self):
        return {"model": "fake"}

    def cache_use(self):
        return {"cache_shards_ignored": 0}


def test_on_a_server_a_users_collection_is_read_only_and_ours_are_deleted(server, tmp_path,
                                                                          monkeypatch):
    from qdrant_client import models

    from ragspan.retrieval import embed

    url, client = server
    patch_everywhere(monkeypatch, embed, "Embedder", FakeEmbedder)
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "royalties",
                                                  "gold_spans": [{"doc_id": "d0", "start": 0,
                                                                  "end": 20}]}])
    name = f"user-{uuid.uuid4().hex[:8]}"
    vecs = FakeEmbedder().embed(TEXTS)
    client.create_collection(name, vectors_config=models.VectorParams(
        size=8, distance=models.Distance.COSINE))
    client.upsert(name, points=[models.PointStruct(
        id=i, vector=v.tolist(), payload={"doc_id": f"d{i}", "text": TEXTS[i]})
        for i, v in enumerate(vecs)], wait=True)
    try:
        before = client.count(name, exact=True).count
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-url",
                      url, "--collection", name, "--scope", "none", "--out", tmp_path / "r.jsonl")
        assert res.exit_code == 0, res.stderr
        assert client.count(name, exact=True).count == before
        cfg = tmp_path / "p.toml"
        cfg.write_text('name = "p"\n[dense]\n[filter]\nscope = "none"\n', encoding="utf-8")
        mine = {c.name for c in client.get_collections().collections}
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config",
                      cfg, "--qdrant-url", url, "--out", tmp_path / "p.jsonl")
        assert res.exit_code == 0, res.stderr
        assert {c.name for c in client.get_collections().collections} == mine  # ours deleted
        # HNSW by name: searched through the graph, recorded in the run's config, deleted too
        cfg.write_text('name = "p"\ndepth = 2\n[dense]\nbackend = "qdrant"\nsearch = "hnsw"\n'
                       'hnsw_ef = 64\n[filter]\nscope = "none"\n', encoding="utf-8")
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config",
                      cfg, "--qdrant-url", url, "--out", tmp_path / "h.jsonl", "--report",
                      tmp_path / "h.json")
        assert res.exit_code == 0, res.stderr
        dense = json.loads((tmp_path / "h.json").read_text())["predicate"]["parameters"][
            "config"]["dense"]
        assert (dense["search"], dense["hnsw_ef"], dense["hnsw_m"]) == ("hnsw", 64, 16)
        assert {c.name for c in client.get_collections().collections} == mine
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-url",
                      url, "--collection", name, "--scope", "none", "--hnsw-ef", "32",
                      "--out", tmp_path / "rh.jsonl", "--report", tmp_path / "rh.json")
        assert res.exit_code == 0, res.stderr
        search = json.loads((tmp_path / "rh.json").read_text())["predicate"]["summary"][
            "collection"]["search"]
        assert (search["exact"], search["hnsw_ef"]) == (False, 32)
    finally:
        client.delete_collection(name)


def test_a_pipeline_on_qdrant_gives_the_exact_backends_run(tmp_path, monkeypatch):
    """ragspan's own pipeline on Qdrant (bulk upload, batched exact queries, filters) writes
    the same run as on the exact numpy index, and leaves no collection behind."""
    from qdrant_client import QdrantClient

    from ragspan.retrieval import embed

    patch_everywhere(monkeypatch, embed, "Embedder", FakeEmbedder)
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": f"d{i}", "text": t, "metadata": {"kind": "odd" if i % 2 else "even"}}
        for i, t in enumerate(TEXTS)])
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": f"q{i}", "query": q, "gold_spans": [{"doc_id": "d0", "start": 0, "end": 9}],
         **({"filters": {"kind": "odd"}} if i % 2 else {})}
        for i, q in enumerate(["royalties", "governing law", "terminate", "warranty"])])
    cfg = tmp_path / "p.toml"
    cfg.write_text('name = "p"\ndepth = 3\n[chunker]\nkind = "fixed"\nsize = 40\n[dense]\n'
                   '[filter]\nscope = "filters"\n', encoding="utf-8")
    runs = {}
    for name, extra in (("exact", []), ("qdrant", ["--qdrant-path", tmp_path / "store"])):
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config",
                      cfg, *extra, "--out", tmp_path / f"{name}.jsonl")
        assert res.exit_code == 0, res.stderr
        rows = [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()][1:]
        runs[name] = [[(s["doc_id"], s["start"], s["end"], s["score"])
                       for s in r["retrieved"]] for r in rows]
    # the same results in the same order; the scores equal up to float32 summation order
    # (Qdrant's SIMD kernels and numpy's differ in the last bits on some CPUs)
    assert [[x[:3] for x in q] for q in runs["qdrant"]] == [
        [x[:3] for x in q] for q in runs["exact"]]
    assert [[x[3] for x in q] for q in runs["qdrant"]] == [
        [pytest.approx(x[3], abs=1e-5) for x in q] for q in runs["exact"]]
    client = QdrantClient(path=str(tmp_path / "store"))
    assert client.get_collections().collections == []
    client.close()


def test_hnsw_is_asked_for_by_name_and_recorded(tmp_path):
    """Exact search is the default everywhere; HNSW is a [dense] setting that needs the Qdrant
    backend and a beam at least the depth, is refused in local mode (which always compares
    every vector), and appears in the recorded config only when asked for, so an exact
    config keeps the digest of earlier releases."""
    from qdrant_client import models

    from ragspan.base.errors import UsageError
    from ragspan.retrieval.config import parse_config
    from ragspan.retrieval.index import Hnsw, QdrantIndex, search_params

    exact = parse_config({"name": "p", "dense": {"backend": "qdrant"}}, "p.toml")
    assert exact.dense.hnsw() is None and "search" not in exact.as_json()["dense"]
    assert exact.digest == parse_config({"name": "p", "dense": {"backend": "qdrant",
                                                                "search": "exact"}}, "p.toml").digest
    hnsw = parse_config({"name": "p", "depth": 10, "dense": {
        "backend": "qdrant", "search": "hnsw", "hnsw_ef": 64, "depth": 50}}, "p.toml")
    assert hnsw.dense.hnsw() == Hnsw(16, 100, 64)
    assert {k: hnsw.as_json()["dense"][k] for k in ("search", "hnsw_m", "hnsw_ef_construct",
                                                     "hnsw_ef")} == {
        "search": "hnsw", "hnsw_m": 16, "hnsw_ef_construct": 100, "hnsw_ef": 64}
    assert hnsw.digest != exact.digest
    with pytest.raises(InputError, match='needs backend = "qdrant-edge"'):
        parse_config({"name": "p", "dense": {"search": "hnsw"}}, "p.toml")
    with pytest.raises(InputError, match=r"hnsw_ef = 8 is below \[dense\] depth = 50, the candidates"):
        parse_config({"name": "p", "dense": {"backend": "qdrant", "search": "hnsw",
                                             "hnsw_ef": 8}}, "p.toml")
    assert search_params(models, None, 64) is None  # local mode: always exact
    assert search_params(models, "http://q:6333") == models.SearchParams(exact=True)
    assert search_params(models, "http://q:6333", 64) == models.SearchParams(exact=False,
                                                                             hnsw_ef=64)
    vectors = np.eye(4, dtype=np.float32)
    with pytest.raises(UsageError, match="local mode, which always searches exactly"):
        QdrantIndex(vectors, [{"doc_id": "d"}] * 4, hnsw=Hnsw(16, 100, 64))


def test_hnsw_ef_on_a_users_collection_needs_a_server(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d0", "text": TEXTS[0]}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "royalties",
                                                  "gold_spans": [{"doc_id": "d0", "start": 0,
                                                                  "end": 20}]}])
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-path",
                  tmp_path / "store", "--collection", "c", "--hnsw-ef", "64", "--scope", "none",
                  "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "local mode (--qdrant-path) always searches exactly" in res.stderr
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config",
                  tmp_path / "p.toml", "--hnsw-ef", "64", "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "--hnsw-ef applies to --collection" in res.stderr


def test_a_missing_store_folder_is_refused_and_not_created(tmp_path):
    """--qdrant-path of a folder that does not exist used to create a store there: a
    read-only evaluation writes nothing."""
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d0", "text": TEXTS[0]}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "x", "doc_id": "d0",
                                                  "gold_spans": [[0, 5]]}])
    missing = tmp_path / "no-store"
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--qdrant-path",
                  missing, "--collection", "contracts", "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 3 and "no such folder" in res.stderr, res.stderr
    assert not missing.exists() and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("payload,named", [
    ({"doc_id": "d0", "start": 0, "end": True}, "payload 'end' is True, expected an integer"),
    ({"doc_id": "d0", "start": "0", "end": 9}, "payload 'start' is '0', expected an integer"),
    ({"doc_id": ["d0"], "text": "x"}, "payload 'doc_id' is ['d0'], expected a document id"),
    ({"doc_id": "d0", "text": 5}, "payload 'text' is 5, expected a string"),
])
def test_a_payload_value_of_the_wrong_type_names_the_point(payload, named):
    """A payload with "end": true went into the run file, and only score refused it."""
    from qdrant_client import models

    from ragspan.retrieval.live import LiveSpec, _item

    point = models.ScoredPoint(id=17, version=0, score=0.5, payload=payload)
    with pytest.raises(InputError, match="query 'q1': result 2 \\(point 17\\)") as err:
        _item(point, LiveSpec("contracts", path="x"), "q1", 2)
    assert named in err.value.reason
