"""``ragspan compare``: gate a candidate score report against a baseline.

Settings come from the command line (None or empty = not given), else ``[tool.ragspan]``,
else the declared defaults (``ragspan.base.options.GATE_OPTIONS``, which also builds the click
options). The verdict is ``ragspan.gate.compare.compare``'s."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragspan.app.across import migration_of_file, trusted_eval_set
from ragspan.app.output import CommandResult
from ragspan.app.score import (
    DEFAULT_TOKENIZER,
    eval_set_body,
    qrels_body,
    with_skipped_rows,
    with_warnings,
)
from ragspan.app.score_reports import ScoreReport, load_score_report
from ragspan.app.settings import load_tool_config
from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import InputError, MissingExtraError, UsageError, present
from ragspan.base.options import GATE_DEFAULTS, GATE_OPTIONS
from ragspan.base.records import InputRef, ReportBody
from ragspan.base.voice import surface
from ragspan.gate import compare as gate
from ragspan.gate import percent_budgets
from ragspan.gate.budgets import Budget, parse_budget
from ragspan.gate.migration import Migration
from ragspan.gate.options import GateOptions
from ragspan.gate.result import GateResult, Verification
from ragspan.io.rows import ON_DUPLICATE, Skipped
from ragspan.report.envelope import statement
from ragspan.scoring.metrics.registry import parse_cutoff

__all__ = ["GATE_OPTIONS", "SOURCE_KEYS", "GateResult", "Sources", "compare_reports", "gate_options",
           "merge_budgets", "run", "verify_scored"]


def merge_budgets(from_file: dict[str, Budget], from_cli: dict[str, Budget]) -> dict[str, Budget]:
    """The budgets in force: a command-line budget beats every budget from a file for the
    columns it names. ``METRIC=...`` on the command line names the metric at every k, so it
    removes the file's ``METRIC`` and every ``METRIC@k``; ``METRIC@k=...`` names that k
    only, so it removes the file's ``METRIC@k`` and leaves the file's ``METRIC`` for the
    other k. The most specific key left then wins (``budgets.budget_for``)."""
    whole = {key for key in from_cli if "@" not in key}
    kept = {key: b for key, b in from_file.items()
            if key not in from_cli and key.split("@", 1)[0] not in whole}
    return {**kept, **from_cli}


@dataclass(frozen=True)
class Sources:
    """The files both score reports claim to come from (``compare --eval-set ...``): the
    shared eval set (or qrels) and corpus, and each side's run and chunk manifest."""

    eval_set: str | None = None
    qrels: str | None = None
    corpus: str | None = None
    baseline_run: str | None = None
    candidate_run: str | None = None
    baseline_chunks: str | None = None
    candidate_chunks: str | None = None
    # across a corpus change (``--migration``): the candidate's own eval set and corpus
    candidate_eval_set: str | None = None
    candidate_corpus: str | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in self.__dict__.values())

    def check(self) -> None:
        """Verification is all or nothing: both runs, and exactly one of eval set or qrels."""
        if not self.given:
            return
        if self.baseline_run is None or self.candidate_run is None:
            raise UsageError("verifying the reports needs both runs: give --baseline-run and "
                             "--candidate-run (with --eval-set or --qrels)")
        if (self.eval_set is None) == (self.qrels is None):
            raise UsageError("verifying the reports needs exactly one of --eval-set or "
                             "--qrels, the judgments both sides were scored on")


SOURCE_KEYS = ("eval_set", "qrels", "corpus", "baseline_run", "candidate_run",
               "baseline_chunks", "candidate_chunks", "candidate_eval_set", "candidate_corpus")


_A = {"eval_set": "an eval set", "qrels": "qrels", "corpus": "a corpus", "run": "a run",
      "chunks": "a chunk manifest"}


