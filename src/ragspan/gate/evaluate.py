"""Per metric, the outcome: per-query deltas, the paired test, bootstrap CI and budget
(``evaluate``); the same for each gated slice (``slice_outcomes``); and the size of the family
the interval mode's bounds are adjusted for (``family``)."""

from __future__ import annotations

import numpy as np

from ragspan.base.errors import UsageError
from ragspan.base.voice import setting
from ragspan.gate import clusters as cl
from ragspan.gate import stats
from ragspan.gate.alignment import Comparison
from ragspan.gate.bounds import drop_bounds
from ragspan.gate.budgets import Budget, budget_for
from ragspan.gate.clusters import renumber
from ragspan.gate.decision import (
    MetricOutcome,
    failure_reason,
    interval_decision,
    metric_fails,
    uncertain_reason,
)
from ragspan.gate.options import GateOptions
from ragspan.records.compare_details import SliceOutcome
from ragspan.scoring.metrics.registry import (
    parse_name,
)


def evaluate(base: np.ndarray, cand: np.ndarray, names: list[str], opts: GateOptions,
             defaults: dict[str, Budget], level: float | None = None,
             clusters: np.ndarray | None = None) -> list[MetricOutcome]:
    """Outcomes of every metric on aligned per-query matrices (n queries x m metrics). In
    interval mode each gated metric gets one-sided bounds on its drop at ``level`` (the
    family-adjusted error rate; default ``opts.level``) and its decision. ``clusters`` (a
    cluster number per query, ``ragspan.gate.clusters``): the tests flip, the bootstrap resamples
    and the bounds are computed over whole clusters (the cluster-robust t bounds, for binary
    metrics too)."""
    n, m = base.shape
    deltas = cand - base
    units = deltas if clusters is None else cl.cluster_sums(deltas, clusters)
    if opts.test == "t-test":
        test = stats.paired_t_test(units)
    else:
        test = stats.sign_flip_test(units, opts.permutations, opts.seed)
    ci_low, ci_high, upper_down, upper_up = _delta_bounds(deltas, clusters, opts)
    budgets = [budget_for(name, opts.budgets, defaults) for name in names]
    p_values, binary = _p_values(base, cand, names, test.p_values, clusters is not None)
    gated_idx = [j for j in range(m) if budgets[j].gated and p_values[j] is not None]
    level = opts.level if level is None else level
    gated_cols = [j for j in range(m) if budgets[j].gated]
    bounds = (_drop_bounds(base, cand, names, gated_cols, clusters, opts, level)
              if opts.mode == "interval" and gated_cols else {})
    adjusted: dict[int, float] = {}
    if opts.mode != "interval" and opts.family_correction == "holm" and gated_idx:
        adj = stats.holm(np.array([p_values[j] for j in gated_idx]))
        adjusted = {j: float(a) for j, a in zip(gated_idx, adj)}
    out = []
    for j, name in enumerate(names):
        higher = parse_name(name).spec.higher_is_better
        b_mean = float(base[:, j].mean()) if n else 0.0
        c_mean = float(cand[:, j].mean()) if n else 0.0
        delta = c_mean - b_mean
        drop = -delta if higher else delta
        allowed = budgets[j].allowed_drop(b_mean)
        over = budgets[j].gated and drop > allowed + 1e-12
        p_j = p_values[j]
        p_used = adjusted.get(j, p_j)
        up = float(upper_down[j] if higher else upper_up[j])
        decision = None
        if opts.mode == "interval":
            low, high, method, _ = bounds.get(j, (drop, drop, None, None))
            decision = interval_decision(gated=budgets[j].gated, n=n, drop=drop,
                                         allowed=allowed, low=low, high=high)
            failed, significant = decision == "fail", None
        else:
            failed, significant = metric_fails(
                gated=budgets[j].gated, over_budget=over, n=n, alpha=opts.alpha, p=p_used,
                mode=opts.mode, upper_drop=up, allowed_drop=allowed)
        d = deltas[:, j] if higher else -deltas[:, j]
        fixed_broken = binary[j]
        test_name = ("exact-mcnemar" if fixed_broken is not None and clusters is None
                     else test.method if clusters is None else f"cluster-{test.method}")
        out.append(MetricOutcome(
            name=name, baseline=b_mean, candidate=c_mean, delta=delta,
            ci_low=float(ci_low[j]), ci_high=float(ci_high[j]),
            p_value=p_j, p_adjusted=adjusted.get(j), test=test_name, budget=str(budgets[j]),
            allowed_drop=allowed, gated=budgets[j].gated, over_budget=bool(over),
            significant=significant, upper_drop=up if opts.mode == "non-inferiority" else None,
            failed=failed, worse=int((d < -1e-12).sum()), better=int((d > 1e-12).sum()),
            same=int((np.abs(d) <= 1e-12).sum()),
            fixed=fixed_broken[0] if fixed_broken else None,
            broken=fixed_broken[1] if fixed_broken else None,
            decision=decision,
            drop_low=bounds[j][0] if j in bounds else None,
            drop_high=bounds[j][1] if j in bounds else None,
            bound_alpha=level if j in bounds else None,
            interval=bounds[j][2] if j in bounds else None,
            p_drop=bounds[j][3] if j in bounds else None,
        ))
    return out


