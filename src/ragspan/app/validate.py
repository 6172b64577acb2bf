"""``ragspan validate``: is this eval set trustworthy against this corpus (and chunking)?"""

from __future__ import annotations

from msgspec import UNSET, UnsetType, structs

from ragspan.app.output import CommandResult
from ragspan.base.errors import UsageError
from ragspan.base.records import InputRef
from ragspan.base.verdicts import findings_verdict
from ragspan.base.voice import setting
from ragspan.evalsets.checks import check_eval_set, chunk_findings
from ragspan.evalsets.crossref import crossref_findings
from ragspan.evalsets.sidecar import read_facts
from ragspan.io.chunks import ChunkManifest, read_chunks
from ragspan.io.corpus import Corpus, read_corpus
from ragspan.io.evalset import EvalSet, read_eval_set
from ragspan.io.runs.spans import read_span_run
from ragspan.records.validate import (
    ChunkingDiagnostics,
    Finding,
    SpanIntegrity,
    TokenCheck,
    ValidateDetails,
    ValidateParameters,
    ValidateSummary,
    tally,
)
from ragspan.report.envelope import statement
from ragspan.retrieval.embed import tokens_over_limit
from ragspan.scoring.chunking import chunking_diagnostics
from ragspan.scoring.span_scoring import compute_span_report

MAX_LISTED = 200


def run(*, eval_set: str, corpus: str, chunks: str | None = None, tau: float = 0.5,
        min_span_integrity: float | None = None, run: str | None = None,
        ks: tuple[int, ...] = (), facts: str | None = None) -> CommandResult:
    """The checks of ``ragspan.evalsets.checks``; any error finding makes the verdict ``error``
    (exit 3), with one stderr line counting the findings by check. With ``chunks``, the
    chunking diagnostics at each of ``ks`` (default 5 and 10), and with ``run`` (a span run
    over that chunking) the precision it attained as a share of the chunking's ceiling. The
    cross-reference checks of ``ragspan.evalsets.crossref`` run too, with ``facts`` (a
    planted-facts sidecar) those of its facts."""
    if run and not chunks:
        raise UsageError(f"{setting('run')} needs {setting('chunks')}: the precision ceiling is the "
                         "chunking's")
    ks = tuple(sorted(set(ks))) or (5, 10)

    evalset = read_eval_set(eval_set)
    corp = read_corpus(corpus)
    inputs = [InputRef("eval_set", eval_set, evalset.sha256),
              InputRef("corpus", corpus, corp.sha256)]
    sidecar = None
    if facts:
        sidecar = read_facts(facts, corp)
        inputs.append(InputRef("facts", facts, sidecar.sha256))
    findings = check_eval_set(evalset, corp) + crossref_findings(evalset, corp, sidecar)
    coverage: SpanIntegrity | UnsetType = UNSET
    chunking: ChunkingDiagnostics | UnsetType = UNSET
    if chunks:
        found, coverage, chunking = _chunking(chunks, run, evalset, corp, ks, tau,
                                              min_span_integrity, inputs)
        findings += found
    errors, warnings, by_check = tally(findings)
    summary = ValidateSummary(
        queries=len(evalset.queries),
        gold_spans=sum(len(q.gold_spans) for q in evalset.queries),
        errors=errors, warnings=warnings, findings_by_check=by_check,
        facts=UNSET if sidecar is None else len(sidecar.facts),
        cross_references=UNSET if sidecar is None or not sidecar.references
        else len(sidecar.references),
        coverage=coverage, chunking=chunking)
    verdict = findings_verdict(errors, 0, "error")
    parameters = ValidateParameters(
        grounding_threshold=tau,
        min_span_integrity=UNSET if min_span_integrity is None else min_span_integrity,
        k=list(ks) if chunks else UNSET)
    doc = statement(
        kind="validate", subject=[inputs[0]], inputs=inputs,
        parameters=parameters, summary=summary,
        details=ValidateDetails(findings=findings[:MAX_LISTED],
                                       findings_listed=min(len(findings), MAX_LISTED)),
        verdict=verdict.verdict, exit_code=verdict.exit_code,
    )
    return CommandResult(doc, notice=_notice(findings) if verdict.exit_code else None)


def _notice(findings: list[Finding]) -> str:
    """One line: the errors by check, then the warnings counted apart."""
    errors: dict[str, int] = {}
    for f in findings:
        if f.severity == "error":
            errors[f.check] = errors.get(f.check, 0) + 1
    warnings = len(findings) - sum(errors.values())
    return (f"ragspan: error: validation found {sum(errors.values())} errors ("
            + ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) + ")"
            + (f" and {warnings} warnings" if warnings else ""))


def _chunking(chunks: str, run: str | None, evalset: EvalSet, corp: Corpus,
              ks: tuple[int, ...], tau: float, min_span_integrity: float | None,
              inputs: list[InputRef]
              ) -> tuple[list[Finding], SpanIntegrity, ChunkingDiagnostics]:
    """The chunk manifest's findings (the coverage gate), its span integrity and its
    diagnostics (with ``run``, the precision it attained); the files read are appended to
    ``inputs``."""
    manifest = read_chunks(chunks)
    inputs.append(InputRef("chunks", chunks, manifest.sha256))
    found, coverage = chunk_findings(manifest, evalset, corp, tau, min_span_integrity)
    attained = None
    if run:
        span_run = read_span_run(run)
        inputs.append(InputRef("run", run, span_run.sha256))
        scored = compute_span_report(evalset, span_run, corp, ks, tau, manifest)
        attained = {k: float(scored.scores.values[f"precision@{k}"].mean()) for k in ks}
    diagnostics = chunking_diagnostics(evalset, manifest, ks, attained)
    model = _model_of(manifest)
    if model is not None:
        diagnostics = structs.replace(diagnostics, tokens=_token_check(model, manifest, corp))
    return found, coverage, diagnostics


def _model_of(manifest: ChunkManifest) -> str | None:
    """The embedding model the manifest's pipeline named (its ``[dense] model``), or None."""
    config = (manifest.header or {}).get("config") or {}
    dense = config.get("dense") if isinstance(config, dict) else None
    model = dense.get("model") if isinstance(dense, dict) else None
    return model if isinstance(model, str) and model else None


def _token_check(model: str, manifest: ChunkManifest, corpus: Corpus) -> TokenCheck:
    """Chunks longer than ``model``'s token limit (truncated when embedded): counted with
    the model's own tokenizer; not checked (and said so) without the retrieval extra."""
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is None:
        return TokenCheck(model=model, checked=False,
                          why="the retrieval extra is not installed "
                              "(pip install 'ragspan[retrieval]')")

    texts = [corpus.text(c.doc_id)[c.start:c.end] for c in manifest.chunks]
    limit, over, longest = tokens_over_limit(model, texts)
    return TokenCheck(model=model, checked=True, token_limit=limit, chunks_over_limit=over,
                      longest_chunk_tokens=longest)
