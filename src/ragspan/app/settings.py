"""``[tool.ragspan]`` in ``pyproject.toml``: gate settings a project keeps under version control.

    [tool.ragspan]
    alpha = 0.05
    gate-slices = ["category"]

    [tool.ragspan.budgets]
    complete_grounding = "2pt"
    span_coverage = "off"

The keys, their types, ranges and defaults are declared once in ``ragspan.base.options``
(``GATE_OPTIONS``; the table in docs/gate.md is generated from it). The command line wins
over the file, the file over the default.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ragspan.base.errors import InputError, UsageError
from ragspan.base.options import GATE_OPTIONS, check_table
from ragspan.gate.budgets import parse_budget
from ragspan.io.files import decode_records, read_bytes
from ragspan.io.toml import parse_toml

log = logging.getLogger("ragspan")

SECTION = "[tool.ragspan]"


def find_config(start: Path | None = None) -> Path | None:
    """The ``pyproject.toml`` that configures a command run in ``start`` (default the
    working directory): the nearest one in it or a parent directory, as pytest, ruff and
    coverage find theirs. None when there is none up to the filesystem root."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_tool_config(path: str | None) -> tuple[dict[str, Any], str | None]:
    """Return ``(settings, path)``: the ``[tool.ragspan]`` keys present, type-checked and by
    their Python names (``budget_tolerance``), budgets parsed; ``path=None`` uses the
    nearest pyproject.toml (``find_config``). The path returned is None when no file
    applies: none was found, or it has no ``[tool.ragspan]`` table (the verdict names a file
    only when settings came from it; a ``--config`` without the table draws a warning). Any key of the wrong
    type or range, or an unknown key, is an InputError naming the file and key."""
    if path:
        file = Path(path)
        if not file.is_file():
            raise InputError("config file not found", path)
    else:
        found = find_config()
        if found is None:
            return {}, None
        file = found
    name = str(file) if path else os.path.relpath(file)
    data = parse_toml(decode_records(read_bytes(file), name), name)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError("'tool' must be a table", name)
    if "ragspan" not in tool:  # nothing of it applies: no "settings from" a file
        if path:
            log.warning("%s has no %s table: the defaults apply", name, SECTION)
        return {}, None
    table = tool["ragspan"]
    if not isinstance(table, dict):
        raise InputError(f"{SECTION} must be a table", name)
    settings = check_table(table, GATE_OPTIONS, name, SECTION)
    if "budgets" in settings:
        settings["budgets"] = parse_budget_table(settings["budgets"], name)
    return settings, name


def parse_budget_table(table: dict[str, Any], path: str) -> dict[str, Any]:
    """``[tool.ragspan.budgets]``: METRIC = "2pt" | "2%" | "off"; an error names the key."""
    out = {}
    for key, value in table.items():
        if not isinstance(value, str):
            raise InputError(f"{SECTION}.budgets {key}: expected a string such as \"2pt\", "
                             f"got {value!r}", path)
        try:
            metric, budget = parse_budget(f"{key}={value}", named=False)
        except UsageError as exc:
            raise InputError(f"{SECTION}.budgets {key}: {exc}", path) from None
        out[metric] = budget
    return out
