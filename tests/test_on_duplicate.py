"""``score --on-duplicate first`` (the toolkit-rag-quality harness's rule): a JSON-lines row of
the eval set, qrels or run that repeats an earlier row's id, or has none, is skipped and
counted, the first row of each id kept; by default both are refused. The rule is a scoring
parameter: recorded, re-scored by verification, compared by the gate."""

from __future__ import annotations

import json

import pytest

from conftest import assert_error_envelope, assert_input_error, run_cli, write_jsonl

TEXT = "hello world, it is a small document."
GOLD = [{"id": "q1", "query": "a", "gold_spans": [{"doc_id": "d", "start": 0, "end": 5}]},
        {"id": "q2", "query": "b", "gold_spans": [{"doc_id": "d", "start": 6, "end": 11}]}]


def span(start: int, end: int) -> dict:
    return {"doc_id": "d", "start": start, "end": end, "text": TEXT[start:end]}


@pytest.fixture
def files(tmp_path):
    ev = write_jsonl(tmp_path / "eval.jsonl", [
        GOLD[0], GOLD[1],
        {**GOLD[0], "query": "a, asked again"},          # line 3: repeats q1
        {"query": "c", "gold_spans": GOLD[0]["gold_spans"]}])  # line 4: no id
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": "q1", "retrieved": [span(0, 5)]},
        {"id": "q1", "retrieved": [span(20, 25)]},      # line 2: repeats q1 (a miss)
        {"id": "q2", "retrieved": [span(20, 25)]},
        {"retrieved": [span(6, 11)]}])                    # line 4: no id
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": TEXT}])
    return tmp_path, ev, run, corpus


def score(ev, run, corpus, out, *extra):
    return run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus, "--k", "1",
                   "--no-budget-grid", "--out", out, "--format", "json", *extra)


def test_by_default_a_repeated_or_missing_id_is_refused(files):
    tmp, ev, run, corpus = files
    assert_input_error(score(ev, run, corpus, tmp / "s.json"), "eval.jsonl:3",
                       "repeated query id 'q1' (first on line 1)")
    assert_error_envelope(tmp / "s.json", 3)


def test_first_keeps_each_ids_first_row_and_counts_the_rest(files):
    tmp, ev, run, corpus = files
    res = score(ev, run, corpus, tmp / "s.json", "--on-duplicate", "first")
    assert res.exit_code == 0, res.stderr
    pred = json.loads((tmp / "s.json").read_text())["predicate"]
    assert pred["parameters"]["on_duplicate"] == "first"
    assert pred["summary"]["skipped_rows"] == {
        "eval_set": {"repeated": 1, "without_id": 1, "repeated_docs": 0, "lines": [3, 4]},
        "run": {"repeated": 1, "without_id": 1, "repeated_docs": 0, "lines": [2, 4]}}
    assert pred["summary"]["queries"] == 2
    # the first q1 row (a hit) is scored, not the repeated one (a miss)
    assert pred["summary"]["metrics"]["complete_grounding@1"] == 0.5
    assert "--on-duplicate first: eval set: 2 rows skipped (1 repeating an earlier row's id, " \
        "1 without id" in res.stderr
    assert "--on-duplicate first: run: 2 rows skipped" in res.stderr
    table = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus, "--k", "1",
                    "--on-duplicate", "first", "--format", "table")
    assert "skipped (run): 2 rows under --on-duplicate first" in table.stdout
    assert run_cli("validate-report", tmp / "s.json").exit_code == 0


