"""``compare``: is the candidate's retrieval worse than the baseline's, beyond noise and budget?

Order of questions (docs/gate.md):

1. Comparability (else InputError, exit 3): both reports valid score reports of the same
   kind, neither with verdict ``error``; same eval-set (or qrels) digest; same corpus digest
   when both recorded one; same query set; same k values, grounding threshold and relevance
   level.
2. Retrieval budget: the candidate's mean ``retrieved_chars@k`` may differ from the
   baseline's by at most ``budget_tolerance`` at every count k, unless
   ``allow_budget_change``. Where it differs and the reports carry character cutoffs
   (``--k 2000c``, ``--budget-grid``), the gated metrics at that k are decided at the
   character cutoff nearest the baseline's budget instead (like with like,
   ``equal_budget_plan``); a budget increase that gains nothing there is the retrieval
   budget trap, and fails. Character cutoffs are budget-matched by definition.
3. Per metric: per-query deltas, paired test, bootstrap CI, budget. ``decide`` turns the
   outcomes into the verdict; it is the only place a verdict is made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspan.base.errors import ExitCode, InputError, UsageError
from ragspan.base.options import GATE_DEFAULTS, GATE_OPTIONS, check_value
from ragspan.gate.budgets import Budget, budget_for
from ragspan.gate.clusters import count, renumber
from ragspan.io.evalset import normalization_twins
from ragspan.scoring.metrics.failures import LABELS, LEVERS
from ragspan.scoring.metrics.registry import Chars, format_name, parse_cutoff, parse_name
from ragspan.scoring.report_body import QueryRow, ScoreReport

DEFAULT_ALPHA = 0.05  # interval mode's alpha when none is given


@dataclass(frozen=True)
class GateOptions:
    """The gate's settings; defaults and ranges are declared once in ``ragspan.base.options``."""

    budgets: dict[str, Budget] = field(default_factory=dict)
    alpha: float | None = GATE_DEFAULTS["alpha"]
    mode: str = GATE_DEFAULTS["mode"]
    on_inconclusive: str = GATE_DEFAULTS["on_inconclusive"]
    test: str = GATE_DEFAULTS["test"]
    permutations: int = GATE_DEFAULTS["permutations"]
    bootstrap: int = GATE_DEFAULTS["bootstrap"]
    seed: int = GATE_DEFAULTS["seed"]
    correction: str | None = GATE_DEFAULTS["correction"]
    budget_tolerance: float = GATE_DEFAULTS["budget_tolerance"]
    allow_budget_change: bool = GATE_DEFAULTS["allow_budget_change"]
    gate_slices: tuple[str, ...] = GATE_DEFAULTS["gate_slices"]
    min_slice_size: int = GATE_DEFAULTS["min_slice_size"]
    anchor_budget: str | None = GATE_DEFAULTS["anchor_budget"]
    primary_metric: str | None = GATE_DEFAULTS["primary_metric"]
    top: int = GATE_DEFAULTS["top"]
    cluster_by: str = GATE_DEFAULTS["cluster_by"]

    def validate(self) -> None:
        """Every value against its declared option (a usage error names the flag); alpha has
        no role in non-inferiority mode, whose bound is always one-sided 95%."""
        for opt in GATE_OPTIONS:
            if opt.kind == "table":
                continue
            try:
                check_value(opt, getattr(self, opt.attr))
            except ValueError as exc:
                raise UsageError(f"--{opt.key}: {exc}") from None
        if self.mode == "non-inferiority" and self.alpha is not None:
            raise UsageError("--alpha has no effect in non-inferiority mode (its bound is the "
                             "one-sided 95% upper bound of the drop); drop --alpha or use "
                             "--mode interval")
        if self.mode != "interval" and self.correction == "max-t":
            raise UsageError("--correction max-t adjusts the interval mode's bounds; with "
                             f"--mode {self.mode} use holm or none")

    @property
    def level(self) -> float:
        """The family's error rate in interval mode (``alpha``, else 0.05)."""
        return DEFAULT_ALPHA if self.alpha is None else self.alpha

    @property
    def family_correction(self) -> str:
        """The correction in force: as given, else max-t in interval mode, none otherwise."""
        if self.correction is not None:
            return self.correction
        return "max-t" if self.mode == "interval" else "none"


@dataclass(frozen=True)
class MetricOutcome:
    """Everything needed to audit one metric's gate decision."""

    name: str
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float | None
    p_adjusted: float | None
    test: str
    budget: str
    allowed_drop: float
    gated: bool
    over_budget: bool
    significant: bool | None
    upper_drop: float | None
    failed: bool
    worse: int
    better: int
    same: int
    fixed: int | None = None
    broken: int | None = None
    decision: str | None = None  # interval mode, gated: pass | fail | inconclusive
    drop_low: float | None = None  # interval mode: one-sided bounds on the drop
    drop_high: float | None = None
    bound_alpha: float | None = None  # the error rate of each bound (family-adjusted)
    interval: str | None = None  # mid-p-mcnemar | bootstrap-t

    def as_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items()
               if k not in ("ci_low", "ci_high", "drop_low", "drop_high")}
        out["ci95"] = [self.ci_low, self.ci_high]
        if self.drop_low is not None:
            out["drop_bounds"] = [self.drop_low, self.drop_high]
        if math.isinf(self.allowed_drop):
            out["allowed_drop"] = None
        return {k: v for k, v in out.items() if v is not None or k in ("p_value",)}


@dataclass(frozen=True)
class BudgetCheck:
    per_k: dict[str, dict[str, float]]
    changed: bool
    allowed: bool
    tolerance: float
    # count k -> the character cutoff its gated metrics were decided at instead
    decided_at: dict[str, str] = field(default_factory=dict)
    trap: tuple[str, ...] = ()  # the retrieval budget trap, one reason per k
    hint: str = ""  # how to decide at equal budget, when the reports cannot


@dataclass(frozen=True)
class GateDecision:
    verdict: str  # pass | fail | inconclusive
    exit_code: ExitCode
    reasons: tuple[str, ...]
    uncertain: tuple[str, ...] = ()  # why it is inconclusive


def metric_fails(*, gated: bool, over_budget: bool, n: int, alpha: float | None,
                 p: float | None, mode: str, upper_drop: float | None,
                 allowed_drop: float) -> tuple[bool, bool | None]:
    """Truth table of one metric: returns (failed, significant).

    * not gated -> never fails;
    * mode non-inferiority -> fails unless the one-sided 95% upper bound of the drop is
      within the budget (a noisy small set cannot pass a real regression); with fewer than
      2 queries there is no bound, and it fails;
    * threshold mode, alpha unset -> fails when the drop is over budget;
    * threshold mode, alpha set -> fails when over budget and p < alpha; with fewer than 2
      queries there is no p-value and an over-budget drop fails.
    """
    significant = None if p is None or alpha is None else p < alpha
    if not gated:
        return False, significant
    if mode == "non-inferiority":
        if n < 2 or upper_drop is None:
            return True, significant
        return upper_drop > allowed_drop + 1e-12, significant
    if not over_budget:
        return False, significant
    if alpha is None or n < 2 or p is None:
        return True, significant
    return bool(significant), significant


