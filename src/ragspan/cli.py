"""The ``ragspan`` command line: one thin function per subcommand, parsing and calling only.

Each subcommand parses its options and calls ``ragspan.app.<name>.run``; the result is
written and printed by ``ragspan.app.output.deliver``, and its report's exit code is the
process's. Of ragspan, this module imports only ``commands``, ``errors`` and ``logs``, and the
command modules inside the functions, so ``ragspan --help`` starts fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from ragspan import __version__
from ragspan.base.errors import ExitCode, RagspanError

FORMATS = ("json", "table", "markdown")


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and infinities (which compare false with
    every bound, so a plain range lets them through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


class CutoffParam(click.ParamType):
    """``--k``: a count of results in [1, MAX_K], or a character budget ``2000c`` in
    [1, MAX_CHARS_CUTOFF] (span metrics)."""

    name = "cutoff"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ragspan.app.score import parse_k

        if isinstance(value, int):
            return value
        try:
            return parse_k(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def one_line(message: str) -> str:
    """The message with every character that ends a line (for ``str.splitlines``, a terminal
    or a log reader) escaped, so an id quoted from a file cannot split the error line."""
    if not any(ch in message for ch in LINE_BREAKS):
        return message
    return "".join(ch.encode("unicode_escape").decode("ascii") if ch in LINE_BREAKS else ch
                   for ch in message)


class RagspanGroup(click.Group):
    """Maps ragspan's errors to one stderr line and their exit code (never a traceback, and
    no held log line before it); Ctrl-C exits 130."""

    def invoke(self, ctx: click.Context) -> Any:
        from ragspan.base import logs

        try:
            result = super().invoke(ctx)
        except RagspanError as exc:
            logs.drop()
            click.echo(f"ragspan: error: {one_line(str(exc))}", err=True)
            ctx.exit(int(exc.exit_code))
        except KeyboardInterrupt:
            logs.drop()
            click.echo("ragspan: interrupted", err=True)
            raise click.exceptions.Exit(130) from None
        except SystemExit:
            logs.release()
            raise
        logs.release()
        return result


def guard(*, inputs: tuple[str, ...], outputs: tuple[str, ...],
          implicit: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Before the command runs, refuse outputs that would overwrite an input or cannot be
    written (``ragspan.io.outputs.check_outputs``). ``inputs``/``outputs`` name parameters;
    ``implicit`` are files read when they exist (./pyproject.toml)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kw: Any) -> Any:
            from ragspan.app.output import refuse_clobbering

            paths: list[str | None] = []
            for name in inputs:
                value = kw.get(name)
                paths.extend(value if isinstance(value, (list, tuple)) else [value])
            paths.extend(p for p in implicit if p)
            if sum(1 for p in paths if p == "-") > 1:
                raise click.UsageError("only one input can be '-' (standard input)")
            refuse_clobbering({"--" + name.replace("_", "-"): kw.get(name) for name in outputs},
                              paths)
            return func(*args, **kw)

        return wrapper

    return decorate


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--verbose``, ``--quiet``, ``--log-format`` on every command."""

    @click.option("--verbose", "-v", is_flag=True, help="Debug logging on stderr.")
    @click.option("--quiet", "-q", is_flag=True, help="Only errors on stderr.")
    @click.option("--log-format", type=click.Choice(["text", "json"]), default=None,
                  help="Log lines as text or JSON (stderr).")
    @functools.wraps(func)
    def wrapper(*args: Any, verbose: bool, quiet: bool, log_format: str | None, **kw: Any) -> Any:
        ctx = click.get_current_context()
        root = ctx.find_root().params
        from ragspan.base.logs import configure

        configure(
            verbose=verbose or root.get("verbose", False),
            quiet=quiet or root.get("quiet", False),
            fmt=log_format or root.get("log_format") or "text",
        )
        return func(*args, **kw)

    return wrapper


FORMAT_HELP = "What to print on stdout (default: table on a terminal, JSON otherwise)."


