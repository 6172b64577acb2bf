"""The gate compares like with like: when the retrieval budget at a count k changed, the gated
metrics at k are decided at the character cutoff nearest the baseline's budget. A cheaper
candidate is not failed for being cheaper; one that doubles its budget and gains nothing at
equal budget is the retrieval budget trap, and fails with the reason stated."""

from __future__ import annotations

import random

import pytest

from conftest import run_cli, write_jsonl

N = 30


@pytest.fixture
def data(tmp_path):
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    docs = [{"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(800))}
            for i in range(N)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": "?", "doc_id": f"d{i}", "gold_spans": [[650, 700]]}
        for i in range(N)])
    return tmp_path, corpus, evalset


def scored(tmp, corpus, evalset, name, spans_of, *extra):
    run = write_jsonl(tmp / f"run-{name}.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": f"d{i}", "start": s, "end": e}
                                      for s, e in spans_of(i)]} for i in range(N)])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "3",
                  *extra, "--out", tmp / f"score-{name}.json")
    assert res.exit_code == 0, res.stderr
    return tmp / f"score-{name}.json"


def compare(base, cand):
    return run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                   "--format", "json")


def test_a_cheaper_candidate_is_decided_at_equal_budget_and_passes(data):
    tmp, corpus, evalset = data
    base = scored(tmp, corpus, evalset, "b", lambda i: [(0, 300), (1000, 1300), (600, 900)],
                  "--budget-grid")
    cand = scored(tmp, corpus, evalset, "c", lambda i: [(600, 750), (0, 150), (1000, 1150)],
                  "--budget-grid")
    res = compare(base, cand)
    assert res.exit_code == 0, res.stdout
    pred = res.json()["predicate"]
    budget = pred["summary"]["retrieval_budget"]
    assert budget["per_k"]["3"]["ratio"] == pytest.approx(0.5)
    # the baseline's 900 characters at k = 3 are nearest 1000c: decided there, whatever the
    # candidate reached; its run ends at 450 for every question, so it is measured there with
    # its whole run (which holds the answer), and the verdict says so
    assert budget["decided_at"] == {"3": "1000c"} and budget["trap"] == []
    gated = {m["name"] for m in pred["summary"]["metrics"].values() if m["gated"]}
    assert gated == {"complete_grounding@1000c"}
    assert any("at k = 3 x0.50 (900 -> 450 per query), decided at 1,000 characters: "
               "complete_grounding@1000c 1.0000 -> 1.0000" in w
               for w in pred["summary"]["warnings"]), pred["summary"]["warnings"]
    assert any("the candidate's run ends before 1000c for most questions (median 450 "
               "characters in all): it is measured at 1000c with its whole run" in w
               for w in pred["summary"]["warnings"]), pred["summary"]["warnings"]
    # the plan, fixed before the candidate was read, names the cutoff
    plan = pred["summary"]["plan"]
    assert plan["equal_budget"]["3"] == {"baseline_median_chars": 900.0, "at": "1000c"}
    assert plan["gated"] == [{"metric": "complete_grounding@3", "budget": "2pt",
                              "from": "default", "at_equal_budget": "1000c"}]
    # the Why line and the most-regressed queries speak of the cutoff that decided
    assert pred["summary"]["primary_metric"] == "complete_grounding@1000c"
    # scored without a flag, the reports carry the character cutoffs: the same decision
    base2 = scored(tmp, corpus, evalset, "b2", lambda i: [(0, 300), (1000, 1300), (600, 900)])
    cand2 = scored(tmp, corpus, evalset, "c2", lambda i: [(600, 750), (0, 150), (1000, 1150)])
    res = compare(base2, cand2)
    assert res.exit_code == 0, res.stdout
    assert res.json()["predicate"]["summary"]["retrieval_budget"]["decided_at"] == {"3": "1000c"}
    # without character cutoffs, a cheaper candidate whose gated metrics grow with results is
    # decided at k as it stands (it failed for being cheaper), with one line saying so
    base3 = scored(tmp, corpus, evalset, "b3", lambda i: [(0, 300), (1000, 1300), (600, 900)],
                   "--no-budget-grid")
    cand3 = scored(tmp, corpus, evalset, "c3", lambda i: [(600, 750), (0, 150), (1000, 1150)],
                   "--no-budget-grid")
    res = compare(base3, cand3)
    assert res.exit_code == 0, res.stdout
    summary = res.json()["predicate"]["summary"]
    assert summary["retrieval_budget"]["cheaper_at"] == ["3"]
    assert any("could only do better" in w for w in summary["warnings"]), summary["warnings"]
    # ... while a costlier one still fails, saying how to decide it at equal budget
    res = compare(cand3, base3)
    assert res.exit_code == 4
    reasons = res.json()["predicate"]["summary"]["reasons"]
    assert any("retrieval budget changed" in r and "--no-budget-grid, or --k 450c" in r
               for r in reasons), reasons


