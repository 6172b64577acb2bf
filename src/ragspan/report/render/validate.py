"""``validate`` reports as a table and as markdown, from the typed report
(``records.validate.ValidatePredicate``): the checks, the span integrity and the chunking
diagnostics as rows of numbers, then the findings."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.base.shown import shown_model
from ragspan.records.validate import ChunkingDiagnostics, ValidatePredicate, ValidateSummary
from ragspan.report.render.generic import clip, headed, listed


def _num(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() \
        else f"{value:.4f}"


def rows(summary: ValidateSummary) -> list[list[str]]:
    """One ``[what, value]`` row per number the report holds."""
    out = [["queries", _num(summary.queries)], ["gold spans", _num(summary.gold_spans)],
           ["errors", _num(summary.errors)], ["warnings", _num(summary.warnings)]]
    out += [[f"findings: {k}", _num(v)] for k, v in summary.findings_by_check.items()]
    cov = summary.coverage
    if cov is not UNSET:
        out += [["span integrity (gold spans whole in one chunk)", _num(cov.span_integrity)],
                ["gold spans whole in one chunk", _num(cov.contained_whole)],
                ["gold spans no retrieval can ground", _num(cov.unreachable_spans)]]
    if summary.chunking is not UNSET:
        out += _chunking(summary.chunking)
    return out


def _chunking(ch: ChunkingDiagnostics) -> list[list[str]]:
    out = [["chunks", _num(ch.chunks)]]
    for name, dist in (("chunk characters", ch.chunk_chars),
                       ("relevant chunks per query", ch.relevant_chunks_per_query)):
        out += [[f"{name}, {k}", _num(getattr(dist, k))] for k in ("mean", "median", "p90", "max")]
    out.append(["queries without a relevant chunk", _num(ch.queries_without_a_relevant_chunk)])
    for k, v in sorted(ch.precision_ceiling.items(), key=lambda kv: int(kv[0])):
        out.append([f"precision@{k} ceiling", _num(v)])
        if ch.precision_attained is not UNSET and ch.precision_share_of_ceiling is not UNSET:
            out.append([f"precision@{k} attained", _num(ch.precision_attained[k])])
            out.append([f"precision@{k} share of ceiling", _num(ch.precision_share_of_ceiling[k])])
    tokens = ch.tokens
    if tokens is UNSET:
        return out
    model = shown_model(tokens.model)
    if tokens.checked:
        out += [[f"{model}: token limit", _num(tokens.token_limit or 0)],
                ["chunks over the token limit (truncated)", _num(tokens.chunks_over_limit or 0)],
                ["longest chunk, tokens", _num(tokens.longest_chunk_tokens or 0)]]
    else:
        out.append([f"{model}: token limit", f"not checked: {tokens.why or ''}"])
    return out


def _findings(pred: ValidatePredicate, fmt: str) -> str:
    found = [[f.severity, f.check, f.query or "-", clip(f.message, 80, keep_end=True)]
             for f in pred.details.findings]
    return listed("Findings", ["severity", "check", "query", "message"], found, 4, fmt)


def table(pred: ValidatePredicate) -> str:
    return (headed(pred.kind, pred.verdict, "table", ["check", "value"], rows(pred.summary))
            + _findings(pred, "table"))


def markdown(pred: ValidatePredicate) -> str:
    return (headed(pred.kind, pred.verdict, "markdown", ["check", "value"], rows(pred.summary),
                   right_from=1) + _findings(pred, "markdown"))
