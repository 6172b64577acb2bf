"""The gate's input: a score report read back and verified (``score_report_of``) into a typed
``ScoreReport``, the values the read-only gate compares. Reading needs only the metric
registry (names, cutoffs, failure labels): nothing that scores.

``score_report_of`` (a loaded, schema-valid report, format v2's columns or v1's rows) refuses
(InputError naming the file, exit 3) anything the gate could not verify: a report of another
kind or with verdict ``error``; no eval-set (or qrels) digest; no per-query rows; a query
listed twice; a row (or the columns) missing a metric of the summary, or carrying one the
summary lacks; columns of different lengths; a metric value that is not a finite number;
a summary mean that differs from the mean of its rows by more than 1e-9 (relative to the
mean's size when above 1); row fields of the wrong type (``query``, ``tags``,
``missing_spans``). The gate decides from the rows; the summary must agree with them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError
from ragspan.gate.query_rows import QueryRow, column_rows, row_query_row
from ragspan.records.score_columns import DocColumns, SpanColumns
from ragspan.records.score_facts import Saturation, Steps
from ragspan.records.score_read import RowsDetails, ScoreDetails, convert_details
from ragspan.records.score_rows import Row
from ragspan.records.score_summary import (
    Documents,
    ReportWarning,
    SummaryRead,
    decode_summary,
)
from ragspan.scoring.metrics.registry import LABELS, parse_cutoff, parse_name

SCORE_KINDS = ("score.span", "score.doc")
SUMMARY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ScoreReport:
    """``values[i, j]``: query ``ids[i]``'s value of metric ``names[j]``; ``rows`` the typed
    per-query rows in the same order."""

    path: str
    sha256: str
    kind: str
    parameters: dict[str, Any]
    eval_sha256: str
    corpus_sha256: str | None
    ids: tuple[str, ...]
    names: tuple[str, ...]
    values: np.ndarray
    rows: tuple[QueryRow, ...]
    inputs: dict[str, str] = field(default_factory=dict)  # role -> the sha256 recorded
    tool_version: str = ""  # the ragspan version that wrote the report
    documents: Documents | None = None  # summary.documents
    saturation: Saturation | None = None  # summary.saturation (``run_facts.saturation``)
    steps: Steps | None = None  # summary.steps: a run with steps (``scoring.steps``)
    # summary.placement.dropped: results kept as off-corpus though their text could not be
    # placed (None: the run carried no texts)
    dropped: int | None = None
    # summary.warnings: what scoring said about the report's inputs (code, count, example)
    warnings: tuple[ReportWarning, ...] = ()
    format: int = 2  # the report format it was written in (1: per-query rows, 2: columns)

    def input_sha256(self, role: str) -> str:
        """The sha256 the report records for its input ``role`` ("" when none)."""
        return self.inputs.get(role, "")

    @property
    def ks(self) -> list[int]:
        """The cutoffs, counts and character budgets (``registry.Chars``)."""
        return [parse_cutoff(k) for k in self.parameters["k"]]

    def column(self, name: str) -> np.ndarray:
        return self.values[:, self.names.index(name)]


def _digest(pred: dict[str, Any], *roles: str) -> str | None:
    for ref in pred["inputs"]:
        if ref["role"] in roles:
            sha: str | None = ref["digest"].get("sha256")
            return sha
    return None


def _details(pred: dict[str, Any], predicate_type: Any, role: str, name: str
             ) -> ScoreDetails:
    """A report's details held as plain values, checked into the records of its format (v2's
    columns, v1's rows; the schema's types, every number finite): anything else is an
    InputError naming the JSON path."""
    details = pred["details"]
    if not isinstance(details, dict):
        raise InputError(f"the {role} report has no per-query rows", name)
    try:
        return convert_details(pred["kind"], predicate_type, details)
    except msgspec.ValidationError as exc:
        raise InputError(row_error(exc), name) from None


def row_error(exc: msgspec.ValidationError) -> str:
    """msgspec's message about a report's details, its JSON path from the report's root."""
    return str(exc).replace("`$[", "`$.predicate.details.queries[").replace(
        "`$.", "`$.predicate.details.")