def interval_decision(*, gated: bool, n: int, drop: float, allowed: float, low: float,
                      high: float) -> str | None:
    """Interval mode, one metric (docs/gate.md): ``fail`` when the observed drop is over
    the budget and the lower bound of the drop is above 0 (the drop is real); ``pass`` when
    the upper bound is within the budget (any drop is small enough); otherwise
    ``inconclusive``. With fewer than 2 queries there are no bounds: over budget fails,
    anything else is inconclusive. None when the metric is not gated."""
    if not gated:
        return None
    eps = 1e-12
    if n < 2:
        return "fail" if drop > allowed + eps else "inconclusive"
    if drop > allowed + eps and low > eps:
        return "fail"
    if high <= allowed + eps:
        return "pass"
    return "inconclusive"


# The decision of one gated metric, as docs/gate.md shows it (``truth_table_markdown``); each
# row carries an example that ``interval_decision`` or ``metric_fails`` must decide as the
# row says (tests/test_gate_interval.py).
_I = {"gated": True, "n": 50, "allowed": 0.02}
_T = {"gated": True, "n": 50, "mode": "threshold", "upper_drop": None, "allowed_drop": 0.02}
_N = {"gated": True, "n": 50, "mode": "non-inferiority", "alpha": None, "p": None,
      "allowed_drop": 0.02, "over_budget": False}
TRUTH_TABLE: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    ("interval", "any", "drop over budget, and its lower bound above 0", "**fail**",
     {**_I, "drop": 0.06, "low": 0.01, "high": 0.11}),
    ("interval", "any", "upper bound of the drop within budget", "pass",
     {**_I, "drop": 0.0, "low": -0.015, "high": 0.015}),
    ("interval", "any", "drop over budget, lower bound at or below 0", "inconclusive",
     {**_I, "drop": 0.04, "low": -0.01, "high": 0.09}),
    ("interval", "any", "drop within budget, upper bound over it", "inconclusive",
     {**_I, "drop": 0.0, "low": -0.05, "high": 0.05}),
    ("interval", "any", "fewer than 2 queries, drop over budget", "**fail**",
     {**_I, "n": 1, "drop": 1.0, "low": 1.0, "high": 1.0}),
    ("interval", "any", "fewer than 2 queries, drop within budget", "inconclusive",
     {**_I, "n": 1, "drop": 0.0, "low": 0.0, "high": 0.0}),
    ("threshold", "unset", "drop within budget", "pass",
     {**_T, "over_budget": False, "alpha": None, "p": None}),
    ("threshold", "unset", "drop over budget", "**fail**",
     {**_T, "over_budget": True, "alpha": None, "p": None}),
    ("threshold", "set", "drop over budget, p >= alpha", "pass (noise)",
     {**_T, "over_budget": True, "alpha": 0.05, "p": 0.2}),
    ("threshold", "set", "drop over budget, p < alpha", "**fail**",
     {**_T, "over_budget": True, "alpha": 0.05, "p": 0.01}),
    ("threshold", "set", "drop over budget, fewer than 2 queries (no p)", "**fail**",
     {**_T, "n": 1, "over_budget": True, "alpha": 0.05, "p": None}),
    ("non-inferiority", "(refused)", "one-sided 95% upper bound within budget", "pass",
     {**_N, "upper_drop": 0.01}),
    ("non-inferiority", "(refused)", "one-sided 95% upper bound over budget", "**fail**",
     {**_N, "upper_drop": 0.05}),
    ("non-inferiority", "(refused)", "fewer than 2 queries (no bound)", "**fail**",
     {**_N, "n": 1, "upper_drop": None}),
)


def truth_table_markdown() -> str:
    """docs/gate.md's truth table, from ``TRUTH_TABLE``."""
    rows = ["| mode | alpha | the gated metric's | result |", "| --- | --- | --- | --- |",
            "| any | any | metric not gated (`off`) | never fails |"]
    rows += [f"| {mode} | {alpha} | {cond} | {result} |"
             for mode, alpha, cond, result, _ in TRUTH_TABLE]
    return "\n".join(rows) + "\n"


def decide(outcomes: Sequence[MetricOutcome], budget: BudgetCheck | None,
           slice_failures: Sequence[str] = (), slice_uncertain: Sequence[str] = (),
           on_inconclusive: str = "pass") -> GateDecision:
    """The verdict: fail when the budget changed (not allowed) or any gated metric failed,
    overall or in a gated slice; else inconclusive when any gated metric (or slice) is
    inconclusive, exiting 0 or 4 as ``on_inconclusive`` says; else pass."""
    reasons: list[str] = []
    if budget is not None and budget.changed and not budget.allowed:
        detail = ", ".join(f"@{k}: {v['baseline']:.0f} -> {v['candidate']:.0f} chars "
                           f"(x{v['ratio']:.2f})" for k, v in budget.per_k.items()
                           if v["changed"] and k not in budget.decided_at)
        if detail:
            reasons.append(f"retrieval budget changed ({detail}); a recall change bought "
                           f"with more or fewer characters is not a ranking change "
                           f"({budget.hint or '--allow-budget-change to accept'})")
        reasons.extend(budget.trap)
    reasons.extend(failure_reason(o) for o in outcomes if o.failed)
    reasons.extend(slice_failures)
    uncertain = [uncertain_reason(o) for o in outcomes if o.decision == "inconclusive"]
    uncertain.extend(slice_uncertain)
    if reasons:
        return GateDecision("fail", ExitCode.GATE_FAILED, tuple(reasons), tuple(uncertain))
    if uncertain:
        code = ExitCode.GATE_FAILED if on_inconclusive == "fail" else ExitCode.OK
        return GateDecision("inconclusive", code, (), tuple(uncertain))
    return GateDecision("pass", ExitCode.OK, ())


def _level(o: MetricOutcome) -> str:
    return f"{100 * (1 - (o.bound_alpha or 0)):.3g}%"


def uncertain_reason(o: MetricOutcome, where: str = "") -> str:
    """Why an interval-mode metric is inconclusive: its bounds, its budget."""
    moved = "rose" if o.delta > 0 else "dropped"
    if o.drop_low is None or o.drop_high is None or o.drop_low == o.drop_high:
        return f"{where}{o.name} {moved} {_pts(o)}: fewer than 2 queries give no bounds"
    return (f"{where}{o.name} {moved} {_pts(o)}: the one-sided {_level(o)} bounds of the "
            f"drop, [{_amount(o, o.drop_low)}, {_amount(o, o.drop_high)}], neither show a "
            f"real drop nor stay within the budget {o.budget}")


def failure_reason(o: MetricOutcome, where: str = "") -> str:
    """One reason line: what moved, by how much, and the rule that failed it."""
    moved = "rose" if o.delta > 0 else "dropped"
    if o.decision is not None:  # interval mode: the bounds decide
        if o.drop_low is None or o.drop_low == o.drop_high:
            rule = f"over the budget {o.budget}, and fewer than 2 queries give no bounds"
        else:
            rule = (f"over the budget {o.budget}, and the one-sided {_level(o)} lower bound "
                    f"of the drop, {_amount(o, o.drop_low)}, is above 0 ({o.interval})")
        return f"{where}{o.name} {moved} {_pts(o)}: {rule}"
    if o.upper_drop is not None:  # non-inferiority: the bound decides
        if o.p_value is None:
            rule = "fewer than 2 queries give no upper bound of the drop"
        else:
            rule = (f"the one-sided 95% upper bound of the drop, {_amount(o, o.upper_drop)}, "
                    f"exceeds the budget {o.budget}")
        return f"{where}{o.name} {moved} {_pts(o)}: {rule}"
    p = o.p_adjusted if o.p_adjusted is not None else o.p_value
    test = f", p={p:.3g} ({o.test})" if p is not None else ""
    return f"{where}{o.name} {moved} {_pts(o)} (budget {o.budget}{test})"


