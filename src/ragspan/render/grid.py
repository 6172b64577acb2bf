"""Shared shaping of score reports into a metric x k grid (used by table and markdown)."""

from __future__ import annotations

from typing import Any


def fmt_number(value: float, base: str) -> str:
    if base.startswith("retrieved_chars") or base.startswith("latency"):
        return f"{value:,.0f}"
    return f"{value:.4f}"


def metric_grid(summary_metrics: dict[str, float]) -> tuple[list[int], list[tuple[str, list[str]]]]:
    """Rows ``(metric base, cells)`` and the k columns, in first-seen metric order."""
    ks: list[int] = sorted({int(n.split("@")[1]) for n in summary_metrics})
    bases: list[str] = []
    for name in summary_metrics:
        base = name.split("@")[0]
        if base not in bases:
            bases.append(base)
    rows = []
    for base in bases:
        cells = []
        for k in ks:
            v = summary_metrics.get(f"{base}@{k}")
            cells.append("" if v is None else fmt_number(v, base))
        rows.append((base, cells))
    return ks, rows


def ordered_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """Summary metrics ordered by the registry (complete grounding first), then by name."""
    from ragspan.metrics.registry import METRICS

    order = {name: i for i, name in enumerate(METRICS)}

    def key(name: str) -> tuple[int, int, str]:
        base, k = name.split("@")
        stage = base.endswith("_first_stage")
        base = base.removesuffix("_first_stage")
        return (stage, order.get(base, len(order)), f"{base}@{int(k):09d}")

    return {n: summary["metrics"][n] for n in sorted(summary["metrics"], key=key)}
