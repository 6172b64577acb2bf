"""What each metric is, declared once: feeds the name parser (``parse_name``, used wherever a
metric name is read: reports, budgets, renderers), ``ragspan metrics`` and the metric tables
of docs/metrics.md (``markdown_tables``, tested equal).

Metric names follow the grammar ``name@k`` (``complete_grounding@5``, ``ndcg@10``); an
optional suffix ``_first_stage`` names the same metric on a run's first-stage ranking. A
cutoff is a count of results (``@5``) or, for span metrics, a character budget (``@2000c``,
``Chars``): the results in rank order until their lengths add up to the budget, the one that
crosses it cut at the budget (docs/metrics.md, "Character cutoffs").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The failure labels a query's row may carry (``failures``, in precedence order) and the lever
# each points at: declared here, with the metrics, so a reader of reports needs nothing else.
LABELS = ("ceiling-bound", "chunk-severance", "retrieval-miss", "rank-miss",
          "partial-grounding")
FAILURE_LEVERS = {"ceiling-bound": "metric artifact: the chunker dropped text",
                  "chunk-severance": "chunking", "retrieval-miss": "embeddings / hybrid retrieval",
                  "rank-miss": "reranking / k", "partial-grounding": "filtering / k"}


@dataclass(frozen=True)
class MetricSpec:
    name: str
    family: str  # "span" or "doc"
    binary: bool  # per-query values are 0/1
    bounded: bool  # per-query values lie in [0, 1] (points budgets make sense)
    higher_is_better: bool
    definition: str
    trec_eval: str | None = None
    optional: bool = False  # computed only when asked (``score --chroma-metrics``)
    # results appended after the top k can only raise it, never lower it (recall-like):
    # a cheaper candidate no worse at k could only do better at the baseline's budget
    grows: bool = False


METRICS: dict[str, MetricSpec] = {
    m.name: m
    for m in (
        MetricSpec('complete_grounding', 'span', True, True, True,
                   '1 if every gold span has at least τ of its characters inside the union of R_k '
                   '(match any: some gold span), else 0. τ = `--grounding-threshold`, default 0.5, '
                   'inclusive, recorded in the report.', grows=True),
        MetricSpec('span_coverage', 'span', False, True, True,
                   '|∪G ∩ ∪R_k| / |∪G| — gold characters covered, both sides as unions', grows=True),
        MetricSpec('span_recall', 'span', False, True, True,
                   'mean over gold spans g of |g ∩ ∪R_k| / |g|', grows=True),
        MetricSpec('char_precision', 'span', False, True, True,
                   'LegalBench-RAG: Σ_r Σ_g |r ∩ g| / Σ_r |r| over R_k, no merging'),
        MetricSpec('char_recall', 'span', False, False, True,
                   'LegalBench-RAG: Σ_g Σ_r |r ∩ g| / Σ_g |g|, no merging', grows=True),
        MetricSpec('char_precision_merged', 'span', False, True, True,
                   '|∪G ∩ ∪R_k| / |∪R_k|'),
        MetricSpec('retrieved_chars', 'span', False, False, False,
                   'Σ_r |r| over R_k: the retrieval budget (summary also gives mean, median, p90)'),
        MetricSpec('precision', 'span', False, True, True,
                   'relevant chunks in R_k / k (relevant = same doc, any overlap with a gold span)'),
        MetricSpec('hit_rate', 'span', True, True, True,
                   '1 if some chunk in R_k is relevant', grows=True),
        MetricSpec('mrr', 'span', False, True, True,
                   '1 / rank of the first relevant chunk if it is within the top k, else 0', grows=True),
        MetricSpec('chroma_recall', 'span', False, True, True,
                   "Chroma's chunking evaluation (Smith & Troynikov 2024): |∪_r,g (r ∩ g)| / "
                   'Σ_g |g| over R_k (`score --chroma-metrics`)', optional=True, grows=True),
        MetricSpec('chroma_precision', 'span', False, True, True,
                   "Chroma's: |∪_r,g (r ∩ g)| / Σ_r |r| over R_k; results in other documents "
                   'count in the denominator only', optional=True),
        MetricSpec('iou', 'span', False, True, True,
                   "Chroma's IoU: |∪_r,g (r ∩ g)| / (Σ_r |r| + the reference characters no result "
                   'of R_k covers, summed per reference)', optional=True),
        MetricSpec('doc_precision', 'doc', False, True, True,
                   'relevant docs in the top k / k',
                   'P_k'),
        MetricSpec('doc_recall', 'doc', False, True, True,
                   'relevant docs in the top k / relevant docs judged (0 if none)',
                   'recall_k', grows=True),
        MetricSpec('doc_ndcg', 'doc', False, True, True,
                   'DCG with gain = grade (grades > 0, whatever the relevance level), discount '
                   'log2(rank+1), over the ideal DCG of all judged grades > 0, both cut at k',
                   'ndcg_cut_k', grows=True),
        MetricSpec('doc_map', 'doc', False, True, True,
                   'Σ over relevant docs in the top k of precision at their rank, / relevant judged',
                   'map_cut_k', grows=True),
        MetricSpec('doc_mrr', 'doc', False, True, True,
                   "1 / rank of the first relevant doc within the top k (trec_eval's is k = ∞)",
                   'recip_rank', grows=True),
        MetricSpec('doc_hit_rate', 'doc', True, True, True,
                   '1 if a relevant doc is in the top k',
                   'success_k', grows=True),
        MetricSpec('doc_judged', 'doc', False, True, True,
                   'judged docs in the top k / k (a doc the judgments name, whatever its '
                   "grade; ir_measures' Judged@k): how much of a doc metric the judgments "
                   'decide, where unjudged docs count as not relevant. Against qrels only: an '
                   'eval set judges every document (no evidence named, none held)'),
    )
}

SPAN_METRICS = tuple(n for n, m in METRICS.items() if m.family == "span" and not m.optional)
CHROMA_METRICS = tuple(n for n, m in METRICS.items() if m.optional)
DOC_METRICS = tuple(n for n, m in METRICS.items() if m.family == "doc")

_NAME = re.compile(r"^(?P<base>[a-z_]+?)(?P<stage>_first_stage)?@(?P<k>[1-9][0-9]*[ct]?)$")
_CUTOFF = re.compile(r"^[1-9][0-9]*[ct]?$")


class _Budget(int):
    """A budget used as a cutoff, written with its unit (``2000c``, ``512t``). It equals (and
    hashes as) another budget of the same unit and size only, never the count of that size."""

    UNIT = ""

    def __str__(self) -> str:
        return f"{int(self)}{self.UNIT}"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec) if spec else str(self)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and int(self) == int(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.UNIT, int(self)))


class Chars(_Budget):
    """A character budget: ``Chars(2000)`` is written ``2000c``."""

    UNIT = "c"


class Tokens(_Budget):
    """A token budget: ``Tokens(512)`` is written ``512t``; results are measured in the
    tokens of a named tokenizer (``score --tokenizer``)."""

    UNIT = "t"


Cutoff = int  # a count of results, or a budget (``Chars``, ``Tokens``: subclasses)
BUDGETS = (Chars, Tokens)


def is_budget(k: object) -> bool:
    """Whether the cutoff ``k`` is a budget (characters or tokens), not a count."""
    return isinstance(k, BUDGETS)


def parse_cutoff(value: object) -> Cutoff:
    """``5`` or ``"5"`` -> 5; ``"2000c"`` -> ``Chars(2000)``; ``"512t"`` -> ``Tokens(512)``;
    anything else is ValueError."""
    if type(value) is int and value >= 1:
        return value
    if isinstance(value, str) and _CUTOFF.match(value):
        if value.endswith("c"):
            return Chars(int(value[:-1]))
        return Tokens(int(value[:-1])) if value.endswith("t") else int(value)
    raise ValueError(f"a cutoff is a count (5), a character budget (2000c) or a token budget "
                     f"(512t), got {value!r}")


def cutoff_json(k: Cutoff) -> int | str:
    """A cutoff as a report writes it: a count as a number, a budget as ``"2000c"``."""
    return str(k) if is_budget(k) else int(k)


def cutoff_key(k: Cutoff) -> tuple[int, int]:
    """Sort order of cutoffs: counts ascending, then character budgets, then token budgets."""
    return (1 if isinstance(k, Chars) else 2 if isinstance(k, Tokens) else 0), int(k)


def sorted_cutoffs(ks: Iterable[Cutoff]) -> tuple[Cutoff, ...]:
    """Distinct cutoffs in ``cutoff_key`` order."""
    return tuple(sorted(set(ks), key=cutoff_key))


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
    k = parse_cutoff(m.group("k"))
    if isinstance(k, Tokens) and METRICS[m.group("base")].family != "span":
        raise ValueError(f"'{text}': a token budget is a cutoff of span metrics only (doc "
                         "metrics take counts and character budgets)")
    return MetricName(m.group("base"), k, bool(m.group("stage")))


def values_of(spec: MetricSpec) -> str:
    """What one query's value can be, in words."""
    if spec.binary:
        return "0 or 1"
    return "[0, 1]" if spec.bounded else ">= 0"


def listing_rows() -> list[list[str]]:
    """One row per metric: name, family, per-query values, direction, budget unit,
    trec_eval name, definition (the ``ragspan metrics`` table)."""
    return [[f"{m.name}@k", m.family, values_of(m), "higher" if m.higher_is_better else "lower",
             "pt or %" if m.bounded else "%", m.trec_eval or "-", m.definition]
            for m in METRICS.values()]


LISTING_HEADER = ["metric", "family", "per query", "better", "budget", "trec_eval",
                  "definition"]


def markdown_tables() -> tuple[str, str]:
    """The span-family and doc-family tables of docs/metrics.md."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    span = ["| metric | definition |", "| --- | --- |"]
    span += [f"| `{m.name}@k` | {cell(m.definition)} |" for m in METRICS.values()
             if m.family == "span"]
    doc = ["| ragspan | trec_eval | definition |", "| --- | --- | --- |"]
    doc += [f"| `{m.name}@k` | {f'`{m.trec_eval}`' if m.trec_eval else 'none'} | "
            f"{cell(m.definition)} |" for m in METRICS.values() if m.family == "doc"]
    return "\n".join(span) + "\n", "\n".join(doc) + "\n"
