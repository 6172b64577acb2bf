"""The report a failed command leaves where its JSON report goes (kind ``error``), as typed
records: the command, the message, and the file and line it names (``app.output``)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Predicate


class ErrorSummary(Struct, frozen=True, kw_only=True):
    """What failed: the command, the error (an input error's reason, without its file and
    line), the file and line it names (None where it names none) and the whole message."""

    command: str
    error: str
    file: str | None
    line: int | None
    message: str


class ErrorParameters(Struct, frozen=True, kw_only=True):
    command: str
    argv: list[str] | UnsetType = UNSET


class ErrorDetails(Struct, frozen=True):
    """Nothing: an error report has no per-item detail."""


ErrorPredicate = Predicate[ErrorParameters, ErrorSummary, ErrorDetails]
