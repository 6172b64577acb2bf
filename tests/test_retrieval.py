"""Retrieval parts without a model: BM25 backends, RRF, the exact and Qdrant vector indexes,
payload filters, configs, and user retrievers (real LangChain / LlamaIndex objects)."""

from __future__ import annotations

import json
import sys

import msgspec
import numpy as np
import pytest

from conftest import ROOT, assert_input_error, run_cli, write_jsonl

pytest.importorskip("rank_bm25", reason="the retrieval extra is not installed")

TEXTS = [
    "The licensee shall pay royalties of five percent of net sales.",
    "This agreement is governed by the laws of the State of New York.",
    "Either party may terminate this agreement on thirty days written notice.",
    "The supplier warrants the goods for twelve months from delivery.",
    "Confidential information shall not be disclosed to third parties.",
    "Royalty reports are due within thirty days after each quarter.",
    "Neither party may assign this agreement without prior written consent.",
    "The laws of Delaware govern disputes arising under this license.",
]


def offsets(items: list[dict]) -> list[dict]:
    """Run items without their text (written beside the offsets, checked when scored)."""
    return [{k: v for k, v in item.items() if k != "text"} for item in items]


@pytest.mark.parametrize("query", ["royalties net sales", "governing laws", "thirty days notice",
                                   "assign consent", "warranty goods delivery"])
def test_bm25_backends_agree(query):
    from ragspan.retrieval.sparse import BM25Index

    a = BM25Index(TEXTS, backend="rank-bm25")
    b = BM25Index(TEXTS, backend="bm25s")
    ia, sa = a.search(query, 4)
    ib, sb = b.search(query, 4)
    positive = int((sa > 0).sum())
    assert positive > 0
    assert ia[:positive].tolist() == ib[:positive].tolist()
    allowed = np.array([1, 5, 7])
    assert a.search(query, 2, allowed)[0].tolist() == b.search(query, 2, allowed)[0].tolist() or \
        (a.search(query, 2, allowed)[1] == 0).all()


def test_rrf_records_sources_and_ranks():
    from ragspan.retrieval.fusion import rrf

    fused = rrf({"dense": [3, 1, 2], "bm25": [1, 4]}, k=60)
    assert [c.index for c in fused] == [1, 3, 4, 2]
    assert fused[0].sources == {"dense": 2, "bm25": 1}
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].sources == {"dense": 1}


def test_exact_and_qdrant_return_the_same_top_k():
    pytest.importorskip("qdrant_client")
    from ragspan.retrieval.index import ExactIndex, QdrantIndex

    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    payloads = [{"doc_id": f"d{i % 5}"} for i in range(300)]
    exact, qd = ExactIndex(vecs), QdrantIndex(vecs, payloads)
    try:
        for q in rng.normal(size=(10, 16)).astype(np.float32):
            q /= np.linalg.norm(q)
            ie, se = exact.search(q, 10)
            iq, sq = qd.search(q, 10)
            assert ie.tolist() == iq.tolist()
            assert np.allclose(se, sq, atol=1e-5)
            allowed = np.array([i for i in range(300) if i % 5 == 2])
            ie, _ = exact.search(q, 5, allowed)
            iq, _ = qd.search(q, 5, filters={"doc_id": "d2"})
            assert ie.tolist() == iq.tolist()
    finally:
        qd.close()


def test_payload_filters():
    from ragspan.base.errors import InputError
    from ragspan.retrieval.filters import PayloadTable, query_filters

    t = PayloadTable([{"doc_id": "a", "year": 2020}, {"doc_id": "a", "year": 2021},
                      {"doc_id": "b", "year": 2021}])
    assert t.allowed({}, "q") is None
    assert t.allowed({"doc_id": "a"}, "q").tolist() == [0, 1]
    assert t.allowed({"doc_id": ["a", "b"], "year": 2021}, "q").tolist() == [1, 2]
    with pytest.raises(InputError, match="'q'.*'lang', which no document carries"):
        t.allowed({"lang": "en"}, "q")
    with pytest.raises(InputError, match="match no chunk"):
        t.allowed({"doc_id": "zzz"}, "q")
    assert query_filters("doc_id", "a", {"year": 2021}) == {"year": 2021, "doc_id": "a"}
    assert query_filters("filters", "a", {"year": 2021}) == {"year": 2021}
    assert query_filters("none", "a", {"year": 2021}) == {}


