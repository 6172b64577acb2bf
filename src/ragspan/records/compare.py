"""The ``compare`` report (the gate's verdict) as typed records: the settings in force
(``CompareParameters``), the verdict and every number it rests on (``CompareSummary``), and
the queries behind it (``CompareDetails``). ``gate.result.GateResult`` builds the summary and
details by keyword, ``app.compare`` the parameters; the renderers (the table, the markdown
comment, JUnit XML, the workflow annotations) read the same records, and the published
schema's part for the kind is generated from them (``report.schema_build``).

Metrics key their sections by column name (``complete_grounding@5``), cutoffs by their
JSON text (``"5"``, ``"2000c"``), slices by tag key and then value."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.compare_details import CompareDetails, Outcome
from ragspan.records.envelope import Finite, Predicate
from ragspan.records.score import Provenance
from ragspan.records.score_facts import Count, Share


class CompareParameters(Struct, kw_only=True, omit_defaults=True):
    """Every setting in force when the verdict was made (a setting left unset was not in
    force): the test and its error rates, the budgets per metric, the slices gated, the
    cutoffs, where the settings came from, and the command line."""

    mode: str
    on_inconclusive: str
    test: str
    permutations: int
    bootstrap: int
    seed: int
    correction: str
    budget_tolerance: Finite
    allow_budget_change: bool
    budgets: dict[str, str]
    gate_slices: list[str]
    min_slice_size: int
    cluster_by: str
    k: list[int | str]
    profile: str
    alpha: Finite | UnsetType = UNSET
    anchor_budget: str | UnsetType = UNSET
    allow_parameter_change: list[str] | UnsetType = UNSET
    config_file: str | UnsetType = UNSET
    config_origin: str | UnsetType = UNSET
    no_config: bool | UnsetType = UNSET
    verified: bool | UnsetType = UNSET
    max_set_aside: Finite | UnsetType = UNSET
    max_baseline_age: Finite | UnsetType = UNSET
    override_label: str | UnsetType = UNSET
    baseline_is: str | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class Interval(Struct, frozen=True):
    """Interval mode: the confidence level asked, each bound's error rate over the family of
    gated decisions, the family's size, its correction and what an inconclusive metric
    does."""

    alpha: Finite
    bound_alpha: Finite
    family: Count
    correction: str
    on_inconclusive: str


class Power(Struct, kw_only=True, omit_defaults=True):
    """Interval mode, per gated metric: what this number of queries can detect (the
    spread of the per-query change, the minimum detectable drop at the stated power; None
    when it cannot be told) and whether the budget is below it; with a sampling unit, the
    clusters and their design effect."""

    queries: Count
    changed_share: Share
    sd: Finite | None
    alpha: Finite
    power: Finite
    minimum_detectable_drop: Finite | None
    budget_below_it: bool
    spread_from: Literal["noise", "candidate"]
    clusters: Count | UnsetType = UNSET
    design_effect: Finite | UnsetType = UNSET
    effective_queries: Finite | UnsetType = UNSET


class BudgetAt(Struct, frozen=True):
    """At one cutoff: the median characters each side retrieved, their ratio and whether
    that is a change of the retrieval budget."""

    baseline: Finite
    candidate: Finite
    ratio: Finite
    changed: bool


class RetrievalBudget(Struct, kw_only=True, omit_defaults=True):
    """The retrieval budget check: the tolerance, whether the budget changed and was
    allowed to, per cutoff ``BudgetAt``; the count cutoffs decided at a character cutoff
    instead (``decided_at``) with the trap each fell in, and those where the candidate is
    cheaper (``cheaper_at``)."""

    tolerance: Finite
    changed: bool
    allowed: bool
    per_k: dict[str, BudgetAt]
    decided_at: dict[str, str] | UnsetType = UNSET
    trap: list[str] | UnsetType = UNSET
    cheaper_at: list[str] | UnsetType = UNSET


class AnchorBudget(Struct, kw_only=True, omit_defaults=True):
    """The drift guard's retrieval budget: whether it changed against the anchor, per
    cutoff, and where its count cutoffs were decided."""

    changed: bool
    per_k: dict[str, BudgetAt]
    decided_at: dict[str, str] | UnsetType = UNSET


class Anchor(Struct, kw_only=True, omit_defaults=True):
    """The drift guard: the candidate against a pinned release's report (``report``), with
    its own budget, verdict, error rate, family and outcomes."""

    report: str
    budget: str
    verdict: str
    bound_alpha: Finite | None
    family: Count
    metrics: dict[str, Outcome]
    retrieval_budget: AnchorBudget | UnsetType = UNSET


class Unstable(Struct, frozen=True):
    """The queries whose value of a metric differs between two scorings of the baseline:
    how many, their share, the first ids."""

    count: Count
    share: Share
    ids: list[str]


class Noise(Struct, frozen=True):
    """The noise check: a second scoring of the baseline (``report``) and, per gated
    metric, its unstable queries."""

    report: str
    unstable: dict[str, Unstable]


class Clusters(Struct, frozen=True):
    """The sampling unit: what clusters the queries (``by``) and why, the queries and the
    clusters, and the population a verdict speaks of."""

    by: str
    reason: str
    queries: Count
    clusters: Count
    population: str


class MigrationPart(Struct, kw_only=True):
    """Across a corpus edit: the questions, those that survived, those set aside and
    dropped, how many of the left-out ones the baseline grounded per count cutoff, how they
    were counted, their share and its bound, and the gold spans by fate."""

    report: str
    questions: Count
    survived: Count
    set_aside: Count
    dropped: Count
    left_out_grounded_by_baseline: dict[str, Count]
    counted_as: str
    trusted: bool
    left_out_share: Share
    max_set_aside: Finite
    over_bound: bool
    spans: dict[str, Count]  # the migrate report's gold spans by status
    population: str


class Dropped(Struct, frozen=True):
    """Results kept as off-corpus results because their texts could not be placed."""

    dropped: Count


class Placement(Struct, frozen=True):
    """Per side, the results dropped as unplaced."""

    baseline: Dropped
    candidate: Dropped


class Verification(Struct, frozen=True):
    """Whether both reports were re-scored from the files they record (``verified``) or
    taken as written; ``statement`` says which in words."""

    verified: bool
    statement: str


class Where(Struct, kw_only=True, omit_defaults=True):
    """Where both reports were made (None: not recorded), which base the baseline is, and
    the baseline's age against the bound on it."""

    baseline: Provenance | None
    candidate: Provenance | None
    baseline_is: str | UnsetType = UNSET
    baseline_age_days: Finite | UnsetType = UNSET
    max_baseline_age_days: Finite | UnsetType = UNSET


