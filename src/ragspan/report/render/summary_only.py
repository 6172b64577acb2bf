"""A typed report with nothing to show but its summary (``error``: a command that failed;
``adapt`` and ``import``: an eval set built; ``run-retriever``: a run made) as a table and
as markdown: the verdict line over the summary's fields, one row each."""

from __future__ import annotations

from typing import Any

from ragspan.records.envelope import Predicate, encode
from ragspan.report.render.generic import headed, summary_rows


def table(pred: Predicate[Any, Any, Any]) -> str:
    return headed(pred.kind, pred.verdict, "table", ["field", "value"],
                  summary_rows(encode(pred.summary)))


def markdown(pred: Predicate[Any, Any, Any]) -> str:
    return headed(pred.kind, pred.verdict, "markdown", ["field", "value"],
                  summary_rows(encode(pred.summary)))
