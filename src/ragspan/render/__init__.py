"""Renderers: report envelope -> text for people. One module per format, one function each.

``render(doc, fmt)`` dispatches on the format; every renderer takes the envelope (a dict read
back from canonical JSON) and returns text ending in a newline.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("json", "table", "markdown")


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        from ragspan.canonical import canonical_dumps

        return canonical_dumps(doc)
    if fmt == "table":
        from ragspan.render.table import render_table

        return render_table(doc)
    if fmt == "markdown":
        from ragspan.render.markdown import render_markdown

        return render_markdown(doc)
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