class Overrode(Struct, frozen=True):
    """The verdict an override set aside: its verdict, exit code and reasons."""

    verdict: str
    exit_code: int
    reasons: list[str]


class Override(Struct, frozen=True):
    """The audited override: the label as set, who set it (None: not known), whether it
    applied (a failing exit) and what it overrode."""

    label: str
    actor: str | None
    applied: bool
    overrode: Overrode | None


class LabelChanges(Struct, frozen=True):
    """At one cutoff: the queries complete grounding broke and fixed, by failure label."""

    broken: Count
    broken_by_label: dict[str, Count]
    fixed: Count
    fixed_by_label: dict[str, Count]


class Worst(Struct, frozen=True):
    """The query with the largest drop and the drop."""

    id: str
    drop: Finite


class QueryCounts(Struct, frozen=True):
    """Per gated metric: the queries better, worse and the same, and the worst (None when
    none dropped)."""

    better: Count
    worse: Count
    same: Count
    worst: Worst | None


class GatedMetric(Struct, kw_only=True, omit_defaults=True, rename={"from_": "from"}):
    """A gated metric of the plan: its budget, where the budget came from, and the
    character cutoff it is decided at when its count cutoff is decided at equal budget."""

    metric: str
    budget: str
    from_: str
    at_equal_budget: str | UnsetType = UNSET


class GatedSlice(Struct, frozen=True, rename={"from_": "from"}):
    """A gated slice: its tag key and where it came from."""

    tag: str
    from_: str


class EqualBudgetCutoff(Struct, frozen=True):
    """A count cutoff's equal-budget cutoff: the baseline's median characters there and the
    grid cutoff nearest it."""

    baseline_median_chars: Finite
    at: str


class Plan(Struct, kw_only=True, rename={"from_": "from"}):
    """What decides, fixed from the baseline and the settings (never the candidate's
    report): the cutoffs, the gated metrics, the gated slices, each count cutoff's
    equal-budget cutoff."""

    from_: str
    cutoffs: list[str]
    gated: list[GatedMetric]
    slices: list[GatedSlice]
    equal_budget: dict[str, EqualBudgetCutoff]


class CompareSummary(Struct, kw_only=True, omit_defaults=True):
    """The verdict and its reasons, the queries compared, the metric the readout leads with
    and the gated ones, every metric's ``Outcome``, and the sections each setting or input
    adds."""

    verdict: str
    reasons: list[str]
    queries: Count
    primary_metric: str
    gated_metrics: list[str]
    metrics: dict[str, Outcome]
    inconclusive: list[str] | UnsetType = UNSET
    interval: Interval | UnsetType = UNSET
    power: dict[str, Power] | UnsetType = UNSET
    warnings: list[str] | UnsetType = UNSET
    anchor: Anchor | UnsetType = UNSET
    noise: Noise | UnsetType = UNSET
    clusters: Clusters | UnsetType = UNSET
    migration: MigrationPart | UnsetType = UNSET
    placement: Placement | UnsetType = UNSET
    verification: Verification | UnsetType = UNSET
    provenance: Where | UnsetType = UNSET
    override: Override | UnsetType = UNSET
    no_gate: bool | UnsetType = UNSET
    grounding_changes: dict[str, LabelChanges] | UnsetType = UNSET
    why: str | UnsetType = UNSET
    per_query: dict[str, QueryCounts] | UnsetType = UNSET
    plan: Plan | UnsetType = UNSET
    retrieval_budget: RetrievalBudget | UnsetType = UNSET


ComparePredicate = Predicate[CompareParameters, CompareSummary, CompareDetails]
