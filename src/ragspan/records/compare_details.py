"""The per-metric outcome of a gate decision (``Outcome``, in a compare report's summary,
its anchor section and its slices) and the compare report's details: the most regressed
queries, the gated slices, the queries complete grounding fixed and broke, every query's
gated metrics (``records.compare`` holds the rest of the report)."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite
from ragspan.records.score_facts import Count
from ragspan.records.score_rows import EvidenceChunk


class Outcome(Struct, kw_only=True, omit_defaults=True):
    """One metric's decision, everything needed to audit it: both means and the change
    (with its 95% interval), the test's p-value (None: no test ran, nothing changed), the
    budget and the drop it allows (unset: unbounded), whether it is gated, over its budget,
    significant, failed; queries worse, better and the same; complete grounding's fixed and
    broken queries; in interval mode the decision, the one-sided bounds on the drop, their
    error rate, the interval method and the p-value of "no drop"."""

    name: str
    baseline: Finite
    candidate: Finite
    delta: Finite
    ci95: list[Finite]
    p_value: Finite | None
    test: str
    budget: str
    gated: bool
    over_budget: bool
    failed: bool
    worse: Count
    better: Count
    same: Count
    p_adjusted: Finite | UnsetType = UNSET
    allowed_drop: Finite | UnsetType = UNSET
    significant: bool | UnsetType = UNSET
    upper_drop: Finite | UnsetType = UNSET
    fixed: Count | UnsetType = UNSET
    broken: Count | UnsetType = UNSET
    decision: str | UnsetType = UNSET
    drop_bounds: list[Finite] | UnsetType = UNSET
    bound_alpha: Finite | UnsetType = UNSET
    interval: str | UnsetType = UNSET
    p_drop: Finite | UnsetType = UNSET


class LostSpan(Struct, kw_only=True, omit_defaults=True):
    """A gold span the candidate left below tau, with the chunks behind its label."""

    doc_id: str
    start: int
    end: int
    chunks: list[EvidenceChunk]
    covered: Finite | UnsetType = UNSET
    text: str | UnsetType = UNSET


class Regressed(Struct, kw_only=True, omit_defaults=True):
    """One of the queries with the largest drop of the primary metric: both values, the
    change, its text, and for complete grounding the spans it lost and its failure
    label."""

    id: str
    baseline: Finite
    candidate: Finite
    delta: Finite
    query: str | UnsetType = UNSET
    lost_spans: list[LostSpan] | UnsetType = UNSET
    label: str | UnsetType = UNSET


class Change(Struct, frozen=True):
    """A query complete grounding fixed or broke, with its label on each side (None:
    grounded there, or no label)."""

    id: str
    change: Literal["fixed", "broken"]
    baseline_label: str | None
    candidate_label: str | None


class QueryDiff(Struct, frozen=True):
    """One query's gated metrics on both sides and their change, in the order of
    ``PerQueryDiff.metrics``."""

    id: str
    baseline: list[Finite]
    candidate: list[Finite]
    delta: list[Finite]


class PerQueryDiff(Struct, frozen=True):
    """Every query's gated metrics on both sides, in the baseline's order."""

    metrics: list[str]
    queries: list[QueryDiff]


class SliceOutcome(Struct, frozen=True):
    """A slice's queries, whether it was gated (too small: reported only) and its
    outcomes."""

    count: Count
    gated: bool
    metrics: dict[str, Outcome]


class CompareDetails(Struct, kw_only=True, omit_defaults=True):
    """The queries behind the verdict: the most regressed, each gated slice's outcomes,
    the queries complete grounding fixed and broke per cutoff, every query's gated
    metrics."""

    most_regressed: list[Regressed]
    slices: dict[str, dict[str, SliceOutcome]]
    grounding_changes: dict[str, list[Change]] | UnsetType = UNSET
    per_query_diff: PerQueryDiff | UnsetType = UNSET
