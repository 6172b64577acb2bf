"""An ``error`` report (a command that failed) as a table and as markdown, from its typed
predicate (``records.error.ErrorPredicate``): the verdict line over its summary's fields."""

from __future__ import annotations

from ragspan.records.envelope import encode
from ragspan.records.error import ErrorPredicate
from ragspan.report.render.generic import headed, summary_rows


def table(pred: ErrorPredicate) -> str:
    return headed(pred.kind, pred.verdict, "table", ["field", "value"],
                  summary_rows(encode(pred.summary)))


def markdown(pred: ErrorPredicate) -> str:
    return headed(pred.kind, pred.verdict, "markdown", ["field", "value"],
                  summary_rows(encode(pred.summary)))
