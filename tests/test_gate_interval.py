"""The interval gate (the default): pass / fail / inconclusive from one-sided bounds on the
drop, the bounds themselves against independent computations, the family adjustment, the
power statement, the drift guard, ``ragspan plan``, and the truth table in docs/gate.md."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, assert_valid_report, run_cli
from test_compare import make_reports


def test_the_truth_table_is_the_code_s_and_the_docs_show_it():
    from ragspan.gate.decision import TRUTH_TABLE, interval_decision, metric_fails, truth_table_markdown

    for mode, _, cond, result, case in TRUTH_TABLE:
        if mode == "interval":
            got = interval_decision(**{k: v for k, v in case.items()})
        else:
            failed, _ = metric_fails(**case)
            got = "fail" if failed else "pass"
        want = result.strip("*").split(" ")[0]
        assert got == want, (mode, cond, got)
    assert truth_table_markdown() in (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")


# ---- the bounds ----------------------------------------------------------------------------


def _midp_one_sided(broken: int, fixed: int) -> float:
    """Mid-p McNemar, one-sided for a drop, from scipy.stats (independent of the code)."""
    from scipy.stats import binom

    m = broken + fixed
    return float(binom.sf(broken, m, 0.5) + 0.5 * binom.pmf(broken, m, 0.5))


@pytest.mark.parametrize("alpha", [0.05, 0.025, 0.01])
def test_the_binary_lower_bound_clears_zero_exactly_when_mid_p_mcnemar_rejects(alpha):
    from ragspan.gate.bounds import paired_binary_drop

    for broken in range(0, 25):
        for fixed in range(0, 25):
            if broken + fixed == 0:
                assert paired_binary_drop(0, 0, 50, alpha) == (0.0, 0.0)
                continue
            low, high = paired_binary_drop(broken, fixed, 60, alpha)
            assert -1 <= low <= (broken - fixed) / 60 <= high <= 1
            p = _midp_one_sided(broken, fixed)
            if abs(p - alpha) > 1e-9:
                assert (low > 1e-12) == (p < alpha), (broken, fixed, p, low)


def test_the_binary_bounds_invert_the_mid_p_tail_at_their_ends():
    from scipy.stats import binom

    from ragspan.gate.bounds import paired_binary_drop

    broken, fixed, n, alpha = 9, 3, 40, 0.05
    low, high = paired_binary_drop(broken, fixed, n, alpha)
    m = broken + fixed
    for bound, tail in ((low, "upper"), (high, "lower")):
        pi = (bound * n / m + 1) / 2
        if tail == "upper":  # P(X > b) + P(X = b) / 2 = alpha at the lower bound
            got = binom.sf(broken, m, pi) + 0.5 * binom.pmf(broken, m, pi)
        else:  # P(X < b) + P(X = b) / 2 = alpha at the upper bound
            got = binom.cdf(broken - 1, m, pi) + 0.5 * binom.pmf(broken, m, pi)
        assert got == pytest.approx(alpha, abs=1e-9)


def test_bootstrap_t_equals_a_direct_loop_over_the_same_resamples():
    from ragspan.gate.bounds import bootstrap_t_drop

    rng = np.random.default_rng(3)
    d = np.column_stack([rng.exponential(0.3, 25) - 0.2, rng.normal(0, 1, 25)])
    low, high, _ = bootstrap_t_drop(d, 0.05, 500, 7)
    draws = np.random.default_rng(7).integers(0, 25, size=(500, 25))
    mean, se = d.mean(axis=0), d.std(axis=0, ddof=1) / 5
    t = np.array([(d[i].mean(axis=0) - mean) / (d[i].std(axis=0, ddof=1) / 5) for i in draws])
    q_abs = np.quantile(np.abs(t), 0.90, axis=0)  # the symmetric interval's
    upper_q = np.maximum(np.quantile(t, 0.95, axis=0), q_abs)
    lower_q = np.minimum(np.quantile(t, 0.05, axis=0), -q_abs)
    assert low == pytest.approx(mean - upper_q * se, rel=1e-9)
    assert high == pytest.approx(mean - lower_q * se, rel=1e-9)
    same = bootstrap_t_drop(np.full((10, 1), 0.25), 0.05, 200, 0)
    assert same[0][0] == same[1][0] == 0.25 and same[2][0] == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_the_p_value_and_the_bound_come_from_one_test(seed):
    """At every error rate, a bound's lower end is above 0 exactly when its p-value of "no
    drop" is below that rate: bootstrap-t (continuous), mid-p McNemar (binary)."""
    from ragspan.gate.bounds import bootstrap_t_drop, midp_no_drop, paired_binary_drop

    rng = np.random.default_rng(seed)
    d = np.column_stack([rng.normal(0.05 * seed, 0.3, 30), rng.exponential(0.2, 30) - 0.15])
    _, _, p = bootstrap_t_drop(d, 0.05, 400, seed)
    for alpha in (0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.45):
        low, _, _ = bootstrap_t_drop(d, alpha, 400, seed)
        for j in range(2):
            if abs(p[j] - alpha) > 1e-9:
                assert (low[j] > 0) == (p[j] < alpha), (alpha, j, low[j], p[j])
    broken, fixed = int(rng.integers(0, 12)), int(rng.integers(0, 6))
    q = midp_no_drop(broken, fixed)
    for alpha in (0.001, 0.01, 0.05, 0.1, 0.3):
        low, _ = paired_binary_drop(broken, fixed, 40, alpha)
        if abs(q - alpha) > 1e-9:
            assert (low > 1e-12) == (q < alpha), (alpha, broken, fixed, low, q)


