"""``report`` reports (what ``ragspan report`` wrote) as a table or markdown: one row per
configuration with its complete grounding and interval."""

from __future__ import annotations

from ragspan.records.envelope import Statement
from ragspan.records.readout import ReadoutPredicate
from ragspan.report.render.generic import headed
from ragspan.report.render.text import md_text


def _rows(pred: ReadoutPredicate) -> tuple[list[str], list[list[str]]]:
    cg = f"complete_grounding@{pred.parameters.k}"
    header = ["configuration", cg, "95% CI", "configuration digest"]
    base = pred.summary.baseline
    rows = [[c.name + (" (baseline)" if c.name == base else ""), f"{c.complete_grounding:.4f}",
             f"[{c.ci95[0]:.4f}, {c.ci95[1]:.4f}]", (c.config_digest or "-")[:12]]
            for c in pred.summary.configurations]
    return header, rows


def _said(doc: Statement[ReadoutPredicate], escape: bool = False) -> str:
    pred = doc.predicate
    said = (f"wrote {doc.subject[0].name} ({pred.parameters.audience}, "
            f"{pred.parameters.format})")
    return (md_text(said) if escape else said) + "\n\n"


def table(doc: Statement[ReadoutPredicate]) -> str:
    """The readout's configurations as a table (the file it wrote named first: the report's
    subject, so this renderer reads the whole statement)."""
    pred = doc.predicate
    return _said(doc) + headed(pred.kind, pred.verdict, "table", *_rows(pred))


def markdown(doc: Statement[ReadoutPredicate]) -> str:
    pred = doc.predicate
    return _said(doc, escape=True) + headed(pred.kind, pred.verdict, "markdown", *_rows(pred))
