"""What building an eval set reports (``adapt``; the merges every importer lists), as typed
records: the overlapping gold spans merged into their union, the ids derived for rows
without one, the files taken in and left out, the counts, and the ``adapt`` report's
predicate (``evalsets.adapt`` builds them by keyword)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Predicate


class Merge(Struct, frozen=True, kw_only=True):
    """One question's overlapping gold spans of a document (``spans``, ``[start, end]``
    each) replaced by their union (``into``)."""

    query: str
    doc_id: str
    spans: list[list[int]]
    into: list[int]


class DerivedId(Struct, frozen=True):
    """The id derived for the row at ``line``, which had none."""

    line: int
    id: str


class Files(Struct, frozen=True):
    """The files of a documents folder taken in as documents and those left out."""

    taken: list[str]
    left_out: list[str]


class AdaptSummary(Struct, kw_only=True):
    """The counts of an ``adapt`` run, filled in as the rows are read: gold spans, those
    listed twice in a row, those merged into a union, the rows by way of giving their gold
    (``via_gold_spans``, ``via_gold_texts``, ``via_expected``), the fields kept as tags (by
    key), the ids derived, the documents and, for a folder, its files."""

    queries: int = 0
    documents: int = 0
    spans: int = 0
    duplicate_spans: int = 0
    overlapping_merged: int = 0
    via_gold_spans: int = 0
    via_gold_texts: int = 0
    via_expected: int = 0
    derived_ids: int = 0
    kept_as_tags: dict[str, int] | UnsetType = UNSET
    files_taken: int | UnsetType = UNSET
    files_left_out: int | UnsetType = UNSET


class AdaptDetails(Struct, frozen=True, kw_only=True):
    overlapping_merged: list[Merge]
    derived_ids: list[DerivedId]
    files: Files | UnsetType = UNSET


class AdaptParameters(Struct, frozen=True, kw_only=True):
    normalize_whitespace: bool
    max_docs: int
    max_bytes: int
    include: list[str]
    exclude: list[str]
    argv: list[str] | UnsetType = UNSET


AdaptPredicate = Predicate[AdaptParameters, AdaptSummary, AdaptDetails]