def _bounded(name: str) -> bool:
    return parse_name(name).spec.bounded


def _amount(o: MetricOutcome, drop: float) -> str:
    return f"{drop * 100:.2f}pt" if _bounded(o.name) else f"{drop:.4g}"


def _pts(o: MetricOutcome) -> str:
    if _bounded(o.name):
        return f"{abs(o.delta) * 100:.2f}pt ({o.baseline:.4f} -> {o.candidate:.4f})"
    return f"{o.baseline:.4g} -> {o.candidate:.4g}"


# ---- checking and aligning the two reports ------------------------------------------------

COMPARED_PARAMETERS = ("k", "grounding_threshold", "relevance_level", "judged_only")


def check_comparable(base: ScoreReport, cand: ScoreReport) -> None:
    """Same kind, eval set, corpus (when both recorded one), parameters and query set; else
    an InputError naming the candidate."""
    where = cand.path
    if base.kind != cand.kind:
        raise InputError(f"report kinds differ: baseline {base.kind}, candidate {cand.kind}",
                         where)
    if base.eval_sha256 != cand.eval_sha256:
        raise InputError("scored on a different eval set (sha256 "
                         f"{base.eval_sha256[:12]} vs {cand.eval_sha256[:12]})", where)
    b_corp, c_corp = base.corpus_sha256, cand.corpus_sha256
    if b_corp and c_corp and b_corp != c_corp:
        raise InputError("scored on a different corpus (sha256 "
                         f"{b_corp[:12]} vs {c_corp[:12]}): corpus drift would be confounded "
                         "with the change", where)
    for key in COMPARED_PARAMETERS:
        if base.parameters.get(key) != cand.parameters.get(key):
            raise InputError(f"parameter '{key}' differs: baseline "
                             f"{base.parameters.get(key)}, candidate "
                             f"{cand.parameters.get(key)}", where)
    if set(base.ids) != set(cand.ids):
        only_b = sorted(set(base.ids) - set(cand.ids))
        only_c = sorted(set(cand.ids) - set(base.ids))
        twins = normalization_twins(only_b, only_c)
        said = (f"; {len(twins)} of them differ only by Unicode normalisation (e.g. "
                f"{twins[0][0]!r} and {twins[0][1]!r})" if twins else "")
        raise InputError(
            f"query sets differ: {len(only_b)} only in the baseline (e.g. {only_b[:3]}), "
            f"{len(only_c)} only in the candidate (e.g. {only_c[:3]}){said}", where)


@dataclass
class Comparison:
    ids: list[str]
    names: list[str]
    base: np.ndarray  # (n, m)
    cand: np.ndarray
    rows_base: dict[str, QueryRow]
    rows_cand: dict[str, QueryRow]
    kind: str
    ks: list[int]


def align(base: ScoreReport, cand: ScoreReport) -> Comparison:
    """The metrics both reports carry, per query in the baseline's order."""
    names = [n for n in base.names if n in cand.names]
    b_cols = [base.names.index(n) for n in names]
    c_cols = [cand.names.index(n) for n in names]
    c_pos = {q: i for i, q in enumerate(cand.ids)}
    c_rows = np.array([c_pos[q] for q in base.ids], dtype=np.int64)
    return Comparison(
        list(base.ids), names, base.values[:, b_cols],
        cand.values[np.ix_(c_rows, np.asarray(c_cols, dtype=np.int64))],
        dict(zip(base.ids, base.rows)), dict(zip(cand.ids, cand.rows)), base.kind, base.ks)


def check_gated_present(base: ScoreReport, cand: ScoreReport, budgets: dict[str, Budget],
                        defaults: dict[str, Budget]) -> None:
    """A metric gated by any budget must be in both reports: one report's lack of it is an
    InputError naming that report and the metric (never a silently smaller comparison)."""
    for report, other in ((base, cand), (cand, base)):
        for name in other.names:
            if name not in report.names and budget_for(name, budgets, defaults).gated:
                raise InputError(f"gated metric '{name}' is missing from this report "
                                 f"(the other report carries it)", report.path)


def check_budget_columns(base: ScoreReport, cand: ScoreReport) -> None:
    """A span report must carry ``retrieved_chars@k`` at every k: without it the retrieval
    budget cannot be checked, so its absence is an InputError naming the report (never a
    skipped check)."""
    if base.kind != "score.span":
        return
    for report in (base, cand):
        for k in report.ks:
            if f"retrieved_chars@{k}" not in report.names:
                raise InputError(f"retrieved_chars@{k} is missing, so the retrieval budget "
                                 "cannot be checked", report.path)


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


SATURATION_WARN = 0.1  # as ``scoring.span_scoring.SATURATION_WARN``


def saturation_warnings(base: ScoreReport, cand: ScoreReport, ks: Sequence[int]) -> list[str]:
    """Cutoffs at which a report's results cover most of the scoped documents of at least
    ``SATURATION_WARN`` of its queries: recall there is high by construction, not ranking."""
    out = []
    for role, r in (("baseline", base), ("candidate", cand)):
        by_k = (r.saturation or {}).get("by_k", {})
        threshold = (r.saturation or {}).get("threshold", 0.9)
        for k in ks:
            v = by_k.get(str(k))
            if v and v["share"] >= SATURATION_WARN:
                out.append(f"at k = {k} the {role}'s results cover at least "
                           f"{threshold:.0%} of the scoped document for {v['queries']} "
                           f"queries ({v['share']:.0%}): recall there is high by "
                           "construction, not by ranking")
    return out


def version_warnings(base: ScoreReport, cand: ScoreReport) -> list[str]:
    """A report written by another ragspan major or minor version is named in the verdict
    (the report format itself is checked by the schema's ``predicateType``)."""
    from ragspan import __version__

    return [f"the {role} report was written by ragspan {r.tool_version}, this is "
            f"{__version__}: its metrics may be computed differently"
            for role, r in (("baseline", base), ("candidate", cand))
            if r.tool_version and _minor(r.tool_version) != _minor(__version__)]


def unmatched_budgets(budgets: dict[str, Budget], names: Sequence[str]) -> list[str]:
    """Budget keys that match no compared column (``name@k`` exactly, or a base name)."""
    bases = {parse_name(n).column for n in names}
    return [key for key in budgets if key not in names and key not in bases]


@dataclass(frozen=True)
class ClusterPlan:
    """The sampling unit of a comparison (docs/gate.md, "Clustered eval sets"): ``by`` is
    ``none`` (each question), ``doc_id`` or ``tag:KEY``; ``keys`` the cluster of each query
    id (absent: a cluster of its own); ``reason`` why, ``population`` what the verdict is
    about, in words."""

    by: str
    reason: str
    keys: dict[str, str]
    population: str

    def index(self, ids: Sequence[str]) -> np.ndarray | None:
        """Cluster numbers of ``ids`` (None: per-query inference)."""
        from ragspan.gate.clusters import cluster_index

        if self.by == "none":
            return None
        return cluster_index([self.keys.get(q) for q in ids])

    def as_json(self, ids: Sequence[str]) -> dict[str, Any]:
        from ragspan.gate.clusters import count

        index = self.index(ids)
        units = len(ids) if index is None else count(index)
        return {"by": self.by, "reason": self.reason, "queries": len(ids), "clusters": units,
                "population": self.population}


