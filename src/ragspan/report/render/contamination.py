"""``leakage`` and ``overlap`` reports as a table and as markdown, from their typed
predicates (``records.contamination``): the summary as key/value rows, then the leaks or the
duplicate pairs (the first ``generic.LISTED``)."""

from __future__ import annotations

from ragspan.records.contamination import LeakagePredicate, OverlapPredicate
from ragspan.records.envelope import encode
from ragspan.report.render.generic import clip, headed, listed, summary_rows


def _leaks(pred: LeakagePredicate, fmt: str) -> str:
    score = "containment" if pred.parameters.method == "exact" else "similarity"
    rows = [[x.id, x.field, clip(x.document, 40), clip(x.passage.text or ""),
             f"{x.containment if score == 'containment' else x.similarity or 0:.3f}"]
            for x in pred.details.leaks]
    return listed("Leaking items", ["item", "field", "document", "shared passage", score],
                  rows, 4, fmt)


def _pairs(pred: OverlapPredicate, fmt: str) -> str:
    rows = [[clip(p.a, 40), clip(p.b, 40), f"{p.jaccard:.3f}"] for p in pred.details.pairs]
    return listed("Duplicate pairs", ["a", "b", "jaccard"], rows, 2, fmt)


def _head(pred: LeakagePredicate | OverlapPredicate, fmt: str) -> str:
    return headed(pred.kind, pred.verdict, fmt, ["field", "value"],
                  summary_rows(encode(pred.summary)))


def leakage_table(pred: LeakagePredicate) -> str:
    return _head(pred, "table") + _leaks(pred, "table")


def leakage_markdown(pred: LeakagePredicate) -> str:
    return _head(pred, "markdown") + _leaks(pred, "markdown")


def overlap_table(pred: OverlapPredicate) -> str:
    return _head(pred, "table") + _pairs(pred, "table")


def overlap_markdown(pred: OverlapPredicate) -> str:
    return _head(pred, "markdown") + _pairs(pred, "markdown")
