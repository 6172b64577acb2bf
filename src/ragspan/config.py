"""``[tool.ragspan]`` in ``pyproject.toml``: gate settings a project keeps under version control.

    [tool.ragspan]
    alpha = 0.05
    gate-slices = ["category"]

    [tool.ragspan.budgets]
    complete_grounding = "2pt"
    span_coverage = "off"

The keys, their types, ranges and defaults are declared once in ``ragspan.options``
(``GATE_OPTIONS``; the table in docs/gate.md is generated from it). The command line wins
over the file, the file over the default.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ragspan.errors import InputError, UsageError
from ragspan.options import GATE_OPTIONS, MAX_CONFIG_DEPTH, check_table

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


def parse_toml(text: str, name: str) -> dict[str, Any]:
    """``text`` parsed as TOML; invalid TOML, or tables and arrays nested deeper than
    ``MAX_CONFIG_DEPTH`` (which would also exhaust the parser's recursion), is an
    InputError naming ``name``. The nesting is measured on the text before parsing."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    deep = _max_bracket_depth(text)
    if deep > MAX_CONFIG_DEPTH:
        raise InputError(f"TOML nested {deep} levels deep (at most {MAX_CONFIG_DEPTH})", name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", name) from None
    except RecursionError:
        raise InputError(f"TOML nested too deeply (at most {MAX_CONFIG_DEPTH} levels)",
                         name) from None
    depth = _value_depth(data)
    if depth > MAX_CONFIG_DEPTH:
        raise InputError(f"TOML nested {depth} levels deep (at most {MAX_CONFIG_DEPTH})", name)
    return data


def _max_bracket_depth(text: str) -> int:
    """The deepest run of ``[``/``{`` opened and not yet closed outside quoted strings (a
    string ends at its quote or the line's end): at least the inline nesting of arrays and
    inline tables, which is what drives the parser's recursion, so a crafted file is refused
    before the parser sees it. Dotted keys and table headers are measured after parsing."""
    depth = deepest = 0
    quote = ""
    for ch in text:
        if quote:
            if ch == quote or ch == "\n":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _value_depth(value: Any) -> int:
    """Nesting depth of parsed TOML (tables and arrays), iteratively."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        else:
            continue
        deepest = max(deepest, depth)
    return deepest


def load_tool_config(path: str | None) -> tuple[dict[str, Any], str | None]:
    """Return ``(settings, path)``: the ``[tool.ragspan]`` keys present, type-checked and by
    their Python names (``budget_tolerance``), budgets parsed; ``path=None`` uses the
    nearest pyproject.toml (``find_config``), and returns its path even when it has no
    ``[tool.ragspan]`` section (the verdict says which file was read). Any key of the wrong
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
    import os

    from ragspan.io.files import decode_records, read_bytes

    name = str(file) if path else os.path.relpath(file)
    data = parse_toml(decode_records(read_bytes(file), name), name)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError("'tool' must be a table", name)
    table = tool.get("ragspan", {})
    if not isinstance(table, dict):
        raise InputError(f"{SECTION} must be a table", name)
    settings = check_table(table, GATE_OPTIONS, name, SECTION)
    if "budgets" in settings:
        settings["budgets"] = parse_budget_table(settings["budgets"], name)
    return settings, name


def parse_budget_table(table: dict[str, Any], path: str) -> dict[str, Any]:
    """``[tool.ragspan.budgets]``: METRIC = "2pt" | "2%" | "off"; an error names the key."""
    from ragspan.budgets import parse_budget

    out = {}
    for key, value in table.items():
        if not isinstance(value, str):
            raise InputError(f"{SECTION}.budgets {key}: expected a string such as \"2pt\", "
                             f"got {value!r}", path)
        try:
            metric, budget = parse_budget(f"{key}={value}")
        except UsageError as exc:
            raise InputError(f"{SECTION}.budgets {key}: {exc}", path) from None
        out[metric] = budget
    return out
