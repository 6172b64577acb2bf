"""Budgets in percent of the baseline's mean, spelled as the toolkit-rag-quality CI gate
spells them: a workflow's flags run unchanged and decide as that gate's rule says (any
metric whose mean drops more than its percent fails)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

N = 40


def _reports(tmp_path, moved):
    """Doc-level reports of a baseline ranking every relevant document first and a
    candidate that moves it to rank 2 for ``moved`` queries: nDCG@5 and @10 drop by
    0.369 x moved / N of their mean, MRR and MAP by 0.5 x moved / N; recall, precision and
    hit rate do not move."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 r{i} 1\n" for i in range(N)), encoding="utf-8")
    out = {}
    for name, n_moved in (("base", 0), ("cand", moved)):
        lines = []
        for i in range(N):
            docs = [f"x{i}-{j}" for j in range(9)]
            docs.insert(1 if i < n_moved else 0, f"r{i}")
            lines += [f"q{i} Q0 {d} {r + 1} {10 - r} t\n" for r, d in enumerate(docs)]
        run = tmp_path / f"{name}.trec"
        run.write_text("".join(lines), encoding="utf-8")
        report = tmp_path / f"{name}.json"
        res = run_cli("score", "--qrels", qrels, "--run", run, "--out", report)
        assert res.exit_code == 0, res.stderr
        out[name] = report
    return out["base"], out["cand"]


def _compare(base, cand, *flags):
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--format", "json", *flags)
    return res, (json.loads(res.stdout)["predicate"] if res.stdout.strip() else None)


WORKFLOW = ("--max-recall-regression-pct", "2.0", "--max-regression-pct", "5.0",
            "--budget", "ndcg=1", "--budget", "hit_rate=off")


def _failed(pred):
    return {m.split("@")[0] for m, v in pred["summary"]["metrics"].items() if v["failed"]}


def test_a_workflow_written_for_that_gate_runs_unchanged_and_decides_as_it_says(tmp_path):
    base, cand = _reports(tmp_path, moved=2)  # nDCG -1.8%, MRR and MAP -2.5%
    res, pred = _compare(base, cand, *WORKFLOW)
    assert res.exit_code == 4, res.stderr
    assert pred["verdict"] == "fail" and pred["parameters"]["mode"] == "threshold"
    assert _failed(pred) == {"doc_ndcg"}
    budgets = {m.split("@")[0]: v["budget"] for m, v in pred["summary"]["metrics"].items()}
    assert budgets == {"doc_recall": "2%", "doc_precision": "5%", "doc_mrr": "5%",
                       "doc_map": "5%", "doc_ndcg": "1%", "doc_hit_rate": "off",
                       "doc_judged": "off"}
    # nDCG's own budget raised to 3%: every drop is within its budget
    res, pred = _compare(base, cand, *WORKFLOW[:4], "--budget", "ndcg=3")
    assert res.exit_code == 0 and pred["verdict"] == "pass", res.stderr
    # the recall budget alone sets the others: 2% is under MRR's and MAP's 2.5% drop
    res, pred = _compare(base, cand, "--max-recall-regression-pct", "2")
    assert res.exit_code == 4 and _failed(pred) == {"doc_mrr", "doc_map"}  # nDCG -1.8% passes
    # a k named the way that gate names it
    res, pred = _compare(base, cand, *WORKFLOW[:4], "--budget", "ndcg_at_10=off",
                         "--budget", "ndcg_at_5=3")
    assert res.exit_code == 0, res.stderr
    assert pred["summary"]["metrics"]["doc_ndcg@10"]["budget"] == "off"
    # the rule is stated: a mode given wins over the threshold rule
    res, pred = _compare(base, cand, *WORKFLOW, "--mode", "interval")
    assert pred["parameters"]["mode"] == "interval"


@pytest.mark.parametrize("spec, column, budget, mode", [
    ("ndcg=1pt", "doc_ndcg@5", "1pt", "interval"),
    ("doc_ndcg=1", "doc_ndcg@5", "1%", "threshold"),
    ("ndcg_at_10=3", "doc_ndcg@10", "3%", "threshold"),
    ("ndcg_at_k=2", "doc_ndcg@5", "2%", "threshold"),
    ("precision=2", "doc_precision@5", "2%", "threshold"),
    ("hit_rate@5=3pt", "doc_hit_rate@5", "3pt", "interval")])
def test_short_names_and_bare_numbers_read_as_the_toolkit_reads_them(tmp_path, spec, column,
                                                                      budget, mode):
    """A workflow's budgets without the percent flags (they were a usage error): a short
    name is the doc-level column, a bare number a percent, as toolkit-rag-quality reads
    them (``NAME_at_k``: every k). A spelling only that gate writes (a bare number, a
    ``NAME_at_K``) brings its rules with it (its other metrics at 2%, threshold mode:
    docs/toolkit.md); a short name with ragspan's unit is that column alone, by ragspan's
    rules, and a short name that is also a ragspan metric (span ``precision``,
    ``hit_rate``) keeps ragspan's meaning."""
    base, cand = _reports(tmp_path, moved=0)
    res, pred = _compare(base, cand, "--budget", spec, "--allow-identical")
    assert res.exit_code in (0, 4), res.stderr
    assert pred["summary"]["metrics"][column]["budget"] == budget
    assert pred["parameters"]["mode"] == mode
    assert pred["parameters"]["profile"] == ("toolkit" if mode == "threshold" else "auto")
    recall = pred["summary"]["metrics"]["doc_recall@5"]  # one of the toolkit's six
    assert (recall["gated"], recall["budget"]) == \
        ((True, "2%") if mode == "threshold" else (False, "off"))


