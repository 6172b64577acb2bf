"""``migrate`` reports as a table and as markdown: the spans per status, the questions per
fate and the documents added, removed and changed, then every span a person should review
(edited, deleted, ambiguous)."""

from __future__ import annotations

from typing import Any

from ragspan.report.render.generic import LISTED
from ragspan.report.render.text import aligned, md_table

REVIEW = ("edited", "deleted", "ambiguous")


def rows(summary: dict[str, Any]) -> list[list[str]]:
    out = [[f"gold spans {status}", f"{n:,}"] for status, n in summary["spans"].items()]
    out += [[f"questions {fate.replace('_', ' ')}", f"{n:,}"]
            for fate, n in summary["questions"].items()]
    out += [[f"documents {what}", f"{n:,}"] for what, n in summary["documents"].items()]
    return out


def _review(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["query", "document", "old", "new", "status", "why", "similarity"]
    listed = []
    for s in doc["predicate"]["details"]["spans"]:
        if s["status"] not in REVIEW:
            continue
        new = "-" if s["new"] is None else f"[{s['new'][0]}, {s['new'][1]})"
        sim = "-" if s["similarity"] is None else f"{s['similarity']:.3f}"
        listed.append([s["query_id"], s["doc_id"], f"[{s['old'][0]}, {s['old'][1]})", new,
                       s["status"], s.get("reason", ""), sim])
    return header, listed


def _with_review(doc: dict[str, Any], fmt: str) -> str:
    header, listed = _review(doc)
    if not listed:
        return ""
    more = len(listed) - LISTED
    tail = f"... and {more} more (see the JSON report)\n" if more > 0 else ""
    if fmt == "table":
        return "\nTo review:\n" + aligned(header, listed[:LISTED], left=6) + tail
    return ("\n#### To review\n\n" + md_table(header, listed[:LISTED], right_from=6)
            + tail)


def headline(summary: dict[str, Any]) -> str:
    """What the migration did, in its counts: never a verdict (a migration decides nothing
    about the pull request; ``compare --migration`` does)."""
    q, sp = summary["questions"], summary["spans"]
    return (f"{q['kept']:,} questions kept, {q['set_aside']:,} set aside for review, "
            f"{q['dropped']:,} dropped; gold spans {sp.get('unchanged', 0):,} unchanged, "
            f"{sp.get('moved', 0):,} moved, {sp.get('edited', 0):,} edited, "
            f"{sp.get('deleted', 0):,} deleted, {sp.get('ambiguous', 0):,} ambiguous")


def table(doc: dict[str, Any]) -> str:
    summary = doc["predicate"]["summary"]
    return (f"ragspan migrate: {headline(summary)}\n\n"
            + aligned(["what", "count"], rows(summary)) + _with_review(doc, "table"))


def markdown(doc: dict[str, Any]) -> str:
    summary = doc["predicate"]["summary"]
    return (f"### ragspan migrate: {headline(summary)}\n\n"
            + md_table(["what", "count"], rows(summary), right_from=1)
            + _with_review(doc, "markdown"))