def verify_scored(doc: dict[str, Any], path: str, role: str, sources: Sources) -> None:
    """Re-score one side from the files given and refuse its report unless it is what those
    files score to: every input the report records must be given and have the recorded
    sha256 (a missing one is a usage error, a different one an input error naming the file),
    and the report's parameters, summary and per-query rows must equal the re-scored ones
    (an input error naming the first query or key that differs). Catches hand-edited rows
    and digests alike."""
    pred = doc["predicate"]
    run = sources.baseline_run if role == "baseline" else sources.candidate_run
    chunks = sources.baseline_chunks if role == "baseline" else sources.candidate_chunks
    own = role == "candidate"
    eval_set = sources.candidate_eval_set if own and sources.candidate_eval_set else \
        sources.eval_set
    corpus = sources.candidate_corpus if own and sources.candidate_corpus else sources.corpus
    given = {"eval_set": eval_set, "qrels": sources.qrels, "corpus": corpus,
             "run": run, "chunks": chunks}
    flag = {"eval_set": "--candidate-eval-set" if eval_set is not sources.eval_set
            else "--eval-set", "qrels": "--qrels",
            "corpus": "--candidate-corpus" if corpus is not sources.corpus else "--corpus",
            "run": f"--{role}-run", "chunks": f"--{role}-chunks"}
    recorded = {ref["role"]: ref["digest"].get("sha256") for ref in pred["inputs"]}
    for key, value in given.items():
        if key in recorded and value is None:
            raise UsageError(f"the {role} report was scored with {_A[key]}: "
                             f"give {flag[key]} to verify it")
        if key not in recorded and value is not None:
            raise InputError(f"{flag[key]} was given, but the {role} report was scored "
                             f"without {_A[key]}", path)
    params = _scoring_parameters(pred)
    try:
        body = _rescored(pred["kind"], params,
                         dataclasses.replace(sources, eval_set=eval_set, corpus=corpus),
                         present(run, flag["run"]), chunks, "qrels" in recorded, path)
    except MissingExtraError:
        raise
    except UsageError as exc:  # a value of the report's own parameters, not of a flag
        raise InputError(f"the {role} report's parameters cannot be re-scored: {exc}",
                         path) from None
    for ref in body.inputs:
        if recorded.get(ref.role) != ref.sha256:
            raise InputError(f"{flag.get(ref.role, ref.role)} {ref.name} (sha256 "
                             f"{ref.sha256[:12]}) is not the file the {role} report records "
                             f"(sha256 {str(recorded.get(ref.role))[:12]})", path)
    if body.kind != pred["kind"]:
        raise InputError(f"the {role} report is a {pred['kind']} report, but its inputs score "
                         f"to a {body.kind} report", path)
    _refuse_differences(body, pred, params, role, path)


def _scoring_parameters(pred: dict[str, Any]) -> dict[str, Any]:
    """A report's parameters without the command line that wrote it (how it was typed, not
    what it scored with)."""
    return {k: v for k, v in pred["parameters"].items() if k != "argv"}