def test_the_family_level_none_holm_and_max_t():
    from ragspan.gate.stats import family_alpha

    rng = np.random.default_rng(0)
    d = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.8, 0.1], size=200)
    everyone = np.arange(200)
    assert family_alpha([d], [everyone], 200, 0.05, "max-t", 2000, 0) == 0.05
    assert family_alpha([d, d], [everyone] * 2, 200, 0.05, "none", 2000, 0) == 0.05
    assert family_alpha([d, d], [everyone] * 2, 200, 0.05, "holm", 2000, 0) == 0.025
    twins = family_alpha([d, d], [everyone] * 2, 200, 0.05, "max-t", 4000, 0)
    assert 0.035 <= twins <= 0.05  # one hypothesis twice costs (nearly) nothing
    other = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.8, 0.1], size=200)
    apart = family_alpha([d, other], [everyone] * 2, 200, 0.05, "max-t", 4000, 0)
    assert 0.025 <= apart < 0.03  # two independent ones cost about Bonferroni
    halves = [np.arange(100), np.arange(100, 200)]
    sliced = family_alpha([d[:100], d[100:], d], [*halves, everyone], 200, 0.05, "max-t",
                          4000, 0)
    assert 0.05 / 3 <= sliced < 0.05
    assert sliced == family_alpha([d[:100], d[100:], d], [*halves, everyone], 200, 0.05,
                                  "max-t", 4000, 0)  # seeded


# ---- the verdict through the command -------------------------------------------------------


def test_a_real_drop_fails_and_nothing_changed_passes(tmp_path):
    n = 40
    b, c = make_reports(tmp_path, [1] * n, [0] * 12 + [1] * (n - 12))
    res = run_cli("compare", "--baseline", b, "--candidate", c)
    assert res.exit_code == 4
    m = res.json()["predicate"]["summary"]["metrics"]["complete_grounding@1"]
    assert m["decision"] == "fail" and m["interval"] == "mid-p-mcnemar"
    assert m["drop_bounds"][0] > 0 and m["bound_alpha"] == 0.05
    same_dir = tmp_path / "same"
    same_dir.mkdir()
    b, c = make_reports(same_dir, [1] * 20 + [0] * 20, [1] * 20 + [0] * 20, cand_chars=101)
    res = run_cli("compare", "--baseline", b, "--candidate", c, "--allow-budget-change")
    assert res.exit_code == 0 and res.json()["predicate"]["verdict"] == "pass"


