"""The fused retrievers' share of a span report's relevant results (``summary.fusion``),
typed: its JSON names a key per retriever (``found_by_<source>_only``), so it gives its
counts by those keys (``counts``; the report body makes ``records.score.Fusion`` of them);
the summary's other sections are records (``records.score_facts``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


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

    def counts(self) -> dict[str, dict[str, int]]:
        """Per count cutoff: ``relevant_in_top``, ``promoted`` and one
        ``found_by_<source>_only`` per source (the report's ``summary.fusion.by_k``)."""
        return {k: {"relevant_in_top": v.relevant_in_top, "promoted": v.promoted,
                    **{f"found_by_{s}_only": n for s, n in v.found_only.items()}}
                for k, v in self.by_k.items()}