def test_doubling_the_budget_for_no_gain_at_equal_budget_is_the_trap(data):
    tmp, corpus, evalset = data
    base = scored(tmp, corpus, evalset, "b", lambda i: [(1000, 1300), (2000, 2300), (300, 600)],
                  "--budget-grid")
    cand = scored(tmp, corpus, evalset, "c", lambda i: [(1000, 1600), (2000, 2600), (300, 900)],
                  "--budget-grid")
    res = compare(base, cand)
    assert res.exit_code == 4, res.stdout
    pred = res.json()["predicate"]
    metrics = pred["summary"]["metrics"]
    assert metrics["complete_grounding@3"]["delta"] == 1.0  # bought with characters
    assert not metrics["complete_grounding@3"]["gated"]
    reasons = pred["summary"]["reasons"]
    assert any(r.startswith("retrieval budget trap: at k = 3 the candidate retrieves x2.00")
               and "at 1,000 characters per query it is no better" in r
               and "its gain at k = 3 (complete_grounding@3 +100.00pt) is bought with "
                   "characters, not ranking" in r for r in reasons), reasons
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--allow-budget-change", "--format", "json")
    assert res.exit_code == 0, res.stdout  # --allow-budget-change keeps its meaning


def test_named_character_cutoffs_are_gated_and_grid_points_are_not_by_default(data):
    tmp, corpus, evalset = data
    base = scored(tmp, corpus, evalset, "b", lambda i: [(600, 900), (0, 300), (1000, 1300)],
                  "--budget-grid")
    cand = scored(tmp, corpus, evalset, "c", lambda i: [(0, 300), (600, 900), (1000, 1300)],
                  "--budget-grid")
    res = compare(base, cand)
    gated = {m["name"] for m in res.json()["predicate"]["summary"]["metrics"].values() if m["gated"]}
    assert gated == {"complete_grounding@3"}
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config", "--budget",
                  "complete_grounding@250c=2pt", "--format", "json")
    assert res.exit_code == 4  # at 250 characters the candidate lost every question
    gated = {m["name"] for m in res.json()["predicate"]["summary"]["metrics"].values() if m["gated"]}
    assert gated == {"complete_grounding@3", "complete_grounding@250c"}


def test_saturated_cutoffs_are_named_by_score_and_compare(tmp_path):
    """Where the results cover most of the query's scoped document, recall is high by
    construction: score counts those queries per cutoff and warns; compare says so too."""
    docs = [{"id": f"d{i}", "text": "x" * 500} for i in range(10)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": "?", "doc_id": f"d{i}", "gold_spans": [[100, 150]]}
        for i in range(10)])
    out = {}
    for name, spans in (("b", [(0, 200), (200, 400), (400, 500)]),
                        ("c", [(0, 250), (250, 500), (0, 10)])):
        run = write_jsonl(tmp_path / f"run-{name}.jsonl", [
            {"id": f"q{i}", "retrieved": [{"doc_id": f"d{i}", "start": s, "end": e}
                                          for s, e in spans]} for i in range(10)])
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "1",
                      "--k", "3", "--k", "300c", "--no-budget-grid",
                      "--out", tmp_path / f"s-{name}.json")
        assert res.exit_code == 0, res.stderr
        out[name] = tmp_path / f"s-{name}.json"
    assert ("at k = 3 the results cover at least 90% of the scoped document (the corpus, for a "
            "question without doc_id) for 10 queries") in res.stderr
    import json

    sat = json.loads(out["c"].read_text())["predicate"]["summary"]["saturation"]
    assert sat == {"threshold": 0.9, "scoped_queries": 10,
                   "by_k": {"3": {"queries": 10, "share": 1.0}}}  # @1: 50%, @300c: 60%
    res = compare(out["b"], out["c"])
    warnings = res.json()["predicate"]["summary"]["warnings"]
    assert any("at k = 3 the baseline's results cover at least 90%" in w for w in warnings)
    assert any("at k = 3 the candidate's results" in w for w in warnings)


def test_a_corpus_wide_question_saturates_when_k_takes_in_the_corpus(tmp_path):
    """A question without doc_id is scoped to the whole corpus: at a k above the corpus's
    chunks its results cover all of it, and score warns as for a document (LegalBench-RAG
    rows carry no doc_id, so this is where that benchmark's budget trap shows)."""
    import json

    docs = [{"id": f"d{i}", "text": "x" * 500} for i in range(3)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": "?", "gold_spans": [{"doc_id": f"d{i % 3}", "start": 100,
                                                      "end": 150}]} for i in range(6)])
    chunks = [(f"d{d}", s, s + 250) for d in range(3) for s in (0, 250)]  # the corpus's 6 chunks
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": d, "start": s, "end": e}
                                      for d, s, e in chunks[i % 3:] + chunks[:i % 3]]}
        for i in range(6)])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "2",
                  "--k", "6", "--no-budget-grid", "--out", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    assert ("at k = 6 the results cover at least 90% of the scoped document (the corpus, for a "
            "question without doc_id) for 6 queries") in res.stderr
    sat = json.loads((tmp_path / "s.json").read_text())["predicate"]["summary"]["saturation"]
    assert sat == {"threshold": 0.9, "scoped_queries": 6,
                   "by_k": {"6": {"queries": 6, "share": 1.0}}}  # @2: a third of the corpus



