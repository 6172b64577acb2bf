"""What changed, query by query: the most regressed queries and the complete-grounding gains
and losses by failure label (``grounding_changes``, ``why_line``)."""

from __future__ import annotations

import numpy as np
from msgspec import UNSET

from ragspan.base.errors import UsageError
from ragspan.gate.alignment import Comparison
from ragspan.records.compare import LabelChanges, QueryCounts, Worst
from ragspan.records.compare_details import Change, PerQueryDiff, QueryDiff, Regressed
from ragspan.scoring.metrics.registry import (
    FAILURE_LEVERS,
    LABELS,
    parse_name,
)


def most_regressed(cmp: Comparison, primary: str, top: int) -> list[Regressed]:
    """The ``top`` queries with the largest drop of the primary metric (ties by id)."""
    if primary not in cmp.names:
        raise UsageError(f"primary metric '{primary}' is not in both reports")
    j = cmp.names.index(primary)
    parsed = parse_name(primary)
    higher = parsed.spec.higher_is_better
    delta = cmp.cand[:, j] - cmp.base[:, j]
    if not higher:
        delta = -delta
    order = sorted((d, qid, i) for i, (qid, d) in enumerate(zip(cmp.ids, delta)) if d < -1e-12)
    k = str(parsed.k)
    out = []
    grounding = parsed.column == "complete_grounding"
    for _, qid, i in order[:top]:
        label = cmp.rows_cand[qid].failure.get(k) if grounding else None
        out.append(Regressed(
            id=qid, query=cmp.rows_base[qid].query, baseline=float(cmp.base[i, j]),
            candidate=float(cmp.cand[i, j]), delta=float(cmp.cand[i, j] - cmp.base[i, j]),
            lost_spans=cmp.rows_cand[qid].lost(k) if grounding else UNSET,
            label=UNSET if label is None else label))
    return out


def per_query_summary(cmp: Comparison, gated: tuple[str, ...]) -> dict[str, QueryCounts]:
    """``summary.per_query``: per gated metric, how many queries the candidate made better,
    worse and left the same (a change below 1e-12 is the same), and its worst query (the
    largest drop, ties by id; None when none dropped)."""
    out: dict[str, QueryCounts] = {}
    for name in (n for n in cmp.names if n in gated):
        j = cmp.names.index(name)
        delta = cmp.cand[:, j] - cmp.base[:, j]
        if not parse_name(name).spec.higher_is_better:
            delta = -delta
        worse = [(float(d), qid) for d, qid in zip(delta, cmp.ids) if d < -1e-12]
        worst = min(worse) if worse else None
        out[name] = QueryCounts(better=int((delta > 1e-12).sum()), worse=len(worse),
                                same=int((abs(delta) <= 1e-12).sum()),
                                worst=None if worst is None else Worst(worst[1], -worst[0]))
    return out


def per_query_diff(cmp: Comparison, gated: tuple[str, ...]) -> PerQueryDiff:
    """Every query's baseline, candidate and delta (candidate - baseline) of every gated
    metric, in the baseline's query order: ``{"metrics": [names], "queries": [{"id",
    "baseline": [...], "candidate": [...], "delta": [...]}]}``, each list in the order of
    ``metrics``. Ungated metrics are left out (a span report carries dozens of columns;
    the score reports hold them all)."""
    names = [n for n in cmp.names if n in gated]
    cols = [cmp.names.index(n) for n in names]
    base = cmp.base[:, cols].tolist()
    cand = cmp.cand[:, cols].tolist()
    return PerQueryDiff(metrics=names, queries=[
        QueryDiff(id=qid, baseline=b, candidate=c, delta=[y - x for x, y in zip(b, c)])
        for qid, b, c in zip(cmp.ids, base, cand)])


UNLABELLED = "unlabelled"  # a report made before the labels, or a query without its row


def _label_counts(labels: list[str]) -> dict[str, int]:
    order = {label: i for i, label in enumerate(LABELS)}
    found: dict[str, int] = {}
    for label in labels:
        found[label] = found.get(label, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)))))


def _said(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {label}" + (f" ({FAILURE_LEVERS[label]})" if label in FAILURE_LEVERS else "")
                     for label, n in counts.items())


def grounding_changes(cmp: Comparison
                      ) -> tuple[dict[str, LabelChanges], dict[str, list[Change]]]:
    """Per k of complete grounding: how many queries the candidate broke (grounded in the
    baseline, not in the candidate) counted by their candidate label, and fixed counted by
    their baseline label (summary); and each such query with both labels (details)."""
    counts: dict[str, LabelChanges] = {}
    queries: dict[str, list[Change]] = {}
    for k in cmp.ks:
        name = f"complete_grounding@{k}"
        if name not in cmp.names:
            continue
        j = cmp.names.index(name)
        b, c = cmp.base[:, j] >= 1.0, cmp.cand[:, j] >= 1.0
        rows = []
        for i in np.flatnonzero(b != c).tolist():
            qid = cmp.ids[i]
            rows.append(Change(id=qid, change="fixed" if c[i] else "broken",
                               baseline_label=cmp.rows_base[qid].failure.get(str(k), None),
                               candidate_label=cmp.rows_cand[qid].failure.get(str(k), None)))
        broken = [r.candidate_label or UNLABELLED for r in rows if r.change == "broken"]
        fixed = [r.baseline_label or UNLABELLED for r in rows if r.change == "fixed"]
        counts[str(k)] = LabelChanges(broken=len(broken), broken_by_label=_label_counts(broken),
                                      fixed=len(fixed), fixed_by_label=_label_counts(fixed))
        queries[str(k)] = rows
    return counts, queries


def why_line(changes: dict[str, LabelChanges], k: int) -> str | None:
    """The sentence a PR comment most needs: what broke at ``k`` and which lever each
    broken query points at (and what was fixed, by the label it had)."""
    at = changes.get(str(k))
    if at is None or not (at.broken or at.fixed):
        return None
    parts = []
    if at.broken:
        parts.append(f"{at.broken} {'query' if at.broken == 1 else 'queries'} lost "
                     f"complete grounding@{k}: " + _said(at.broken_by_label))
    if at.fixed:
        parts.append(f"{at.fixed} gained it, having been " + _said(at.fixed_by_label))
    return "; ".join(parts)