def test_inconclusive_exits_as_configured_and_says_what_n_can_see(tmp_path):
    n = 30
    b, c = make_reports(tmp_path, [1] * 25 + [0] * 5, [1] * 23 + [0] * 5 + [1, 1])
    # 2 broken, 2 fixed of 30: no real drop, and no proof the drop is within 2pt
    res = run_cli("compare", "--baseline", b, "--candidate", c)
    pred = res.json()["predicate"]
    assert_valid_report(res.json())
    assert res.exit_code == 0 and pred["verdict"] == "inconclusive"
    summary = pred["summary"]
    assert summary["inconclusive"] and summary["interval"]["on_inconclusive"] == "pass"
    power = summary["power"]["complete_grounding@1"]
    assert power["changed_share"] == pytest.approx(4 / 30)
    sd = np.std(np.array([-1.0] * 2 + [1.0] * 2 + [0.0] * 26), ddof=1)
    assert power["minimum_detectable_drop"] == pytest.approx(
        (1.6448536269514722 + 0.8416212335729143) * sd / math.sqrt(n), rel=1e-9)
    assert any("cannot be told from noise" in w and "budget 2pt" in w
               for w in summary["warnings"])
    strict = run_cli("compare", "--baseline", b, "--candidate", c, "--on-inconclusive", "fail")
    assert strict.exit_code == 4 and strict.json()["predicate"]["verdict"] == "inconclusive"
    table = run_cli("compare", "--baseline", b, "--candidate", c, "--format", "markdown")
    assert table.stdout.startswith("### ragspan gate: ❔ INCONCLUSIVE")


def test_old_modes_refuse_max_t_and_keep_their_rules(tmp_path):
    b, c = make_reports(tmp_path, [1] * 20, [0] * 3 + [1] * 17)
    res = run_cli("compare", "--baseline", b, "--candidate", c, "--mode", "threshold",
                  "--correction", "max-t")
    assert res.exit_code == 2 and "max-t adjusts the interval mode" in res.stderr
    assert run_cli("compare", "--baseline", b, "--candidate", c, "--mode",
                   "threshold").exit_code == 4


# ---- the drift guard -----------------------------------------------------------------------


def _report(values, tag):
    from ragspan.gate.inputs import QueryRow, ScoreReport

    ids = tuple(f"q{i}" for i in range(len(values)))
    matrix = np.stack([values, np.full(len(values), 500.0)], axis=1)
    return ScoreReport(path=tag, sha256=tag, kind="score.span",
                       parameters={"k": [5], "grounding_threshold": 0.5}, eval_sha256="e",
                       corpus_sha256=None, ids=ids,
                       names=("complete_grounding@5", "retrieved_chars@5"), values=matrix,
                       rows=tuple(QueryRow(q, "", {}, {}, {}, {}) for q in ids))


def test_ten_small_drops_fail_by_the_fourth_merge_against_the_anchor():
    """Ten PRs of -1.5pt (3 of 200 queries broken each), budget 2pt, anchor budget 5pt."""
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    values = np.ones(200)
    values[:40] = 0.0
    anchor = _report(values.copy(), "anchor")
    prev, verdicts = anchor, []
    for merge in range(1, 11):
        values[40 + 3 * (merge - 1): 40 + 3 * merge] = 0.0
        cand = _report(values.copy(), f"m{merge}")
        alone = compare(prev, cand, GateOptions()).decision.verdict
        assert alone != "fail"  # each PR alone passes the 2pt budget
        verdicts.append(compare(prev, cand, GateOptions(anchor_budget="5pt"),
                                anchor=anchor).decision.verdict)
        prev = cand
    assert "fail" in verdicts[:4]  # by the fourth merge: -6pt from the anchor


