"""What a score report states about its run beside the metrics, typed.

Each record is one section of a span report's ``summary``: ``scoring.run_facts`` computes
it, the report body writes it with ``as_json`` (the JSON keys below), and the gate reads
``saturation`` back into the same record. Cutoffs are keyed as in the report, by their JSON
text (``"5"``, ``"2000c"``, ``"512t"``), in the order the report lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Saturated:
    """At one cutoff: the scoped queries whose results cover at least the threshold of their
    document, and their share of the scoped queries."""

    queries: int
    share: float


@dataclass(frozen=True)
class Saturation:
    """``summary.saturation``: the share of its scoped document a query's results must cover
    (``threshold``, in (0, 1]), the queries scoped to a document (None when a report read
    back does not say) and, per cutoff at which any query saturates, ``Saturated``."""

    threshold: float
    by_k: Mapping[str, Saturated]
    scoped_queries: int | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"threshold": self.threshold, "by_k": {
            k: {"queries": v.queries, "share": v.share} for k, v in self.by_k.items()}}
        if self.scoped_queries is not None:
            out["scoped_queries"] = self.scoped_queries
        return out


@dataclass(frozen=True)
class OutsideAt:
    """At one cutoff: the results of the scoped queries within it and how many of them come
    from another document than the query's (``share`` = outside / results)."""

    results: int
    outside: int
    share: float


@dataclass(frozen=True)
class OffScope:
    """``summary.off_scope``: the queries that name their document and, per cutoff at which
    any result lies outside it, ``OutsideAt``."""

    scoped_queries: int
    by_k: Mapping[str, OutsideAt]

    def as_json(self) -> dict[str, Any]:
        return {"scoped_queries": self.scoped_queries, "by_k": {
            k: {"results": v.results, "outside": v.outside, "share": v.share}
            for k, v in self.by_k.items()}}


@dataclass(frozen=True)
class ChunkRecallAt:
    """At one count cutoff: the mean chunk-level recall over the queries with a relevant
    chunk, the mean of its ceiling ``min(1, k / relevant chunks)``, and the mean chunk-level
    nDCG (binary gain, trec_eval's ``ndcg_cut``: a relevant chunk at 0-based position ``p``
    adds ``1 / log2(p + 2)``, divided by the ideal ranking's DCG at k: all the query's
    relevant chunks at the top), and the same DCG divided by the ideal of the query's
    candidate set (``ndcg_candidates``, the localGPT harness's: the relevant chunks the
    ranking holds anywhere in its list, at the top; 0 when it holds none)."""

    recall: float
    ceiling: float
    ndcg: float
    ndcg_candidates: float

    def as_json(self) -> dict[str, float]:
        return {"recall": self.recall, "ceiling": self.ceiling, "ndcg": self.ndcg,
                "ndcg_candidates": self.ndcg_candidates}


@dataclass(frozen=True)
class ChunkRecall:
    """``summary.chunking.chunk_recall``: the queries with a relevant chunk and, per count
    cutoff (none when no query has one), ``ChunkRecallAt``; for a run that records its
    first stage (before a rerank or fusion), the same of that ranking (``first_stage``)."""

    queries: int
    by_k: Mapping[str, ChunkRecallAt]
    first_stage: Mapping[str, ChunkRecallAt] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"queries": self.queries,
                               "by_k": {k: v.as_json() for k, v in self.by_k.items()}}
        if self.first_stage is not None:
            out["first_stage"] = {k: v.as_json() for k, v in self.first_stage.items()}
        return out


@dataclass(frozen=True)
class SurfacedAt:
    """At one count cutoff: the relevant results in the final top k, those each fused
    retriever alone ranked below k (``promoted``), and per retriever those it listed and no
    other did (``found_only``, written ``found_by_<source>_only``)."""

    relevant_in_top: int
    promoted: int
    found_only: Mapping[str, int]


@dataclass(frozen=True)
class FusionSources:
    """``summary.fusion``: the fused retrievers (sorted) and, per count cutoff,
    ``SurfacedAt``."""

    sources: tuple[str, ...]
    by_k: Mapping[str, SurfacedAt]

    def as_json(self) -> dict[str, Any]:
        return {"sources": list(self.sources), "by_k": {
            k: {"relevant_in_top": v.relevant_in_top, "promoted": v.promoted,
                **{f"found_by_{s}_only": n for s, n in v.found_only.items()}}
            for k, v in self.by_k.items()}}


@dataclass(frozen=True)
class Reordering:
    """``summary.first_stage``: the run's rows and how many of them the reorder stage
    (rerank, fusion) changed."""

    rows: int
    reordered: int

    def as_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "reordered": self.reordered}


@dataclass(frozen=True)
class Steps:
    """``summary.steps``, for a run whose rows give ``steps`` (search calls in order): the
    queries with a run row, their mean number of steps, and, over every query of the eval
    set, the share that complete grounding reaches with the first step's results alone, with
    every step's, and only thanks to a later step (each step's whole list, no cutoff)."""

    rows: int
    mean_steps: float
    grounded_by_first_step: float
    grounded_by_all_steps: float
    grounded_only_by_a_later_step: float

    def as_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "mean_steps": self.mean_steps,
                "grounded_by_first_step": self.grounded_by_first_step,
                "grounded_by_all_steps": self.grounded_by_all_steps,
                "grounded_only_by_a_later_step": self.grounded_only_by_a_later_step}
