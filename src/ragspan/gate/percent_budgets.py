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
unless a mode is given. Outside this spelling a bare number is ambiguous (points or percent)
and is refused.
"""

from __future__ import annotations

import re

from ragspan.base.errors import UsageError
from ragspan.base.voice import setting
from ragspan.gate.budgets import Budget

SHORT_NAMES = {"recall": "doc_recall", "precision": "doc_precision", "ndcg": "doc_ndcg",
               "mrr": "doc_mrr", "map": "doc_map", "hit_rate": "doc_hit_rate"}
_AT_K = re.compile(r"(?P<name>[a-z_]+?)_at_(?P<k>[1-9][0-9]{0,6})")
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
    """One budget value in ragspan's spelling. With ``spelled`` (a percent setting is
    given), ``ndcg=1`` is ``doc_ndcg=1%`` and ``recall_at_10=off`` ``doc_recall@10=off``;
    without it, a short name or a bare number is a UsageError saying what to write."""
    if "=" not in spec:
        return spec  # parse_budget names the problem
    metric, value = (x.strip() for x in spec.split("=", 1))
    column = SHORT_NAMES.get(metric)
    at = _AT_K.fullmatch(metric)
    if column is None and at is not None and at.group("name") in SHORT_NAMES:
        column = f"{SHORT_NAMES[at.group('name')]}@{at.group('k')}"
    bare = _NUMBER.fullmatch(value) is not None
    if not spelled and (column is not None or bare):
        raise UsageError(
            f"{setting('budget')} {spec!r}: "
            + (f"'{metric}' is a short name; write {column}" if column is not None
               else f"a bare number is points or percent; write {value}pt or {value}%")
            + f" (short names and bare percents are read so with "
            f"{setting('max-recall-regression-pct')} or {setting('max-regression-pct')})")
    return f"{column or metric}={value}%" if bare else f"{column or metric}={value}"
