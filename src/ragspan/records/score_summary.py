"""What the gate reads of a score report's summary, as typed records decoded and checked in
one pass (``decode_summary``): the summary metrics (finite numbers), the documents asked and
in the corpus, saturation and steps (the records the scorer wrote them from,
``base.facts``), and the warnings the report carries. Other summary fields
are the renderers' and are ignored here, as the report schema allows. A value of the wrong
type or out of its range (a share outside [0, 1], a saturation threshold outside (0, 1], a
negative count) is ``msgspec.ValidationError`` naming its JSON path."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct

from ragspan.records.envelope import Finite
from ragspan.records.score_facts import Count, Saturation, Steps


class Documents(Struct, frozen=True):
    """``summary.documents``: how many documents the corpus holds (None when scored without
    one) and how many the eval set asks about (what the gate's sampling unit is decided
    from)."""

    corpus: Count | None
    asked: Count


class ReportWarning(Struct, frozen=True):
    """One of ``summary.warnings`` (``base.warned``): its code, how many times, one
    example."""

    code: str
    count: Count
    example: str


class PlacementRead(Struct, frozen=True):
    """``summary.placement``, the part the gate reads: the results dropped as unplaced."""

    dropped: Count | None = None


class SummaryRead(Struct, frozen=True, kw_only=True):
    metrics: dict[str, Finite]
    documents: Documents | None = None
    saturation: Saturation | None = None
    steps: Steps | None = None
    placement: PlacementRead | None = None
    warnings: list[ReportWarning] = []


def decode_summary(summary: Any) -> SummaryRead:
    """A score report's summary (JSON values) as the gate reads it; strict: a boolean is no
    number, a string no count."""
    return msgspec.convert(summary, SummaryRead, strict=True)
