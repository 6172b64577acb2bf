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
from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import ExitCode, InputError
from ragspan.base.records import InputRef, ReportBody
from ragspan.io.files import decode_records, loads_json, read_bytes

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
    return json.loads(text)


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


def _type_shape(value: Any) -> Any:
    """A value's JSON type tree: values of one shape pass or fail a TYPE_KEYWORDS schema
    alike (an integral float is told apart, as ``integer`` accepts it). A list's shape is
    the set of its elements' shapes, whatever its length: ``items`` holds each element to
    the same subschema, and no TYPE_KEYWORDS keyword counts elements. Keys are taken in
    their order: two orders of one row are two shapes, checked each."""
    kind = type(value)  # values read back from JSON: exact types
    if kind is dict:  # in the order read (canonical reports are sorted): order only splits
        return tuple((k, ("integral" if v.is_integer() else "float") if type(v) is float
                      else _type_shape(v)) for k, v in value.items())
    if kind is list:
        return ("[", frozenset(map(_type_shape, value)))
    if kind is float:
        return "integral" if value.is_integer() else "float"
    return kind.__name__


def _distinct_rows(doc: Any) -> tuple[Any, list[int] | None]:
    """``doc`` with ``details.queries`` cut to the first row of each type shape, and the
    original index of each row kept; ``(doc, None)`` when nothing can be cut."""
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


def validation_error(doc: Any) -> str | None:
    """Return ``"$.json.path: message"`` of the first schema error, or None when valid.
    Query rows are checked once per distinct type shape when the schema looks at their
    types only (a 10,000-row report in milliseconds instead of a second); an error's path
    names the original row."""
    from jsonschema import Draft202012Validator

    target, keep = _distinct_rows(doc)
    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(target),
                    key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    path = list(errors[0].absolute_path)
    if keep is not None and path[:3] == ["predicate", "details", "queries"] and len(path) > 3:
        row = keep[path[3]]  # the row itself, alone: its own path inside the row
        predicate = doc["predicate"]
        alone = {**doc, "predicate": {**predicate, "details": {
            **predicate["details"], "queries": [predicate["details"]["queries"][row]]}}}
        errors = sorted(validator.iter_errors(alone),
                        key=lambda e: (list(e.absolute_path), e.message))
        path = list(errors[0].absolute_path)
        path[3] = row
    return f"{_json_path(path)}: {errors[0].message}"


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
    """The report's canonical text, checked against the schema (a report we made that
    breaks our own schema is a bug)."""
    text = canonical_dumps(doc)
    problem = validation_error(json.loads(text))
    if problem is not None:
        raise RuntimeError(f"internal error: report fails its schema at {problem}")
    return text


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and schema-validate a report; any problem is an InputError naming the file."""
    return load_report(path)[0]


def load_report(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """``read_report`` plus the sha256 of the bytes read (one read of the file)."""
    name = str(path)
    data = read_bytes(path)
    doc = loads_json(decode_records(data, name), name, finite=True)
    try:
        problem = validation_error(doc)
    except RecursionError:
        problem = "nested too deeply"
    if problem is not None:
        raise InputError(f"not a valid ragspan report: {problem}", name)
    return doc, hashlib.sha256(data).hexdigest()
