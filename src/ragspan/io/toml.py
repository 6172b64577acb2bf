"""TOML text parsed with a nesting limit: a crafted file is refused before the parser's
recursion can be exhausted (``MAX_CONFIG_DEPTH``, ``ragspan.base.options``)."""

from __future__ import annotations

import sys
from typing import Any

from ragspan.base.errors import InputError
from ragspan.base.options import MAX_CONFIG_DEPTH


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
    parsed: dict[str, Any] = data
    return parsed


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
