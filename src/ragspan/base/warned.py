"""Warnings as part of the record: what a command says about its inputs is kept in its
report (``summary.warnings``), whatever ``-q`` lets through to stderr.

A warning is a ``logging`` record of the ``ragspan`` logger at level WARNING; its code and
count come with it (``log.warning(..., extra=said("eval_set_changed", 3))``), else the code
is ``warning`` and the count 1. ``recording`` collects the warnings said inside its block
(``-q`` raises the console handler's level, never the logger's, so none is lost), and
``merged`` gives them in the order first said, one entry per code: its total count and
the first message as the example.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

LOGGER = logging.getLogger("ragspan")


def said(code: str, count: int = 1) -> Mapping[str, Any]:
    """The ``extra`` of a warning: its code and how many things it is about."""
    return {"warning_code": code, "warning_count": count}


@dataclass
class Recorded:
    """The warnings said inside one ``recording`` block, in order."""

    entries: list[tuple[str, int, str]] = field(default_factory=list)

    def merged(self) -> list[tuple[str, int, str]]:
        """One ``(code, count, example)`` per code, in the order first said: the counts
        summed, the first message as the example (the report's ``summary.warnings``)."""
        merged: dict[str, tuple[str, int, str]] = {}
        for code, count, message in self.entries:
            _, total, example = merged.get(code, (code, 0, message))
            merged[code] = (code, total + count, example)
        return list(merged.values())


class _Collector(logging.Handler):
    def __init__(self, into: Recorded):
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        code = getattr(record, "warning_code", "warning")
        count = getattr(record, "warning_count", 1)
        message = " ".join(record.getMessage().split())
        self.into.entries.append((str(code), int(count), message))


@contextmanager
def recording() -> Iterator[Recorded]:
    """Collect the ``ragspan`` logger's warnings said inside the block (the logger let
    down to WARNING for its length if it was set higher; its handlers keep their own
    levels)."""
    got = Recorded()
    handler = _Collector(got)
    previous = LOGGER.level
    if LOGGER.getEffectiveLevel() > logging.WARNING:
        LOGGER.setLevel(logging.WARNING)
    LOGGER.addHandler(handler)
    try:
        yield got
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(previous)
