"""``leakage`` and ``overlap`` reports as typed records: the leaks (an item's text found in a
corpus document) and the duplicate pairs (a document of one corpus found in another), their
summaries, parameters and predicates. The core builds them by keyword
(``contamination.leakage``, ``contamination.overlap``); ``records.envelope`` writes and reads
them."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate


class Passage(Struct, frozen=True, kw_only=True):
    """Where a leak sits in its document: the longest shared run of words (exact) or the
    chunk (embedding), its first 300 characters; empty when no run of words is shared."""

    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET
    words: int | UnsetType = UNSET
    text: str | UnsetType = UNSET


class Leak(Struct, frozen=True, kw_only=True):
    """An item's text (``field``; ``gold_span``: which gold span or answer) found in
    ``document``: by containment of its word n-grams (exact: ``containment``, ``words``,
    ``documents_over_threshold``) or by cosine similarity (embedding: ``similarity``)."""

    id: str
    field: str
    document: str
    passage: Passage
    containment: Finite | UnsetType = UNSET
    words: int | UnsetType = UNSET
    documents_over_threshold: int | UnsetType = UNSET
    similarity: Finite | UnsetType = UNSET
    gold_span: int | UnsetType = UNSET


class LeakageSummary(Struct, frozen=True, kw_only=True):
    items: int
    texts_checked: int
    documents: int
    leaking_items: int
    findings_by_field: dict[str, int]
    max_leaks: int
    vocabulary: int | UnsetType = UNSET  # exact
    chunks: int | UnsetType = UNSET  # embedding
    items_without_field: dict[str, int] | UnsetType = UNSET


class LeakageParameters(Struct, frozen=True, kw_only=True):
    method: Literal["exact", "embedding"]
    fields: list[str]
    max_records: int
    ngram: int | UnsetType = UNSET
    threshold: Finite | UnsetType = UNSET
    similarity: Finite | UnsetType = UNSET
    model: str | UnsetType = UNSET
    chunk_size: int | UnsetType = UNSET
    approximate: bool | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class LeakageDetails(Struct, frozen=True):
    leaks: list[Leak]


LeakagePredicate = Predicate[LeakageParameters, LeakageSummary, LeakageDetails]


class Pair(Struct, frozen=True):
    """A document of corpus ``a`` and one of ``b`` whose texts are equal (exact) or whose
    shingle sets' Jaccard similarity is at least the threshold (minhash)."""

    a: str
    b: str
    jaccard: Finite


class MinHash(Struct, frozen=True, kw_only=True):
    """MinHash's banding and how many candidate pairs it verified."""

    bands: int
    rows: int
    permutations: int
    miss_probability_at_threshold: Finite
    candidates_verified: int


class OverlapSummary(Struct, frozen=True, kw_only=True):
    documents_a: int
    documents_b: int
    duplicate_pairs: int
    documents_a_duplicated: int
    max_duplicates: int
    miss_probability_at_threshold: Finite | UnsetType = UNSET


class OverlapParameters(Struct, frozen=True, kw_only=True):
    method: Literal["exact", "minhash"]
    max_records: int
    threshold: Finite | UnsetType = UNSET
    shingle_words: int | UnsetType = UNSET
    bands: int | UnsetType = UNSET
    rows: int | UnsetType = UNSET
    permutations: int | UnsetType = UNSET
    miss_probability_at_threshold: Finite | UnsetType = UNSET
    candidates_verified: int | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class OverlapDetails(Struct, frozen=True):
    pairs: list[Pair]


OverlapPredicate = Predicate[OverlapParameters, OverlapSummary, OverlapDetails]
