"""The retrieval budget: the characters per query each report retrieves at a count k
(``budget_check``), the decision moved to an equal character budget when they differ
(``equal_budget_plan``, like with like), and the budget trap (``budget_trap``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragspan.base.voice import setting
from ragspan.gate.alignment import Comparison
from ragspan.gate.budgets import Budget, budget_for
from ragspan.gate.decision import BudgetCheck, MetricOutcome
from ragspan.gate.options import GateOptions
from ragspan.records.compare import BudgetAt
from ragspan.scoring.metrics.registry import (
    Chars,
    format_name,
    is_budget,
    parse_cutoff,
    parse_name,
)


def default_budgets(kind: str) -> dict[str, Budget]:
    """Only complete grounding is gated by default (2pt); doc reports gate nDCG instead."""
    return {"complete_grounding" if kind == "score.span" else "doc_ndcg": Budget("pt", 2.0)}


def budget_check(cmp: Comparison, opts: GateOptions) -> BudgetCheck | None:
    per_k: dict[str, BudgetAt] = {}
    changed = False
    for k in cmp.ks:
        if is_budget(k):
            continue  # a budget cutoff (characters, tokens) is at equal budget by definition
        name = f"retrieved_chars@{k}"
        if name not in cmp.names:
            return None
        j = cmp.names.index(name)
        b, c = float(cmp.base[:, j].mean()), float(cmp.cand[:, j].mean())
        ratio = c / b if b > 0 else (1.0 if c == 0 else math.inf)
        moved = abs(ratio - 1.0) > opts.budget_tolerance + 1e-12
        changed |= moved
        per_k[str(k)] = BudgetAt(baseline=b, candidate=c,
                                 ratio=ratio if math.isfinite(ratio) else 1e308, changed=moved)
    chars = [k for k in cmp.ks if isinstance(k, Chars)]
    hint = "" if chars else (
        "score both with character cutoffs (score adds them unless "
        + setting("no-budget-grid", True) + ", or "
        + setting("k", [f"{round(v.baseline)}c" for v in per_k.values() if v.changed])
        + ") to decide at equal budget, or " + setting("allow-budget-change", True)
        + " to accept")
    return BudgetCheck(per_k, changed, opts.allow_budget_change, opts.budget_tolerance,
                       hint=hint)


def budgets_at_cutoffs(ks: Sequence[object], names: Sequence[str],
                       given: dict[str, Budget]) -> dict[str, Budget]:
    """A column's budget (``complete_grounding=2pt``, or the default) gates its count cutoffs;
    a budget cutoff (characters or tokens) is gated when named (``complete_grounding@2000c=2pt``), when the
    reports have no count cutoff, or where ``equal_budget_plan`` decides a changed k."""
    if all(is_budget(k) for k in ks):
        return given
    off = {n: Budget("off") for n in names
           if is_budget(parse_name(n).k) and n not in given}
    return {**given, **off} if off else given


def equal_budget_cutoffs(names: Sequence[str], values: np.ndarray, ks: Sequence[object]
                         ) -> dict[str, tuple[float, str]]:
    """Per count cutoff k of the trusted side (the baseline, or the anchor), its median
    ``retrieved_chars@k`` over the questions and the character cutoff nearest it (the
    smaller on a tie): where k is decided should the other side's budget at k differ. Small
    contexts (under the smallest cutoff) are decided at the smallest. Empty without
    character cutoffs."""
    chars = sorted(int(k) for k in ks if isinstance(k, Chars))
    if not chars:
        return {}
    out: dict[str, tuple[float, str]] = {}
    for k in ks:
        if is_budget(k):
            continue
        name = f"retrieved_chars@{k}"
        if name not in names:
            continue
        column = values[:, list(names).index(name)]
        median = float(np.median(column)) if len(column) else 0.0
        at = min(chars, key=lambda c: (abs(c - median), c))
        out[str(k)] = (median, str(Chars(at)))
    return out


@dataclass(frozen=True)
class Plan:
    """Where each changed count k is decided: the budgets to gate with, k -> the character
    cutoff, the ks settled as cheaper, notes (a run that ends before the cutoff), and each
    gated metric that cannot be decided at equal budget with why."""

    budgets: dict[str, Budget]
    decided: dict[str, str] = field(default_factory=dict)
    settled: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    ungated: tuple[tuple[str, str], ...] = ()


def reached(cmp: Comparison) -> dict[str, float]:
    """Per side, the median over its questions of the characters its run retrieved in all
    (the largest of its ``retrieved_chars`` columns: a run that ends before a cutoff has
    fewer characters there than the cutoff)."""
    cols = [j for j, n in enumerate(cmp.names)
            if parse_name(n).base == "retrieved_chars" and not parse_name(n).first_stage]
    if not cols:
        return {"baseline": math.inf, "candidate": math.inf}
    return {role: float(np.median(values[:, cols].max(axis=1))) if len(values) else 0.0
            for role, values in (("baseline", cmp.base), ("candidate", cmp.cand))}


def equal_budget_plan(cmp: Comparison, check: BudgetCheck | None, given: dict[str, Budget],
                      defaults: dict[str, Budget], at_equal: dict[str, str],
                      trusted: str = "baseline") -> Plan:
    """Like with like, for each count k whose budget changed (and no change is allowed):

    - with character cutoffs in the reports, at ``at_equal[k]``: the cutoff nearest the
      trusted side's median ``retrieved_chars@k``, fixed before the candidate was read
      (``equal_budget_cutoffs``), whatever the candidate reached. The candidate is measured
      there with its whole run (a run that ended has nothing more to add), and a note says
      so when its run ends before the cutoff for most questions. The gated metrics at k are
      turned off and the same metrics at that cutoff gated with their budgets, document
      metrics included (a document within the first N characters); a metric the reports
      lack at the cutoff is ``ungated`` with why;
    - without them, a candidate that retrieves fewer characters, whose gated metrics at k
      all grow with results (``MetricSpec.grows``: more characters can only raise them),
      is decided at k as it stands: at the baseline's budget it could only do better."""
    chars = [k for k in cmp.ks if isinstance(k, Chars)]
    if check is None or not check.changed or check.allowed:
        return Plan(given)
    budgets = dict(given)
    decided: dict[str, str] = {}
    settled: list[str] = []
    notes: list[str] = []
    ungated: list[tuple[str, str]] = []
    ends = reached(cmp) if chars else {}
    for k_text, v in check.per_k.items():
        if not v.changed:
            continue
        k = parse_cutoff(k_text)
        at_k = [name for name in cmp.names if parse_name(name).k == k
                and budget_for(name, given, defaults).gated]
        if not chars:
            if v.ratio < 1 and all(parse_name(n).spec.grows for n in at_k):
                settled.append(k_text)
            continue
        at = _decide_at(k_text, at_equal.get(k_text), at_k, cmp.names, given, defaults,
                        budgets, ungated, trusted)
        if at is None:
            continue
        if ends and ends["candidate"] < int(at) - 1e-9:
            notes.append(f"at k = {k_text} the candidate's run ends before {at} for most "
                         f"questions (median {ends['candidate']:,.0f} characters in all): it "
                         f"is measured at {at} with its whole run, which has nothing more to "
                         "add")
        decided[k_text] = str(at)
    return Plan(budgets, decided, tuple(settled), tuple(notes), tuple(ungated))


