"""Score reports as the gate reads them (``ScoreReport``), from a file or from an envelope
held in memory, for ``compare`` and the Python API alike.

A report from a file is schema-checked (``report.envelope.load_report``) and identified by
the sha256 of its bytes; one held in memory is serialised canonically first and identified
by the sha256 of that text, the bytes ``--out`` would have written."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ragspan.gate.inputs import ScoreReport, score_report_of
from ragspan.io.files import sha256_hex
from ragspan.report.envelope import GIVEN, load_report, report_of_mapping, report_text

__all__ = ["ScoreReport", "given_report", "load_score_report", "typed_report"]


def load_score_report(path: str | os.PathLike[str], role: str) -> tuple[dict[str, Any],
                                                                        ScoreReport]:
    """The report at ``path`` as JSON values and as the gate reads it; ``role``
    (``baseline``, ``candidate``, ``anchor``, ``noise``) names it in errors."""
    doc, sha = load_report(path)
    return doc, score_report_of(doc, sha, os.fspath(path), role)


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