def _rescored(kind: str, params: dict[str, Any], sources: Sources, run: str,
              chunks: str | None, by_qrels: bool, path: str) -> ReportBody:
    """The report body the given files score to with the report's own parameters (its
    cutoffs, counts or budgets, parsed as ``score --k`` parses them; its tokenizer)."""
    try:
        ks = tuple(parse_cutoff(k) for k in params["k"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"the report's parameters.k cannot be re-scored: {exc}", path) from None
    rule = params.get("on_duplicate", "error")
    if rule not in ON_DUPLICATE:
        raise InputError(f"the report's parameters.on_duplicate must be one of "
                         f"{', '.join(ON_DUPLICATE)}, got {rule!r}", path)
    skipped = (Skipped(), Skipped()) if rule == "first" else None

    def build() -> ReportBody:
        if by_qrels:
            body = qrels_body(present(sources.qrels, "--qrels"), run,
                              params.get("qrels_format", "auto"),
                              params.get("run_format", "auto"), ks,
                              params.get("relevance_level", 1),
                              params.get("judged_only", False), skipped=skipped)
        else:
            body = eval_set_body(present(sources.eval_set, "--eval-set"), run, sources.corpus,
                                 "span" if kind == "score.span" else "auto", ks,
                                 params.get("grounding_threshold", 0.5),
                                 params.get("relevance_level", 1),
                                 params.get("judged_only", False),
                                 chunks, params.get("anchoring"),
                                 bool(params.get("chroma_metrics", False)),
                                 tokenizer=params.get("tokenizer", DEFAULT_TOKENIZER),
                                 budget_grid=False,  # the report's cutoffs are all of them
                                 skipped=skipped)
        if skipped is None:
            return body
        return with_skipped_rows(body, skipped, "qrels" if by_qrels else "eval_set")

    return with_warnings(build)


def _same(a: Any, b: Any) -> bool:
    return canonical_dumps(a) == canonical_dumps(b)


def _refuse_differences(body: ReportBody, pred: dict[str, Any], params: dict[str, Any],
                        role: str, path: str) -> None:
    """An InputError naming the first parameter (``params``: the report's scoring
    parameters), query row or summary key where the report differs from ``body``, its
    re-scoring."""
    if not _same(body.parameters, params):
        keys = sorted(set(body.parameters) | set(params))
        key = next(k for k in keys if not _same(body.parameters.get(k), params.get(k)))
        raise InputError(f"the {role} report's parameter '{key}' is not what its inputs score "
                         "with", path)
    rows = {r["id"]: r for r in body.details.get("queries", [])}
    for row in pred["details"].get("queries", []):
        fresh = rows.get(row.get("id"))
        if fresh is None or not _same(fresh, row):
            diff = ""
            if fresh is not None:
                metrics = row.get("metrics", {})
                moved = [m for m in fresh.get("metrics", {})
                         if not _same(fresh["metrics"][m], metrics.get(m))]
                if moved:
                    diff = (f" ({moved[0]}: {metrics.get(moved[0])!r} in the report, "
                            f"{fresh['metrics'][moved[0]]!r} re-scored)")
            raise InputError(f"the {role} report's row of query '{row.get('id')}' is not what "
                             f"its inputs score to{diff}", path)
    if not _same(body.details, pred["details"]):
        raise InputError(f"the {role} report's per-query rows are not what its inputs score "
                         "to (rows added, removed or reordered)", path)
    if not _same(body.summary, pred["summary"]):
        keys = sorted(set(body.summary) | set(pred["summary"]))
        key = next(k for k in keys if not _same(body.summary.get(k), pred["summary"].get(k)))
        raise InputError(f"the {role} report's summary '{key}' is not what its inputs score "
                         "to", path)


def run(*, baseline: str, candidate: str, budgets: Sequence[str] = (), config: str | None = None,
        no_config: bool = False, config_origin: str | None = None,
        allow_identical: bool = False, no_gate: bool = False, anchor: str | None = None,
        noise: str | None = None, sources: Sources | None = None,
        migration: str | None = None, migrated_eval_set_trusted: str | None = None,
        **cli: Any) -> CommandResult:
    if os.path.exists(baseline) and os.path.exists(candidate) and \
            os.path.samefile(baseline, candidate):
        raise UsageError("--baseline and --candidate are the same file")
    if no_config and config is not None:
        raise UsageError("--no-config reads no settings file: drop --config or --no-config")
    if config_origin is not None and config is None:
        raise UsageError("--config-origin says where --config came from: give --config")
    table, config_path = ({}, None) if no_config else load_tool_config(config)
    opts, origin = gate_options(budgets, table, config_path, cli)
    sources = sources or Sources()
    moved, moved_sha = migration_of_file(migration, sources.candidate_eval_set,
                                         sources.candidate_corpus)
    trusted = trusted_eval_set(migrated_eval_set_trusted, moved)
    sources.check()
    reports = []
    for path, role in ((baseline, "baseline"), (candidate, "candidate")):
        doc, report = load_score_report(path, role)
        reports.append(report)
        if sources.given:
            verify_scored(doc, str(path), role, sources)
    base, cand = reports
    extra = {role: load_score_report(extra_path, role)[1]
             for extra_path, role in ((anchor, "anchor"), (noise, "noise"))
             if extra_path is not None}
    result = compare_reports(base, cand, opts, origin=origin, no_gate=no_gate,
                             allow_identical=allow_identical, anchor=extra.get("anchor"),
                             noise=extra.get("noise"), sources=sources, migration=moved,
                             migration_trusted=trusted is not None)
    parameters = _parameters(opts, result, config_path, config_origin, no_config,
                             sources.given, migration is not None)
    refs = [InputRef("baseline", baseline, base.sha256),
            InputRef("candidate", candidate, cand.sha256)]
    refs += [InputRef(role, present(path, role), extra[role].sha256)
             for role, path in (("anchor", anchor), ("noise", noise)) if role in extra]
    if migration is not None:
        refs.append(InputRef("migration", migration, moved_sha))
    if trusted is not None:
        refs.append(trusted)
    if sources.given:
        refs += _source_refs(sources, base, cand)
    return CommandResult(statement(
        kind="compare", subject=[refs[1]], inputs=refs,
        parameters=parameters,
        summary=result.summary(), details=result.details(),
        verdict=result.decision.verdict, exit_code=result.decision.exit_code,
    ))


def _parameters(opts: GateOptions, result: GateResult, config_path: str | None,
                config_origin: str | None, no_config: bool, verified: bool,
                across: bool) -> dict[str, Any]:
    """The compare report's parameters: every setting in force (None ones left out)."""
    parameters = {
        "alpha": opts.alpha, "mode": opts.mode, "on_inconclusive": opts.on_inconclusive,
        "anchor_budget": opts.anchor_budget, "test": opts.test,
        "permutations": opts.permutations, "bootstrap": opts.bootstrap, "seed": opts.seed,
        "correction": opts.family_correction, "budget_tolerance": opts.budget_tolerance,
        "allow_budget_change": opts.allow_budget_change,
        "allow_parameter_change": list(opts.allow_parameter_change) or None,
        "budgets": {n: str(b) for n, b in result.budgets.items()},
        "gate_slices": list(opts.gate_slices), "min_slice_size": opts.min_slice_size,
        "cluster_by": opts.cluster_by,
        "k": list(result.ks), "config_file": config_path, "config_origin": config_origin,
        "no_config": no_config or None,
        "verified": verified or None,
        "max_set_aside": opts.max_set_aside if across else None,
    }
    return {k: v for k, v in parameters.items() if v is not None}


def verification(sources: Sources) -> Verification:
    """What the verdict rests on: both reports re-scored from the files they record, or the
    reports taken as written (and how to verify them)."""
    if sources.given:
        files = ["the eval set" if sources.eval_set is not None else "the qrels"]
        if sources.corpus is not None:
            files.append("the corpus")
        files.append("the runs")
        if sources.baseline_chunks is not None or sources.candidate_chunks is not None:
            files.append("the chunk manifests")
        said = (f"both reports re-scored from {', '.join(files[:-1])} and {files[-1]}, and "
                "equal to what those files score to")
        return Verification(verified=True, statement=said)
    if surface() == "python":
        return Verification(verified=False, statement=(
            "taken as written, not verified: the Python API compares reports; `ragspan "
            "compare` given the eval set (or qrels), the corpus and both runs re-scores both "
            "reports from their files"))
    return Verification(verified=False, statement=(
        "taken as written, not verified: give --eval-set (or --qrels), --corpus and "
        "--baseline-run / --candidate-run to re-score both reports from their files"))


def gate_options(budgets: Sequence[str], table: dict[str, Any], config_path: str | None,
                 given: dict[str, Any]) -> tuple[GateOptions, dict[str, str | None]]:
    """The gate's options, merged once for the CLI and the Python API: the declared defaults,
    then the settings file's ``table`` (``[tool.ragspan]``, read from ``config_path``), then
    every setting ``given`` (None, empty or False = not given); budgets (``METRIC=VALUE``
    strings) merged per column (``merge_budgets``), each with where it came from (None: the
    caller, else the file's path). Validated before it is returned."""
    settings = {**GATE_DEFAULTS, **table}
    for key, value in given.items():
        if value is not None and value != () and value is not False:
            settings[key] = tuple(value) if isinstance(value, (list, tuple)) else value
    cfg_budgets = settings.pop("budgets") if "budgets" in table else {}
    settings.pop("budgets", None)
    recall_pct, other_pct = settings["max_recall_regression_pct"], settings["max_regression_pct"]
    spelled = percent_budgets.active(recall_pct, other_pct)
    cli_budgets = dict(parse_budget(percent_budgets.translate(s, spelled)) for s in budgets)
    pct_origin = None if any(given.get(k) is not None for k in (
        "max_recall_regression_pct", "max_regression_pct")) else config_path
    pct = percent_budgets.default_budgets(recall_pct, other_pct) if spelled else {}
    merged = merge_budgets(merge_budgets(pct, cfg_budgets), cli_budgets)
    origin: dict[str, str | None] = {
        key: None if key in cli_budgets else config_path if key in cfg_budgets else pct_origin
        for key in merged}
    if spelled and "mode" not in table and given.get("mode") is None:
        settings["mode"] = "threshold"  # that gate's rule: any drop over its budget fails
    opts = GateOptions(budgets=merged, **settings)
    opts.validate()
    return opts, origin


def compare_reports(base: ScoreReport, cand: ScoreReport, opts: GateOptions, *,
                    origin: dict[str, str | None] | None = None, no_gate: bool = False,
                    allow_identical: bool = False, anchor: ScoreReport | None = None,
                    noise: ScoreReport | None = None, sources: Sources | None = None,
                    migration: Migration | None = None,
                    migration_trusted: bool = False) -> GateResult:
    """The gate's verdict on ``cand`` against ``base``, with what it rests on: the reports
    re-scored from ``sources`` (verified by the caller) or taken as written."""
    result = gate.compare(base, cand, opts, budget_origin=origin, no_gate=no_gate,
                          allow_identical=allow_identical, anchor=anchor, noise=noise,
                          migration=migration, migration_trusted=migration_trusted)
    return dataclasses.replace(result, verification=verification(sources or Sources()))


def _source_refs(sources: Sources, base: ScoreReport, cand: ScoreReport) -> list[InputRef]:
    """The files both sides were re-scored from, each with the digest its report records."""
    refs = []
    for role in ("eval_set", "qrels", "corpus"):
        path = getattr(sources, role)
        if path is not None:
            refs.append(InputRef(role, path, base.input_sha256(role)))
        own = getattr(sources, f"candidate_{role}", None)
        if own is not None:
            refs.append(InputRef(f"candidate_{role}", own, cand.input_sha256(role)))
    for who, side in (("baseline", base), ("candidate", cand)):
        for key in ("run", "chunks"):
            path = getattr(sources, f"{who}_{key}")
            if path is not None:
                refs.append(InputRef(f"{who}_{key}", path, side.input_sha256(key)))
    return refs
