"""A ``migrate`` report as typed records: every gold span's status on the edited corpus,
every question's fate, the documents added, removed and changed, their counts, and the
predicate that holds them (``app.migrate`` builds them by keyword; ``records.envelope``
writes and reads them)."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate

Status = Literal["unchanged", "moved", "edited", "deleted", "ambiguous"]
Fate = Literal["kept", "set_aside", "dropped"]


class SpanMove(Struct, frozen=True, kw_only=True):
    """A gold span of question ``query_id``: where it was (``old``), where it is (``new``;
    None when it has no place), its status, the similarity of the text found there and why
    it has no place."""

    query_id: str
    doc_id: str
    old: list[int]
    new: list[int] | None
    status: Status
    similarity: Finite | None
    reason: str | UnsetType = UNSET


class QuestionFate(Struct, frozen=True, kw_only=True):
    """A question set aside or dropped, and why."""

    id: str
    fate: Fate
    reason: str | UnsetType = UNSET


class DocumentChanges(Struct, frozen=True):
    added: list[str]
    removed: list[str]
    changed: list[str]


class SpanCounts(Struct, frozen=True):
    unchanged: int
    moved: int
    edited: int
    deleted: int
    ambiguous: int


class QuestionCounts(Struct, frozen=True):
    total: int
    kept: int
    set_aside: int
    dropped: int


class DocumentCounts(Struct, frozen=True):
    added: int
    removed: int
    changed: int


class MigrateSummary(Struct, frozen=True, kw_only=True):
    spans: SpanCounts
    questions: QuestionCounts
    documents: DocumentCounts
    content_sha256: str


class MigrateParameters(Struct, frozen=True, kw_only=True):
    keep_edited: bool
    threshold: Finite
    argv: list[str] | UnsetType = UNSET


class MigrateDetails(Struct, frozen=True, kw_only=True):
    spans: list[SpanMove]
    questions: list[QuestionFate]
    documents: DocumentChanges


MigratePredicate = Predicate[MigrateParameters, MigrateSummary, MigrateDetails]
