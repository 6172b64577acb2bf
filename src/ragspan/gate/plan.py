"""The gate's plan: what decides a comparison, fixed from the trusted side before the
candidate is read (docs/gate.md, "The plan").

``derive_plan`` reads only the baseline report and the settings: the cutoffs are the
baseline's; the gated metrics are the baseline's columns that a budget gates, each with the
budget and where it came from (the settings file, the command line or the Action's inputs,
or the default); the gated slices, likewise; and for each count cutoff the character cutoff
that decides it should the candidate's retrieval budget there differ from the baseline's (the
grid cutoff nearest the baseline's median ``retrieved_chars@k``, the smaller on a tie),
whatever the candidate reached.

``answer`` then holds the candidate to the plan: a cutoff, a gated metric (at the count
cutoff or at its equal-budget cutoff) or a gated slice the candidate lacks is an InputError
naming it and the candidate's file (exit 3). Only the other direction is tolerated: cutoffs
the candidate carries and the baseline does not (a baseline scored before they existed) are
left out of the comparison, with a note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError
from ragspan.base.voice import setting
from ragspan.gate.budget_match import budgets_at_cutoffs, equal_budget_cutoffs
from ragspan.gate.budgets import Budget, budget_for
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.options import GateOptions
from ragspan.gate.percent_budgets import onto_doc_columns
from ragspan.records.compare import EqualBudgetCutoff, GatedMetric, GatedSlice, Plan
from ragspan.scoring.metrics.registry import format_name, is_budget, parse_cutoff, parse_name

DEFAULT = "default"


@dataclass(frozen=True)
class Origins:
    """Where each setting the plan names came from: ``flags`` names the caller's own
    settings (``command line``, ``action input`` or ``argument``), ``config`` the settings
    file (its path and, when given, where it came from); ``budgets`` maps each given budget
    key to None (the caller's) or the file's path; ``settings`` maps a setting key
    (``gate_slices``) to ``flags``, ``config`` or ``default``."""

    flags: str = "command line"
    config: str | None = None
    config_origin: str | None = None
    budgets: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    settings: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # how a budget typed as a bare number was read (``percent_budgets.reading``)
    readings: tuple[str, ...] = ()

    def _file(self) -> str:
        where = f"settings file {self.config}" if self.config else "settings file"
        return f"{where} ({self.config_origin})" if self.config_origin else where

    def of_budget(self, key: str | None) -> str:
        """The origin of the given budget ``key`` (None: a default budget)."""
        if key is None:
            return DEFAULT
        return self.flags if self.budgets.get(key) is None else self._file()

    def of_setting(self, key: str) -> str:
        where = self.settings.get(key, "default")
        return {"flags": self.flags, "config": self._file()}.get(where, DEFAULT)


@dataclass(frozen=True)
class PlannedMetric:
    """A gated column, its budget, where the budget came from, and for a count cutoff the
    character cutoff that decides it should the retrieval budget there change (None: no
    character cutoff in the baseline, or a budget cutoff itself)."""

    name: str
    budget: Budget
    origin: str
    equal_budget_at: str | None = None

    def record(self) -> GatedMetric:
        return GatedMetric(metric=self.name, budget=str(self.budget), from_=self.origin,
                           at_equal_budget=UNSET if self.equal_budget_at is None
                           else self.equal_budget_at)


@dataclass(frozen=True)
class EqualBudget:
    """Count cutoff ``k``: the baseline's median characters per question there and the
    grid cutoff nearest it (``at``)."""

    k: str
    chars: float
    at: str


@dataclass(frozen=True)
class GatePlan:
    """What decides: the baseline's ``cutoffs``, the gated ``metrics``, the gated
    ``slices`` (tag key, origin), the equal-budget cutoff of each count cutoff, and the
    ``budgets`` in force (given budgets on the baseline's columns, budget cutoffs not named
    turned off), each from the trusted side."""

    kind: str
    cutoffs: tuple[str, ...]
    metrics: tuple[PlannedMetric, ...]
    slices: tuple[tuple[str, str], ...]
    equal_budget: tuple[EqualBudget, ...]
    budgets: dict[str, Budget]

    @property
    def at_equal_budget(self) -> dict[str, str]:
        """Count cutoff -> the character cutoff that decides it at equal budget."""
        return {e.k: e.at for e in self.equal_budget}

    def record(self) -> Plan:
        """``summary.plan``."""
        return Plan(
            from_="the baseline report and the settings (never the candidate's report)",
            cutoffs=list(self.cutoffs), gated=[m.record() for m in self.metrics],
            slices=[GatedSlice(tag, origin) for tag, origin in self.slices],
            equal_budget={e.k: EqualBudgetCutoff(round(e.chars, 1), e.at)
                          for e in self.equal_budget})


def derive_plan(base: ScoreReport, opts: GateOptions, defaults: dict[str, Budget],
                origins: Origins | None = None) -> GatePlan:
    """The plan from the baseline and the settings alone. A budget naming no column of the
    baseline is a usage error (the caller's) or an InputError naming the settings file."""
    origins = origins or Origins()
    names = list(base.names)
    given = onto_doc_columns(opts.budgets, names)
    key_of = dict(zip(given, opts.budgets)) if len(given) == len(opts.budgets) else {}
    _refuse_unmatched(given, names, {k: origins.budgets.get(key_of.get(k, k)) for k in given})
    given = budgets_at_cutoffs(base.ks, names, given)
    ks = [str(k) for k in base.ks]
    at_equal = equal_budget_cutoffs(names, base.values, base.ks)
    equal = tuple(EqualBudget(k, chars, at) for k, (chars, at) in at_equal.items())
    metrics = []
    for name in names:
        budget = budget_for(name, given, defaults)
        if not budget.gated:
            continue
        parsed = parse_name(name)
        key = name if name in given else parsed.column if parsed.column in given else None
        origin = origins.of_budget(key_of.get(key, key) if key is not None else None)
        k = str(parsed.k)
        metrics.append(PlannedMetric(name, budget, origin,
                                     None if is_budget(parsed.k) else
                                     at_equal.get(k, (0.0, None))[1]))
    slices = tuple((tag, origins.of_setting("gate_slices")) for tag in opts.gate_slices)
    return GatePlan(base.kind, tuple(ks), tuple(metrics), slices, equal, given)


def _refuse_unmatched(budgets: Mapping[str, Budget], names: Sequence[str],
                      origin: Mapping[str, str | None]) -> None:
    """A budget naming no column of the baseline: a usage error when it came from the
    caller (``origin`` None), else an InputError naming its settings file."""
    bases = {parse_name(n).column for n in names}
    unmatched = [key for key in budgets if key not in names and key not in bases]
    for key in unmatched:
        if origin.get(key) is None:
            raise UsageError(f"{setting('budget')} names '{key}', which the reports do not carry")
    for key in unmatched:
        raise InputError(f"[tool.ragspan.budgets] {key}: the reports carry no such metric",
                         origin[key])


def answer(plan: GatePlan, base: ScoreReport, cand: ScoreReport
           ) -> tuple[ScoreReport, str | None]:
    """The candidate held to the plan: every cutoff of the plan, every gated metric (and,
    for a gated count cutoff, the same metric at its equal-budget cutoff, where the baseline
    carries it) and every gated slice (each question's tag value the baseline's) must be in
    it, else an InputError naming what it lacks. Returns the candidate restricted to the
    plan's cutoffs and a note naming any it carried beyond them (None when none)."""
    c_ks = [str(k) for k in cand.ks]
    missing = [k for k in plan.cutoffs if k not in c_ks]
    if missing:
        raise InputError(
            f"the candidate report lacks the cutoff{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} that the gate's plan decides at (the baseline's cutoffs: "
            f"{', '.join(plan.cutoffs)}); score the candidate at them", cand.path)
    need = [m.name for m in plan.metrics]
    need += [format_name(parse_name(m.name).base, parse_cutoff(m.equal_budget_at),
                         parse_name(m.name).first_stage)
             for m in plan.metrics if m.equal_budget_at is not None]
    lacking = [n for n in dict.fromkeys(need) if n in base.names and n not in cand.names]
    if lacking:
        raise InputError(f"the candidate report lacks the gated metric '{lacking[0]}'"
                         + (f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else "")
                         + " that the gate's plan decides with", cand.path)
    tags = {q: r.tags for q, r in zip(cand.ids, cand.rows)}
    for tag, _ in plan.slices:
        for qid, row in zip(base.ids, base.rows):
            theirs = tags.get(qid)
            if theirs is not None and theirs.get(tag) != row.tags.get(tag):
                raise InputError(f"the candidate report's query '{qid}' does not carry the "
                                 f"gated slice {tag}={row.tags.get(tag)!r} of the baseline "
                                 f"(it has {theirs.get(tag)!r})", cand.path)
    extra = [k for k in c_ks if k not in plan.cutoffs]
    if not extra:
        return cand, None
    keep = set(plan.cutoffs)
    cols = [j for j, n in enumerate(cand.names) if str(parse_name(n).k) in keep]
    restricted = dataclasses.replace(
        cand, names=tuple(cand.names[j] for j in cols),
        values=cand.values[:, cols] if cols else np.zeros((len(cand.ids), 0)),
        parameters={**cand.parameters, "k": list(base.parameters["k"])})
    shown = ", ".join(extra[:8]) + (" ..." if len(extra) > 8 else "")
    note = (f"the candidate carries {len(extra)} cutoff{'s' if len(extra) > 1 else ''} the "
            f"baseline lacks ({shown}): left out, the baseline's cutoffs decide")
    return restricted, note


def _as_written(k: str) -> int | str:
    """A cutoff as ``parameters.k`` writes it: a count as a number, a budget as text."""
    return int(k) if k.isdigit() else k


def restrict(report: ScoreReport, cutoffs: Sequence[str]) -> ScoreReport:
    """``report`` (a trusted one: an anchor, a noise report) with only the columns at the
    ``cutoffs`` it carries."""
    have = [k for k in cutoffs if k in {str(x) for x in report.ks}]
    if len(have) == len(report.ks):
        return report
    keep = set(have)
    cols = [j for j, n in enumerate(report.names) if str(parse_name(n).k) in keep]
    return dataclasses.replace(report, names=tuple(report.names[j] for j in cols),
                               values=report.values[:, cols],
                               parameters={**report.parameters,
                                           "k": [_as_written(k) for k in have]})
