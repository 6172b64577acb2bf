"""The report envelope: an in-toto Statement v1 (https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md)
whose predicate is ragspan's report, written as canonical JSON.

Only ``ragspan.app`` builds envelopes: the core returns a ``ReportBody`` (or typed
results the command turns into one), and ``statement_of`` wraps it with the tool, the time
and the in-toto fields. Every byte goes through ``ragspan.base.canonical.canonical_dumps``, so the
same inputs give the same bytes; ``SOURCE_DATE_EPOCH`` pins ``created_at``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ragspan import __version__
from ragspan.base.canonical import canonical_dumps, string_keys
from ragspan.base.errors import ExitCode, InputError
from ragspan.base.records import InputRef, ReportBody
from ragspan.io.files import decode_records, loads_json, read_bytes
from ragspan.io.rows import kind_of, refuse_other_kind

__all__ = ["InputRef", "ReportBody", "canonical_dumps", "statement", "statement_of"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://ragspan.dev/report/v1"
SCHEMA_FILE = "report-envelope.v1.json"
VERDICTS = ("pass", "fail", "inconclusive", "error")


def created_at() -> str:
    """UTC time of the report: ``SOURCE_DATE_EPOCH`` when set, else now (second precision)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None and epoch.strip():
        try:
            moment = _dt.datetime.fromtimestamp(int(epoch), tz=_dt.timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise InputError(f"SOURCE_DATE_EPOCH must be an integer, got {epoch!r}") from None
    else:
        moment = _dt.datetime.now(tz=_dt.timezone.utc).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def statement(
    *,
    kind: str,
    subject: list[InputRef],
    inputs: list[InputRef],
    parameters: dict[str, Any],
    summary: dict[str, Any],
    details: dict[str, Any],
    verdict: str = "pass",
    exit_code: int = ExitCode.OK,
) -> dict[str, Any]:
    """Build the Statement; ``verdict`` and ``exit_code`` must agree (pass<->0)."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": s.name, "digest": {"sha256": s.sha256}} for s in subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "tool": {"name": "ragspan", "version": __version__},
            "kind": kind,
            "created_at": created_at(),
            "verdict": verdict,
            "exit_code": int(exit_code),
            "parameters": parameters,
            "inputs": [i.as_json() for i in inputs],
            "summary": summary,
            "details": details,
        },
    }


def statement_of(body: ReportBody) -> dict[str, Any]:
    """The Statement of a report body."""
    return statement(kind=body.kind, subject=list(body.subject), inputs=list(body.inputs),
                     parameters=body.parameters, summary=body.summary, details=body.details,
                     verdict=body.verdict, exit_code=body.exit_code)


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


def schema_error(doc: Any) -> tuple[list[Any], str] | None:
    """The JSON path (a list of keys and indices) and message of the first schema error of
    ``doc`` (JSON values as read back), or None when it is valid. Query rows are checked
    once per distinct type shape when the schema looks at their types only (a 10,000-row
    report in milliseconds instead of a second); an error's path names the original row."""
    from jsonschema import Draft202012Validator

    try:
        target, keep = _distinct_rows(doc)
    except NotPlain:  # not JSON as read back (a caller's dict): every row is checked
        target, keep = doc, None
    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(target),
                    key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    path = list(errors[0].absolute_path)
    if keep is not None and path[:3] == ROWS and len(path) > 3:
        row = keep[path[3]]  # the row itself, alone: its own path inside the row
        errors = sorted(validator.iter_errors(_with_row(doc, row)),
                        key=lambda e: (list(e.absolute_path), e.message))
        path = list(errors[0].absolute_path)
        path[3] = row
    return path, errors[0].message


def validation_error(doc: Any) -> str | None:
    """``"$.json.path: message"`` of the first schema error (``schema_error``), or None."""
    found = schema_error(doc)
    return None if found is None else f"{_json_path(found[0])}: {found[1]}"


def _json_path(path: list[Any]) -> str:
    """jsonschema's ``json_path`` text for a path."""
    out = "$"
    for elem in path:
        if isinstance(elem, int):
            out += f"[{elem}]"
        elif re.match(r"^[a-zA-Z][a-zA-Z0-9_]*$", elem):
            out += "." + elem
        else:
            out += "['" + elem.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def report_text(doc: dict[str, Any]) -> str:
    """The report's canonical text, checked against the schema as it reads back (a report
    we made that breaks our own schema is a bug). When the query rows in memory are plain
    JSON values (``_type_shape``), only one row of each shape is written and read back for
    the check, and their keys need no second walk; else the whole text is read back."""
    try:
        target, keep = _distinct_rows(doc)
    except NotPlain:
        target, keep = doc, None
    if keep is not None and string_keys(target):
        text = canonical_dumps(doc, keys_checked=True)
        found = schema_error(json.loads(canonical_dumps(target, keys_checked=True)))
        if found is not None and found[0][:3] == ROWS and len(found[0]) > 3:
            found[0][3] = keep[found[0][3]]
        problem = None if found is None else f"{_json_path(found[0])}: {found[1]}"
    else:
        text = canonical_dumps(doc)
        problem = validation_error(json.loads(text))
    if problem is not None:
        raise RuntimeError(f"internal error: report fails its schema at {problem}")
    return text


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and schema-validate a report; any problem is an InputError naming the file."""
    return load_report(path)[0]


SCORE_IT = ": a run or an eval set is scored first (ragspan score --eval-set ... --run ... --out " \
    "report.json), and the report given here"


def _refuse_json_lines(text: str, name: str) -> None:
    """A report is one JSON document: JSON lines (a run, an eval set, a corpus) where one
    belongs is an InputError saying what the file is and what to do."""
    lines = [line for line in text.split("\n", 3)[:3] if line.strip()]
    if len(lines) < 2:
        return  # one line: a report (or not JSON), as the parser said
    try:
        obj = json.loads(lines[0])
    except (ValueError, RecursionError):
        return
    if isinstance(obj, dict) and "predicate" not in obj:
        kind = kind_of(obj) or "JSON lines"
        raise InputError(f"this is {kind} (one JSON object per line), not a ragspan report"
                         f"{SCORE_IT}", name, 1)


GIVEN = "the report given"  # how an error names a report a caller handed over in memory


def report_of_mapping(report: Any) -> tuple[dict[str, Any], str]:
    """A report a caller handed over (the Python API's dict) as JSON values and its
    canonical text, checked as a file is: a value that is no JSON (NaN, an object of no JSON
    type, a key that is not text), or any departure from the report schema, is an
    InputError naming "the report given" and the JSON path, never an internal error."""
    if not isinstance(report, dict):
        raise InputError(f"a report is a JSON object (an envelope dict), got "
                         f"{type(report).__name__}", GIVEN)
    try:
        text = canonical_dumps(report)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not a JSON value: {exc}", GIVEN) from None
    except RecursionError:
        raise InputError("nested too deeply", GIVEN) from None
    doc = json.loads(text)
    _refuse_invalid(doc, GIVEN)
    return doc, text


def _refuse_invalid(doc: Any, name: str) -> None:
    """A report of another kind, or one that breaks the report schema, is an InputError
    naming ``name`` and the JSON path."""
    if isinstance(doc, dict) and "predicate" not in doc:
        refuse_other_kind(doc, "a ragspan report", name, 1, SCORE_IT)
    try:
        problem = validation_error(doc)
    except RecursionError:
        problem = "nested too deeply"
    if problem is not None:
        raise InputError(f"not a valid ragspan report: {problem}", name)


def load_report(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """``read_report`` plus the sha256 of the bytes read (one read of the file)."""
    name = str(path)
    data = read_bytes(path)
    text = decode_records(data, name)
    try:
        doc = loads_json(text, name, finite=True)
    except InputError:
        _refuse_json_lines(text, name)
        raise
    _refuse_invalid(doc, name)
    return doc, hashlib.sha256(data).hexdigest()