def test_the_anchor_through_the_command(tmp_path):
    b, c = make_reports(tmp_path, [1] * 40, [0] * 1 + [1] * 39)  # -2.5pt from main
    a_dir = tmp_path / "a"
    a_dir.mkdir()
    anchor, _ = make_reports(a_dir, [1] * 40, [1] * 40)
    # the anchor was scored on the same eval set and corpus (same bytes), so it compares
    res = run_cli("compare", "--baseline", b, "--candidate", c, "--anchor", anchor,
                  "--anchor-budget", "1pt")
    pred = res.json()["predicate"]
    assert pred["summary"]["anchor"]["budget"] == "1pt"
    assert {i["role"] for i in pred["inputs"]} == {"baseline", "candidate", "anchor"}
    assert run_cli("compare", "--baseline", b, "--candidate", c, "--anchor",
                   anchor).exit_code == 2
    res = run_cli("compare", "--baseline", b, "--candidate", c, "--anchor-budget", "5pt")
    assert res.exit_code == 2 and "--anchor-budget needs --anchor" in res.stderr


# ---- plan, and what compare imports --------------------------------------------------------


def test_plan_gives_the_design_formula():
    res = run_cli("plan", "--flip-rate", "0.2", "--budget", "2pt", "--format", "json")
    s = res.json()["predicate"]["summary"]
    za, zp = 1.6448536269514722, 0.8416212335729143
    assert s["queries_to_pass"] == math.ceil(((za + zp) * math.sqrt(0.2) / 0.02) ** 2)
    assert s["queries_to_fail"] == max(math.ceil(((za + zp) * math.sqrt(0.2) / 0.04) ** 2),
                                       math.ceil((zp * math.sqrt(0.2) / 0.02) ** 2))
    assert s["minimum_detectable_drop"]["300"] == pytest.approx(
        (za + zp) * math.sqrt(0.2) / math.sqrt(300))
    res = run_cli("plan", "--flip-rate", "0.2", "--budget", "2%")
    assert res.exit_code == 2 and "points of complete grounding" in res.stderr


def test_compare_does_not_import_scipy_stats(tmp_path):
    b, c = make_reports(tmp_path, [1] * 20, [0] * 3 + [1] * 17)
    code = ("import sys\nfrom ragspan.cli import main\nsys.argv = ['ragspan', 'compare', "
            f"'--baseline', {str(b)!r}, '--candidate', {str(c)!r}, '--format', 'json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('STATS' if 'scipy.stats' in sys.modules else 'NO-STATS')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert res.stderr.endswith("NO-STATS"), res.stderr[-500:]


def test_a_second_scoring_of_the_baseline_names_the_unstable_queries(tmp_path):
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions

    base_values = np.array([1.0] * 30 + [0.0] * 10)
    noise_values = base_values.copy()
    noise_values[[0, 35]] = [0.0, 1.0]  # two queries flip between two scorings
    cand_values = base_values.copy()
    cand_values[[1, 2]] = 0.0
    res = compare(_report(base_values, "b"), _report(cand_values, "c"), GateOptions(),
                  noise=_report(noise_values, "n"))
    unstable = res.summary()["noise"]["unstable"]["complete_grounding@5"]
    assert unstable == {"count": 2, "share": 2 / 40, "ids": ["q0", "q35"]}
    power = res.summary()["power"]["complete_grounding@5"]
    assert power["spread_from"] == "noise" and power["changed_share"] == 2 / 40
    assert any("2 of 40 queries differ between two scorings" in w for w in res.warnings)


def test_an_incomparable_anchor_is_the_file_named(tmp_path):
    b, c = make_reports(tmp_path, [1] * 20, [1] * 20, cand_chars=101)
    other = tmp_path / "other"
    other.mkdir()
    anchor, _ = make_reports(other, [1] * 21, [1] * 21)  # another eval set
    res = run_cli("compare", "--baseline", b, "--candidate", c, "--anchor", anchor,
                  "--anchor-budget", "5pt", "--allow-budget-change")
    assert res.exit_code == 3
    line = res.stderr.strip()
    assert line.startswith(f"ragspan: error: {anchor}: the anchor") and "eval set" in line, line
