"""Runs with steps: a question answered by several search calls (an agent that rewrites the
question and searches again, one search per hop, sub-questions fanned out).

A run row may give ``steps`` instead of ``retrieved``: a list of search calls in the order
they were made, each ``{"query": "...", "retrieved": [...]}`` with items as in
``retrieved`` (offsets, or text to be placed). The reader lays a row's steps end to end, in
step order, as its one list of results (the context the model saw); ``StepLayout`` keeps
which step each result came from and its rank inside that step, and each step's query.
A row without ``steps`` is one step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.base.errors import InputError

MAX_STEPS = 256  # search calls in one row


@dataclass(frozen=True)
class StepLayout:
    """Per result its step (0-based) and its rank inside the step; per row how many steps it
    made and each step's query (None where the step gave none, and for a row without
    steps)."""

    step: np.ndarray
    step_rank: np.ndarray
    row_steps: np.ndarray
    queries: list[list[str | None]]


class StepRows:
    """Each row's step lengths, as the reader reads the rows."""

    def __init__(self) -> None:
        self.lengths: list[list[int]] = []
        self.queries: list[list[str | None]] = []
        self.stepped: list[bool] = []
        self.any = False

    def flat(self, n: int) -> None:
        """A row of ``n`` results without steps."""
        self.lengths.append([n])
        self.queries.append([None])
        self.stepped.append(False)

    def add(self, lengths: list[int], queries: list[str | None]) -> None:
        """A row of steps with ``lengths`` results each."""
        self.lengths.append(lengths)
        self.queries.append(queries)
        self.stepped.append(True)
        self.any = True

    def where(self, row: int, position: int, key: str) -> str:
        """The name of the ``position``-th result of ``row`` in its file: ``key[i]``, or
        ``steps[j].retrieved[i]``."""
        if row >= len(self.stepped) or not self.stepped[row]:
            return f"{key}[{position}]"
        for j, n in enumerate(self.lengths[row]):
            if position < n:
                return f"steps[{j}].retrieved[{position}]"
            position -= n
        return f"{key}[{position}]"

    def layout(self) -> StepLayout | None:
        """The layout of every result (None when no row has steps)."""
        if not self.any:
            return None
        per_step = np.fromiter((n for row in self.lengths for n in row), dtype=np.int64)
        index = np.fromiter((j for row in self.lengths for j in range(len(row))),
                            dtype=np.int64, count=per_step.size)
        step = np.repeat(index, per_step)
        starts = np.cumsum(per_step) - per_step
        step_rank = np.arange(int(per_step.sum()), dtype=np.int64) - np.repeat(starts, per_step)
        row_steps = np.fromiter((len(row) for row in self.lengths), dtype=np.int64,
                                count=len(self.lengths))
        return StepLayout(step, step_rank, row_steps, self.queries)


def parse_steps(raw: Any, path: str, line: int) -> list[tuple[str | None, Any]]:
    """A row's ``steps``: a non-empty list of at most ``MAX_STEPS`` objects, each with a
    ``retrieved`` list and an optional ``query`` string; ``(query, retrieved)`` each."""
    if not isinstance(raw, list) or not raw:
        raise InputError("'steps' must be a non-empty list of search calls", path, line)
    if len(raw) > MAX_STEPS:
        raise InputError(f"'steps' lists {len(raw):,} search calls, more than {MAX_STEPS}",
                         path, line)
    out = []
    for j, step in enumerate(raw):
        if not isinstance(step, dict) or not isinstance(step.get("retrieved"), list):
            raise InputError(f"steps[{j}] must be an object with a 'retrieved' list", path,
                             line)
        query = step.get("query")
        if query is not None and not isinstance(query, str):
            raise InputError(f"steps[{j}].query must be a string", path, line)
        out.append((query, step["retrieved"]))
    return out