def cluster_plan(base: ScoreReport, cand: ScoreReport, setting: str) -> ClusterPlan:
    """Resolve ``--cluster-by``. ``auto``: per question when no document has two questions,
    or when the eval set asks about every document of its corpus (the verdict is about these
    documents); by ``doc_id`` otherwise (they are a sample of the documents users query, or
    the corpus size is unknown). The candidate's clusters must be the baseline's."""
    from ragspan.gate.clusters import populations

    docs = {q: r.doc_id for q, r in zip(base.ids, base.rows) if r.doc_id is not None}
    asked = len(set(docs.values()))
    if setting.startswith("tag:"):
        key = setting[len("tag:"):]
        keys = {q: r.tags[key] for q, r in zip(base.ids, base.rows) if key in r.tags}
        if not keys:
            raise UsageError(f"--cluster-by {setting}: no query carries the tag '{key}'")
        by, reason = setting, "given"
    elif setting in ("doc_id", "none"):
        keys = docs if setting == "doc_id" else {}
        by, reason = setting, "given"
    else:
        keys = docs
        shared = len(docs) > asked
        corpus = (base.documents or {}).get("corpus")
        if not shared:
            by, reason = "none", "no document has two questions"
        elif corpus is not None and asked >= corpus:
            by, reason = "none", (f"the eval set asks about all {corpus} documents of its corpus"
                                  if corpus != 1 else "the eval set asks about the one "
                                  "document of its corpus")
        elif corpus is None:
            by, reason = "doc_id", ("the corpus size is not recorded (scored without --corpus): "
                                    "its documents are taken as a sample")
        else:
            by, reason = "doc_id", (f"the eval set asks about {asked} of the corpus's "
                                    f"{corpus} documents: a sample")
    if by != "none":
        cand_keys = ({q: r.doc_id for q, r in zip(cand.ids, cand.rows) if r.doc_id is not None}
                     if by == "doc_id" else
                     {q: r.tags[by[4:]] for q, r in zip(cand.ids, cand.rows) if by[4:] in r.tags})
        differ = sorted(q for q in keys if cand_keys.get(q) != keys[q])
        if differ or set(cand_keys) - set(keys):
            first = (differ or sorted(set(cand_keys) - set(keys)))[0]
            raise InputError(f"the reports' clusters ({by}) differ, e.g. query '{first}': "
                             f"{keys.get(first)!r} against {cand_keys.get(first)!r}", cand.path)
    units = len(set(keys.values())) + sum(1 for q in base.ids if q not in keys)
    return ClusterPlan(by, reason, keys if by != "none" else {},
                       populations(by, units, asked))


def default_budgets(kind: str) -> dict[str, Budget]:
    """Only complete grounding is gated by default (2pt); doc reports gate nDCG instead."""
    return {"complete_grounding" if kind == "score.span" else "doc_ndcg": Budget("pt", 2.0)}


def budget_check(cmp: Comparison, opts: GateOptions) -> BudgetCheck | None:
    per_k: dict[str, dict[str, float]] = {}
    changed = False
    for k in cmp.ks:
        if isinstance(k, Chars):
            continue  # a character cutoff is at equal budget by definition
        name = f"retrieved_chars@{k}"
        if name not in cmp.names:
            return None
        j = cmp.names.index(name)
        b, c = float(cmp.base[:, j].mean()), float(cmp.cand[:, j].mean())
        ratio = c / b if b > 0 else (1.0 if c == 0 else math.inf)
        moved = abs(ratio - 1.0) > opts.budget_tolerance + 1e-12
        changed |= moved
        per_k[str(k)] = {"baseline": b, "candidate": c,
                         "ratio": ratio if math.isfinite(ratio) else 1e308, "changed": moved}
    chars = [k for k in cmp.ks if isinstance(k, Chars)]
    hint = "" if chars else (
        "score both with character cutoffs (--budget-grid, or --k "
        + " --k ".join(f"{round(v['baseline'])}c" for v in per_k.values() if v["changed"])
        + ") to decide at equal budget, or --allow-budget-change to accept")
    return BudgetCheck(per_k, changed, opts.allow_budget_change, opts.budget_tolerance,
                       hint=hint)


def budgets_at_cutoffs(cmp: Comparison, given: dict[str, Budget]) -> dict[str, Budget]:
    """A column's budget (``complete_grounding=2pt``, or the default) gates its count cutoffs;
    a character cutoff is gated when named (``complete_grounding@2000c=2pt``), when the
    reports have no count cutoff, or where ``equal_budget_plan`` decides a changed k."""
    if all(isinstance(k, Chars) for k in cmp.ks):
        return given
    off = {n: Budget("off") for n in cmp.names
           if isinstance(parse_name(n).k, Chars) and n not in given}
    return {**given, **off} if off else given


def equal_budget_plan(cmp: Comparison, check: BudgetCheck | None, given: dict[str, Budget],
                      defaults: dict[str, Budget]) -> tuple[dict[str, Budget], dict[str, str]]:
    """Like with like: for each count k whose budget changed (and no change is allowed), the
    character cutoff of the reports nearest the baseline's mean ``retrieved_chars@k`` (the
    smaller on a tie); the gated metrics at k are turned off there and the same metrics at
    that cutoff gated with their budgets. Returns the budgets to gate with and k -> cutoff."""
    chars = [k for k in cmp.ks if isinstance(k, Chars)]
    if check is None or not check.changed or check.allowed or not chars:
        return given, {}
    budgets = dict(given)
    decided: dict[str, str] = {}
    for k_text, v in check.per_k.items():
        if not v["changed"]:
            continue
        k = parse_cutoff(k_text)
        at = min(chars, key=lambda c: (abs(int(c) - v["baseline"]), int(c)))
        decided[k_text] = str(at)
        for name in cmp.names:
            parsed = parse_name(name)
            budget = budget_for(name, given, defaults)
            if parsed.k != k or not budget.gated:
                continue
            budgets[name] = Budget("off")
            target = format_name(parsed.base, at, parsed.first_stage)
            if target in cmp.names and not budget_for(target, given, defaults).gated:
                budgets[target] = budget
    return budgets, decided


