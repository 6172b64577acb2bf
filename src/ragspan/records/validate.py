"""A ``validate`` report as typed records: its findings, its summary (the counts, the span
integrity of a chunking and its diagnostics, shared with ``score --chunks``), its details
and parameters, and the predicate that holds them. The core builds these by keyword;
``records.envelope.encode`` writes them, ``records.envelope.decode`` reads a report back
into them (docs/report-envelope.md)."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate
from ragspan.records.score_facts import ChunkRecall

Severity = Literal["error", "warning"]


class Finding(Struct, frozen=True):
    """One finding: the check that made it, error or warning, the query it names (None for
    one about the whole set) and what it found."""

    check: str
    severity: Severity
    query: str | None
    message: str


class Distribution(Struct, frozen=True):
    """A distribution in four numbers."""

    mean: Finite
    median: Finite
    p90: Finite
    max: Finite


class SpanIntegrity(Struct, frozen=True):
    """The coverage counts of a chunking: gold spans, those one chunk contains whole, the
    contained share (1.0 with no gold span) and those no set of chunks covers to tau."""

    gold_spans: int
    contained_whole: int
    span_integrity: Finite
    unreachable_spans: int


class TokenCheck(Struct, frozen=True):
    """Chunks longer than the pipeline's embedding model reads: counted with its tokenizer
    (``checked``), or why not."""

    model: str
    checked: bool
    why: str | UnsetType = UNSET
    token_limit: int | UnsetType = UNSET
    chunks_over_limit: int | UnsetType = UNSET
    longest_chunk_tokens: int | UnsetType = UNSET


class ChunkingDiagnostics(Struct, frozen=True):
    """What a chunking allows before any retriever runs (``scoring.chunking``); per count
    cutoff (keys ``"5"``...) the precision ceiling and, with a run, what it attained."""

    chunks: int
    chunk_chars: Distribution
    relevant_chunks_per_query: Distribution
    queries_without_a_relevant_chunk: int
    precision_ceiling: dict[str, Finite]
    precision_attained: dict[str, Finite] | UnsetType = UNSET
    precision_share_of_ceiling: dict[str, Finite] | UnsetType = UNSET
    tokens: TokenCheck | UnsetType = UNSET


class ScoreChunking(ChunkingDiagnostics, frozen=True, kw_only=True):
    """``summary.chunking`` of ``score --chunks``: the chunking's diagnostics with the run's
    attained precision, its span integrity counts (``SpanIntegrity``'s), chunk-level recall
    and nDCG (``ChunkRecall``) and, with Chroma's metrics, its oracle IoU
    (``precision_omega``). The share of the ceiling attained is always there (a score has a
    run)."""

    gold_spans: int
    contained_whole: int
    span_integrity: Finite
    unreachable_spans: int
    precision_share_of_ceiling: dict[str, Finite]
    chunk_recall: ChunkRecall | UnsetType = UNSET
    precision_omega: Finite | UnsetType = UNSET


class ValidateSummary(Struct, frozen=True, kw_only=True):
    queries: int
    gold_spans: int
    errors: int
    warnings: int
    findings_by_check: dict[str, int]
    facts: int | UnsetType = UNSET
    cross_references: int | UnsetType = UNSET
    coverage: SpanIntegrity | UnsetType = UNSET
    chunking: ChunkingDiagnostics | UnsetType = UNSET


class ValidateDetails(Struct, frozen=True):
    """The findings listed (the first ``app.validate.MAX_LISTED``) and how many."""

    findings: list[Finding]
    findings_listed: int


class ValidateParameters(Struct, frozen=True, kw_only=True):
    grounding_threshold: Finite
    min_span_integrity: Finite | UnsetType = UNSET
    k: list[int] | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


ValidatePredicate = Predicate[ValidateParameters, ValidateSummary, ValidateDetails]


def tally(findings: list[Finding]) -> tuple[int, int, dict[str, int]]:
    """Errors, warnings and findings per check (sorted by check name)."""
    errors = sum(1 for f in findings if f.severity == "error")
    by_check: dict[str, int] = {}
    for f in findings:
        by_check[f.check] = by_check.get(f.check, 0) + 1
    return errors, len(findings) - errors, dict(sorted(by_check.items()))
