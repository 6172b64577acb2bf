"""Text primitives of every renderer: aligned plain-text tables, GitHub markdown tables and
escaping, number formats, and the metric x k grid of a score summary. A leaf: it imports no
other renderer."""

from __future__ import annotations

from typing import Any


def aligned(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to a common width; the first ``left`` columns left-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [c.ljust(w) if i < left else c.rjust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)]) + "\n"


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def fmt_number(value: float, base: str) -> str:
    if base.startswith("retrieved_chars") or base.startswith("latency"):
        return f"{value:,.0f}"
    return f"{value:.4f}"


def metric_grid(summary_metrics: dict[str, float]) -> tuple[list[int], list[tuple[str, list[str]]]]:
    """Rows ``(metric base, cells)`` and the k columns, in first-seen metric order."""
    from ragspan.metrics.registry import parse_name

    parsed = [parse_name(n) for n in summary_metrics]
    ks: list[int] = sorted({p.k for p in parsed})
    bases: list[str] = []
    for p in parsed:
        base = p.column
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
    from ragspan.metrics.registry import METRICS, parse_name

    order = {name: i for i, name in enumerate(METRICS)}

    def key(name: str) -> tuple[bool, int, str]:
        p = parse_name(name)
        return (p.first_stage, order[p.base], f"{p.base}@{p.k:09d}")

    return {n: summary["metrics"][n] for n in sorted(summary["metrics"], key=key)}