def score_report_of(doc: dict[str, Any], sha: str, name: str, role: str,
                    details: ScoreDetails | None = None) -> ScoreReport:
    """Verify a loaded, schema-valid report (``envelope.load_report``) as a score report
    (see the module docstring), in format v2 or v1; ``name`` is its file, ``role``
    (``baseline``, ``candidate``) names it in messages, ``sha`` is the sha256 of its bytes.
    ``details``: its details already decoded as records (``records.score_read``); else those
    of ``doc`` are checked into records here."""
    pred = doc["predicate"]
    if pred["kind"] == "error":  # what --error-report writes when a command stopped
        said = pred["summary"].get("message") if isinstance(pred["summary"], dict) else None
        raise InputError(f"the {role} is an error report, not a score report: "
                         f"{pred['parameters'].get('command', 'the command')} stopped on "
                         f"{said!r}", name)
    if pred["kind"] not in SCORE_KINDS:
        raise InputError(f"the {role} is a '{pred['kind']}' report, not a score report", name)
    if pred["verdict"] == "error":
        raise InputError(f"the {role} report has verdict 'error' and cannot be compared", name)
    eval_sha = _digest(pred, "eval_set", "qrels")
    if not eval_sha:
        raise InputError(f"the {role} report records no eval-set (or qrels) digest, so it "
                         "cannot be shown to score the same questions", name)
    if details is None:
        details = _details(pred, doc.get("predicateType"), role, name)
    summary = _summary(pred["summary"], name)
    if isinstance(details, RowsDetails):
        if not details.queries:
            raise InputError(f"the {role} report has no per-query rows", name)
        rows = details.queries
        query_rows = [row_query_row(r) for r in rows]
    else:
        query_rows = column_rows(details, pred, role, name)
    if not summary.metrics:
        raise InputError(f"the {role} report has no summary metrics", name)
    names = tuple(summary.metrics)
    _check_cutoffs(pred["parameters"].get("k"), names, role, name)
    if isinstance(details, RowsDetails):
        ids, values = _row_values(rows, names, name)
    else:
        ids, values = _column_values(details, names, name)
    _check_summary(summary.metrics, names, values, name)
    return ScoreReport(
        path=name, sha256=sha, kind=pred["kind"], parameters=pred["parameters"],
        eval_sha256=eval_sha, corpus_sha256=_digest(pred, "corpus"), ids=tuple(ids),
        names=names, values=values, rows=tuple(query_rows),
        inputs={ref["role"]: ref["digest"].get("sha256", "") for ref in pred["inputs"]},
        tool_version=str(pred["tool"].get("version", "")),
        documents=summary.documents, saturation=summary.saturation, steps=summary.steps,
        dropped=None if summary.placement is None else summary.placement.dropped,
        warnings=tuple(summary.warnings),
        format=1 if isinstance(details, RowsDetails) else 2,
    )


def _column_values(details: SpanColumns | DocColumns, names: tuple[str, ...], name: str
                   ) -> tuple[list[str], np.ndarray]:
    """The question ids and the (queries x metrics) values of a v2 report's columns. Each id
    is listed once, a column holds each metric of the summary and no other, each failure
    label is one of ``LABELS``; anything else is an InputError."""
    ids = details.questions.id
    _refuse_repeated(ids, "questions", name)
    have = details.metrics
    missing = [n for n in names if n not in have]
    if missing:
        raise InputError(f"details.metrics lacks the column of '{missing[0]}'"
                         f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''} "
                         "that the summary reports", name)
    extra = sorted(set(have) - set(names))
    if extra:
        raise InputError(f"details.metrics has a column '{extra[0]}' that the summary lacks",
                         name)
    if isinstance(details, SpanColumns):
        labels = {*LABELS, None}
        for k, column in details.failure.items():
            if not labels.issuperset(column):
                raise InputError(f"details.failure.{k} must hold one of {', '.join(LABELS)} "
                                 "(or null) per question", name)
    values = np.empty((len(ids), len(names)))  # each column written in place (no transpose)
    for j, n in enumerate(names):
        values[:, j] = np.fromiter(have[n], float, len(ids))
    return list(ids), values


