"""``ragspan adapt``: documents + questions with answer texts -> an eval set whose every
offset is verified."""

from __future__ import annotations

from ragspan.commands.output import CommandResult


def run(*, docs: str, queries: str, out: str, corpus_out: str | None,
        normalize_whitespace: bool, max_docs: int, max_bytes: int) -> CommandResult:
    from ragspan.adapt import adapt
    from ragspan.commands.eval_build import build_result, input_ref

    build = adapt(docs, queries, normalize_whitespace=normalize_whitespace,
                  max_docs=max_docs, max_bytes=max_bytes)
    return build_result("adapt", build, out=out, corpus_out=corpus_out,
                        inputs=[input_ref("queries", queries)],
                        parameters={"normalize_whitespace": normalize_whitespace,
                                    "max_docs": max_docs, "max_bytes": max_bytes})
