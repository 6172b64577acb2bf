"""``sweep`` reports as a table and as markdown, from the typed predicate
(``records.sweep.SweepPredicate``): one row per configuration."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.records.sweep import Configuration, SweepPredicate
from ragspan.report.render.generic import headed


def _row(c: Configuration, ks: list[int], timed: bool, width: int) -> list[str]:
    if c.error is not UNSET or c.metrics is UNSET or c.failure_labels is UNSET:
        return [c.name, "failed: " + (c.error or ""), *[""] * (width - 2)]
    labels = c.failure_labels[str(ks[-1])]
    ex = c.execution
    cached = ["0", "0"] if ex is UNSET else [f"{ex.embedded:,}", f"{ex.embeddings_from_cache:,}"]
    chunks = f"{c.chunks:,}" if isinstance(c.chunks, int) else "-"  # a user retriever's
    return [c.name, chunks, *(cached if timed else []),
            *[f"{c.metrics[f'complete_grounding@{k}']:.4f}" for k in ks],
            *[f"{c.metrics[f'retrieved_chars@{k}']:,.0f}" for k in ks],
            ", ".join(f"{n} {label}" for label, n in labels.items() if n) or "-"]


def _rows(pred: SweepPredicate) -> tuple[list[str], list[list[str]]]:
    ks = pred.parameters.k
    timed = any(c.execution is not UNSET for c in pred.details.configurations)
    header = ["configuration", "chunks", *(["embedded", "from cache"] if timed else []),
              *[f"complete_grounding@{k}" for k in ks],
              *[f"retrieved_chars@{k}" for k in ks], "failing (by label) @" + str(ks[-1])]
    return header, [_row(c, ks, timed, len(header)) for c in pred.details.configurations]


def table(pred: SweepPredicate) -> str:
    return headed(pred.kind, pred.verdict, "table", *_rows(pred))


def markdown(pred: SweepPredicate) -> str:
    return headed(pred.kind, pred.verdict, "markdown", *_rows(pred))
