"""``sweep`` reports as a table and as markdown: one row per configuration."""

from __future__ import annotations

from typing import Any

from ragspan.report.render.generic import two_columns


def _rows(pred: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    ks = pred["parameters"]["k"]
    timed = any("execution" in c for c in pred["details"]["configurations"])
    header = ["configuration", "chunks", *(["embedded", "from cache"] if timed else []),
              *[f"complete_grounding@{k}" for k in ks],
              *[f"retrieved_chars@{k}" for k in ks], "failing (by label) @" + str(ks[-1])]
    rows = []
    for c in pred["details"]["configurations"]:
        if "error" in c:
            rows.append([c["name"], "failed: " + c["error"], *[""] * (len(header) - 2)])
            continue
        labels = c["failure_labels"][str(ks[-1])]
        ex = c.get("execution", {})
        cached = [f"{ex.get('embedded', 0):,}", f"{ex.get('embeddings_from_cache', 0):,}"]
        rows.append([c["name"], f"{c['chunks']:,}", *(cached if timed else []),
                     *[f"{c['metrics'][f'complete_grounding@{k}']:.4f}" for k in ks],
                     *[f"{c['metrics'][f'retrieved_chars@{k}']:,.0f}" for k in ks],
                     ", ".join(f"{n} {label}" for label, n in labels.items() if n) or "-"])
    return header, rows


def table(doc: dict[str, Any]) -> str:
    return two_columns(doc, "table", *_rows(doc["predicate"]))


def markdown(doc: dict[str, Any]) -> str:
    return two_columns(doc, "markdown", *_rows(doc["predicate"]))
