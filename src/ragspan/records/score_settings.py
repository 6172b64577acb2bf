"""What a score is computed with, one record for every way in: ``ScoreSettings``, which the
``score`` command, the Python API, ``sweep`` and ``compare``'s re-scoring all build by
keyword and hand to ``app.score``; and ``RecordedParameters``, a score report's
``parameters`` decoded and checked in one pass (each field as the scorers write it; a field a
report leaves out reads as what it was written without), from which ``compare`` re-scores.

The cutoffs are the parsed ones (``scoring.metrics.registry.parse_cutoff``: counts, and the
``Chars``/``Tokens`` budgets, both ints); the recorded ones are their text (``"5"``,
``"2000c"``, ``"512t"``) or, in reports of earlier releases, a count as a number."""

from __future__ import annotations

import sys
from typing import Annotated

import msgspec
from msgspec import Meta, Struct

Finite = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
DEFAULT_TOKENIZER = "cl100k_base"  # what a token budget counts in (no download)
DEFAULT_MIN_COVERAGE = 0.5  # share of the scored queries the run must have a row for


class Anchoring(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a run's texts are checked and placed (``parameters.anchoring``; the defaults are
    ``base.placement``'s, merged by ``base.placement.anchoring``)."""

    align: bool
    on_ambiguous: str
    unplaced: str
    threshold: Finite


class ScoreSettings(Struct, frozen=True, kw_only=True):
    """Every setting of one score (``ragspan score``'s flags, the API's arguments).

    ``ks``: the cutoffs, parsed; ``tau``: the grounding threshold; ``relevance_level`` and
    ``judged_only``: the doc-level view's; ``anchoring``: the placement rule of a run's texts
    (None: the defaults); ``chroma_metrics``: Chroma's IoU metrics too; ``tokenizer``: what a
    token budget counts in; ``budget_grid``: the character grid beside ``ks`` (None: on for
    a span score); ``qrels_format``, ``run_format``: the files' formats (``auto``: detected);
    ``on_duplicate``: ``error`` or ``first``; ``min_coverage``: the least share of questions
    the run must have a row for."""

    ks: tuple[int, ...]
    tau: float = 0.5
    relevance_level: int = 1
    judged_only: bool = False
    anchoring: Anchoring | None = None
    chroma_metrics: bool = False
    tokenizer: str = DEFAULT_TOKENIZER
    budget_grid: bool | None = None
    qrels_format: str = "auto"
    run_format: str = "auto"
    on_duplicate: str = "error"
    min_coverage: float = DEFAULT_MIN_COVERAGE


class RecordedParameters(Struct, frozen=True, kw_only=True):
    """The scoring fields of a score report's ``parameters`` (the others, such as
    ``run_config`` or ``argv``, are read by no re-score and left out here); a field absent
    from the report reads as what a report is written without it."""

    k: list[str | int]
    grounding_threshold: Finite = 0.5
    relevance_level: int = 1
    judged_only: bool = False
    anchoring: Anchoring | None = None
    chroma_metrics: bool = False
    tokenizer: str = DEFAULT_TOKENIZER
    qrels_format: str = "auto"
    run_format: str = "auto"
    on_duplicate: str = "error"


def recorded_parameters(params: object) -> RecordedParameters:
    """A report's ``parameters`` (plain JSON values) as ``RecordedParameters``, strictly:
    ``msgspec.ValidationError`` naming the JSON path (``$.grounding_threshold``) when a
    field is not of its type."""
    return msgspec.convert(params, RecordedParameters, strict=True)
