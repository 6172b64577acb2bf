"""How a message names a setting: as the surface the user called spells it.

The core speaks of settings by their keys (``anchor-budget``, ``allow-budget-change``, the
declared options' keys). ``setting`` renders one as the command line writes it
(``--anchor-budget 5pt``) or, inside a Python API call (``python_terms``), as that call takes
it (``anchor_budget="5pt"``), so an API caller is never told about a flag it did not type.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

_SURFACE: ContextVar[str] = ContextVar("ragspan_surface", default="cli")
# keys whose Python spelling is not the key with "_" for "-"
_PYTHON_NAMES = {"budget": "budgets", "pr-label": "pr_labels"}
# keys whose Action input is not the flag's name (action.yml)
_ACTION_NAMES = {"budget": "budgets", "pr-label": "pr-labels"}


def surface() -> str:
    """The surface the user called: ``cli``, ``python`` or ``action`` (the GitHub Action,
    which runs the command line and says so)."""
    return _SURFACE.get()


def setting(key: str, value: object = None) -> str:
    """The setting ``key`` (with ``value``: True for a flag that is set, a list for a
    repeated option, ``METRIC=VALUE`` for a budget) as the current surface spells it."""
    if _SURFACE.get() == "action":  # the Action's inputs, as a workflow's `with:` spells them
        name = _ACTION_NAMES.get(key, key)
        if value is None or value is True:
            return f"the input '{name}'" if value is None else f"the input '{name}: true'"
        if isinstance(value, (list, tuple)):
            return f"the input '{name}: {', '.join(map(str, value))}'"
        return f"the input '{name}: {value}'"
    if _SURFACE.get() == "cli":
        if value is None or value is True:
            return f"--{key}"
        if isinstance(value, (list, tuple)):
            return " ".join(f"--{key} {v}" for v in value)
        return f"--{key} {value}"
    if key.startswith("no-") and value is True:  # a negative flag is the option set False
        return f"{key[3:].replace('-', '_')}=False"
    name = _PYTHON_NAMES.get(key, key.replace("-", "_"))
    if value is None:
        return name
    if key == "budget" and isinstance(value, str) and "=" in value:
        metric, spec = value.split("=", 1)
        return f"{name}={{{json.dumps(metric)}: {json.dumps(spec)}}}"
    if isinstance(value, (list, tuple)):
        return f"{name}={json.dumps(list(value))}"
    return f"{name}={json.dumps(value) if isinstance(value, str) else value}"


@contextmanager
def speaking(surface: str) -> Iterator[None]:
    """Messages inside name settings as ``surface`` (``cli`` or ``python``) spells them."""
    token = _SURFACE.set(surface)
    try:
        yield
    finally:
        _SURFACE.reset(token)


def python_terms(func: F) -> F:
    """``func`` (a Python API entry point) with its messages in the API's terms."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with speaking("python"):
            return func(*args, **kwargs)

    return cast(F, wrapper)