def budget_trap(cmp: Comparison, check: BudgetCheck, outcomes: Sequence[MetricOutcome]
                ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Per k decided at a character cutoff: a note saying both (the budget ratio at k and the
    gated metrics at the cutoff) and, where the candidate retrieves more characters at k but
    none of those metrics is better at the cutoff, the retrieval budget trap (a failure)."""
    notes: list[str] = []
    traps: list[str] = []
    for k_text, at in check.decided_at.items():
        v = check.per_k[k_text]
        at_outcomes = [o for o in outcomes if o.gated and parse_name(o.name).k == parse_cutoff(at)]
        shown = "; ".join(f"{o.name} {o.baseline:.4f} -> {o.candidate:.4f}" for o in at_outcomes)
        notes.append(f"at k = {k_text} the candidate retrieves x{v['ratio']:.2f} the characters "
                     f"({v['baseline']:,.0f} -> {v['candidate']:,.0f} per query); its gated "
                     f"metrics at k = {k_text} are decided at {int(parse_cutoff(at)):,} "
                     f"characters per query instead (the cutoff nearest the baseline's "
                     f"budget): {shown or 'none gated'}")
        better = [o for o in at_outcomes
                  if (o.delta > 1e-12) == parse_name(o.name).spec.higher_is_better
                  and abs(o.delta) > 1e-12]
        if v["ratio"] > 1 + check.tolerance + 1e-12 and at_outcomes and not better:
            traps.append(f"retrieval budget trap: at k = {k_text} the candidate retrieves "
                         f"x{v['ratio']:.2f} the characters, and at {int(parse_cutoff(at)):,} "
                         f"characters per query it is no better ({shown}): the gain at "
                         f"k = {k_text} is bought with characters, not ranking "
                         "(--allow-budget-change to accept)")
    return tuple(notes), tuple(traps)


def evaluate(base: np.ndarray, cand: np.ndarray, names: list[str], opts: GateOptions,
             defaults: dict[str, Budget], level: float | None = None,
             clusters: np.ndarray | None = None) -> list[MetricOutcome]:
    """Outcomes of every metric on aligned per-query matrices (n queries x m metrics). In
    interval mode each gated metric gets one-sided bounds on its drop at ``level`` (the
    family-adjusted error rate; default ``opts.level``) and its decision. ``clusters`` (a
    cluster number per query, ``ragspan.gate.clusters``): the tests flip, the bootstrap resamples
    and the bounds are computed over whole clusters (the cluster-robust t bounds, for binary
    metrics too)."""
    from ragspan.gate import clusters as cl
    from ragspan.gate import stats
    from ragspan.gate.bounds import drop_bounds

    n, m = base.shape
    deltas = cand - base
    units = deltas if clusters is None else cl.cluster_sums(deltas, clusters)
    if opts.test == "t-test":
        test = stats.paired_t_test(units)
    else:
        test = stats.sign_flip_test(units, opts.permutations, opts.seed)
    if clusters is None:
        ci = stats.bootstrap_ci(deltas, opts.bootstrap, opts.seed)
        ci_low, ci_high = ci.low, ci.high
        upper_down = stats.one_sided_upper_drop(deltas) if n else np.zeros(m)
        upper_up = stats.one_sided_upper_drop(-deltas) if n else np.zeros(m)
    else:
        ci = stats.bootstrap_ci(deltas, opts.bootstrap, opts.seed, clusters=clusters)
        ci_low, ci_high = ci.low, ci.high
        upper_down = cl.t_bounds(-deltas, clusters, 0.05)[1] if n else np.zeros(m)
        upper_up = cl.t_bounds(deltas, clusters, 0.05)[1] if n else np.zeros(m)
    budgets = [budget_for(name, opts.budgets, defaults) for name in names]
    p_values: list[float | None] = []
    binary: list[tuple[int, int] | None] = []
    for j, name in enumerate(names):
        if parse_name(name).spec.binary:
            fixed, broken, p = stats.discordant_pairs(base[:, j], cand[:, j])
            binary.append((fixed, broken))
            if clusters is not None:
                p = float(test.p_values[j])
            p_values.append(p if n >= 2 else None)
        else:
            binary.append(None)
            p_values.append(float(test.p_values[j]) if n >= 2 else None)
    gated_idx = [j for j in range(m) if budgets[j].gated and p_values[j] is not None]
    bounds: dict[int, tuple[float, float, str]] = {}
    level = opts.level if level is None else level
    gated_cols = [j for j in range(m) if budgets[j].gated]
    if opts.mode == "interval" and gated_cols and clusters is not None:
        signs = np.array([1.0 if parse_name(names[j]).spec.higher_is_better else -1.0
                          for j in gated_cols])
        lo, hi = cl.t_bounds((base[:, gated_cols] - cand[:, gated_cols]) * signs, clusters,
                             level)
        bounds = {j: (float(lo[i]), float(hi[i]), "cluster-t") for i, j in enumerate(gated_cols)}
    elif opts.mode == "interval" and gated_cols:
        specs = [parse_name(names[j]).spec for j in gated_cols]
        got = drop_bounds(base[:, gated_cols], cand[:, gated_cols],
                          [sp.binary for sp in specs], [sp.higher_is_better for sp in specs],
                          level, opts.bootstrap, opts.seed)
        bounds = {j: (float(got.low[i]), float(got.high[i]), got.method[i])
                  for i, j in enumerate(gated_cols)}
    adjusted: dict[int, float] = {}
    if opts.mode != "interval" and opts.family_correction == "holm" and gated_idx:
        adj = stats.holm(np.array([p_values[j] for j in gated_idx]))
        adjusted = {j: float(a) for j, a in zip(gated_idx, adj)}
    out = []
    for j, name in enumerate(names):
        higher = parse_name(name).spec.higher_is_better
        b_mean = float(base[:, j].mean()) if n else 0.0
        c_mean = float(cand[:, j].mean()) if n else 0.0
        delta = c_mean - b_mean
        drop = -delta if higher else delta
        allowed = budgets[j].allowed_drop(b_mean)
        over = budgets[j].gated and drop > allowed + 1e-12
        p_j = p_values[j]
        p_used = adjusted.get(j, p_j)
        up = float(upper_down[j] if higher else upper_up[j])
        decision = None
        if opts.mode == "interval":
            low, high, method = bounds.get(j, (drop, drop, None))
            decision = interval_decision(gated=budgets[j].gated, n=n, drop=drop,
                                         allowed=allowed, low=low, high=high)
            failed, significant = decision == "fail", None
        else:
            failed, significant = metric_fails(
                gated=budgets[j].gated, over_budget=over, n=n, alpha=opts.alpha, p=p_used,
                mode=opts.mode, upper_drop=up, allowed_drop=allowed)
        d = deltas[:, j] if higher else -deltas[:, j]
        fixed_broken = binary[j]
        test_name = ("exact-mcnemar" if fixed_broken is not None and clusters is None
                     else test.method if clusters is None else f"cluster-{test.method}")
        out.append(MetricOutcome(
            name=name, baseline=b_mean, candidate=c_mean, delta=delta,
            ci_low=float(ci_low[j]), ci_high=float(ci_high[j]),
            p_value=p_j, p_adjusted=adjusted.get(j), test=test_name, budget=str(budgets[j]),
            allowed_drop=allowed, gated=budgets[j].gated, over_budget=bool(over),
            significant=significant, upper_drop=up if opts.mode == "non-inferiority" else None,
            failed=failed, worse=int((d < -1e-12).sum()), better=int((d > 1e-12).sum()),
            same=int((np.abs(d) <= 1e-12).sum()),
            fixed=fixed_broken[0] if fixed_broken else None,
            broken=fixed_broken[1] if fixed_broken else None,
            decision=decision,
            drop_low=bounds[j][0] if j in bounds else None,
            drop_high=bounds[j][1] if j in bounds else None,
            bound_alpha=level if j in bounds else None,
            interval=bounds[j][2] if j in bounds else None,
        ))
    return out


def slice_groups(cmp: Comparison, opts: GateOptions) -> dict[str, dict[str, list[int]]]:
    """Per ``gate_slices`` key, the query rows of each of its values (sorted by value)."""
    out: dict[str, dict[str, list[int]]] = {}
    for key in opts.gate_slices:
        groups: dict[str, list[int]] = {}
        for i, qid in enumerate(cmp.ids):
            value = cmp.rows_base[qid].tags.get(key)
            if value is not None:
                groups.setdefault(value, []).append(i)
        if not groups:
            raise UsageError(f"--gate-slices {key!r}: no query carries that tag")
        out[key] = dict(sorted(groups.items()))
    return out


def slice_outcomes(cmp: Comparison, opts: GateOptions, defaults: dict[str, Budget],
                   level: float | None = None,
                   groups: dict[str, dict[str, list[int]]] | None = None,
                   clusters: np.ndarray | None = None
                   ) -> tuple[dict[str, Any], list[str], list[str]]:
    """Gated metrics per value of each ``gate_slices`` tag; small slices reported only.
    Returns the report, the failure reasons and the inconclusive reasons."""
    report: dict[str, Any] = {}
    failures: list[str] = []
    uncertain: list[str] = []
    gated_cols = [j for j, n in enumerate(cmp.names)
                  if budget_for(n, opts.budgets, defaults).gated]
    names = [cmp.names[j] for j in gated_cols]
    for key, by_value in (slice_groups(cmp, opts) if groups is None else groups).items():
        per_value = {}
        for value, idx in by_value.items():
            rows = np.asarray(idx)
            gated = len(idx) >= opts.min_slice_size
            sub = None if clusters is None else renumber(clusters[rows])
            cols = np.asarray(gated_cols, dtype=np.int64)
            outs = evaluate(cmp.base[np.ix_(rows, cols)], cmp.cand[np.ix_(rows, cols)],
                            names, opts, defaults, level, sub)
            if not gated:
                outs = [MetricOutcome(**{**o.__dict__, "gated": False, "failed": False,
                                         "decision": None}) for o in outs]
            per_value[value] = {"count": len(idx), "gated": gated,
                                "metrics": {o.name: o.as_json() for o in outs}}
            where = f"slice {key}={value} ({len(idx)} queries): "
            failures.extend(failure_reason(o, where) for o in outs if o.failed)
            uncertain.extend(uncertain_reason(o, where) for o in outs
                             if o.decision == "inconclusive")
        report[key] = per_value
    return report, failures, uncertain


def family(cmp: Comparison, opts: GateOptions, defaults: dict[str, Budget],
           groups: dict[str, dict[str, list[int]]] | None = None,
           clusters: np.ndarray | None = None) -> tuple[float, int]:
    """Interval mode: the error rate of each bound, so that the family of every gated
    metric (each k) overall and in every gated slice keeps ``opts.level``
    (``stats.family_alpha``); and the family's size."""
    from ragspan.gate import stats

    cols = [j for j, n in enumerate(cmp.names) if budget_for(n, opts.budgets, defaults).gated]
    signs = np.array([1.0 if parse_name(cmp.names[j]).spec.higher_is_better else -1.0
                      for j in cols])
    drops = (cmp.base[:, cols] - cmp.cand[:, cols]) * signs
    everyone = np.arange(len(cmp.ids))
    members: list[tuple[np.ndarray, np.ndarray]] = [(everyone, drops[:, i])
                                                    for i in range(len(cols))]
    for by_value in (slice_groups(cmp, opts) if groups is None else groups).values():
        for idx in by_value.values():
            if len(idx) >= opts.min_slice_size:
                rows = np.asarray(idx)
                members += [(rows, drops[rows, i]) for i in range(len(cols))]
    level = stats.family_alpha([d for _, d in members], [r for r, _ in members],
                               len(cmp.ids), opts.level, opts.family_correction,
                               opts.permutations, opts.seed, clusters)
    return level, len(members)


def power_statement(cmp: Comparison, outcomes: Sequence[MetricOutcome], level: float,
                    noise: Comparison | None = None,
                    clusters: np.ndarray | None = None) -> dict[str, Any]:
    """Per gated metric: the minimum drop a one-sided level-``level`` test detects with
    power 0.8 at this n and the spread of per-query changes (for a binary metric the share
    of queries that changed), and whether the budget is below it. The spread is the
    baseline's against ``noise`` (a second scoring of the baseline) when given, else the
    candidate's against the baseline. ``clusters``: the spread is the clusters' (the
    cluster-robust standard error, t quantiles with C - 1 degrees of freedom)."""
    from ragspan.gate import clusters as cl
    from ragspan.gate import stats

    out: dict[str, Any] = {}
    n = len(cmp.ids)
    for o in outcomes:
        if not o.gated:
            continue
        if noise is not None and o.name in noise.names:
            j = noise.names.index(o.name)
            d = noise.cand[:, j] - noise.base[:, j]
        else:
            j = cmp.names.index(o.name)
            d = cmp.cand[:, j] - cmp.base[:, j]
        sd = float(d.std(ddof=1)) if n >= 2 else 0.0
        effect = 1.0
        if clusters is not None and n >= 2:  # the spread of the mean is the clusters'
            units = cl.count(clusters)
            effect = float(cl.design_effect(d[:, None], clusters)[0])
            sd = float(cl.robust_se(d[:, None], clusters)[0]) * math.sqrt(n) if units >= 2 \
                else math.inf
        mdd = stats.minimum_detectable_drop(sd, n, level) if math.isfinite(sd) else math.inf
        if clusters is not None and math.isfinite(mdd) and cl.count(clusters) >= 2:
            from scipy.special import stdtrit  # few clusters: t quantiles, as the bounds use

            df = cl.count(clusters) - 1
            mdd = float((stdtrit(df, 1 - level) + stdtrit(df, stats.POWER)) * sd / math.sqrt(n))
        row: dict[str, Any] = {
            "queries": n, "changed_share": float((np.abs(d) > 1e-12).mean()) if n else 0.0,
            "sd": sd if math.isfinite(sd) else None, "alpha": level, "power": stats.POWER,
            "minimum_detectable_drop": mdd if math.isfinite(mdd) else None,
            "budget_below_it": bool(not math.isfinite(mdd) or o.allowed_drop < mdd - 1e-12),
            "spread_from": "noise" if noise is not None and o.name in noise.names
            else "candidate",
        }
        if clusters is not None:
            row.update({"clusters": cl.count(clusters),
                        "design_effect": effect,
                        "effective_queries": n / effect if effect > 0 else float(n)})
        out[o.name] = row
    return out


def power_warnings(power: dict[str, Any], outcomes: Sequence[MetricOutcome]) -> list[str]:
    """One line per gated metric whose budget is below what this n can detect."""
    by = {o.name: o for o in outcomes}
    lines = []
    for name, p in power.items():
        if not p["budget_below_it"]:
            continue
        o = by[name]
        if p["minimum_detectable_drop"] is None:
            lines.append(f"{name}: with {p['queries']} queries"
                         + (f" in {p['clusters']} cluster(s)" if "clusters" in p else "")
                         + " no drop can be told from noise")
            continue
        what = "changing between two scorings of the baseline" if p["spread_from"] == "noise" \
            else "changing"
        where = (f"{p['queries']} queries in {p['clusters']} clusters (design effect "
                 f"{p['design_effect']:.2f})" if "clusters" in p else f"{p['queries']} queries")
        lines.append(
            f"{name}: with {where} and {100 * p['changed_share']:.0f}% of them "
            f"{what}, a drop smaller than {_amount(o, p['minimum_detectable_drop'])} cannot "
            f"be told from noise (alpha {p['alpha']:.3g}, power {p['power']:g}); the budget "
            f"is {o.budget}")
    return lines


def most_regressed(cmp: Comparison, primary: str, top: int) -> list[dict[str, Any]]:
    """The ``top`` queries with the largest drop of the primary metric (ties by id)."""
    if primary not in cmp.names:
        raise UsageError(f"primary metric '{primary}' is not in both reports")
    j = cmp.names.index(primary)
    parsed = parse_name(primary)
    higher = parsed.spec.higher_is_better
    delta = cmp.cand[:, j] - cmp.base[:, j]
    if not higher:
        delta = -delta
    order = sorted((d, qid, i) for i, (qid, d) in enumerate(zip(cmp.ids, delta)) if d < -1e-12)
    k = str(parsed.k)
    out = []
    for _, qid, i in order[:top]:
        row = {"id": qid, "query": cmp.rows_base[qid].query,
               "baseline": float(cmp.base[i, j]), "candidate": float(cmp.cand[i, j]),
               "delta": float(cmp.cand[i, j] - cmp.base[i, j])}
        if parsed.column == "complete_grounding":
            row["lost_spans"] = cmp.rows_cand[qid].lost(k)
            label = cmp.rows_cand[qid].failure.get(k)
            if label is not None:
                row["label"] = label
        out.append(row)
    return out


# ---- why: the failure labels of the queries that changed -----------------------------------

UNLABELLED = "unlabelled"  # a report made before the labels, or a query without its row


def _label_counts(labels: list[str]) -> dict[str, int]:
    order = {label: i for i, label in enumerate(LABELS)}
    found: dict[str, int] = {}
    for label in labels:
        found[label] = found.get(label, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)))))


