"""Canonical JSON: the one serialiser for every byte ragspan hashes or writes.

Keys sorted, separators ``,`` and ``:`` with no spaces, UTF-8 (non-ASCII kept as is), NaN and
Infinity refused, one trailing newline. Floats are written as Python's ``repr`` (the shortest
text that reads back to the same double); integral values stay integers; numpy scalars and
arrays become plain values, tuples lists. The same value therefore gives the same bytes.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _plain(value: Any) -> Any:
    """Turn numpy scalars/arrays and tuples into plain JSON values; refuse non-finite floats."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _plain(value.tolist())
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value} cannot be written to a report")
        return float(value)
    raise TypeError(f"cannot write {type(value).__name__} to a report")


CONTAINERS = (dict, list, tuple)


def string_keys(obj: Any) -> bool:
    """Whether every key of every dict inside ``obj`` is a string (then the C encoder sorts
    keys exactly as the walk does; an integer key would sort as a number there)."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key, value in item.items():
                if type(key) is not str:
                    return False
                if type(value) in CONTAINERS:
                    stack.append(value)
        elif type(item) in (list, tuple):
            stack.extend(v for v in item if type(v) in CONTAINERS)
    return True


def _numpy(value: Any) -> Any:
    """``json.dumps``'s hook: numpy scalars and arrays as plain values; else TypeError."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to a report")


def canonical_dumps(obj: Any, keys_checked: bool = False) -> str:
    """``obj`` as canonical JSON text (see the module docstring). ``keys_checked``: the
    caller has seen that every key inside ``obj`` is a ``str`` (the walk is skipped)."""
    if keys_checked or string_keys(obj):  # the C encoder on the value as it is
        try:
            return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False, default=_numpy) + "\n"
        except (TypeError, ValueError):
            pass  # a value JSON cannot hold, or not finite: the exact walk says which
    return json.dumps(
        _plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ) + "\n"
