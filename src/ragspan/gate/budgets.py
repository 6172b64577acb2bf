"""Budgets: how far a metric may drop before the gate fails (``2pt``, ``2%``, ``off``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ragspan.base.errors import UsageError
from ragspan.base.voice import setting
from ragspan.scoring.metrics.registry import METRICS, parse_name

_VALUE = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>pt|%)$")
MAX_BUDGET = 100.0  # 100pt is every point of a 0-1 metric, 100% all of the baseline's mean


@dataclass(frozen=True)
class Budget:
    """``unit`` is ``pt`` (points of a 0-1 metric x 100), ``%`` (relative to the baseline mean)
    or ``off`` (reported, never gated)."""

    unit: str
    value: float = 0.0

    def __str__(self) -> str:
        return "off" if self.unit == "off" else f"{self.value:g}{self.unit}"

    @property
    def gated(self) -> bool:
        return self.unit != "off"

    def allowed_drop(self, baseline_mean: float) -> float:
        """The largest drop (in metric units) that stays within budget."""
        if self.unit == "pt":
            return self.value / 100.0
        if self.unit == "%":
            return abs(baseline_mean) * self.value / 100.0
        return float("inf")


def parse_budget_value(text: str) -> Budget:
    t = text.strip().lower()
    if t == "off":
        return Budget("off")
    m = _VALUE.match(t)
    if not m:
        raise UsageError(f"budget value {text!r} must look like '2pt', '2%' or 'off'")
    value = float(m.group("num"))
    if not math.isfinite(value) or value > MAX_BUDGET:
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-8:]} ({len(text)} characters)"
        raise UsageError(f"budget value {shown!r} is over {MAX_BUDGET:g}{m.group('unit')}, "
                         "the whole metric: a larger drop cannot happen (write 'off' to "
                         "report a metric without gating it)")
    return Budget(m.group("unit"), value)


def parse_budget(spec: str, named: bool = True) -> tuple[str, Budget]:
    """``METRIC=VALUE``; METRIC is a base name (every k) or ``name@k``. A bad value's
    error names the flag (``named``; a config file's reader names its key instead)."""
    if "=" not in spec:
        raise UsageError(f"{setting('budget')} {spec!r} must be METRIC=VALUE (e.g. "
                         "complete_grounding=2pt)")
    metric, value = (x.strip() for x in spec.split("=", 1))
    if "@" in metric:
        try:
            parse_name(metric)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    elif metric.removesuffix("_first_stage") not in METRICS:
        raise UsageError(f"unknown metric '{metric}' in {setting('budget')} (one of: "
                         f"{', '.join(METRICS)})")
    try:
        budget = parse_budget_value(value)
    except UsageError as exc:
        if not named:
            raise
        raise UsageError(f"{setting('budget')} {metric}: {exc}") from None
    base = parse_name(metric).base if "@" in metric else metric.removesuffix("_first_stage")
    if budget.unit == "pt" and not METRICS[base].bounded:
        raise UsageError(f"'{metric}' is not a 0-1 metric: give its budget in % (e.g. 10%)")
    return metric, budget


def budget_for(name: str, budgets: dict[str, Budget], defaults: dict[str, Budget]) -> Budget:
    """Most specific wins: ``name@k``, then the base name, then the defaults, else off."""
    base = parse_name(name).column
    for table in (budgets, defaults):
        if name in table:
            return table[name]
        if base in table:
            return table[base]
    return Budget("off")
