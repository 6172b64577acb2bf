"""GitHub-flavoured markdown (step summaries, PR comments)."""

from __future__ import annotations

from typing import Any

from ragspan.render.grid import metric_grid, ordered_metrics


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def render_markdown(doc: dict[str, Any]) -> str:
    pred = doc["predicate"]
    if pred["kind"] == "compare":
        from ragspan.render.compare_text import compare_markdown

        return compare_markdown(doc)
    if pred["kind"] in ("score.span", "score.doc"):
        s = pred["summary"]
        ks, rows = metric_grid(ordered_metrics(s))
        title = f"### ragspan score: {s['queries']} queries\n\n"
        return title + md_table(["metric", *[f"@{k}" for k in ks]], [[b, *c] for b, c in rows])
    from ragspan.render.generic import generic_markdown

    return generic_markdown(doc)