def test_a_budget_larger_than_the_named_document_is_said(tmp_path):
    """The published harness's warning: a character budget at least as large as the
    question's document lets a retriever return it whole. Said once, naming each such
    cutoff with its count, and kept in summary.warnings; a budget under every document is not
    named. A question without doc_id (LegalBench-RAG's corpus-wide rows) counts by its gold
    documents together, and the warning says so."""
    import json

    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "short", "text": "x" * 800},
                                                     {"id": "long", "text": "y" * 5000}])
    rows = [{"id": f"q{i}", "query": "?", "doc_id": d,
             "gold_spans": [{"doc_id": d, "start": 10, "end": 60}]}
            for i, d in enumerate(["short", "short", "long", "long"])]
    rows.append({"id": "wide", "query": "?", "gold_spans": [{"doc_id": "long", "start": 0,
                                                             "end": 50}]})
    evalset = write_jsonl(tmp_path / "eval.jsonl", rows)
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": r["id"], "retrieved": [{"doc_id": "long", "start": 0, "end": 100}]} for r in rows])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "1",
                  "--k", "500c", "--k", "1000c", "--k", "8000c", "--no-budget-grid",
                  "--out", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    line = next(x for x in res.stderr.splitlines() if "the whole named document" in x)
    assert ("the whole named document (for a question without one, all its gold documents "
            "together) at k = 1000c (2 of 5 queries, 40%), k = 8000c (5 of 5 queries, 100%): "
            "grounding there says nothing of ranking") in line
    assert "500c" not in line
    warned = json.loads((tmp_path / "s.json").read_text())["predicate"]["summary"]["warnings"]
    assert any(w["code"] == "budget_over_document" for w in warned)


def test_corpus_wide_rows_alone_are_warned_about_by_their_gold_documents(tmp_path):
    """LegalBench-RAG's rows name no document: the warning fired for none of them. Each
    counts by all its gold documents together (two short ones: their sum)."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "a", "text": "x" * 600},
                                                     {"id": "b", "text": "y" * 600},
                                                     {"id": "c", "text": "z" * 9000}])
    rows = [{"id": "two", "query": "?", "gold_spans": [{"doc_id": "a", "start": 0, "end": 50},
                                                        {"doc_id": "b", "start": 0, "end": 50}]},
            {"id": "long", "query": "?", "gold_spans": [{"doc_id": "c", "start": 0, "end": 50}]}]
    evalset = write_jsonl(tmp_path / "eval.jsonl", rows)
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": r["id"], "retrieved": [{"doc_id": "a", "start": 0, "end": 100}]} for r in rows])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "1",
                  "--k", "1000c", "--k", "2000c", "--no-budget-grid", "--out", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    line = next(x for x in res.stderr.splitlines() if "the budget holds" in x)
    assert "all its gold documents together) at k = 2000c (1 of 2 queries, 50%)" in line
    assert "1000c" not in line  # 600 + 600 characters are not held by 1000


def test_a_character_budget_is_refused_where_documents_are_scored(tmp_path):
    qrels = tmp_path / "q.trec"
    qrels.write_text("q0 0 d0 1\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q0 Q0 d0 1 1.0 t\n", encoding="utf-8")
    res = run_cli("score", "--qrels", qrels, "--run", run, "--k", "2000c")
    assert res.exit_code == 2 and "--k 2000c is a character budget" in res.stderr
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q0", "query": "?", "doc_id": "d0",
                                                  "gold_spans": [[0, 5]]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", "5", "--k", "300c")
    assert res.exit_code == 2 and "this is a doc-level run" in res.stderr
    for bad in ("0c", "12x", "2000000000c"):
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", bad)
        assert res.exit_code == 2 and "--k" in res.stderr


def test_saturation_is_said_once_for_every_cutoff(tmp_path):
    """A short-notes eval set scored with the default grid: the warning was said once per
    grid budget nobody asked for (6 lines). Once now, naming each cutoff; compare says it
    only for the cutoffs that decided."""
    docs = [{"id": f"d{i}", "text": "x" * 500} for i in range(10)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": "?", "doc_id": f"d{i}", "gold_spans": [[100, 150]]}
        for i in range(10)])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": f"d{i}", "start": 0, "end": 250},
                                      {"doc_id": f"d{i}", "start": 250, "end": 500}]}
        for i in range(10)])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "1",
                  "--k", "2", "--out", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    lines = [x for x in res.stderr.splitlines() if "high by construction" in x]
    assert len(lines) == 1, lines
    assert "at k = 2 the results cover at least 90%" in lines[0] and "so too at k = 500c" \
        in lines[0]
