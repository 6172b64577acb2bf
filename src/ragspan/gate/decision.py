"""From outcomes to a verdict: one metric's decision (``metric_fails``, ``interval_decision``,
the truth table docs/gate.md shows) and the verdict of them all (``decide``, the only place a
verdict is made), with the sentences that say why."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import ExitCode
from ragspan.base.voice import setting
from ragspan.records.compare import BudgetAt
from ragspan.records.compare_details import Outcome
from ragspan.records.envelope import given
from ragspan.scoring.metrics.registry import (
    parse_name,
)


@dataclass(frozen=True)
class MetricOutcome:
    """Everything needed to audit one metric's gate decision."""

    name: str
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float | None
    p_adjusted: float | None
    test: str
    budget: str
    allowed_drop: float
    gated: bool
    over_budget: bool
    significant: bool | None
    upper_drop: float | None
    failed: bool
    worse: int
    better: int
    same: int
    fixed: int | None = None
    broken: int | None = None
    decision: str | None = None  # interval mode, gated: pass | fail | inconclusive
    drop_low: float | None = None  # interval mode: one-sided bounds on the drop
    drop_high: float | None = None
    bound_alpha: float | None = None  # the error rate of each bound (family-adjusted)
    interval: str | None = None  # mid-p-mcnemar | bootstrap-t | cluster-t
    # interval mode, gated: the one-sided p-value of "no drop" from the bounds' own test
    # (the lower bound is above 0 exactly when it is below ``bound_alpha``)
    p_drop: float | None = None

    def record(self) -> Outcome:
        """The outcome as a report writes it (``records.compare_details.Outcome``): the
        interval as ``ci95``, the bounds on the drop as ``drop_bounds``, an unbounded
        allowed drop and every other None left out (the p-value stays: None says no test
        ran)."""
        return Outcome(
            name=self.name, baseline=self.baseline, candidate=self.candidate,
            delta=self.delta, ci95=[self.ci_low, self.ci_high], p_value=self.p_value,
            test=self.test, budget=self.budget, gated=self.gated,
            over_budget=self.over_budget, failed=self.failed, worse=self.worse,
            better=self.better, same=self.same, p_adjusted=given(self.p_adjusted),
            allowed_drop=UNSET if math.isinf(self.allowed_drop) else self.allowed_drop,
            significant=given(self.significant), upper_drop=given(self.upper_drop),
            fixed=given(self.fixed), broken=given(self.broken),
            decision=given(self.decision),
            drop_bounds=UNSET if self.drop_low is None or self.drop_high is None
            else [self.drop_low, self.drop_high],
            bound_alpha=given(self.bound_alpha), interval=given(self.interval),
            p_drop=given(self.p_drop))



@dataclass(frozen=True)
class BudgetCheck:
    per_k: dict[str, BudgetAt]
    changed: bool
    allowed: bool
    tolerance: float
    # count k -> the character cutoff its gated metrics were decided at instead
    decided_at: dict[str, str] = field(default_factory=dict)
    trap: tuple[str, ...] = ()  # the retrieval budget trap, one reason per k
    hint: str = ""  # how to decide at equal budget, when the reports cannot
    # count ks at which the candidate is cheaper and every gated metric grows with results:
    # decided at k as they stand (more characters could only help the candidate)
    settled: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateDecision:
    verdict: str  # pass | fail | inconclusive
    exit_code: ExitCode
    reasons: tuple[str, ...]
    uncertain: tuple[str, ...] = ()  # why it is inconclusive


def metric_fails(*, gated: bool, over_budget: bool, n: int, alpha: float | None,
                 p: float | None, mode: str, upper_drop: float | None,
                 allowed_drop: float) -> tuple[bool, bool | None]:
    """Truth table of one metric: returns (failed, significant).

    * not gated -> never fails;
    * mode non-inferiority -> fails unless the one-sided 95% upper bound of the drop is
      within the budget (a noisy small set cannot pass a real regression); with fewer than
      2 queries there is no bound, and it fails;
    * threshold mode, alpha unset -> fails when the drop is over budget;
    * threshold mode, alpha set -> fails when over budget and p < alpha; with fewer than 2
      queries there is no p-value and an over-budget drop fails.
    """
    significant = None if p is None or alpha is None else p < alpha
    if not gated:
        return False, significant
    if mode == "non-inferiority":
        if n < 2 or upper_drop is None:
            return True, significant
        return upper_drop > allowed_drop + 1e-12, significant
    if not over_budget:
        return False, significant
    if alpha is None or n < 2 or p is None:
        return True, significant
    return bool(significant), significant