@pytest.fixture
def small(tmp_path):
    docs = [{"id": f"d{i}", "text": t, "metadata": {"kind": "odd" if i % 2 else "even"}}
            for i, t in enumerate(TEXTS)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    rows = [{"id": "q1", "query": "royalties", "doc_id": "d5", "gold_spans": [[0, 20]]},
            {"id": "q2", "query": "governing law", "gold_spans": [{"doc_id": "d1", "start": 5, "end": 30}],
             "filters": {"kind": "odd"}}]
    evalset = write_jsonl(tmp_path / "eval.jsonl", rows)
    return tmp_path, corpus, evalset


def write_config(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_bm25_pipeline_end_to_end_with_manifest(small):
    tmp, corpus, evalset = small
    cfg = write_config(tmp / "c.toml", 'name = "b"\ndepth = 3\n[chunker]\nkind = "fixed"\nsize = 30\n'
                       '[sparse]\nbackend = "bm25s"\n[filter]\nscope = "doc_id-or-all"\n')
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp / "run.jsonl", "--chunks-out", tmp / "chunks.jsonl",
                  "--report", tmp / "r.json")
    assert res.exit_code == 0, res.stderr
    assert "1 of 2 queries have no doc_id" in res.stderr  # q2, searched corpus-wide: counted
    assert json.loads((tmp / "r.json").read_text())["predicate"]["summary"]["unscoped_queries"] == 1
    lines = [json.loads(x) for x in (tmp / "run.jsonl").read_text().splitlines()]
    header, q1, q2 = lines
    assert header["_header"]["config"]["name"] == "b" and len(header["_header"]["config_digest"]) == 64
    assert {s["doc_id"] for s in q1["retrieved"]} == {"d5"}  # scoped to its document
    assert {s["doc_id"] for s in q2["retrieved"]} <= {"d1", "d3", "d5", "d7"}  # kind = odd
    assert q1["config_digest"] == header["_header"]["config_digest"][:16]
    texts = {f"d{i}": t for i, t in enumerate(TEXTS)}
    manifest = [json.loads(x) for x in (tmp / "chunks.jsonl").read_text().splitlines()]
    assert manifest[0]["_header"]["config_digest"] == header["_header"]["config_digest"]
    for c in manifest[1:]:
        assert 0 <= c["start"] < c["end"] <= len(texts[c["doc_id"]])
    for rank, s in enumerate(q1["retrieved"], start=1):
        assert {"chunk_id", "sources", "score"} <= set(s) and s["sources"] == {"bm25": rank}
    score = run_cli("score", "--eval-set", evalset, "--run", tmp / "run.jsonl", "--corpus", corpus,
                    "--format", "json")
    assert score.exit_code == 0, score.stderr
    assert score.json()["predicate"]["parameters"]["run_config"]["config_digest"] == \
        header["_header"]["config_digest"]
    val = run_cli("validate", "--eval-set", evalset, "--corpus", corpus, "--chunks", tmp / "chunks.jsonl")
    assert val.exit_code == 0, val.stdout


@pytest.mark.parametrize("body, fragment", [
    ('depth = 3\n[sparse]\n', "'name'"),
    ('name = "x"\n[chunker]\nkind = "words"\n[sparse]\n', "[chunker] kind: expected one of"),
    ('name = "x"\n[chunker]\nsize = 10\noverlap = 10\n[sparse]\n', "overlap"),
    ('name = "x"\n', "at least one retriever"),
    ('name = "x"\n[sparse]\nbackend = "lucene"\n', "'rank-bm25', 'bm25s', got 'lucene'"),
    ('name = "x"\n[sparse]\nk3 = 1\n', "[sparse]: unknown key(s) k3"),
    ('name = "x"\n[sparse]\n[filter]\nscope = "all"\n', "scope"),
    ('name = "x"\n[sparse]\n[rerank]\ndepth = 5\n', "needs a model"),
    ('name = "x"\ndepth = 0\n[sparse]\n', "depth: expected an integer in [1, 10000], got 0"),
    # every key is type-checked: wrong types are errors, never crashes or silent misreads
    ('name = "x"\n[sparse]\nk1 = "x"\n', "[sparse] k1: expected a number >= 0, got 'x'"),
    ('name = "x"\n[sparse]\nb = true\n', "[sparse] b: expected a number in [0, 1], got True"),
    ('name = "x"\nfusion = 5\n[sparse]\n', "fusion: expected a table, got 5"),
    ('name = "x"\n[chunker]\noverlap = "a"\n[sparse]\n', "[chunker] overlap: expected an integer"),
    ('name = "x"\n[chunker]\nsnap = "false"\n[sparse]\n', "[chunker] snap: expected true or false"),
    ('name = "x"\n[dense]\nbatch_size = "x"\n', "[dense] batch_size: expected an integer"),
    ('name = "x"\n[dense]\nenabled = "no"\n', "[dense] enabled: expected true or false"),
    ('name = "x"\n[sparse]\ndepth = 1.5\n', "[sparse] depth: expected an integer in [1, 10000], got 1.5"),
    ('name = 5\n[sparse]\n', "name: expected a string, got 5"),
    ('name = "x" [', "invalid TOML"),
])
def test_bad_configs(small, body, fragment):
    tmp, corpus, evalset = small
    cfg = write_config(tmp / "bad.toml", body)
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp / "run.jsonl", "--chunks-out", tmp / "chunks.jsonl")
    assert_input_error(res, "bad.toml", fragment)


