"""The developer report: every configuration's numbers, each against the baseline with the
gate's paired statistics, the chunking, the failure labels, the slices, the lever backlog
and the provenance of every input (docs/report.md)."""

from __future__ import annotations

from typing import Any

from ragspan import __version__
from ragspan.base.options import GATE_DEFAULTS
from ragspan.report.readout import svg
from ragspan.report.readout.build import CI_RESAMPLES, Config, Effect, Readout
from ragspan.report.readout.document import Block, Document, Para, Plot, Section, Table
from ragspan.report.readout.levers import OTHER, differing, settings_change
from ragspan.report.render.text import DASH, chars, f3, pct, pval, signed
from ragspan.scoring.metrics.registry import FAILURE_LEVERS, LABELS, Chars, is_budget


def change_of(a: Config, b: Config) -> str:
    """``lever: from → to`` for every lever two configurations differ in."""
    if a.levers is None or b.levers is None:
        return "unknown (a run recorded no configuration)"
    return "; ".join(settings_change(a.levers, b.levers) if lever == OTHER
                     else f"{lever}: {a.lever(lever)} → {b.lever(lever)}"
                     for lever in differing(a.levers, b.levers)) or "none"


def _ci(r: Readout, i: int) -> str:
    low, high = r.intervals[i]
    return f"{f3(r.configs[i].metric(r.cg))} [{f3(low)}, {f3(high)}]"


def _latency(c: Config) -> str:
    lat = c.predicate["summary"].get("latency_ms")
    return f"{lat['p50']:.1f} / {lat['p95']:.1f}" if lat else DASH


def _chunks(c: Config) -> str:
    ch = c.predicate["summary"].get("chunking")
    return f"{ch['chunks']:,}" if ch else DASH


def configurations(r: Readout) -> Section:
    k = r.k
    header = ["configuration", "chunks", f"precision@{k}", f"hit rate@{k}", f"MRR@{k}",
              f"span coverage@{k}", f"span recall@{k}",
              f"complete grounding@{k} [95% CI]", f"chars / query @{k}", "latency p50 / p95 ms"]
    rows = []
    for i, c in enumerate(r.configs):
        rows.append([c.name + (" (baseline)" if i == r.baseline else ""), _chunks(c),
                     *(f3(c.metric(f"{m}@{k}")) for m in
                       ("precision", "hit_rate", "mrr", "span_coverage", "span_recall")),
                     _ci(r, i), chars(c.metric(f"retrieved_chars@{k}")), _latency(c)])
    plot = svg.intervals([(c.name, c.metric(r.cg), *r.intervals[i])
                          for i, c in enumerate(r.configs)], r.base.name,
                         f"complete grounding@{k} per configuration with its 95% interval")
    return Section("Configurations", [
        Table(header, rows, f"Means over {r.base.report.values.shape[0]} queries. The interval "
              f"is a percentile bootstrap of the queries ({CI_RESAMPLES:,} resamples, seed 0). "
              f"chars / query is the retrieval budget: the characters the top {k} results "
              "hold."),
        Plot(f"Complete grounding@{k} per configuration (95% interval)", plot)])


def _budget_cell(e: Effect, k: int) -> str:
    b = e.result.budget
    if b is None:
        return DASH
    at = b.per_k[str(k)]
    text = f"×{at.ratio:.2f}"
    return text + " (budget changed)" if at.changed else text


TEST_WORDS = {
    "exact-mcnemar": "exact McNemar",
    "randomization-exact": "the paired sign-flip test (every pattern enumerated)",
    "randomization-monte-carlo": "the paired sign-flip test (seeded draws)",
    "cluster-randomization-exact": "the sign-flip test over whole documents (every pattern "
                                   "enumerated; questions that share a document move together)",
    "cluster-randomization-monte-carlo": "the sign-flip test over whole documents (seeded "
                                         "draws; questions that share a document move "
                                         "together)",
    "cluster-t": "the cluster-robust t test over documents",
}


def test_words(names: set[str]) -> str:
    """The tests whose p-values a column shows, in words (``gate.evaluate``'s names), so the
    caption says what computed them rather than what usually does."""
    return " or ".join(TEST_WORDS.get(n, n) for n in sorted(names)) or "none"


