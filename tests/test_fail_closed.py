"""The gate fails closed: one test per hole through which a failing (or unverifiable)
comparison used to pass. Each builds a report pair that exited 0 before the fix and asserts
that it is now refused (exit 3, or 2 for a usage error) or fails (exit 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, as_v1, assert_error_envelope, assert_input_error, run_cli, write_jsonl

GATE = ROOT / "tests" / "fixtures" / "gate"
METRIC = "complete_grounding@1"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """The gate fixtures' baseline and a candidate that passes against it."""
    base, cand = tmp_path / "baseline.json", tmp_path / "candidate.json"
    shutil.copy(GATE / "baseline.json", base)
    shutil.copy(GATE / "candidate-pass.json", cand)
    return base, cand


def edit(path: Path, change, v1: bool = False) -> Path:
    """``path`` rewritten with ``change`` made to its predicate; ``v1``: a copy of the same
    name in a folder ``v1`` beside it, in format v1 (its rows, as a stored baseline of an
    earlier release holds them), ``path`` left as it was."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if v1:
        doc = as_v1(doc)
        (path.parent / "v1").mkdir(exist_ok=True)
        path = path.parent / "v1" / path.name
    change(doc["predicate"])
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def compare(base: Path, cand: Path, *args: str):
    return run_cli("compare", "--baseline", base, "--candidate", cand, *args)


def test_the_unmutated_pair_passes(pair):
    assert compare(*pair).exit_code == 0


def test_a_row_missing_a_metric_is_refused(pair):
    """Once read as 0.0 (or, missing from a failing query of the candidate, as a pass)."""
    base, cand = pair

    def drop(pred):
        del pred["details"]["queries"][3]["metrics"][METRIC]

    assert_input_error(compare(base, edit(cand, drop, v1=True)), "candidate.json",
                       f"query 'q03' lacks metric '{METRIC}'")

    def shorten(pred):  # format v2: the column one value short
        del pred["details"]["metrics"][METRIC][3]

    assert_input_error(compare(base, edit(cand, shorten)), "candidate.json",
                       f"metrics.{METRIC} has 29 entries for 30 questions")


def test_a_gated_metric_missing_from_one_report_is_refused(pair):
    """Once dropped from the compared metrics, so nothing was gated."""
    base, cand = pair

    def drop(pred):
        del pred["summary"]["metrics"][METRIC]
        for row in pred["details"]["queries"]:
            del row["metrics"][METRIC]

    assert_input_error(compare(base, edit(cand, drop, v1=True)), "candidate.json",
                       f"lacks the gated metric '{METRIC}'")

    def drop_column(pred):
        del pred["summary"]["metrics"][METRIC]
        del pred["details"]["metrics"][METRIC]

    assert_input_error(compare(base, edit(cand, drop_column)), "candidate.json",
                       f"lacks the gated metric '{METRIC}'")

    def keep_column(pred):  # the summary without it, the column left: refused too
        del pred["summary"]["metrics"][METRIC]

    shutil.copy(GATE / "candidate-pass.json", cand)
    assert_input_error(compare(base, edit(cand, keep_column)), "candidate.json",
                       f"details.metrics has a column '{METRIC}' that the summary lacks")


def test_a_budget_naming_no_column_is_refused(pair, tmp_path, monkeypatch):
    """Once ignored: a configuration could gate nothing and always pass."""
    base, cand = pair
    res = compare(base, cand, "--budget", "span_coverage_first_stage=2pt")
    assert res.exit_code == 2 and "span_coverage_first_stage" in res.stderr
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragspan.budgets]\nspan_coverage_first_stage = "2pt"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert_input_error(compare(base, cand), "pyproject.toml", "span_coverage_first_stage")


def test_gating_nothing_needs_no_gate(pair):
    base, cand = pair
    off = ("--budget", "complete_grounding=off")
    assert compare(base, cand, *off).exit_code == 2
    res = compare(base, cand, *off, "--no-gate")
    assert res.exit_code == 0 and res.json()["predicate"]["summary"]["no_gate"] is True


def test_the_same_report_twice_is_refused(pair, tmp_path):
    base, _ = pair
    res = compare(base, base)
    assert res.exit_code == 2 and "same file" in res.stderr
    copy = tmp_path / "copy.json"
    shutil.copy(base, copy)
    res = compare(base, copy)
    assert res.exit_code == 2 and "identical" in res.stderr
    assert compare(base, copy, "--allow-identical").exit_code == 0


def test_a_query_listed_twice_is_refused(pair):
    """Once accepted: the query-set check compared sets."""
    base, cand = pair

    def repeat(pred):
        rows = pred["details"]["queries"]
        rows[1] = dict(rows[0])

    assert_input_error(compare(base, edit(cand, repeat, v1=True)), "candidate.json",
                       "query 'q00' is listed twice")

    def repeat_id(pred):  # format v2: the id column names q00 twice
        pred["details"]["questions"]["id"][1] = "q00"

    assert_input_error(compare(base, edit(cand, repeat_id)), "candidate.json",
                       "query 'q00' is listed twice (questions 0 and 1)")


def test_a_summary_disagreeing_with_its_rows_is_refused(pair):
    base, cand = pair

    def inflate(pred):
        pred["summary"]["metrics"][METRIC] = 0.95

    assert_input_error(compare(edit(base, inflate), cand), "baseline.json",
                       f"summary metric '{METRIC}' is 0.95", "disagrees with its rows")


def test_a_report_without_an_eval_set_digest_is_refused(pair):
    base, cand = pair

    def strip(pred):
        pred["inputs"] = [i for i in pred["inputs"] if i["role"] != "eval_set"]

    assert_input_error(compare(edit(base, strip), edit(cand, strip)), "baseline.json",
                       "records no eval-set (or qrels) digest")


def test_non_inferiority_with_one_query_fails(tmp_path):
    """The observed drop once stood in for a bound that does not exist."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": "x" * 300}])
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": "q", "query": "?", "doc_id": "d", "gold_spans": [[0, 100]]}])
    reports = []
    for name, start in (("b", 0), ("c", 10)):
        run = write_jsonl(tmp_path / f"run-{name}.jsonl", [
            {"id": "q", "retrieved": [{"doc_id": "d", "start": start, "end": start + 100}]}])
        out = tmp_path / f"{name}.json"
        assert run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                       "--k", "1", "--out", out).exit_code == 0
        reports.append(out)
    res = compare(*reports, "--mode", "non-inferiority")
    assert res.exit_code == 4
    assert any("fewer than 2 queries" in r for r in res.json()["predicate"]["summary"]["reasons"])