def _at_count(outcomes: Sequence[MetricOutcome], at_outcomes: Sequence[MetricOutcome],
              k_text: str) -> str:
    """What the candidate's extra characters bought at the count cutoff itself: the gain
    there named (bought with characters, not ranking), or that there was none."""
    bases = {parse_name(o.name).base for o in at_outcomes}
    k = parse_cutoff(k_text)
    there = [o for o in outcomes if parse_name(o.name).k == k
             and parse_name(o.name).base in bases and not parse_name(o.name).first_stage]
    spec = {o.name: parse_name(o.name).spec for o in there}
    gained = [o for o in there if abs(o.delta) > 1e-12
              and (o.delta > 0) == spec[o.name].higher_is_better]
    said = "; ".join(f"{o.name} {_change(o)}" for o in (gained or there))
    if gained:
        return f"its gain at k = {k_text} ({said}) is bought with characters, not ranking"
    return (f"it gains nothing at k = {k_text} either ({said or 'no metric there'}): more "
            "characters for no better retrieval")


def _change(o: MetricOutcome) -> str:
    if parse_name(o.name).spec.bounded:
        return f"{o.delta * 100:+.2f}pt"
    return f"{o.delta:+,.4g}"


def _decide_at(k_text: str, at_text: str | None, at_k: list[str], names: Sequence[str],
               given: dict[str, Budget], defaults: dict[str, Budget],
               budgets: dict[str, Budget], ungated: list[tuple[str, str]],
               trusted: str) -> Chars | None:
    """The gated metrics at count cutoff ``k_text`` (``at_k``) moved to ``at_text``, its
    cutoff of equal budget: each turned off at k and, in ``budgets``, the same metric at the
    cutoff gated with its budget (unless already gated there); a metric the reports lack
    there, or every one when the trusted side gave no cutoff, ``ungated`` with why."""
    if at_text is None:
        for name in at_k:
            budgets[name] = Budget("off")
            ungated.append((name, f"its k = {k_text} retrieves a different budget, and the "
                            f"{trusted} carries no retrieved_chars@{k_text} to find the "
                            "cutoff of equal budget"))
        return None
    at = Chars(int(at_text.removesuffix("c")))
    for name in at_k:
        parsed = parse_name(name)
        budgets[name] = Budget("off")
        target = format_name(parsed.base, at, parsed.first_stage)
        if target not in names:
            ungated.append((name, f"its k = {k_text} retrieves a different budget, and the "
                            f"reports carry no {target} to decide it at equal budget (scored "
                            "before document metrics had character cutoffs? score both "
                            "again)"))
        elif not budget_for(target, given, defaults).gated:
            budgets[target] = budget_for(name, given, defaults)
    return at


