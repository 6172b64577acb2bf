"""Chunk-level recall and nDCG (``summary.chunking.chunk_recall``): of a query's relevant
chunks (the manifest's chunks overlapping one of its gold spans), the share among its top k
results, with the ceiling ``min(1, k / relevant)``, and nDCG@k with binary gains; before and
after a rerank (``first_stage``); against a brute-force count on drawn cases and against
pytrec_eval's ``ndcg_cut``."""

from __future__ import annotations

import math

import pytest
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
        run.append({"id": f"q{i}", "retrieved": got,
                    "retrieved_first_stage": draw(st.permutations(got))})
    return chunks, queries, run


def relevant_chunks(chunks, q):
    return {(c["start"], c["end"]) for c in chunks
            if any(c["start"] < g["end"] and g["start"] < c["end"] for g in q["gold_spans"])}


def candidate_ndcg(rels, k):
    """The localGPT harness's nDCG@k, from its definition: DCG of the top k over binary
    relevance, divided by the DCG of the same candidate list re-sorted ideally; 0 when the
    list holds nothing relevant."""
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rels[:k]))
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(rels, reverse=True)[:k]))
    return dcg / idcg if idcg else 0.0


def brute(chunks, queries, run, k, field="retrieved"):
    recalls, ceilings, ndcgs, own = [], [], [], []
    for q, row in zip(queries, run):
        relevant = relevant_chunks(chunks, q)
        if not relevant:
            continue
        seen, dcg, rels = set(), 0.0, []
        for pos, r in enumerate(row[field]):
            place = (r["start"], r["end"])
            rels.append(int(place in relevant and place not in seen))  # a repeat counts once
            if pos < k and rels[-1]:
                dcg += 1 / math.log2(pos + 2)
            seen.add(place)
        found = {(r["start"], r["end"]) for r in row[field][:k]}
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
        recalls.append(len(relevant & found) / len(relevant))
        ceilings.append(min(1.0, k / len(relevant)))
        ndcgs.append(dcg / ideal)
        own.append(candidate_ndcg(rels, k))
    return recalls, ceilings, ndcgs, own


def mean(values):
    return sum(values) / len(values)


@given(case())
def test_chunk_recall_equals_a_brute_force_count(drawn):
    chunks, queries, run = drawn
    corpus = [{"id": "d", "text": "x" * LENGTH}]
    summary = ragspan.score(queries, run, corpus, k=[1, 3], chunks=chunks,
                            ).report["predicate"]["summary"]
    found = summary["chunking"]["chunk_recall"]
    for k in (1, 3):
        for field, got in (("retrieved", found["by_k"]),
                           ("retrieved_first_stage", found["first_stage"])):
            recalls, ceilings, ndcgs, own = brute(chunks, queries, run, k, field)
            assert found["queries"] == len(recalls)
            assert abs(got[str(k)]["recall"] - mean(recalls)) < 1e-12
            assert abs(got[str(k)]["ceiling"] - mean(ceilings)) < 1e-12
            assert abs(got[str(k)]["ndcg"] - mean(ndcgs)) < 1e-12
            assert abs(got[str(k)]["ndcg_candidates"] - mean(own)) < 1e-12


def test_chunk_ndcg_equals_pytrec_eval_and_the_table_shows_both_stages():
    """Chunk ids as documents, the chunks overlapping the gold as qrels: ``ndcg_cut_10`` of
    pytrec_eval equals the report's chunk-level nDCG@10, before and after the rerank, and
    the score table prints both."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    bounds = list(range(0, 241, 20))
    chunks = [{"chunk_id": f"c{i}", "doc_id": "d", "start": a, "end": b}
              for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    queries = [{"id": "q0", "query": "x", "gold_spans": [{"doc_id": "d", "start": 5, "end": 65}]},
               {"id": "q1", "query": "y", "gold_spans": [{"doc_id": "d", "start": 150, "end": 170}]}]
    order = {"q0": ([7, 1, 3, 9, 2, 0], [0, 1, 2, 7, 9, 3]), "q1": ([0, 1, 2, 3, 4, 7], [7, 0, 1])}

    def items(idx):
        return [{"doc_id": "d", "start": chunks[i]["start"], "end": chunks[i]["end"]} for i in idx]

    run = [{"id": q, "retrieved": items(final), "retrieved_first_stage": items(first)}
           for q, (first, final) in order.items()]
    report = ragspan.score(queries, run, [{"id": "d", "text": "x" * 240}], k=[10],
                           chunks=chunks).report
    found = report["predicate"]["summary"]["chunking"]["chunk_recall"]
    qrels = {q["id"]: {c["chunk_id"]: 1 for c in chunks if (c["start"], c["end"])
                       in relevant_chunks(chunks, q)} for q in queries}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    for stage, got in ((1, found["by_k"]["10"]), (0, found["first_stage"]["10"])):
        ranked = {q: {f"c{i}": float(len(idx[stage]) - r) for r, i in enumerate(idx[stage])}
                  for q, idx in order.items()}
        ref = evaluator.evaluate(ranked)
        assert abs(got["ndcg"] - mean([ref[q]["ndcg_cut_10"] for q in order])) < 1e-12
        own = [candidate_ndcg([int((chunks[i]["start"], chunks[i]["end"]) in relevant_chunks(
            chunks, q)) for i in order[q["id"]][stage]], 10) for q in queries]
        assert abs(got["ndcg_candidates"] - mean(own)) < 1e-12
    # q1's first stage holds one of its two relevant chunks (c7, c8): the candidate set's
    # ideal is lower than trec_eval's, so its nDCG is higher
    assert found["first_stage"]["10"]["ndcg_candidates"] > found["first_stage"]["10"]["ndcg"]
    from ragspan.report.render import render

    text = render(report, "table")
    final, first = found["by_k"]["10"], found["first_stage"]["10"]
    assert (f"nDCG {final['ndcg']:.4f} (trec_eval's ideal) / {final['ndcg_candidates']:.4f} "
            "(the candidate set's ideal); before the rerank or fusion") in text
    assert f"nDCG {first['ndcg']:.4f} (trec_eval's ideal) / " in text
