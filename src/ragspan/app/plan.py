"""``ragspan plan``: how many queries a gate on complete grounding needs (topic-set-size
design): for a true drop to fail with the given power, and for a change with no true drop
to pass rather than read inconclusive (``stats.queries_needed``)."""

from __future__ import annotations

import math

from msgspec import UNSET

from ragspan.app.output import CommandResult
from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import UsageError
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.gate.budgets import Budget, parse_budget_value
from ragspan.gate.stats import minimum_detectable_drop, queries_needed
from ragspan.io.files import sha256_hex
from ragspan.records.envelope import encode
from ragspan.records.plan import PlanDetails, PlanParameters, PlanSummary
from ragspan.report.envelope import statement


def _budget_flag(flag: str, text: str) -> Budget:
    """A budget given to ``flag``; a bad value's error names the flag."""
    try:
        return parse_budget_value(text)
    except UsageError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def run(*, flip_rate: float, budget: str, drop: str | None = None, alpha: float = 0.05,
        power: float = 0.8, design_effect: float = 1.0) -> CommandResult:
    """``design_effect``: with several questions per document the variance of the mean
    grows by this factor, so the queries needed grow by it and the minimum detectable drop
    by its square root (effective sample size n / design effect)."""
    b = _budget_flag(setting("budget"), budget)
    d = _budget_flag(setting("drop"), drop) if drop is not None else None
    for flag, value in ((setting("budget"), b), (setting("drop"), d)):
        if value is not None and (value.unit != "pt" or value.value <= 0):
            raise UsageError(f"{flag} must be points of complete grounding above 0 "
                             f"(e.g. 2pt), got {value}")
    allowed = b.value / 100
    true_drop = d.value / 100 if d is not None else 2 * allowed
    need = queries_needed(flip_rate, allowed, true_drop, alpha, power)

    need = {k: math.ceil(v * design_effect) if math.isfinite(v) else v for k, v in need.items()}
    sd = math.sqrt(flip_rate * design_effect)
    given = UNSET if design_effect == 1.0 else design_effect  # a plain plan keeps its bytes
    drop_text = f"{100 * true_drop:g}pt"
    parameters = PlanParameters(flip_rate=flip_rate, budget=str(b), drop=drop_text,
                                alpha=alpha, power=power, design_effect=given)
    summary = PlanSummary(
        flip_rate=flip_rate, budget=str(b), drop=drop_text, alpha=alpha, power=power,
        queries_to_fail=int(need["to_fail"]) if math.isfinite(need["to_fail"]) else None,
        queries_to_pass=int(need["to_pass"]),
        minimum_detectable_drop={
            str(n): minimum_detectable_drop(sd, n, alpha, power) for n in (50, 100, 300, 1000)},
        design_effect=given)
    digest = sha256_hex(canonical_dumps(encode(parameters)).encode("utf-8"))
    return CommandResult(statement(
        kind="plan", subject=[InputRef("plan", "parameters", digest)], inputs=[],
        parameters=parameters, summary=summary, details=PlanDetails()))