@pytest.mark.parametrize("flags", [("--max-regression-pct", "-1"),
                                   ("--max-recall-regression-pct", "101"),
                                   ("--max-regression-pct", "nan")])
def test_percent_out_of_range_is_a_usage_error(tmp_path, flags):
    base, cand = _reports(tmp_path, moved=0)
    res, _ = _compare(base, cand, *flags, "--allow-identical")
    assert res.exit_code == 2, res.stderr


# ---- budgets are finite: a number that overflows is refused, never infinity -------------

NINES = "9" * 400


@pytest.mark.parametrize("flags", [
    ("--budget", f"complete_grounding={NINES}pt"),
    ("--budget", f"doc_ndcg={NINES}%"),
    ("--budget", "doc_ndcg=100.5%"),
    ("--max-recall-regression-pct", NINES),
    ("--max-regression-pct", "nan"),
    ("--max-regression-pct", "inf"),
    ("--budget-tolerance", "1e400"),
])
def test_an_overflowing_budget_is_a_usage_error_naming_its_flag(tmp_path, flags):
    base, cand = _reports(tmp_path, 0)
    res, _ = _compare(base, cand, *flags)
    assert res.exit_code == 2, res.stdout
    assert flags[0] in res.stderr and "infpt" not in res.stdout + res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(("key", "value"), [
    ("max-recall-regression-pct", "inf"), ("max_regression_pct", "nan"),
    ("budget-tolerance", "1e400"), ("alpha", "nan"),
])
def test_an_overflowing_config_value_is_an_input_error_naming_its_key(tmp_path, key, value):
    base, cand = _reports(tmp_path, 0)
    config = tmp_path / "pyproject.toml"
    config.write_text(f"[tool.ragspan]\n{key} = {value}\n", encoding="utf-8")
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--config", config)
    assert res.exit_code == 3, res.stdout
    assert key in res.stderr and str(config) in res.stderr


def test_an_overflowing_config_budget_names_its_key(tmp_path):
    base, cand = _reports(tmp_path, 0)
    config = tmp_path / "pyproject.toml"
    config.write_text(f'[tool.ragspan.budgets]\ndoc_ndcg = "{NINES}pt"\n', encoding="utf-8")
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--config", config)
    assert res.exit_code == 3 and "budgets doc_ndcg" in res.stderr, res.stderr
    assert "over 100pt" in res.stderr


def test_plan_and_anchor_budgets_are_finite(tmp_path):
    res = run_cli("plan", "--flip-rate", "0.1", "--budget", f"{NINES}pt")
    assert res.exit_code == 2 and "--budget" in res.stderr and "over 100pt" in res.stderr
    base, cand = _reports(tmp_path, 0)
    res, _ = _compare(base, cand, "--anchor", base, "--anchor-budget", f"{NINES}pt")
    assert res.exit_code == 2 and "--anchor-budget" in res.stderr, res.stderr


# ---- one reading of every number a user types ---------------------------------------------


def test_a_bare_budget_number_is_read_once_and_said(tmp_path):
    """``--budget complete_grounding=2`` was read as 2% of the mean, ``=0.02`` as 0.02%,
    without a word. A bare number on ragspan's own metric is refused with the two spellings
    it could mean; on the toolkit's names it is the toolkit's percent, said in the verdict
    and the JSON."""
    base, cand = _reports(tmp_path, moved=0)
    for value in ("2", "0.02"):
        res, _ = _compare(base, cand, "--budget", f"complete_grounding={value}",
                          "--allow-identical")
        assert res.exit_code == 2
        assert (f"a bare number could mean {value}pt (points of the 0-1 metric) or {value}% "
                f"(of the baseline's mean); write one of complete_grounding={value}pt or "
                f"complete_grounding={value}%") in res.stderr
    res, pred = _compare(base, cand, "--budget", "ndcg=1", "--allow-identical")
    assert res.exit_code in (0, 4), res.stderr
    assert any(w.startswith("budget 'ndcg=1' read as 'doc_ndcg=1%': a bare number is a "
                            "percent of the baseline's mean") for w in pred["summary"]["warnings"])


def test_shares_are_read_as_the_docs_write_them(tmp_path):
    """``--max-set-aside 5%`` (the docs write "5%") and ``--grounding-threshold 50%`` were
    "not a valid float"; in a settings file too."""
    base, cand = _reports(tmp_path, moved=0)
    res, pred = _compare(base, cand, "--max-set-aside", "5%", "--allow-identical")
    assert res.exit_code in (0, 4), res.stderr
    res, _ = _compare(base, cand, "--max-set-aside", "150%", "--allow-identical")
    assert res.exit_code == 2 and "--max-set-aside" in res.stderr
    res, _ = _compare(base, cand, "--max-set-aside", "five%", "--allow-identical")
    assert res.exit_code == 2 and "is not a percentage" in res.stderr
    from ragspan.base.options import GATE_OPTIONS, check_value

    opt = next(o for o in GATE_OPTIONS if o.key == "max-set-aside")
    assert check_value(opt, "5%") == pytest.approx(0.05)
    from conftest import write_jsonl

    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "x" * 100}])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "?", "doc_id": "d",
                                             "gold_spans": [[10, 20]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": "q", "retrieved": [
        {"doc_id": "d", "start": 10, "end": 16}]}])
    pcts = []
    for tau in ("50%", "0.5", "70%"):
        res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus, "--k", "1",
                      "--grounding-threshold", tau, "--format", "json")
        assert res.exit_code == 0, res.stderr
        pcts.append(json.loads(res.stdout)["predicate"]["summary"]["metrics"]
                    ["complete_grounding@1"])
    assert pcts == [1.0, 1.0, 0.0]  # 60% covered: grounded at 50%, not at 70%
