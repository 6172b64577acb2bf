"""Command implementations: read the inputs, call the core, return a report envelope.

The click functions in ``cli.py`` only parse arguments and call these.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ragspan.errors import InputError, UsageError

log = logging.getLogger("ragspan")


def score_command(
    *,
    eval_set: str | None,
    run: str,
    corpus: str | None = None,
    qrels: str | None = None,
    qrels_format: str = "auto",
    run_format: str = "auto",
    ks: Sequence[int] = (),
    tau: float = 0.5,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> dict[str, Any]:
    """``ragspan score``: a span report (eval set + span run) or a doc report (qrels + run)."""
    from ragspan.scoring import DEFAULT_KS

    ks = tuple(ks) or DEFAULT_KS
    if (eval_set is None) == (qrels is None):
        raise UsageError("give exactly one of --eval-set (span level) or --qrels (doc level)")
    if qrels is not None:
        from ragspan.doclevel import doc_score_command

        return doc_score_command(
            qrels=qrels, run=run, qrels_format=qrels_format, run_format=run_format, ks=ks,
            relevance_level=relevance_level, judged_only=judged_only,
        )
    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.io.runs import read_span_run
    from ragspan.scoring import compute_span_report, span_envelope

    evalset = read_eval_set(eval_set)
    if run_format == "auto":
        from ragspan.io.docruns import detect_run_format
        from ragspan.io.files import read_head

        run_format = detect_run_format(read_head(run), run)
    if run_format != "span":
        from ragspan.doclevel import evalset_doc_score

        return evalset_doc_score(evalset, run, run_format, ks, relevance_level, judged_only)
    if judged_only:
        raise UsageError("--judged-only applies to doc-level scoring (qrels or a doc run): a "
                         "span report scores every query of the eval set, so its doc-level "
                         "view does too")
    span_run = read_span_run(run)
    corp = read_corpus(corpus) if corpus else None
    report = compute_span_report(evalset, span_run, corp, ks, tau)
    from ragspan.doclevel import span_doc_projection

    report.doc_level = span_doc_projection(report, ks, relevance_level, judged_only)
    log.info(
        "scored %d queries (%d without a run row, %d run rows without a query)",
        len(evalset.queries), int((~report.in_run).sum()), len(report.unmatched_run_ids),
    )
    return span_envelope(report)


def convert_command(what: str, src: str, fmt: str, out: str) -> None:
    """``ragspan convert qrels|run``: TREC <-> JSONL. Run order is kept exactly: a JSONL run
    written as TREC gets strictly decreasing scores, so trec_eval reproduces its order."""
    from ragspan.io.outputs import write_files

    if what == "qrels":
        from ragspan.io.qrels import read_qrels, write_qrels

        text = write_qrels(read_qrels(src).judgments, fmt)
    else:
        from ragspan.io.docruns import read_doc_run, write_doc_run

        text = write_doc_run(read_doc_run(src), fmt)
    write_files({out: text})
    log.info("wrote %s (%s)", out, fmt)


def compare_command(
    *,
    baseline: str,
    candidate: str,
    budgets: Sequence[str] = (),
    config: str | None = None,
    allow_identical: bool = False,
    no_gate: bool = False,
    **cli: Any,
) -> dict[str, Any]:
    """``ragspan compare``: gate a candidate score report against a baseline.

    Settings come from the command line (``cli``; None or empty = not given), else from
    ``[tool.ragspan]``, else from the declared defaults (``ragspan.options``)."""
    import os

    from ragspan import gate
    from ragspan.budgets import parse_budget
    from ragspan.config import load_tool_config
    from ragspan.envelope import InputRef, statement
    from ragspan.scorereport import read_score_report

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
    parsed = {**cfg_budgets, **cli_budgets}
    opts = gate.GateOptions(budgets=parsed, **settings)
    opts.validate()
    base = read_score_report(baseline, "baseline")
    cand = read_score_report(candidate, "candidate")
    if base.sha256 == cand.sha256 and not allow_identical:
        raise UsageError("the baseline and candidate reports are identical (same sha256); "
                         "pass --allow-identical if that is intended")
    gate.check_comparable(base, cand)
    defaults = gate.default_budgets(base.kind)
    gate.check_gated_present(base, cand, parsed, defaults)
    cmp = gate.align(base, cand)
    for key in gate.unmatched_budgets(cli_budgets, cmp.names):
        raise UsageError(f"--budget names '{key}', which the reports do not carry")
    for key in gate.unmatched_budgets(cfg_budgets, cmp.names):
        if key not in cli_budgets:
            raise InputError(f"[tool.ragspan.budgets] {key}: the reports carry no such metric",
                             config_path)
    gated = [n for n in cmp.names if gate.budget_for(n, parsed, defaults).gated]
    if not gated and not no_gate:
        raise UsageError("no metric is gated (every budget is off or names no column of the "
                         "reports); pass --no-gate to compare without gating")
    outcomes = gate.evaluate(cmp.base, cmp.cand, cmp.names, opts, defaults)
    bcheck = gate.budget_check(cmp, opts)
    slices, slice_failures = gate.slice_outcomes(cmp, opts, defaults)
    decision = gate.decide(outcomes, bcheck, slice_failures)
    k_min = min(cmp.ks)
    primary = opts.primary_metric or (
        f"complete_grounding@{k_min}" if cmp.kind == "score.span" else f"doc_ndcg@{k_min}")
    regressed = gate.most_regressed(cmp, primary, opts.top)

    summary: dict[str, Any] = {
        "verdict": decision.verdict,
        "reasons": list(decision.reasons),
        "queries": len(cmp.ids),
        "primary_metric": primary,
        "gated_metrics": gated,
        "metrics": {o.name: o.as_json() for o in outcomes},
    }
    if no_gate:
        summary["no_gate"] = True
    if bcheck is not None:
        summary["retrieval_budget"] = {"tolerance": bcheck.tolerance, "changed": bcheck.changed,
                                       "allowed": bcheck.allowed, "per_k": bcheck.per_k}
    parameters = {
        "alpha": opts.alpha, "mode": opts.mode, "test": opts.test,
        "permutations": opts.permutations, "bootstrap": opts.bootstrap, "seed": opts.seed,
        "correction": opts.correction, "budget_tolerance": opts.budget_tolerance,
        "allow_budget_change": opts.allow_budget_change,
        "budgets": {n: str(b) for n, b in sorted({**defaults, **parsed}.items())},
        "gate_slices": list(opts.gate_slices), "min_slice_size": opts.min_slice_size,
        "k": cmp.ks, "config_file": config_path,
    }
    refs = [InputRef("baseline", baseline, base.sha256),
            InputRef("candidate", candidate, cand.sha256)]
    return statement(
        kind="compare", subject=[refs[1]], inputs=refs,
        parameters={k: v for k, v in parameters.items() if v is not None},
        summary=summary,
        details={"most_regressed": regressed, "slices": slices},
        verdict=decision.verdict, exit_code=decision.exit_code,
    )


def build_command(kind: str, build: Any, *, out: str, corpus_out: str | None,
                  inputs: list[Any], parameters: dict[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, str]]:
    """An EvalBuild's report and its files (eval set + corpus), which the caller writes
    together with the report or not at all."""
    from ragspan.evalbuild import build_envelope, build_files, sha256_of

    files = build_files(build, out, corpus_out)
    log.info("writing %s (%d queries)%s", out, len(build.rows),
             f" and {corpus_out} ({len(build.documents)} documents)" if corpus_out else "")
    params = {k: v for k, v in parameters.items() if v is not None}
    doc = build_envelope(build, kind, sha256_of(files), out, corpus_out, inputs, params)
    return doc, files


def adapt_command(*, docs: str, queries: str, out: str, corpus_out: str | None,
                  normalize_whitespace: bool, max_docs: int, max_bytes: int
                  ) -> tuple[dict[str, Any], dict[str, str]]:
    """``ragspan adapt``: documents + questions with answer texts -> verified eval set."""
    from ragspan.adapt import adapt
    from ragspan.envelope import InputRef
    from ragspan.io.files import read_bytes, sha256_hex

    build = adapt(docs, queries, normalize_whitespace=normalize_whitespace,
                  max_docs=max_docs, max_bytes=max_bytes)
    inputs = [InputRef("queries", queries, sha256_hex(read_bytes(queries)))]
    return build_command("adapt", build, out=out, corpus_out=corpus_out, inputs=inputs,
                         parameters={"normalize_whitespace": normalize_whitespace,
                                     "max_docs": max_docs, "max_bytes": max_bytes})


def import_command(source: str, *, out: str, corpus_out: str | None, **opts: Any
                   ) -> tuple[dict[str, Any], dict[str, str]]:
    """``ragspan import cuad|legalbench-rag|beir``."""
    from ragspan.envelope import InputRef
    from ragspan.io.files import read_bytes, sha256_hex

    def ref(role: str, path: str) -> InputRef:
        return InputRef(role, path, sha256_hex(read_bytes(path)))

    if source == "cuad":
        from ragspan.importers.cuad import import_cuad_csv, import_cuad_squad

        common = {"sample_docs": opts["sample_docs"], "seed": opts["seed"],
                  "exclude_metadata": opts["exclude_metadata"]}
        if opts.get("squad_json"):
            if opts.get("csv"):
                raise UsageError("give --squad-json or --csv, not both")
            build = import_cuad_squad(opts["squad_json"], **common)
            inputs = [ref("squad_json", opts["squad_json"])]
        else:
            missing = [f"--{k}" for k in ("csv", "contracts", "categories") if not opts.get(k)]
            if missing:
                raise UsageError(f"import cuad needs --squad-json, or {', '.join(missing)}")
            build = import_cuad_csv(opts["csv"], opts["contracts"], opts["categories"],
                                    allow_missing_contracts=opts["allow_missing_contracts"],
                                    **common)
            inputs = [ref("master_clauses", opts["csv"]), ref("categories", opts["categories"])]
        params = {"sample_docs": common["sample_docs"], "seed": common["seed"],
                  "exclude_metadata_clauses": common["exclude_metadata"]}
    elif source == "legalbench-rag":
        from ragspan.importers.legalbench import import_legalbench

        build = import_legalbench(opts["root"], tuple(opts["subsets"]),
                                  paper_sampling=opts["paper_sampling"])
        inputs = [ref("benchmark", f"{opts['root']}/benchmarks/{s}.json")
                  for s in build.header["subsets"]]
        params = {"subsets": list(opts["subsets"]), "paper_sampling": opts["paper_sampling"]}
    else:
        from ragspan.importers.beir import import_beir

        build = import_beir(opts["root"], opts["split"])
        inputs = [ref("queries", f"{opts['root']}/queries.jsonl"),
                  ref("qrels", f"{opts['root']}/qrels/{opts['split']}.tsv")]
        params = {"split": opts["split"]}
    return build_command("import", build, out=out, corpus_out=corpus_out, inputs=inputs,
                         parameters={"source": source, **params})
