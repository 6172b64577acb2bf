"""``ragspan adapt``: documents + questions with answer texts -> an eval set whose every
offset is verified."""

from __future__ import annotations

from ragspan.app.eval_build import build_result, input_ref
from ragspan.app.output import CommandResult
from ragspan.evalsets.adapt import adapt


def run(*, docs: str, queries: str, out: str, corpus_out: str | None,
        normalize_whitespace: bool, max_docs: int, max_bytes: int,
        max_pdf_chars_per_byte: float = 20.0, max_pdf_chars: int = 50_000_000) -> CommandResult:
    build = adapt(docs, queries, normalize_whitespace=normalize_whitespace,
                  max_docs=max_docs, max_bytes=max_bytes,
                  pdf_cap=(max_pdf_chars_per_byte, max_pdf_chars))
    return build_result("adapt", build, out=out, corpus_out=corpus_out,
                        inputs=[input_ref("queries", queries)],
                        parameters={"normalize_whitespace": normalize_whitespace,
                                    "max_docs": max_docs, "max_bytes": max_bytes})