def _said(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {label}" + (f" ({LEVERS[label]})" if label in LEVERS else "")
                     for label, n in counts.items())


def grounding_changes(cmp: Comparison) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per k of complete grounding: how many queries the candidate broke (grounded in the
    baseline, not in the candidate) counted by their candidate label, and fixed counted by
    their baseline label (summary); and each such query with both labels (details)."""
    counts: dict[str, Any] = {}
    queries: dict[str, Any] = {}
    for k in cmp.ks:
        name = f"complete_grounding@{k}"
        if name not in cmp.names:
            continue
        j = cmp.names.index(name)
        b, c = cmp.base[:, j] >= 1.0, cmp.cand[:, j] >= 1.0
        rows = []
        for i in np.flatnonzero(b != c).tolist():
            qid = cmp.ids[i]
            rows.append({"id": qid, "change": "fixed" if c[i] else "broken",
                         "baseline_label": cmp.rows_base[qid].failure.get(str(k), None),
                         "candidate_label": cmp.rows_cand[qid].failure.get(str(k), None)})
        broken = [r["candidate_label"] or UNLABELLED for r in rows if r["change"] == "broken"]
        fixed = [r["baseline_label"] or UNLABELLED for r in rows if r["change"] == "fixed"]
        counts[str(k)] = {"broken": len(broken), "broken_by_label": _label_counts(broken),
                          "fixed": len(fixed), "fixed_by_label": _label_counts(fixed)}
        queries[str(k)] = rows
    return counts, queries


def why_line(changes: dict[str, Any], k: int) -> str | None:
    """The sentence a PR comment most needs: what broke at ``k`` and which lever each
    broken query points at (and what was fixed, by the label it had)."""
    at = changes.get(str(k))
    if not at or not (at["broken"] or at["fixed"]):
        return None
    parts = []
    if at["broken"]:
        parts.append(f"{at['broken']} {'query' if at['broken'] == 1 else 'queries'} lost "
                     f"complete grounding@{k}: " + _said(at["broken_by_label"]))
    if at["fixed"]:
        parts.append(f"{at['fixed']} gained it, having been " + _said(at["fixed_by_label"]))
    return "; ".join(parts)


# ---- the whole gate ------------------------------------------------------------------------


@dataclass(frozen=True)
class GateResult:
    """Everything ``compare`` decided and the numbers it decided from."""

    decision: GateDecision
    outcomes: tuple[MetricOutcome, ...]
    budget: BudgetCheck | None
    slices: dict[str, Any]
    gated: tuple[str, ...]
    primary: str
    most_regressed: tuple[dict[str, Any], ...]
    queries: int
    ks: tuple[int, ...]
    budgets: dict[str, Budget]  # every budget that applied: the defaults, then the given
    no_gate: bool
    changes: dict[str, Any]  # grounding_changes: counts per k
    changed_queries: dict[str, Any]  # grounding_changes: the queries per k
    why: str | None
    interval: dict[str, Any] | None = None  # interval mode: alpha, bound alpha, family
    power: dict[str, Any] | None = None  # interval mode: power_statement
    warnings: tuple[str, ...] = ()
    anchor: dict[str, Any] | None = None  # the drift guard's comparison, when asked
    noise: dict[str, Any] | None = None  # noise_check's unstable queries, when asked
    clusters: dict[str, Any] | None = None  # the sampling unit (ClusterPlan.as_json)

    def summary(self) -> dict[str, Any]:
        """The compare report's summary."""
        out: dict[str, Any] = {
            "verdict": self.decision.verdict,
            "reasons": list(self.decision.reasons),
            "queries": self.queries,
            "primary_metric": self.primary,
            "gated_metrics": list(self.gated),
            "metrics": {o.name: o.as_json() for o in self.outcomes},
        }
        if self.decision.uncertain:
            out["inconclusive"] = list(self.decision.uncertain)
        if self.interval is not None:
            out["interval"] = self.interval
        if self.power is not None:
            out["power"] = self.power
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.anchor is not None:
            out["anchor"] = self.anchor
        if self.noise is not None:
            out["noise"] = self.noise
        if self.clusters is not None:
            out["clusters"] = self.clusters
        if self.no_gate:
            out["no_gate"] = True
        if self.changes:
            out["grounding_changes"] = self.changes
        if self.why:
            out["why"] = self.why
        if self.budget is not None:
            out["retrieval_budget"] = {"tolerance": self.budget.tolerance,
                                       "changed": self.budget.changed,
                                       "allowed": self.budget.allowed,
                                       "per_k": self.budget.per_k}
            if self.budget.decided_at:
                out["retrieval_budget"]["decided_at"] = self.budget.decided_at
                out["retrieval_budget"]["trap"] = list(self.budget.trap)
        return out

    def details(self) -> dict[str, Any]:
        out = {"most_regressed": list(self.most_regressed), "slices": self.slices}
        if self.changed_queries:
            out["grounding_changes"] = self.changed_queries
        return out


