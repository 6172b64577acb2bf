"""The score reports (``score.span``, ``score.doc``) as typed records: their parameters,
every summary section and their details, the per-question columns of format v2
(``records.score_columns``) or the per-query rows of format v1 (``records.score_rows``).
``scoring.report_body`` builds them by keyword, ``records.envelope.encode`` writes them (a
field left unset is left out), the gate and the renderers decode a report read back into
them, and the published schema's part for both kinds is generated from them
(``report.schema_build``).

Cutoffs key the sections by their JSON text (``"5"``, ``"2000c"``, ``"512t"``). A field the
records do not name is allowed in a report read back and ignored (the schema allows it), so
a report of a later minor release still reads. Two values are a user's JSON, kept as given:
a run's header (``parameters.run_config``) and nothing else."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate
from ragspan.records.score_columns import DocColumns, MetricName, Slice, SpanColumns
from ragspan.records.score_facts import (
    Count,
    OffScope,
    Reordering,
    RunLatency,
    Saturation,
    Steps,
)
from ragspan.records.score_rows import Row
from ragspan.records.score_summary import Documents, ReportWarning
from ragspan.records.validate import ScoreChunking

# a cutoff as written: a count (an integer in reports of earlier releases, else its text)
# or a budget in characters or tokens
Cutoff = int | Annotated[str, Meta(pattern="^[1-9][0-9]*[ct]?$")]
Threshold = Annotated[float, Meta(gt=0, le=1)]
# a run's header (``parameters.run_config``): the run's own JSON object, kept as given; the
# fields the readout reads are typed, in the schema and by ``ScoreParameters`` (the rest is
# the run's)
RUN_HEADER_TYPES: dict[str, tuple[type, str]] = {
    "config": (dict, "object"), "config_digest": (str, "string"),
    "corpus_sha256": (str, "string"), "eval_set_sha256": (str, "string")}
RunHeader = Annotated[dict[str, object], Meta(extra_json_schema={"properties": {
    key: {"type": name} for key, (_, name) in RUN_HEADER_TYPES.items()}})]


class Provenance(Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Where a score report was made (``app.provenance``): the git commit, its ref (None:
    detached), the commit's date and whether the tree had uncommitted changes."""

    commit: Annotated[str, Meta(pattern="^[0-9a-f]{40}([0-9a-f]{24})?$")]
    ref: str | None
    dirty: bool
    committed_at: str | UnsetType = UNSET


class Anchoring(Struct, frozen=True, forbid_unknown_fields=True):
    """How a run's texts were checked and placed (``parameters.anchoring``)."""

    align: bool
    on_ambiguous: Literal["error", "first"]
    unplaced: Literal["error", "drop"]
    threshold: Threshold


class ScoreParameters(Struct, kw_only=True, omit_defaults=True):
    """What a score was computed with. Both kinds: the cutoffs (``k``), the level, and the
    command line and where it ran (``argv``, ``provenance``, added when written). A span
    score: the grounding threshold, whether the run had a first stage, the placement rule
    (``anchoring``), the run's header (``run_config``), a chunk manifest (``chunks``),
    Chroma's metrics, the tokenizer of token budgets, and the relevance level of its
    doc-level view. A doc score: the relevance level, judged-only, the files' formats and
    trec_eval's name of each metric."""

    k: Annotated[list[Cutoff], Meta(min_length=1)]
    level: Literal["span", "doc"] | UnsetType = UNSET
    grounding_threshold: Threshold | UnsetType = UNSET
    first_stage: bool | UnsetType = UNSET
    relevance_level: int | UnsetType = UNSET
    judged_only: bool | UnsetType = UNSET
    qrels_format: str | UnsetType = UNSET
    run_format: str | UnsetType = UNSET
    trec_eval_equivalents: dict[str, str] | UnsetType = UNSET
    anchoring: Anchoring | UnsetType = UNSET
    run_config: RunHeader | UnsetType = UNSET
    chunks: bool | UnsetType = UNSET
    chroma_metrics: bool | UnsetType = UNSET
    tokenizer: str | UnsetType = UNSET
    on_duplicate: Literal["error", "first"] | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET
    provenance: Provenance | UnsetType = UNSET

    def __post_init__(self) -> None:
        """The run header's typed fields are of their type, as the schema says (what the
        decode checks is all the schema checks: ``schema_build.envelope_only``)."""
        if isinstance(self.run_config, UnsetType):
            return
        for key, (kind, name) in RUN_HEADER_TYPES.items():
            value = self.run_config.get(key)
            if key in self.run_config and not isinstance(value, kind):
                raise ValueError(f"run_config.{key} must be of type '{name}'")


class CharsSpread(Struct, frozen=True):
    """Mean, median and 90th percentile (linear interpolation) of per-query values."""

    mean: Finite
    median: Finite
    p90: Finite


