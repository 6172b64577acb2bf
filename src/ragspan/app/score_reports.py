"""Score reports as the gate reads them (``ScoreReport``), from a file or from an envelope
held in memory, for ``compare`` and the Python API alike.

A report from a file is read in one pass (``records.score_read.decode_score_envelope``): its
details decoded and checked as typed records in the format it names (v2's columns, v1's rows;
the schema's types, every number finite), the
rest of the envelope checked against the report schema, then verified by the gate
(``gate.inputs.score_report_of``); it is identified by the sha256 of its bytes. A file that
is not that (another kind of report, a malformed one) is read by the general reader
(``report.envelope.load_report``), whose error names the file and the JSON path. One held
in memory is serialised canonically first and identified by the sha256 of that text, the
bytes ``--out`` would have written."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from msgspec import UNSET

from ragspan.base.errors import InputError
from ragspan.gate.inputs import ScoreReport, score_report_of
from ragspan.io.files import loads_json, read_bytes, sha256_beside, sha256_hex
from ragspan.records.score_columns import SpanColumns, check_columns, rows_of
from ragspan.records.score_read import RowsDetails, convert_details, decode_score_envelope
from ragspan.records.score_rows import as_plain
from ragspan.report.envelope import (
    GIVEN,
    first_entries,
    load_report,
    report_of_mapping,
    report_text,
    validation_error,
)

__all__ = ["ScoreReport", "given_report", "load_score_report", "rows_by_id",
           "score_report_doc", "typed_report"]


def load_score_report(path: str | os.PathLike[str], role: str) -> ScoreReport:
    """The report at ``path`` as the gate reads it; ``role`` (``baseline``, ``candidate``,
    ``anchor``, ``noise``) names it in errors."""
    name = os.fspath(path)
    data = read_bytes(path)
    sha = sha256_beside(data)  # hashed while the bytes are decoded
    typed = _in_one_pass(data, sha, name, role)
    if typed is not None:
        return typed
    doc, digest = load_report(path)
    return score_report_of(doc, digest, name, role)


def _in_one_pass(data: bytes, sha: Callable[[], str], name: str, role: str
                 ) -> ScoreReport | None:
    """The score report ``data`` decoded in one pass, or None when it is not a well-formed
    score report that pass can read (a byte-order mark, an escaped surrogate, another
    kind, a malformed field): the general reader then reads it and names what is wrong."""
    if data[:3] == b"\xef\xbb\xbf":
        return None
    # an escaped surrogate alone (which Python's JSON reader takes) is a DecodeError to
    # msgspec, anywhere in the text (a pair decodes to the same character either way)
    try:
        envelope, details = decode_score_envelope(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None
    pred = envelope.predicate
    if pred is UNSET:
        return None
    try:
        head = {key: loads_json(bytes(getattr(envelope, attr)), name, finite=True)
                for key, attr in (("_type", "type_"), ("subject", "subject"),
                                  ("predicateType", "predicateType"))
                if getattr(envelope, attr) is not UNSET}
        fields = {key: loads_json(bytes(getattr(pred, key)), name, finite=True)
                  for key in ("tool", "kind", "created_at", "verdict", "exit_code",
                              "parameters", "inputs", "summary")}
    except InputError:
        return None
    # the schema checks the envelope; the first entry of each array stands for the details,
    # whose types the decode checked (every entry of the schema's types passes it as that
    # one does)
    doc = {**head, "predicate": {**fields, "details": first_entries(details)}}
    if validation_error(doc, columns=False) is not None:
        return None
    # columns that disagree with each other are refused by name there (``check_columns``)
    return score_report_of(doc, sha(), name, role, details=details)


def score_report_doc(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The report at ``path`` as JSON values (what the verification compares with what its
    files score to)."""
    return load_report(path)[0]


def typed_report(report: Mapping[str, Any], name: str) -> tuple[dict[str, Any], ScoreReport]:
    """An envelope made by ragspan (``Scored``) as JSON values and as the gate reads it,
    from one canonical serialisation (its sha256 is the report's identity, as a file's
    would be)."""
    text = report_text(dict(report))
    doc = json.loads(text)
    return doc, score_report_of(doc, sha256_hex(text.encode("utf-8")), name, "score")


def given_report(report: Any) -> tuple[dict[str, Any], ScoreReport]:
    """An envelope a caller handed over (a dict): checked as a file is, a malformed one an
    InputError naming "the report given" and the JSON path (``envelope.report_of_mapping``)."""
    doc, text = report_of_mapping(report)
    return doc, score_report_of(doc, sha256_hex(text.encode("utf-8")), GIVEN, "score")


def rows_by_id(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each question's row of a score report (JSON values, checked against the schema), by
    question id in the report's order, as format v1 spelled a row (``details.queries[]``:
    ``id``, ``metrics``, ``missing_spans``, ``failure``...) whatever the format it was
    written in: v1's rows as they are, v2's columns read back (``records.score_columns``)."""
    pred = doc["predicate"]
    if pred["kind"] not in ("score.span", "score.doc"):
        raise InputError(f"a '{pred['kind']}' report has no per-query rows", GIVEN)
    try:
        details = convert_details(pred["kind"], doc.get("predicateType"), pred["details"])
    except msgspec.ValidationError as exc:
        raise InputError(str(exc), GIVEN) from None
    if isinstance(details, RowsDetails):
        rows = details.queries
    else:
        problem = check_columns(details)
        if problem is not None:
            raise InputError(problem, GIVEN)
        tau = pred["parameters"].get("grounding_threshold")
        if isinstance(details, SpanColumns) and (not isinstance(tau, (int, float))
                                                 or isinstance(tau, bool)):
            raise InputError("a span report's rows need its parameters.grounding_threshold",
                             GIVEN)
        rows = rows_of(details, tau)
    return {row.id: as_plain(row) for row in rows}
