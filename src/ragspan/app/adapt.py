"""``ragspan adapt``: documents + questions with answer texts -> an eval set whose every
offset is verified."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from msgspec import UNSET

from ragspan.app.eval_build import build_result, input_ref
from ragspan.app.output import CommandResult
from ragspan.base.voice import setting
from ragspan.evalsets.adapt import adapt
from ragspan.io.corpus import FileSelection
from ragspan.records.evalbuild import AdaptParameters

log = logging.getLogger("ragspan")


def run(*, docs: str, queries: str, out: str, corpus_out: str | None,
        normalize_whitespace: bool, max_docs: int, max_bytes: int,
        max_pdf_chars_per_byte: float = 20.0, max_pdf_chars: int = 50_000_000,
        include: Sequence[str] = (), exclude: Sequence[str] = ()) -> CommandResult:
    """``include`` / ``exclude``: which files of a ``docs`` folder are documents (globs;
    default the supported extensions)."""
    selection = FileSelection(tuple(include) or FileSelection.include, tuple(exclude))
    build = adapt(docs, queries, normalize_whitespace=normalize_whitespace,
                  max_docs=max_docs, max_bytes=max_bytes,
                  pdf_cap=(max_pdf_chars_per_byte, max_pdf_chars), selection=selection)
    details, counts = build.details, build.counts
    if details.files is not UNSET:
        left = details.files.left_out
        log.warning(f"%s: %d files taken in as documents, %d left out%s ({setting('include')} "
                    f"and {setting('exclude')} choose; the report lists every file)", docs,
                    len(details.files.taken), len(left),
                    f": {', '.join(left[:5])}{' ...' if len(left) > 5 else ''}" if left else "")
    if counts.derived_ids:
        log.warning("%s: %d rows have no 'id'; each got one derived from its query and doc_id "
                    "(q- and 12 hex digits of their sha256, the same in every run; the report "
                    "lists them)", queries, counts.derived_ids)
    return build_result("adapt", build, out=out, corpus_out=corpus_out,
                        inputs=[input_ref("queries", queries)],
                        parameters=AdaptParameters(
                            normalize_whitespace=normalize_whitespace, max_docs=max_docs,
                            max_bytes=max_bytes, include=list(selection.include),
                            exclude=list(selection.exclude)))
