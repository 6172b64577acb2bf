"""The report envelope: an in-toto Statement v1 (https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md)
whose predicate is ragspan's report, written as canonical JSON.

Canonical JSON (``canonical_dumps``): keys sorted, separators ``,`` and ``:`` with no spaces,
UTF-8 (non-ASCII kept as is), NaN and Infinity refused, one trailing newline. Floats are written
as Python's ``repr`` (the shortest text that reads back to the same double); integral values
stay integers. The same inputs therefore give the same bytes, and ``SOURCE_DATE_EPOCH`` pins
``created_at``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ragspan import __version__
from ragspan.errors import ExitCode, InputError
from ragspan.io.files import decode_utf8, read_bytes, write_text_atomic

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://ragspan.dev/report/v1"
SCHEMA_FILE = "report-envelope.v1.json"
VERDICTS = ("pass", "fail", "error")


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


def canonical_dumps(obj: Any) -> str:
    """The one serialiser for every byte that is hashed or written (see module docstring)."""
    return json.dumps(
        _plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ) + "\n"


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


@dataclass(frozen=True)
class InputRef:
    """One input file of a report and its role (``eval_set``, ``run``, ``corpus``, ``qrels``,
    ``chunks``, ``baseline``, ``candidate``...)."""

    role: str
    name: str
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "name": self.name, "digest": {"sha256": self.sha256}}


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


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    text = resources.files("ragspan").joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


def validation_error(doc: Any) -> str | None:
    """Return ``"$.json.path: message"`` of the first schema error, or None when valid."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    first = errors[0]
    return f"{first.json_path}: {first.message}"


def write_report(path: str | os.PathLike[str], doc: dict[str, Any]) -> str:
    """Validate and write a report atomically; returns the canonical text."""
    text = canonical_dumps(doc)
    problem = validation_error(json.loads(text))
    if problem is not None:  # a report we made that breaks our own schema is a bug
        raise RuntimeError(f"internal error: report fails its schema at {problem}")
    write_text_atomic(path, text)
    return text


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and schema-validate a report; any problem is an InputError naming the file."""
    return load_report(path)[0]


def load_report(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """``read_report`` plus the sha256 of the bytes read (one read of the file)."""
    name = str(path)
    data = read_bytes(path)
    text = decode_utf8(data, name)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", name, exc.lineno) from None
    problem = validation_error(doc)
    if problem is not None:
        raise InputError(f"not a valid ragspan report: {problem}", name)
    return doc, hashlib.sha256(data).hexdigest()
