"""A span run's rows as ragspan writes them (``run-retriever``, ``import traces``,
``import ragas``): one question's ranked spans, or the steps of an agent's calls, with what
the run records beside them. The retrievers build these records; the run file is written
from them (``msgspec.to_builtins``: a field left unset is left out, the rest in the order
below), so every writer of a run spells a row the same way. Reading a run is
``io.runs.spans``' (a run a user wrote may carry more)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite
from ragspan.records.evalbuild import SpanText
from ragspan.records.score_rows import Placed


class ManifestRow(Struct, kw_only=True):
    """A chunk as a chunk manifest lists it (``--chunks-out``): its id, document and
    offsets."""

    chunk_id: str
    doc_id: str
    start: int
    end: int


class RunItem(Struct, kw_only=True):
    """A retrieved span: its document and offsets, the retriever's score, the chunk it came
    from and the fused retrievers' ranks (ragspan's pipeline), and its text (the corpus
    slice, which scoring checks)."""

    doc_id: str
    start: int
    end: int
    score: Finite | UnsetType = UNSET
    chunk_id: str | UnsetType = UNSET
    sources: dict[str, int] | UnsetType = UNSET
    text: str | UnsetType = UNSET


class TracedItem(SpanText, kw_only=True):
    """A document of a traced retriever call placed in the corpus (``import traces``): its
    place and text, and the score the trace gave it."""

    score: Finite | UnsetType = UNSET


class RankPlaced(Struct, kw_only=True):
    """A retrieved context placed other than exactly (``import ragas``): its rank, how it
    was placed and how similar the place is."""

    rank: int
    method: str
    similarity: Finite


class RunStep(Struct, kw_only=True):
    """One retriever call of an agent: what it asked (when known) and what it returned."""

    query: str | UnsetType = UNSET
    retrieved: list[RunItem] | list[TracedItem]


class RunRow(Struct, kw_only=True):
    """One question of a span run: its ranked spans (or its steps), the first stage's
    ranking before a rerank, the time it took (with ``--record-latency``) and by stage,
    the pipeline's configuration digest, and the results placed by their text."""

    id: str
    retrieved: list[RunItem] | UnsetType = UNSET
    retrieved_first_stage: list[RunItem] | UnsetType = UNSET
    steps: list[RunStep] | UnsetType = UNSET
    latency_ms: Finite | UnsetType = UNSET
    stage_ms: dict[str, Finite] | UnsetType = UNSET
    config_digest: str | UnsetType = UNSET
    placed: list[Placed] | list[RankPlaced] | UnsetType = UNSET
