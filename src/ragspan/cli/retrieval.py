"""The commands that run retrievers: ``run-retriever`` and ``sweep``."""

from __future__ import annotations

from typing import Any

import click

from ragspan.cli.common import (
    cli,
    common_options,
    emit,
    format_option,
    guard,
    k_option,
    run_retriever_options,
)
from ragspan.cli.flags import flag


@cli.command("run-retriever")
@flag("corpus", required=True)
@flag("eval-set", "Eval set (its queries are run).", required=True)
@flag("config", "Pipeline config (TOML); see examples/configs/.")
@click.option("--retriever", type=str,
              help="Your own retriever, module:attr or module:factory() (imports and runs your code).")
@flag("out", "Span run to write (JSONL).", required=True)
@click.option("--chunks-out", type=str, help="Write the chunk manifest (JSONL) here.")
@flag("report")
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
@flag("config", "A pipeline config (TOML); repeat for each configuration.", multiple=True,
      required=True, param="configs")
@flag("eval-set", "Eval set (its queries are run).", required=True)
@flag("corpus", required=True)
@click.option("--out-dir", required=True, type=str,
              help="Folder for each configuration's run, manifest and reports (made if absent).")
@k_option
@flag("grounding-threshold")
@flag("cache-dir")
@click.option("--no-cache", is_flag=True, help="Do not read or write the embedding cache.")
@click.option("--keep-going", is_flag=True,
              help="Record a failing configuration and go on (the sweep then exits 3).")
@flag("baseline", "Configuration the report compares against (default the first).")
@click.option("--record-latency", is_flag=True,
              help="Each configuration's timings and embedding-cache use in its reports and "
                   "the sweep's rows (they then differ from sweep to sweep).")
@flag("out", "Write the sweep's JSON report here (atomically).")
@format_option
@common_options
@guard(inputs=("eval_set", "corpus", "configs"), outputs=("out",), report="out")
def sweep(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Run and score several pipeline configurations on one eval set, side by side."""
    from ragspan.app import sweep as command

    emit(command.run(**kwargs), out, fmt)