def test_doc_level_jsonl_qrels_and_run(tmp_path):
    qrels = write_jsonl(tmp_path / "qrels.jsonl", [
        {"id": "q1", "relevant_ids": ["d1"]}, {"id": "q1", "relevant_ids": ["d2"]},
        {"relevant_ids": ["d3"]}, {"id": "q2", "relevant_ids": ["d2"]}])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": "q1", "retrieved_ids": ["d1"]}, {"id": "q2", "retrieved_ids": ["d9"]},
        {"id": "q2", "retrieved_ids": ["d2"]}])
    args = ("score", "--qrels", qrels, "--run", run, "--k", "1", "--format", "json")
    assert_input_error(run_cli(*args), "qrels.jsonl:2", "repeated query id 'q1'")
    res = run_cli(*args, "--on-duplicate", "first")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["skipped_rows"] == {
        "qrels": {"repeated": 1, "without_id": 1, "repeated_docs": 0, "lines": [2, 3]},
        "run": {"repeated": 1, "without_id": 0, "repeated_docs": 0, "lines": [3]}}
    assert pred["summary"]["metrics"]["doc_recall@1"] == 0.5  # q1 found d1, q2's first row missed


def test_verified_compare_rescores_with_the_rule_and_the_gate_compares_it(files):
    tmp, ev, run, corpus = files
    base, cand = tmp / "base.json", tmp / "cand.json"
    assert score(ev, run, corpus, base, "--on-duplicate", "first").exit_code == 0
    assert score(ev, run, corpus, cand, "--on-duplicate", "first").exit_code == 0
    verify = ("--eval-set", ev, "--corpus", corpus, "--baseline-run", run, "--candidate-run", run)
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--format", "json", "--allow-identical", *verify)
    assert res.exit_code == 0, res.stderr
    # a report that drops the rule is refused, verified or not
    doc = json.loads(cand.read_text())
    doc["predicate"]["parameters"].pop("on_duplicate")
    edited = tmp / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", base, "--candidate", edited, "--no-config", "--allow-identical")
    assert_input_error(res, "edited.json", "parameter 'on_duplicate' differs: baseline "
                       "\"first\", candidate absent")
    doc["predicate"]["parameters"]["on_duplicate"] = 1
    edited.write_text(json.dumps(doc), encoding="utf-8")
    (tmp / "twin.json").write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", tmp / "twin.json", "--candidate", edited, "--no-config",
                  "--allow-identical",
                  *verify)
    # the report's own schema (generated from its records) refuses it before any re-score
    assert_input_error(res, "twin.json", "$.predicate.parameters.on_duplicate: 1 is not one "
                       "of ['error', 'first']")


def test_trec_files_are_judgments_not_rows(tmp_path):
    """A TREC run or qrels lists one query on many lines: nothing is skipped there."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n", encoding="utf-8")
    res = run_cli("score", "--qrels", qrels, "--run", run, "--k", "2", "--on-duplicate", "first",
                  "--format", "json")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["metrics"]["doc_recall@2"] == 1.0
    assert pred["summary"]["skipped_rows"]["run"]["repeated"] == 0


def test_a_document_listed_twice_keeps_its_first_place(tmp_path):
    """The toolkit's JSONL run that lists a document twice for a question: refused by
    default (naming the rule that reads it); under ``--on-duplicate first`` each document's
    first place is kept, the later entries dropped (with their scores) and counted."""
    qrels = write_jsonl(tmp_path / "qrels.jsonl", [{"id": "q1", "relevant_ids": ["d2"]},
                                                   {"id": "q2", "relevant_ids": ["d3"]}])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": "q1", "retrieved_ids": ["d1", "d1", "d2", "d1"], "scores": [4, 3, 2, 1]},
        {"id": "q2", "retrieved_ids": ["d3", "d4"]}])
    args = ("score", "--qrels", qrels, "--run", run, "--k", "2", "--format", "json")
    assert_input_error(run_cli(*args), "run.jsonl:1",
                       "document 'd1' listed twice for query 'q1'", "--on-duplicate first")
    res = run_cli(*args, "--on-duplicate", "first")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["skipped_rows"]["run"] == {
        "repeated": 0, "without_id": 0, "repeated_docs": 2, "lines": [1]}
    # d2 moves up to rank 2 once d1's repeats are gone: found within the top 2
    assert pred["summary"]["metrics"]["doc_recall@2"] == 1.0
    assert "run: 2 repeated documents dropped from their rows" in res.stderr
    table = run_cli(*args[:-2], "--on-duplicate", "first", "--format", "table")
    assert "skipped (run): 2 repeated documents under --on-duplicate first" in table.stdout
