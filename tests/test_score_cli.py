"""``ragspan score`` end to end: outputs, determinism, schema, and every bad input (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import (
    assert_error_envelope,
    assert_input_error,
    assert_valid_report,
    report_rows,
    run_cli,
    write_jsonl,
)

CORPUS = [{"id": "a", "text": "x" * 100}, {"id": "b", "text": "y" * 50}]
EVAL = [
    {"id": "q1", "query": "one", "doc_id": "a", "gold_spans": [[10, 20], [30, 40]],
     "tags": {"kind": "x"}},
    {"id": "q2", "query": "two", "gold_spans": [{"doc_id": "b", "start": 0, "end": 10}],
     "tags": {"kind": "y"}},
]
RUN = [
    {"id": "q1", "retrieved": [{"doc_id": "a", "start": 0, "end": 20, "score": 0.9},
                               {"doc_id": "a", "start": 35, "end": 50, "score": 0.5}]},
    {"id": "extra", "retrieved": []},
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "corpus": write_jsonl(tmp_path / "corpus.jsonl", CORPUS),
        "eval": write_jsonl(tmp_path / "eval.jsonl", EVAL),
        "run": write_jsonl(tmp_path / "run.jsonl", RUN),
        "dir": tmp_path,
    }


def score(files, *extra):
    return run_cli("score", "--eval-set", files["eval"], "--run", files["run"],
                   "--corpus", files["corpus"], "--k", "1", "--k", "2", *extra)


def test_score_json_summary_and_counts(files):
    res = score(files)
    assert res.exit_code == 0, res.stderr
    doc = res.json()
    assert_valid_report(doc)
    pred = doc["predicate"]
    assert pred["kind"] == "score.span" and pred["verdict"] == "pass"
    s = pred["summary"]
    assert s["queries"] == 2
    assert s["queries_without_run_row"] == 1
    assert s["run_rows_without_query"] == 1
    # q1@2: span [10,20) fully, [30,40) half -> grounded; q2 missing -> 0
    assert s["metrics"]["complete_grounding@2"] == 0.5
    assert s["metrics"]["span_coverage@2"] == pytest.approx((15 / 20) / 2)
    assert s["retrieved_chars"]["2"] == {"mean": 17.5, "median": 17.5, "p90": 31.5}
    assert pred["details"]["run_rows_without_query"] == ["extra"]
    roles = [i["role"] for i in pred["inputs"]]
    assert roles == ["eval_set", "run", "corpus"]
    assert pred["parameters"]["grounding_threshold"] == 0.5


def test_missing_spans_carry_offsets_and_text(files):
    doc = score(files).json()
    rows = {r["id"]: r for r in report_rows(doc)}
    # q1 at k=1 misses [30,40) entirely
    assert rows["q1"]["missing_spans"]["1"] == [
        {"doc_id": "a", "start": 30, "end": 40, "covered": 0.0, "text": "x" * 10}]
    assert rows["q1"]["failure"] == {"1": "rank-miss"}
    assert rows["q1"]["failure_evidence"] == [
        {"doc_id": "a", "start": 30, "end": 40, "first_rank": 2,
         "chunks": [{"start": 35, "end": 50, "rank": 2}]}]
    assert "2" not in rows["q1"]["missing_spans"]
    assert rows["q2"]["in_run"] is False


def test_slices_per_tag_value(files):
    sl = score(files).json()["predicate"]["details"]["slices"]["kind"]
    assert sl["x"]["count"] == 1 and sl["x"]["metrics"]["complete_grounding@2"] == 1.0
    assert sl["y"]["metrics"]["complete_grounding@2"] == 0.0


def test_out_writes_byte_identical_reports(files):
    a, b = files["dir"] / "a.json", files["dir"] / "b.json"
    assert score(files, "--out", a).exit_code == 0
    assert score(files, "--out", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    text = a.read_text(encoding="utf-8")
    assert text.endswith("}\n") and "\n" not in text[:-1]
    assert json.loads(text)["predicate"]["created_at"] == "2023-11-14T22:13:20Z"
    assert run_cli("validate-report", "--report", a).exit_code == 0


def test_table_and_markdown(files):
    table = score(files, "--format", "table").stdout
    assert "complete_grounding" in table and "@1" in table and "@2" in table
    md = score(files, "--format", "markdown").stdout
    assert "| metric | @1 | @2 |" in md


def test_json_array_eval_set(files):
    path = files["dir"] / "eval.json"
    path.write_text(json.dumps(EVAL), encoding="utf-8")
    res = run_cli("score", "--eval-set", path, "--run", files["run"], "--k", "2")
    assert res.exit_code == 0
    assert res.json()["predicate"]["summary"]["queries"] == 2


# ---- bad inputs: exit 3, one line naming file and line, nothing written -------------------

BAD_EVAL = [
    ("not json\n", "eval.jsonl:1", "malformed JSON"),
    ('{"query": "no id", "gold_spans": []}\n', "eval.jsonl:1", "missing 'id'"),
    (json.dumps(EVAL[0]) + "\n" + json.dumps(EVAL[0]) + "\n", "eval.jsonl:2", "repeated query id"),
    ('{"id": "q", "doc_id": "a", "gold_spans": [[5, 5]]}\n', "eval.jsonl:1", "must be < end"),
    ('{"id": "q", "doc_id": "a", "gold_spans": [[-1, 5]]}\n', "eval.jsonl:1", "negative"),
    ('{"id": "q", "doc_id": "a", "gold_spans": [[0, 101]]}\n', "eval.jsonl:1", "past the end"),
    ('{"id": "q", "doc_id": "zz", "gold_spans": [[0, 1]]}\n', "eval.jsonl:1",
     "absent from the corpus"),
    ('{"id": "q", "doc_id": "a", "gold_spans": []}\n', "eval.jsonl:1", "no gold spans"),
    ('{"id": "q", "doc_id": "a", "gold_texts": ["x"]}\n', "eval.jsonl:1", "ragspan adapt"),
    ('{"id": "q", "gold_spans": [[0, 1]]}\n', "eval.jsonl:1", "needs the row's 'doc_id'"),
    ('{"id": "q", "doc_id": "a", "gold_spans": [[0, 1]], "match": "some"}\n', "eval.jsonl:1",
     "'match'"),
]


def _row(spans, qid="q1", **extra):
    return json.dumps({"id": qid, "retrieved": spans, **extra}) + "\n"


BAD_RUN = [
    ("{oops\n", "run.jsonl:1", "malformed JSON"),
    ('{"retrieved": []}\n', "run.jsonl:1", "missing 'id'"),
    (_row([]) + _row([]), "run.jsonl:2", "repeated query id"),
    ("\n" + _row([{"doc_id": "a", "start": 9, "end": 3}]), "run.jsonl:2", "must be < end"),
    (_row([{"doc_id": "a", "start": -2, "end": 3}]), "run.jsonl:1", "negative"),
    (_row([{"doc_id": "a", "start": 0, "end": 3, "score": float("nan")}]), "run.jsonl:1",
     "non-finite number NaN"),
    (_row([{"doc_id": "a", "start": 0, "end": 3, "score": float("inf")}]), "run.jsonl:1",
     "non-finite number Infinity"),
    (_row([{"doc_id": "a", "start": 0, "end": 300}]), "run.jsonl:1", "past the end"),
    (_row([{"doc_id": "nope", "start": 0, "end": 3}]), "run.jsonl:1", "absent from the corpus"),
    (_row([{"doc_id": "a", "start": "0", "end": 3}]), "run.jsonl:1", "not an integer"),
    (_row([{"start": 0, "end": 3}]), "run.jsonl:1", "missing 'doc_id'"),
]


@pytest.mark.parametrize("which,content,where,what",
                         [("eval", *case) for case in BAD_EVAL] + [("run", *case) for case in BAD_RUN])
def test_bad_input(files, which, content, where, what):
    files[which].write_text(content, encoding="utf-8")
    out = files["dir"] / "out.json"
    res = score(files, "--out", out)
    assert_input_error(res, where, what)
    assert_error_envelope(out, 3)  # a failed command's report: its error, never a stale one
    assert not list(files["dir"].glob(".out.json*"))  # no temporary file either


def test_missing_file_is_named(files):
    res = run_cli("score", "--eval-set", files["dir"] / "nope.jsonl", "--run", files["run"])
    assert_input_error(res, "nope.jsonl", "file not found")


def test_non_utf8_file_is_named(files):
    files["run"].write_bytes(b'{"id": "\xff"}\n')
    assert_input_error(score(files), "run.jsonl", "not valid UTF-8")


def test_repeated_corpus_id(files):
    write_jsonl(files["corpus"], [CORPUS[0], CORPUS[0]])
    assert_input_error(score(files), "corpus.jsonl:2", "repeated document id")


def test_usage_errors_exit_2(files):
    assert run_cli("score", "--run", files["run"]).exit_code == 2
    assert run_cli("score", "--eval-set", files["eval"], "--run", files["run"],
                   "--k", "0").exit_code == 2
    res = run_cli("score", "--eval-set", files["eval"], "--qrels", files["eval"],
                  "--run", files["run"])
    assert res.exit_code == 2 and "exactly one" in res.stderr


def test_validate_report_rejects_invalid(files):
    bad = files["dir"] / "bad.json"
    bad.write_text('{"_type": "x"}', encoding="utf-8")
    res = run_cli("validate-report", "--report", bad)
    assert_input_error(res, "bad.json", "$")
