"""``ragspan validate``: is this eval set trustworthy against this corpus (and chunking)?"""

from __future__ import annotations

from typing import Any

from ragspan.commands.output import CommandResult

MAX_LISTED = 200


def run(*, eval_set: str, corpus: str, chunks: str | None = None, tau: float = 0.5,
        min_span_integrity: float | None = None) -> CommandResult:
    """The checks of ``ragspan.validate``; any error finding makes the verdict ``error``
    (exit 3), with one stderr line counting the findings by check."""
    from ragspan.envelope import statement
    from ragspan.io.chunks import read_chunks
    from ragspan.io.corpus import read_corpus
    from ragspan.io.evalset import read_eval_set
    from ragspan.report import InputRef
    from ragspan.validate import check_eval_set, chunk_findings, tally
    from ragspan.verdicts import findings_verdict

    evalset = read_eval_set(eval_set)
    corp = read_corpus(corpus)
    findings = check_eval_set(evalset, corp)
    inputs = [InputRef("eval_set", eval_set, evalset.sha256),
              InputRef("corpus", corpus, corp.sha256)]
    summary: dict[str, Any] = {"queries": len(evalset.queries),
                               "gold_spans": sum(len(q.gold_spans) for q in evalset.queries)}
    if chunks:
        manifest = read_chunks(chunks)
        inputs.append(InputRef("chunks", chunks, manifest.sha256))
        found, summary["coverage"] = chunk_findings(manifest, evalset, corp, tau,
                                                    min_span_integrity)
        findings += found
    counts = tally(findings)
    summary.update(counts)
    verdict = findings_verdict(counts["errors"], 0, "error")
    parameters = {"grounding_threshold": tau, "min_span_integrity": min_span_integrity}
    doc = statement(
        kind="validate", subject=[inputs[0]], inputs=inputs,
        parameters={k: v for k, v in parameters.items() if v is not None},
        summary=summary,
        details={"findings": findings[:MAX_LISTED],
                 "findings_listed": min(len(findings), MAX_LISTED)},
        verdict=verdict.verdict, exit_code=verdict.exit_code,
    )
    notice = None
    if verdict.exit_code:
        notice = (f"ragspan: error: validation found {counts['errors']} errors ("
                  + ", ".join(f"{k}: {v}" for k, v in counts["findings_by_check"].items())
                  + ")")
    return CommandResult(doc, notice=notice)