def interval_decision(*, gated: bool, n: int, drop: float, allowed: float, low: float,
                      high: float) -> str | None:
    """Interval mode, one metric (docs/gate.md): ``fail`` when the observed drop is over
    the budget and the lower bound of the drop is above 0 (the drop is real); ``pass`` when
    the upper bound is within the budget (any drop is small enough); otherwise
    ``inconclusive``. With fewer than 2 queries there are no bounds: over budget fails,
    anything else is inconclusive. None when the metric is not gated."""
    if not gated:
        return None
    eps = 1e-12
    if n < 2:
        return "fail" if drop > allowed + eps else "inconclusive"
    if drop > allowed + eps and low > eps:
        return "fail"
    if high <= allowed + eps:
        return "pass"
    return "inconclusive"


# The decision of one gated metric, as docs/gate.md shows it (``truth_table_markdown``); each
# row carries an example that ``interval_decision`` or ``metric_fails`` must decide as the
# row says (tests/test_gate_interval.py).
_I = {"gated": True, "n": 50, "allowed": 0.02}


_T = {"gated": True, "n": 50, "mode": "threshold", "upper_drop": None, "allowed_drop": 0.02}


_N = {"gated": True, "n": 50, "mode": "non-inferiority", "alpha": None, "p": None,
      "allowed_drop": 0.02, "over_budget": False}


TRUTH_TABLE: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    ("interval", "any", "drop over budget, and its lower bound above 0", "**fail**",
     {**_I, "drop": 0.06, "low": 0.01, "high": 0.11}),
    ("interval", "any", "upper bound of the drop within budget", "pass",
     {**_I, "drop": 0.0, "low": -0.015, "high": 0.015}),
    ("interval", "any", "drop over budget, lower bound at or below 0", "inconclusive",
     {**_I, "drop": 0.04, "low": -0.01, "high": 0.09}),
    ("interval", "any", "drop within budget, upper bound over it", "inconclusive",
     {**_I, "drop": 0.0, "low": -0.05, "high": 0.05}),
    ("interval", "any", "fewer than 2 queries, drop over budget", "**fail**",
     {**_I, "n": 1, "drop": 1.0, "low": 1.0, "high": 1.0}),
    ("interval", "any", "fewer than 2 queries, drop within budget", "inconclusive",
     {**_I, "n": 1, "drop": 0.0, "low": 0.0, "high": 0.0}),
    ("threshold", "unset", "drop within budget", "pass",
     {**_T, "over_budget": False, "alpha": None, "p": None}),
    ("threshold", "unset", "drop over budget", "**fail**",
     {**_T, "over_budget": True, "alpha": None, "p": None}),
    ("threshold", "set", "drop over budget, p >= alpha", "pass (noise)",
     {**_T, "over_budget": True, "alpha": 0.05, "p": 0.2}),
    ("threshold", "set", "drop over budget, p < alpha", "**fail**",
     {**_T, "over_budget": True, "alpha": 0.05, "p": 0.01}),
    ("threshold", "set", "drop over budget, fewer than 2 queries (no p)", "**fail**",
     {**_T, "n": 1, "over_budget": True, "alpha": 0.05, "p": None}),
    ("non-inferiority", "(refused)", "one-sided 95% upper bound within budget", "pass",
     {**_N, "upper_drop": 0.01}),
    ("non-inferiority", "(refused)", "one-sided 95% upper bound over budget", "**fail**",
     {**_N, "upper_drop": 0.05}),
    ("non-inferiority", "(refused)", "fewer than 2 queries (no bound)", "**fail**",
     {**_N, "n": 1, "upper_drop": None}),
)


def truth_table_markdown() -> str:
    """docs/gate.md's truth table, from ``TRUTH_TABLE``."""
    rows = ["| mode | alpha | the gated metric's | result |", "| --- | --- | --- | --- |",
            "| any | any | metric not gated (`off`) | never fails |"]
    rows += [f"| {mode} | {alpha} | {cond} | {result} |"
             for mode, alpha, cond, result, _ in TRUTH_TABLE]
    return "\n".join(rows) + "\n"


def decide(outcomes: Sequence[MetricOutcome], budget: BudgetCheck | None,
           slice_failures: Sequence[str] = (), slice_uncertain: Sequence[str] = (),
           on_inconclusive: str = "pass", bound_failures: Sequence[str] = ()) -> GateDecision:
    """The verdict: fail when a bound on what the comparison rests on is passed
    (``bound_failures``: a corpus edit that left out too many questions), the budget
    changed (not allowed) or any gated metric failed, overall or in a gated slice; else
    inconclusive when any gated metric (or slice) is inconclusive, exiting 0 or 4 as
    ``on_inconclusive`` says; else pass."""
    reasons: list[str] = list(bound_failures)
    if budget is not None and budget.changed and not budget.allowed:
        detail = ", ".join(f"@{k}: {v.baseline:.0f} -> {v.candidate:.0f} chars "
                           f"(x{v.ratio:.2f})" for k, v in budget.per_k.items()
                           if v.changed and k not in budget.decided_at
                           and k not in budget.settled)
        if detail:
            reasons.append(f"retrieval budget changed ({detail}); a recall change bought "
                           f"with more or fewer characters is not a ranking change "
                           f"({budget.hint or setting('allow-budget-change', True) + ' to accept'})")
        reasons.extend(budget.trap)
    reasons.extend(failure_reason(o) for o in outcomes if o.failed)
    reasons.extend(slice_failures)
    uncertain = [uncertain_reason(o) for o in outcomes if o.decision == "inconclusive"]
    uncertain.extend(slice_uncertain)
    if reasons:
        return GateDecision("fail", ExitCode.GATE_FAILED, tuple(reasons), tuple(uncertain))
    if uncertain:
        code = ExitCode.GATE_FAILED if on_inconclusive == "fail" else ExitCode.OK
        return GateDecision("inconclusive", code, (), tuple(uncertain))
    return GateDecision("pass", ExitCode.OK, ())


