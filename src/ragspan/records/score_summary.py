"""What the gate reads of a score report's summary, as typed records decoded and checked in
one pass (``decode_summary``): the summary metrics (finite numbers), the documents asked and
in the corpus, saturation, steps, and the warnings the report carries. Other summary fields
are the renderers' and are ignored here, as the report schema allows. A value of the wrong
type or out of its range (a share outside [0, 1], a saturation threshold outside (0, 1], a
negative count) is ``msgspec.ValidationError`` naming its JSON path."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from ragspan.records.envelope import Finite

Share = Annotated[float, Meta(ge=0, le=1)]
Count = Annotated[int, Meta(ge=0)]


class SaturatedAt(Struct, frozen=True):
    queries: Count
    share: Share


class SaturationRead(Struct, frozen=True):
    """``summary.saturation``: the threshold, per cutoff the saturated queries, and the
    queries scoped to a document (None in reports that do not say)."""

    threshold: Annotated[float, Meta(gt=0, le=1)]
    by_k: dict[str, SaturatedAt]
    scoped_queries: Count | None = None


class StepsRead(Struct, frozen=True):
    """``summary.steps`` of a run that searched in steps."""

    rows: Count
    mean_steps: Annotated[float, Meta(ge=0)]
    grounded_by_first_step: Share
    grounded_by_all_steps: Share
    grounded_only_by_a_later_step: Share


class DocumentsRead(Struct, frozen=True):
    """``summary.documents``: the documents the questions asked about and the corpus's
    (None without a corpus)."""

    asked: Count
    corpus: Count | None = None


class WarningRead(Struct, frozen=True):
    """One of ``summary.warnings``: its code, how many times, one example."""

    code: str
    count: Count
    example: str


class PlacementRead(Struct, frozen=True):
    """``summary.placement``, the part the gate reads: the results dropped as unplaced."""

    dropped: Count | None = None


class SummaryRead(Struct, frozen=True, kw_only=True):
    metrics: dict[str, Finite]
    documents: DocumentsRead | None = None
    saturation: SaturationRead | None = None
    steps: StepsRead | None = None
    placement: PlacementRead | None = None
    warnings: list[WarningRead] = []


def decode_summary(summary: Any) -> SummaryRead:
    """A score report's summary (JSON values) as the gate reads it; strict: a boolean is no
    number, a string no count."""
    return msgspec.convert(summary, SummaryRead, strict=True)
