"""``compare``: is the candidate's retrieval worse than the baseline's, beyond noise and budget?

Order of questions (docs/gate.md):

1. Comparability (else InputError, exit 3): both reports valid score reports of the same
   kind, neither with verdict ``error``; same eval-set (or qrels) digest; same corpus digest
   when both recorded one; same query set; same k values, grounding threshold and relevance
   level.
2. Retrieval budget: the candidate's mean ``retrieved_chars@k`` may differ from the
   baseline's by at most ``budget_tolerance`` at every count k, unless
   ``allow_budget_change``. Where it differs and the reports carry character cutoffs
   (score's ``k`` of ``2000c``, its budget grid), the gated metrics at that k are decided at the
   character cutoff nearest the baseline's budget instead (like with like,
   ``equal_budget_plan``); a budget increase that gains nothing there is the retrieval
   budget trap, and fails. Character cutoffs are budget-matched by definition.
3. Per metric: per-query deltas, paired test, bootstrap CI, budget. ``decision.decide`` turns
   the outcomes into the verdict; it is the only place a verdict is made.
"""

from __future__ import annotations

import dataclasses

from ragspan.base.errors import InputError, UsageError
from ragspan.base.voice import setting
from ragspan.gate.alignment import (
    Comparison,
    align,
    check_budget_columns,
    check_comparable,
    check_gated_present,
    cluster_plan,
    report_warnings,
    saturation_warnings,
    steps_warnings,
    version_warnings,
)
from ragspan.gate.budget_match import (
    budget_check,
    budget_trap,
    cheaper_notes,
    default_budgets,
    equal_budget_plan,
)
from ragspan.gate.budgets import budget_for
from ragspan.gate.changes import (
    grounding_changes,
    most_regressed,
    per_query_diff,
    per_query_summary,
    why_line,
)
from ragspan.gate.decision import MetricOutcome, decide
from ragspan.gate.drift import anchor_check, noise_check
from ragspan.gate.evaluate import evaluate, family, slice_groups, slice_outcomes
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.migration import (
    Migration,
    across,
    bound_failure,
    counted_lost,
    left_out_part,
    left_out_warning,
)
from ragspan.gate.options import GateOptions
from ragspan.gate.plan import Origins, answer, derive_plan, restrict
from ragspan.gate.power import power_statement, power_warnings
from ragspan.gate.result import GateResult
from ragspan.gate.run_settings import run_setting_notes
from ragspan.records.compare import Dropped, Interval, Placement
from ragspan.scoring.metrics.registry import (
    is_budget,
    parse_name,
)


