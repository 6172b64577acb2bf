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


class AnchorDigests(Struct, frozen=True, kw_only=True):
    """What an eval set records of the text a gold span was made on (``io.span_anchors``):
    the first 16 hex digits of the sha256 of the span's text, of the ``context`` characters
    before it and of those after it."""

    text: str
    before: str
    after: str
    context: int


class SpanText(Struct, kw_only=True):
    """A span of a corpus document as ragspan writes it: the document, the offsets and the
    text they slice."""

    doc_id: str
    start: int
    end: int
    text: str


class BuiltSpan(SpanText, kw_only=True):
    """A gold span as a built eval set writes it, with (once written) its anchor."""

    anchor: AnchorDigests | UnsetType = UNSET


class BuiltRow(Struct, kw_only=True):
    """One question of a built eval set (``adapt`` and the importers), in the order its
    keys are written. ``tags``, ``filters``, ``relevant_ids`` and ``relevance`` of an ``adapt``
    row are the user's values passed through as they were given (``io.evalset`` checks them
    when the eval set is read; tags are read as strings), with its unknown fields added to
    its tags; a BEIR row's ``relevance`` is its judgments."""

    id: str
    query: str
    doc_id: str | UnsetType = UNSET
    gold_spans: list[BuiltSpan] | UnsetType = UNSET
    match: str | UnsetType = UNSET
    tags: dict[str, object] | None | UnsetType = UNSET
    filters: object = UNSET
    relevant_ids: object = UNSET
    relevance: object = UNSET

    def spans(self) -> list[BuiltSpan]:
        """The gold spans (none for a row judged by documents)."""
        return [] if isinstance(self.gold_spans, UnsetType) else self.gold_spans



class SquadRow(Struct, kw_only=True):
    """A question of CUAD's SQuAD-style release as its importer writes it (its ``filters``
    before its ``tags``, which it has when its id names a category)."""

    id: str
    query: str
    doc_id: str
    gold_spans: list[BuiltSpan]
    filters: dict[str, str]
    tags: dict[str, str] | UnsetType = UNSET

    def spans(self) -> list[BuiltSpan]:
        return self.gold_spans
