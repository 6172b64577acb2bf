"""``report.csv``: one row per query and configuration, beside the Markdown and HTML
readouts, for a spreadsheet or a notebook.

Columns: ``configuration``, ``query_id``, ``doc_id`` (empty when the query names none),
every metric the configurations carry (in the first configuration's order, then any other's;
empty where a configuration lacks it), then ``failure@k`` for each cutoff with failure
labels (the label, or empty where the query was grounded). Numbers are written as Python's
``repr`` (they read back to the same double). Text cells that a spreadsheet would take for a
formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) are prefixed
with ``'``, so an id taken from a file cannot run in the reader's spreadsheet. Rows follow
the configurations' order, then each report's query order; ``\\n`` ends every line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ragspan.scoring.metrics.registry import cutoff_key, parse_cutoff

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


def query_csv(configs: Sequence[Any]) -> str:
    """The CSV text of ``configs`` (``readout.build.Config``: a name and its typed report)."""
    names: list[str] = []
    for c in configs:
        names += [n for n in c.report.names if n not in names]
    label_ks = sorted({k for c in configs for r in c.report.rows for k in r.failure},
                      key=lambda k: cutoff_key(parse_cutoff(k)))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["configuration", "query_id", "doc_id", *names,
                     *[f"failure@{k}" for k in label_ks]])
    for c in configs:
        rep = c.report
        column = {n: j for j, n in enumerate(rep.names)}
        for i, row in enumerate(rep.rows):
            values = [repr(float(rep.values[i, column[n]])) if n in column else ""
                      for n in names]
            writer.writerow([_text(c.name), _text(row.id), _text(row.doc_id or ""), *values,
                             *[row.failure.get(k, "") for k in label_ks]])
    return out.getvalue()
