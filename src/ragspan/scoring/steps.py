"""What the steps of a multi-step run did (``io.runs.steps``): per query, the step that
first grounded each gold span and the characters each step added; over the eval set, what
the first search call alone would have grounded and what only a later one did.

Every step's whole list counts here (no cutoff): this is what the calls found, beside the
metrics at each cutoff. A gold span is grounded by step ``s`` (1-based) when the results of
steps 1 to ``s`` together cover at least ``tau`` of it; a query is grounded as complete
grounding says (every gold span, or one for ``match: any``). The characters a step added
are those of its results (within their documents) that no earlier step's results cover.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragspan.records.score_facts import Steps
from ragspan.scoring.metrics.span import GoldColumns, RankedColumns
from ragspan.scoring.spans import merged


@dataclass(frozen=True)
class StepDetails:
    """Per query: ``gold_steps`` (per gold span, the 1-based step that first grounded it, or
    None) and ``step_chars`` (per step, the characters it added)."""

    gold_steps: list[list[int | None]]
    step_chars: list[list[int]]
    summary: Steps


def _covered(union: list[tuple[int, int]], s: int, e: int) -> int:
    return sum(max(0, min(e, b) - max(s, a)) for a, b in union)


def step_details(gold: GoldColumns, ranked: RankedColumns, tau: float,
                 in_run: np.ndarray) -> StepDetails | None:
    """The steps' facts of every query (None for a run without steps)."""
    if ranked.step is None or ranked.query_steps is None:
        return None
    n = gold.n_queries
    order = np.lexsort((ranked.rank, ranked.query))
    q_of, step_of = ranked.query[order].tolist(), ranked.step[order].tolist()
    doc_of = ranked.doc[order].tolist()
    start_of, end_of = ranked.start[order].tolist(), ranked.end[order].tolist()
    results: list[list[tuple[int, int, int, int]]] = [[] for _ in range(n)]
    for q, st, d, s, e in zip(q_of, step_of, doc_of, start_of, end_of):
        results[q].append((st, d, s, e))
    spans: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    for q, d, s, e in zip(gold.query.tolist(), gold.doc.tolist(), gold.start.tolist(),
                          gold.end.tolist()):
        spans[q].append((d, s, e))
    steps_of = ranked.query_steps.tolist()
    gold_steps: list[list[int | None]] = []
    step_chars: list[list[int]] = []
    first = every = later = 0
    for q in range(n):
        firsts, added = _one_query(results[q], spans[q], steps_of[q], tau)
        gold_steps.append(firsts)
        step_chars.append(added)
        reached = [f is not None for f in firsts]
        by_first = [f == 1 for f in firsts]
        need = any if bool(gold.match_any[q]) else all
        grounded, alone = bool(firsts) and need(reached), bool(firsts) and need(by_first)
        first += alone
        every += grounded
        later += grounded and not alone
    rows = int(in_run.sum())
    mean = float(np.asarray(steps_of)[in_run].mean()) if rows else 0.0
    def share(x: float) -> float:
        return x / n if n else 0.0
    return StepDetails(gold_steps, step_chars,
                       Steps(rows, mean, share(first), share(every), share(later)))


def _one_query(results: list[tuple[int, int, int, int]], spans: list[tuple[int, int, int]],
               n_steps: int, tau: float) -> tuple[list[int | None], list[int]]:
    firsts: list[int | None] = [None] * len(spans)
    added: list[int] = []
    union: dict[int, list[tuple[int, int]]] = {}
    before = 0
    for step in range(n_steps):
        for st, d, s, e in results:
            if st == step:
                union.setdefault(d, []).append((s, e))
        union = {d: merged(v) for d, v in union.items()}
        total = sum(b - a for v in union.values() for a, b in v)
        added.append(total - before)
        before = total
        for i, (d, s, e) in enumerate(spans):
            if firsts[i] is None and e > s and \
                    _covered(union.get(d, []), s, e) / (e - s) >= tau:
                firsts[i] = step + 1
    return firsts, added