@pytest.mark.parametrize("body,fragment", [
    ('allow-budget-change = "false"', "allow-budget-change: expected true or false"),
    ('alpha = "0.05"', "alpha: expected a number in (0, 1)"),
    ('permutations = "many"', "permutations: expected an integer in [1, 1000000]"),
    ("permutations = 1.5", "permutations: expected an integer in [1, 1000000], got 1.5"),
    ("permutations = 1000000000000",
     "permutations: expected an integer in [1, 1000000], got 1000000000000"),
    ("bootstrap = 100000000", "bootstrap: expected an integer in [1, 200000], got 100000000"),
    ('seed = "x"', "seed: expected an integer"),
    ('budget-tolerance = "x"', "budget-tolerance: expected a number in [0, 10]"),
    ("budget-tolerance = 1000", "budget-tolerance: expected a number in [0, 10], got 1000"),
    ("top = -1", "top: expected an integer in [0, 1000], got -1"),
    ('gate-slices = "part"', "gate-slices: expected a list of strings (at most 16), got 'part'"),
    ('mode = "lenient"', "mode: expected one of"),
    ("budgets = 5", "budgets: expected a table"),
])
def test_config_values_are_type_checked(pair, tmp_path, monkeypatch, body, fragment):
    """``allow-budget-change = "false"`` once turned the budget check off (bool("false"));
    other wrong types crashed or were misread. Each is exit 3 naming the file and key."""
    base, cand = pair
    (tmp_path / "pyproject.toml").write_text(f"[tool.ragspan]\n{body}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert_input_error(compare(base, cand), "pyproject.toml", fragment)


def test_tool_must_be_a_table(pair, tmp_path, monkeypatch):
    base, cand = pair
    (tmp_path / "pyproject.toml").write_text("tool = 5\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert_input_error(compare(base, cand), "pyproject.toml", "'tool' must be a table")


def test_judged_only_is_refused_for_span_reports(tmp_path):
    """A span report's doc-level view once averaged judged queries only while its rows
    lacked doc metrics, so the report compared wrongly against itself."""
    res = run_cli("score", "--eval-set", GATE / "eval.jsonl", "--run",
                  GATE / "run-baseline.jsonl", "--judged-only")
    assert res.exit_code == 2 and "--judged-only applies to doc-level scoring" in res.stderr


def test_alpha_in_non_inferiority_mode_is_a_usage_error(pair):
    res = compare(*pair, "--mode", "non-inferiority", "--alpha", "0.05")
    assert res.exit_code == 2 and "--alpha has no effect" in res.stderr


def test_reasons_say_rose_and_name_the_bound(tmp_path, pair):
    """A retrieved_chars increase reads "rose"; a non-inferiority failure names its bound."""
    base, cand = pair

    def grow(pred):
        column = pred["details"]["metrics"]["retrieved_chars@1"]
        column[:] = [2 * v for v in column]
        pred["summary"]["metrics"]["retrieved_chars@1"] *= 2

    res = compare(base, edit(cand, grow), "--budget", "retrieved_chars=10%",
                  "--allow-budget-change")
    reasons = res.json()["predicate"]["summary"]["reasons"]
    assert any(r.startswith("retrieved_chars@1 rose") for r in reasons), reasons
    fail = GATE / "candidate-fail.json"
    res = compare(base, fail, "--mode", "non-inferiority")
    assert res.exit_code == 4
    assert any("one-sided 95% upper bound of the drop" in r and "exceeds the budget 2pt" in r
               for r in res.json()["predicate"]["summary"]["reasons"])


def test_non_finite_and_out_of_range_values_in_a_report(pair):
    base, cand = pair
    text = cand.read_text(encoding="utf-8")
    assert '"complete_grounding@1":[1.0,' in text
    cand.write_text(text.replace('"complete_grounding@1":[1.0', '"complete_grounding@1":[NaN', 1),
                    encoding="utf-8")
    assert_input_error(compare(base, cand), "candidate.json", "non-finite number NaN")
    cand.write_text(text.replace('"complete_grounding@1":[1.0', '"complete_grounding@1":[1e400',
                                 1), encoding="utf-8")
    assert_input_error(compare(base, cand), "candidate.json", "out of range")
    res = run_cli("validate-report", "--report", cand)
    assert_input_error(res, "candidate.json", "out of range")


@pytest.mark.parametrize("saturation,fragment", [
    ({"by_k": {"1": {"queries": 3, "share": 0.5}}},
     "summary.saturation: 'threshold' is a required property"),
    ({"threshold": 0.9, "by_k": {"1": {"queries": True, "share": 0.5}}},
     "summary.saturation.by_k['1'].queries: True is not of type 'integer'"),
    ({"threshold": 1.5, "by_k": {}},
     "summary.saturation.threshold: 1.5 is greater than the maximum of 1"),
    ({"threshold": 0.9, "scoped_queries": "12", "by_k": {}},
     "summary.saturation.scoped_queries: '12' is not valid under any of the given schemas"),
])
def test_a_saturation_summary_the_gate_cannot_read_is_refused(pair, saturation, fragment):
    """Once a missing threshold was read as 0.9 and a boolean as a count of queries."""
    base, cand = pair

    def put(pred):
        pred["summary"]["saturation"] = saturation

    assert_input_error(compare(base, edit(cand, put)), "candidate.json", fragment)


@pytest.mark.parametrize("rows", [
    [{"id": "q1", "relevant_ids": []}],
    [{"id": "q1", "relevant": {}}, {"id": "q2", "relevant": {}}],
])
def test_qrels_with_no_judged_query_score_nothing_and_say_so(tmp_path, rows):
    """Qrels that list queries but judge none used to give a report of 0 queries with every
    metric 0.0 and exit 0: a gate comparing two such reports had nothing to compare."""
    qrels = write_jsonl(tmp_path / "qrels.jsonl", rows)
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 r\n", encoding="utf-8")
    out = tmp_path / "report.json"
    result = run_cli("score", "--qrels", qrels, "--run", run, "--out", out)
    assert_input_error(result, "qrels.jsonl", f"none of the {len(rows)} queries",
                       "has a judgment")
    assert_error_envelope(out, 3)


@pytest.mark.parametrize("level", ["0", "-1"])
def test_a_relevance_level_below_one_is_refused(tmp_path, level):
    """Level 0 would count every judged-not-relevant document relevant."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 0\nq1 0 d2 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 r\n", encoding="utf-8")
    result = run_cli("score", "--qrels", qrels, "--run", run, "--relevance-level", level,
                     "--out", tmp_path / "r.json")
    assert result.exit_code == 2 and "--relevance-level" in result.stderr


def test_the_library_refuses_a_relevance_level_below_one_too():
    import numpy as np

    from ragspan.base.errors import UsageError
    from ragspan.scoring.doc_scoring import JudgedDocs

    judged = JudgedDocs.of({"q1": {"d1": 0, "d2": 1}})
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(UsageError, match="at least 1, got 0"):
        judged.score(["q1"], ["d1"], empty, empty, empty, (10,), level=0)
