"""``validate`` reports as a table and as markdown: the checks, the span integrity and the
chunking diagnostics as rows of numbers, then the findings."""

from __future__ import annotations

from typing import Any

from ragspan.base.shown import shown_model
from ragspan.report.render.generic import two_columns


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() \
        else f"{value:.4f}"


def rows(summary: dict[str, Any]) -> list[list[str]]:
    """One ``[what, value]`` row per number the report holds."""
    out = [["queries", _num(summary["queries"])], ["gold spans", _num(summary["gold_spans"])],
           ["errors", _num(summary["errors"])], ["warnings", _num(summary["warnings"])]]
    out += [[f"findings: {k}", _num(v)] for k, v in summary["findings_by_check"].items()]
    cov = summary.get("coverage")
    if cov:
        out += [["span integrity (gold spans whole in one chunk)", _num(cov["span_integrity"])],
                ["gold spans whole in one chunk", _num(cov["contained_whole"])],
                ["gold spans no retrieval can ground", _num(cov["unreachable_spans"])]]
    ch = summary.get("chunking")
    if ch:
        out.append(["chunks", _num(ch["chunks"])])
        out += [[f"chunk characters, {k}", _num(v)] for k, v in ch["chunk_chars"].items()]
        out += [[f"relevant chunks per query, {k}", _num(v)]
                for k, v in ch["relevant_chunks_per_query"].items()]
        out.append(["queries without a relevant chunk",
                    _num(ch["queries_without_a_relevant_chunk"])])
        for k, v in ch["precision_ceiling"].items():
            out.append([f"precision@{k} ceiling", _num(v)])
            if "precision_attained" in ch:
                out.append([f"precision@{k} attained", _num(ch["precision_attained"][k])])
                out.append([f"precision@{k} share of ceiling",
                            _num(ch["precision_share_of_ceiling"][k])])
        tokens = ch.get("tokens")
        if tokens and tokens.get("checked"):
            out += [[f"{shown_model(tokens['model'])}: token limit", _num(tokens["token_limit"])],
                    ["chunks over the token limit (truncated)",
                     _num(tokens["chunks_over_limit"])],
                    ["longest chunk, tokens", _num(tokens["longest_chunk_tokens"])]]
        elif tokens:
            out.append([f"{shown_model(tokens['model'])}: token limit", f"not checked: {tokens['why']}"])
    return out


def table(doc: dict[str, Any]) -> str:
    return two_columns(doc, "table", ["check", "value"], rows(doc["predicate"]["summary"]))


def markdown(doc: dict[str, Any]) -> str:
    return two_columns(doc, "markdown", ["check", "value"], rows(doc["predicate"]["summary"]),
                       right_from=1)
