"""Progress on stderr, only when stderr is a terminal and logging is not quiet: a tqdm bar
per stage (chunking, embedding, querying) with its rate and time left, or a plain line when
tqdm is not installed."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any


class Progress:
    def __init__(self, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and logging.getLogger("ragspan").level <= logging.INFO
        self.enabled = enabled
        self._last = 0.0
        self._bar: Any = None
        self._what: str | None = None
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self._tqdm = tqdm

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._with_tqdm(what, done, total)
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

    def _with_tqdm(self, what: str, done: int, total: int) -> None:
        if self._bar is None or self._what != what or self._bar.total != total:
            self.close()
            self._bar = self._tqdm(total=total, desc=what, file=sys.stderr, leave=True,
                                   dynamic_ncols=True, mininterval=0.1)
            self._what = what
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._what = None