class FailureLabels(Struct, frozen=True, kw_only=True):
    """``summary.failure_labels``: per k, each failure label's count; the lever each label
    points at; the labels no manifest let decide; the depth of the ranked pool."""

    by_k: dict[str, dict[str, Count]]
    levers: dict[str, str] | UnsetType = UNSET
    undecided: list[str] | UnsetType = UNSET
    pool_depth: Count | UnsetType = UNSET


class Fusion(Struct, frozen=True):
    """``summary.fusion`` (``base.facts.FusionSources``): the fused retrievers and, per count
    cutoff, ``relevant_in_top``, ``promoted`` and ``found_by_<source>_only`` counts."""

    sources: list[str]
    by_k: dict[str, dict[str, Count]]


class Twins(Struct, frozen=True):
    """Ids that differ from eval-set ids only by Unicode normalisation: how many, and one
    pair (``base.ids.twins_note``)."""

    count: Count
    example: list[str]


class MacroMean(Struct, frozen=True):
    """The mean over subsets (``over``: the tag, ``groups``: its values) of each metric's
    mean per subset (``scoring.report_body.macro_mean``)."""

    over: str
    groups: list[str]
    metrics: dict[str, Finite]


class SkippedRows(Struct, frozen=True):
    """``--on-duplicate first``: a file's rows skipped for repeating an earlier row's id or
    having none, the repeated documents dropped from rows, and the lines skipped."""

    repeated: Count
    without_id: Count
    repeated_docs: Count
    lines: list[int]


class SpanSummary(Struct, kw_only=True, omit_defaults=True):
    """A span score's summary: the queries, how many lack a run row and how many run rows
    name no query, the mean of every metric, the characters retrieved per cutoff, and the
    sections each run fact adds (``records.score_facts``, ``records.validate``). A report
    read back needs only ``queries`` and ``metrics`` (the gate refuses what it cannot
    verify itself)."""

    queries: Count
    metrics: dict[MetricName, Finite]
    queries_without_run_row: Count | UnsetType = UNSET
    run_rows_without_query: Count | UnsetType = UNSET
    retrieved_chars: dict[str, CharsSpread] | UnsetType = UNSET
    failure_labels: FailureLabels | UnsetType = UNSET
    documents: Documents | UnsetType = UNSET
    placement: dict[str, Count] | UnsetType = UNSET
    results_without_text: Count | UnsetType = UNSET
    saturation: Saturation | UnsetType = UNSET
    off_scope: OffScope | UnsetType = UNSET
    first_stage: Reordering | UnsetType = UNSET
    fusion: Fusion | UnsetType = UNSET
    steps: Steps | UnsetType = UNSET
    ids_differing_by_normalization: Twins | UnsetType = UNSET
    chunking: ScoreChunking | UnsetType = UNSET
    latency_ms: RunLatency | UnsetType = UNSET
    macro_mean: MacroMean | UnsetType = UNSET
    skipped_rows: dict[str, SkippedRows] | UnsetType = UNSET
    warnings: list[ReportWarning] | UnsetType = UNSET


class DocSummary(Struct, kw_only=True, omit_defaults=True):
    """A doc score's summary: the queries evaluated, the mean of every metric, and what the
    qrels and the run left out of each other (only ``queries`` and ``metrics`` are required
    of a report read back, as of a span score's)."""

    queries: Count
    metrics: dict[MetricName, Finite]
    queries_without_judgments: Count | UnsetType = UNSET
    judged_queries_without_run_row: Count | UnsetType = UNSET
    run_rows_for_unjudged_queries: Count | UnsetType = UNSET
    queries_without_relevant: Count | UnsetType = UNSET
    ids_differing_by_normalization: Twins | UnsetType = UNSET
    skipped_rows: dict[str, SkippedRows] | UnsetType = UNSET
    warnings: list[ReportWarning] | UnsetType = UNSET


class SpanDetailsV1(Struct, kw_only=True, omit_defaults=True):
    """A span score's details in format v1 (``https://ragspan.dev/report/v1``, reports of
    earlier releases, still read): one row per query (in the eval set's order), the slices
    per tag key and value, and the first run ids that name no query."""

    queries: list[Row]
    slices: dict[str, dict[str, Slice]] | UnsetType = UNSET
    run_rows_without_query: list[str] | UnsetType = UNSET


class DocDetailsV1(Struct):
    """A doc score's details in format v1: one row per evaluated query."""

    queries: list[Row]


SpanPredicate = Predicate[ScoreParameters, SpanSummary, SpanColumns]
DocPredicate = Predicate[ScoreParameters, DocSummary, DocColumns]
SpanPredicateV1 = Predicate[ScoreParameters, SpanSummary, SpanDetailsV1]
DocPredicateV1 = Predicate[ScoreParameters, DocSummary, DocDetailsV1]