def noise_check(base: ScoreReport, noise: ScoreReport, gated: Sequence[str]
                ) -> tuple[Comparison, dict[str, Any]]:
    """The noise floor: ``noise`` is a second scoring of the baseline's configuration (a
    re-run, a re-index with another seed). Per gated metric, the queries whose value differs
    between the two are unstable; their share feeds the power statement."""
    check_comparable(base, noise)
    cmp = align(base, noise)
    part: dict[str, Any] = {"report": noise.path, "unstable": {}}
    for name in gated:
        if name not in cmp.names:
            continue
        j = cmp.names.index(name)
        moved = np.flatnonzero(np.abs(cmp.cand[:, j] - cmp.base[:, j]) > 1e-12)
        part["unstable"][name] = {"count": int(moved.size),
                                  "share": float(moved.size / max(len(cmp.ids), 1)),
                                  "ids": [cmp.ids[i] for i in moved[:MAX_UNSTABLE_LISTED]]}
    return cmp, part


MAX_UNSTABLE_LISTED = 100


def anchor_check(anchor: ScoreReport, cand: ScoreReport, opts: GateOptions,
                 gated: Sequence[str], defaults: dict[str, Budget],
                 plan: ClusterPlan | None = None
                 ) -> tuple[dict[str, Any], list[str], list[str]]:
    """The drift guard: every metric gated against the baseline, gated against the pinned
    ``anchor`` with the cumulative ``opts.anchor_budget`` by the same interval rule (overall
    only, its own family). Returns the report part, failure and inconclusive reasons."""
    from ragspan.gate.budgets import parse_budget_value

    if opts.anchor_budget is None:
        raise UsageError("--anchor needs --anchor-budget (the cumulative budget, e.g. 5pt)")
    budget = parse_budget_value(opts.anchor_budget)
    if not budget.gated:
        raise UsageError("--anchor-budget off gates nothing; drop --anchor instead")
    try:
        check_comparable(anchor, cand)
    except InputError as exc:  # the pinned report is the odd one out: name it
        raise InputError(f"the anchor cannot be compared with the candidate: {exc.reason}",
                         anchor.path) from None
    cmp = align(anchor, cand)
    names = [n for n in gated if n in cmp.names]
    if budget.unit == "pt":
        for n in names:
            if not parse_name(n).spec.bounded:
                raise UsageError(f"--anchor-budget {budget}: '{n}' is not a 0-1 metric; give "
                                 "the cumulative budget in %")
    a_opts = GateOptions(**{**opts.__dict__, "budgets": dict.fromkeys(names, budget),
                            "gate_slices": ()})
    cols = [cmp.names.index(n) for n in names]
    sub = Comparison(cmp.ids, names, cmp.base[:, cols], cmp.cand[:, cols], cmp.rows_base,
                     cmp.rows_cand, cmp.kind, cmp.ks)
    index = None if plan is None else plan.index(sub.ids)
    level, size = family(sub, a_opts, {}, None, index) if opts.mode == "interval" \
        else (opts.level, 0)
    outs = evaluate(sub.base, sub.cand, names, a_opts, {}, level, index)
    where = "against the anchor: "
    failures = [failure_reason(o, where) for o in outs if o.failed]
    uncertain = [uncertain_reason(o, where) for o in outs if o.decision == "inconclusive"]
    verdict = "fail" if failures else "inconclusive" if uncertain else "pass"
    part = {"report": anchor.path, "budget": str(budget), "verdict": verdict,
            "bound_alpha": level, "family": size,
            "metrics": {o.name: o.as_json() for o in outs}}
    return part, failures, uncertain


