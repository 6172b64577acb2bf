"""Canonical JSON: the one serialiser for every byte ragspan hashes or writes.

Keys sorted (by code point, as UTF-8 bytes sort), separators ``,`` and ``:`` with no spaces,
UTF-8 (non-ASCII kept as is; control characters, ``"`` and ``\\`` escaped as JSON requires),
NaN and Infinity refused, one trailing newline. Integral values stay integers; numpy scalars
and arrays become plain values, tuples lists.

Floats are written as their shortest text that reads back to the same double, the form
msgspec writes (format history, docs/report-envelope.md): positional from 1e-5 up to 1e16
(``0.00001``, ``123.5``, ``1234567890123456.0``), else with an exponent without sign or
leading zero for large numbers (``1e16``, ``1.5e-7``). Up to ragspan 0.1.0's development
releases floats were Python's ``repr`` (``1e-05``, ``1.5e-07``, ``1e+16``): the same values,
other bytes for those below 1e-4 and from 1e16 on. The same value gives the same bytes.

A value made of plain JSON types (``dict`` with string keys, ``list``, ``tuple``, ``str``,
``int``, finite ``float``, ``bool``, None) is encoded as it is, after one walk that checks
exactly that; anything else (a numpy value, a non-string key, a non-finite float) is made
plain first by the exact walk, which refuses what JSON cannot hold.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

INF = math.inf


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


LEAVES = frozenset((str, int, bool, type(None)))
FLOATS = {float}
BULK = 16  # a container larger than this is typed in one pass before its values are read
_isfinite = math.isfinite


def _leaf_ok(value: Any) -> bool:
    """A value that is no container: a plain JSON leaf (an int subclass counts: it is
    written as the int it is)."""
    kind = type(value)
    if kind is float:
        return _isfinite(value)
    return kind in LEAVES or (isinstance(value, int) and kind is not bool)


def is_plain(obj: Any) -> bool:
    """Whether ``obj`` is made of plain JSON values only: string keys, finite floats, no
    numpy value or other object (then ``canonical_dumps`` writes it with no conversion).
    A large container of floats only (a row's metrics) is checked in one pass."""
    stack = [obj]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            values: Any = item.values()
        elif kind is list or kind is tuple:
            values = item
        elif _leaf_ok(item):
            continue
        else:
            return False
        if len(values) > BULK and set(map(type, values)) == FLOATS:
            if not all(map(_isfinite, values)):
                return False
            continue
        for value in values:
            inner = type(value)
            if inner is float:
                if value != value or value == INF or value == -INF:
                    return False
            elif inner is dict or inner is list or inner is tuple:
                push(value)
            elif inner not in LEAVES and not _leaf_ok(value):
                return False
    return True


def _as_int(value: Any) -> Any:
    """The encoder's hook: an int subclass (``registry.Chars``) as the int it is; anything
    else is no JSON value (TypeError, as the encoder raises for any type it cannot write)."""
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")


_ENCODER = msgspec.json.Encoder(order="sorted", enc_hook=_as_int)


def canonical_bytes(obj: Any) -> bytes:
    """``obj`` as canonical JSON bytes (see the module docstring)."""
    return _ENCODER.encode(obj if is_plain(obj) else _plain(obj)) + b"\n"


def canonical_dumps(obj: Any) -> str:
    """``obj`` as canonical JSON text (see the module docstring)."""
    return canonical_bytes(obj).decode("utf-8")