def shown_format(fmt: str | None) -> str:
    """``--format`` as given, else ``table`` when stdout is a terminal and ``json`` when it
    is a pipe or a file (a pipeline reads JSON; a person reads the table)."""
    if fmt is not None:
        return fmt
    return "table" if sys.stdout.isatty() else "json"


def emit(result: Any, out: str | None, fmt: str | None) -> None:
    """Deliver a command's result (``app.output.deliver``) and exit with its code."""
    from ragspan.app.output import deliver

    code = deliver(result, out, shown_format(fmt))
    if code:
        sys.exit(code)


@click.group(cls=RagspanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragspan")
@click.option("--verbose", "-v", is_flag=True, help="Debug logging on stderr.")
@click.option("--quiet", "-q", is_flag=True, help="Only errors on stderr.")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              help="Log lines as text or JSON (stderr).")
def cli(verbose: bool, quiet: bool, log_format: str) -> None:
    """ragspan: a regression gate for retrieval, decided by character-span arithmetic."""


def declared(options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Click options built from their one declaration (``ragspan.base.options.Option``): each
    defaults to None, False or () (not given), so a config file and then the declared
    default apply; the help states the declared default."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for opt in reversed(options):
            if opt.kind == "table":
                continue
            shown = "" if opt.default is None or opt.default is False or opt.default == () \
                else f" (default {opt.default})"
            kw: dict[str, Any] = {"help": opt.help + shown}
            if opt.kind == "bool":
                kw["is_flag"] = True
            elif opt.kind == "strings":
                kw.update(multiple=True, type=str)
            else:
                kw["default"] = None
                kw["type"] = {
                    "float": lambda o: FiniteFloatRange(o.low, o.high, min_open=o.open_low,
                                                        max_open=o.open_high),
                    "int": lambda o: click.IntRange(min=o.low, max=o.high),
                    "enum": lambda o: click.Choice(list(o.choices)),
                    "str": lambda o: str,
                }[opt.kind](opt)
            func = click.option("--" + opt.key, opt.attr, **kw)(func)
        return func

    return decorate


def gate_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The gate's options (``GATE_OPTIONS``); ``[tool.ragspan]`` fills what is not given."""
    from ragspan.app.compare import GATE_OPTIONS

    return declared(GATE_OPTIONS)(func)


def run_retriever_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """run-retriever's own options (``RUN_RETRIEVER_OPTIONS``); the pipeline's keys come
    from its TOML."""
    from ragspan.app.run_retriever import RUN_RETRIEVER_OPTIONS

    return declared(RUN_RETRIEVER_OPTIONS)(func)


def _few_ks(ctx: click.Context, param: click.Parameter, value: tuple[int, ...]) -> tuple[int, ...]:
    from ragspan.app.score import MAX_KS

    if len(value) > MAX_KS:
        raise click.BadParameter(f"at most {MAX_KS} cutoffs, got {len(value)}", ctx, param)
    return value


def k_option(func: Callable[..., Any]) -> Callable[..., Any]:
    from ragspan.app.score import MAX_K

    return click.option("--k", "ks", type=click.IntRange(min=1, max=MAX_K), multiple=True,
                        callback=_few_ks,
                        help="Cutoff; repeat for several (default 5 and 10).")(func)


def cutoff_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--k", "ks", type=CutoffParam(), multiple=True, callback=_few_ks,
                        help="Cutoff: a count of results (5) or, for span metrics, a "
                             "character budget (2000c); repeat for several (default 5 and "
                             "10).")(func)


@cli.command()
@click.option("--eval-set", "eval_set", type=str, help="Eval set (JSONL or JSON array).")
@click.option("--run", "run", type=str, required=True, help="Run: span JSONL, doc JSONL or TREC.")
@click.option("--corpus", type=str, help="Corpus (JSONL or directory) to check offsets against.")
@click.option("--chunks", type=str,
              help="The run's chunk manifest (run-retriever --chunks-out): decides the "
                   "ceiling-bound and chunk-severance failure labels.")