def test_scope_doc_id_on_a_row_without_doc_id_is_refused(small):
    """A scoped search never silently becomes a corpus-wide one: the row is named, with the
    count, before any chunk is embedded or searched."""
    tmp, corpus, evalset = small
    cfg = write_config(tmp / "c.toml", 'name = "b"\n[sparse]\n[filter]\nscope = "doc_id"\n')
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp / "run.jsonl")
    assert_input_error(res, "eval.jsonl", "query 'q2' has no 'doc_id'", "(1 of 2 rows lack one)",
                       "doc_id-or-all")
    assert not (tmp / "run.jsonl").exists()


def test_filter_on_unknown_field_names_the_query(small):
    tmp, corpus, _ = small
    evalset = write_jsonl(tmp / "e2.jsonl", [{"id": "qx", "query": "law", "gold_spans": [],
                                              "filters": {"lang": "en"}}])
    cfg = write_config(tmp / "c.toml", 'name = "b"\n[sparse]\n[filter]\nscope = "filters"\n')
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp / "run.jsonl")
    assert_input_error(res, "query 'qx'", "'lang'")


USER_MODULE = '''
def spans(query):
    return [("d5", 0, 20, 1.0), {"doc_id": "d1", "start": 5, "end": 30}]

def with_row(query, row):
    return [(row["doc_id"] or "d1", 0, 10)]

def no_offsets(query):
    return [{"doc_id": "d1"}, ("d2", 0, 5)]

def ids_only(query):
    return ["d3", ("d1", 0.5), "d3", {"doc_id": "d2"}]

def outside(query):
    return [("d1", 0, 10_000)]

def unknown_doc(query):
    return [("nope", 0, 1)]

def nan_score(query):
    return [("d1", 0, 5, 0.5), ("d1", 5, 9, float("nan"))]

def inf_score(query):
    return [{"doc_id": "d1", "start": 0, "end": 5, "score": float("inf")}]

def factory():
    return spans

def keyed(query):
    return [{"contract": "d1", "start": 0, "end": 9}, {"contract": "d1", "start": 0, "end": 9},
            {"contract": "d2", "start": 3, "end": 8}]
'''


@pytest.fixture
def user_module(small, monkeypatch):
    tmp, corpus, evalset = small
    (tmp / "my_retrievers.py").write_text(USER_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp))
    yield small
    sys.modules.pop("my_retrievers", None)


@pytest.mark.parametrize("spec", ["my_retrievers:spans", "my_retrievers:factory()",
                                  "my_retrievers:with_row"])
def test_user_callable(user_module, spec):
    tmp, corpus, evalset = user_module
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever", spec,
                  "--out", tmp / "run.jsonl")
    assert res.exit_code == 0, res.stderr
    rows = [json.loads(x) for x in (tmp / "run.jsonl").read_text().splitlines()][1:]
    assert rows[0]["id"] == "q1" and rows[0]["retrieved"][0]["doc_id"] in ("d5", "d1")
    assert not any("latency_ms" in r for r in rows)  # no wall time in the run by default
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever", spec,
                  "--out", tmp / "timed.jsonl", "--record-latency")
    rows = [json.loads(x) for x in (tmp / "timed.jsonl").read_text().splitlines()][1:]
    assert all("latency_ms" in r for r in rows)


