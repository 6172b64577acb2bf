"""Chunk-level recall (``summary.chunking.chunk_recall``): of a query's relevant chunks (the
manifest's chunks overlapping one of its gold spans), the share among its top k results,
with the ceiling ``min(1, k / relevant)``; against a brute-force count on drawn cases."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import ragspan

LENGTH = 120


@st.composite
def case(draw):
    cuts = sorted(set(draw(st.lists(st.integers(1, LENGTH - 1), max_size=8))))
    bounds = [0, *cuts, LENGTH]
    chunks = [{"chunk_id": f"c{i}", "doc_id": "d", "start": a, "end": b}
              for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    queries, run = [], []
    for i in range(draw(st.integers(1, 3))):
        drawn = []
        for _ in range(draw(st.integers(1, 2))):
            s = draw(st.integers(0, LENGTH - 1))
            drawn.append((s, draw(st.integers(s + 1, LENGTH))))
        gold = []  # overlapping gold spans merged, as every eval set score takes has them
        for s, e in sorted(drawn):
            if gold and s < gold[-1]["end"]:
                gold[-1]["end"] = max(gold[-1]["end"], e)
            else:
                gold.append({"doc_id": "d", "start": s, "end": e})
        queries.append({"id": f"q{i}", "query": "x", "gold_spans": gold})
        got = []
        for _ in range(draw(st.integers(0, 5))):
            if draw(st.booleans()):
                c = draw(st.sampled_from(chunks))
                got.append({"doc_id": "d", "start": c["start"], "end": c["end"]})
            else:  # a result that is no chunk of the manifest
                s = draw(st.integers(0, LENGTH - 2))
                got.append({"doc_id": "d", "start": s, "end": s + 1})
        run.append({"id": f"q{i}", "retrieved": got})
    return chunks, queries, run


def brute(chunks, queries, run, k):
    recalls, ceilings = [], []
    for q, row in zip(queries, run):
        relevant = {(c["start"], c["end"]) for c in chunks
                    if any(c["start"] < g["end"] and g["start"] < c["end"] for g in q["gold_spans"])}
        if not relevant:
            continue
        top = {(r["start"], r["end"]) for r in row["retrieved"][:k]}
        recalls.append(len(relevant & top) / len(relevant))
        ceilings.append(min(1.0, k / len(relevant)))
    return recalls, ceilings


@given(case())
def test_chunk_recall_equals_a_brute_force_count(drawn):
    chunks, queries, run = drawn
    corpus = [{"id": "d", "text": "x" * LENGTH}]
    summary = ragspan.score(queries, run, corpus, k=[1, 3], chunks=chunks,
                            ).report["predicate"]["summary"]
    found = summary["chunking"]["chunk_recall"]
    for k in (1, 3):
        recalls, ceilings = brute(chunks, queries, run, k)
        assert found["queries"] == len(recalls)
        assert abs(found["by_k"][str(k)]["recall"] - sum(recalls) / len(recalls)) < 1e-12
        assert abs(found["by_k"][str(k)]["ceiling"] - sum(ceilings) / len(ceilings)) < 1e-12
