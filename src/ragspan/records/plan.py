"""A ``plan`` report (how many queries a gate on complete grounding needs) as typed records
(``app.plan`` builds them by keyword)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate


class PlanParameters(Struct, frozen=True, kw_only=True):
    """What the plan was asked: the flip rate, the budget and the true drop (points of
    complete grounding, as text: ``2pt``), alpha, power and, when given, the design
    effect."""

    flip_rate: Finite
    budget: str
    drop: str
    alpha: Finite
    power: Finite
    design_effect: Finite | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class PlanSummary(Struct, frozen=True, kw_only=True):
    """The queries for a true drop to fail with the power asked (None: never, the drop is
    within the budget) and for a change with no true drop to pass; the minimum detectable
    drop at a few numbers of queries (keys ``"50"``...)."""

    flip_rate: Finite
    budget: str
    drop: str
    alpha: Finite
    power: Finite
    queries_to_fail: int | None
    queries_to_pass: int
    minimum_detectable_drop: dict[str, Finite]
    design_effect: Finite | UnsetType = UNSET


class PlanDetails(Struct, frozen=True):
    """Nothing: a plan has no per-item detail."""


PlanPredicate = Predicate[PlanParameters, PlanSummary, PlanDetails]
