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
from typing import Any

from ragspan import __version__
from ragspan.base.canonical import canonical_dumps, is_plain
from ragspan.base.errors import ExitCode, InputError
from ragspan.base.records import InputRef, ReportBody
from ragspan.io.files import decode_records, loads_json, read_bytes
from ragspan.io.rows import kind_of, refuse_other_kind
from ragspan.report.shapes import (
    ROWS,
    NotPlain,
    _distinct_rows,
    _with_row,
    schema,
)

__all__ = ["InputRef", "ReportBody", "canonical_dumps", "statement", "statement_of"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://ragspan.dev/report/v1"
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
    if keep is not None and is_plain(target):
        text = canonical_dumps(doc)
        found = schema_error(json.loads(canonical_dumps(target)))
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
