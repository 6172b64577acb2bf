"""Budgets in percent of the baseline's mean, spelled as the toolkit-rag-quality CI gate
spells them, so a workflow written for it runs unchanged (docs/gate.md, "Percent-of-baseline
budgets").

The setting ``max-recall-regression-pct`` P (default 2 once either is given) is the recall
budget, ``max-regression-pct`` Q (default P) that of the five other metrics it gates:
precision, nDCG, MRR, MAP and hit rate, all at every k. In a budget, a short name (``recall``,
``precision``, ``ndcg``, ``mrr``, ``map``, ``hit_rate``, or ``NAME_at_K``) names the doc-level
column (``doc_recall``, ``doc_ndcg@10``, ...) and a bare number means percent. Each is a
ragspan budget: ``P%`` is a drop of P percent of the baseline's mean (a relative budget, as
that gate reads it), and the rule is the threshold mode (any drop over its budget fails)
unless a mode is given. The short names and bare percents are read so with or without the
percent settings (a workflow's budget ``ndcg=1`` alone means ``doc_ndcg=1%``, as in that
gate), except that without them ``precision``, ``mrr`` and ``hit_rate`` keep ragspan's
meaning (span metrics) wherever the reports carry those columns; ragspan's own spelling
(``2pt``, ``2%``) stays the documented one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragspan.base.errors import UsageError
from ragspan.base.voice import setting
from ragspan.gate.budgets import Budget
from ragspan.scoring.metrics.registry import METRICS

SHORT_NAMES = {"recall": "doc_recall", "precision": "doc_precision", "ndcg": "doc_ndcg",
               "mrr": "doc_mrr", "map": "doc_map", "hit_rate": "doc_hit_rate"}
_AT_K = re.compile(r"(?P<name>[a-z_]+?)_at_(?P<k>[1-9][0-9]{0,6}|k)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
DEFAULT_RECALL_PCT = 2.0


def active(recall_pct: float | None, other_pct: float | None) -> bool:
    """Whether budgets are spelled this way: either percent flag is given."""
    return recall_pct is not None or other_pct is not None


def default_budgets(recall_pct: float | None, other_pct: float | None) -> dict[str, Budget]:
    """The six gated columns and their relative budgets: recall ``recall_pct`` (else 2),
    the others ``other_pct`` (else the recall budget)."""
    recall = DEFAULT_RECALL_PCT if recall_pct is None else float(recall_pct)
    other = recall if other_pct is None else float(other_pct)
    return {column: Budget("%", recall if short == "recall" else other)
            for short, column in SHORT_NAMES.items()}


def translate(spec: str, spelled: bool) -> str:
    """One budget value in ragspan's spelling, read as toolkit-rag-quality reads it: a
    short name is the doc-level column (``ndcg=1`` is ``doc_ndcg=1%``, ``recall_at_10=off``
    ``doc_recall@10=off``, ``ndcg_at_k=1`` every k of ``doc_ndcg``) and a bare number a
    percent of the baseline's mean (``complete_grounding=2`` is ``complete_grounding=2%``,
    never points). Without ``spelled`` (no percent setting given) a short name that is also
    a ragspan metric (``precision``, ``mrr``, ``hit_rate``: span metrics) keeps ragspan's
    meaning, so a ragspan workflow's budget never changes column (docs/gate.md,
    "Percent-of-baseline budgets")."""
    if "=" not in spec:
        return spec  # parse_budget names the problem
    metric, value = (x.strip() for x in spec.split("=", 1))
    bare = _NUMBER.fullmatch(value) is not None
    base = metric.split("@", 1)[0].removesuffix("_first_stage")
    if bare and base in METRICS and base not in SHORT_NAMES \
            and METRICS[base].family != "doc":  # ragspan's own metric: no toolkit reading
        raise UsageError(f"{setting('budget')} {spec}: a bare number could mean {value}pt "
                         f"(points of the 0-1 metric) or {value}% (of the baseline's mean); "
                         f"write one of {metric}={value}pt or {metric}={value}%")
    if not spelled and metric in METRICS:
        return f"{metric}={value}%" if bare else spec
    column = SHORT_NAMES.get(metric)
    at = _AT_K.fullmatch(metric)
    if column is None and at is not None and at.group("name") in SHORT_NAMES:
        k = at.group("k")
        column = SHORT_NAMES[at.group("name")] + ("" if k == "k" else f"@{k}")
    return f"{column or metric}={value}%" if bare else f"{column or metric}={value}"


def toolkit_spelled(spec: str) -> bool:
    """Whether a budget is spelled as only toolkit-rag-quality spells it: a bare number (its
    percent: ``ndcg=1``, ``precision=2``) or its ``NAME_at_K`` names (``ndcg_at_10=off``).
    A short name with one of ragspan's units (``ndcg=1pt``, ``ndcg=2%``) or ``off`` is
    ragspan's spelling of that one column, and none of ragspan's own (``doc_ndcg=1%``,
    ``precision=2pt``, ``mrr=off``) is the toolkit's."""
    if "=" not in spec:
        return False
    metric, value = (x.strip() for x in spec.split("=", 1))
    if _NUMBER.fullmatch(value) is not None:
        return True
    at = _AT_K.fullmatch(metric.split("@", 1)[0])
    return at is not None and at.group("name") in SHORT_NAMES