def _level(o: MetricOutcome) -> str:
    return f"{100 * (1 - (o.bound_alpha or 0)):.3g}%"


def change_bounds(o: MetricOutcome) -> str:
    """The bounds the decision used, as the change candidate - baseline (the sign the
    table's interval column and the delta use), ``[-7.96pt, +13.71pt]``."""
    if o.drop_low is None or o.drop_high is None:
        return "none"
    higher = parse_name(o.name).spec.higher_is_better
    low, high = (-o.drop_high, -o.drop_low) if higher else (o.drop_low, o.drop_high)
    return f"[{_signed(o, low)}, {_signed(o, high)}]"


def _signed(o: MetricOutcome, x: float) -> str:
    if abs(x) >= UNBOUNDED_AT:
        return "-unbounded" if x < 0 else "+unbounded"
    return f"{x * 100:+.2f}pt" if _bounded(o.name) else f"{x:+.4g}"


def _moved(o: MetricOutcome) -> str:
    return "did not change" if abs(o.delta) < 1e-12 else "rose" if o.delta > 0 else "dropped"


def uncertain_reason(o: MetricOutcome, where: str = "") -> str:
    """Why an interval-mode metric is inconclusive: the bounds of its change, its budget."""
    moved = _moved(o)
    if o.drop_low is None or o.drop_high is None or o.drop_low == o.drop_high:
        return f"{where}{o.name} {moved} {_pts(o)}: fewer than 2 queries give no bounds"
    return (f"{where}{o.name} {moved} {_pts(o)}: the one-sided {_level(o)} bounds of its "
            f"change, {change_bounds(o)}, neither show a real drop nor stay within the "
            f"budget {o.budget}")


def failure_reason(o: MetricOutcome, where: str = "") -> str:
    """One reason line: what moved, by how much, and the rule that failed it."""
    moved = _moved(o)
    if o.decision is not None:  # interval mode: the bounds decide
        if o.drop_low is None or o.drop_low == o.drop_high:
            rule = f"over the budget {o.budget}, and fewer than 2 queries give no bounds"
        else:
            p_said = "" if o.p_drop is None else f", p={o.p_drop:.3g}"
            rule = (f"over the budget {o.budget}, and the one-sided {_level(o)} bounds of its "
                    f"change, {change_bounds(o)}, show the drop is real "
                    f"({o.interval}{p_said})")
        return f"{where}{o.name} {moved} {_pts(o)}: {rule}"
    if o.upper_drop is not None:  # non-inferiority: the bound decides
        if o.p_value is None:
            rule = "fewer than 2 queries give no upper bound of the drop"
        else:
            rule = (f"the one-sided 95% upper bound of the drop, {drop_amount(o, o.upper_drop)}, "
                    f"exceeds the budget {o.budget}")
        return f"{where}{o.name} {moved} {_pts(o)}: {rule}"
    p = o.p_adjusted if o.p_adjusted is not None else o.p_value
    test = f", p={p:.3g} ({o.test})" if p is not None else ""
    return f"{where}{o.name} {moved} {_pts(o)} (budget {o.budget}{test})"


def _bounded(name: str) -> bool:
    return parse_name(name).spec.bounded


UNBOUNDED_AT = 1e299  # a bound this far out is no bound (``clusters.UNBOUNDED``, t* clipped)


def drop_amount(o: MetricOutcome, drop: float) -> str:
    if abs(drop) >= UNBOUNDED_AT:
        return "unbounded"
    return f"{drop * 100:.2f}pt" if _bounded(o.name) else f"{drop:.4g}"


def _pts(o: MetricOutcome) -> str:
    if abs(o.delta) < 1e-12:
        return f"({o.baseline:.4f} -> {o.candidate:.4f})" if _bounded(o.name) \
            else f"({o.baseline:.4g} -> {o.candidate:.4g})"
    relative = ""
    if o.budget.endswith("%") and o.baseline != 0:  # a percent budget: the drop as it reads it
        relative = f"; {abs(o.delta) / abs(o.baseline) * 100:.2f}% of the baseline's mean"
    if _bounded(o.name):
        return f"{abs(o.delta) * 100:.2f}pt ({o.baseline:.4f} -> {o.candidate:.4f}{relative})"
    return f"{o.baseline:.4g} -> {o.candidate:.4g}{relative}"
