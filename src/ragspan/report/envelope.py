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
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

import msgspec

from ragspan import __version__
from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import ExitCode, InputError
from ragspan.base.records import InputRef, ReportBody
from ragspan.io.files import decode_records, loads_json, read_bytes
from ragspan.io.rows import kind_of, refuse_other_kind
from ragspan.records.envelope import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    STATEMENT_TYPE,
    decode,
    encode,
)
from ragspan.records.kinds import TYPED_KINDS, V1_KINDS
from ragspan.records.score_columns import DocColumns, SpanColumns, check_columns
from ragspan.report.schema_build import envelope_only

__all__ = ["InputRef", "ReportBody", "canonical_dumps", "statement", "statement_of"]

VERDICTS = ("pass", "fail", "inconclusive", "error")
# a report's parameters, summary or details: the kind's record, or JSON values already
Part = msgspec.Struct | Mapping[str, object]
SCHEMA_FILE = "report-envelope.v2.json"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The published report schema (``schemas/``; its part for every typed kind generated
    from the records, ``report.schema_build``)."""
    text = resources.files("ragspan").joinpath("schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


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
    parameters: Part,
    summary: Part,
    details: Part,
    verdict: str = "pass",
    exit_code: int = ExitCode.OK,
) -> dict[str, Any]:
    """Build the Statement, the kind's records (``records``) encoded as JSON values: the
    envelope is JSON from here to the file. ``verdict`` and ``exit_code`` must agree
    (pass<->0)."""
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
            "parameters": encode(parameters),
            "inputs": [i.as_json() for i in inputs],
            "summary": encode(summary),
            "details": encode(details),
        },
    }


def statement_of(body: ReportBody) -> dict[str, Any]:
    """The Statement of a report body."""
    return statement(kind=body.kind, subject=list(body.subject), inputs=list(body.inputs),
                     parameters=body.parameters, summary=body.summary, details=body.details,
                     verdict=body.verdict, exit_code=body.exit_code)


def schema_error(doc: Any, columns: bool = True) -> tuple[list[Any], str] | None:
    """The JSON path (a list of keys and indices) and message of the first schema error of
    ``doc`` (JSON values as read back, or a report held in memory), or None when it is
    valid. A kind typed in ``records`` (``records.kinds``) is decoded into its predicate
    record in one pass, rows included, and the envelope around it checked against the schema
    with its rows left out (the schema's part for the kind is generated from the same
    records); any departure is named as a full validation names it (the first error by
    path), or as the decode names it where the schema has no word for it."""
    validator = _validators()[0]
    record = _typed_record(doc)
    if record is None:
        return _first_error(validator, doc)
    try:
        predicate = decode(doc["predicate"], record)
    except msgspec.ValidationError as exc:
        found = _first_error(validator, doc)
        return found if found is not None else decode_error(exc)
    found = _first_error(_validators()[1], doc)
    if found is None and columns and isinstance(predicate.details, (SpanColumns, DocColumns)):
        problem = check_columns(predicate.details)
        if problem is not None:
            return ["predicate", "details"], problem
    return found


@lru_cache(maxsize=1)
def _validators() -> tuple[Any, Any]:
    """The published schema's validator, and the envelope's alone
    (``schema_build.envelope_only``: for a report whose predicate was decoded into its
    kind's record, which checked the rest)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema()), Draft202012Validator(envelope_only(schema()))


def _typed_record(doc: Any) -> Any:
    """The predicate record of ``doc``'s kind (in the format its ``predicateType`` names)
    when that kind is typed and ``doc`` has the envelope's shape down to its details, else
    None."""
    pred = doc.get("predicate") if isinstance(doc, dict) else None
    if not isinstance(pred, dict) or not isinstance(pred.get("details"), dict):
        return None
    kind = pred.get("kind")
    if not isinstance(kind, str):
        return None
    if doc.get("predicateType") == PREDICATE_TYPE_V1 and kind in V1_KINDS:
        return V1_KINDS[kind]
    return TYPED_KINDS.get(kind)


def first_entries(value: Any) -> Any:
    """JSON values or records (``msgspec.Struct``, Raw text) as JSON values with every array
    cut to its first entry (a field left unset left out): what stands for a report's details
    when the schema checks the envelope around records already decoded."""
    if isinstance(value, msgspec.Struct):
        return {key: first_entries(v) for key, v in msgspec.structs.asdict(value).items()
                if v is not msgspec.UNSET}
    if isinstance(value, msgspec.Raw):
        return first_entries(msgspec.json.decode(value))
    if isinstance(value, dict):
        return {key: first_entries(v) for key, v in value.items()}
    if isinstance(value, list):
        return [first_entries(v) for v in value[:1]]
    return value


def _first_error(validator: Any, doc: Any) -> tuple[list[Any], str] | None:
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    return None if not errors else (list(errors[0].absolute_path), errors[0].message)


MSGSPEC_PATH = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)


def decode_error(exc: msgspec.ValidationError) -> tuple[list[Any], str]:
    """A predicate decode's error as a path from the envelope's root and its message."""
    found = MSGSPEC_PATH.match(str(exc))
    assert found is not None  # the pattern matches any text
    path: list[Any] = ["predicate"]
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]", found["path"] or ""):
        path.append(name if name else int(index) if index.isdigit() else "...")
    return path, found["message"]


def validation_error(doc: Any, columns: bool = True) -> str | None:
    """``"$.json.path: message"`` of the first schema error (``schema_error``), or None;
    ``columns=False``: a v2 score report's columns are not checked against each other (a
    reader that checked them whole hands over its details cut to their first entries)."""
    found = schema_error(doc, columns)
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
    """The report's canonical text. Every kind is built from its records by keyword
    (``records.kinds``), so its shape is theirs and the schema's (generated from them): it
    is written as it is, with no walk of it. A kind with no record is a bug."""
    if _typed_record(doc) is None:
        kind = doc.get("predicate", {}).get("kind")
        raise RuntimeError(f"internal error: report kind {kind!r} has no record")
    return canonical_dumps(doc)


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
