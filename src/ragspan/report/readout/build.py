"""Several score reports of one eval set, side by side: the numbers ``ragspan report`` shows.

Every figure comes from the reports or from statistics computed here on their per-query
rows, never from anywhere else:

- per configuration: the summary metrics at ``k``, complete grounding's 95% percentile
  bootstrap interval (2,000 resamples of the queries, seed 0), the retrieval budget
  (``retrieved_chars@k``), latency when the run recorded it, the chunking summary and the
  failure labels when the report was scored with ``--chunks``;
- each configuration against the baseline, and every pair that isolates one lever: the
  gate's own comparison (``gate.compare`` with the default options: complete grounding
  gated at 2pt, exact McNemar on binary metrics, the retrieval-budget check);
- the lever backlog (``readout.levers``): per lever, the baseline's failing queries whose
  label that lever can move, and the delta of every pair isolating it (``not measured``
  when no pair does).

All reports must be comparable with the baseline as ``compare`` requires (same eval set,
corpus, k values, tau, query set); span-level reports only (complete grounding is the
point).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.base.errors import InputError, UsageError, present
from ragspan.gate import clusters as cl
from ragspan.gate import stats
from ragspan.gate.alignment import cluster_plan
from ragspan.gate.bounds import drop_bounds
from ragspan.gate.compare import compare
from ragspan.gate.decision import MetricOutcome
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.options import GateOptions
from ragspan.gate.result import GateResult
from ragspan.gate.stats import bootstrap_ci
from ragspan.report.readout.levers import (
    LABELS_OF,
    LEVERS,
    Pair,
    lever_values,
    pairs,
    shown_lever,
)
from ragspan.scoring.metrics.registry import is_budget

CI_RESAMPLES, CI_SEED = 2_000, 0


@dataclass(frozen=True)
class Config:
    """One configuration's score report: its name, the typed report, the report's
    predicate (summary, details, parameters as written) and its levers (None: the run
    recorded no pipeline configuration)."""

    name: str
    report: ScoreReport
    predicate: dict[str, Any]
    levers: dict[str, str | None] | None

    @property
    def digest(self) -> str | None:
        return (self.predicate["parameters"].get("run_config") or {}).get("config_digest")

    def metric(self, name: str) -> float:
        return float(self.predicate["summary"]["metrics"][name])

    def lever(self, name: str) -> str | None:
        """This configuration's setting of lever ``name`` (one an effect compares has levers),
        as a readout shows it (a local model folder by its name, never its path)."""
        value = present(self.levers, f"the levers of configuration '{self.name}'")[name]
        return None if value is None else shown_lever(name, value)


def config_of(report: ScoreReport, predicate: dict[str, Any]) -> Config:
    """The configuration behind a score report, named by the configuration its run
    recorded, else by the report's file name."""
    if report.kind != "score.span":
        raise InputError("a doc-level score report has no complete grounding to report; "
                         "score the span run with --eval-set", report.path)
    run_config = predicate["parameters"].get("run_config") or {}
    config = run_config.get("config")
    if isinstance(config, dict):
        check_pipeline_config(config, report.path)
        return Config(str(config["name"]), report, predicate, lever_values(config))
    name = os.path.splitext(os.path.basename(report.path))[0]
    return Config(name, report, predicate, None)


# the keys of a recorded pipeline configuration the levers read, and their types (a section
# that is off is null)
CONFIG_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str, "depth": int, "scope": str, "fusion_k": int, "chunker": dict,
    "dense": (dict, type(None)), "sparse": (dict, type(None)), "rerank": (dict, type(None))}
SECTION_KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "chunker": {"kind": str, "size": int, "overlap": int, "snap": bool},
    "dense": {"model": str, "backend": str, "depth": int, "search": str, "hnsw_m": int,
              "hnsw_ef_construct": int, "hnsw_ef": int},
    "sparse": {"backend": str, "k1": (int, float), "b": (int, float), "depth": int},
    "rerank": {"model": str, "depth": int}}
REQUIRED = {"": ("name", "depth", "scope", "chunker"), "chunker": ("kind", "size"),
            "dense": ("model", "backend", "depth"), "sparse": ("backend", "k1", "b", "depth"),
            "rerank": ("model", "depth")}


