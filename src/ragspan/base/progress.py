"""Progress of long stages on stderr (chunking, embedding, querying, placing texts, a sweep's
configurations), unless logging is quiet (``-q``):

- stderr a terminal: a tqdm bar per stage with its rate and time left (a plain bar line
  when tqdm is not installed);
- stderr a file or a pipe (a CI log): a line every ``INTERVAL`` seconds per stage with the
  count, the share done, the rate and the time left, and one line when a stage that took
  that long ends. ``RAGSPAN_PROGRESS_SECONDS`` sets the interval (0: every call).

Progress lines go to stderr at once: they are not log records, which a command holds until
it ends (``base.logs``).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

INTERVAL = 15.0  # seconds between two lines of a stage when stderr is not a terminal


def _interval() -> float:
    raw = os.environ.get("RAGSPAN_PROGRESS_SECONDS", "")
    try:
        return max(0.0, float(raw)) if raw else INTERVAL
    except ValueError:
        return INTERVAL


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Call ``progress(stage, done, total)`` as work advances; ``enabled`` None: on unless
    logging is quiet; ``terminal`` None: stderr's own ``isatty``."""

    def __init__(self, enabled: bool | None = None, terminal: bool | None = None):
        if enabled is None:
            enabled = logging.getLogger("ragspan").level <= logging.INFO
        self.enabled = enabled
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self.interval = _interval()
        self._last = 0.0
        self._bar: Any = None
        self._what: str | None = None
        self._started = 0.0  # line mode: when the current stage began
        self._said = 0.0  # line mode: when its last line was written
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self._tqdm = tqdm

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if not self.terminal:
            self._line(what, done, total)
        elif self._tqdm is not None:
            self._with_tqdm(what, done, total)
        else:
            self._plain_bar(what, done, total)

    def _line(self, what: str, done: int, total: int) -> None:
        """A CI log: a line every ``interval`` seconds, and one at the end of a long stage."""
        now = time.monotonic()
        if what != self._what or done <= 0:
            self._what, self._started, self._said = what, now, now
        elapsed = now - self._started
        if done >= total:
            if elapsed >= self.interval:
                sys.stderr.write(f"ragspan: {what}: {total:,} done in {_duration(elapsed)}\n")
                sys.stderr.flush()
            self._what = None
            return
        if now - self._said < self.interval:
            return
        self._said = now
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else 0.0
        sys.stderr.write(f"ragspan: {what}: {done:,}/{total:,} ({100 * done / max(total, 1):.0f}%), "
                         f"{rate:,.1f}/s, about {_duration(left)} left\n")
        sys.stderr.flush()

    def _plain_bar(self, what: str, done: int, total: int) -> None:
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