def test_id_key_and_depth_for_user_retrievers(user_module):
    tmp, corpus, evalset = user_module
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:keyed", "--id-key", "contract", "--depth", "1",
                  "--out", tmp / "run.jsonl")
    assert res.exit_code == 0, res.stderr
    rows = [json.loads(x) for x in (tmp / "run.jsonl").read_text().splitlines()][1:]
    assert [offsets(r["retrieved"]) for r in rows] == [[{"doc_id": "d1", "start": 0, "end": 9}]] * 2
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:keyed", "--out", tmp / "run2.jsonl")
    assert_input_error(res, "query 'q1': result 1 has no doc id")


def test_a_retriever_of_doc_ids_gives_a_doc_level_run(user_module):
    """BEIR-style: doc ids alone give a doc-level run (first occurrence wins, then --depth),
    as JSONL or TREC with its tag, limited to the judged queries with --qrels; it scores."""
    tmp, corpus, evalset = user_module
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:ids_only", "--out", tmp / "run.jsonl", "--report", tmp / "r.json")
    assert res.exit_code == 0, res.stderr
    rows = [json.loads(x) for x in (tmp / "run.jsonl").read_text().splitlines()]
    assert rows == [{"id": "q1", "retrieved_ids": ["d3", "d1", "d2"]},
                    {"id": "q2", "retrieved_ids": ["d3", "d1", "d2"]}]
    assert json.loads((tmp / "r.json").read_text())["predicate"]["summary"]["level"] == "doc"
    qrels = tmp / "qrels.trec"
    qrels.write_text("q2 0 d1 1\n", encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:ids_only", "--qrels", qrels, "--to", "trec", "--tag", "mine",
                  "--depth", "2", "--out", tmp / "run.trec")
    assert res.exit_code == 0, res.stderr
    assert (tmp / "run.trec").read_text() == "q2 Q0 d3 1 2 mine\nq2 Q0 d1 2 1 mine\n"
    score = run_cli("score", "--qrels", qrels, "--run", tmp / "run.trec", "--k", "2",
                    "--format", "json")
    assert score.exit_code == 0, score.stderr
    assert score.json()["predicate"]["summary"]["metrics"]["doc_recall@2"] == 1.0
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:spans", "--to", "trec", "--out", tmp / "x.trec")
    assert_input_error(res, "returned spans")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever",
                  "my_retrievers:ids_only", "--tag", "x", "--out", tmp / "y.jsonl")
    assert res.exit_code == 2 and "--to trec" in res.stderr


@pytest.mark.parametrize("spec, fragment", [
    ("my_retrievers:no_offsets", "result 1 is a doc id alone, while other results carry spans"),
    ("my_retrievers:outside", "is not inside 'd1'"),
    ("my_retrievers:unknown_doc", "'nope' is not a document"),
    ("my_retrievers:nan_score", "result 2 has the score nan"),
    ("my_retrievers:inf_score", "result 1 has the score inf"),
])
def test_user_retriever_errors_name_the_query(user_module, spec, fragment):
    tmp, corpus, evalset = user_module
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--retriever", spec,
                  "--out", tmp / "run.jsonl")
    assert_input_error(res, "query 'q1'", fragment)


