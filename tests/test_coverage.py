"""A degenerate run is not a measurement: rows for none of the scored queries is always an
error, rows for fewer than --min-coverage of them (default 0.5) too, with the counts."""

from __future__ import annotations

from conftest import assert_input_error, run_cli, write_jsonl


def test_doc_level_runs_that_miss_the_judged_queries(tmp_path):
    qrels = tmp_path / "q.trec"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(300)), encoding="utf-8")
    none = tmp_path / "none.trec"
    none.write_text("x1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    assert_input_error(run_cli("score", "--qrels", qrels, "--run", none), "none.trec",
                       "a row for none of the 300 judged queries")
    one = tmp_path / "one.trec"
    one.write_text("q1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    assert_input_error(run_cli("score", "--qrels", qrels, "--run", one), "one.trec",
                       "rows for 1 of the 300 judged queries (0%), below --min-coverage 0.5")
    res = run_cli("score", "--qrels", qrels, "--run", one, "--min-coverage", "0")
    assert res.exit_code == 0, res.stderr
    res = run_cli("score", "--qrels", qrels, "--run", one, "--judged-only")
    assert res.exit_code == 3 and "1 of the 300" in res.stderr  # judged-only cannot hide it
    half = tmp_path / "half.trec"
    half.write_text("".join(f"q{i} Q0 d{i} 1 1.0 t\n" for i in range(150)), encoding="utf-8")
    assert run_cli("score", "--qrels", qrels, "--run", half).exit_code == 0


def test_span_runs_that_miss_the_eval_set(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d0", "text": "x" * 100}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": f"q{i}", "query": "?", "doc_id": "d0", "gold_spans": [[0, 10]]}
        for i in range(10)])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": "d0", "start": 0, "end": 10}]}
        for i in range(4)])
    assert_input_error(run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus),
                       "r.jsonl", "rows for 4 of the 10 queries of the eval set (40%)")
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--min-coverage", "0.4")
    assert res.exit_code == 0, res.stderr
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--min-coverage", "1.5")
    assert res.exit_code == 2


def test_queries_without_a_relevant_document_are_counted_and_said(tmp_path):
    """A judged query whose documents are all below the relevance level scores 0 on the
    binary metrics whatever the run: the summary counts it and the log says so."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 0\nq3 0 d3 1\nq3 0 d4 2\n", encoding="utf-8")
    run = tmp_path / "r.txt"
    run.write_text("q1 Q0 d1 1 9 t\nq2 Q0 d2 1 9 t\nq3 Q0 d3 1 9 t\n", encoding="utf-8")
    for level, expected in ((1, 1), (2, 2)):
        res = run_cli("score", "--qrels", qrels, "--run", run, "--relevance-level", str(level),
                      "--format", "json")
        assert res.exit_code == 0, res.stderr
        assert res.json()["predicate"]["summary"]["queries_without_relevant"] == expected
        assert f"{expected} of 3 judged queries have no document judged relevant" in res.stderr


def test_a_reorder_stage_that_changes_nothing_is_said(tmp_path):
    """A run that records its first stage: score counts the rows the rerank or fusion stage
    changed (summary.first_stage), and warns when it changed none."""
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": f"q{i}", "query": "x", "gold_spans": [{"doc_id": "d", "start": 0, "end": 4}]}
        for i in range(3)])
    a, b = {"doc_id": "d", "start": 0, "end": 4}, {"doc_id": "d", "start": 4, "end": 9}
    for reordered in (0, 1):
        rows = [{"id": f"q{i}", "retrieved": [b, a] if i < reordered else [a, b],
                 "retrieved_first_stage": [a, b]} for i in range(3)]
        run = write_jsonl(tmp_path / f"r{reordered}.jsonl", rows)
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", "1",
                      "--format", "json")
        assert res.exit_code == 0, res.stderr
        assert res.json()["predicate"]["summary"]["first_stage"] == {"rows": 3,
                                                                     "reordered": reordered}
        assert ("changed nothing" in res.stderr) == (reordered == 0)


def test_per_stage_latency_goes_from_the_run_to_the_score(tmp_path):
    """run-retriever --record-latency writes each row's stage_ms (here BM25: search); score
    states p50/p95 per stage; a stage_ms that is not numbers is refused by line."""
    import pytest

    from conftest import ROOT

    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    ex = ROOT / "examples" / "cuad"
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "s"\n[chunker]\nkind = "sentence"\nsize = 1000\n[sparse]\n'
                   'backend = "bm25s"\n', encoding="utf-8")
    run = tmp_path / "r.jsonl"
    res = run_cli("run-retriever", "--corpus", ex / "corpus.jsonl", "--eval-set",
                  ex / "eval.jsonl", "--config", cfg, "--out", run, "--no-cache",
                  "--record-latency", "--format", "json")
    assert res.exit_code == 0, res.stderr
    execution = res.json()["predicate"]["summary"]["execution"]
    assert set(execution["latency_ms"]["stages"]) == {"search"} and execution["elapsed_s"] > 0
    res = run_cli("score", "--eval-set", ex / "eval.jsonl", "--run", run, "--k", "5",
                  "--format", "json")
    stages = res.json()["predicate"]["summary"]["latency_ms"]["stages"]
    assert set(stages) == {"search"} and 0 <= stages["search"]["p50"] <= stages["search"]["p95"]
    bad = write_jsonl(tmp_path / "b.jsonl", [{"id": "x", "retrieved": [],
                                              "stage_ms": {"search": "fast"}}])
    assert_input_error(run_cli("score", "--eval-set", ex / "eval.jsonl", "--run", bad),
                       "stage_ms", "b.jsonl")
