"""A ``sweep`` report (several pipeline configurations run, scored and reported) as typed
records: one entry per configuration, finished or failed, the totals and the parameters
(``app.sweep`` builds them by keyword)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate


class Execution(Struct, frozen=True, kw_only=True):
    """A configuration's embedding work and time (only with ``record_latency``: it differs
    from sweep to sweep)."""

    embedded: int
    embeddings_from_cache: int
    elapsed_s: Finite | UnsetType = UNSET


class Configuration(Struct, frozen=True, kw_only=True):
    """One configuration of the sweep: finished (its files, chunks, the kept metrics, the
    failure labels per cutoff, its score report's digest) or failed (the error and its exit
    code, under ``keep_going``)."""

    name: str
    config: str
    error: str | UnsetType = UNSET
    exit_code: int | UnsetType = UNSET
    config_digest: str | None | UnsetType = UNSET
    files: dict[str, str] | UnsetType = UNSET
    chunks: int | None | UnsetType = UNSET
    metrics: dict[str, Finite] | UnsetType = UNSET
    failure_labels: dict[str, dict[str, int]] | UnsetType = UNSET
    score_sha256: str | UnsetType = UNSET
    execution: Execution | UnsetType = UNSET


class Totals(Struct, frozen=True, kw_only=True):
    """The chunks embedded and taken from the cache over every configuration that recorded
    its execution."""

    embedded: int
    embeddings_from_cache: int


class SweepSummary(Struct, frozen=True, kw_only=True):
    configurations: int
    failed: int
    execution: Totals | UnsetType = UNSET


class SweepParameters(Struct, frozen=True, kw_only=True):
    k: list[int]
    grounding_threshold: Finite
    keep_going: bool
    cache: bool
    record_latency: bool | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class SweepDetails(Struct, frozen=True, kw_only=True):
    """The configurations in order, and the comparison reports written, by format."""

    configurations: list[Configuration]
    reports: dict[str, str]


SweepPredicate = Predicate[SweepParameters, SweepSummary, SweepDetails]
