"""``ragspan metrics``: every metric ragspan computes, from the registry.

A listing, like ``--help``: it reads no input, so it writes no report envelope; ``json`` is
the registry itself as canonical JSON (one object per metric)."""

from __future__ import annotations

from ragspan.base.canonical import canonical_dumps
from ragspan.report.render.text import Markdown, aligned, md_table
from ragspan.scoring.metrics.registry import LISTING_HEADER, METRICS, listing_rows


def run(fmt: str) -> str:
    """The registry as ``table``, ``markdown`` or ``json`` text (ending in a newline)."""
    if fmt == "json":
        return canonical_dumps([{"name": m.name, "family": m.family, "binary": m.binary,
                                 "bounded": m.bounded, "higher_is_better": m.higher_is_better,
                                 "trec_eval": m.trec_eval, "definition": m.definition}
                                for m in METRICS.values()])

    rows = listing_rows()
    if fmt == "markdown":  # the definitions are the registry's own markdown, not data
        rows = [[*r[:-1], Markdown(r[-1].replace("|", "\\|"))] for r in rows]
        return md_table(LISTING_HEADER, rows, right_from=len(LISTING_HEADER))
    return aligned(LISTING_HEADER, rows, left=len(LISTING_HEADER))
