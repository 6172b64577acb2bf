"""The commands that score and judge: ``score``, ``compare``, ``plan``, ``report``,
``validate-report``, ``convert``, ``metrics``."""

from __future__ import annotations

from typing import Any

import click

from ragspan.base.placement import anchoring
from ragspan.cli.common import (
    cli,
    common_options,
    cutoff_option,
    emit,
    format_option,
    gate_options,
    guard,
    placement_options,
    shown_format,
)
from ragspan.cli.flags import flag
from ragspan.cli.ranges import FiniteFloatRange


@cli.command()
@flag("eval-set")
@flag("run", required=True, aliases=("--retrieved",))
@flag("corpus", "Corpus (JSONL or directory) to check offsets against.")
@flag("chunks", "The run's chunk manifest (run-retriever --chunks-out): decides the "
      "ceiling-bound and chunk-severance failure labels.")
@flag("qrels", "Doc-level judgments (TREC, BEIR TSV or JSONL; --queries is "
      "toolkit-rag-quality's spelling, and compare then asks whose rules judge).",
      aliases=("--queries",))
@click.option("--qrels-format", "--queries-format", "qrels_format",
              type=click.Choice(["auto", "trec", "beir", "jsonl"]),
              default="auto", show_default=True)
@click.option("--run-format", "--retrieved-format", "run_format",
              type=click.Choice(["auto", "span", "trec", "jsonl"]),
              default="auto", show_default=True)
@cutoff_option
@flag("grounding-threshold")
@click.option("--relevance-level", type=click.IntRange(1, 1_000), default=1,
              show_default=True,
              help="Doc level: minimum grade that counts as relevant.")
@click.option("--judged-only", is_flag=True,
              help="Doc level: average over queries in both qrels and run (trec_eval without -c).")
@click.option("--min-coverage", type=FiniteFloatRange(0, 1), default=0.5, show_default=True,
              help="Least share of the scored queries the run must have a row for (0 allows "
                   "any; a run with rows for none is always an error).")
@click.option("--chroma-metrics", is_flag=True,
              help="Also Chroma's chunking-evaluation metrics: chroma_recall, "
                   "chroma_precision, iou (and, with --chunks, precision_omega).")
@click.option("--budget-grid/--no-budget-grid", default=None,
              help="Also score at the character budgets 250c, 500c, ..., 32000c, what compare "
                   "decides at when the retrieval budget changed (the default for span runs; "
                   "--no-budget-grid leaves them out).")
@click.option("--tokenizer", default="cl100k_base", show_default=True,
              help="What a token budget (--k 512t) counts in: cl100k_base (no download) or a "
                   "Hugging Face tokenizer name or path (the embedding model's); recorded.")
@placement_options("align", "on-ambiguous", "unplaced", "fuzzy-threshold")
@click.option("--on-duplicate", type=click.Choice(["error", "first"]), default="error",
              show_default=True,
              help="A JSON-lines row of the eval set, qrels or run that repeats an earlier "
                   "row's id or has none: refuse it, or keep each id's first row and skip "
                   "the rest (counted in the report).")
@flag("out")
@format_option
@common_options
@guard(inputs=("eval_set", "run", "corpus", "chunks", "qrels"), outputs=("out",), report="out")
def score(eval_set: str | None, run: str, corpus: str | None, chunks: str | None,
          qrels: str | None, qrels_format: str, run_format: str, ks: tuple[int, ...],
          tau: float, relevance_level: int, judged_only: bool, min_coverage: float,
          chroma_metrics: bool,
          budget_grid: bool | None, tokenizer: str, align: bool,
          on_ambiguous: str | None, unplaced: str | None, fuzzy_threshold: float | None,
          on_duplicate: str,
          out: str | None, fmt: str) -> None:
    """Score a run against an eval set (span level) or qrels (doc level)."""
    from ragspan.app import score as command

    placing = anchoring({"align": align, "on_ambiguous": on_ambiguous, "unplaced": unplaced,
                         "fuzzy_threshold": fuzzy_threshold})
    settings = command.ScoreSettings(
        ks=ks, tau=tau, relevance_level=relevance_level, judged_only=judged_only,
        anchoring=command.Anchoring(**placing), chroma_metrics=chroma_metrics,
        tokenizer=tokenizer, budget_grid=budget_grid, qrels_format=qrels_format,
        run_format=run_format, on_duplicate=on_duplicate, min_coverage=min_coverage)
    emit(command.run(eval_set=eval_set, run=run, corpus=corpus, qrels=qrels, chunks=chunks,
                     settings=settings), out, fmt)


