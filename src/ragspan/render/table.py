"""Aligned plain-text tables for terminals."""

from __future__ import annotations

from typing import Any

from ragspan.render.grid import metric_grid, ordered_metrics


def aligned(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to a common width; the first ``left`` columns left-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [c.ljust(w) if i < left else c.rjust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)]) + "\n"


def render_table(doc: dict[str, Any]) -> str:
    pred = doc["predicate"]
    kind = pred["kind"]
    if kind == "compare":
        from ragspan.render.compare_text import compare_table

        return compare_table(doc)
    if kind in ("score.span", "score.doc"):
        return score_table(pred)
    from ragspan.render.generic import generic_table

    return generic_table(doc)


def score_table(pred: dict[str, Any]) -> str:
    s = pred["summary"]
    ks, rows = metric_grid(ordered_metrics(s))
    head = [f"ragspan score ({pred['kind']}): {s['queries']} queries"]
    extra = []
    for key in ("queries_without_run_row", "run_rows_without_query", "queries_without_judgments",
                "judged_queries_without_run_row", "run_rows_for_unjudged_queries"):
        if s.get(key):
            extra.append(f"{key.replace('_', ' ')}: {s[key]}")
    if "grounding_threshold" in pred["parameters"]:
        head.append(f"grounding threshold tau = {pred['parameters']['grounding_threshold']}")
    lat = s.get("latency_ms")
    if lat:
        head.append(f"latency per query: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms "
                    f"({lat['rows']} rows)")
    table = aligned(["metric", *[f"@{k}" for k in ks]], [[b, *c] for b, c in rows])
    return "\n".join(head + extra) + "\n\n" + table