def test_langchain_retriever(small):
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.retrieval.user import run_user_retriever

    tmp, corpus, evalset = small

    class Splitter(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            return [Document(page_content=TEXTS[5][10:40], metadata={"source": "d5", "start_index": 10}),
                    Document(page_content=TEXTS[1][:15], metadata={"doc_id": "d1", "start_index": 0})]

    res = run_user_retriever(Splitter(), list(read_eval_set(evalset).queries), read_corpus(corpus))
    rows, placement = [msgspec.to_builtins(r) for r in res.rows], res.placement  # as written
    assert offsets(rows[0]["retrieved"][:2]) == [{"doc_id": "d5", "start": 10, "end": 40},
                                        {"doc_id": "d1", "start": 0, "end": 15}]
    assert placement.checked == 4 and "placed" not in rows[0]  # texts checked, all match

    class NoStart(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            return [Document(page_content="no such text in d5", metadata={"source": "d5"})]

    from ragspan.base.errors import InputError

    with pytest.raises(InputError, match="query 'q1'.*cannot place the text") as err:
        run_user_retriever(NoStart(), list(read_eval_set(evalset).queries), read_corpus(corpus))
    # run-retriever has no --unplaced, --on-ambiguous or --align: none is suggested
    assert "--" not in err.value.reason and "is it from this corpus?" in err.value.reason


def test_langchain_page_relative_start_index_is_placed_by_text(tmp_path):
    """PyPDFLoader + RecursiveCharacterTextSplitter(add_start_index=True) give start_index
    relative to the page: the span [100, 600) of a chunk whose text lies at [5100, 5600) would
    be accepted today. The text decides: it is placed at [5100, 5600), recorded."""
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.retrieval.user import run_user_retriever

    rng = np.random.default_rng(0)
    words = ["clause", "party", "term", "licence", "royalty", "notice", "breach", "cure"]
    text = " ".join(f"{words[i]}{j}" for j, i in enumerate(rng.integers(0, 8, 1400)))
    assert len(text) > 6000
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "contract.pdf", "text": text}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q1", "query": "royalty", "doc_id":
                                                  "contract.pdf", "gold_spans": [[5100, 5600]]}])

    class PageSplitter(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            return [Document(page_content=text[5100:5600], id="contract.pdf",
                             metadata={"page": 5, "start_index": 100}),
                    Document(page_content=text[5100:5600], id="contract.pdf",
                             metadata={"page": 5, "start_index": 100}),  # a duplicate
                    Document(page_content=text[0:300], metadata={"start_index": 0})]

    res = run_user_retriever(PageSplitter(), list(read_eval_set(evalset).queries),
                             read_corpus(corpus), depth=1)
    rows, placement = [msgspec.to_builtins(r) for r in res.rows], res.placement  # as written
    assert offsets(rows[0]["retrieved"]) == [{"doc_id": "contract.pdf", "start": 5100,
                                              "end": 5600}]
    assert rows[0]["placed"][0] | {"similarity": 1.0} == {
        "field": "retrieved", "rank": 1, "method": "exact", "similarity": 1.0,
        "doc_id": "contract.pdf", "start": 5100, "end": 5600, "realigned": True}
    assert placement.realigned == 3 and placement.checked == 0  # the third: no doc id
    rows = run_user_retriever(PageSplitter(), list(read_eval_set(evalset).queries),
                              read_corpus(corpus)).rows
    assert [s.start for s in rows[0].retrieved] == [5100, 0]  # first occurrence wins


def test_llamaindex_retriever(small):
    pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.retrieval.user import run_user_retriever

    tmp, corpus, evalset = small

    class Nodes(BaseRetriever):
        def _retrieve(self, query_bundle):
            node = TextNode(text=TEXTS[3][4:20], start_char_idx=4, end_char_idx=20,
                            metadata={"doc_id": "d3"})
            return [NodeWithScore(node=node, score=0.5)]

    res = run_user_retriever(Nodes(), list(read_eval_set(evalset).queries), read_corpus(corpus))
    rows, placement = [msgspec.to_builtins(r) for r in res.rows], res.placement  # as written
    assert offsets(rows[0]["retrieved"]) == [{"doc_id": "d3", "start": 4, "end": 20,
                                              "score": 0.5}]
    assert placement.checked == 2  # one per query, its text checked


@pytest.mark.slow
def test_doc_level_bm25_on_scifact(tmp_path):
    """chunker = none (one chunk per document, title + text), corpus-wide BM25 on BEIR SciFact;
    the span run's doc-level view scores against the qrels. Published BM25 nDCG@10: 0.665."""
    from conftest import ROOT, shared

    root = shared("beir_scifact")
    assert run_cli("import", "beir", "--root", root, "--out", tmp_path / "eval.jsonl",
                   "--corpus-out", tmp_path / "corpus.jsonl").exit_code == 0
    res = run_cli("run-retriever", "--corpus", tmp_path / "corpus.jsonl", "--eval-set",
                  tmp_path / "eval.jsonl", "--config", ROOT / "examples" / "configs" / "doc-bm25.toml",
                  "--out", tmp_path / "run.jsonl")
    assert res.exit_code == 0, res.stderr
    score = run_cli("score", "--qrels", root / "qrels" / "test.tsv", "--run", tmp_path / "run.jsonl",
                    "--k", "10", "--format", "json")
    assert score.exit_code == 0, score.stderr
    summary = score.json()["predicate"]["summary"]
    assert summary["metrics"]["doc_ndcg@10"] == pytest.approx(0.665, abs=0.005)


def test_user_retriever_that_raises_names_the_query(user_module):
    tmp, corpus, evalset = user_module
    (tmp / "boom_retriever.py").write_text("def search(query):\n    raise ValueError('index offline')\n")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset,
                  "--retriever", "boom_retriever:search", "--out", tmp / "run.jsonl")
    assert_input_error(res, "query 'q1'", "ValueError: index offline")
    sys.modules.pop("boom_retriever", None)


