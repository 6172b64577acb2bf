"""What every subcommand shares: the ``ragspan`` group (errors to one stderr line and their exit
code), the output guard, option builders from their one declaration, and ``emit``."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from ragspan import __version__
from ragspan.base import allocator, collector, logs
from ragspan.base.argv import outputs_elided
from ragspan.base.errors import RagspanError
from ragspan.base.options import GATE_OPTIONS, MAX_K, MAX_KS, RUN_RETRIEVER_OPTIONS
from ragspan.base.placement import PLACEMENT_OPTIONS
from ragspan.cli.flags import flag
from ragspan.cli.ranges import FiniteFloatRange, ShareRange

FORMATS = ("json", "table", "markdown")
# commands that run models for long keep the cyclic garbage collector running; every other
# command pauses it (``base.collector``)
COLLECTING = frozenset({"run-retriever", "sweep"})


FORMAT_HELP = "What to print on stdout (default: table on a terminal, JSON otherwise)."




class CutoffParam(click.ParamType):  # type: ignore[type-arg]
    """``--k``: a count of results in [1, MAX_K], or a character budget ``2000c`` or a token
    budget ``512t`` in [1, MAX_CHARS_CUTOFF] (span metrics)."""

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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Keep the command line (after the program name) for the report's
        ``parameters.argv``."""
        ctx.meta.setdefault("argv", list(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from ragspan.app.surface import caller

        try:
            with caller():  # under the Action, messages name its inputs
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
          implicit: tuple[str, ...] = (), report: str | None = None,
          junit: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Before the command runs, refuse outputs that would overwrite an input, lie inside an
    input folder or cannot be written (``ragspan.io.outputs.check_outputs``).
    ``inputs``/``outputs`` name parameters; ``implicit`` are files read when they exist
    (./pyproject.toml). ``report``: the parameter holding the command's JSON report path;
    when the command then fails (an input error, a usage error found while working, a bug),
    an error envelope (``app.output.error_report``, verdict ``error``) replaces what is at
    that path, atomically, before the error ends the command: no stale report survives for
    a later step to read; ``junit``: the parameter holding a JUnit XML path, which then
    gets the error as its one test case. An output the guard refuses is never written."""
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kw: Any) -> Any:
            from ragspan.app.output import refuse_clobbering, write_error_report

            error_report = kw.pop("error_report", False)
            paths: list[str | None] = []
            for name in inputs:
                value = kw.get(name)
                paths.extend(value if isinstance(value, (list, tuple)) else [value])
            paths.extend(p for p in implicit if p)
            if sum(1 for p in paths if p == "-") > 1:
                raise click.UsageError("only one input can be '-' (standard input)")
            refuse_clobbering({"--" + name.replace("_", "-"): kw.get(name) for name in outputs},
                              paths)
            ctx = click.get_current_context()  # where outputs go is no part of what was run
            ctx.meta["output_flags"] = [flag for p in ctx.command.params if p.name in outputs
                                        for flag in p.opts]
            target = kw.get(report) if report is not None else None
            if error_report and not target:
                flag = "--" + (report or "out").replace("_json", "").replace("_", "-")
                raise click.UsageError(f"--error-report writes the error envelope where the "
                                       f"JSON report goes: give {flag}")
            try:
                return func(*args, **kw)
            except Exception as exc:
                failed = not isinstance(exc, click.exceptions.Exit)
                command = ctx.command_path.split(" ", 1)[-1]
                if target and failed:
                    write_error_report(target, command, _as_failure(exc),
                                       outputs_elided(ctx.meta.get("argv", []),
                                                      ctx.meta["output_flags"]))
                if junit is not None and kw.get(junit) and failed:
                    from ragspan.app.output import write_error_junit

                    write_error_junit(kw[junit], command, _as_failure(exc))
                raise

        if report is not None:
            wrapper = click.option(
                "--error-report", "error_report", is_flag=True,
                help="Kept for workflows that pass it: a failed command always writes an "
                     "error report (verdict error, the message, file and line) where the "
                     "JSON report goes, replacing what is there.")(wrapper)
        return wrapper

    return decorate


def _as_failure(exc: Exception) -> Exception:
    """A click usage error raised while working, as ragspan's (exit 2); anything else as
    it is (a ragspan error keeps its code, any other exception is a bug, exit 1)."""
    from ragspan.base.errors import UsageError

    if isinstance(exc, click.UsageError):
        return UsageError(exc.format_message())
    return exc


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format``: json, table or markdown on stdout (``shown_format`` when not given)."""
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                        help=FORMAT_HELP)(func)


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--verbose``, ``--quiet``, ``--log-format`` on every command."""
    @flag("verbose")
    @flag("quiet")
    @flag("log-format")
    @functools.wraps(func)
    def wrapper(*args: Any, verbose: bool, quiet: bool, log_format: str | None, **kw: Any) -> Any:
        ctx = click.get_current_context()
        root = ctx.find_root().params

        logs.configure(
            verbose=verbose or root.get("verbose", False),
            quiet=quiet or root.get("quiet", False),
            fmt=log_format or root.get("log_format") or "text",
        )
        if ctx.command.name in COLLECTING:
            return func(*args, **kw)
        allocator.keep_freed_memory()
        with collector.paused():
            return func(*args, **kw)

    return wrapper


def shown_format(fmt: str | None) -> str:
    """``--format`` as given, else ``table`` when stdout is a terminal and ``json`` when it
    is a pipe or a file (a pipeline reads JSON; a person reads the table)."""
    if fmt is not None:
        return fmt
    return "table" if sys.stdout.isatty() else "json"


def emit(result: Any, out: str | None, fmt: str | None) -> None:
    """Deliver a command's result (``app.output.deliver``) and exit with its code."""
    from ragspan.app.output import deliver

    meta = click.get_current_context().meta
    argv = meta.get("argv")
    code = deliver(result, out, shown_format(fmt),
                   None if argv is None else outputs_elided(argv, meta.get("output_flags", [])))
    if code:
        sys.exit(code)


@click.group(cls=RagspanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragspan")
@flag("verbose")
@flag("quiet")
@flag("log-format", default="text")
def cli(verbose: bool, quiet: bool, log_format: str) -> None:
    """ragspan: a regression gate for retrieval, decided by character-span arithmetic."""


def _param_type(opt: Any) -> Any:
    """The click type of one declared option of kind float, int, enum or str."""
    if opt.kind == "float":
        kind = ShareRange if opt.share else FiniteFloatRange
        return kind(opt.low, opt.high, min_open=opt.open_low, max_open=opt.open_high)
    if opt.kind == "int":
        return click.IntRange(min=opt.low, max=opt.high)
    if opt.kind == "enum":
        return click.Choice(list(opt.choices))
    if opt.kind == "str":
        return str
    raise KeyError(opt.kind)


def declared(options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Click options built from their one declaration (``ragspan.base.options.Option``): each
    defaults to None, False or () (not given), so a config file and then the declared
    default apply; the help states the declared default."""
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for opt in reversed(options):
            if opt.kind == "table" or opt.config_only:
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
                kw["type"] = _param_type(opt)
            func = click.option("--" + opt.key, opt.attr, **kw)(func)
        return func

    return decorate


def gate_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The gate's options (``GATE_OPTIONS``); ``[tool.ragspan]`` fills what is not given."""
    return declared(GATE_OPTIONS)(func)


def placement_options(*keys: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The placement options named (``PLACEMENT_OPTIONS``: ``align``, ``on-ambiguous``,
    ``unplaced``, ``fuzzy-threshold``), declared once; a value not given is None, and
    ``base.options.anchoring`` fills its default."""
    return declared(tuple(o for o in PLACEMENT_OPTIONS if o.key in keys))


def run_retriever_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """run-retriever's own options (``RUN_RETRIEVER_OPTIONS``); the pipeline's keys come
    from its TOML."""
    return declared(RUN_RETRIEVER_OPTIONS)(func)


def _few_ks(ctx: click.Context, param: click.Parameter, value: tuple[int, ...]) -> tuple[int, ...]:
    if len(value) > MAX_KS:
        raise click.BadParameter(f"at most {MAX_KS} cutoffs, got {len(value)}", ctx, param)
    return value


def k_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return flag("k", "Cutoff; repeat for several (default 5 and 10).",
                type=click.IntRange(min=1, max=MAX_K), callback=_few_ks)(func)


def cutoff_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return flag("k", "Cutoff: a count of results (5) or, for span metrics, a character budget "
                "(2000c) or a token budget (512t, in --tokenizer's tokens); repeat for "
                "several (default 5 and 10).", type=CutoffParam(), callback=_few_ks)(func)


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--out`` (the eval set), ``--corpus-out``, ``--report`` and ``--format`` for the commands
    that build eval sets."""
    func = format_option(func)
    func = flag("report")(func)
    func = click.option("--corpus-out", type=str, help="Write the corpus (JSONL) here.")(func)
    return flag("out", "Eval set to write (JSONL).", required=True)(func)
