"""``summary.off_scope``: of the results of queries that name their document, the share from
another document, per cutoff (counts and character budgets), against a brute-force count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import ragspan

DOCS = ("a", "b", "c")


@st.composite
def case(draw):
    queries, run = [], []
    for i in range(draw(st.integers(1, 4))):
        scoped = draw(st.booleans())
        q = {"id": f"q{i}", "query": "x", "gold_spans": [{"doc_id": "a", "start": 0, "end": 5}]}
        if scoped:
            q["doc_id"] = draw(st.sampled_from(DOCS))
        queries.append(q)
        got = []
        for _ in range(draw(st.integers(0, 6))):
            start = draw(st.integers(0, 90))
            got.append({"doc_id": draw(st.sampled_from(DOCS)), "start": start,
                        "end": start + draw(st.integers(1, 10))})
        run.append({"id": f"q{i}", "retrieved": got})
    return queries, run


def brute(queries, run, k):
    results = outside = 0
    for q, row in zip(queries, run):
        if "doc_id" not in q:
            continue
        used = 0
        for rank, r in enumerate(row["retrieved"]):
            if isinstance(k, str):
                budget = int(k[:-1])
                within = used < budget
                used += r["end"] - r["start"]
            else:
                within = rank < k
            if within:
                results += 1
                outside += r["doc_id"] != q["doc_id"]
    return results, outside


@given(case())
def test_off_scope_equals_a_brute_force_count(drawn):
    queries, run = drawn
    corpus = [{"id": d, "text": "x" * 100} for d in DOCS]
    ks = [1, 3, "7c", "25c"]
    summary = ragspan.score(queries, run, corpus, k=ks,
                            budget_grid=False).report["predicate"]["summary"]
    found = summary.get("off_scope")
    expected = {str(k): brute(queries, run, k) for k in ks}
    expected = {k: v for k, v in expected.items() if v[1]}
    if not expected:
        assert found is None
        return
    assert found["scoped_queries"] == sum("doc_id" in q for q in queries)
    assert {k: (v["results"], v["outside"]) for k, v in found["by_k"].items()} == expected
    assert all(v["share"] == v["outside"] / v["results"] for v in found["by_k"].values())


def test_an_unscoped_retriever_on_the_bundled_contracts_is_mostly_off_scope(tmp_path):
    """BM25 over all five contracts (scope none) takes most of its top 5 from the wrong
    contract; the same retriever scoped to the query's contract takes none."""
    import pytest

    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    from conftest import ROOT, run_cli

    ex = ROOT / "examples" / "cuad"
    shares = {}
    for scope in ("none", "doc_id"):
        cfg = tmp_path / f"{scope}.toml"
        cfg.write_text(f'name = "{scope}"\ndepth = 10\n[chunker]\nkind = "sentence"\nsize = 1000\n'
                       f'[sparse]\nbackend = "bm25s"\n[filter]\nscope = "{scope}"\n',
                       encoding="utf-8")
        run = tmp_path / f"{scope}.jsonl"
        assert run_cli("run-retriever", "--corpus", ex / "corpus.jsonl", "--eval-set",
                       ex / "eval.jsonl", "--config", cfg, "--out", run,
                       "--no-cache").exit_code == 0
        res = run_cli("score", "--eval-set", ex / "eval.jsonl", "--run", run, "--corpus",
                      ex / "corpus.jsonl", "--k", "5", "--format", "json")
        assert res.exit_code == 0, res.stderr
        found = res.json()["predicate"]["summary"].get("off_scope")
        shares[scope] = found and found["by_k"]["5"]["share"]
    assert shares["none"] > 0.5 and shares["doc_id"] is None
