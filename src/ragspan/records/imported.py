"""The ``import`` report (a benchmark or a trace export turned into an eval set or a run)
as typed records. Each importer tallies what it met as it reads (its counts stay a plain
map inside the importer: JSON at the boundary, one key per thing counted); the command
turns the tally into ``ImportSummary`` (``importing``), which names every count any
importer keeps and refuses one it does not name, so a new count is added here, typed, or
the command fails in the tests that run it."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate
from ragspan.records.evalbuild import Merge
from ragspan.records.score_facts import Count


class ImportParameters(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """What was imported (``source``) and how: the benchmark's own choices (CUAD's
    exclusions and digest check, LegalBench-RAG's subsets, sampling and newlines, BEIR's
    split), the placement rule of texts (RAGAS, traces), the trace attributes read."""

    source: str
    split: str | UnsetType = UNSET
    subsets: list[str] | UnsetType = UNSET
    paper_sampling: bool | UnsetType = UNSET
    newlines: str | UnsetType = UNSET
    exclude_cross_references: bool | UnsetType = UNSET
    exclude_metadata_clauses: bool | UnsetType = UNSET
    expect_sha256: str | UnsetType = UNSET
    expect_sha256_covers: list[str] | UnsetType = UNSET
    expect_sha256_does_not_cover: list[str] | UnsetType = UNSET
    sample_docs: int | UnsetType = UNSET
    sample_queries: int | UnsetType = UNSET
    seed: int | UnsetType = UNSET
    on_ambiguous: str | UnsetType = UNSET
    threshold: Finite | UnsetType = UNSET
    query_id_attribute: str | UnsetType = UNSET
    doc_key: str | UnsetType = UNSET
    offset_key: str | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class ImportSummary(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The queries written and every count an importer keeps (each importer its own; one
    it did not keep is left out), the fields kept as tags (by key), the trace export's
    shape and the notes said about it."""

    queries: Count
    ambiguous_first: Count | UnsetType = UNSET
    ambiguous_pieces: Count | UnsetType = UNSET
    cross_reference_skipped: Count | UnsetType = UNSET
    doc_ids_from_paths: Count | UnsetType = UNSET
    documents: Count | UnsetType = UNSET
    duplicate_answers: Count | UnsetType = UNSET
    duplicate_pieces: Count | UnsetType = UNSET
    duplicate_references: Count | UnsetType = UNSET
    duplicate_spans: Count | UnsetType = UNSET
    empty_pieces: Count | UnsetType = UNSET
    impossible_skipped: Count | UnsetType = UNSET
    judgments: Count | UnsetType = UNSET
    metadata_skipped: Count | UnsetType = UNSET
    missing_contracts: Count | UnsetType = UNSET
    nested_calls_folded: Count | UnsetType = UNSET
    offsets_disagreed: Count | UnsetType = UNSET
    overlapping_merged: Count | UnsetType = UNSET
    pieces: Count | UnsetType = UNSET
    placed_by_chunk_id: Count | UnsetType = UNSET
    placed_by_document_id: Count | UnsetType = UNSET
    placed_by_offsets: Count | UnsetType = UNSET
    placed_exact: Count | UnsetType = UNSET
    placed_fuzzy: Count | UnsetType = UNSET
    placed_normalized: Count | UnsetType = UNSET
    queries_before_sampling: Count | UnsetType = UNSET
    queries_in_file: Count | UnsetType = UNSET
    queries_without_unique_piece: Count | UnsetType = UNSET
    questions: Count | UnsetType = UNSET
    questions_with_a_trace: Count | UnsetType = UNSET
    questions_without_a_trace: Count | UnsetType = UNSET
    reference_contexts_exact: Count | UnsetType = UNSET
    references: Count | UnsetType = UNSET
    reranked_steps: Count | UnsetType = UNSET
    rerankers_inside_a_retriever: Count | UnsetType = UNSET
    rerankers_without_a_step: Count | UnsetType = UNSET
    retrieved_contexts_exact: Count | UnsetType = UNSET
    rows: Count | UnsetType = UNSET
    selected: Count | UnsetType = UNSET
    spans: Count | UnsetType = UNSET
    spans_before_sampling: Count | UnsetType = UNSET
    steps: Count | UnsetType = UNSET
    tests: Count | UnsetType = UNSET
    traces: Count | UnsetType = UNSET
    traces_without_a_question: Count | UnsetType = UNSET
    kept_as_tags: dict[str, Count] | UnsetType = UNSET
    shape: str | UnsetType = UNSET
    notes: list[str] | UnsetType = UNSET


class AmbiguousPiece(Struct, frozen=True, kw_only=True):
    """A CUAD answer piece found several times in its contract: where, in which category,
    how many times."""

    doc_id: str
    category: str
    text: str
    occurrences: Count


class ImportDetails(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """What an importer lists beside its counts: ambiguous pieces, contracts missing, the
    overlapping gold spans merged, the questions and traces that found no partner."""

    ambiguous_pieces: list[AmbiguousPiece] | UnsetType = UNSET
    missing_contracts: list[str] | UnsetType = UNSET
    overlapping_merged: list[Merge] | UnsetType = UNSET
    questions_without_a_trace: list[str] | UnsetType = UNSET
    traces_without_a_question: list[str] | UnsetType = UNSET


ImportPredicate = Predicate[ImportParameters, ImportSummary, ImportDetails]


def importing(parameters: object, summary: object, details: object
              ) -> tuple[ImportParameters, ImportSummary, ImportDetails]:
    """An importer's parameters, tally and lists as the report's records; a key no record
    names is ``msgspec.ValidationError`` (a count added without its field: a bug)."""
    return (msgspec.convert(parameters, ImportParameters),
            msgspec.convert(summary, ImportSummary),
            msgspec.convert(details, ImportDetails))
