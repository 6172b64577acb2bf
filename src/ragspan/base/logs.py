"""Logging to stderr, as text or JSON lines; never into a report.

A command's log lines are held until it ends: printed when it succeeds (or finds a
regression), dropped when it fails with an error, so a failing command prints exactly one
line. ``--verbose`` prints every line as it happens. Warnings of the libraries ragspan uses
(``warnings.warn``, pypdf's logger) go through the same handler instead of printing raw.
"""

from __future__ import annotations

import json
import logging
import sys

LOGGER = logging.getLogger("ragspan")
LIBRARY_LOGGERS = ("py.warnings", "pypdf")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()},
            sort_keys=True,
        )


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = " ".join(record.getMessage().split())  # one line, whatever the library wrote
        if record.name == "ragspan":
            return f"ragspan: {message}"
        return f"ragspan: {record.levelname.lower()}: {record.name.split('.')[0]}: {message}"


class HeldHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Holds records until ``print_held`` or ``drop_held``; ``hold=False`` prints at once.
    (``release``/``acquire`` are the lock's methods of ``logging.Handler``: not ours.)"""

    def __init__(self, hold: bool):
        super().__init__(sys.stderr)
        self.hold = hold
        self.held: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.hold:
            self.held.append(record)
        else:
            self.stream = sys.stderr
            super().emit(record)

    def print_held(self) -> None:
        held, self.held = self.held, []
        self.stream = sys.stderr
        for record in held:
            super().emit(record)

    def drop_held(self) -> None:
        self.held = []


_handler: HeldHandler | None = None


def configure(verbose: bool = False, quiet: bool = False, fmt: str = "text") -> None:
    """``--verbose`` -> DEBUG, printed at once; ``--quiet`` -> ERROR only; else INFO, held."""
    global _handler
    level = logging.DEBUG if verbose else logging.ERROR if quiet else logging.INFO
    _handler = HeldHandler(hold=not verbose)
    _handler.setFormatter(_JsonFormatter() if fmt == "json" else _TextFormatter())
    # -q quiets the console, not the record: warnings still reach a report's
    # summary.warnings (``base.warned``), so the logger keeps WARNING and the handler filters
    _handler.setLevel(level)
    logging.captureWarnings(True)
    for name in ("ragspan", *LIBRARY_LOGGERS):
        logger = logging.getLogger(name)
        logger.handlers[:] = [_handler]
        logger.propagate = False
        logger.setLevel(min(level, logging.WARNING) if name == "ragspan"
                        else max(level, logging.WARNING))


def release() -> None:
    """Print the held lines (the command ended without an error)."""
    if _handler is not None:
        _handler.print_held()


def drop() -> None:
    """Forget the held lines (the command ends with its one error line)."""
    if _handler is not None:
        _handler.drop_held()
