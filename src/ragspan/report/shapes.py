"""The report schema (``schema``) and the shortcut that checks a report's per-query rows
once per type shape (``distinct_rows``): rows of one JSON type tree pass or fail a schema of
type keywords alike, so one row of each shape is checked for all (``report.envelope``'s
schema checks use it)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "report-envelope.v1.json"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    text = resources.files("ragspan").joinpath("schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


# keywords that look at a value's JSON type and keys, never at the value itself
TYPE_KEYWORDS = frozenset({"type", "required", "properties", "additionalProperties", "items"})


def _type_only(sub: Any) -> bool:
    if isinstance(sub, bool):
        return True
    if not isinstance(sub, dict) or not set(sub) <= TYPE_KEYWORDS:
        return False
    return (all(_type_only(s) for s in sub.get("properties", {}).values())
            and _type_only(sub.get("items", True))
            and _type_only(sub.get("additionalProperties", True)))


def _row_schemas(node: Any, in_details: bool = False) -> Any:
    """Every subschema the schema gives ``details.queries``."""
    if isinstance(node, list):
        for item in node:
            yield from _row_schemas(item, in_details)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    if in_details and name == "queries":
                        yield sub
                    yield from _row_schemas(sub, name == "details")
            else:
                yield from _row_schemas(value, in_details)


@lru_cache(maxsize=1)
def _rows_checked_by_type() -> bool:
    """Whether the schema checks query rows by their JSON types alone (then one row of each
    type shape stands for all rows of that shape)."""
    return all(_type_only(sub) for sub in _row_schemas(schema()))


def _integer_only(sub: Any) -> bool:
    """A subschema whose type admits integers but not other numbers."""
    if not isinstance(sub, dict):
        return False
    types = sub.get("type", ())
    types = {types} if isinstance(types, str) else set(types)
    return "integer" in types and "number" not in types


def _schema_nodes(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _schema_nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _schema_nodes(item)


@lru_cache(maxsize=1)
def _integer_keys() -> frozenset[str] | None:
    """The property names a row schema types as integers (not other numbers): only a float
    under one of these keys can pass or fail by being integral (``integer`` accepts 1.0,
    not 1.5); under any other key a float is a ``number`` whatever its value, so a row's
    shape leaves its integrality out (else a report's rows split into hundreds of shapes,
    one per pattern of 0.0 and 1.0 in their metrics). None when a map of the row schema
    (``additionalProperties``) types its values as integers: any key may land there."""
    keys: set[str] = set()
    for sub in _row_schemas(schema()):
        for node in _schema_nodes(sub):
            if _integer_only(node.get("additionalProperties")):
                return None
            props = node.get("properties")
            if isinstance(props, dict):
                keys.update(k for k, v in props.items() if _integer_only(v))
    return frozenset(keys)


_AMONG: dict[tuple[str, ...], tuple[str, ...]] = {}


def _integer_among(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of ``keys`` in ``_integer_keys()`` (not None), in order; remembered for the
    first 4,096 key tuples (a report's rows repeat a few)."""
    found = _AMONG.get(keys)
    if found is None:
        integer = _integer_keys() or frozenset()
        found = tuple([k for k in keys if k in integer])
        if len(_AMONG) < 4096:
            _AMONG[keys] = found
    return found


LEAF_TYPES = frozenset({str, int, bool, type(None)})  # a leaf of these: its type says all
FLOATS = frozenset({float})
SCALAR_TYPES = LEAF_TYPES | FLOATS
JSON_TYPES = SCALAR_TYPES | {dict, list}
STRINGS = frozenset({str})
ROWS = ["predicate", "details", "queries"]


class NotPlain(Exception):
    """A value that JSON would give back as another type (a tuple, a numpy scalar, a
    subclass) or a key that is not a string: its shape is only known once it is written."""


def _float_shape(value: float) -> str:
    return "integral" if value.is_integer() else "float"


def _type_shape(value: Any) -> Any:
    """A value's JSON type tree: values of one shape pass or fail a TYPE_KEYWORDS schema
    alike (an integral float is told apart, as ``integer`` accepts it). A list's shape is
    the set of its elements' shapes, whatever its length: ``items`` holds each element to
    the same subschema, and no TYPE_KEYWORDS keyword counts elements. Keys are taken in
    their order: two orders of one row are two shapes, checked each. Values must be plain
    JSON values of exact types with string keys (as read back from JSON), else
    ``NotPlain``; of such values in memory, one shape is one shape once written and read.

    A leaf's shape is its type (``_float_shape`` for floats). A dict's shape is its keys
    and its values' shapes; one of scalars only (the rows' metrics, a span's offsets) is
    its keys, its values' types and the integrality of its floats under ``_integer_keys``
    (a 3-tuple, which no other shape is); in a dict, a float under any other key is shaped
    by its type alone. A list's values of ``LEAF_TYPES`` only, or floats
    only, are shaped in one pass too, with the result the element-by-element walk gives."""
    kind = type(value)
    if kind is dict:  # in the order read (canonical reports are sorted): order only splits
        if not frozenset(map(type, value)) <= STRINGS:
            raise NotPlain
        values = tuple(value.values())
        types = tuple(map(type, values))
        kinds = frozenset(types)
        if kinds <= LEAF_TYPES:
            return tuple(value), types
        integer = _integer_keys()
        if kinds <= SCALAR_TYPES:  # leaves and floats: the floats' integrality beside
            if integer is None:
                return tuple(value), types, tuple(map(float.is_integer, [
                    v for v, t in zip(values, types) if t is float]))
            keys = tuple(value)
            if float not in kinds:
                return keys, types, ()
            return keys, types, tuple([value[k].is_integer() for k in _integer_among(keys)
                                       if type(value[k]) is float])
        if not kinds <= JSON_TYPES:
            raise NotPlain
        return tuple(value), tuple([
            _type_shape(v) if t is dict or t is list
            else _float_shape(v) if t is float and (integer is None or k in integer) else t
            for k, v, t in zip(value, values, types)])
    if kind is list:
        kinds = frozenset(map(type, value))
        if kinds <= LEAF_TYPES:
            return "[", kinds
        if kinds == FLOATS:
            return "[", frozenset(map(_float_shape, value))
        return "[", frozenset(map(_type_shape, value))
    if kind is float:
        return _float_shape(value)
    if kind in LEAF_TYPES:
        return kind
    raise NotPlain


def _distinct_rows(doc: Any) -> tuple[Any, list[int] | None]:
    """``doc`` with ``details.queries`` cut to the first row of each type shape, and the
    original index of each row kept; ``(doc, None)`` when nothing can be cut. ``NotPlain``
    from a row that is not made of plain JSON values."""
    try:
        rows = doc["predicate"]["details"]["queries"]
    except (KeyError, TypeError, IndexError):
        return doc, None
    if not isinstance(rows, list) or len(rows) < 2 or not _rows_checked_by_type():
        return doc, None
    first: dict[Any, int] = {}
    for i, row in enumerate(rows):
        first.setdefault(_type_shape(row), i)
    keep = sorted(first.values())
    predicate = doc["predicate"]
    details = {**predicate["details"], "queries": [rows[i] for i in keep]}
    return {**doc, "predicate": {**predicate, "details": details}}, keep


def _with_row(doc: Any, row: int) -> Any:
    """``doc`` with ``details.queries`` cut to its row ``row`` alone."""
    predicate = doc["predicate"]
    return {**doc, "predicate": {**predicate, "details": {
        **predicate["details"], "queries": [predicate["details"]["queries"][row]]}}}