def cheaper_notes(check: BudgetCheck) -> list[str]:
    """One line per k settled as cheaper (``equal_budget_plan``)."""
    return [f"at k = {k} the candidate retrieves x{check.per_k[k].ratio:.2f} the characters "
            f"({check.per_k[k].baseline:,.0f} -> {check.per_k[k].candidate:,.0f} per "
            f"query); its gated metrics at k = {k} grow with results, so at the baseline's "
            "budget it could only do better: they are decided at k as they stand"
            for k in check.settled]


def budget_trap(check: BudgetCheck, outcomes: Sequence[MetricOutcome]
                ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Over the ks decided at a character cutoff: one note saying both (the budget ratio at
    each k and the gated metrics at its cutoff) and, where the candidate retrieves more
    characters at k but none of those metrics is better at the cutoff, the retrieval budget
    trap (a failure)."""
    said: list[str] = []
    traps: list[str] = []
    for k_text, at in check.decided_at.items():
        v = check.per_k[k_text]
        at_outcomes = [o for o in outcomes if o.gated and parse_name(o.name).k == parse_cutoff(at)]
        shown = "; ".join(f"{o.name} {o.baseline:.4f} -> {o.candidate:.4f}" for o in at_outcomes)
        said.append(f"at k = {k_text} x{v.ratio:.2f} ({v.baseline:,.0f} -> "
                    f"{v.candidate:,.0f} per query), decided at "
                    f"{int(parse_cutoff(at)):,} characters: {shown or 'none gated'}")
        better = [o for o in at_outcomes
                  if (o.delta > 1e-12) == parse_name(o.name).spec.higher_is_better
                  and abs(o.delta) > 1e-12]
        if v.ratio > 1 + check.tolerance + 1e-12 and at_outcomes and not better:
            traps.append(f"retrieval budget trap: at k = {k_text} the candidate retrieves "
                         f"x{v.ratio:.2f} the characters, and at {int(parse_cutoff(at)):,} "
                         f"characters per query it is no better ({shown}): "
                         f"{_at_count(outcomes, at_outcomes, k_text)} "
                         f"({setting('allow-budget-change', True)} to accept)")
    notes = (f"the candidate's retrieval budget changed, so its gated metrics are decided at "
             f"the character cutoff nearest the baseline's median budget: "
             f"{'; '.join(said)}",) if said else ()
    return notes, tuple(traps)
