"""Reciprocal rank fusion: ``score(c) = sum over retrievers of 1 / (k + rank)`` (rank from 1)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Candidate:
    """A chunk in a ranking, with the rank each retriever gave it (``sources``)."""

    index: int
    score: float
    sources: dict[str, int] = field(default_factory=dict)


def rrf(rankings: dict[str, list[int]], k: int = 60) -> list[Candidate]:
    """Fuse ``{retriever: [chunk index, best first]}``; ties by the best single rank, then index."""
    cands: dict[int, Candidate] = {}
    for name, ranking in sorted(rankings.items()):
        for rank, idx in enumerate(ranking, start=1):
            c = cands.setdefault(idx, Candidate(idx, 0.0))
            c.score += 1.0 / (k + rank)
            c.sources[name] = rank
    return sorted(cands.values(), key=lambda c: (-c.score, min(c.sources.values()), c.index))