TOOLKIT_RULES = ("its six document metrics (recall, precision, nDCG, MRR, MAP, hit rate) at "
                 "2% of the baseline's mean unless a budget says otherwise, any drop over its "
                 "budget failing, alpha (when given) a significance level")


def toolkit_profile(profile: str, percent_given: bool, budgets: Sequence[str],
                    origin: str) -> tuple[bool, str | None]:
    """Whether the toolkit-rag-quality gate's rules are in force (``profile`` ``toolkit``;
    or ``auto`` with a percent option given or a budget only that gate spells), and the
    sentence the verdict says about it (None: ragspan's rules, nothing to say). Under
    ``profile`` ``ragspan`` that gate's spelling is a usage error naming what to write:
    ragspan's rules with the toolkit's spelling would judge by other rules than either.
    ``origin``: where the profile came from, for the sentence."""
    typed = [spec for spec in budgets if toolkit_spelled(spec)]
    if profile == "ragspan":
        if percent_given:
            raise UsageError(f"{setting('profile', 'ragspan')} judges by ragspan's rules: the "
                             f"percent options ({setting('max-recall-regression-pct')}, "
                             f"{setting('max-regression-pct')}) are toolkit-rag-quality's; "
                             f"drop them or use {setting('profile', 'toolkit')}")
        if typed:
            raise UsageError(f"{setting('budget')} {typed[0]} is toolkit-rag-quality's "
                             f"spelling, and {setting('profile', 'ragspan')} judges by "
                             f"ragspan's rules: write it as "
                             f"{translate(typed[0], True)} or use "
                             f"{setting('profile', 'toolkit')}")
        return False, None
    if profile == "toolkit":
        return True, f"judged by toolkit-rag-quality's rules ({origin}): {TOOLKIT_RULES}"
    if percent_given or typed:
        why = f"budget '{typed[0]}'" if typed else "its percent options"
        return True, (f"judged by toolkit-rag-quality's rules, as {why} is that gate's "
                      f"spelling: {TOOLKIT_RULES} ({setting('profile', 'ragspan')} refuses "
                      "the spelling instead)")
    return False, None


def reading(spec: str, translated: str) -> str | None:
    """What a budget typed as a bare number was read as, to be said in the verdict and the
    JSON (None when nothing was read into it)."""
    if "=" not in spec or spec == translated:
        return None
    value = spec.split("=", 1)[1].strip()
    if _NUMBER.fullmatch(value) is None:
        return None
    return (f"budget '{spec}' read as '{translated}': a bare number is a percent of the "
            f"baseline's mean, as toolkit-rag-quality reads it (write {value}pt for points)")


def onto_doc_columns(budgets: dict[str, Budget], names: Sequence[str]) -> dict[str, Budget]:
    """Budgets whose key is a short name that is also a span metric (``precision``,
    ``mrr@10``, ``hit_rate``), kept as ragspan's own by ``translate``, moved onto the
    doc-level column when the reports carry no span metric of that name (a doc-level
    comparison, the toolkit's own case); every other key as it is. Returns ``budgets``
    itself when nothing moves."""
    carried = set(names) | {n.split("@", 1)[0] for n in names}
    moved: dict[str, Budget] = {}
    for key, budget in budgets.items():
        base, at, k = key.partition("@")
        twin = SHORT_NAMES.get(base)
        moved[f"{twin}{at}{k}" if twin and key not in carried and base not in carried
              and f"{twin}{at}{k}" in carried else key] = budget
    return budgets if list(moved) == list(budgets) else moved
