"""``ragspan convert qrels|run``: TREC <-> JSONL, losslessly."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ragspan.base.errors import InputError, UsageError
from ragspan.base.voice import setting
from ragspan.io.files import read_head
from ragspan.io.outputs import write_files
from ragspan.io.qrels import read_qrels, write_qrels
from ragspan.io.runs.docs import detect_run_format, read_doc_run, write_doc_run

log = logging.getLogger("ragspan")


def trec_safe(pairs: Iterable[tuple[str, str]], src: str) -> None:
    """TREC columns are split on whitespace: an id holding whitespace (or empty) would be
    written into a file its own reader rejects. InputError naming the first one."""
    for qid, doc in pairs:
        for what, value in (("query id", qid), ("doc id", doc)):
            if not value or any(c.isspace() for c in value):
                raise InputError(f"{what} {value!r} (query {qid!r}) holds whitespace: TREC "
                                 "cannot carry it; keep this file as JSONL", src)


def check_tag(tag: str | None, what: str, fmt: str) -> str:
    """The TREC run tag: ``ragspan`` when unset; a UsageError when given for anything but a
    run written as TREC, or when it is empty or holds whitespace (TREC splits on it)."""
    if tag is None:
        return "ragspan"
    if what != "run" or fmt != "trec":
        raise UsageError(f"{setting('tag')} names the tag column of a run written as TREC "
                         f"({setting('to')} trec); it has no place in {what} written as {fmt}")
    if not tag or any(c.isspace() for c in tag) or not tag.isprintable():
        raise UsageError(f"{setting('tag')} {tag!r} must be one printable word without whitespace: TREC "
                         "splits its columns on whitespace")
    return tag


def run(what: str, src: str, fmt: str, out: str, tag: str | None = None) -> None:
    """Convert ``src`` (format detected) to ``fmt`` at ``out`` (atomically). Run order is
    kept exactly: a JSONL run written as TREC gets strictly decreasing scores, so trec_eval
    reproduces its order; ``tag`` is its tag column (``check_tag``)."""
    tag = check_tag(tag, what, fmt)
    if what == "qrels":
        judgments = read_qrels(src).judgments
        if fmt == "trec":
            trec_safe(((q, d) for q, docs in judgments.items() for d in docs), src)
        text = write_qrels(judgments, fmt)
    else:
        if fmt == "trec" and detect_run_format(read_head(src), src) == "span":
            raise UsageError(f"{src} is a span run: TREC carries doc ids only, so its offsets "
                             "(and its spans within one document) would be lost; score it "
                             f"with {setting('eval-set')} instead")
        doc_run = read_doc_run(src)
        if fmt == "trec":
            trec_safe(((q, d) for q, docs in doc_run.per_query().items() for d in docs), src)
        text = write_doc_run(doc_run, fmt, tag)
    write_files({out: text})
    log.info("wrote %s (%s)", out, fmt)