def compare(base: ScoreReport, cand: ScoreReport, opts: GateOptions, *,
            budget_origin: dict[str, str | None] | None = None, no_gate: bool = False,
            allow_identical: bool = False, anchor: ScoreReport | None = None,
            noise: ScoreReport | None = None) -> GateResult:
    """Gate ``cand`` against ``base``: the one sequence from two typed reports to a verdict.

    ``opts.budgets`` are the given budgets; ``budget_origin`` says where each came from
    (None: the command line, a path: that config file), so a budget naming no column is a
    usage error (exit 2) or an input error naming the file (exit 3). Refused: identical
    reports (unless ``allow_identical``), incomparable reports, a gated metric in one report
    only, and gating nothing (unless ``no_gate``, which the summary states). ``anchor``: a
    pinned release's report; the candidate must also stay within ``opts.anchor_budget`` of
    it (the drift guard). ``noise``: a second scoring of the baseline; the queries that
    differ are reported unstable and their spread feeds the power statement."""
    opts.validate()
    if base.sha256 == cand.sha256 and not allow_identical:
        raise UsageError("the baseline and candidate reports are identical (same sha256); "
                         "pass --allow-identical if that is intended")
    check_comparable(base, cand)
    check_budget_columns(base, cand)
    given = opts.budgets
    defaults = default_budgets(base.kind)
    check_gated_present(base, cand, given, defaults)
    cmp = align(base, cand)
    origin = budget_origin or {}
    unmatched = unmatched_budgets(given, cmp.names)
    for key in unmatched:
        if origin.get(key) is None:
            raise UsageError(f"--budget names '{key}', which the reports do not carry")
    for key in unmatched:
        raise InputError(f"[tool.ragspan.budgets] {key}: the reports carry no such metric",
                         origin[key])
    given = budgets_at_cutoffs(cmp, given)
    bcheck = budget_check(cmp, opts)
    given, decided_at = equal_budget_plan(cmp, bcheck, given, defaults)
    if given is not opts.budgets:
        opts = dataclasses.replace(opts, budgets=given)
    gated = tuple(n for n in cmp.names if budget_for(n, given, defaults).gated)
    if not gated and not no_gate:
        raise UsageError("no metric is gated (every budget is off or names no column of the "
                         "reports); pass --no-gate to compare without gating")
    interval = power = None
    warnings: list[str] = []
    level: float | None = None
    plan = cluster_plan(base, cand, opts.cluster_by)
    clusters = plan.index(cmp.ids)
    if clusters is not None and len(cmp.ids) and count(clusters) == 1:
        warnings.append(f"all {len(cmp.ids)} queries are in one cluster ({plan.by}): nothing "
                        "can be inferred about other documents, so no gated metric is decided "
                        "(--cluster-by none to infer about these questions)")
    groups = slice_groups(cmp, opts)
    if opts.mode == "interval":
        level, size = family(cmp, opts, defaults, groups, clusters)
        interval = {"alpha": opts.level, "bound_alpha": level, "family": size,
                    "correction": opts.family_correction,
                    "on_inconclusive": opts.on_inconclusive}
    outcomes = evaluate(cmp.base, cmp.cand, cmp.names, opts, defaults, level, clusters)
    noise_cmp, noise_part = noise_check(base, noise, gated) if noise is not None else (None, None)
    if level is not None:
        power = power_statement(cmp, outcomes, level, noise_cmp,
                                None if noise_cmp is not None else clusters)
        warnings += power_warnings(power, outcomes)
    if noise_part is not None:
        for name, u in noise_part["unstable"].items():
            if u["count"]:
                warnings.append(f"{name}: {u['count']} of {len(cmp.ids)} queries differ between "
                                "two scorings of the baseline (unstable)")
    warnings += version_warnings(base, cand)
    warnings += saturation_warnings(base, cand, cmp.ks)
    if bcheck is not None and decided_at:
        bcheck = dataclasses.replace(bcheck, decided_at=decided_at)
        notes, traps = budget_trap(cmp, bcheck, outcomes)
        bcheck = dataclasses.replace(bcheck, trap=traps)
        warnings += notes
    slices, slice_failures, slice_uncertain = slice_outcomes(cmp, opts, defaults, level,
                                                             groups, clusters)
    anchor_part = None
    if anchor is not None:
        anchor_part, a_fail, a_uncertain = anchor_check(anchor, cand, opts, gated, defaults,
                                                        plan)
        slice_failures += a_fail
        slice_uncertain += a_uncertain
    elif opts.anchor_budget is not None:
        raise UsageError("--anchor-budget needs --anchor (the pinned release's report)")
    decision = decide(outcomes, bcheck, slice_failures, slice_uncertain, opts.on_inconclusive)
    k_min = min(cmp.ks)
    primary = opts.primary_metric or (
        f"complete_grounding@{k_min}" if cmp.kind == "score.span" else f"doc_ndcg@{k_min}")
    regressed = most_regressed(cmp, primary, opts.top)
    changes, changed = grounding_changes(cmp)
    parsed = parse_name(primary)
    why = why_line(changes, parsed.k if parsed.column == "complete_grounding" else k_min)
    return GateResult(decision, tuple(outcomes), bcheck, slices, gated, primary,
                      tuple(regressed), len(cmp.ids), tuple(cmp.ks),
                      dict(sorted({**defaults, **given}.items())), no_gate, changes, changed,
                      why, interval, power, tuple(warnings), anchor_part, noise_part,
                      plan.as_json(cmp.ids))
