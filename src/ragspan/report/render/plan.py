"""``plan`` reports, from the typed predicate (``records.plan.PlanPredicate``): the queries
needed, then the minimum detectable drop at a few n."""

from __future__ import annotations

from ragspan.records.plan import PlanPredicate
from ragspan.report.render.generic import headed


def _rows(pred: PlanPredicate) -> tuple[list[str], list[list[str]]]:
    s = pred.summary
    fail = "never (the drop is within the budget)" if s.queries_to_fail is None \
        else f"{s.queries_to_fail:,}"
    rows = [[f"a true {s.drop} drop fails (power {s.power:g})", fail],
            [f"a change with no true drop passes (probability {s.power:g})",
             f"{s.queries_to_pass:,}"]]
    rows += [[f"minimum detectable drop at n = {n}", f"{100 * v:.1f}pt"]
             for n, v in sorted(s.minimum_detectable_drop.items(), key=lambda kv: int(kv[0]))]
    header = [f"flip rate {s.flip_rate:g}, budget {s.budget}, alpha {s.alpha:g}", "queries"]
    return header, rows


def table(pred: PlanPredicate) -> str:
    return headed(pred.kind, pred.verdict, "table", *_rows(pred))


def markdown(pred: PlanPredicate) -> str:
    return headed(pred.kind, pred.verdict, "markdown", *_rows(pred))
