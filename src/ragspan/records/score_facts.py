"""What a score report states about its run beside the metrics, as typed records.

Each record is one section of a span report's ``summary``: ``scoring.run_facts`` computes
it, the report body writes it (``records.envelope.encode``: the field names below are the
JSON keys, a field at its default left out), and the gate reads ``saturation`` and ``steps``
back into the same records (``records.score_summary``, which checks the ranges annotated
here; ``fusion`` is ``base.facts.FusionSources``). Cutoffs are keyed as in the report, by
their JSON text (``"5"``, ``"2000c"``, ``"512t"``), in the order the report lists them.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

Share = Annotated[float, Meta(ge=0, le=1)]
Count = Annotated[int, Meta(ge=0)]


class Saturated(Struct, frozen=True):
    """At one cutoff: the scoped queries whose results cover at least the threshold of their
    document, and their share of the scoped queries."""

    queries: Count
    share: Share


class Saturation(Struct, frozen=True, omit_defaults=True):
    """``summary.saturation``: the share of its scoped document a query's results must cover
    (``threshold``, in (0, 1]), the queries scoped to a document (None when a report read
    back does not say) and, per cutoff at which any query saturates, ``Saturated``."""

    threshold: Annotated[float, Meta(gt=0, le=1)]
    by_k: dict[str, Saturated]
    scoped_queries: Count | None = None


class OutsideAt(Struct, frozen=True):
    """At one cutoff: the results of the scoped queries within it and how many of them come
    from another document than the query's (``share`` = outside / results)."""

    results: int
    outside: int
    share: float


class OffScope(Struct, frozen=True):
    """``summary.off_scope``: the queries that name their document and, per cutoff at which
    any result lies outside it, ``OutsideAt``."""

    scoped_queries: int
    by_k: dict[str, OutsideAt]


class ChunkRecallAt(Struct, frozen=True):
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


class ChunkRecall(Struct, frozen=True, omit_defaults=True):
    """``summary.chunking.chunk_recall``: the queries with a relevant chunk and, per count
    cutoff (none when no query has one), ``ChunkRecallAt``; for a run that records its
    first stage (before a rerank or fusion), the same of that ranking (``first_stage``)."""

    queries: int
    by_k: dict[str, ChunkRecallAt]
    first_stage: dict[str, ChunkRecallAt] | None = None


class Reordering(Struct, frozen=True):
    """``summary.first_stage``: the run's rows and how many of them the reorder stage
    (rerank, fusion) changed."""

    rows: int
    reordered: int


class Steps(Struct, frozen=True):
    """``summary.steps``, for a run whose rows give ``steps`` (search calls in order): the
    queries with a run row, their mean number of steps, and, over every query of the eval
    set, the share that complete grounding reaches with the first step's results alone, with
    every step's, and only thanks to a later step (each step's whole list, no cutoff)."""

    rows: Count
    mean_steps: Annotated[float, Meta(ge=0)]
    grounded_by_first_step: Share
    grounded_by_all_steps: Share
    grounded_only_by_a_later_step: Share


class Percentiles(Struct, frozen=True):
    """p50 and p95 of a stage's times, in milliseconds."""

    p50: float
    p95: float


class Latency(Struct, frozen=True):
    """Per-query times in milliseconds: p50 and p95 over the rows that recorded one (``rows``;
    absent when none did) and, per stage (embed, search, fusion, rerank), over the rows it
    ran for (``summary.latency_ms`` of a span report, ``execution.latency_ms`` of a
    run-retriever report)."""

    rows: Count
    p50: float | UnsetType = UNSET
    p95: float | UnsetType = UNSET
    stages: dict[str, Percentiles] | UnsetType = UNSET


class RunLatency(Latency, frozen=True, kw_only=True):
    """``summary.latency_ms`` of a span report: written only when some row recorded a time,
    so its p50 and p95 are always there."""

    p50: float
    p95: float
