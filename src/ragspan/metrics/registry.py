"""What each metric is, declared once: feeds the name parser (``parse_name``, used wherever a
metric name is read: reports, budgets, renderers) and the score and compare reports.

Metric names follow the grammar ``name@k`` (``complete_grounding@5``, ``ndcg@10``); an
optional suffix ``_first_stage`` names the same metric on a run's first-stage ranking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    name: str
    family: str  # "span" or "doc"
    binary: bool  # per-query values are 0/1
    bounded: bool  # per-query values lie in [0, 1] (points budgets make sense)
    higher_is_better: bool
    definition: str
    trec_eval: str | None = None


METRICS: dict[str, MetricSpec] = {
    m.name: m
    for m in (
        MetricSpec("complete_grounding", "span", True, True, True,
                   "1 if every gold span is covered at least tau by the union of the top k "
                   "(match any: some gold span is), else 0"),
        MetricSpec("span_coverage", "span", False, True, True,
                   "gold characters covered by the union of the top k / all gold characters "
                   "(both as unions)"),
        MetricSpec("span_recall", "span", False, True, True,
                   "mean over gold spans of the fraction of that span covered by the top k"),
        MetricSpec("char_precision", "span", False, False, True,
                   "LegalBench-RAG: sum of pairwise (retrieved, gold) overlaps / retrieved "
                   "characters; can exceed 1 when retrieved spans overlap each other"),
        MetricSpec("char_recall", "span", False, False, True,
                   "LegalBench-RAG: sum of pairwise (retrieved, gold) overlaps / gold characters; "
                   "can exceed 1 when retrieved spans overlap each other"),
        MetricSpec("char_precision_merged", "span", False, True, True,
                   "covered gold characters / characters in the union of the top k"),
        MetricSpec("retrieved_chars", "span", False, False, False,
                   "total characters in the top k (the retrieval budget)"),
        MetricSpec("precision", "span", False, True, True,
                   "relevant chunks in the top k / k (relevant = same doc, any gold overlap)"),
        MetricSpec("hit_rate", "span", True, True, True,
                   "1 if some chunk in the top k is relevant, else 0"),
        MetricSpec("mrr", "span", False, True, True,
                   "1 / rank of the first relevant chunk within the top k, else 0"),
        MetricSpec("doc_precision", "doc", False, True, True,
                   "relevant documents in the top k / k", "P_k"),
        MetricSpec("doc_recall", "doc", False, True, True,
                   "relevant documents in the top k / relevant documents judged", "recall_k"),
        MetricSpec("doc_ndcg", "doc", False, True, True,
                   "nDCG of the top k, linear gain = grade, log2 discount", "ndcg_cut_k"),
        MetricSpec("doc_map", "doc", False, True, True,
                   "average precision truncated at k", "map_cut_k"),
        MetricSpec("doc_mrr", "doc", False, True, True,
                   "1 / rank of the first relevant document within the top k", "recip_rank"),
        MetricSpec("doc_hit_rate", "doc", True, True, True,
                   "1 if a relevant document is in the top k", "success_k"),
    )
}

SPAN_METRICS = tuple(n for n, m in METRICS.items() if m.family == "span")
DOC_METRICS = tuple(n for n, m in METRICS.items() if m.family == "doc")

_NAME = re.compile(r"^(?P<base>[a-z_]+?)(?P<stage>_first_stage)?@(?P<k>[1-9][0-9]*)$")


@dataclass(frozen=True)
class MetricName:
    base: str
    k: int
    first_stage: bool = False

    @property
    def spec(self) -> MetricSpec:
        return METRICS[self.base]

    @property
    def column(self) -> str:
        """The name without its cutoff: ``span_coverage`` or ``span_coverage_first_stage``
        (what a budget or a table row names)."""
        return f"{self.base}{'_first_stage' if self.first_stage else ''}"

    def __str__(self) -> str:
        return format_name(self.base, self.k, self.first_stage)


def format_name(base: str, k: int, first_stage: bool = False) -> str:
    return f"{base}{'_first_stage' if first_stage else ''}@{k}"


def parse_name(text: str) -> MetricName:
    """Parse ``name@k``; raises ValueError naming the allowed metrics."""
    m = _NAME.match(text.strip())
    if not m or m.group("base") not in METRICS:
        allowed = ", ".join(METRICS)
        raise ValueError(f"unknown metric '{text}' (expected NAME@K, NAME one of: {allowed})")
    return MetricName(m.group("base"), int(m.group("k")), bool(m.group("stage")))
