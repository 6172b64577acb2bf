"""``summary.fusion``: which retriever surfaced the relevant results of a fused run, per
cutoff, against a brute-force count on drawn runs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import ragspan

LENGTH = 100


@st.composite
def case(draw):
    queries, run = [], []
    for i in range(draw(st.integers(1, 3))):
        s = draw(st.integers(0, LENGTH - 10))
        queries.append({"id": f"q{i}", "query": "x",
                        "gold_spans": [{"doc_id": "d", "start": s, "end": s + 10}]})
        items = []
        for _ in range(draw(st.integers(0, 6))):
            a = draw(st.integers(0, LENGTH - 5))
            sources = {n: draw(st.integers(1, 20)) for n in ("dense", "bm25")
                       if draw(st.booleans())}
            items.append({"doc_id": "d", "start": a, "end": a + 5, "sources": sources})
        run.append({"id": f"q{i}", "retrieved": items})
    run[0]["retrieved"].append({"doc_id": "d", "start": 0, "end": 1,
                                "sources": {"dense": 1, "bm25": 1}})  # both named
    return queries, run


def brute(queries, run, k):
    out = {"relevant_in_top": 0, "promoted": 0, "found_by_bm25_only": 0,
           "found_by_dense_only": 0}
    for q, row in zip(queries, run):
        g = q["gold_spans"][0]
        for r in row["retrieved"][:k]:
            if not (r["start"] < g["end"] and g["start"] < r["end"]):
                continue
            src = r["sources"]
            out["relevant_in_top"] += 1
            out["promoted"] += all(src.get(n, 0) == 0 or src[n] > k for n in ("dense", "bm25"))
            out["found_by_dense_only"] += "dense" in src and "bm25" not in src
            out["found_by_bm25_only"] += "bm25" in src and "dense" not in src
    return out


@given(case())
def test_fusion_counts_equal_a_brute_force_count(drawn):
    queries, run = drawn
    summary = ragspan.score(queries, run, [{"id": "d", "text": "x" * LENGTH}],
                            k=[1, 3]).report["predicate"]["summary"]
    assert summary["fusion"]["sources"] == ["bm25", "dense"]
    for k in (1, 3):
        assert summary["fusion"]["by_k"][str(k)] == brute(queries, run, k)


def test_a_run_without_both_retrievers_has_no_fusion_summary():
    queries = [{"id": "q", "query": "x", "gold_spans": [{"doc_id": "d", "start": 0, "end": 5}]}]
    run = [{"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": 5,
                                      "sources": {"bm25": 1}}]}]
    summary = ragspan.score(queries, run, [{"id": "d", "text": "x" * 10}],
                            k=[1]).report["predicate"]["summary"]
    assert "fusion" not in summary