def check_pipeline_config(config: dict[str, Any], path: str) -> None:
    """The recorded configuration a readout reads its levers from
    (``parameters.run_config.config``): each key it reads present where required and of its
    type, else an InputError naming the report and the key."""
    where = "parameters.run_config.config"

    def check(obj: dict[str, Any], keys: dict[str, Any], required: tuple[str, ...],
              at: str) -> None:
        for key in required:
            if key not in obj:
                raise InputError(f"{at}: the run's recorded configuration lacks '{key}'", path)
        for key, kind in keys.items():
            value = obj.get(key)
            if key in obj and (isinstance(value, bool) and kind is not bool
                               or not isinstance(value, kind)):
                raise InputError(f"{at}.{key} is {value!r}, of the wrong type", path)

    check(config, CONFIG_KEYS, REQUIRED[""], where)
    for section, keys in SECTION_KEYS.items():
        if isinstance(config.get(section), dict):
            check(config[section], keys, REQUIRED[section], f"{where}.{section}")
    if config.get("dense") and config.get("sparse") and "fusion_k" not in config:
        raise InputError(f"{where}: the run's recorded configuration lacks 'fusion_k'", path)


@dataclass(frozen=True)
class Effect:
    """A pair's comparison: ``b`` against ``a`` (indices into the configurations)."""

    pair: Pair
    result: GateResult

    def outcome(self, name: str) -> MetricOutcome:
        return next(o for o in self.result.outcomes if o.name == name)


@dataclass(frozen=True)
class BacklogRow:
    lever: str
    accounts_for: int  # the baseline's failing queries at k with a label this lever moves
    labels: tuple[str, ...]
    effects: tuple[Effect, ...]  # the pairs isolating this lever; empty: not measured


@dataclass(frozen=True)
class Family:
    """The configurations compared as one family (docs/report.md): every compared pair's
    complete grounding difference, both directions, adjusted together by max-T over one
    query- (or cluster-) blocked sign matrix. ``pairs`` holds per pair ``(a, b, low, high,
    survives)``: one-sided bounds on b's drop against a at ``bound_alpha`` each; a
    difference survives when its interval excludes 0."""

    alpha: float
    bound_alpha: float
    size: int
    unit: str  # the sampling unit (gate.ClusterPlan.by)
    pairs: tuple[tuple[int, int, float, float, bool], ...]

    def survives(self, a: int, b: int) -> bool | None:
        return next((p[4] for p in self.pairs if (p[0], p[1]) == (a, b)), None)


@dataclass(frozen=True)
class Readout:
    configs: tuple[Config, ...]
    baseline: int
    k: int
    intervals: tuple[tuple[float, float], ...]  # complete grounding@k per configuration
    against: dict[int, Effect]  # each other configuration against the baseline
    pairs: tuple[Pair, ...]  # every pair with known levers that differ
    backlog: tuple[BacklogRow, ...]
    family: Family | None = None  # the comparisons adjusted as one family

    @property
    def cg(self) -> str:
        return f"complete_grounding@{self.k}"

    @property
    def base(self) -> Config:
        return self.configs[self.baseline]

    @property
    def eval_name(self) -> str:
        """The file name of the eval set the reports were scored on."""
        return os.path.basename(str(next(ref["name"] for ref in self.base.predicate["inputs"]
                                     if ref["role"] == "eval_set")))


def interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of a mean (``stats.bootstrap_ci``)."""
    ci = bootstrap_ci(values.reshape(-1, 1), CI_RESAMPLES, CI_SEED)
    return float(ci.low[0]), float(ci.high[0])


FAMILY_ALPHA = 0.05


def family_of(configs: Sequence[Config], compared: Sequence[tuple[int, int]], k: int,
              base: int) -> Family | None:
    """``compared`` (pairs of configuration indices) as one family: the per-query drops of
    complete grounding@k, each pair in both directions, adjusted by max-T
    (``stats.family_alpha``) over one sign matrix that flips the baseline report's sampling
    units (``gate.cluster_plan``: whole documents when the eval set is a sample of the
    corpus); then each pair's bounds at the family's error rate (cluster-robust t bounds, or
    the gate's per-query bounds)."""
    if not compared:
        return None
    cg = f"complete_grounding@{k}"
    ref = configs[base].report
    plan = cluster_plan(ref, ref, "auto")
    index = plan.index(ref.ids)
    order = {q: i for i, q in enumerate(ref.ids)}

    def column(c: Config) -> np.ndarray:
        values = c.report.column(cg)
        pos = np.array([order[q] for q in c.report.ids])
        out = np.empty(len(ref.ids))
        out[pos] = values
        return out

    cols = {i: column(configs[i]) for i in {x for p in compared for x in p}}
    drops = [cols[a] - cols[b] for a, b in compared]
    members = [d for d in drops for d in (d, -d)]
    everyone = np.arange(len(ref.ids))
    level = stats.family_alpha(members, [everyone] * len(members), len(ref.ids), FAMILY_ALPHA,
                               "max-t", 10_000, 0, index)
    rows = []
    for (a, b), d in zip(compared, drops):
        if index is not None:
            lo, hi = cl.t_bounds(d.reshape(-1, 1), index, level)
        else:
            got = drop_bounds(cols[a].reshape(-1, 1), cols[b].reshape(-1, 1), [True], [True],
                              level, 2_000, 0)
            lo, hi = got.low, got.high
        low, high = float(lo[0]), float(hi[0])
        rows.append((a, b, low, high, bool(low > 0 or high < 0)))
    return Family(FAMILY_ALPHA, level, len(members), plan.by, tuple(rows))


def _effect(configs: Sequence[Config], pair: Pair) -> Effect:
    a, b = configs[pair.a].report, configs[pair.b].report
    # a readout states a metric it cannot decide at equal budget (its note), never refuses
    return Effect(pair, compare(a, b, GateOptions(allow_ungated=True), allow_identical=True,
                                no_gate=True))


def build(configs: Sequence[Config], baseline: str | None = None, k: int | None = None,
          all_pairs: bool = False) -> Readout:
    """The readout of ``configs`` (report order kept) against ``baseline`` (a configuration
    name; default the first) at ``k`` (default the smallest k the reports share). The
    comparisons with the baseline (``all_pairs``: every pair) are also adjusted as one
    family (``family_of``)."""
    if not configs:
        raise UsageError("give at least one score report")
    names = [c.name for c in configs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        paths = [c.report.path for c in configs if c.name == dup[0]]
        raise UsageError(f"two reports are both configuration '{dup[0]}' ({', '.join(paths)}): "
                         "each configuration may appear once")
    if baseline is None:
        base = 0
    elif baseline in names:
        base = names.index(baseline)
    else:
        raise UsageError(f"--baseline '{baseline}' names no configuration; the reports are "
                         f"{', '.join(names)}")
    ks = [c for c in configs[base].report.ks if not is_budget(c)]  # results, counted
    if not ks:
        raise UsageError("the report reads a count cutoff (the top k results): score with "
                         "--k 5 (and --budget-grid for its budget curves)")
    k = min(ks) if k is None else k
    if k not in ks:
        raise UsageError(f"--k {k}: the reports were scored at k = {', '.join(map(str, ks))}")
    against = {i: _effect(configs, Pair(base, i, ())) for i in range(len(configs)) if i != base}
    found = pairs([c.levers for c in configs], base)
    effects = {(p.a, p.b): Effect(p, against[p.b].result) if p.a == base
               else _effect(configs, p) for p in found if p.isolates}
    cg = f"complete_grounding@{k}"
    failing = configs[base].report.rows
    backlog = []
    for lever in LEVERS:
        labels = LABELS_OF[lever]
        count = sum(1 for row in failing if row.failure.get(str(k)) in labels)
        backlog.append(BacklogRow(lever, count, labels, tuple(
            e for (a, b), e in effects.items() if e.pair.isolates == lever)))
    backlog.sort(key=lambda r: (-r.accounts_for, LEVERS.index(r.lever)))
    compared = ([(a, b) for a in range(len(configs)) for b in range(a + 1, len(configs))]
                if all_pairs else [(base, i) for i in sorted(against)])
    return Readout(tuple(configs), base, k,
                   tuple(interval(c.report.column(cg)) for c in configs), against,
                   tuple(found), tuple(backlog), family_of(configs, compared, k, base))
