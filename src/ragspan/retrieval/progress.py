"""A progress line on stderr, only when stderr is a terminal and logging is not quiet."""

from __future__ import annotations

import logging
import sys
import time


class Progress:
    def __init__(self, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and logging.getLogger("ragspan").level <= logging.INFO
        self.enabled = enabled
        self._last = 0.0

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{what:<10} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
