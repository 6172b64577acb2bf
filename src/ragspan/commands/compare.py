"""``ragspan compare``: gate a candidate score report against a baseline.

Settings come from the command line (None or empty = not given), else ``[tool.ragspan]``,
else the declared defaults (``ragspan.options.GATE_OPTIONS``, which also builds the click
options). The verdict is ``ragspan.gate.compare``'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragspan.commands.output import CommandResult
from ragspan.errors import UsageError
from ragspan.options import GATE_OPTIONS

__all__ = ["GATE_OPTIONS", "run"]


def run(*, baseline: str, candidate: str, budgets: Sequence[str] = (), config: str | None = None,
        allow_identical: bool = False, no_gate: bool = False, anchor: str | None = None,
        noise: str | None = None, **cli: Any) -> CommandResult:
    import os

    from ragspan import gate
    from ragspan.budgets import parse_budget
    from ragspan.config import load_tool_config
    from ragspan.envelope import load_report, statement
    from ragspan.report import InputRef
    from ragspan.scorereport import score_report_of

    if os.path.exists(baseline) and os.path.exists(candidate) and \
            os.path.samefile(baseline, candidate):
        raise UsageError("--baseline and --candidate are the same file")
    table, config_path = load_tool_config(config)
    settings = {**gate.GATE_DEFAULTS, **table}
    for key, value in cli.items():
        if value is not None and value != () and value is not False:
            settings[key] = tuple(value) if isinstance(value, (list, tuple)) else value
    cfg_budgets = settings.pop("budgets") if "budgets" in table else {}
    settings.pop("budgets", None)
    cli_budgets = dict(parse_budget(s) for s in budgets)
    origin: dict[str, str | None] = {key: config_path for key in cfg_budgets}
    origin.update(dict.fromkeys(cli_budgets))
    opts = gate.GateOptions(budgets={**cfg_budgets, **cli_budgets}, **settings)
    opts.validate()
    reports = []
    for path, role in ((baseline, "baseline"), (candidate, "candidate")):
        doc, sha = load_report(path)
        reports.append(score_report_of(doc, sha, str(path), role))
    base, cand = reports
    extra = {}
    for path, role in ((anchor, "anchor"), (noise, "noise")):
        if path is not None:
            doc, sha = load_report(path)
            extra[role] = score_report_of(doc, sha, str(path), role)
    result = gate.compare(base, cand, opts, budget_origin=origin, no_gate=no_gate,
                          allow_identical=allow_identical, anchor=extra.get("anchor"),
                          noise=extra.get("noise"))
    parameters = {
        "alpha": opts.alpha, "mode": opts.mode, "on_inconclusive": opts.on_inconclusive,
        "anchor_budget": opts.anchor_budget, "test": opts.test,
        "permutations": opts.permutations, "bootstrap": opts.bootstrap, "seed": opts.seed,
        "correction": opts.family_correction, "budget_tolerance": opts.budget_tolerance,
        "allow_budget_change": opts.allow_budget_change,
        "budgets": {n: str(b) for n, b in result.budgets.items()},
        "gate_slices": list(opts.gate_slices), "min_slice_size": opts.min_slice_size,
        "k": list(result.ks), "config_file": config_path,
    }
    refs = [InputRef("baseline", baseline, base.sha256),
            InputRef("candidate", candidate, cand.sha256)]
    refs += [InputRef(role, path, extra[role].sha256)
             for role, path in (("anchor", anchor), ("noise", noise)) if role in extra]
    return CommandResult(statement(
        kind="compare", subject=[refs[1]], inputs=refs,
        parameters={k: v for k, v in parameters.items() if v is not None},
        summary=result.summary(), details=result.details(),
        verdict=result.decision.verdict, exit_code=result.decision.exit_code,
    ))