@click.option("--qrels", type=str, help="Doc-level judgments (TREC, BEIR TSV or JSONL).")
@click.option("--qrels-format", type=click.Choice(["auto", "trec", "beir", "jsonl"]),
              default="auto", show_default=True)
@click.option("--run-format", type=click.Choice(["auto", "span", "trec", "jsonl"]),
              default="auto", show_default=True)
@cutoff_option
@click.option("--grounding-threshold", "tau", type=FiniteFloatRange(0, 1, min_open=True),
              default=0.5, show_default=True, help="tau: share of a gold span that must be covered.")
@click.option("--relevance-level", type=click.IntRange(-1_000, 1_000), default=1,
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
@click.option("--budget-grid", is_flag=True,
              help="Also score at the character budgets 250c, 500c, ..., 32000c (what compare "
                   "decides at when the retrieval budget changed).")
@click.option("--align", is_flag=True,
              help="A retrieved text that its offsets do not slice back to is placed by its "
                   "text (recorded) instead of refused.")
@click.option("--on-ambiguous", type=click.Choice(["error", "first"]), default="error",
              show_default=True, help="A retrieved text with several equally good places: "
                                      "refuse it, or take the first (counted).")
@click.option("--unplaced", type=click.Choice(["error", "drop"]), default="error",
              show_default=True, help="A retrieved text that cannot be placed: refuse it, or "
                                      "score it as retrieving nothing (counted).")
@click.option("--fuzzy-threshold", type=FiniteFloatRange(0, 1, min_open=True), default=0.9,
              show_default=True, help="Least similarity (0-1) of a fuzzy placement.")
@click.option("--out", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("eval_set", "run", "corpus", "chunks", "qrels"), outputs=("out",))
def score(eval_set: str | None, run: str, corpus: str | None, chunks: str | None,
          qrels: str | None, qrels_format: str, run_format: str, ks: tuple[int, ...],
          tau: float, relevance_level: int, judged_only: bool, min_coverage: float,
          chroma_metrics: bool,
          budget_grid: bool, align: bool,
          on_ambiguous: str, unplaced: str, fuzzy_threshold: float, out: str | None,
          fmt: str) -> None:
    """Score a run against an eval set (span level) or qrels (doc level)."""
    from ragspan.app import score as command

    emit(command.run(eval_set=eval_set, run=run, corpus=corpus, qrels=qrels,
                     qrels_format=qrels_format, run_format=run_format, ks=ks, tau=tau,
                     relevance_level=relevance_level, judged_only=judged_only,
                     chunks=chunks, budget_grid=budget_grid, chroma_metrics=chroma_metrics,
                     min_coverage=min_coverage,
                     anchoring={"align": align, "on_ambiguous": on_ambiguous,
                                               "unplaced": unplaced,
                                               "threshold": fuzzy_threshold}), out, fmt)


@cli.command("validate-report")
@click.argument("path", required=False, type=str)
@click.option("--in", "src", type=str, help="The report to check (or give it positionally).")
@click.option("--report", type=str, help="The same, as earlier releases spelled it.")
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
@click.option("--in", "src", required=True, type=str, help="Input file (format detected).")
@click.option("--to", "fmt", required=True, type=click.Choice(["trec", "jsonl"]))
@click.option("--out", required=True, type=str, help="Output file (written atomically).")
@common_options
@guard(inputs=("src",), outputs=("out",))
def convert(what: str, src: str, fmt: str, out: str) -> None:
    """Convert qrels or a doc run between TREC and JSONL, losslessly."""
    from ragspan.app import convert as command

    command.run(what, src, fmt, out)


@cli.command()
@click.option("--baseline", required=True, type=str, help="Baseline score report (JSON).")
@click.option("--candidate", required=True, type=str, help="Candidate score report (JSON).")
@click.option("--anchor", type=str, default=None,
              help="A pinned release's score report: the candidate must also stay within "
                   "--anchor-budget of it (the drift guard).")
@click.option("--noise", type=str, default=None,
              help="A second scoring of the baseline's configuration: queries that differ "
                   "are reported unstable, and their spread feeds the power statement.")
@click.option("--budget", "budgets", multiple=True,
              help="METRIC=VALUE with VALUE 2pt, 2% or off; repeatable. "
                   "Default: complete_grounding=2pt.")
@gate_options
@click.option("--config", type=str, default=None,
              help="pyproject.toml with [tool.ragspan] (default: the nearest one in this "
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
@click.option("--eval-set", "eval_set", type=str, default=None,
              help="Verify: the eval set both reports were scored on (with the runs, each "
                   "report is re-scored and refused unless it is what its files score to).")
@click.option("--qrels", type=str, default=None, help="Verify: the qrels of doc-level reports.")
@click.option("--corpus", type=str, default=None, help="Verify: the corpus both were scored on.")
@click.option("--baseline-run", type=str, default=None, help="Verify: the baseline's run.")
@click.option("--candidate-run", type=str, default=None, help="Verify: the candidate's run.")
@click.option("--baseline-chunks", type=str, default=None,
              help="Verify: the baseline's chunk manifest (when it was scored with one).")
@click.option("--candidate-chunks", type=str, default=None,
              help="Verify: the candidate's chunk manifest (likewise).")
@click.option("--out", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("baseline", "candidate", "anchor", "noise", "config", "eval_set", "qrels",
               "corpus", "baseline_run", "candidate_run", "baseline_chunks", "candidate_chunks"),
       outputs=("out",), implicit=("pyproject.toml",))
def compare(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Gate a candidate score report against a baseline: exit 0 pass, 4 fail, 3 bad input."""
    from ragspan.app import compare as command

    sources = command.Sources(**{key: kwargs.pop(key) for key in command.SOURCE_KEYS})
    emit(command.run(sources=sources, **kwargs), out, fmt)


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--out`` (the eval set), ``--corpus-out``, ``--report`` and ``--format`` for the commands
    that build eval sets."""
    func = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help=FORMAT_HELP)(func)
    func = click.option("--report", type=str, help="Write the JSON report here (atomically).")(func)
    func = click.option("--corpus-out", type=str, help="Write the corpus (JSONL) here.")(func)
    return click.option("--out", required=True, type=str, help="Eval set to write (JSONL).")(func)


@cli.command()
@click.option("--docs", required=True, type=str,
              help="Directory of .txt/.md/.pdf documents (or a corpus JSONL).")
@click.option("--queries", required=True, type=str,
              help="Query rows with gold_spans, gold_texts or expected (JSONL or JSON array).")
@click.option("--normalize-whitespace", is_flag=True,
              help="Match gold texts across line wraps; spans still point at the original text.")
@click.option("--max-docs", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--max-bytes", type=click.IntRange(min=1), default=2_000_000_000, show_default=True)
@click.option("--max-pdf-chars-per-byte", type=FiniteFloatRange(0, 1_000_000, min_open=True),
              default=20.0, show_default=True,
              help="A PDF whose text exceeds this many characters per byte of the file is refused.")
@click.option("--max-pdf-chars", type=click.IntRange(min=1, max=2_000_000_000),
              default=50_000_000, show_default=True,
              help="A PDF whose text exceeds this many characters is refused.")
@output_options
@common_options
@guard(inputs=("docs", "queries"), outputs=("out", "corpus_out", "report"))
def adapt(report: str | None, fmt: str, **kwargs: Any) -> None:
    """Build an eval set with verified offsets from documents and questions."""
    from ragspan.app import adapt as command

    emit(command.run(**kwargs), report, fmt)


@cli.group("import")
def import_group() -> None:
    """Import a public benchmark (CUAD, LegalBench-RAG, BEIR, Chroma) as an eval set."""


@import_group.command("cuad")
@click.option("--csv", type=str, help="master_clauses.csv")
@click.option("--contracts", type=str, help="Folder of full_contract_txt files.")
@click.option("--categories", type=str, help="category_descriptions.csv")
@click.option("--squad-json", type=str, help="CUADv1.json (SQuAD shape) instead of the CSV.")
@click.option("--sample-docs", type=click.IntRange(min=1), default=None,
              help="Keep N contracts, drawn with --seed.")
@click.option("--sample-queries", type=click.IntRange(min=1), default=None,
              help="Then keep N of their queries, drawn with --seed.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--exclude-metadata-clauses/--include-metadata-clauses", "exclude_metadata",
              default=True, show_default=True,
              help="Skip Document Name, Parties, Agreement/Effective/Expiration Date.")
@click.option("--allow-missing-contracts", is_flag=True,
              help="List and skip CSV rows without a contract file (default: error).")
@output_options
@common_options
@guard(inputs=("csv", "contracts", "categories", "squad_json"),
       outputs=("out", "corpus_out", "report"))
def import_cuad(report: str | None, fmt: str, out: str, corpus_out: str | None, **opts: Any) -> None:
    """CUAD: master_clauses.csv + contracts, or the SQuAD-style JSON."""
    from ragspan.app import import_benchmark as command

    emit(command.run("cuad", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("legalbench-rag")
@click.option("--root", required=True, type=str, help="Folder with corpus/ and benchmarks/.")
@click.option("--subset", "subsets", multiple=True, help="Benchmark name; repeatable (default all).")
@click.option("--paper-sampling", is_flag=True,
              help="Keep the benchmark's own 194-per-subset selection.")
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"))
def import_legalbench(report: str | None, fmt: str, out: str, corpus_out: str | None,
                      **opts: Any) -> None:
    """LegalBench-RAG: snippets with file_path and span."""
    from ragspan.app import import_benchmark as command

    emit(command.run("legalbench-rag", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("beir")
@click.option("--root", required=True, type=str,
              help="Folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")
@click.option("--split", default="test", show_default=True)
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"))
def import_beir(report: str | None, fmt: str, out: str, corpus_out: str | None, **opts: Any) -> None:
    """BEIR: a doc-level eval set with graded judgments."""
    from ragspan.app import import_benchmark as command

    emit(command.run("beir", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("ragas")
@click.option("--rows", required=True, type=str,
              help="Ragas-style rows (JSONL or JSON array): user_input, reference_contexts, "
                   "retrieved_contexts[, reference].")
@click.option("--corpus", required=True, type=str,
              help="The corpus the contexts come from (JSONL or directory).")
@click.option("--out", required=True, type=str, help="Eval set to write (JSONL).")
@click.option("--run-out", required=True, type=str, help="Span run to write (JSONL).")
@click.option("--on-ambiguous", type=click.Choice(["error", "first"]), default="error",
              show_default=True, help="A context with several equally good places.")
@click.option("--fuzzy-threshold", type=FiniteFloatRange(0, 1, min_open=True), default=0.9,
              show_default=True, help="Least similarity (0-1) of a fuzzy placement.")
@click.option("--report", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("rows", "corpus"), outputs=("out", "run_out", "report"))
def import_ragas(report: str | None, fmt: str, out: str, **opts: Any) -> None:
    """Ragas rows: reference contexts placed as gold spans, retrieved contexts as a run."""
    from ragspan.app import import_benchmark as command

    emit(command.run("ragas", out=out, corpus_out=None, **opts), report, fmt)


@import_group.command("chroma")
@click.option("--root", required=True, type=str,
              help="Folder with questions_df.csv and corpora/<corpus_id>.md.")
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"))
def import_chroma(report: str | None, fmt: str, out: str, corpus_out: str | None,
                  **opts: Any) -> None:
    """Chroma's chunking evaluation: questions with references, every one checked."""
    from ragspan.app import import_benchmark as command

    emit(command.run("chroma", out=out, corpus_out=corpus_out, **opts), report, fmt)


@cli.command()
@click.option("--eval-set", "eval_set", required=True, type=str)
@click.option("--corpus", required=True, type=str)
@click.option("--chunks", type=str, help="Chunk manifest (run-retriever --chunks-out): coverage gate.")
@click.option("--grounding-threshold", "tau", type=FiniteFloatRange(0, 1, min_open=True),
              default=0.5, show_default=True)
@click.option("--min-span-integrity", type=FiniteFloatRange(0, 1), default=None,
              help="Fail when fewer gold spans than this share sit whole in one chunk.")
@click.option("--run", type=str,
              help="A span run over this chunking: the precision it attained against the "
                   "chunking's ceiling (needs --chunks).")
@k_option
@click.option("--out", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("eval_set", "corpus", "chunks", "run"), outputs=("out",))
def validate(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Check an eval set against its corpus (and chunking): exit 0 valid, 3 findings."""
    from ragspan.app import validate as command

    emit(command.run(**kwargs), out, fmt)


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
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("corpus", "eval_set", "config", "qdrant_path", "qrels"),
       outputs=("out", "chunks_out", "report"))
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
@click.option("--out", type=str, help="Write the sweep's JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("eval_set", "corpus", "configs"), outputs=("out",))
def sweep(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Run and score several pipeline configurations on one eval set, side by side."""
    from ragspan.app import sweep as command

    emit(command.run(**kwargs), out, fmt)


@cli.command()
@click.option("--flip-rate", required=True, type=FiniteFloatRange(0, 1, min_open=True),
              help="Share of queries whose complete grounding changes either way between two "
                   "configurations (a re-run or `compare`'s changed share).")
@click.option("--budget", required=True, type=str, help="The gate's budget, e.g. 2pt.")
@click.option("--drop", type=str, help="The true drop to catch (default twice the budget).")
@click.option("--alpha", type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True)
@click.option("--power", type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              default=0.8, show_default=True)
@click.option("--design-effect", type=FiniteFloatRange(0, 1000, min_open=True), default=1.0,
              show_default=True,
              help="Clustered questions (several per document): the variance inflation that "
                   "compare reports (summary.power.*.design_effect); queries scale by it.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
def plan(fmt: str, **kwargs: Any) -> None:
    """How many queries the gate needs: to catch a real drop, and to pass a harmless change."""
    from ragspan.app import plan as command

    emit(command.run(**kwargs), None, fmt)


@cli.command()
@click.argument("reports", nargs=-1, required=True, type=str)
@click.option("--out", required=True, type=str,
              help="The report to write: .md (Markdown) or .html (one self-contained file).")
@click.option("--baseline", type=str, help="Configuration to compare against (default the first).")
@click.option("--k", "k", type=click.IntRange(min=1, max=10_000),
              help="Cutoff shown (default the smallest the reports share).")
@click.option("--audience", type=click.Choice(["developer", "client"]), default="developer",
              show_default=True, help="client: four sections, the missed clauses quoted.")
@click.option("--corpus", type=str,
              help="The client readout's corpus to quote from (its sha256 must be the one the "
                   "baseline records; required for --audience client).")
@click.option("--all-pairs", is_flag=True,
              help="Compare every pair of configurations as one family, not only each with "
                   "the baseline.")
@click.option("--report", "report_json", type=str,
              help="Also write the command's JSON report here.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("reports", "corpus"), outputs=("out", "report_json"))
def report(out: str, report_json: str | None, fmt: str, **kwargs: Any) -> None:
    """Several configurations' score reports side by side: one Markdown or HTML report."""
    from ragspan.app import report as command

    emit(command.run(out=out, **kwargs), report_json, fmt)


@cli.command()
@click.option("--eval-set", "eval_set", required=True, type=str,
              help="Eval items (eval set, or BEIR queries with _id/text).")
@click.option("--corpus", required=True, type=str, help="Corpus (JSONL, BEIR corpus, or directory).")
@click.option("--field", "fields", multiple=True, type=click.Choice(["query", "gold"]),
              help="Item field to check; repeatable (default query).")
@click.option("--ngram", type=click.IntRange(min=1, max=64), default=3, show_default=True)
@click.option("--threshold", type=FiniteFloatRange(0, 1, min_open=True), default=0.6,
              show_default=True, help="Containment at which an item leaks.")
@click.option("--method", type=click.Choice(["exact", "embedding"]), default="exact",
              show_default=True, help="embedding: paraphrase leaks (slower, approximate).")
@click.option("--similarity", type=FiniteFloatRange(-1, 1), default=0.9, show_default=True,
              help="Cosine similarity at which an item leaks (--method embedding).")
@click.option("--model", default="all-MiniLM-L6-v2", show_default=True,
              help="Embedding model, name or path (--method embedding).")
@click.option("--chunk-size", type=click.IntRange(min=1, max=10_000_000), default=1000,
              show_default=True, help="Sentence chunks of the corpus, in characters (--method embedding).")
@click.option("--cache-dir", type=str, help="Embedding cache (--method embedding).")
@click.option("--max-records", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--max-leaks", type=click.IntRange(min=0), default=0, show_default=True,
              help="Exit 4 when more items than this leak.")
@click.option("--out", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("eval_set", "corpus"), outputs=("out",))
def leakage(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Find eval items contained in corpus documents: exit 0 clean, 4 leaks, 3 bad input."""
    from ragspan.app import leakage as command

    emit(command.run(**kwargs), out, fmt)


@cli.command()
@click.option("--a", "a", required=True, type=str, help="First corpus.")
@click.option("--b", "b", required=True, type=str, help="Second corpus.")
@click.option("--method", type=click.Choice(["exact", "minhash"]), default="exact", show_default=True)
@click.option("--threshold", type=FiniteFloatRange(0, 1, min_open=True), default=0.8,
              show_default=True, help="Jaccard of word 5-gram shingles (--method minhash).")
@click.option("--max-records", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--max-duplicates", type=click.IntRange(min=0), default=0, show_default=True,
              help="Exit 4 when more pairs than this are found.")
@click.option("--out", type=str, help="Write the JSON report here (atomically).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
@guard(inputs=("a", "b"), outputs=("out",))
def overlap(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Find documents shared by two corpora: exit 0 none, 4 duplicates, 3 bad input."""
    from ragspan.app import overlap as command

    emit(command.run(**kwargs), out, fmt)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help=FORMAT_HELP)
@common_options
def metrics(fmt: str) -> None:
    """List every metric: name grammar, family, values, direction, trec_eval name, definition."""
    from ragspan.app import metrics as command

    click.echo(command.run(shown_format(fmt)), nl=False)


def check_environment(environ: Any = None) -> str | None:
    """Before any scientific library is imported (numpy reads ``SOURCE_DATE_EPOCH`` at
    import): an empty ``SOURCE_DATE_EPOCH`` (an unset CI variable) is removed, as unset; a
    non-integer one is the returned one-line error (exit 2)."""
    import os

    env = os.environ if environ is None else environ
    epoch = env.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return None
    if not epoch.strip():
        del env["SOURCE_DATE_EPOCH"]
        return None
    try:
        int(epoch.strip())
    except ValueError:
        return f"SOURCE_DATE_EPOCH must be an integer (seconds since 1970), got {epoch!r}"
    return None


def main() -> None:
    problem = check_environment()
    if problem is not None:
        click.echo(f"ragspan: error: {one_line(problem)}", err=True)
        sys.exit(int(ExitCode.USAGE))
    try:
        cli(prog_name="ragspan")
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except SystemExit:
        raise
    except Exception:  # a bug: show it, exit 1
        import traceback

        traceback.print_exc()
        click.echo("ragspan: internal error (exit 1); please report this with the traceback",
                   err=True)
        sys.exit(int(ExitCode.BUG))
