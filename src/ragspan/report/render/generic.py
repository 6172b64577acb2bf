"""Every other report (validate, leakage, overlap, adapt, import, run-retriever): its
summary as key/value rows, then what a person needs to see (leaks, pairs, findings)."""

from __future__ import annotations

from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.base.shown import shown_models
from ragspan.report.render.text import aligned, md_table


def _rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for key in sorted(summary):
        value = shown_models({key: summary[key]})[key]
        text = value if isinstance(value, str) else canonical_dumps(value).strip()
        rows.append([key, text if len(text) <= 100 else text[:97] + "..."])
    return rows


def two_columns(doc: dict[str, Any], fmt: str, header: list[str], rows: list[list[str]],
                right_from: int = 2) -> str:
    """The verdict line, ``rows`` under ``header`` as a table or markdown, then the listing
    of what was found (``with_listing``)."""
    pred = doc["predicate"]
    return (headed(pred["kind"], pred["verdict"], fmt, header, rows, right_from)
            + with_listing(doc, fmt))


def headed(kind: str, verdict: str, fmt: str, header: list[str], rows: list[list[str]],
           right_from: int = 2) -> str:
    """The verdict line, then ``rows`` under ``header`` as a table or markdown."""
    if fmt == "table":
        return f"ragspan {kind}: verdict {verdict}\n\n" + aligned(header, rows)
    return (f"### ragspan {kind}: **{verdict}**\n\n"
            + md_table(header, rows, right_from=right_from))


def table(doc: dict[str, Any]) -> str:
    return two_columns(doc, "table", ["field", "value"], _rows(doc["predicate"]["summary"]))


def markdown(doc: dict[str, Any]) -> str:
    return two_columns(doc, "markdown", ["field", "value"], _rows(doc["predicate"]["summary"]))


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


def listing(pred: dict[str, Any]) -> tuple[str, list[str], list[list[str]], int] | None:
    """What a person needs to see beyond the counts: the leaks, the duplicate pairs, the
    validation findings (first 20)."""
    kind, details = pred["kind"], pred["details"]
    if kind == "leakage":
        rows = [[x["id"], x["field"], clip(x["document"], 40),
                 clip(x.get("passage", {}).get("text", "")),
                 f"{x.get('containment', x.get('similarity', 0)):.3f}"] for x in details.get("leaks", [])]
        score = "containment" if pred["parameters"].get("method") == "exact" else "similarity"
        return "Leaking items", ["item", "field", "document", "shared passage", score], rows, 4
    if kind == "overlap":
        rows = [[clip(p["a"], 40), clip(p["b"], 40), f"{p['jaccard']:.3f}"]
                for p in details.get("pairs", [])]
        return "Duplicate pairs", ["a", "b", "jaccard"], rows, 2
    return None


def with_listing(doc: dict[str, Any], fmt: str) -> str:
    found = listing(doc["predicate"])
    return "" if not found else listed(*found, fmt)


def listed(title: str, header: list[str], rows: list[list[str]], left: int, fmt: str) -> str:
    """The first ``LISTED`` of ``rows`` under ``title``, then how many more (none: nothing)."""
    if not rows:
        return ""
    more = len(rows) - LISTED
    tail = f"... and {more} more (see the JSON report)\n" if more > 0 else ""
    if fmt == "table":
        return f"\n{title}:\n" + aligned(header, rows[:LISTED], left=left) + tail
    return f"\n#### {title}\n\n" + md_table(header, rows[:LISTED], right_from=len(header)) + tail