def against(r: Readout) -> Section:
    k, cg = r.k, r.cg
    header = ["configuration", "what changed", f"Δ complete grounding@{k}", "95% CI of Δ",
              "p", "fixed", "broken", f"Δ span recall@{k}", "p",
              f"chars / query vs baseline @{k}", "gate", "in the family"]
    rows, plot_rows = [], []
    tests: dict[str, set[str]] = {"cg": set(), "sr": set()}
    for i, e in sorted(r.against.items()):
        o, sr = e.outcome(cg), e.outcome(f"span_recall@{k}")
        tests["cg"].add(o.test)
        tests["sr"].add(sr.test)
        rows.append([r.configs[i].name, change_of(r.base, r.configs[i]), signed(o.delta),
                     f"[{signed(o.ci_low)}, {signed(o.ci_high)}]", pval(o.p_value),
                     str(o.fixed), str(o.broken), signed(sr.delta), pval(sr.p_value),
                     _budget_cell(e, k), e.result.decision.verdict,
                     _family_cell(r, r.baseline, i)])
        plot_rows.append((r.configs[i].name, o.broken or 0, o.fixed or 0,
                          len(r.base.report.ids) - (o.broken or 0) - (o.fixed or 0)))
    if not rows:
        return Section(f"Against the baseline ({r.base.name})",
                       [Para("Only one configuration was given: nothing to compare.")])
    tol = GATE_DEFAULTS["budget_tolerance"]
    first = next(iter(r.against.values())).result
    budgets = ", ".join(f"{name} {b}" for name, b in first.budgets.items() if b.gated)
    return Section(f"Against the baseline ({r.base.name})", [
        Table(header, rows, left=2, wide=(1,), caption=(
              "Paired over the same queries, as ragspan compare computes them (p: "
              f"{test_words(tests['cg'])} for complete grounding, {test_words(tests['sr'])} "
              "for span recall; the interval a percentile bootstrap of the per-query deltas): "
              "fixed = grounded only in this configuration, broken = grounded only in the "
              "baseline."
              f" A retrieval budget more than {pct(tol)} away from the "
              "baseline's is marked 'budget changed': a recall gain bought with more "
              "characters is not a ranking gain. gate = the verdict of ragspan compare with its default "
              f"budgets ({budgets})." + _family_caption(r))),
        Plot(f"Per-query change of complete grounding@{k} against {r.base.name}",
             svg.changes(plot_rows, f"queries broken and fixed against {r.base.name}"))])


def _family_cell(r: Readout, a: int, b: int) -> str:
    if r.family is None:
        return DASH
    said = r.family.survives(a, b)
    return DASH if said is None else "survives" if said else "within noise"


def _family_caption(r: Readout) -> str:
    f = r.family
    if f is None:
        return ""
    unit = "whole documents" if f.unit == "doc_id" else "questions" if f.unit == "none" \
        else f.unit
    return (f" in the family = whether the difference of complete grounding@{r.k} survives "
            f"when all {f.size // 2} compared pairs (both directions, {f.size} bounds) are "
            f"adjusted together by max-T over one sign matrix flipping {unit}, each bound at "
            f"{100 * (1 - f.bound_alpha):.3g}% (family alpha {f.alpha:g}).")


def all_pairs(r: Readout) -> Section | None:
    """Every pair of configurations as one family (``report --all-pairs``)."""
    f = r.family
    if f is None or len(f.pairs) <= len(r.against):
        return None
    k = r.k
    rows = []
    for a, b, low, high, survives in f.pairs:
        delta = r.configs[b].metric(r.cg) - r.configs[a].metric(r.cg)
        rows.append([r.configs[a].name, r.configs[b].name, signed(delta),
                     f"[{signed(-high)}, {signed(-low)}]",
                     "survives" if survives else "within noise"])
    return Section(f"Every pair, one family (complete grounding@{k})", [Table(
        ["from", "to", "Δ", "family-adjusted interval of Δ", "in the family"], rows, left=2,
        caption=_family_caption(r).strip())])


def _at(by_k: dict[str, float], k: int, shown: Any) -> str:
    """A per-k value of the chunking summary, or a dash where the report has none at k."""
    value = by_k.get(str(k))
    return DASH if value is None else str(shown(value))


