"""A score report's bytes read in one pass (``decode_score_envelope``): its details typed and
checked in the format its ``predicateType`` names (v2's columns, ``records.score_columns``, or
v1's rows, ``records.score_rows``), every other key of the envelope kept as JSON text, read by
the caller. A departure is ``msgspec.ValidationError`` (naming the JSON path) or
``msgspec.DecodeError``."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

from ragspan.records.envelope import PREDICATE_TYPE_V1
from ragspan.records.score_columns import DocColumns, SpanColumns
from ragspan.records.score_rows import Row

SCORE_KINDS = ("score.span", "score.doc")


class RowsDetails(Struct):
    """A v1 score report's ``details``: its rows typed, the rest kept as JSON text (any other
    key is allowed by the schema and read by no one)."""

    queries: list[Row]
    slices: Raw | UnsetType = UNSET
    run_rows_without_query: Raw | UnsetType = UNSET


ScoreDetails = RowsDetails | SpanColumns | DocColumns


class Predicate(Struct, forbid_unknown_fields=True):
    """A report's predicate, every key kept as JSON text; a key the envelope does not have is
    refused, as the schema refuses it."""

    tool: Raw
    kind: Raw
    created_at: Raw
    verdict: Raw
    exit_code: Raw
    parameters: Raw
    inputs: Raw
    summary: Raw
    details: Raw


class ScoreEnvelope(Struct, forbid_unknown_fields=True):
    """A score report's envelope (in-toto Statement), its predicate as ``Predicate``."""

    type_: Raw = field(name="_type")
    subject: Raw | UnsetType = UNSET
    predicateType: Raw | UnsetType = UNSET  # noqa: N815 - the in-toto field's name
    predicate: Predicate | UnsetType = UNSET


SCORE_ENVELOPE = msgspec.json.Decoder(ScoreEnvelope)
SPAN_COLUMNS = msgspec.json.Decoder(SpanColumns)
DOC_COLUMNS = msgspec.json.Decoder(DocColumns)
ROWS = msgspec.json.Decoder(RowsDetails)


def is_v1(predicate_type: Any) -> bool:
    """Whether a report's ``predicateType`` names format v1 (its score details are rows)."""
    return bool(predicate_type == PREDICATE_TYPE_V1)


def decode_score_envelope(data: bytes) -> tuple[ScoreEnvelope, ScoreDetails]:
    """A score report's bytes in one pass: the envelope, its keys as JSON text, and its
    details typed and checked in the format it names."""
    envelope = SCORE_ENVELOPE.decode(data)
    pred = envelope.predicate
    if isinstance(pred, UnsetType):
        raise msgspec.ValidationError("not a report: no predicate")
    kind = msgspec.json.decode(pred.kind)
    if kind not in SCORE_KINDS:
        raise msgspec.ValidationError(f"not a score report: kind {kind!r}")
    version = (None if isinstance(envelope.predicateType, UnsetType)
               else msgspec.json.decode(envelope.predicateType))
    details: ScoreDetails
    if is_v1(version):
        details = ROWS.decode(pred.details)
    elif kind == "score.span":
        details = SPAN_COLUMNS.decode(pred.details)
    else:
        details = DOC_COLUMNS.decode(pred.details)
    return envelope, details


def convert_details(kind: str, predicate_type: Any, details: Any) -> ScoreDetails:
    """A score report's details held as JSON values, checked into the records of the format
    ``predicate_type`` names (strict: no string for a number, a finite number)."""
    if is_v1(predicate_type):
        return RowsDetails(queries=msgspec.convert(details.get("queries"), list[Row],
                                                   strict=True))
    if kind == "score.span":
        return msgspec.convert(details, SpanColumns, strict=True)
    return msgspec.convert(details, DocColumns, strict=True)
