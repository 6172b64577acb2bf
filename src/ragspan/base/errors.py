"""Exception types and the exit codes they map to: the one place exit codes are defined."""

from __future__ import annotations

import enum
from typing import TypeVar


class ExitCode(enum.IntEnum):
    """Process exit codes (DESIGN.md): a finding is never confused with a crash or bad input."""

    OK = 0
    BUG = 1
    USAGE = 2
    INPUT = 3
    GATE_FAILED = 4


class RagspanError(Exception):
    """Base class; ``exit_code`` says how the CLI ends when this escapes a command."""

    exit_code: ExitCode = ExitCode.BUG


class InputError(RagspanError):
    """A file is missing, unreadable, malformed or inconsistent with another input.

    The message is one line and names the file (and the line, where there is one):
    ``path:line: what is wrong``.
    """

    exit_code = ExitCode.INPUT

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class UsageError(RagspanError):
    """Command-line arguments that cannot work together or are out of range."""

    exit_code = ExitCode.USAGE


class MissingExtraError(UsageError):
    """An optional dependency is not installed; the message carries the pip line that fixes it."""

    def __init__(self, module: str, extra: str):
        super().__init__(
            f"this needs the optional dependency '{module}': pip install 'ragspan[{extra}]'"
        )


T = TypeVar("T")


def present(value: T | None, what: str) -> T:
    """``value``, which the caller's invariant says is set; ``None`` is a bug (exit 1) naming
    ``what``, never a silent default."""
    if value is None:
        raise RagspanError(f"internal error: {what} is not set")
    return value
