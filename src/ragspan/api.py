"""The Python API: what the CLI does, as calls that return typed results.

``ragspan.score``, ``ragspan.compare``, ``ragspan.read_report`` and the readers take file
paths or in-memory objects. An eval set, a run or a corpus built in a notebook is a list of
row dicts, exactly as its JSONL lines would be. Such rows go through the same readers as a
file (written to a temporary JSONL file first), so they are checked exactly as a file is,
and a bad row raises the same ``ragspan.base.errors.InputError``. The CLI calls the same
functions in ``ragspan.app``: the same inputs give the same report, byte for byte.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ragspan.app import score as command
from ragspan.app.compare import GateResult, compare_reports, gate_options
from ragspan.app.score import parse_k
from ragspan.app.score_reports import (
    ScoreReport,
    given_report,
    load_score_report,
    rows_by_id,
    typed_report,
)
from ragspan.app.settings import load_tool_config
from ragspan.base.collector import pausing
from ragspan.base.errors import UsageError
from ragspan.base.placement import PLACEMENT_DEFAULTS
from ragspan.base.voice import python_terms
from ragspan.io.outputs import write_files
from ragspan.report.envelope import load_report, report_text

Rows = Sequence[Mapping[str, Any]]
Source = Union[str, "os.PathLike[str]", Rows]

__all__ = ["RagspanWarning", "Scored", "compare", "cutoffs", "query_rows", "read_report",
           "read_score_report", "score"]


@dataclass(frozen=True)
class Scored:
    """A score report: the envelope as ``ragspan score`` writes it (``report``), and the
    typed value the gate reads (``typed``: per-query metric matrix, rows, labels)."""

    report: dict[str, Any]
    typed: ScoreReport

    @property
    def metrics(self) -> dict[str, float]:
        """The summary metrics (``complete_grounding@5`` -> its mean)."""
        return dict(self.report["predicate"]["summary"]["metrics"])

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """Each question's row by question id (``query_rows``)."""
        return rows_by_id(self.report)

    def text(self) -> str:
        """The report's canonical JSON, as ``--out`` writes it."""
        return report_text(self.report)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report to ``path`` (atomically)."""
        write_files({str(path): self.text()})


def _materialize(source: Source | None, name: str, folder: Path) -> str | None:
    """A path stays a path; rows become ``folder/name`` (one JSON object per line)."""
    if source is None:
        return None
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, Mapping) or not isinstance(source, Iterable):
        raise TypeError(f"{name}: give a path or a list of row dicts, not {type(source).__name__}")
    path = folder / name
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for row in source:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return str(path)


@pausing
@python_terms
def score(eval_set: Source | None, run: Source, corpus: Source | None = None, *,
          k: int | str | Sequence[int | str] = (), tau: float = 0.5, chunks: Source | None = None,
          qrels: Source | None = None, relevance_level: int = 1,
          judged_only: bool = False, align: bool = PLACEMENT_DEFAULTS["align"],
          on_ambiguous: str = PLACEMENT_DEFAULTS["on_ambiguous"],
          unplaced: str = PLACEMENT_DEFAULTS["unplaced"],
          fuzzy_threshold: float = PLACEMENT_DEFAULTS["fuzzy_threshold"],
          tokenizer: str = "cl100k_base", budget_grid: bool | None = None,
          on_duplicate: str = "error") -> Scored:
    """``ragspan score``: ``run`` against ``eval_set`` (span level for a span run) or
    ``qrels`` (doc level); ``k`` defaults to 5 and 10 (``"2000c"`` a character budget,
    ``"512t"`` a token budget in ``tokenizer``'s tokens), ``tau`` is the grounding threshold;
    a span score has the character cutoffs of ``score --budget-grid`` beside them unless
    ``budget_grid`` is False.
    A run whose items carry their text is checked or placed in ``corpus`` as ``score
    --align/--on-ambiguous/--unplaced/--fuzzy-threshold`` do (docs/formats.md).
    ``on_duplicate="first"`` keeps the first row of each repeated id, as ``score
    --on-duplicate first`` does. docs/api.md has a worked example on in-memory rows."""
    with tempfile.TemporaryDirectory(prefix="ragspan-") as tmp:
        folder = Path(tmp)
        paths = {key: _materialize(value, f"{key}.jsonl", folder) for key, value in (
            ("eval_set", eval_set), ("run", run), ("corpus", corpus), ("chunks", chunks),
            ("qrels", qrels))}
        settings = command.ScoreSettings(
            ks=cutoffs(k), tau=tau, relevance_level=relevance_level, judged_only=judged_only,
            tokenizer=tokenizer, budget_grid=budget_grid, on_duplicate=on_duplicate,
            anchoring=command.Anchoring(align=align, on_ambiguous=on_ambiguous,
                                        unplaced=unplaced, threshold=fuzzy_threshold))
        result = command.run(eval_set=paths["eval_set"], run=paths["run"] or "",
                             corpus=paths["corpus"], qrels=paths["qrels"],
                             chunks=paths["chunks"], settings=settings)
    scored = Scored(*typed_report(result.report, "score"))
    for said in scored.report["predicate"]["summary"].get("warnings", []):
        warnings.warn(f"{said['code']} ({said['count']}): {said['example']}", RagspanWarning,
                      stacklevel=4)
    return scored


class RagspanWarning(UserWarning):
    """What ``score`` says about its inputs (the report's ``summary.warnings``), raised
    through ``warnings`` for a Python caller; the report keeps them too."""


def cutoffs(k: int | str | Sequence[int | str]) -> tuple[int, ...]:
    """``k`` as ``score --k`` takes it: one cutoff (``5``, ``"2000c"``, ``"512t"``) or
    several; a value of another type, a bool, or out of range is a UsageError naming
    ``k=``."""
    given = list(k) if isinstance(k, (list, tuple)) else [k]
    out = []
    for c in given:
        if isinstance(c, bool) or not isinstance(c, (int, str)):
            raise UsageError(f"k={c!r}: expected a count (5), a character budget ('2000c') or "
                             "a token budget ('512t'), or a list of them")
        try:
            out.append(parse_k(str(c)))
        except ValueError as exc:
            raise UsageError(f"k={c!r}: {exc}") from None
    return tuple(out)


@pausing
@python_terms
def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Any ragspan report, checked against the schema (``InputError`` when it is not one)."""
    return load_report(path)[0]


@pausing
@python_terms
def read_score_report(source: str | os.PathLike[str] | Mapping[str, Any] | Scored
                      ) -> ScoreReport:
    """A score report as the gate reads it: from a file, an envelope dict or ``Scored``."""
    if isinstance(source, Scored):
        return source.typed
    if isinstance(source, (str, os.PathLike)):
        return load_score_report(source, "score")
    return given_report(source)[1]  # a dict, checked as a file is (else an InputError)


@pausing
@python_terms
def query_rows(source: str | os.PathLike[str] | Mapping[str, Any] | Scored
               ) -> dict[str, dict[str, Any]]:
    """A score report's rows by question id, each as ``details.queries[]`` of format v1
    spelled it (``id``, ``metrics``, ``missing_spans``, ``failure``, ``failure_evidence``...),
    whether the report holds v1's rows or v2's columns: from a file, an envelope dict (checked
    as a file is) or ``Scored``."""
    if isinstance(source, Scored):
        return source.rows
    doc = load_report(source)[0] if isinstance(source, (str, os.PathLike)) \
        else given_report(source)[0]
    return rows_by_id(doc)


@pausing
@python_terms
def compare(baseline: Any, candidate: Any, *, budgets: Mapping[str, str] | None = None,
            anchor: Any = None, noise: Any = None, no_gate: bool = False,
            allow_identical: bool = False, config: str | None = None,
            baseline_is: str | None = None, pr_labels: Sequence[str] = (),
            pr_actor: str | None = None, **options: Any) -> GateResult:
    """``ragspan compare``: the gate's verdict on ``candidate`` against ``baseline`` (each a
    path, an envelope dict or ``Scored``). ``budgets`` maps a metric (``complete_grounding``
    or ``name@k``) to ``"2pt"``, ``"2%"`` or ``"off"``; ``options`` are the gate's settings
    by their Python names (``alpha``, ``on_inconclusive``, ``gate_slices``,
    ``cluster_by``, ...). Returns the ``GateResult`` (``.decision.verdict``, ``.summary()``,
    ``.outcomes``). ``baseline_is`` (``base-tip`` or ``merge-base``), ``pr_labels`` and
    ``pr_actor`` are ``compare``'s ``--baseline-is``, ``--pr-label`` and ``--pr-actor``:
    where the reports were made, and the override (docs/ci.md).

    Settings rule (docs/api.md): the API reads no settings file unless ``config`` names one
    (a ``pyproject.toml`` with ``[tool.ragspan]``); then the file fills what the arguments do
    not give, with the command line's precedence (an explicit budget beats every file
    budget for the columns it names). The CLI, given the same file as ``--config``, gives
    the same verdict."""
    table: dict[str, Any] = {}
    config_path = None
    if config is not None:
        table, config_path = load_tool_config(str(config))
    opts, origins = gate_options([f"{m}={v}" for m, v in (budgets or {}).items()], table,
                                 config_path, options)
    # the API takes reports only: they are taken as written, and the result says so
    return compare_reports(read_score_report(baseline), read_score_report(candidate), opts,
                           origins=origins, no_gate=no_gate, allow_identical=allow_identical,
                           anchor=None if anchor is None else read_score_report(anchor),
                           noise=None if noise is None else read_score_report(noise),
                           baseline_is=baseline_is, pr_labels=pr_labels,
                           pr_actor=pr_actor)