def _refuse_repeated(ids: list[str], what: str, name: str) -> None:
    """An id listed twice is an InputError naming both places."""
    if len(set(ids)) == len(ids):
        return
    first: dict[str, int] = {}
    for i, qid in enumerate(ids):
        if qid in first:
            raise InputError(f"query '{qid}' is listed twice ({what} {first[qid]} and {i})",
                             name)
        first[qid] = i


def _summary(value: Any, name: str) -> SummaryRead:
    """The summary as the gate reads it (``records.score_summary``), types and ranges
    checked in one pass; a departure is an InputError naming the file and the field."""
    try:
        return decode_summary(value)
    except msgspec.ValidationError as exc:
        raise InputError(str(exc).replace("`$", "`$.predicate.summary"), name) from None


def _check_cutoffs(listed: Any, names: tuple[str, ...], role: str, name: str) -> None:
    """``parameters.k`` lists the report's cutoffs, each metric is at one of them and each
    has a metric: a report whose columns disagree with its own cutoffs is an InputError."""
    if not isinstance(listed, list) or not listed:
        raise InputError(f"the {role} report's parameters.k must list its cutoffs", name)
    try:
        cutoffs = {parse_cutoff(str(k)) for k in listed}
    except ValueError as exc:
        raise InputError(f"parameters.k: {exc}", name) from None
    at: set[Any] = set()
    for metric in names:
        try:
            parsed = parse_name(metric)
        except ValueError as exc:
            raise InputError(f"summary: {exc}", name) from None
        if parsed.k not in cutoffs:
            raise InputError(f"summary metric '{metric}' is at a cutoff its parameters.k does "
                             "not list", name)
        at.add(parsed.k)
    empty = [k for k in listed if parse_cutoff(str(k)) not in at]
    if empty:
        raise InputError(f"parameters.k lists {empty[0]}, at which it has no metric", name)


def _row_values(rows: list[Row], names: tuple[str, ...], name: str
                ) -> tuple[list[str], np.ndarray]:
    """The query ids and the (queries x metrics) values of a report's rows (records, their
    types already checked). Each id is listed once, each row holds exactly the summary's
    metrics, each failure label is one of ``LABELS``; anything else is an InputError naming
    the query."""
    ids = [r.id for r in rows]
    _refuse_repeated(ids, "rows", name)
    expected = set(names)
    labels = set(LABELS)
    in_order = True
    for r in rows:
        got = r.metrics
        if tuple(got) != names:
            in_order = False
            if got.keys() != expected:
                missing = sorted(expected - got.keys())
                if missing:
                    raise InputError(
                        f"query '{r.id}' lacks metric '{missing[0]}'"
                        f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''} that "
                        "the summary reports", name)
                extra = sorted(got.keys() - expected)
                raise InputError(f"query '{r.id}' has metric '{extra[0]}' that the summary "
                                 "lacks", name)
        if r.failure is not UNSET and not labels.issuperset(r.failure.values()):
            raise InputError(f"query '{r.id}': 'failure' must map each k to one of "
                             f"{', '.join(LABELS)}", name)
    if in_order:  # the writer's order in every row: the values in one pass
        flat = itertools.chain.from_iterable(r.metrics.values() for r in rows)
        values = np.fromiter(flat, dtype=float, count=len(rows) * len(names))
        values = values.reshape(len(rows), len(names))
    else:
        values = np.array([[r.metrics[n] for n in names] for r in rows], dtype=float)
    return ids, values


def _check_summary(metrics: Mapping[str, float], names: tuple[str, ...], values: np.ndarray,
                   name: str) -> None:
    """Each summary metric is a number equal to its rows' mean (within
    ``SUMMARY_TOLERANCE``, relative above 1): a summary that disagrees with its rows is an
    InputError."""
    means = values.mean(axis=0)
    for j, metric in enumerate(names):
        stated = metrics[metric]
        if abs(stated - means[j]) > SUMMARY_TOLERANCE * max(1.0, abs(means[j])):
            raise InputError(f"summary metric '{metric}' is {stated!r} but its rows average "
                             f"{float(means[j])!r}: the summary disagrees with its rows", name)
