"""Errors that name the mistake a tired user makes: a run where a report belongs (and the
reverse), CSV or a JSON array where JSON lines belong, the eval set and the run swapped, and
document ids that are a loader's file paths. Each was a bare parser message before
("malformed JSON: Extra data", "Expecting value", "absent from the corpus")."""

from __future__ import annotations

from conftest import ROOT, assert_input_error, run_cli, write_jsonl

FIX = ROOT / "tests" / "fixtures" / "gate"


def test_two_run_files_given_to_compare():
    res = run_cli("compare", "--baseline", FIX / "run-baseline.jsonl", "--candidate",
                  FIX / "run-fail.jsonl")
    assert_input_error(res, "run-baseline.jsonl:1", "this is a span run (one JSON object per "
                       "line), not a ragspan report", "scored first (ragspan score")


def test_an_eval_set_given_as_a_report():
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "eval.jsonl")
    assert_input_error(res, "eval.jsonl:1", "this is an eval set", "not a ragspan report")


def test_a_report_given_as_the_run():
    res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / "baseline.json")
    assert_input_error(res, "baseline.json:1", "this is a ragspan report, not a run: give the "
                       "run it was scored from")


def test_the_eval_set_and_the_run_swapped():
    res = run_cli("score", "--eval-set", FIX / "run-baseline.jsonl", "--run", FIX / "eval.jsonl",
                  "--corpus", FIX / "corpus.jsonl")
    assert_input_error(res, "run-baseline.jsonl:1", "this is a span run, not an eval set",
                       "swapped?")


def test_a_csv_eval_set_and_a_json_array_run(tmp_path):
    csv = tmp_path / "eval.csv"
    csv.write_text("id,query,gold\nq1,What law?,Delaware\n", encoding="utf-8")
    res = run_cli("score", "--eval-set", csv, "--run", FIX / "run-baseline.jsonl")
    assert_input_error(res, "eval.csv:1", "comma-separated values (CSV), where JSON lines "
                       "belong: one JSON object per line")
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("id\ttext\nd1\tsome words\n", encoding="utf-8")
    res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / "run-baseline.jsonl",
                  "--corpus", tsv)
    assert_input_error(res, "corpus.tsv:1", "tab-separated values (TSV)")
    arr = tmp_path / "run.jsonl"
    arr.write_text('[{"id": "q00", "retrieved": []}]\n', encoding="utf-8")
    res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", arr)
    assert_input_error(res, "run.jsonl:1", "this is a JSON array")


def test_a_loaders_file_path_as_the_document_id(tmp_path):
    """A LangChain loader's source path ("docs/contracts/acme.txt") is not a corpus id: the
    error says how ids are formed and which id it most likely means."""
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "acme", "text": "The licensee pays."}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "?", "doc_id": "acme",
                                                  "gold_spans": [[4, 12]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": "q", "retrieved": [
        {"doc_id": "docs/contracts/acme.txt", "start": 0, "end": 10}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus)
    assert_input_error(res, "r.jsonl:1", "'docs/contracts/acme.txt', absent from the corpus",
                       "it looks like a path", "did you mean 'acme'?")
