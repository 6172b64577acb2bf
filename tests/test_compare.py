"""``ragspan compare``: each verdict path on hand-built report pairs, comparability refusals,
determinism, config from pyproject, and the markdown output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import as_v1, assert_input_error, assert_valid_report, run_cli, write_jsonl

N = 20


def make_reports(tmp: Path, grounded_base: list[int], grounded_cand: list[int],
                 cand_chars: int = 100, corpus_text: str = "x" * 1000, name: str = "c",
                 tags: list[str] | None = None) -> tuple[Path, Path]:
    """Each query has one gold span [0, 100); grounded queries retrieve [0, 100), others
    [500, 500 + chars). Returns the baseline and candidate score reports."""
    n = len(grounded_base)
    corpus = write_jsonl(tmp / "corpus.jsonl", [{"id": "d", "text": corpus_text}])
    rows = []
    for i in range(n):
        row = {"id": f"q{i:02d}", "query": f"question {i}", "doc_id": "d", "gold_spans": [[0, 100]]}
        if tags:
            row["tags"] = {"cat": tags[i]}
        rows.append(row)
    evalset = write_jsonl(tmp / "eval.jsonl", rows)
    paths = []
    for label, grounded, chars in (("base", grounded_base, 100), (name, grounded_cand, cand_chars)):
        run = write_jsonl(tmp / f"run-{label}.jsonl", [
            {"id": f"q{i:02d}", "retrieved": [
                {"doc_id": "d", "start": 0 if g else 500, "end": (0 if g else 500) + chars}]}
            for i, g in enumerate(grounded)])
        out = tmp / f"{label}.json"
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                      "--k", "1", "--no-budget-grid", "--out", out)  # the count cutoff alone
        assert res.exit_code == 0, res.stderr
        paths.append(out)
    return paths[0], paths[1]


def compare(base, cand, *args):
    res = run_cli("compare", "--baseline", base, "--candidate", cand, *args)
    if res.exit_code in (0, 4) and "--out" not in args and "--format" not in args:
        assert_valid_report(res.json())
    return res


def test_pass_when_unchanged(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    res = compare(b, c)
    assert res.exit_code == 0
    pred = res.json()["predicate"]
    assert pred["verdict"] == "pass" and pred["summary"]["reasons"] == []


def test_fail_over_budget(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 3 + [1] * (N - 3))  # -15pt
    res = compare(b, c, "--mode", "threshold")
    assert res.exit_code == 4
    s = res.json()["predicate"]["summary"]
    m = s["metrics"]["complete_grounding@1"]
    assert m["failed"] and m["over_budget"] and (m["fixed"], m["broken"]) == (0, 3)
    assert m["p_value"] == pytest.approx(0.25)
    assert any("complete_grounding@1 dropped 15.00pt" in r for r in s["reasons"])
    worst = res.json()["predicate"]["details"]["most_regressed"]
    assert [w["id"] for w in worst] == ["q00", "q01", "q02"]
    assert worst[0]["lost_spans"][0]["start"] == 0
    # every query and every gated metric, both sides and the delta, in the baseline's order
    diff = res.json()["predicate"]["details"]["per_query_diff"]
    assert diff["metrics"] == s["gated_metrics"]
    assert [q["id"] for q in diff["queries"]] == [f"q{i:02d}" for i in range(N)]
    j = diff["metrics"].index("complete_grounding@1")
    assert [(q["baseline"][j], q["candidate"][j], q["delta"][j]) for q in diff["queries"][2:4]] \
        == [(1.0, 0.0, -1.0), (1.0, 1.0, 0.0)]
    assert all(len(q["baseline"]) == len(q["candidate"]) == len(q["delta"]) == len(diff["metrics"])
               for q in diff["queries"])


def test_over_budget_but_not_significant_with_alpha_passes(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 3 + [1] * (N - 3))
    res = compare(b, c, "--alpha", "0.05", "--mode", "threshold")
    assert res.exit_code == 0
    m = res.json()["predicate"]["summary"]["metrics"]["complete_grounding@1"]
    assert m["over_budget"] and not m["significant"] and not m["failed"]


def test_significant_and_over_budget_with_alpha_fails(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 10 + [1] * (N - 10))
    res = compare(b, c, "--alpha", "0.05", "--mode", "threshold")
    assert res.exit_code == 4  # 10 broken, 0 fixed: p = 2 / 1024


def test_non_inferiority_fails_a_noisy_small_regression(tmp_path):
    # 8 queries, 2 lose grounding: p = 0.5 (not significant) but the upper bound of the drop
    # is far beyond 2pt, so non-inferiority refuses to pass it
    b, c = make_reports(tmp_path, [1] * 8, [0, 0] + [1] * 6)
    assert compare(b, c, "--alpha", "0.05").exit_code == 0
    res = compare(b, c, "--mode", "non-inferiority")
    assert res.exit_code == 4


def test_budget_changed_fails_unless_allowed(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [1] * N, cand_chars=300)
    res = compare(b, c)
    assert res.exit_code == 4
    s = res.json()["predicate"]["summary"]
    assert s["reasons"][0].startswith("retrieval budget changed")
    assert s["retrieval_budget"]["per_k"]["1"]["ratio"] == pytest.approx(3.0)
    ok = compare(b, c, "--allow-budget-change")
    assert ok.exit_code == 0
    assert ok.json()["predicate"]["summary"]["retrieval_budget"]["changed"] is True


def test_off_metric_never_fails(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 10 + [1] * (N - 10))
    off = ("--budget", "complete_grounding=off", "--budget", "span_coverage=off")
    res = compare(b, c, *off)
    assert res.exit_code == 2 and "no metric is gated" in res.stderr  # gating nothing: refused
    res = compare(b, c, *off, "--no-gate")
    assert res.exit_code == 0
    summary = res.json()["predicate"]["summary"]
    m = summary["metrics"]["complete_grounding@1"]
    assert m["gated"] is False and m["failed"] is False
    assert summary["no_gate"] is True and summary["gated_metrics"] == []


def test_relative_budget(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] + [1] * (N - 1))  # -5% relative
    assert compare(b, c, "--budget", "complete_grounding=6%", "--mode",
                   "threshold").exit_code == 0
    assert compare(b, c, "--budget", "complete_grounding=4%", "--mode",
                   "threshold").exit_code == 4


def test_mismatched_query_set_is_an_input_error(tmp_path):
    b, _ = make_reports(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path,
                        [1] * N, [1] * N)
    (tmp_path / "b").mkdir()
    _, c = make_reports(tmp_path / "b", [1] * (N - 1), [1] * (N - 1))
    assert_input_error(compare(b, c), "different eval set")


def test_different_corpus_is_an_input_error(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    b, _ = make_reports(tmp_path / "a", [1] * N, [1] * N)
    _, c = make_reports(tmp_path / "b", [1] * N, [1] * N, corpus_text="y" * 1000)
    assert_input_error(compare(b, c), "different corpus")


def test_query_set_mismatch_with_same_digest_is_named(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    doc = as_v1(json.loads(c.read_text()))
    doc["predicate"]["details"]["queries"].pop()
    c.write_text(json.dumps(doc))
    assert_input_error(compare(b, c), "query sets differ", "1 only in the baseline")
    doc = json.loads(b.read_text())  # format v2: the question left out of every column
    details = doc["predicate"]["details"]
    for table in (details["questions"], details["metrics"], details["failure"]):
        for column in table.values():
            column.pop()
    gold = details["gold"]
    keep = sum(g < N - 1 for g in gold["question"])
    for name, column in list(gold.items()):
        gold[name] = ({k: v[:keep] for k, v in column.items()} if isinstance(column, dict)
                      else column[:keep])
    evidence = details["evidence"]
    kept = [i for i, g in enumerate(evidence["gold"]) if g < keep]
    details["evidence"] = {k: [v[i] for i in kept] for k, v in evidence.items()}
    c.write_text(json.dumps(doc))
    assert_input_error(compare(b, c), "query sets differ", "1 only in the baseline")


def test_k_mismatch_and_error_baseline_and_missing(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    doc = json.loads(c.read_text())
    doc["predicate"]["parameters"]["k"] = [5]
    k5 = tmp_path / "k5.json"
    k5.write_text(json.dumps(doc))
    assert_input_error(compare(b, k5), "k5.json", "at a cutoff its parameters.k does not list")
    doc["predicate"]["parameters"]["k"] = [1, 5]
    k5.write_text(json.dumps(doc))
    assert_input_error(compare(b, k5), "k5.json", "parameters.k lists 5, at which it has no")
    doc = json.loads(b.read_text())
    doc["predicate"]["verdict"] = "error"
    doc["predicate"]["exit_code"] = 3
    err = tmp_path / "err.json"
    err.write_text(json.dumps(doc))
    assert_input_error(compare(err, c), "verdict 'error'")
    assert_input_error(compare(tmp_path / "missing.json", c), "missing.json", "not found")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert_input_error(compare(bad, c), "bad.json", "not a valid ragspan report")


def test_usage_errors(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    assert compare(b, c, "--budget", "nonsense=2pt").exit_code == 2
    # a bare number is the toolkit's percent of the baseline's mean, never points, and
    # brings that gate's rules (its short names are the doc-level columns); with ragspan's
    # unit a name ragspan has (span precision) keeps ragspan's meaning; on ragspan's own
    # metric a bare number is refused with the two spellings it could mean
    assert compare(b, c, "--budget", "complete_grounding=2").exit_code == 2
    for spec, column in (("precision=2", "doc_precision@1"), ("precision=2%", "precision@1"),
                         ("ndcg=2", "doc_ndcg@1")):
        res = compare(b, c, "--budget", spec, "--allow-identical")
        assert res.exit_code == 0, res.stderr
        assert res.json()["predicate"]["summary"]["metrics"][column]["budget"] == "2%"
    assert compare(b, c, "--budget", "retrieved_chars=2pt").exit_code == 2
    assert compare(b, c, "--alpha", "1.5").exit_code == 2


def test_byte_identical_with_same_seed(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 4 + [1] * (N - 4))
    o1, o2 = tmp_path / "o1.json", tmp_path / "o2.json"
    assert compare(b, c, "--seed", "3", "--out", o1).exit_code == 4
    assert compare(b, c, "--seed", "3", "--out", o2).exit_code == 4
    assert o1.read_bytes() == o2.read_bytes()
    assert o1.read_text().count("\n") == 1


def test_gate_slices(tmp_path):
    tags = ["a"] * 10 + ["b"] * 10
    # slice b loses 3 of 10 (-30pt) while the aggregate loses 15pt; both fail, slice named
    b, c = make_reports(tmp_path, [1] * N, [1] * 10 + [0] * 3 + [1] * 7, tags=tags)
    res = compare(b, c, "--gate-slices", "cat", "--budget", "complete_grounding=20pt",
                  "--mode", "threshold")
    assert res.exit_code == 4
    reasons = res.json()["predicate"]["summary"]["reasons"]
    assert reasons == [r for r in reasons if r.startswith("slice cat=b")]
    small = compare(b, c, "--gate-slices", "cat", "--budget", "complete_grounding=20pt",
                    "--min-slice-size", "11", "--mode", "threshold")
    assert small.exit_code == 0
    assert small.json()["predicate"]["details"]["slices"]["cat"]["b"]["gated"] is False


def test_pyproject_config_and_cli_precedence(tmp_path, monkeypatch):
    b, c = make_reports(tmp_path, [1] * N, [0] * 3 + [1] * (N - 3))
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.ragspan]\nalpha = 0.05\n[tool.ragspan.budgets]\n'
                   'complete_grounding = "2pt"\n')
    monkeypatch.chdir(tmp_path)
    res = compare(b, c)
    assert res.exit_code == 0  # alpha from pyproject: not significant
    assert res.json()["predicate"]["parameters"]["config_file"] == "pyproject.toml"
    assert compare(b, c, "--budget", "complete_grounding=50pt").exit_code == 0
    cfg.write_text("[tool.ragspan]\nalfa = 1\n")
    assert_input_error(compare(b, c), "pyproject.toml", "[tool.ragspan]: unknown key(s) alfa")


def test_the_config_is_found_from_a_subdirectory_and_named(tmp_path, monkeypatch):
    """Running from a subdirectory reads the project's pyproject.toml (the nearest one up
    the tree), says so in the verdict and records it: the verdict does not change."""
    b, c = make_reports(tmp_path, [1] * N, [0] * 3 + [1] * (N - 3))
    (tmp_path / "pyproject.toml").write_text('[tool.ragspan]\nmode = "threshold"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    top = compare(b, c)
    monkeypatch.chdir(deep)
    below = compare(b, c)
    assert top.exit_code == below.exit_code == 4  # threshold mode from the file, both times
    assert below.json()["predicate"]["parameters"]["config_file"] == "../../pyproject.toml"
    table = compare(b, c, "--format", "table").stdout
    assert "settings from ../../pyproject.toml" in table


def test_markdown_verdict_first(tmp_path):
    b, c = make_reports(tmp_path, [1] * N, [0] * 3 + [1] * (N - 3))
    md = compare(b, c, "--format", "markdown", "--mode", "threshold").stdout
    lines = md.splitlines()
    assert lines[0] == "### ragspan gate: ❌ FAIL"
    table_rows = [ln for ln in lines if ln.startswith("| ❌")]
    assert table_rows and "complete_grounding@1" in table_rows[0]
    assert "Most regressed queries" in md


def test_metric_fails_truth_table():
    from ragspan.gate.decision import metric_fails

    common = dict(n=20, mode="threshold", upper_drop=None, allowed_drop=0.02)
    assert metric_fails(gated=False, over_budget=True, alpha=None, p=0.0, **common)[0] is False
    assert metric_fails(gated=True, over_budget=False, alpha=None, p=0.0, **common)[0] is False
    assert metric_fails(gated=True, over_budget=True, alpha=None, p=0.9, **common)[0] is True
    assert metric_fails(gated=True, over_budget=True, alpha=0.05, p=0.9, **common)[0] is False
    assert metric_fails(gated=True, over_budget=True, alpha=0.05, p=0.01, **common)[0] is True
    one = dict(common, n=1)
    assert metric_fails(gated=True, over_budget=True, alpha=0.05, p=None, **one)[0] is True
    ni = dict(common, mode="non-inferiority")
    assert metric_fails(gated=True, over_budget=False, alpha=None, p=None,
                        **{**ni, "upper_drop": 0.019})[0] is False
    assert metric_fails(gated=True, over_budget=False, alpha=None, p=None,
                        **{**ni, "upper_drop": 0.03})[0] is True


def test_report_with_broken_query_rows_is_refused(tmp_path):
    """A hand-edited report whose rows lack metrics fails the schema: exit 3, not a crash."""
    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    doc = as_v1(json.loads(c.read_text()))
    del doc["predicate"]["details"]["queries"][0]["metrics"]
    c.write_text(json.dumps(doc))
    assert_input_error(compare(b, c), "not a valid ragspan report",
                       "$.predicate.details.queries[0]")
    doc = json.loads(b.read_text())  # format v2: a metric column of another length
    next(iter(doc["predicate"]["details"]["metrics"].values())).pop()
    c.write_text(json.dumps(doc))
    assert_input_error(compare(b, c), "not a valid ragspan report", "$.predicate.details",
                       f"has {N - 1} entries for {N} questions")


def test_compare_records_report_digests(tmp_path):
    import hashlib

    b, c = make_reports(tmp_path, [1] * N, [1] * N)
    inputs = compare(b, c).json()["predicate"]["inputs"]
    assert [i["digest"]["sha256"] for i in inputs] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in (b, c)]


def test_doc_level_markdown_has_no_empty_columns(tmp_path):
    """A TREC run has no query text and a doc-level report no gold spans: the most-regressed
    table leaves those columns out instead of showing them empty."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(N)), encoding="utf-8")
    reports = []
    for name, hits in (("base", N), ("cand", N - 4)):
        run = tmp_path / f"{name}.trec"
        run.write_text("".join(f"q{i} Q0 {'d' if i < hits else 'x'}{i} 1 1.0 r\n" for i in range(N)),
                       encoding="utf-8")
        out = tmp_path / f"{name}.json"
        assert run_cli("score", "--qrels", qrels, "--run", run, "--k", "1", "--out", out).exit_code == 0
        reports.append(out)
    res = compare(*reports, "--format", "markdown", "--no-config")
    head = next(ln for ln in res.stdout.splitlines() if ln.startswith("| query id"))
    assert [c.strip() for c in head.strip("|").split("|")] == ["query id", "change"]
    assert "| q16 | 1.00 → 0.00 |" in res.stdout


def test_summary_per_query_counts_every_gated_metric(tmp_path):
    b, c = make_reports(tmp_path, [1] * 20 + [0] * 10, [1] * 14 + [0] * 6 + [1] * 3 + [0] * 7)
    res = compare(b, c, "--format", "json")
    pred = res.json()["predicate"]
    counts = pred["summary"]["per_query"]
    assert set(counts) == set(pred["summary"]["gated_metrics"])
    (name,) = [n for n in counts if n.startswith("complete_grounding")]
    assert counts[name] == {"better": 3, "worse": 6, "same": 21,
                            "worst": {"id": counts[name]["worst"]["id"], "drop": 1.0}}
    rows = {q["id"]: q for q in pred["details"]["per_query_diff"]["queries"]}
    assert rows[counts[name]["worst"]["id"]]["delta"][0] == -1.0
