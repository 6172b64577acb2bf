"""The gate's result: every outcome, the decision and its audit trail, as the compare report's
summary and details (``records.compare``: built here by keyword)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from ragspan.gate.budgets import Budget
from ragspan.gate.decision import BudgetCheck, GateDecision, MetricOutcome
from ragspan.gate.plan import GatePlan
from ragspan.records.compare import (
    Anchor,
    Clusters,
    CompareSummary,
    Interval,
    LabelChanges,
    MigrationPart,
    Noise,
    Override,
    Placement,
    Power,
    QueryCounts,
    RetrievalBudget,
    Verification,
    Where,
)
from ragspan.records.compare_details import (
    Change,
    CompareDetails,
    PerQueryDiff,
    Regressed,
    SliceOutcome,
)
from ragspan.records.envelope import encode, given

__all__ = ["GateResult", "Verification"]


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """Everything ``compare`` decided and the numbers it decided from."""

    decision: GateDecision
    outcomes: tuple[MetricOutcome, ...]
    budget: BudgetCheck | None
    slices: dict[str, dict[str, SliceOutcome]]
    gated: tuple[str, ...]
    primary: str
    most_regressed: tuple[Regressed, ...]
    queries: int
    ks: tuple[int, ...]
    budgets: dict[str, Budget]  # every budget that applied: the defaults, then the given
    no_gate: bool
    changes: dict[str, LabelChanges]  # grounding_changes: counts per k
    changed_queries: dict[str, list[Change]]  # grounding_changes: the queries per k
    why: str | None
    interval: Interval | None = None  # interval mode: alpha, bound alpha, family
    power: dict[str, Power] | None = None  # interval mode: power_statement
    warnings: tuple[str, ...] = ()
    anchor: Anchor | None = None  # the drift guard's comparison, when asked
    noise: Noise | None = None  # noise_check's unstable queries, when asked
    clusters: Clusters | None = None  # the sampling unit (ClusterPlan.record)
    # per side, the results kept at their ranks as off-corpus results though their texts
    # could not be placed (None: neither run carried texts)
    placement: Placement | None = None
    # whether both reports were re-scored from their files, or taken as written (the front
    # end that read them says which)
    verification: Verification | None = None
    # across a corpus change: the questions that survived the edit and those left out
    # (``gate.migration.across``)
    migration: MigrationPart | None = None
    # every query's gated metrics on both sides (``gate.changes.per_query_diff``)
    per_query: PerQueryDiff | None = None
    # per gated metric, queries better, worse, the same, and the worst
    # (``gate.changes.per_query_summary``)
    per_query_counts: dict[str, QueryCounts] | None = None
    # what decides, fixed from the baseline and the settings (``gate.plan``)
    plan: GatePlan | None = None
    # where both reports were made, which base the baseline is, its age (the front end
    # reads it: ``app.provenance.provenance_summary``)
    provenance: Where | None = None
    # the audited override: the label, who set it, what it overrode (``gate.override``)
    override: Override | None = None

    def summary_record(self) -> CompareSummary:
        """The compare report's summary."""
        return CompareSummary(
            verdict=self.decision.verdict, reasons=list(self.decision.reasons),
            queries=self.queries, primary_metric=self.primary,
            gated_metrics=list(self.gated),
            metrics={o.name: o.record() for o in self.outcomes},
            inconclusive=list(self.decision.uncertain) or UNSET,
            interval=given(self.interval), power=given(self.power),
            warnings=list(self.warnings) or UNSET, anchor=given(self.anchor),
            noise=given(self.noise), clusters=given(self.clusters),
            migration=given(self.migration), placement=given(self.placement),
            verification=given(self.verification), provenance=given(self.provenance),
            override=given(self.override), no_gate=True if self.no_gate else UNSET,
            grounding_changes=self.changes or UNSET, why=self.why or UNSET,
            per_query=given(self.per_query_counts),
            plan=UNSET if self.plan is None else self.plan.record(),
            retrieval_budget=UNSET if self.budget is None else _budget(self.budget))

    def details_record(self) -> CompareDetails:
        """The compare report's details."""
        return CompareDetails(most_regressed=list(self.most_regressed), slices=self.slices,
                              grounding_changes=self.changed_queries or UNSET,
                              per_query_diff=given(self.per_query))

    def summary(self) -> dict[str, Any]:
        """The summary as JSON values (the Python API's view; the report's own)."""
        out: dict[str, Any] = encode(self.summary_record())
        return out

    def details(self) -> dict[str, Any]:
        """The details as JSON values (the Python API's view; the report's own)."""
        out: dict[str, Any] = encode(self.details_record())
        return out



def _budget(check: BudgetCheck) -> RetrievalBudget:
    """``summary.retrieval_budget`` from the budget check."""
    return RetrievalBudget(
        tolerance=check.tolerance, changed=check.changed, allowed=check.allowed,
        per_k=dict(check.per_k),
        decided_at=check.decided_at or UNSET,
        trap=list(check.trap) if check.decided_at else UNSET,
        cheaper_at=list(check.settled) or UNSET)
