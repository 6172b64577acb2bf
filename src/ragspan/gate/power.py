"""What the comparison could have detected: the smallest drop each gated metric's test finds
with 80% power (``power_statement``) and the warnings when that exceeds its budget."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from msgspec import UNSET

from ragspan.gate import clusters as cl
from ragspan.gate import stats
from ragspan.gate.alignment import Comparison
from ragspan.gate.decision import MetricOutcome, drop_amount
from ragspan.records.compare import Power


def power_statement(cmp: Comparison, outcomes: Sequence[MetricOutcome], level: float,
                    noise: Comparison | None = None,
                    clusters: np.ndarray | None = None) -> dict[str, Power]:
    """Per gated metric: the minimum drop a one-sided level-``level`` test detects with
    power 0.8 at this n and the spread of per-query changes (for a binary metric the share
    of queries that changed), and whether the budget is below it. The spread is the
    baseline's against ``noise`` (a second scoring of the baseline) when given, else the
    candidate's against the baseline. ``clusters``: the spread is the clusters' (the
    cluster-robust standard error, t quantiles with C - 1 degrees of freedom)."""
    out: dict[str, Power] = {}
    n = len(cmp.ids)
    for o in outcomes:
        if not o.gated:
            continue
        if noise is not None and o.name in noise.names:
            j = noise.names.index(o.name)
            d = noise.cand[:, j] - noise.base[:, j]
        else:
            j = cmp.names.index(o.name)
            d = cmp.cand[:, j] - cmp.base[:, j]
        sd = float(d.std(ddof=1)) if n >= 2 else 0.0
        effect = 1.0
        if clusters is not None and n >= 2:  # the spread of the mean is the clusters'
            units = cl.count(clusters)
            effect = float(cl.design_effect(d[:, None], clusters)[0])
            sd = float(cl.robust_se(d[:, None], clusters)[0]) * math.sqrt(n) if units >= 2 \
                else math.inf
        mdd = stats.minimum_detectable_drop(sd, n, level) if math.isfinite(sd) else math.inf
        if clusters is not None and math.isfinite(mdd) and cl.count(clusters) >= 2:
            from scipy.special import stdtrit  # few clusters: t quantiles, as the bounds use

            df = cl.count(clusters) - 1
            mdd = float((stdtrit(df, 1 - level) + stdtrit(df, stats.POWER)) * sd / math.sqrt(n))
        out[o.name] = Power(
            queries=n, changed_share=float((np.abs(d) > 1e-12).mean()) if n else 0.0,
            sd=sd if math.isfinite(sd) else None, alpha=level, power=stats.POWER,
            minimum_detectable_drop=mdd if math.isfinite(mdd) else None,
            budget_below_it=bool(not math.isfinite(mdd) or o.allowed_drop < mdd - 1e-12),
            spread_from="noise" if noise is not None and o.name in noise.names
            else "candidate",
            clusters=UNSET if clusters is None else cl.count(clusters),
            design_effect=UNSET if clusters is None else effect,
            effective_queries=UNSET if clusters is None
            else n / effect if effect > 0 else float(n))
    return out


def power_warnings(power: dict[str, Power], outcomes: Sequence[MetricOutcome]) -> list[str]:
    """One line for the gated metrics whose budget is below what this n can detect, among
    those the bounds left inconclusive: a decided metric (its drop shown real, or shown
    within the budget) needs no word on what this n could not see, and one would read as
    contradicting its verdict (``summary.power`` keeps every metric's figures). Said once,
    each metric's smallest detectable drop named in it."""
    by = {o.name: o for o in outcomes}
    blind: list[str] = []
    seen: list[str] = []
    head = None
    for name, p in power.items():
        o = by[name]
        if not p.budget_below_it or o.decision in ("pass", "fail"):
            continue
        if p.minimum_detectable_drop is None:
            blind.append(name)
            continue
        what = "changing between two scorings of the baseline" if p.spread_from == "noise" \
            else "changing"
        where = (f"{p.queries} queries in {p.clusters} clusters (design effect "
                 f"{p.design_effect:.2f})" if p.clusters is not UNSET
                 and p.design_effect is not UNSET else f"{p.queries} queries")
        head = head or (where, p.power, p.alpha)
        seen.append(f"{drop_amount(o, p.minimum_detectable_drop)} for {name} "
                    f"({100 * p.changed_share:.0f}% of the queries {what}; budget "
                    f"{o.budget})")
    lines = []
    if seen and head is not None:
        where, power_, alpha = head
        lines.append(f"with {where}, only a true drop of at least {'; '.join(seen)} fails "
                     f"with probability {power_:g} (alpha {alpha:.3g}): a smaller one cannot "
                     "be told from noise at this n")
    if blind:
        p = power[blind[0]]
        lines.append(f"{', '.join(blind)}: with {p.queries} queries"
                     + (f" in {p.clusters} cluster(s)" if p.clusters is not UNSET else "")
                     + " no drop can be told from noise")
    return lines
