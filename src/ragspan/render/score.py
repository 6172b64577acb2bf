"""Score reports (``score.span``, ``score.doc``) as a table and as markdown."""

from __future__ import annotations

from typing import Any

from ragspan.render.text import aligned, md_table, metric_grid, ordered_metrics


def table(doc: dict[str, Any]) -> str:
    pred = doc["predicate"]
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
    grid = aligned(["metric", *[f"@{k}" for k in ks]], [[b, *c] for b, c in rows])
    return "\n".join(head + extra) + "\n\n" + grid


def markdown(doc: dict[str, Any]) -> str:
    s = doc["predicate"]["summary"]
    ks, rows = metric_grid(ordered_metrics(s))
    title = f"### ragspan score: {s['queries']} queries\n\n"
    return title + md_table(["metric", *[f"@{k}" for k in ks]], [[b, *c] for b, c in rows])
