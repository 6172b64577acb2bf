"""The command line's shared flags, each declared once: ``FLAGS`` holds every flag that more
than one command (or the group and its commands) takes, with its parameter name, type,
default and the help it has where a command says nothing of its own; ``flag`` builds one
command's click option from that record, the command adding only what differs for it (its
own help, ``required``, a default or type of its own). A flag named in ``FLAGS`` is spelled
nowhere else in ``cli/`` (``tests/test_layers.py`` holds it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from ragspan.cli.ranges import FiniteFloatRange, ShareRange

REPORT_HELP = "Write the JSON report here (atomically)."


@dataclass(frozen=True)
class Flag:
    """One shared flag: its name without dashes, the Python parameter it fills, and the
    click keyword arguments every command starts from (``type``, ``default``, ``help``...)."""

    key: str
    param: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    short: str = ""

    @property
    def name(self) -> str:
        """The parameter's Python name (``eval-set`` -> ``eval_set`` unless ``param``)."""
        return self.param or self.key.replace("-", "_")


def _path(key: str, help_: str, param: str = "") -> Flag:
    return Flag(key, param, {"type": str, "help": help_})


FLAGS: dict[str, Flag] = {f.key: f for f in (
    _path("out", REPORT_HELP),
    _path("report", REPORT_HELP),
    _path("corpus", "Corpus (JSONL or directory)."),
    _path("eval-set", "Eval set (JSONL or JSON array)."),
    _path("run", "Run: span JSONL, doc JSONL or TREC."),
    _path("qrels", "Doc-level judgments (TREC, BEIR TSV or JSONL)."),
    _path("chunks", "A chunk manifest (run-retriever --chunks-out)."),
    _path("config", "A settings file (TOML)."),
    _path("baseline", "What the others are compared against."),
    _path("root", "The benchmark's folder."),
    _path("in", "Input file.", param="src"),
    _path("csv", "A CSV file."),
    _path("cache-dir", "Embedding cache (default ~/.cache/ragspan or $RAGSPAN_CACHE_DIR)."),
    Flag("grounding-threshold", "tau", {
        "type": ShareRange(0, 1, min_open=True), "default": 0.5, "show_default": True,
        "help": "tau: share of a gold span that must be covered (0.5 or 50%)."}),
    Flag("max-records", "", {"type": click.IntRange(min=1), "default": 1_000_000,
                             "show_default": True,
                             "help": "Refuse an input of more records than this."}),
    Flag("threshold", "", {"type": FiniteFloatRange(0, 1, min_open=True),
                           "show_default": True}),
    Flag("method", "", {"default": "exact", "show_default": True}),
    Flag("budget", "", {"type": str}),
    Flag("k", "ks", {"multiple": True}),
    Flag("verbose", "", {"is_flag": True, "help": "Debug logging on stderr."}, short="-v"),
    Flag("quiet", "", {"is_flag": True, "help": "Only errors on stderr."}, short="-q"),
    Flag("log-format", "", {"type": click.Choice(["text", "json"]), "default": None,
                            "help": "Log lines as text or JSON (stderr)."}),
)}


def flag(key: str, text: str | None = None,
         **given: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of the shared flag ``key`` (``FLAGS``): its record's keyword
    arguments, then the command's own (``text``: its help, ``required``, ``default``, ``type``,
    ``param`` for another parameter name, ``aliases`` for further spellings)."""
    record = FLAGS[key]
    kwargs = dict(record.kwargs)
    if text is not None:
        kwargs["help"] = text
    param = given.pop("param", record.name)
    aliases = given.pop("aliases", ())
    kwargs.update(given)
    names = ["--" + key, *aliases, *([record.short] if record.short else []), param]
    return click.option(*names, **kwargs)
