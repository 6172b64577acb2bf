"""The placement settings, declared once: how a run's (or an import's) texts are checked
and placed in the corpus (``align``, ``on-ambiguous``, ``unplaced``, ``fuzzy-threshold``),
each an ``Option`` record (type, default, range, help) that the command line's options are
built from (``cli.common.placement_options``) and every other default reads
(``PLACEMENT_DEFAULTS``), merged once (``anchoring``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragspan.base.options import Option

PLACEMENT_OPTIONS: tuple[Option, ...] = (
    Option("align", "bool", False, "A retrieved text that its offsets do not slice back to is "
           "placed by its text (recorded) instead of refused."),
    Option("on-ambiguous", "enum", "error", "A text with several equally good places: refuse "
           "it, or take the first (counted).", choices=("error", "first")),
    Option("unplaced", "enum", "error", "A text that cannot be placed: refuse it, or score it "
           "as retrieving nothing (counted).", choices=("error", "drop")),
    Option("fuzzy-threshold", "float", 0.9, "Least similarity (0-1) of a fuzzy placement.",
           low=0, high=1, open_low=True),
)
PLACEMENT_DEFAULTS: dict[str, Any] = {o.attr: o.default for o in PLACEMENT_OPTIONS}


def anchoring(given: Mapping[str, Any]) -> dict[str, Any]:
    """The placement settings a report records (``parameters.anchoring``: ``align``,
    ``on_ambiguous``, ``unplaced``, ``threshold``): each given one (None: not given), else
    its one declared default."""
    merged = {k: PLACEMENT_DEFAULTS[k] if given.get(k) is None else given[k]
              for k in PLACEMENT_DEFAULTS}
    return {"align": merged["align"], "on_ambiguous": merged["on_ambiguous"],
            "unplaced": merged["unplaced"], "threshold": merged["fuzzy_threshold"]}
