"""Against other reports than the baseline: a second scoring of the baseline (``noise_check``:
the queries that differ are unstable) and a pinned release (``anchor_check``, the drift
guard)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError
from ragspan.base.voice import setting
from ragspan.gate.alignment import ClusterPlan, Comparison, align, check_comparable
from ragspan.gate.budget_match import (
    budget_check,
    budget_trap,
    equal_budget_cutoffs,
    equal_budget_plan,
)
from ragspan.gate.budgets import Budget, parse_budget_value
from ragspan.gate.decision import BudgetCheck, MetricOutcome, decide
from ragspan.gate.evaluate import evaluate, family
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.options import GateOptions
from ragspan.records.compare import Anchor, AnchorBudget, Noise, Unstable
from ragspan.scoring.metrics.registry import (
    parse_name,
)


def noise_check(base: ScoreReport, noise: ScoreReport, gated: Sequence[str]
                ) -> tuple[Comparison, Noise]:
    """The noise floor: ``noise`` is a second scoring of the baseline's configuration (a
    re-run, a re-index with another seed). Per gated metric, the queries whose value differs
    between the two are unstable; their share feeds the power statement."""
    check_comparable(base, noise)  # a second scoring: every parameter the same
    cmp = align(base, noise)
    unstable: dict[str, Unstable] = {}
    for name in gated:
        if name not in cmp.names:
            continue
        j = cmp.names.index(name)
        moved = np.flatnonzero(np.abs(cmp.cand[:, j] - cmp.base[:, j]) > 1e-12)
        unstable[name] = Unstable(count=int(moved.size),
                                  share=float(moved.size / max(len(cmp.ids), 1)),
                                  ids=[cmp.ids[i] for i in moved[:MAX_UNSTABLE_LISTED]])
    return cmp, Noise(report=noise.path, unstable=unstable)


MAX_UNSTABLE_LISTED = 100


def anchor_check(anchor: ScoreReport, cand: ScoreReport, opts: GateOptions,
                 gated: Sequence[str], plan: ClusterPlan | None = None
                 ) -> tuple[Anchor, list[str], list[str]]:
    """The drift guard: every metric gated against the baseline, gated against the pinned
    ``anchor`` with the cumulative ``opts.anchor_budget`` by the same interval rule (overall
    only, its own family), and the same retrieval budget check: a candidate that reached
    more characters than the anchor's in steps each within the tolerance is decided at
    equal budget against the anchor too (or fails, without character cutoffs). Returns the
    report part, failure and inconclusive reasons."""
    if opts.anchor_budget is None:
        raise UsageError(f"{setting('anchor')} needs {setting('anchor-budget')} (the cumulative "
                         "budget, e.g. 5pt)")
    try:
        budget = parse_budget_value(opts.anchor_budget)
    except UsageError as exc:
        raise UsageError(f"{setting('anchor-budget')}: {exc}") from None
    if not budget.gated:
        raise UsageError(f"{setting('anchor-budget', 'off')} gates nothing; drop "
                         f"{setting('anchor')} instead")
    try:
        check_comparable(anchor, cand, opts.allow_parameter_change)
    except InputError as exc:  # the pinned report is the odd one out: name it
        raise InputError(f"the anchor cannot be compared with the candidate: {exc.reason}",
                         anchor.path) from None
    cmp = align(anchor, cand)
    names = [n for n in gated if n in cmp.names]
    if budget.unit == "pt":
        for n in names:
            if not parse_name(n).spec.bounded:
                raise UsageError(f"{setting('anchor-budget', str(budget))}: '{n}' is not a 0-1 "
                                 "metric; give "
                                 "the cumulative budget in %")
    outs, bcheck, level, size, decided_at = _against_anchor(cmp, names, budget, opts, plan)
    decision = decide(outs, bcheck)
    where = "against the anchor: "
    failures = [where + r for r in decision.reasons]
    uncertain = [where + r for r in decision.uncertain]
    part = Anchor(report=anchor.path, budget=str(budget), verdict=decision.verdict,
                  bound_alpha=level, family=size,
                  metrics={o.name: o.record() for o in outs},
                  retrieval_budget=UNSET if bcheck is None else AnchorBudget(
                      changed=bcheck.changed,
                      per_k=dict(bcheck.per_k),
                      decided_at=decided_at or UNSET))
    return part, failures, uncertain


def _against_anchor(cmp: Comparison, names: list[str], budget: Budget, opts: GateOptions,
                    plan: ClusterPlan | None
                    ) -> tuple[list[MetricOutcome], BudgetCheck | None, float, int,
                               dict[str, str]]:
    """The candidate against the anchor: the retrieval budget checked as against the
    baseline (equal budget, a cheaper candidate, the trap), then every gated metric by the
    interval rule in its own family. Returns the outcomes, the budget check, the family's
    error rate and size, and k -> the cutoff a changed k was decided at."""
    off = Budget("off")
    budgets = {n: budget if n in names else off for n in cmp.names}
    a_opts = GateOptions(**{**opts.__dict__, "budgets": budgets, "gate_slices": ()})
    bcheck = budget_check(cmp, a_opts)
    at_equal = {k: at for k, (_, at) in equal_budget_cutoffs(cmp.names, cmp.base,
                                                             cmp.ks).items()}
    plan_ = equal_budget_plan(cmp, bcheck, budgets, {}, at_equal, "anchor")
    budgets, decided_at, settled = plan_.budgets, plan_.decided, plan_.settled
    if plan_.ungated and not opts.allow_ungated:
        name, why = plan_.ungated[0]
        raise InputError(f"against the anchor, {name} cannot be gated: {why}; pass "
                         f"{setting('allow-ungated', True)} to report it ungated")
    a_opts = dataclasses.replace(a_opts, budgets=budgets)
    gated = [n for n in cmp.names if budgets[n].gated]
    cols = [cmp.names.index(n) for n in gated]
    sub = Comparison(cmp.ids, gated, cmp.base[:, cols], cmp.cand[:, cols], cmp.rows_base,
                     cmp.rows_cand, cmp.kind, cmp.ks)
    index = None if plan is None else plan.index(sub.ids)
    level, size = family(sub, a_opts, {}, None, index) if opts.mode == "interval" \
        else (opts.level, 0)
    outs = evaluate(sub.base, sub.cand, gated, a_opts, {}, level, index)
    if bcheck is not None and settled:
        bcheck = dataclasses.replace(bcheck, settled=settled)
    if bcheck is not None and decided_at:
        bcheck = dataclasses.replace(bcheck, decided_at=decided_at)
        _, traps = budget_trap(bcheck, outs)
        bcheck = dataclasses.replace(bcheck, trap=traps)
    return outs, bcheck, level, size, decided_at