def _delta_bounds(deltas: np.ndarray, clusters: np.ndarray | None, opts: GateOptions
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per metric: the bootstrap interval of the mean delta (low, high) and the one-sided
    95% upper bounds of its drop and of its rise, over queries or over whole clusters."""
    n, m = deltas.shape
    ci = stats.bootstrap_ci(deltas, opts.bootstrap, opts.seed, clusters=clusters)
    if not n:
        return ci.low, ci.high, np.zeros(m), np.zeros(m)
    if clusters is None:
        return (ci.low, ci.high, stats.one_sided_upper_drop(deltas),
                stats.one_sided_upper_drop(-deltas))
    return (ci.low, ci.high, cl.t_bounds(-deltas, clusters, 0.05)[1],
            cl.t_bounds(deltas, clusters, 0.05)[1])


def _p_values(base: np.ndarray, cand: np.ndarray, names: list[str], test_p: np.ndarray,
              clustered: bool) -> tuple[list[float | None], list[tuple[int, int] | None]]:
    """Per metric its p-value (None under two queries) and, for a binary metric, its
    (fixed, broken) query counts: a binary metric's p-value is exact McNemar's on the
    discordant pairs, unless the queries are clustered (then the cluster test's, as every
    other metric's)."""
    n = base.shape[0]
    p_values: list[float | None] = []
    binary: list[tuple[int, int] | None] = []
    for j, name in enumerate(names):
        p = float(test_p[j])
        if parse_name(name).spec.binary:
            fixed, broken, exact = stats.discordant_pairs(base[:, j], cand[:, j])
            binary.append((fixed, broken))
            p = p if clustered else exact
        else:
            binary.append(None)
        p_values.append(p if n >= 2 else None)
    return p_values, binary


def _drop_bounds(base: np.ndarray, cand: np.ndarray, names: list[str], gated_cols: list[int],
                 clusters: np.ndarray | None, opts: GateOptions, level: float
                 ) -> dict[int, tuple[float, float, str, float | None]]:
    """Interval mode: per gated metric (by column) two-sided bounds on its drop at
    ``level``, the method that gave them (cluster-robust t over clusters) and that test's
    one-sided p-value of "no drop" (None without bounds)."""
    specs = [parse_name(names[j]).spec for j in gated_cols]
    if clusters is not None:
        signs = np.array([1.0 if sp.higher_is_better else -1.0 for sp in specs])
        drops = (base[:, gated_cols] - cand[:, gated_cols]) * signs
        lo, hi = cl.t_bounds(drops, clusters, level)
        p = cl.t_p_no_drop(drops, clusters)
        return {j: (float(lo[i]), float(hi[i]), "cluster-t", float(p[i]))
                for i, j in enumerate(gated_cols)}
    got = drop_bounds(base[:, gated_cols], cand[:, gated_cols],
                      [sp.binary for sp in specs], [sp.higher_is_better for sp in specs],
                      level, opts.bootstrap, opts.seed)
    return {j: (float(got.low[i]), float(got.high[i]), got.method[i],
                None if np.isnan(got.p_drop[i]) else float(got.p_drop[i]))
            for i, j in enumerate(gated_cols)}


def slice_groups(cmp: Comparison, opts: GateOptions) -> dict[str, dict[str, list[int]]]:
    """Per ``gate_slices`` key, the query rows of each of its values (sorted by value)."""
    out: dict[str, dict[str, list[int]]] = {}
    for key in opts.gate_slices:
        groups: dict[str, list[int]] = {}
        for i, qid in enumerate(cmp.ids):
            value = cmp.rows_base[qid].tags.get(key)
            if value is not None:
                groups.setdefault(value, []).append(i)
        if not groups:
            raise UsageError(f"{setting('gate-slices')} {key!r}: no query carries that tag")
        out[key] = dict(sorted(groups.items()))
    return out


def slice_outcomes(cmp: Comparison, opts: GateOptions, defaults: dict[str, Budget],
                   level: float | None = None,
                   groups: dict[str, dict[str, list[int]]] | None = None,
                   clusters: np.ndarray | None = None
                   ) -> tuple[dict[str, dict[str, SliceOutcome]], list[str], list[str]]:
    """Gated metrics per value of each ``gate_slices`` tag; small slices reported only.
    Returns the report, the failure reasons and the inconclusive reasons."""
    report: dict[str, dict[str, SliceOutcome]] = {}
    failures: list[str] = []
    uncertain: list[str] = []
    gated_cols = [j for j, n in enumerate(cmp.names)
                  if budget_for(n, opts.budgets, defaults).gated]
    names = [cmp.names[j] for j in gated_cols]
    for key, by_value in (slice_groups(cmp, opts) if groups is None else groups).items():
        per_value: dict[str, SliceOutcome] = {}
        for value, idx in by_value.items():
            rows = np.asarray(idx)
            gated = len(idx) >= opts.min_slice_size
            sub = None if clusters is None else renumber(clusters[rows])
            cols = np.asarray(gated_cols, dtype=np.int64)
            outs = evaluate(cmp.base[np.ix_(rows, cols)], cmp.cand[np.ix_(rows, cols)],
                            names, opts, defaults, level, sub)
            if not gated:
                outs = [MetricOutcome(**{**o.__dict__, "gated": False, "failed": False,
                                         "decision": None}) for o in outs]
            per_value[value] = SliceOutcome(count=len(idx), gated=gated,
                                            metrics={o.name: o.record() for o in outs})
            where = f"slice {key}={value} ({len(idx)} queries): "
            failures.extend(failure_reason(o, where) for o in outs if o.failed)
            uncertain.extend(uncertain_reason(o, where) for o in outs
                             if o.decision == "inconclusive")
        report[key] = per_value
    return report, failures, uncertain


def family(cmp: Comparison, opts: GateOptions, defaults: dict[str, Budget],
           groups: dict[str, dict[str, list[int]]] | None = None,
           clusters: np.ndarray | None = None) -> tuple[float, int]:
    """Interval mode: the error rate of each bound, so that the family of every gated
    metric (each k) overall and in every gated slice keeps ``opts.level``
    (``stats.family_alpha``); and the family's size."""
    cols = [j for j, n in enumerate(cmp.names) if budget_for(n, opts.budgets, defaults).gated]
    signs = np.array([1.0 if parse_name(cmp.names[j]).spec.higher_is_better else -1.0
                      for j in cols])
    drops = (cmp.base[:, cols] - cmp.cand[:, cols]) * signs
    everyone = np.arange(len(cmp.ids))
    members: list[tuple[np.ndarray, np.ndarray]] = [(everyone, drops[:, i])
                                                    for i in range(len(cols))]
    for by_value in (slice_groups(cmp, opts) if groups is None else groups).values():
        for idx in by_value.values():
            if len(idx) >= opts.min_slice_size:
                rows = np.asarray(idx)
                members += [(rows, drops[rows, i]) for i in range(len(cols))]
    level = stats.family_alpha([d for _, d in members], [r for r, _ in members],
                               len(cmp.ids), opts.level, opts.family_correction,
                               opts.permutations, opts.seed, clusters)
    return level, len(members)