def test_unreadable_cache_shard_is_named(tmp_path):
    """An unreadable shard is a miss with a warning naming it (its texts are embedded
    again), or with --strict-cache an error naming it; never a crash of every later run."""
    from ragspan.base.errors import InputError
    from ragspan.retrieval.cache import EmbeddingCache, ModelIdentity

    ident = ModelIdentity("c" * 64, "/model-x", dim=4)
    cache = EmbeddingCache(tmp_path, ident)
    cache.add([b"k" * 32], np.full((1, 4), 0.5, dtype=np.float32))
    assert len(EmbeddingCache(tmp_path, ident).vectors) == 1
    shard = next(cache.dir.glob("*.npz"))
    shard.write_bytes(b"not a zip")
    again = EmbeddingCache(tmp_path, ident)
    assert again.vectors == {} and again.ignored == [str(shard)]
    with pytest.raises(InputError, match="embedding cache shard is unusable"):
        EmbeddingCache(tmp_path, ident, strict=True)


def test_unreachable_qdrant_is_a_usage_error():
    pytest.importorskip("qdrant_client")
    from ragspan.base.errors import UsageError
    from ragspan.retrieval.index import QdrantIndex

    with pytest.raises(UsageError, match="cannot use Qdrant at http://127.0.0.1:9"):
        QdrantIndex(np.ones((2, 4), dtype=np.float32), [{"doc_id": "a"}, {"doc_id": "b"}],
                    url="http://127.0.0.1:9")


def test_framework_names_what_the_retriever_is(user_module):
    """``--framework`` (the toolkit-rag-quality harness's flag): a named framework is required
    of the object (exit 2 naming what it looks like), recorded in the report; ``auto`` tells
    by its methods."""
    tmp, corpus, evalset = user_module

    def go(*extra):
        return run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset,
                       "--out", tmp / "run.jsonl", "--report", tmp / "r.json", *extra)

    res = go("--retriever", "my_retrievers:spans", "--framework", "callable")
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp / "r.json").read_text())["predicate"]
    assert report["parameters"]["framework"] == "callable"
    assert go("--retriever", "my_retrievers:spans", "--framework", "auto").exit_code == 0
    assert "framework" not in json.loads((tmp / "r.json").read_text())["predicate"]["parameters"]
    res = go("--retriever", "my_retrievers:spans", "--framework", "langchain")
    assert res.exit_code == 2
    assert "--framework langchain: the retriever (function) has no invoke(); it looks like a " \
        "callable retriever (--framework callable or auto)" in res.stderr
    res = go("--retriever", "my_retrievers:spans", "--framework", "llamaindex")
    assert res.exit_code == 2 and "has no retrieve()" in res.stderr
    res = go("--config", str(ROOT / "examples/configs/bm25-corpus.toml"), "--framework", "callable")
    assert res.exit_code == 2 and "--framework names what --retriever's object is" in res.stderr
    res = go("--retriever", "my_retrievers:spans", "--framework", "haystack")
    assert res.exit_code == 2 and "haystack" in res.stderr


def test_framework_refuses_an_agent_of_the_other_framework(small):
    pytest.importorskip("langchain_core", reason="langchain-core is not installed")
    from langchain_core.runnables import RunnableLambda

    from ragspan.base.errors import UsageError
    from ragspan.retrieval.agents import is_agent
    from ragspan.retrieval.user import framework_of

    agent = RunnableLambda(lambda q: q)
    assert is_agent(agent, "langchain") and is_agent(agent)
    with pytest.raises(UsageError, match="the retriever is a langchain agent"):
        is_agent(agent, "llamaindex")

    class Both:  # a retrieve() and a __call__: auto takes LlamaIndex, a name decides
        def retrieve(self, q):
            return []

        def __call__(self, q):
            return []

    assert framework_of(Both()) == "llamaindex" and framework_of(Both(), "callable") == "callable"
