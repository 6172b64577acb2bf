"""Logging to stderr, as text or JSON lines; never into a report."""

from __future__ import annotations

import json
import logging
import sys

LOGGER = logging.getLogger("ragspan")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()},
            sort_keys=True,
        )


def configure(verbose: bool = False, quiet: bool = False, fmt: str = "text") -> None:
    """``--verbose`` -> DEBUG, ``--quiet`` -> ERROR only, else INFO."""
    level = logging.DEBUG if verbose else logging.ERROR if quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("ragspan: %(message)s"))
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level)
    LOGGER.propagate = False

