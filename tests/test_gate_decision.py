"""The verdict rules as truth tables: ``gate.decide`` (compare), ``verdicts.findings_verdict``
(leakage, overlap, validate); and ``gate.compare`` as a pure function of two typed reports,
equal to what the ``compare`` command reports."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest

from conftest import ROOT, run_cli
from ragspan.base.errors import ExitCode, InputError, UsageError

FIX = ROOT / "tests" / "fixtures" / "gate"


def _outcome(name: str, failed: bool):
    from ragspan.gate.decision import MetricOutcome

    return MetricOutcome(name=name, baseline=0.5, candidate=0.4, delta=-0.1, ci_low=-0.2,
                         ci_high=0.0, p_value=0.01, p_adjusted=0.01, test="sign-flip",
                         budget="2pt", allowed_drop=0.02, gated=True, over_budget=failed,
                         significant=None, upper_drop=None, failed=failed, worse=3, better=1,
                         same=6)


def _budget(changed: bool, allowed: bool):
    from ragspan.gate.decision import BudgetCheck
    from ragspan.records.compare import BudgetAt

    per_k = {"5": BudgetAt(baseline=1000.0, candidate=2000.0 if changed else 1000.0,
                           ratio=2.0 if changed else 1.0, changed=changed)}
    return BudgetCheck(per_k, changed, allowed, 0.1)


@pytest.mark.parametrize("budget,metric_failed,slice_failed", list(itertools.product(
    [None, (False, False), (True, False), (True, True)], [False, True], [False, True])))
def test_decide_truth_table(budget, metric_failed, slice_failed):
    """Fail exactly when the budget changed without leave, a gated metric failed, or a gated
    slice failed; one reason per cause, in that order."""
    from ragspan.gate.decision import decide

    check = None if budget is None else _budget(*budget)
    outcomes = [_outcome("complete_grounding@5", metric_failed), _outcome("mrr@5", False)]
    slices = ["slice part=a (5 queries): complete_grounding@5 dropped"] if slice_failed else []
    got = decide(outcomes, check, slices)
    budget_fails = budget is not None and budget[0] and not budget[1]
    expect_fail = budget_fails or metric_failed or slice_failed
    assert (got.verdict, got.exit_code) == (("fail", ExitCode.GATE_FAILED) if expect_fail
                                            else ("pass", ExitCode.OK))
    assert len(got.reasons) == budget_fails + metric_failed + slice_failed
    if budget_fails:
        assert got.reasons[0].startswith("retrieval budget changed (@5: 1000 -> 2000 chars")
    if metric_failed:
        assert any(r.startswith("complete_grounding@5") for r in got.reasons)
    if slice_failed:
        assert got.reasons[-1] == slices[0]


@pytest.mark.parametrize("found,allowed,excess,verdict,code", [
    (0, 0, "fail", "pass", 0), (1, 0, "fail", "fail", 4), (3, 3, "fail", "pass", 0),
    (4, 3, "fail", "fail", 4), (0, 0, "error", "pass", 0), (1, 0, "error", "error", 3),
    (2, 5, "error", "pass", 0),
])
def test_findings_verdict_table(found, allowed, excess, verdict, code):
    from ragspan.base.verdicts import findings_verdict

    got = findings_verdict(found, allowed, excess)
    assert (got.verdict, int(got.exit_code)) == (verdict, code)


def test_findings_verdict_refuses_negative_counts():
    from ragspan.base.verdicts import findings_verdict

    with pytest.raises(ValueError):
        findings_verdict(-1)


def _typed(name: str):
    from ragspan.gate.inputs import score_report_of
    from ragspan.report.envelope import load_report

    doc, sha = load_report(FIX / name)
    return score_report_of(doc, sha, name, name.split(".")[0])


@pytest.mark.parametrize("candidate,verdict", [("candidate-pass.json", "inconclusive"),
                                               ("candidate-fail.json", "fail")])
def test_compare_is_the_command_s_verdict(candidate, verdict):
    """The pure function gives the verdict, reasons, metrics and most-regressed list that the
    command writes, from the typed reports alone (the command adds only what it verified)."""
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    result = compare(_typed("baseline.json"), _typed(candidate), GateOptions())
    assert result.decision.verdict == verdict
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", FIX / candidate,
                  "--format", "json")
    pred = res.json()["predicate"]
    assert res.exit_code == int(result.decision.exit_code)
    said = dict(pred["summary"])
    assert said.pop("verification")["verified"] is False
    assert json.loads(json.dumps(result.summary())) == said
    assert json.loads(json.dumps(result.details())) == pred["details"]


def test_compare_is_pure():
    """Same inputs, same result; the typed reports are not changed."""
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    base, cand = _typed("baseline.json"), _typed("candidate-fail.json")
    before = (base.values.copy(), cand.values.copy())
    first = compare(base, cand, GateOptions())
    again = compare(base, cand, GateOptions())
    assert first.summary() == again.summary() and first.details() == again.details()
    assert (base.values == before[0]).all() and (cand.values == before[1]).all()
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.no_gate = True  # type: ignore[misc]


def test_compare_names_where_a_stray_budget_came_from():
    from ragspan.gate.budgets import Budget
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions
    from ragspan.gate.plan import Origins

    base, cand = _typed("baseline.json"), _typed("candidate-pass.json")
    opts = GateOptions(budgets={"nonexistent_metric": Budget("pt", 2.0)})
    with pytest.raises(UsageError, match="--budget names 'nonexistent_metric'"):
        compare(base, cand, opts, origins=Origins(budgets={"nonexistent_metric": None}))
    with pytest.raises(InputError, match="pyproject.toml.*nonexistent_metric"):
        compare(base, cand, opts,
                origins=Origins(budgets={"nonexistent_metric": "pyproject.toml"}))


def test_compare_refuses_identical_reports_unless_asked():
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    base = _typed("baseline.json")
    with pytest.raises(UsageError, match="identical"):
        compare(base, base, GateOptions())
    assert compare(base, base, GateOptions(), allow_identical=True).decision.verdict == "pass"


def test_compare_refuses_gating_nothing_unless_no_gate():
    from ragspan.gate.budgets import Budget
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    base, cand = _typed("baseline.json"), _typed("candidate-fail.json")
    off = GateOptions(budgets={"complete_grounding": Budget("off", 0.0)},
                      allow_budget_change=True)
    with pytest.raises(UsageError, match="no metric is gated"):
        compare(base, cand, off)
    result = compare(base, cand, off, no_gate=True)
    assert result.gated == () and result.summary()["no_gate"] is True


def test_a_metric_name_outside_the_grammar_is_refused(tmp_path):
    """Metric names are read through the grammar (``name@k`` of a registered metric): a
    report carrying ``bogus_metric@1`` in its summary and rows is an input error, never a
    crash or a silently ungated column."""
    doc = json.loads((FIX / "candidate-fail.json").read_text(encoding="utf-8"))
    pred = doc["predicate"]

    def rename(metrics: dict) -> dict:
        return {("bogus_metric@1" if k == "mrr@1" else k): v for k, v in metrics.items()}

    pred["summary"]["metrics"] = rename(pred["summary"]["metrics"])
    pred["details"]["metrics"] = rename(pred["details"]["metrics"])
    bad = tmp_path / "candidate.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", bad)
    assert res.exit_code == 3, res.stderr
    assert "unknown metric 'bogus_metric@1'" in res.stderr and "candidate.json" in res.stderr