def chunking(r: Readout) -> Section:
    k = r.k
    header = ["configuration", "chunks", "mean chunk chars", "span integrity",
              "severed spans", "relevant chunks / query", f"precision ceiling@{k}",
              f"attained / ceiling @{k}"]
    rows = []
    for c in r.configs:
        ch = c.predicate["summary"].get("chunking")
        if not ch:
            rows.append([c.name, *[DASH] * 7])
            continue
        rows.append([c.name, f"{ch['chunks']:,}", chars(ch["chunk_chars"]["mean"]),
                     pct(ch["span_integrity"]),
                     f"{ch['gold_spans'] - ch['contained_whole']} of {ch['gold_spans']}",
                     f"{ch['relevant_chunks_per_query']['mean']:.2f}",
                     _at(ch["precision_ceiling"], k, f3),
                     _at(ch["precision_share_of_ceiling"], k, pct)])
    return Section("Chunking", [Table(header, rows, (
        "Span integrity: the share of gold spans one chunk holds whole. The precision ceiling "
        f"is what a perfect ranking of these chunks would reach at {k}; attained / ceiling is "
        f"the run's precision@{k} as a share of it. {DASH}: scored without the chunk "
        "manifest."))])


TARGET_GROUNDING = 0.8  # the grounding whose budget the curves section states


def budget_curves(r: Readout) -> Section | None:
    """Complete grounding and span recall against characters per query, per configuration,
    at the character cutoffs every configuration was scored at (``score --budget-grid``),
    with each one's fixed-k points; and the smallest of those budgets at which it grounds
    ``TARGET_GROUNDING`` of the questions. None without common character cutoffs."""
    common: set[int] | None = None
    for c in r.configs:
        mine: set[int] = {k for k in c.report.ks if isinstance(k, Chars)}
        common = mine if common is None else common & mine
    budgets = sorted(common or set(), key=int)
    if not budgets:
        return None
    counts = sorted({k for k in r.base.report.ks if not is_budget(k)})
    head = ["configuration", *[f"{int(b):,}" for b in budgets],
            f"budget for {TARGET_GROUNDING:.0%}"]
    rows, series, points = [], [], []
    for c in r.configs:
        cg = [c.metric(f"complete_grounding@{b}") for b in budgets]
        reach = next((f"{int(b):,}" for b, v in zip(budgets, cg) if v >= TARGET_GROUNDING),
                     "not reached")
        rows.append([c.name, *[f3(v) for v in cg], reach])
        series.append((c.name, [(float(int(b)), v) for b, v in zip(budgets, cg)]))
        for k in counts:
            name = f"complete_grounding@{k}"
            if name in c.predicate["summary"]["metrics"]:
                points.append((c.name, str(k), c.metric(f"retrieved_chars@{k}"), c.metric(name)))
    recall = [[c.name, *[f3(c.metric(f"span_recall@{b}")) for b in budgets]] for c in r.configs]
    fixed = [[n, k, chars(x), f3(v)] for n, k, x, v in points]
    blocks: list[Block] = [
        Plot("Complete grounding against characters per query", svg.curves(
            series, points, "complete grounding against characters per query")),
        Table(head, rows, "Complete grounding at each character budget (characters per query, "
              "every result counted as returned; the one that crosses the budget cut at it). "
              f"The last column: the smallest of these budgets at which the configuration "
              f"grounds {TARGET_GROUNDING:.0%} of the questions."),
        Table(["configuration", *[f"{int(b):,}" for b in budgets]], recall,
              "Span recall at each character budget."),
    ]
    if fixed:
        blocks.append(Table(["configuration", "k", "characters per query",
                             "complete grounding"], fixed,
                            "The fixed-k points: where each configuration sits at its k."))
    return Section("Budget curves: like with like", blocks)


def labels(r: Readout) -> Section:
    k = str(r.k)
    header = ["configuration", f"failing@{k}", *LABELS]
    rows = []
    for c in r.configs:
        by_k = c.predicate["summary"].get("failure_labels", {}).get("by_k", {}).get(k)
        if by_k is None:
            rows.append([c.name, *[DASH] * (len(LABELS) + 1)])
            continue
        rows.append([c.name, str(sum(by_k.values())), *(str(by_k.get(lb, 0)) for lb in LABELS)])
    levers = "; ".join(f"{lb}: {FAILURE_LEVERS[lb]}" for lb in LABELS)
    return Section(f"Why queries fail (failure labels @{k})", [Table(header, rows, (
        f"One label per query failing complete grounding@{k}; the lever each points at: "
        f"{levers}."))])