def compare(base: ScoreReport, cand: ScoreReport, opts: GateOptions, *,
            no_gate: bool = False,
            allow_identical: bool = False, anchor: ScoreReport | None = None,
            noise: ScoreReport | None = None, migration: Migration | None = None,
            migration_trusted: bool = False, origins: Origins | None = None) -> GateResult:
    """Gate ``cand`` against ``base``: the one sequence from two typed reports to a verdict.

    First the plan (``gate.plan``), from the baseline and the settings alone: the cutoffs,
    the gated metrics and slices, each budget with where it came from (``origins``: each
    given budget key's file path, or None for the caller), and the
    cutoff that decides each count cutoff at equal budget. A budget naming no column is a
    usage error (exit 2) or an input error naming the file (exit 3). The candidate must
    answer every item of the plan (exit 3 naming what it lacks). Refused: identical
    reports (unless ``allow_identical``), incomparable reports, a gated metric in one report
    only, and gating nothing (unless ``no_gate``, which the summary states). ``anchor``: a
    pinned release's report; the candidate must also stay within ``opts.anchor_budget`` of
    it (the drift guard). ``noise``: a second scoring of the baseline; the queries that
    differ are reported unstable and their spread feeds the power statement.
    ``migration``: the baseline was scored on the corpus before an edit and the candidate on
    the edited one with the migrated eval set (``gate.migration``): the questions the edit
    left out are counted as lost by the candidate, or, ``migration_trusted`` (the migrated
    eval set was reviewed), left out of the pairing; past ``opts.max_set_aside`` of them the
    verdict fails, and the summary says how many were left out and how they were counted."""
    opts.validate()
    if base.sha256 == cand.sha256 and not allow_identical:
        raise UsageError("the baseline and candidate reports are identical (same sha256); "
                         f"pass {setting('allow-identical', True)} if that is intended")
    origins = origins or Origins()
    defaults = default_budgets(base.kind)
    if base.kind != cand.kind:
        raise InputError(f"report kinds differ: baseline {base.kind}, candidate {cand.kind}",
                         cand.path)
    gate_plan = derive_plan(base, opts, defaults, origins)
    cand, cut_note = answer(gate_plan, base, cand)
    moved = None
    if migration is not None:  # the reports of the old corpus, as if on the new one
        trusted = migration_trusted
        moved = left_out_part(base, migration, trusted, opts.max_set_aside)
        base = across(base, cand, migration, "baseline", trusted)
        if anchor is not None:
            anchor = across(anchor, cand, migration, "anchor", trusted)
        if noise is not None:
            noise = across(noise, cand, migration, "noise", trusted)
        if not trusted:  # each question the edit left out: lost by the candidate
            cand = counted_lost(base, cand)
    if anchor is not None:
        anchor = restrict(anchor, gate_plan.cutoffs)
    if noise is not None:
        noise = restrict(noise, gate_plan.cutoffs)
    accepted = check_comparable(base, cand, opts.allow_parameter_change)
    if cut_note is not None:
        accepted = [cut_note, *accepted]
    check_budget_columns(base, cand)
    given = gate_plan.budgets
    check_gated_present(base, cand, given, defaults)
    cmp = align(base, cand)
    bcheck = budget_check(cmp, opts)
    plan_ = equal_budget_plan(cmp, bcheck, given, defaults, gate_plan.at_equal_budget)
    given, decided_at, settled = plan_.budgets, plan_.decided, plan_.settled
    _refuse_ungated(plan_.ungated, opts.allow_ungated, cand.path)
    if given is not opts.budgets:
        opts = dataclasses.replace(opts, budgets=given)
    gated = tuple(n for n in cmp.names if budget_for(n, given, defaults).gated)
    if not gated and not no_gate:
        raise UsageError("no metric is gated (every budget is off or names no column of the "
                         f"reports); pass {setting('no-gate', True)} to compare without gating")
    interval = power = None
    warnings: list[str] = []
    level: float | None = None
    plan = cluster_plan(base, cand, opts.cluster_by, opts.level)
    if moved is not None:
        plan = dataclasses.replace(plan, population=f"{plan.population}, {moved.population}")
    clusters = plan.index(cmp.ids)
    groups = slice_groups(cmp, opts)
    if opts.mode == "interval":
        level, size = family(cmp, opts, defaults, groups, clusters)
        interval = Interval(alpha=opts.level, bound_alpha=level, family=size,
                            correction=opts.family_correction,
                            on_inconclusive=opts.on_inconclusive)
    outcomes = evaluate(cmp.base, cmp.cand, cmp.names, opts, defaults, level, clusters)
    noise_cmp, noise_part = noise_check(base, noise, gated) if noise is not None else (None, None)
    if level is not None:
        power = power_statement(cmp, outcomes, level, noise_cmp,
                                None if noise_cmp is not None else clusters)
        warnings += power_warnings(power, outcomes)
    if noise_part is not None:
        warnings += [f"{name}: {u.count} of {len(cmp.ids)} queries differ between two "
                     "scorings of the baseline (unstable)"
                     for name, u in noise_part.unstable.items() if u.count]
    warnings += accepted
    warnings += list(origins.readings)
    said = left_out_warning(moved) if moved is not None else None
    if said is not None:
        warnings.append(said)
    warnings += version_warnings(base, cand)
    decided_ks = list(dict.fromkeys(parse_name(n).k for n in cmp.names
                                    if budget_for(n, given, defaults).gated))
    warnings += report_warnings(base, cand, decided_ks)
    warnings += saturation_warnings(base, cand, decided_ks)
    warnings += steps_warnings(base, cand)
    warnings += run_setting_notes(base.parameters.get("run_config"),
                                  cand.parameters.get("run_config"))
    warnings += list(plan_.notes)
    warnings += [f"{name} is not gated: {why} ({setting('allow-ungated', True)} given)"
                 for name, why in plan_.ungated]
    if bcheck is not None and settled:
        bcheck = dataclasses.replace(bcheck, settled=settled)
        warnings += cheaper_notes(bcheck)
    if bcheck is not None and decided_at:
        bcheck = dataclasses.replace(bcheck, decided_at=decided_at)
        notes, traps = budget_trap(bcheck, outcomes)
        bcheck = dataclasses.replace(bcheck, trap=traps)
        warnings += notes
    slices, slice_failures, slice_uncertain = slice_outcomes(cmp, opts, defaults, level,
                                                             groups, clusters)
    anchor_part = None
    if anchor is not None:
        anchor_part, a_fail, a_uncertain = anchor_check(anchor, cand, opts, gated,
                                                        plan)
        slice_failures += a_fail
        slice_uncertain += a_uncertain
    elif opts.anchor_budget is not None:
        raise UsageError(f"{setting('anchor-budget')} needs {setting('anchor')} (the pinned "
                         "release's report)")
    bound = bound_failure(moved) if moved is not None else None
    decision = decide(outcomes, bcheck, slice_failures, slice_uncertain, opts.on_inconclusive,
                      (bound,) if bound is not None else ())
    primary = opts.primary_metric or _decisive(outcomes) or _default_primary(cmp, decided_at)
    regressed = most_regressed(cmp, primary, opts.top)
    changes, changed = grounding_changes(cmp)
    parsed = parse_name(primary)
    why = why_line(changes, parsed.k if f"complete_grounding@{parsed.k}" in cmp.names
                   else min(cmp.ks))
    return GateResult(decision=decision, outcomes=tuple(outcomes), budget=bcheck,
                      slices=slices, gated=gated, primary=primary,
                      most_regressed=tuple(regressed), queries=len(cmp.ids), ks=tuple(cmp.ks),
                      budgets=dict(sorted({**defaults, **given}.items())), no_gate=no_gate,
                      changes=changes, changed_queries=changed, why=why, interval=interval,
                      power=power, warnings=tuple(warnings), anchor=anchor_part,
                      noise=noise_part, clusters=plan.record(cmp.ids),
                      placement=_placement(base, cand), migration=moved,
                      per_query=per_query_diff(cmp, gated),
                      per_query_counts=per_query_summary(cmp, gated), plan=gate_plan)


