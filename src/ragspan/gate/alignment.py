"""Two score reports made one comparison: comparable or refused (``check_comparable``), their
queries and metrics aligned (``align``), the clusters their queries fall in
(``cluster_plan``), and the warnings a comparison carries (versions, saturation)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragspan import __version__
from ragspan.base.errors import InputError, UsageError
from ragspan.base.ids import normalization_twins
from ragspan.base.voice import setting as named
from ragspan.gate.budgets import Budget, budget_for
from ragspan.gate.clusters import cluster_index, count, populations
from ragspan.gate.inputs import ScoreReport
from ragspan.gate.parameters import ParameterDifference, compare_parameters
from ragspan.gate.query_rows import QueryRow
from ragspan.records.compare import Clusters
from ragspan.records.score_summary import ReportWarning


def check_comparable(base: ScoreReport, cand: ScoreReport,
                     accepted: Sequence[str] = ()) -> list[str]:
    """Same kind, eval set, corpus (when both recorded one), scoring parameters
    (``parameters.compare_parameters``: every field that changes a number, unless
    ``accepted``) and query set; else an InputError naming the candidate. Returns a note
    per accepted difference."""
    where = cand.path
    if base.kind != cand.kind:
        raise InputError(f"report kinds differ: baseline {base.kind}, candidate {cand.kind}",
                         where)
    if base.eval_sha256 != cand.eval_sha256:
        raise InputError("scored on a different eval set (sha256 "
                         f"{base.eval_sha256[:12]} vs {cand.eval_sha256[:12]}); after a corpus "
                         "edit, carry the eval set over with `ragspan migrate` and compare "
                         f"across the edit with {named('migration')} (docs/gate.md, \"Across "
                         "a corpus edit\")", where)
    b_corp, c_corp = base.corpus_sha256, cand.corpus_sha256
    if b_corp and c_corp and b_corp != c_corp:
        raise InputError("scored on a different corpus (sha256 "
                         f"{b_corp[:12]} vs {c_corp[:12]}): corpus drift would be confounded "
                         "with the change", where)
    try:
        notes = compare_parameters(base.parameters, cand.parameters, accepted)
    except ParameterDifference as exc:
        raise InputError(f"{exc}: the reports were scored with other settings, so their "
                         "numbers are not comparable", where) from None
    if set(base.ids) != set(cand.ids):
        only_b = sorted(set(base.ids) - set(cand.ids))
        only_c = sorted(set(cand.ids) - set(base.ids))
        twins = normalization_twins(only_b, only_c)
        said = (f"; {len(twins)} of them differ only by Unicode normalisation (e.g. "
                f"{twins[0][0]!r} and {twins[0][1]!r})" if twins else "")
        raise InputError(
            f"query sets differ: {len(only_b)} only in the baseline (e.g. {only_b[:3]}), "
            f"{len(only_c)} only in the candidate (e.g. {only_c[:3]}){said}", where)
    return notes


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


SATURATION_WARN = 0.1  # as ``scoring.run_facts.SATURATION_WARN``


def steps_warnings(base: ScoreReport, cand: ScoreReport) -> list[str]:
    """A change in how many search calls each question makes (runs with steps): the budget
    check covers the whole context, and this says where its characters came from."""
    b, c = base.steps, cand.steps
    if b is None and c is None:
        return []
    mean_b, mean_c = (1.0 if s is None else s.mean_steps for s in (b, c))
    if abs(mean_b - mean_c) < 1e-9:
        return []
    said = (f"the candidate makes {mean_c:.2f} search calls per question on average, the "
            f"baseline {mean_b:.2f}")
    if c is not None:
        said += (f"; with every step's results the candidate grounds "
                 f"{c.grounded_by_all_steps:.1%} of the questions, "
                 f"{c.grounded_only_by_a_later_step:.1%} only thanks to a later step")
    return [said]


def saturation_warnings(base: ScoreReport, cand: ScoreReport, ks: Sequence[object]
                        ) -> list[str]:
    """The cutoffs among ``ks`` (those that decided: the gated ones) at which a report's
    results cover most of the scoped documents of at least ``SATURATION_WARN`` of its
    queries (recall there is high by construction, not ranking): one line per side."""
    out = []
    for role, r in (("baseline", base), ("candidate", cand)):
        if r.saturation is None:
            continue
        hit = [(k, v) for k in ks if (v := r.saturation.by_k.get(str(k))) is not None
               and v.share >= SATURATION_WARN]
        if hit:
            (k, v), rest = hit[0], hit[1:]
            more = "".join(f", k = {k2} ({v2.queries} queries, {v2.share:.0%})"
                           for k2, v2 in rest)
            out.append(f"at k = {k} the {role}'s results cover at least "
                       f"{r.saturation.threshold:.0%} of the scoped document (the "
                       f"corpus, for a question without doc_id) for {v.queries} queries "
                       f"({v.share:.0%}){'; so too at ' + more[2:] if more else ''}: recall "
                       "there is high by construction, not by ranking")
    return out


CUTOFF_WARNINGS = ("budget_over_document", "saturated")  # warnings about named cutoffs
_NAMED_CUTOFF = re.compile(r"k = ([0-9]+[ct]?)\b")


def report_warnings(base: ScoreReport, cand: ScoreReport,
                    decided: Sequence[object] | None = None) -> list[str]:
    """What each report's scoring said about its inputs (``summary.warnings``), named with
    its side, so the verdict carries what a ``-q`` score run kept off stderr; a warning both
    reports carry word for word (the same eval set and budgets) is said once, for both. A
    warning about cutoffs (``CUTOFF_WARNINGS``) none of which is among ``decided`` (the
    cutoffs gated) is left to the score reports, which keep it: it says nothing of this
    verdict."""
    keep = None if decided is None else {str(k) for k in decided}

    def relevant(w: ReportWarning) -> bool:
        if keep is None or w.code not in CUTOFF_WARNINGS:
            return True
        return bool(set(_NAMED_CUTOFF.findall(w.example)) & keep)

    both = [w for w in base.warnings if w in cand.warnings and relevant(w)]
    return [f"the {role} report's scoring warned ({w.code}, {w.count}): {w.example}"
            for role, r in (("baseline", base), ("candidate", cand)) for w in r.warnings
            if w not in both and relevant(w)] + [
        f"both reports' scoring warned ({w.code}, {w.count}): {w.example}" for w in both]


def version_warnings(base: ScoreReport, cand: ScoreReport) -> list[str]:
    """A report written by another ragspan major or minor version is named in the verdict,
    and one in report format v1 (its per-question detail as rows, read into the same records
    as v2's columns): one note for both reports (the format itself is checked by the
    schema's ``predicateType``)."""
    said = [f"the {role} report was written by ragspan {r.tool_version}, this is "
            f"{__version__}: its metrics may be computed differently"
            for role, r in (("baseline", base), ("candidate", cand))
            if r.tool_version and _minor(r.tool_version) != _minor(__version__)]
    older = [role for role, r in (("baseline", base), ("candidate", cand)) if r.format == 1]
    if older:
        said.append(f"the {' and the '.join(older)} report{'s are' if len(older) > 1 else ' is'}"
                    " in report format v1 (rows per question), read into the same records as "
                    "v2: the numbers compare as they are; rescore to write v2 "
                    "(docs/report-envelope.md)")
    return said


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
        if self.by == "none":
            return None
        return cluster_index([self.keys.get(q) for q in ids])

    def record(self, ids: Sequence[str]) -> Clusters:
        """``summary.clusters`` for the queries ``ids``."""
        index = self.index(ids)
        units = len(ids) if index is None else count(index)
        return Clusters(by=self.by, reason=self.reason, queries=len(ids), clusters=units,
                        population=self.population)


def cluster_plan(base: ScoreReport, cand: ScoreReport, setting: str,
                 alpha: float = 0.05) -> ClusterPlan:
    """Resolve the ``cluster-by`` setting. ``auto``: per question when no document has two questions,
    or when the eval set asks about every document of its corpus (the verdict is about these
    documents); by ``doc_id`` otherwise (they are a sample of the documents users query, or
    the corpus size is unknown). The candidate's clusters must be the baseline's. Fewer
    clusters than ``min_clusters(alpha)`` cannot show a drop about groups like them at
    ``alpha``: the gate then decides per question, about these questions, and says so
    (never "no claim" for a collapse)."""
    docs = {q: r.doc_id for q, r in zip(base.ids, base.rows) if r.doc_id is not None}
    asked = len(set(docs.values()))
    if setting.startswith("tag:"):
        key = setting[len("tag:"):]
        keys = {q: r.tags[key] for q, r in zip(base.ids, base.rows) if key in r.tags}
        if not keys:
            raise UsageError(f"{named('cluster-by', setting)}: no query carries the tag '{key}'")
        by, reason = setting, "given"
    elif setting in ("doc_id", "none"):
        keys = docs if setting == "doc_id" else {}
        by, reason = setting, "given"
    else:
        keys = docs
        shared = len(docs) > asked
        corpus = base.documents.corpus if base.documents is not None else None
        if not shared:
            by, reason = "none", "no document has two questions"
        elif corpus is not None and documents_asked(base, asked) >= corpus:
            by, reason = "none", (f"the eval set asks about all {corpus} documents of its corpus"
                                  if corpus != 1 else "the eval set asks about the one "
                                  "document of its corpus")
        elif corpus is None:
            by, reason = "doc_id", ("the corpus size is not recorded (scored without "
                                    f"{named('corpus')}): "
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
    fewest = min_clusters(alpha)
    if by != "none" and units < fewest:
        reason = (f"only {units} cluster{'s' if units != 1 else ''} by {by}: fewer than the "
                  f"{fewest} an exact randomization test needs to reach alpha {alpha:g}, so "
                  "nothing can be shown about other groups; decided per question, about "
                  "these questions")
        return ClusterPlan("none", reason, {}, populations("none", len(base.ids),
                                                          documents_asked(base, asked)))
    return ClusterPlan(by, reason, keys if by != "none" else {},
                       populations(by, units, documents_asked(base, asked)))


def documents_asked(report: ScoreReport, keys: int) -> int:
    """How many documents the eval set asks about: the report's ``summary.documents.asked``
    (real documents: a question without ``doc_id`` counts the documents of its gold spans),
    else ``keys``, the distinct cluster keys of its rows."""
    return report.documents.asked if report.documents is not None else keys


def min_clusters(alpha: float) -> int:
    """The fewest clusters with which a one-sided exact sign-flip test over cluster totals
    can reach ``alpha``: its smallest p-value is ``2 ** -C`` (5 at alpha 0.05)."""
    return max(2, math.ceil(math.log2(1.0 / alpha) - 1e-9))
