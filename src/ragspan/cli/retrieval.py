"""The commands that run retrievers: ``run-retriever`` and ``sweep``."""

from __future__ import annotations

from typing import Any

import click

from ragspan.cli.common import (
    FiniteFloatRange,
    cli,
    common_options,
    emit,
    format_option,
    guard,
    k_option,
    run_retriever_options,
)


@cli.command("run-retriever")
@click.option("--corpus", required=True, type=str, help="Corpus (JSONL or directory).")
@click.option("--eval-set", "eval_set", required=True, type=str, help="Eval set (its queries are run).")
@click.option("--config", type=str, help="Pipeline config (TOML); see examples/configs/.")
@click.option("--retriever", type=str,
              help="Your own retriever, module:attr or module:factory() (imports and runs your code).")
@click.option("--out", required=True, type=str, help="Span run to write (JSONL).")
@click.option("--chunks-out", type=str, help="Write the chunk manifest (JSONL) here.")
@click.option("--report", type=str, help="Write the JSON report here (atomically).")
@run_retriever_options
@format_option
@common_options
@guard(inputs=("corpus", "eval_set", "config", "qdrant_path", "qrels", "edge_shard", "snapshot"),
       outputs=("out", "chunks_out", "report"), report="report")
def run_retriever(report: str | None, fmt: str, **kwargs: Any) -> None:
    """Run a retrieval pipeline (or your retriever) over an eval set's queries -> span run."""
    from ragspan.app import run_retriever as command

    emit(command.run(**kwargs), report, fmt)


@cli.command()
@click.option("--config", "configs", multiple=True, required=True, type=str,
              help="A pipeline config (TOML); repeat for each configuration.")
@click.option("--eval-set", "eval_set", required=True, type=str, help="Eval set (its queries are run).")
@click.option("--corpus", required=True, type=str, help="Corpus (JSONL or directory).")
@click.option("--out-dir", required=True, type=str,
              help="Folder for each configuration's run, manifest and reports (made if absent).")
@k_option
@click.option("--grounding-threshold", "tau", type=FiniteFloatRange(0, 1, min_open=True),
              default=0.5, show_default=True)
@click.option("--cache-dir", type=str,
              help="Embedding cache (default ~/.cache/ragspan or $RAGSPAN_CACHE_DIR).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the embedding cache.")
@click.option("--keep-going", is_flag=True,
              help="Record a failing configuration and go on (the sweep then exits 3).")
@click.option("--baseline", type=str,
              help="Configuration the report compares against (default the first).")
@click.option("--record-latency", is_flag=True,
              help="Each configuration's timings and embedding-cache use in its reports and "
                   "the sweep's rows (they then differ from sweep to sweep).")
@click.option("--out", type=str, help="Write the sweep's JSON report here (atomically).")
@format_option
@common_options
@guard(inputs=("eval_set", "corpus", "configs"), outputs=("out",), report="out")
def sweep(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Run and score several pipeline configurations on one eval set, side by side."""
    from ragspan.app import sweep as command

    emit(command.run(**kwargs), out, fmt)