def _refuse_ungated(ungated: tuple[tuple[str, str], ...], allowed: bool, path: str) -> None:
    """A metric a budget gates that cannot be decided at equal budget is an InputError
    naming it and why (never a budget turned off without a word), unless the
    ``allow-ungated`` setting accepts reporting it ungated."""
    if ungated and not allowed:
        name, why = ungated[0]
        more = f" (and {len(ungated) - 1} more)" if len(ungated) > 1 else ""
        raise InputError(f"{name}{more} cannot be gated: {why}; pass "
                         f"{setting('allow-ungated', True)} to report it ungated", path)


def _placement(base: ScoreReport, cand: ScoreReport) -> Placement | None:
    """How many results each side kept as off-corpus results because their texts could not
    be placed (None when neither dropped any)."""
    if not base.dropped and not cand.dropped:
        return None
    return Placement(baseline=Dropped(base.dropped or 0), candidate=Dropped(cand.dropped or 0))


def _decisive(outcomes: list[MetricOutcome]) -> str | None:
    """For a FAIL, the failing metric with the largest drop (a 0-1 metric's in points
    before any other's relative drop): the readout explains the cutoff that decided. None
    when no metric failed (a pass, or a fail for another reason)."""
    failed = [o for o in outcomes if o.failed]
    if not failed:
        return None

    def drop(o: MetricOutcome) -> tuple[bool, float, str]:
        spec = parse_name(o.name).spec
        down = -o.delta if spec.higher_is_better else o.delta
        size = down if spec.bounded else down / max(abs(o.baseline), 1e-12)
        return (spec.bounded, size, o.name)

    return max(failed, key=drop).name


def _default_primary(cmp: Comparison, decided_at: dict[str, str]) -> str:
    """The metric the readout leads with (the Why line, the most-regressed queries):
    complete grounding (span reports) or nDCG (doc reports) at the smallest cutoff, or at
    the character cutoff where that cutoff was decided (equal budget)."""
    counts = [k for k in cmp.ks if not is_budget(k)] or list(cmp.ks)
    k_min = str(min(counts))
    at = decided_at.get(k_min, k_min)
    return f"complete_grounding@{at}" if cmp.kind == "score.span" else f"doc_ndcg@{at}"