@cli.command("validate-report")
@click.argument("path", required=False, type=str)
@flag("in", "The report to check (or give it positionally).")
@flag("report", "The same, as earlier releases spelled it.")
@common_options
def validate_report(path: str | None, src: str | None, report: str | None) -> None:
    """Check a report against the envelope schema: exit 0 valid, 3 invalid."""
    from ragspan.app import validate_report as command

    given = [p for p in (path, src, report) if p is not None]
    if len(given) != 1:
        raise click.UsageError("give the report once: positionally, or as --in")
    click.echo(command.run(given[0]))


@cli.command()
@click.argument("what", type=click.Choice(["qrels", "run"]))
@flag("in", "Input file (format detected).", required=True)
@click.option("--to", "fmt", required=True, type=click.Choice(["trec", "jsonl"]))
@flag("out", "Output file (written atomically).", required=True)
@click.option("--tag", default=None, type=str,
              help="A run written as TREC: its tag column (default ragspan).")
@common_options
@guard(inputs=("src",), outputs=("out",))
def convert(what: str, src: str, fmt: str, out: str, tag: str | None) -> None:
    """Convert qrels or a doc run between TREC and JSONL, losslessly."""
    from ragspan.app import convert as command

    command.run(what, src, fmt, out, tag)


@cli.command()
@flag("baseline", "Baseline score report (JSON).", required=True)
@click.option("--candidate", required=True, type=str, help="Candidate score report (JSON).")
@click.option("--anchor", type=str, default=None,
              help="A pinned release's score report: the candidate must also stay within "
                   "--anchor-budget of it (the drift guard).")
@click.option("--noise", type=str, default=None,
              help="A second scoring of the baseline's configuration: queries that differ "
                   "are reported unstable, and their spread feeds the power statement.")
@flag("budget", "METRIC=VALUE with VALUE 2pt, 2% or off; repeatable. "
      "Default: complete_grounding=2pt.", multiple=True, param="budgets")
@gate_options
@flag("config", "pyproject.toml with [tool.ragspan] (default: the nearest one in this "
      "directory or a parent). In CI, give the base branch's file: a pull "
      "request must not set its own gate (docs/security.md).")
@click.option("--no-config", is_flag=True,
              help="Read no settings file: the command line and the defaults only.")
@click.option("--config-origin", type=str, default=None,
              help="Where --config came from (e.g. main@<sha>:pyproject.toml), recorded "
                   "in the verdict.")
@click.option("--allow-identical", is_flag=True,
              help="Accept baseline and candidate reports with the same sha256.")
@click.option("--no-gate", is_flag=True,
              help="Compare without gating any metric (reported in the verdict).")
@flag("eval-set", "Verify: the eval set both reports were scored on (with the runs, each "
      "report is re-scored and refused unless it is what its files score to).")
@flag("qrels", "Verify: the qrels of doc-level reports.")
@flag("corpus", "Verify: the corpus both were scored on.")
@click.option("--baseline-run", type=str, default=None, help="Verify: the baseline's run.")
@click.option("--candidate-run", type=str, default=None, help="Verify: the candidate's run.")
@click.option("--baseline-chunks", type=str, default=None,
              help="Verify: the baseline's chunk manifest (when it was scored with one).")
@click.option("--candidate-chunks", type=str, default=None,
              help="Verify: the candidate's chunk manifest (likewise).")
@click.option("--migration", type=str, default=None,
              help="Gate across a corpus change: the report of `ragspan migrate` that carried "
                   "the baseline's eval set over to the candidate's corpus; the questions the "
                   "edit left out count as lost by the candidate (--max-set-aside bounds "
                   "their share).")
@click.option("--migrated-eval-set-trusted", type=str, default=None,
              help="With --migration: the migrated eval set as reviewed and committed (the "
                   "base branch's); it must be the file the migration wrote, and then the "
                   "questions it left out are left out of the gate instead of counted lost.")
@click.option("--candidate-eval-set", type=str, default=None,
              help="Verify, across a corpus change: the migrated eval set the candidate was "
                   "scored on (default --eval-set).")
@click.option("--candidate-corpus", type=str, default=None,
              help="Verify, across a corpus change: the edited corpus the candidate was "
                   "scored on (default --corpus).")
@click.option("--annotations", type=click.Choice(["github", "none"]), default=None,
              help="Say the failing and inconclusive metrics as GitHub Actions annotations "
                   "on stderr (at most 10 of each kind, largest drops first; default: github "
                   "under GitHub Actions, else none).")
