"""The report envelope as typed records: an in-toto Statement v1 whose predicate is one
report kind's record (``Statement[P]``), and the parts every kind shares (the tool, the
subject and input digests). ``encode`` turns any record into the JSON values the canonical
encoder writes (``base.canonical``: sorted keys, one float text); ``decode`` reads JSON
values (a file read back, or a caller's dict) into a record in one pass, a value of the wrong
type or a missing field being ``msgspec.ValidationError`` naming its JSON path.

msgspec Structs, chosen on measurement (records/score_rows.py decodes 10,000 rows of a score
report x1.48 a plain orjson read of the report; dataclasses with a hand walk cost x3.6): one
typed decode validates as it reads, and they encode with the canonical encoder's own
library."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

# a JSON number that is a finite double (a text like 1e400 reads as infinity: refused)
Finite = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://ragspan.dev/report/v2"
# the format of reports of earlier releases: read, never written (``records.kinds.V1_KINDS``)
PREDICATE_TYPE_V1 = "https://ragspan.dev/report/v1"

P = TypeVar("P")
R = TypeVar("R")
Pa = TypeVar("Pa")  # a kind's parameters record
Su = TypeVar("Su")  # its summary record
De = TypeVar("De")  # its details record
Verdict = Literal["pass", "fail", "inconclusive", "error"]


class Digest(Struct, frozen=True, forbid_unknown_fields=True):
    """A file's digest, as in-toto spells it."""

    sha256: str


class Subject(Struct, frozen=True, forbid_unknown_fields=True):
    """What a report is about: a file and its digest."""

    name: str
    digest: Digest


class Input(Struct, frozen=True, forbid_unknown_fields=True):
    """One input file of a report and its role (``eval_set``, ``run``, ``corpus``...)."""

    role: str
    name: str
    digest: Digest


class Tool(Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    version: str


class Predicate(Struct, Generic[Pa, Su, De], frozen=True, kw_only=True):
    """ragspan's report: the tool, the kind, when, the verdict and its exit code, and the
    kind's parameters, inputs, summary and details (``Predicate[ValidateParameters,
    ValidateSummary, ValidateDetails]`` is a validate report's)."""

    tool: Tool
    kind: str
    created_at: str
    verdict: Verdict
    exit_code: int
    parameters: Pa
    inputs: list[Input]
    summary: Su
    details: De


class Statement(Struct, Generic[P], frozen=True, forbid_unknown_fields=True,
                rename={"type_": "_type", "predicate_type": "predicateType"}):
    """The in-toto Statement around a report kind's predicate ``P``."""

    type_: str
    subject: list[Subject]
    predicate_type: str
    predicate: P


T = TypeVar("T")


def given(value: T | None) -> T | UnsetType:
    """None as a field left out of the report (``UNSET``): a record's optional field built
    from a value that may be missing."""
    return UNSET if value is None else value


def _plain(value: Any) -> Any:
    """A numpy value in a record (a count summed by numpy) as the plain value it is, an int
    subclass (``registry.Chars``, a cutoff) as the int it is."""
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")


def encode(record: Any) -> Any:
    """A record (or a structure of them) as JSON values: fields in the record's order, maps
    in theirs (the canonical encoder sorts every key when the report is written; a renderer
    of the values in memory sees the order they were built in); a field left unset is left
    out; a numpy value becomes the plain value it is."""
    return msgspec.to_builtins(record, enc_hook=_plain)


def decode(value: Any, kind: type[R]) -> R:
    """JSON values (a report read back, a caller's dict) as the record ``kind``, checked in
    one pass: ``msgspec.ValidationError`` names the JSON path of the first departure."""
    return msgspec.convert(value, kind, strict=True)
