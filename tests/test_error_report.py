"""A failed command replaces its JSON report with an error envelope (verdict ``error``, as
the toolkit-rag-quality harness writes one on invalid input), atomically: a CI step that
uploads or reads the report finds the failure, never a stale PASS from an earlier run.
``--error-report`` is kept for workflows that pass it. An output the guard refuses (an
input, a path inside an input folder) is never written. No reader takes the error envelope
for a result."""

from __future__ import annotations

import json

import pytest

from conftest import assert_input_error, run_cli, write_jsonl


@pytest.fixture
def bad(tmp_path):
    ev = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": "q1", "query": "a", "gold_spans": [{"doc_id": "d", "start": 0, "end": 5}]},
        {"id": "q1", "query": "b", "gold_spans": [{"doc_id": "d", "start": 0, "end": 5}]}])
    run = write_jsonl(tmp_path / "run.jsonl", [{"id": "q1", "retrieved": []}])
    return tmp_path, ev, run


def test_an_input_error_writes_the_error_envelope(bad):
    tmp, ev, run = bad
    out = tmp / "report.json"
    out.write_text("the last good report", encoding="utf-8")
    res = run_cli("score", "--eval-set", ev, "--run", run, "--out", out, "--error-report")
    assert_input_error(res, "eval.jsonl:2", "repeated query id 'q1'")
    pred = json.loads(out.read_text())["predicate"]
    assert (pred["kind"], pred["verdict"], pred["exit_code"]) == ("error", "error", 3)
    assert pred["summary"] == {"command": "score", "error": "repeated query id 'q1' (first on "
                               "line 1)", "file": str(ev), "line": 2,
                               "message": f"{ev}:2: repeated query id 'q1' (first on line 1)"}
    assert json.loads(out.read_text())["subject"][0]["name"] == str(ev)
    assert run_cli("validate-report", out).exit_code == 0
    # nothing reads it as a result
    twin = tmp / "twin.json"
    twin.write_bytes(out.read_bytes())
    assert_input_error(run_cli("compare", "--baseline", out, "--candidate", twin, "--no-config",
                               "--allow-identical"),
                       "is an error report, not a score report: score stopped on")


def test_a_failed_command_leaves_no_stale_report(bad):
    """The last round left a previous report in place, where a later step read a stale
    PASS. Now the error envelope replaces it, with or without the flag."""
    tmp, ev, run = bad
    out = tmp / "report.json"
    out.write_text('{"the last good report": "pass"}', encoding="utf-8")
    assert run_cli("score", "--eval-set", ev, "--run", run, "--out", out).exit_code == 3
    pred = json.loads(out.read_text())["predicate"]
    assert (pred["kind"], pred["verdict"], pred["exit_code"]) == ("error", "error", 3)


def test_the_report_path_of_each_command_and_what_is_refused(bad, tmp_path):
    tmp, ev, run = bad
    # adapt's JSON report is --report (its --out is the eval set)
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("some text", encoding="utf-8")
    q = write_jsonl(tmp / "q.jsonl", [{"id": "x", "query": "?", "doc_id": "a",
                                       "gold_texts": ["not there"]}])
    res = run_cli("adapt", "--docs", docs, "--queries", q, "--out", tmp / "e.jsonl",
                  "--report", tmp / "adapt.json", "--error-report")
    assert res.exit_code == 3
    assert json.loads((tmp / "adapt.json").read_text())["predicate"]["parameters"]["command"] \
        == "adapt"
    assert not (tmp / "e.jsonl").exists()
    # without the report's path, or on a command without a JSON report
    res = run_cli("score", "--eval-set", ev, "--run", run, "--error-report")
    assert res.exit_code == 2 and "give --out" in res.stderr
    res = run_cli("convert", "run", "--in", run, "--to", "trec", "--out", tmp / "r.trec",
                  "--error-report")
    assert res.exit_code == 2 and "No such option" in res.stderr
    # a usage error found while working: its envelope says exit 2
    res = run_cli("score", "--eval-set", ev, "--run", run, "--qrels", ev, "--out",
                  tmp / "u.json")
    assert res.exit_code == 2
    pred = json.loads((tmp / "u.json").read_text())["predicate"]
    assert (pred["verdict"], pred["exit_code"]) == ("error", 2)
    # an output the guard refuses (an input) is never written, with or without the flag
    res = run_cli("score", "--eval-set", ev, "--run", run, "--out", ev, "--error-report")
    assert res.exit_code == 2
    assert json.loads(ev.read_text().splitlines()[0])["id"] == "q1"  # the eval set untouched


def test_an_output_inside_an_input_folder_is_refused_before_any_work(tmp_path):
    """``score --corpus docs --out docs/report.json`` added a document to the corpus it
    scored; ``--edge-shard S --out S/...`` wrote into the user's shard. A path inside an
    input folder, new or existing, is a usage error before any work, and nothing is
    written there."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The term is five years.", encoding="utf-8")
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "?", "doc_id": "a",
                                            "gold_spans": [[12, 22]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": "q", "retrieved": [
        {"doc_id": "a", "start": 0, "end": 22}]}])
    for out in (docs / "report.json", docs / "." / "sub" / ".." / "x.json"):
        res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", docs, "--out", out)
        assert res.exit_code == 2 and "is inside the input folder" in res.stderr, res.stderr
    assert sorted(p.name for p in docs.iterdir()) == ["a.txt"]
    link = tmp_path / "via-link"
    link.symlink_to(docs)
    res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", docs, "--out",
                  link / "report.json")
    assert res.exit_code == 2 and "is inside the input folder" in res.stderr
    shard = tmp_path / "shard"
    shard.mkdir()
    res = run_cli("run-retriever", "--corpus", docs, "--eval-set", ev, "--edge-shard", shard,
                  "--out", shard / "run.jsonl")
    assert res.exit_code == 2 and "is inside the input folder" in res.stderr
    assert list(shard.iterdir()) == []
    # the same command writing beside the folder works
    res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", docs, "--out",
                  tmp_path / "report.json")
    assert res.exit_code == 0, res.stderr
