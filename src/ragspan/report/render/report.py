"""``report`` reports (what ``ragspan report`` wrote) as a table or markdown: one row per
configuration with its complete grounding and interval."""

from __future__ import annotations

from typing import Any

from ragspan.report.render.generic import two_columns
from ragspan.report.render.text import md_text


def _rows(pred: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    k = pred["parameters"]["k"]
    cg = f"complete_grounding@{k}"
    header = ["configuration", cg, "95% CI", "configuration digest"]
    base = pred["summary"]["baseline"]
    rows = [[c["name"] + (" (baseline)" if c["name"] == base else ""), f"{c[cg]:.4f}",
             f"[{c['ci95'][0]:.4f}, {c['ci95'][1]:.4f}]", (c["config_digest"] or "-")[:12]]
            for c in pred["summary"]["configurations"]]
    return header, rows


def _said(doc: dict[str, Any], escape: bool = False) -> str:
    pred = doc["predicate"]
    said = (f"wrote {doc['subject'][0]['name']} ({pred['parameters']['audience']}, "
            f"{pred['parameters']['format']})")
    return (md_text(said) if escape else said) + "\n\n"


def table(doc: dict[str, Any]) -> str:
    return _said(doc) + two_columns(doc, "table", *_rows(doc["predicate"]))


def markdown(doc: dict[str, Any]) -> str:
    return _said(doc, escape=True) + two_columns(doc, "markdown", *_rows(doc["predicate"]))
