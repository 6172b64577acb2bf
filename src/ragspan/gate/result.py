"""The gate's result: every outcome, the decision and its audit trail, as the compare report's
summary and details."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragspan.gate.budgets import Budget
from ragspan.gate.decision import BudgetCheck, GateDecision, MetricOutcome
from ragspan.gate.plan import GatePlan


@dataclass(frozen=True)
class Verification:
    """What a verdict rests on: both reports re-scored from the files they record
    (``verified``) or taken as written; ``statement`` says which in words."""

    verified: bool
    statement: str

    def as_json(self) -> dict[str, Any]:
        return {"verified": self.verified, "statement": self.statement}


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """Everything ``compare`` decided and the numbers it decided from."""

    decision: GateDecision
    outcomes: tuple[MetricOutcome, ...]
    budget: BudgetCheck | None
    slices: dict[str, Any]
    gated: tuple[str, ...]
    primary: str
    most_regressed: tuple[dict[str, Any], ...]
    queries: int
    ks: tuple[int, ...]
    budgets: dict[str, Budget]  # every budget that applied: the defaults, then the given
    no_gate: bool
    changes: dict[str, Any]  # grounding_changes: counts per k
    changed_queries: dict[str, Any]  # grounding_changes: the queries per k
    why: str | None
    interval: dict[str, Any] | None = None  # interval mode: alpha, bound alpha, family
    power: dict[str, Any] | None = None  # interval mode: power_statement
    warnings: tuple[str, ...] = ()
    anchor: dict[str, Any] | None = None  # the drift guard's comparison, when asked
    noise: dict[str, Any] | None = None  # noise_check's unstable queries, when asked
    clusters: dict[str, Any] | None = None  # the sampling unit (ClusterPlan.as_json)
    # per side, the results kept at their ranks as off-corpus results though their texts
    # could not be placed (None: neither run carried texts)
    placement: dict[str, dict[str, int]] | None = None
    # whether both reports were re-scored from their files, or taken as written (the front
    # end that read them says which)
    verification: Verification | None = None
    # across a corpus change: the questions that survived the edit and those left out
    # (``gate.migration.across``)
    migration: dict[str, Any] | None = None
    # every query's gated metrics on both sides (``gate.changes.per_query_diff``)
    per_query: dict[str, Any] | None = None
    # per gated metric, queries better, worse, the same, and the worst
    # (``gate.changes.per_query_summary``)
    per_query_counts: dict[str, Any] | None = None
    # what decides, fixed from the baseline and the settings (``gate.plan``)
    plan: GatePlan | None = None
    # where both reports were made, which base the baseline is, its age (the front end
    # reads it: ``app.provenance.provenance_summary``)
    provenance: dict[str, Any] | None = None
    # the audited override: the label, who set it, what it overrode (``gate.override``)
    override: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """The compare report's summary."""
        out: dict[str, Any] = {
            "verdict": self.decision.verdict,
            "reasons": list(self.decision.reasons),
            "queries": self.queries,
            "primary_metric": self.primary,
            "gated_metrics": list(self.gated),
            "metrics": {o.name: o.as_json() for o in self.outcomes},
        }
        if self.decision.uncertain:
            out["inconclusive"] = list(self.decision.uncertain)
        if self.interval is not None:
            out["interval"] = self.interval
        if self.power is not None:
            out["power"] = self.power
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.anchor is not None:
            out["anchor"] = self.anchor
        if self.noise is not None:
            out["noise"] = self.noise
        if self.clusters is not None:
            out["clusters"] = self.clusters
        if self.migration is not None:
            out["migration"] = self.migration
        if self.placement is not None:
            out["placement"] = self.placement
        if self.verification is not None:
            out["verification"] = self.verification.as_json()
        if self.provenance is not None:
            out["provenance"] = self.provenance
        if self.override is not None:
            out["override"] = self.override
        if self.no_gate:
            out["no_gate"] = True
        if self.changes:
            out["grounding_changes"] = self.changes
        if self.why:
            out["why"] = self.why
        if self.per_query_counts is not None:
            out["per_query"] = self.per_query_counts
        if self.plan is not None:
            out["plan"] = self.plan.as_json()
        if self.budget is not None:
            out["retrieval_budget"] = {"tolerance": self.budget.tolerance,
                                       "changed": self.budget.changed,
                                       "allowed": self.budget.allowed,
                                       "per_k": self.budget.per_k}
            if self.budget.decided_at:
                out["retrieval_budget"]["decided_at"] = self.budget.decided_at
                out["retrieval_budget"]["trap"] = list(self.budget.trap)
            if self.budget.settled:
                out["retrieval_budget"]["cheaper_at"] = list(self.budget.settled)
        return out

    def details(self) -> dict[str, Any]:
        out = {"most_regressed": list(self.most_regressed), "slices": self.slices}
        if self.changed_queries:
            out["grounding_changes"] = self.changed_queries
        if self.per_query is not None:
            out["per_query_diff"] = self.per_query
        return out
