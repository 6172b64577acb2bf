"""The pieces the renderers share: a summary as key/value rows (``summary_rows``), the
verdict line over a table (``headed``), a listing of what was found (``listed``), ``clip``."""

from __future__ import annotations

from collections.abc import Mapping

from ragspan.base.canonical import canonical_dumps
from ragspan.base.shown import shown_models
from ragspan.report.render.text import aligned, md_table


def summary_rows(summary: Mapping[str, object]) -> list[list[str]]:
    """A summary's fields as encoded (JSON values), one ``[key, value]`` row each (nested
    values as JSON, cut at 100 characters; a local model path shown by its name)."""
    rows = []
    for key in sorted(summary):
        value = shown_models({key: summary[key]})[key]
        text = value if isinstance(value, str) else canonical_dumps(value).strip()
        rows.append([key, text if len(text) <= 100 else text[:97] + "..."])
    return rows


def headed(kind: str, verdict: str, fmt: str, header: list[str], rows: list[list[str]],
           right_from: int = 2) -> str:
    """The verdict line, then ``rows`` under ``header`` as a table or markdown."""
    if fmt == "table":
        return f"ragspan {kind}: verdict {verdict}\n\n" + aligned(header, rows)
    return (f"### ragspan {kind}: **{verdict}**\n\n"
            + md_table(header, rows, right_from=right_from))


LISTED = 20


def clip(text: str, width: int = 60, keep_end: bool = False) -> str:
    """``text`` on one line, at most ``width`` characters, cut at its end. ``keep_end`` (a
    message whose end says why or the way on): the end after its last ``; `` or ``: `` is
    kept whole and the head before it cut (the cell then holds the whole end, however
    long), so a hint such as ``run `ragspan migrate ...``` is never lost."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = max(text.rfind("; "), text.rfind(": ")) if keep_end else -1
    if cut <= 0:
        return text[:width - 3] + "..."
    head, tail = text[:cut], text[cut:]
    room = max(width - len(tail), 44)
    if len(head) > room:
        head = head[:room - 4].rstrip() + " ..."
    return head + tail


def listed(title: str, header: list[str], rows: list[list[str]], left: int, fmt: str,
           right_from: int | None = None) -> str:
    """The first ``LISTED`` of ``rows`` under ``title``, then how many more (none: nothing);
    in markdown the columns from ``right_from`` (default: none) right-aligned."""
    if not rows:
        return ""
    more = len(rows) - LISTED
    tail = f"... and {more} more (see the JSON report)\n" if more > 0 else ""
    if fmt == "table":
        return f"\n{title}:\n" + aligned(header, rows[:LISTED], left=left) + tail
    return (f"\n#### {title}\n\n"
            + md_table(header, rows[:LISTED], right_from=right_from or len(header)) + tail)
