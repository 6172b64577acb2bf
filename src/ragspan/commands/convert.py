"""``ragspan convert qrels|run``: TREC <-> JSONL, losslessly."""

from __future__ import annotations

import logging

log = logging.getLogger("ragspan")


def run(what: str, src: str, fmt: str, out: str) -> None:
    """Convert ``src`` (format detected) to ``fmt`` at ``out`` (atomically). Run order is
    kept exactly: a JSONL run written as TREC gets strictly decreasing scores, so trec_eval
    reproduces its order."""
    from ragspan.io.outputs import write_files

    if what == "qrels":
        from ragspan.io.qrels import read_qrels, write_qrels

        text = write_qrels(read_qrels(src).judgments, fmt)
    else:
        from ragspan.io.docruns import read_doc_run, write_doc_run

        text = write_doc_run(read_doc_run(src), fmt)
    write_files({out: text})
    log.info("wrote %s (%s)", out, fmt)
