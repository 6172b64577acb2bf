"""A score report read back as a typed, checked value: what ``compare`` decides from.

``read_score_report`` refuses (InputError naming the file, exit 3) anything the gate could
not verify: a report of another kind or with verdict ``error``; no eval-set (or qrels)
digest; no per-query rows; a query listed twice; a row missing a metric of the summary
(or carrying one the summary lacks); a metric value that is not a finite number; a summary
mean that differs from the mean of its rows by more than 1e-9 (relative to the mean's size
when above 1); row fields of the wrong type (``query``, ``tags``, ``missing_spans``).
The gate decides from the rows; the summary must agree with them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.errors import InputError

SCORE_KINDS = ("score.span", "score.doc")
SUMMARY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ScoreReport:
    """``values[i, j]``: query ``ids[i]``'s value of metric ``names[j]``; ``rows`` the raw
    per-query rows (query text, tags, missing spans) in the same order."""

    path: str
    sha256: str
    kind: str
    parameters: dict[str, Any]
    eval_sha256: str
    corpus_sha256: str | None
    ids: tuple[str, ...]
    names: tuple[str, ...]
    values: np.ndarray
    rows: tuple[dict[str, Any], ...]

    @property
    def ks(self) -> list[int]:
        return list(self.parameters["k"])

    def column(self, name: str) -> np.ndarray:
        return self.values[:, self.names.index(name)]


def _digest(pred: dict[str, Any], *roles: str) -> str | None:
    for ref in pred["inputs"]:
        if ref["role"] in roles:
            return ref["digest"].get("sha256")
    return None


def _check_row_fields(row: dict[str, Any], qid: str, path: str) -> None:
    """The row fields the gate reads besides metrics: ``query`` a string, ``tags`` strings
    by key, ``missing_spans`` lists of spans by k."""
    if not isinstance(row.get("query", ""), str):
        raise InputError(f"query '{qid}': 'query' must be a string", path)
    tags = row.get("tags", {})
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        raise InputError(f"query '{qid}': 'tags' must map keys to strings", path)
    missing = row.get("missing_spans", {})
    if not isinstance(missing, dict) or not all(
            isinstance(v, list) and all(isinstance(s, dict) for s in v) for v in missing.values()):
        raise InputError(f"query '{qid}': 'missing_spans' must map each k to a list of spans",
                         path)


def read_score_report(path: str | os.PathLike[str], role: str) -> ScoreReport:
    """Read, schema-check and verify a score report (see the module docstring); ``role``
    (``baseline``, ``candidate``) names it in messages."""
    from ragspan.envelope import load_report

    name = str(path)
    doc, sha = load_report(path)
    pred = doc["predicate"]
    if pred["kind"] not in SCORE_KINDS:
        raise InputError(f"the {role} is a '{pred['kind']}' report, not a score report", name)
    if pred["verdict"] == "error":
        raise InputError(f"the {role} report has verdict 'error' and cannot be compared", name)
    eval_sha = _digest(pred, "eval_set", "qrels")
    if not eval_sha:
        raise InputError(f"the {role} report records no eval-set (or qrels) digest, so it "
                         "cannot be shown to score the same questions", name)
    rows = pred["details"].get("queries")
    if not isinstance(rows, list) or not rows:
        raise InputError(f"the {role} report has no per-query rows", name)
    metrics = pred["summary"].get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise InputError(f"the {role} report has no summary metrics", name)
    names = tuple(metrics)
    expected = set(names)
    ids: list[str] = []
    first: dict[str, int] = {}
    values = np.empty((len(rows), len(names)))
    for i, row in enumerate(rows):
        qid = row.get("id")
        if not isinstance(qid, str):
            raise InputError(f"query row {i}: 'id' must be a string", name)
        if qid in first:
            raise InputError(f"query '{qid}' is listed twice (rows {first[qid]} and {i})", name)
        first[qid] = i
        ids.append(qid)
        _check_row_fields(row, qid, name)
        got = row.get("metrics")
        if not isinstance(got, dict):
            raise InputError(f"query '{qid}' has no metrics", name)
        if got.keys() != expected:
            missing = sorted(expected - got.keys())
            if missing:
                raise InputError(f"query '{qid}' lacks metric '{missing[0]}'"
                                 f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}"
                                 " that the summary reports", name)
            extra = sorted(got.keys() - expected)
            raise InputError(f"query '{qid}' has metric '{extra[0]}' that the summary lacks",
                             name)
        for j, metric in enumerate(names):
            value = got[metric]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"query '{qid}': metric '{metric}' is not a number", name)
            values[i, j] = value
    if not np.isfinite(values).all():
        i, j = (int(x[0]) for x in np.nonzero(~np.isfinite(values)))
        raise InputError(f"query '{ids[i]}': metric '{names[j]}' is not finite", name)
    means = values.mean(axis=0)
    for j, metric in enumerate(names):
        stated = metrics[metric]
        if isinstance(stated, bool) or not isinstance(stated, (int, float)):
            raise InputError(f"summary metric '{metric}' is not a number", name)
        if abs(stated - means[j]) > SUMMARY_TOLERANCE * max(1.0, abs(means[j])):
            raise InputError(f"summary metric '{metric}' is {stated!r} but its rows average "
                             f"{float(means[j])!r}: the summary disagrees with its rows", name)
    return ScoreReport(
        path=name, sha256=sha, kind=pred["kind"], parameters=pred["parameters"],
        eval_sha256=eval_sha, corpus_sha256=_digest(pred, "corpus"), ids=tuple(ids),
        names=names, values=values, rows=tuple(rows),
    )
