"""The gate's settings as one typed value (``GateOptions``); every default and range is declared
once in ``ragspan.base.options``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragspan.base.errors import UsageError
from ragspan.base.options import GATE_DEFAULTS, GATE_OPTIONS, check_value
from ragspan.base.voice import setting
from ragspan.gate.budgets import Budget
from ragspan.gate.parameters import COMPARED, NEVER_ACCEPTED

DEFAULT_ALPHA = 0.05  # interval mode's alpha when none is given


@dataclass(frozen=True)
class GateOptions:
    """The gate's settings; defaults and ranges are declared once in ``ragspan.base.options``."""

    budgets: dict[str, Budget] = field(default_factory=dict)
    alpha: float | None = GATE_DEFAULTS["alpha"]
    mode: str = GATE_DEFAULTS["mode"]
    on_inconclusive: str = GATE_DEFAULTS["on_inconclusive"]
    test: str = GATE_DEFAULTS["test"]
    permutations: int = GATE_DEFAULTS["permutations"]
    bootstrap: int = GATE_DEFAULTS["bootstrap"]
    seed: int = GATE_DEFAULTS["seed"]
    correction: str | None = GATE_DEFAULTS["correction"]
    budget_tolerance: float = GATE_DEFAULTS["budget_tolerance"]
    allow_budget_change: bool = GATE_DEFAULTS["allow_budget_change"]
    allow_ungated: bool = GATE_DEFAULTS["allow_ungated"]
    allow_parameter_change: tuple[str, ...] = GATE_DEFAULTS["allow_parameter_change"]
    gate_slices: tuple[str, ...] = GATE_DEFAULTS["gate_slices"]
    min_slice_size: int = GATE_DEFAULTS["min_slice_size"]
    anchor_budget: str | None = GATE_DEFAULTS["anchor_budget"]
    primary_metric: str | None = GATE_DEFAULTS["primary_metric"]
    top: int = GATE_DEFAULTS["top"]
    cluster_by: str = GATE_DEFAULTS["cluster_by"]
    max_recall_regression_pct: float | None = GATE_DEFAULTS["max_recall_regression_pct"]
    max_regression_pct: float | None = GATE_DEFAULTS["max_regression_pct"]
    max_set_aside: float = GATE_DEFAULTS["max_set_aside"]
    profile: str = GATE_DEFAULTS["profile"]
    max_baseline_age: float = GATE_DEFAULTS["max_baseline_age"]
    override_label: str | None = GATE_DEFAULTS["override_label"]

    def validate(self) -> None:
        """Every value against its declared option (a usage error names the flag); alpha has
        no role in non-inferiority mode, whose bound is always one-sided 95%."""
        for opt in GATE_OPTIONS:
            if opt.kind == "table":
                continue
            try:
                check_value(opt, getattr(self, opt.attr))
            except ValueError as exc:
                raise UsageError(f"{setting(opt.key)}: {exc}") from None
        for key in self.allow_parameter_change:
            if key not in COMPARED or key in NEVER_ACCEPTED:
                raise UsageError(f"{setting('allow-parameter-change', key)}: expected one of "
                                 f"{', '.join(k for k in COMPARED if k not in NEVER_ACCEPTED)}")
        if self.mode == "non-inferiority" and self.alpha is not None:
            raise UsageError(f"{setting('alpha')} has no effect in non-inferiority mode (its "
                             "bound is the one-sided 95% upper bound of the drop); drop "
                             f"{setting('alpha')} or use {setting('mode', 'interval')}")
        if self.mode != "interval" and self.correction == "max-t":
            raise UsageError(f"{setting('correction', 'max-t')} adjusts the interval mode's "
                             f"bounds; with {setting('mode', self.mode)} use holm or none")

    @property
    def level(self) -> float:
        """The family's error rate in interval mode (``alpha``, else 0.05)."""
        return DEFAULT_ALPHA if self.alpha is None else self.alpha

    @property
    def family_correction(self) -> str:
        """The correction in force: as given, else max-t in interval mode, none otherwise."""
        if self.correction is not None:
            return self.correction
        return "max-t" if self.mode == "interval" else "none"
