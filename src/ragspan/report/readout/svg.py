"""The report's two plots as inline SVG (no script, no font file; text in the page's font).

- ``intervals``: one row per configuration, the point estimate and its interval on a 0-1 axis.
- ``changes``: one row per configuration against the baseline, queries broken to the left
  and fixed to the right of zero (per-query changes of a binary metric), unchanged as text.
- ``curves``: one line per configuration, a 0-1 metric against characters per query (a log
  axis), and each configuration's fixed-k points on the same axes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

LABEL_W, PLOT_W, ROW_H, TOP, BOTTOM = 200, 520, 30, 16, 34
INK, MUTED, BASE, GOOD, BAD = "#1d2430", "#6b7685", "#2b6cb0", "#2f855a", "#c53030"


def _frame(height: int, body: list[str], label: str) -> str:
    width = LABEL_W + PLOT_W + 90
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(label)}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'font-family="system-ui,sans-serif" font-size="12">' + "".join(body) + "</svg>")


def _name(y: float, text: str, bold: bool = False) -> str:
    weight = ' font-weight="600"' if bold else ""
    return (f'<text x="{LABEL_W - 8}" y="{y + 4:.1f}" text-anchor="end" fill="{INK}"{weight}>'
            f"{html.escape(text)}</text>")


def intervals(rows: Sequence[tuple[str, float, float, float]], baseline: str,
              label: str) -> str:
    """``rows``: (configuration, estimate, low, high), values in [0, 1]."""
    height = TOP + ROW_H * len(rows) + BOTTOM
    def x(v: float) -> float:
        return LABEL_W + max(0.0, min(1.0, v)) * PLOT_W

    body = []
    axis_y = TOP + ROW_H * len(rows)
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{x(t):.1f}" y1="{TOP - 6}" x2="{x(t):.1f}" y2="{axis_y}" '
                    f'stroke="#e2e6ec"/>')
        body.append(f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle" '
                    f'fill="{MUTED}">{t:.2f}</text>')
    for i, (name, est, low, high) in enumerate(rows):
        y = TOP + ROW_H * i + ROW_H / 2
        colour = BASE if name == baseline else INK
        body.append(_name(y, name, name == baseline))
        body.append(f'<line x1="{x(low):.1f}" y1="{y:.1f}" x2="{x(high):.1f}" y2="{y:.1f}" '
                    f'stroke="{colour}" stroke-width="2"/>')
        for end in (low, high):
            body.append(f'<line x1="{x(end):.1f}" y1="{y - 5:.1f}" x2="{x(end):.1f}" '
                        f'y2="{y + 5:.1f}" stroke="{colour}" stroke-width="2"/>')
        body.append(f'<circle cx="{x(est):.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>')
        body.append(f'<text x="{x(1.0) + 10:.1f}" y="{y + 4:.1f}" fill="{INK}">{est:.3f}</text>')
    return _frame(height, body, label)


def changes(rows: Sequence[tuple[str, int, int, int]], label: str) -> str:
    """``rows``: (configuration, broken, fixed, unchanged) query counts."""
    height = TOP + ROW_H * max(len(rows), 1) + BOTTOM
    top = max([max(b, f) for _, b, f, _ in rows] + [1])
    mid = LABEL_W + PLOT_W / 2
    scale = (PLOT_W / 2 - 30) / top
    axis_y = TOP + ROW_H * max(len(rows), 1)
    body = [f'<line x1="{mid:.1f}" y1="{TOP - 6}" x2="{mid:.1f}" y2="{axis_y}" stroke="{MUTED}"/>',
            f'<text x="{mid - 8:.1f}" y="{axis_y + 16}" text-anchor="end" fill="{BAD}">'
            "broken (grounded in the baseline only)</text>",
            f'<text x="{mid + 8:.1f}" y="{axis_y + 16}" fill="{GOOD}">'
            "fixed (grounded in this configuration only)</text>"]
    for i, (name, broken, fixed, same) in enumerate(rows):
        y = TOP + ROW_H * i + 5
        body.append(_name(y + 10, name))
        if broken:
            body.append(f'<rect x="{mid - broken * scale:.1f}" y="{y}" width="{broken * scale:.1f}" '
                        f'height="{ROW_H - 10}" fill="{BAD}"/>')
        if fixed:
            body.append(f'<rect x="{mid:.1f}" y="{y}" width="{fixed * scale:.1f}" '
                        f'height="{ROW_H - 10}" fill="{GOOD}"/>')
        body.append(f'<text x="{mid - broken * scale - 6:.1f}" y="{y + 14}" text-anchor="end" '
                    f'fill="{BAD}">{broken}</text>')
        body.append(f'<text x="{mid + fixed * scale + 6:.1f}" y="{y + 14}" fill="{GOOD}">'
                    f"{fixed}</text>")
        body.append(f'<text x="{LABEL_W + PLOT_W + 10}" y="{y + 14}" fill="{MUTED}">'
                    f"{same} same</text>")
    return _frame(height, body, label)


PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16")


def curves(series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
           points: Sequence[tuple[str, str, float, float]], label: str) -> str:
    """``series``: (configuration, [(characters, value)]) in budget order, values in [0, 1];
    ``points``: (configuration, cutoff label, characters, value), the fixed-k points."""
    xs = [x for _, pts in series for x, _ in pts] + [x for _, _, x, _ in points]
    lo, hi = math.log10(max(min(xs), 1.0)), math.log10(max(max(xs), 10.0))
    hi = hi if hi > lo else lo + 1
    plot_h = 220
    height = TOP + plot_h + BOTTOM + 18 * len(series)
    left = 60
    width_plot = LABEL_W + PLOT_W - left
    def x(v: float) -> float:
        return left + (math.log10(max(v, 1.0)) - lo) / (hi - lo) * width_plot

    def y(v: float) -> float:
        return TOP + (1 - max(0.0, min(1.0, v))) * plot_h

    body = []
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + width_plot}" '
                    f'y2="{y(t):.1f}" stroke="#e2e6ec"/>')
        body.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" '
                    f'fill="{MUTED}">{t:.2f}</text>')
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        v = 10.0 ** e
        if lo <= e <= hi:
            body.append(f'<text x="{x(v):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" '
                        f'fill="{MUTED}">{v:,.0f}</text>')
    body.append(f'<text x="{left + width_plot / 2:.1f}" y="{TOP + plot_h + 30}" '
                f'text-anchor="middle" fill="{MUTED}">characters per query (log)</text>')
    for i, (name, pts) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in pts)
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                    'stroke-width="2"/>')
        for a, b in pts:
            body.append(f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="2.5" fill="{colour}"/>')
        for pname, cut, a, b in points:
            if pname == name:
                body.append(f'<rect x="{x(a) - 4:.1f}" y="{y(b) - 4:.1f}" width="8" height="8" '
                            f'fill="none" stroke="{colour}" stroke-width="2">'
                            f"<title>{html.escape(name)} @{html.escape(cut)}</title></rect>")
        ly = TOP + plot_h + 44 + 18 * i
        body.append(f'<line x1="{left}" y1="{ly - 4}" x2="{left + 20}" y2="{ly - 4}" '
                    f'stroke="{colour}" stroke-width="2"/>')
        body.append(f'<text x="{left + 26}" y="{ly}" fill="{INK}">{html.escape(name)} '
                    "(squares: its fixed-k points)</text>")
    return _frame(height, body, label)
