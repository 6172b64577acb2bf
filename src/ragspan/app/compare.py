"""``ragspan compare``: gate a candidate score report against a baseline.

Settings come from the command line (None or empty = not given), else ``[tool.ragspan]``,
else the declared defaults (``ragspan.base.options.GATE_OPTIONS``, which also builds the click
options). The verdict is ``ragspan.gate.compare.compare``'s."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from ragspan.app.across import migration_of_file, trusted_eval_set
from ragspan.app.output import CommandResult
from ragspan.app.provenance import BASELINE_IS, check_labels, provenance_summary
from ragspan.app.score_reports import ScoreReport, load_score_report, score_report_doc
from ragspan.app.settings import load_tool_config
from ragspan.app.verify import SOURCE_KEYS, Sources, verification, verify_scored
from ragspan.base.errors import UsageError, present
from ragspan.base.options import GATE_DEFAULTS, GATE_OPTIONS
from ragspan.base.records import InputRef
from ragspan.base.voice import setting, surface
from ragspan.gate import compare as gate
from ragspan.gate import percent_budgets
from ragspan.gate.budgets import Budget, parse_budget
from ragspan.gate.migration import Migration
from ragspan.gate.options import GateOptions
from ragspan.gate.override import override_of
from ragspan.gate.plan import Origins
from ragspan.gate.result import GateResult
from ragspan.records.compare import CompareParameters, ComparePredicate
from ragspan.records.envelope import decode, given
from ragspan.records.score import Provenance
from ragspan.report.envelope import created_at, statement
from ragspan.report.render.annotations import github_annotations
from ragspan.report.render.junit import junit_xml

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


def run(*, baseline: str, candidate: str, budgets: Sequence[str] = (), config: str | None = None,
        no_config: bool = False, config_origin: str | None = None,
        allow_identical: bool = False, no_gate: bool = False, anchor: str | None = None,
        noise: str | None = None, sources: Sources | None = None,
        migration: str | None = None, migrated_eval_set_trusted: str | None = None,
        junit: str | None = None, annotations: str | None = None,
        baseline_is: str | None = None, pr_labels: Sequence[str] = (),
        pr_actor: str | None = None, **cli: Any) -> CommandResult:
    _refuse_arguments(baseline, candidate, config, no_config, config_origin)
    table, config_path = ({}, None) if no_config else load_tool_config(config)
    opts, origins = gate_options(budgets, table, config_path, cli, config_origin)
    sources = sources or Sources()
    moved, moved_sha = migration_of_file(migration, sources.candidate_eval_set,
                                         sources.candidate_corpus)
    trusted = trusted_eval_set(migrated_eval_set_trusted, moved)
    sources.check()
    reports = []
    for path, role in ((baseline, "baseline"), (candidate, "candidate")):
        reports.append(load_score_report(path, role))
        if sources.given:
            verify_scored(score_report_doc(path), str(path), role, sources)
    base, cand = reports
    _refuse_toolkit_reports(base, cand, opts.profile)
    extra = {role: load_score_report(extra_path, role)
             for extra_path, role in ((anchor, "anchor"), (noise, "noise"))
             if extra_path is not None}
    result = compare_reports(base, cand, opts, origins=origins, no_gate=no_gate,
                             allow_identical=allow_identical, anchor=extra.get("anchor"),
                             noise=extra.get("noise"), sources=sources, migration=moved,
                             migration_trusted=trusted is not None,
                             baseline_is=baseline_is, pr_labels=pr_labels, pr_actor=pr_actor)
    parameters = _parameters(opts, result, config_path, config_origin, no_config,
                             sources.given, migration is not None, baseline_is)
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
    doc = statement(
        kind="compare", subject=[refs[1]], inputs=refs,
        parameters=parameters,
        summary=result.summary_record(), details=result.details_record(),
        verdict=result.decision.verdict, exit_code=result.decision.exit_code,
    )
    said = annotations or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "none")
    pred = decode(doc["predicate"], ComparePredicate)
    return CommandResult(doc, {junit: junit_xml(pred)} if junit else {},
                         annotations=tuple(github_annotations(pred)) if said == "github"
                         else ())


def _where_and_who(result: GateResult, base: ScoreReport, cand: ScoreReport,
                   opts: GateOptions, baseline_is: str | None, labels: Sequence[str],
                   actor: str | None) -> GateResult:
    """The verdict with where both reports were made (and the baseline's age) and the
    override, when the trusted side configured one and the pull request carries its label."""
    check_labels(labels, actor)
    if baseline_is is not None and baseline_is not in BASELINE_IS:
        raise UsageError(f"{setting('baseline-is')} must be one of {', '.join(BASELINE_IS)}, "
                         f"got {baseline_is!r}")
    where, notes = provenance_summary(_made_at(base), _made_at(cand), baseline_is,
                                      created_at(), opts.max_baseline_age)
    record, _ = override_of(opts.override_label, labels, actor, result.decision)
    return dataclasses.replace(result, provenance=where, override=record,
                               warnings=result.warnings + tuple(notes))


def _made_at(report: ScoreReport) -> Provenance | None:
    """Where a score report says it was made (its ``parameters.provenance``, checked by the
    report's schema when it was read)."""
    found = report.parameters.get("provenance")
    return None if found is None else decode(found, Provenance)


def _refuse_arguments(baseline: str, candidate: str, config: str | None, no_config: bool,
                      config_origin: str | None) -> None:
    """A UsageError for arguments that contradict each other, before any work."""
    if os.path.exists(baseline) and os.path.exists(candidate) and \
            os.path.samefile(baseline, candidate):
        raise UsageError(f"{setting('baseline')} and {setting('candidate')} are the same file")
    if no_config and config is not None:
        raise UsageError(f"{setting('no-config')} reads no settings file: drop {setting('config')} "
                         f"or {setting('no-config')}")
    if config_origin is not None and config is None:
        raise UsageError(f"{setting('config-origin')} says where {setting('config')} came from: "
                         f"give {setting('config')}")


# score's spellings of toolkit-rag-quality's command line (its `score --queries --retrieved`)
TOOLKIT_SCORE_FLAGS = ("--queries", "--retrieved", "--queries-format", "--retrieved-format")


def _refuse_toolkit_reports(base: ScoreReport, cand: ScoreReport, profile: str) -> None:
    """A report scored with toolkit-rag-quality's command line comes from a job written for
    that gate: judged by ragspan's rules without a word, it would pass where that gate
    fails. Unless the settings chose the rules (``profile`` not ``auto``), that is a usage
    error naming both choices; a report never chooses them itself."""
    if profile != "auto":
        return
    for role, report in (("baseline", base), ("candidate", cand)):
        argv = report.parameters.get("argv")
        typed = next((a.split("=", 1)[0] for a in argv if isinstance(a, str)
                      and a.split("=", 1)[0] in TOOLKIT_SCORE_FLAGS), None) \
            if isinstance(argv, list) else None
        if typed is not None:
            raise UsageError(
                f"the {role} report was scored with toolkit-rag-quality's command line "
                f"({typed}): choose whose rules judge it, {setting('profile', 'toolkit')} "
                f"(that gate's: {percent_budgets.TOOLKIT_RULES}) or "
                f"{setting('profile', 'ragspan')} (ragspan's calibrated gate; docs/toolkit.md)")


def _parameters(opts: GateOptions, result: GateResult, config_path: str | None,
                config_origin: str | None, no_config: bool, verified: bool,
                across: bool, baseline_is: str | None) -> CompareParameters:
    """The compare report's parameters: every setting in force (None ones left out)."""
    return CompareParameters(
        alpha=given(opts.alpha), mode=opts.mode, on_inconclusive=opts.on_inconclusive,
        anchor_budget=given(opts.anchor_budget), test=opts.test,
        permutations=opts.permutations, bootstrap=opts.bootstrap, seed=opts.seed,
        correction=opts.family_correction, budget_tolerance=opts.budget_tolerance,
        allow_budget_change=opts.allow_budget_change,
        allow_parameter_change=list(opts.allow_parameter_change) or UNSET,
        budgets={n: str(b) for n, b in result.budgets.items()},
        gate_slices=list(opts.gate_slices), min_slice_size=opts.min_slice_size,
        cluster_by=opts.cluster_by, k=list(result.ks), config_file=given(config_path),
        config_origin=given(config_origin), no_config=True if no_config else UNSET,
        verified=True if verified else UNSET,
        max_set_aside=opts.max_set_aside if across else UNSET, profile=opts.profile,
        max_baseline_age=given(opts.max_baseline_age),
        override_label=given(opts.override_label), baseline_is=given(baseline_is))



def gate_options(budgets: Sequence[str], table: dict[str, Any], config_path: str | None,
                 given: dict[str, Any], config_origin: str | None = None
                 ) -> tuple[GateOptions, Origins]:
    """The gate's options, merged once for the CLI and the Python API: the declared defaults,
    then the settings file's ``table`` (``[tool.ragspan]``, read from ``config_path``), then
    every setting ``given`` (None, empty or False = not given); budgets (``METRIC=VALUE``
    strings) merged per column (``merge_budgets``). Returns them validated, with where each
    came from (``gate.plan.Origins``: each budget key's file path or None for the caller,
    each setting's layer; the caller named as ``flags_origin`` says)."""
    settings = {**GATE_DEFAULTS, **table}
    layer = {key: "config" for key in table}
    for key, value in given.items():
        if value is not None and value != () and value is not False:
            settings[key] = tuple(value) if isinstance(value, (list, tuple)) else value
            layer[key] = "flags"
    cfg_budgets = settings.pop("budgets") if "budgets" in table else {}
    settings.pop("budgets", None)
    recall_pct, other_pct = settings["max_recall_regression_pct"], settings["max_regression_pct"]
    spelled, said = percent_budgets.toolkit_profile(
        settings["profile"], percent_budgets.active(recall_pct, other_pct), budgets,
        f"profile toolkit, from {config_path if layer.get('profile') == 'config' else flags_origin()}")
    typed = [(s, percent_budgets.translate(s, spelled)) for s in budgets]
    cli_budgets = dict(parse_budget(t) for _, t in typed)
    readings = (() if said is None else (said,)) + tuple(
        r for s, t in typed if (r := percent_budgets.reading(s, t)) is not None)
    # the toolkit's default budgets come from whoever asked for its rules: a percent option
    # or the profile on the command line (or a budget there in its spelling), else the file
    asked = any(given.get(k) is not None for k in (
        "max_recall_regression_pct", "max_regression_pct", "profile")) or \
        any(percent_budgets.toolkit_spelled(b) for b in budgets)
    pct_origin = None if asked else config_path
    pct = percent_budgets.default_budgets(recall_pct, other_pct) if spelled else {}
    merged = merge_budgets(merge_budgets(pct, cfg_budgets), cli_budgets)
    origin: dict[str, str | None] = {
        key: None if key in cli_budgets else config_path if key in cfg_budgets else pct_origin
        for key in merged}
    if spelled and "mode" not in table and given.get("mode") is None:
        settings["mode"] = "threshold"  # that gate's rule: any drop over its budget fails
    if spelled:  # the rules in force, whatever asked for them
        settings["profile"] = "toolkit"
    opts = GateOptions(budgets=merged, **settings)
    opts.validate()
    return opts, Origins(flags=flags_origin(), config=config_path, config_origin=config_origin,
                         budgets=origin, settings=layer, readings=readings)


def flags_origin() -> str:
    """How the caller's own settings are named in the plan: ``argument`` in the Python API,
    ``action input`` when the Action runs the command (it says so in
    ``RAGSPAN_SETTINGS_FROM``: messages then name its inputs; no setting changes), else
    ``command line``."""
    return {"python": "argument", "action": "action input"}.get(surface(), "command line")


def compare_reports(base: ScoreReport, cand: ScoreReport, opts: GateOptions, *,
                    origins: Origins | None = None, no_gate: bool = False,
                    allow_identical: bool = False, anchor: ScoreReport | None = None,
                    noise: ScoreReport | None = None, sources: Sources | None = None,
                    migration: Migration | None = None,
                    migration_trusted: bool = False, baseline_is: str | None = None,
                    pr_labels: Sequence[str] = (), pr_actor: str | None = None) -> GateResult:
    """The gate's verdict on ``cand`` against ``base``, with what it rests on: the reports
    re-scored from ``sources`` (verified by the caller) or taken as written; where both were
    made (``baseline_is``: which base the caller scored the baseline at) and the override
    the pull request's ``pr_labels`` (set by ``pr_actor``) may carry."""
    result = gate.compare(base, cand, opts, origins=origins, no_gate=no_gate,
                          allow_identical=allow_identical, anchor=anchor, noise=noise,
                          migration=migration, migration_trusted=migration_trusted)
    result = _where_and_who(result, base, cand, opts, baseline_is, pr_labels, pr_actor)
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
