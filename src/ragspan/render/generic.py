"""Fallback rendering of any report's summary as key/value rows."""

from __future__ import annotations

from typing import Any

from ragspan.envelope import canonical_dumps


def _rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for key in sorted(summary):
        value = summary[key]
        text = value if isinstance(value, str) else canonical_dumps(value).strip()
        rows.append([key, text if len(text) <= 100 else text[:97] + "..."])
    return rows


def generic_table(doc: dict[str, Any]) -> str:
    from ragspan.render.table import aligned

    pred = doc["predicate"]
    head = f"ragspan {pred['kind']}: verdict {pred['verdict']}\n\n"
    return head + aligned(["field", "value"], _rows(pred["summary"]))


def generic_markdown(doc: dict[str, Any]) -> str:
    from ragspan.render.markdown import md_table

    pred = doc["predicate"]
    head = f"### ragspan {pred['kind']}: **{pred['verdict']}**\n\n"
    return head + md_table(["field", "value"], _rows(pred["summary"]), right_from=2)