@click.option("--baseline-is", type=click.Choice(["base-tip", "merge-base"]), default=None,
              help="Which commit the baseline report was scored at, as your pipeline chose "
                   "it: the base branch's tip or the merge base (stated in the verdict with "
                   "both reports' recorded commits and the baseline's age).")
@click.option("--pr-label", "pr_labels", multiple=True, type=str,
              help="A label of the pull request, as the CI event lists it; repeatable. The "
                   "label [tool.ragspan] override-label names lets the job pass while the "
                   "verdict stays FAIL, said in every output (docs/ci.md).")
@click.option("--pr-actor", type=str, default=None,
              help="Who set the override label (the CI event's or API's login), said with "
                   "the override.")
@click.option("--junit", type=str, default=None,
              help="Also write the verdict as JUnit XML here (a test case per gated metric "
                   "and slice: failure, skipped when inconclusive, error on bad input), for "
                   "GitLab, Jenkins and GitHub's test reporters.")
@flag("out")
@format_option
@common_options
@guard(inputs=("baseline", "candidate", "anchor", "noise", "config", "eval_set", "qrels",
               "corpus", "baseline_run", "candidate_run", "baseline_chunks", "candidate_chunks",
               "migration", "candidate_eval_set", "candidate_corpus",
               "migrated_eval_set_trusted"),
       outputs=("out", "junit"), implicit=("pyproject.toml",), report="out", junit="junit")
def compare(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Gate a candidate score report against a baseline: exit 0 pass, 4 fail, 3 bad input."""
    from ragspan.app import compare as command

    sources = command.Sources(**{key: kwargs.pop(key) for key in command.SOURCE_KEYS})
    emit(command.run(sources=sources, **kwargs), out, fmt)


@cli.command()
@click.option("--flip-rate", required=True, type=FiniteFloatRange(0, 1, min_open=True),
              help="Share of queries whose complete grounding changes either way between two "
                   "configurations (a re-run or `compare`'s changed share).")
@flag("budget", "The gate's budget, e.g. 2pt.", required=True)
@click.option("--drop", type=str, help="The true drop to catch (default twice the budget).")
@click.option("--alpha", type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True)
@click.option("--power", type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              default=0.8, show_default=True)
@click.option("--design-effect", type=FiniteFloatRange(0, 1000, min_open=True), default=1.0,
              show_default=True,
              help="Clustered questions (several per document): the variance inflation that "
                   "compare reports (summary.power.*.design_effect); queries scale by it.")
@format_option
@common_options
def plan(fmt: str, **kwargs: Any) -> None:
    """How many queries the gate needs: to catch a real drop, and to pass a harmless change."""
    from ragspan.app import plan as command

    emit(command.run(**kwargs), None, fmt)


@cli.command()
@click.argument("reports", nargs=-1, required=True, type=str)
@flag("out", "The report to write: .md (Markdown) or .html (one self-contained file).", required=True)
@flag("baseline", "Configuration to compare against (default the first).")
@flag("k", "Cutoff shown (default the smallest the reports share).",
      type=click.IntRange(min=1, max=10_000), multiple=False, param="k")
@click.option("--audience", type=click.Choice(["developer", "client"]), default="developer",
              show_default=True, help="client: four sections, the missed clauses quoted.")
@flag("corpus", "The client readout's corpus to quote from (its sha256 must be the one the "
      "baseline records; required for --audience client).")
@click.option("--all-pairs", is_flag=True,
              help="Compare every pair of configurations as one family, not only each with "
                   "the baseline.")
@flag("csv", "Also write one row per query and configuration here (CSV).", param="csv_out")
@click.option("--client-out", "client_out", type=str,
              help="Also write the client readout here (.md or .html; needs --corpus): both "
                   "audiences from one command.")
@flag("report", "Also write the command's JSON report here.", param="report_json")
@format_option
@common_options
@guard(inputs=("reports", "corpus"), outputs=("out", "csv_out", "client_out", "report_json"),
       report="report_json")
def report(out: str, report_json: str | None, fmt: str, **kwargs: Any) -> None:
    """Several configurations' score reports side by side: one Markdown or HTML report."""
    from ragspan.app import report as command

    emit(command.run(out=out, **kwargs), report_json, fmt)


@cli.command()
@format_option
@common_options
def metrics(fmt: str) -> None:
    """List every metric: name grammar, family, values, direction, trec_eval name, definition."""
    from ragspan.app import metrics as command

    click.echo(command.run(shown_format(fmt)), nl=False)
