"""``[tool.ragspan]`` in ``pyproject.toml``: gate settings a project keeps under version control.

Keys (all optional; the command line wins over each):

    [tool.ragspan]
    alpha = 0.05
    mode = "threshold"            # or "non-inferiority"
    test = "randomization"        # or "t-test"
    permutations = 10000
    seed = 0
    correction = "none"           # or "holm"
    budget-tolerance = 0.10
    gate-slices = ["category"]
    min-slice-size = 10
    primary-metric = "complete_grounding@5"

    [tool.ragspan.budgets]
    complete_grounding = "2pt"
    span_coverage = "off"
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ragspan.errors import InputError

KEYS = {"alpha", "mode", "test", "permutations", "seed", "correction", "budget-tolerance",
        "gate-slices", "min-slice-size", "primary-metric", "budgets", "allow-budget-change",
        "bootstrap", "top"}


def load_tool_config(path: str | None) -> tuple[dict[str, Any], str | None]:
    """Return ``([tool.ragspan] table, path)``; ``path=None`` looks for ./pyproject.toml."""
    file = Path(path) if path else Path("pyproject.toml")
    if not file.is_file():
        if path:
            raise InputError("config file not found", path)
        return {}, None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid TOML: {exc}", str(file)) from None
    table = data.get("tool", {}).get("ragspan", {})
    if not isinstance(table, dict):
        raise InputError("[tool.ragspan] must be a table", str(file))
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise InputError(f"unknown [tool.ragspan] key(s): {', '.join(unknown)}", str(file))
    return table, str(file)
