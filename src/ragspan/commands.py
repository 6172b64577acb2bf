"""Command implementations: read the inputs, call the core, return a report envelope.

The click functions in ``cli.py`` only parse arguments and call these.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ragspan.errors import UsageError

log = logging.getLogger("ragspan")


def score_command(
    *,
    eval_set: str | None,
    run: str,
    corpus: str | None = None,
    qrels: str | None = None,
    qrels_format: str = "auto",
    run_format: str = "auto",
    ks: Sequence[int] = (),
    tau: float = 0.5,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> dict[str, Any]:
    """``ragspan score``: a span report (eval set + span run) or a doc report (qrels + run)."""
    from ragspan.scoring import DEFAULT_KS

    ks = tuple(ks) or DEFAULT_KS
    if (eval_set is None) == (qrels is None):
        raise UsageError("give exactly one of --eval-set (span level) or --qrels (doc level)")
    if qrels is not None:
        from ragspan.doclevel import doc_score_command

        return doc_score_command(
            qrels=qrels, run=run, qrels_format=qrels_format, run_format=run_format, ks=ks,
            relevance_level=relevance_level, judged_only=judged_only,
        )
    if run_format not in ("auto", "span"):
        raise UsageError("--eval-set scores span runs; use --qrels for a doc-level run")
    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.io.runs import read_span_run
    from ragspan.scoring import compute_span_report, span_envelope

    evalset = read_eval_set(eval_set)
    span_run = read_span_run(run)
    corp = read_corpus(corpus) if corpus else None
    report = compute_span_report(evalset, span_run, corp, ks, tau)
    from ragspan.doclevel import span_doc_projection

    report.doc_level = span_doc_projection(report, ks, relevance_level, judged_only)
    log.info(
        "scored %d queries (%d without a run row, %d run rows without a query)",
        len(evalset.queries), int((~report.in_run).sum()), len(report.unmatched_run_ids),
    )
    return span_envelope(report)