def slice_sections(r: Readout) -> list[Section]:
    """Per tag key (category, subset, ...), per value: each configuration's complete
    grounding and MRR at the readout's k (MRR: the rank of the first result that overlaps a
    gold span, averaged within the slice)."""
    k, cg = r.k, r.cg
    mrr = f"mrr@{k}"
    small = GATE_DEFAULTS["min_slice_size"]
    out = []
    base_slices = r.base.predicate["details"].get("slices", {})
    for key in sorted(base_slices):
        values = sorted(base_slices[key])
        rows, marked = [], False
        for value in values:
            count = base_slices[key][value]["count"]
            cells = []
            for c in r.configs:
                at = c.predicate["details"].get("slices", {}).get(key, {}).get(value)
                cells.append(f3(at["metrics"][cg]) if at and cg in at["metrics"] else DASH)
                got = at and at["metrics"].get(mrr)
                cells.append(DASH if got is None else f3(got))
            mark = " †" if count < small else ""
            marked |= bool(mark)
            rows.append([value + mark, str(count), *cells])
        caption = (f"† fewer than {small} queries: too few to tell a change from noise "
                   "(compare reports such slices without gating them)." if marked else "")
        out.append(Section(f"Complete grounding@{k} and MRR@{k} by {key}", [
            Table([key, "queries", *(h for c in r.configs for h in (c.name, f"{c.name} MRR"))],
                  rows, caption)]))
    return out


def backlog_rows(r: Readout) -> list[list[str]]:
    rows = []
    for row in r.backlog:
        moved = f"{row.accounts_for} ({', '.join(row.labels)})"
        if not row.effects:
            rows.append([row.lever, moved, "not measured", DASH, DASH, DASH, DASH, DASH])
        for e in row.effects:
            a, b = r.configs[e.pair.a], r.configs[e.pair.b]
            o = e.outcome(r.cg)
            rows.append([row.lever, moved, f"{a.name} → {b.name}",
                         f"{a.lever(row.lever)} → {b.lever(row.lever)}", signed(o.delta),
                         pval(o.p_value), str(o.fixed), str(o.broken)])
    return rows


def backlog(r: Readout) -> Section:
    k = r.k
    header = ["lever", f"baseline queries failing @{k} it can move", "measured by", "change",
              f"Δ complete grounding@{k}", "p (exact McNemar)", "fixed", "broken"]
    blocks: list[Any] = [Table(header, backlog_rows(r), left=4, wide=(3,), caption=(
        "A delta is attributed to a lever only from a pair of configurations that differ in "
        "exactly that lever; a lever no such pair isolates reads 'not measured'. A negative "
        "delta means the change made things worse."))]
    mixed = [p for p in r.pairs if not p.isolates]
    if mixed:
        text = "; ".join(f"{r.configs[p.a].name} → {r.configs[p.b].name} changes "
                         f"{', '.join(p.levers)}" for p in mixed)
        blocks.append(Para(f"Pairs that change more than one lever lend their delta to none: "
                           f"{text}." + (f" ('{OTHER}': a retriever's backend or depth.)"
                                         if any(OTHER in p.levers for p in mixed) else "")))
    unknown = [c.name for c in r.configs if c.levers is None]
    if unknown:
        blocks.append(Para("No recorded configuration (a user retriever or a converted run), "
                           f"so in no pair: {', '.join(unknown)}."))
    return Section("Lever backlog", blocks)


def provenance(r: Readout) -> Section:
    seen: dict[tuple[str, str], str] = {}
    for c in r.configs:
        seen.setdefault(("score report", c.report.path), c.report.sha256)
        for ref in c.predicate["inputs"]:
            seen.setdefault((ref["role"], ref["name"]), ref["digest"]["sha256"])
    rows = [[role, name, sha] for (role, name), sha in seen.items()]
    digests = [[c.name, c.digest or DASH] for c in r.configs]
    return Section("Provenance", [
        Para(f"ragspan {__version__}. Every input with the sha256 of its bytes:"),
        Table(["role", "file", "sha256"], rows, left=3),
        Table(["configuration", "configuration digest"], digests, left=2)])


def document(r: Readout, title: str | None = None) -> Document:
    base = r.base
    eval_name = r.eval_name
    n = base.report.values.shape[0]
    tau = base.predicate["parameters"]["grounding_threshold"]
    intro: list[Block] = [Para(f"{len(r.configs)} configurations scored on {eval_name} ({n} queries) at "
                  f"k = {r.k}; baseline: {base.name}. Complete grounding@{r.k} is the share "
                  f"of questions whose every gold span is covered to at least {tau} by the "
                  f"top {r.k} results.")]
    pairs = all_pairs(r)
    curves = budget_curves(r)
    return Document(title or f"Retrieval report: {eval_name}", intro, [
        configurations(r), against(r), *([pairs] if pairs else []),
        *([curves] if curves else []), chunking(r), labels(r),
        *slice_sections(r), backlog(r), provenance(r)])
