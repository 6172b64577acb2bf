"""Compare reports as a table and as markdown: verdict first, then one row per metric, then
the queries."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.gate.decision import UNBOUNDED_AT
from ragspan.records.compare import (
    CompareParameters,
    ComparePredicate,
    CompareSummary,
    GatedMetric,
    MigrationPart,
    Plan,
)
from ragspan.records.compare_details import LostSpan, Outcome, Regressed
from ragspan.report.render.provenance import override_line, provenance_lines
from ragspan.report.render.text import aligned, fmt_number, md_code, md_table, md_text
from ragspan.scoring.metrics.registry import METRICS, is_budget, parse_name


def _p(m: Outcome) -> str:
    """A gated metric in interval mode: the one-sided p-value of "no drop" from its bounds'
    own test; otherwise the two-sided test's (adjusted where it was)."""
    p = m.p_drop if m.p_drop is not UNSET else m.p_adjusted if m.p_adjusted is not UNSET \
        else m.p_value
    return "n/a" if p is None else f"{p:.3g}"


def _ordered(metrics: dict[str, Outcome]) -> list[tuple[str, Outcome]]:
    """Gated metrics first, then the registry's order (complete grounding leads), then k."""
    order = {n: i for i, n in enumerate(METRICS)}

    def key(item: tuple[str, Outcome]) -> tuple[bool, bool, int, int]:
        name, m = item
        p = parse_name(name)
        return (not m.gated, p.first_stage, order[p.base], p.k)

    return sorted(metrics.items(), key=key)


def _rows(summary: CompareSummary, with_marks: bool) -> list[list[str]]:
    rows = []
    for name, m in _ordered(summary.metrics):
        base = parse_name(name).column
        mark = ("❌" if m.failed else "✅") if with_marks else ("FAIL" if m.failed else "ok")
        if m.decision == "inconclusive":
            mark = "❔" if with_marks else "?"
        if not m.gated:
            mark = "·" if with_marks else "-"
        d = _signed(m.delta, base) + ("" if base.startswith("retrieved_chars") else "pt")
        if m.fixed is not UNSET:
            extra = f"+{m.fixed} / -{m.broken}"
        else:
            extra = f"{m.better}↑ {m.worse}↓" if with_marks else f"{m.better}+ {m.worse}-"
        ci = list(m.ci95)
        if m.drop_bounds is not UNSET:  # the bounds the decision used, as a delta
            sign = 1 if parse_name(name).spec.higher_is_better else -1
            low, high = m.drop_bounds
            ci = sorted([-sign * high, -sign * low])
        ci_text = f"[{_end(ci[0], base)}, {_end(ci[1], base)}]"
        rows.append([mark, name, fmt_number(m.baseline, base), fmt_number(m.candidate, base),
                     d, ci_text, _p(m), m.budget, extra])
    return rows


def _end(value: float, base: str) -> str:
    """One end of an interval: ``unbounded`` (-/+) where no bound was found."""
    if abs(value) >= UNBOUNDED_AT:
        return "-unbounded" if value < 0 else "+unbounded"
    return _signed(value, base)


def _signed(value: float, base: str) -> str:
    """A delta with its sign, in the metric's unit (characters, or points of a 0-1 metric);
    a value that rounds to zero is ``0`` or ``0.00`` (never ``-0``, ``-0.00``)."""
    text = f"{value:+,.0f}" if base.startswith("retrieved_chars") else f"{value * 100:+.2f}"
    return text[1:] if text[1:].strip("0.,") == "" else text


HEADER = ["", "metric", "baseline", "candidate", "delta", "interval", "p", "budget",
          "fixed/broken or better/worse"]


def _notes(summary: CompareSummary) -> list[str]:
    """What the interval column means, the inconclusive reasons, the power warnings, and
    the anchor's verdict."""
    lines = []
    iv = summary.interval
    if iv is not UNSET:
        lines.append(f"interval: for gated metrics the one-sided bounds the decision used, each "
                     f"at {100 * (1 - iv.bound_alpha):.3g}% ({iv.correction} over a family "
                     f"of {iv.family}), and p the one-sided p-value of no drop from the "
                     f"same test (a drop is real when p < {iv.bound_alpha:.3g}; near 1 on a "
                     f"gain); otherwise "
                     f"the 95% bootstrap CI and the two-sided p. An inconclusive verdict exits "
                     f"as {iv.on_inconclusive}.")
    lines += [f"inconclusive: {r}" for r in summary.inconclusive or []]
    lines += [f"note: {w}" for w in summary.warnings or []]
    a = summary.anchor
    if a is not UNSET:
        lines.append(f"anchor {a.report} (cumulative budget {a.budget}): {a.verdict}")
    pl = summary.placement
    if pl is not UNSET:
        lines.append(f"placement: results whose text could not be placed, kept at their ranks "
                     f"as off-corpus results: baseline {pl.baseline.dropped}, candidate "
                     f"{pl.candidate.dropped}")
    if summary.migration is not UNSET:
        lines.append(migration_line(summary.migration))
    c = summary.clusters
    if c is not UNSET:
        unit = ("each question is its own unit" if c.by == "none"
                else f"{c.queries} queries in {c.clusters} clusters by {c.by}")
        lines.append(f"population: {c.population} ({unit}; {c.reason})")
    return lines


def migration_line(m: MigrationPart) -> str:
    """What a corpus edit left out of the gate and how it was counted."""
    spans = ", ".join(f"{n} {status}" for status, n in m.spans.items() if n)
    head = (f"across a corpus change: {m.survived} of {m.questions} questions survived "
            f"the edit ({m.set_aside} set aside for review, {m.dropped} dropped; gold "
            f"spans: {spans})")
    grounded = ", ".join(f"{n} at @{k}" for k, n in m.left_out_grounded_by_baseline.items())
    left = m.set_aside + m.dropped
    how = ("left out of the pairing (the migrated eval set is trusted)" if m.trusted
           else "counted as lost by the candidate")
    bound = (f"{m.left_out_share:.1%} left out, "
             f"{'past' if m.over_bound else 'within'} the bound {m.max_set_aside:.1%}")
    return (f"{head}; the {left} left out: {how}; the baseline grounded "
            f"{grounded or 'none'} of them; {bound}")


def _budget_line(summary: CompareSummary) -> str | None:
    rb = summary.retrieval_budget
    if rb is UNSET:
        return None
    parts = [f"@{k}: {v.baseline:,.0f} → {v.candidate:,.0f} chars/query (×{v.ratio:.2f})"
             for k, v in rb.per_k.items()]
    state = ("changed" + (" (allowed)" if rb.allowed else "")) if rb.changed else "unchanged"
    return f"Retrieval budget {state} (tolerance {rb.tolerance * 100:g}%): " + "; ".join(parts)


def _lost(span: LostSpan, short: bool = False) -> str:
    """A lost gold span and the chunks behind its label: ``doc [s, e) — c1: 7, c2: -``
    (1-based rank in the pool, ``-`` when not retrieved). ``short``: a chunk id that starts
    with the span's document id and a colon is written from the colon (``doc:18`` as
    ``:18``), as the comment writes it."""
    doc = span.doc_id
    text = f"{doc} [{span.start}, {span.end})"
    chunks = span.chunks
    if chunks:
        names = [c.chunk_id or f"[{c.start}, {c.end})" for c in chunks[:4]]
        if short:
            names = [n[len(doc):] if n.startswith(doc + ":") else n for n in names]
        ranks = ["-" if c.rank is None or c.rank is UNSET else str(c.rank) for c in chunks[:4]]
        text += " — " + ", ".join(f"{n}: {r}" for n, r in zip(names, ranks))
        if len(chunks) > 4:
            text += f", +{len(chunks) - 4}"
    return text


COMMENT_QUERIES = 5  # most-regressed queries in the markdown (the JSON has them all)
CHUNK_LEGEND = ("Lost spans: `document [start, end) — :18: 5` is chunk `<document>:18` at "
                "rank 5 in the candidate's ranking (`-`: not retrieved).")


def _constant(m: Outcome) -> bool:
    """A metric row that carries no information: not gated, no query moved, and the same
    mean on both sides (``doc_*`` at 1.0 when retrieval is scoped to the right document)."""
    moved = (m.fixed or 0) + (m.broken or 0) + m.better + m.worse
    return not m.gated and not moved and m.baseline == m.candidate


def _settings_line(params: CompareParameters) -> str | None:
    if params.no_config:
        return "settings: the command line and the defaults (no settings file read)"
    if not params.config_file:
        return None
    origin = f" ({params.config_origin})" if params.config_origin else ""
    return f"settings from {params.config_file}{origin}"


def plan_lines(plan: Plan | None) -> list[str]:
    """The gate's plan in words: the cutoffs, then one line per gated metric and budget with
    where it came from, its cutoffs and each one's cutoff of equal budget, then each gated
    slice (empty without a plan)."""
    if plan is None:
        return []
    lines = [f"cutoffs (the baseline's): {', '.join(plan.cutoffs)}"]
    groups: dict[tuple[str, str, str], list[GatedMetric]] = {}
    for m in plan.gated:
        column = parse_name(m.metric).column
        groups.setdefault((column, m.budget, m.from_), []).append(m)
    for (column, budget, origin), members in groups.items():
        at = ", ".join(str(parse_name(m.metric).k) for m in members)
        equal = ", ".join(f"{parse_name(m.metric).k} -> {m.at_equal_budget}"
                          for m in members if m.at_equal_budget)
        lines.append(f"{column} at {at}: {budget} ({origin})"
                     + (f"; at equal budget {equal}" if equal else ""))
    lines += [f"slice {s.tag} ({s.from_})" for s in plan.slices]
    return lines


def _plan_block(s: CompareSummary) -> list[str]:
    """The plan folded into a ``<details>`` block: what decided, from where."""
    plan = s.plan or None
    lines = plan_lines(plan)
    if plan is None or not lines:
        return []
    gated = len(plan.gated)
    head = (f"The plan: {gated} gated metric{'s' if gated != 1 else ''}, from the baseline "
            "and the settings")
    return ["<details>", f"<summary>{md_text(head)}</summary>", ""] + \
        [f"- {md_text(x)}" for x in lines] + ["", "</details>", ""]


def _regressed_block(worst: list[Regressed], s: CompareSummary) -> list[str]:
    """The most-regressed queries as the comment shows them: the first ``COMMENT_QUERIES``,
    their lost gold spans with the chunks behind each, and the legend of those cells."""
    if not worst:
        return []
    shown = worst[:COMMENT_QUERIES]
    more = f" — {len(shown)} of {len(worst)}, all in the JSON report" \
        if len(worst) > len(shown) else ""
    lines = [f"#### Most regressed queries ({md_text(s.primary_metric)}){more}", ""]
    body = []
    for q in shown:
        lost = "; ".join(_lost(x, short=True) for x in q.lost_spans or [])
        text = q.query or ""
        query = text if len(text) <= 80 else text[:77] + "..."
        body.append([q.id, query, f"{q.baseline:.2f} → {q.candidate:.2f}",
                     q.label or "-", lost or "-"])
    head = ["query id", "query", "change", "why", "gold spans no longer covered (chunks: rank)"]
    # a column no row fills (the query text of a TREC run, the spans of a doc-level report)
    # is left out rather than shown empty
    keep = [j for j in range(len(head))
            if j in (0, 2) or any(row[j] not in ("", "-") for row in body)]
    lines.append(md_table([head[j] for j in keep], [[row[j] for j in keep] for row in body],
                          right_from=9).rstrip("\n"))
    return lines + (["", CHUNK_LEGEND, ""] if 4 in keep else [""])


def _folded_block(rows: dict[str, list[str]], s: CompareSummary) -> list[str]:
    """Every metric that is not gated, folded into a ``<details>`` block: rows constant on
    both sides, and rows at character or token cutoffs that decided nothing, left out with a
    count (all in the JSON report)."""
    other = [(n, r) for n, r in rows.items() if not s.metrics[n].gated]
    if not other:
        return []
    decided = set((s.retrieval_budget.decided_at or {}).values()) \
        if s.retrieval_budget is not UNSET else set()
    unused = [n for n, _ in other if is_budget(parse_name(n).k) and str(parse_name(n).k)
              not in decided]
    informative = [r for n, r in other
                   if not _constant(s.metrics[n]) and n not in unused]
    dropped = len(other) - len(informative) - len(unused)
    what = f"{len(informative)} other metrics, not gated"
    if dropped:
        what += f"; {dropped} constant on both sides not shown (all in the JSON report)"
    if unused:
        what += f"; {len(unused)} at character or token cutoffs that decided nothing not shown"
    lines = ["<details>", f"<summary>{md_text(what)}</summary>", ""]
    if informative:
        lines.append(md_table(HEADER, informative, right_from=2))
    return lines + ["</details>", ""]


def markdown(pred: ComparePredicate) -> str:
    """The verdict as a pull-request comment reads it: the verdict and its reasons, the why
    line, the gated metrics with their bounds, the notes (power, inconclusive, anchor,
    settings), the five most-regressed queries; every other metric folded into a
    ``<details>`` block, rows constant on both sides dropped with a count. Every string
    from the reports (ids, queries, documents, reasons quoting them) goes through
    ``md_text``."""
    s = pred.summary
    icon = {"pass": "✅ PASS", "fail": "❌ FAIL"}.get(s.verdict, "❔ INCONCLUSIVE")
    overridden = override_line(s)
    applied = s.override is not UNSET and s.override.applied
    lines = [f"### ragspan gate: {icon}" + (" (overridden)" if applied else ""), ""]
    if overridden:
        lines += [f"**{'Overridden' if applied else 'Override'}:** {md_text(overridden)}", ""]
    if s.reasons:
        lines += [f"- {md_text(r)}" for r in s.reasons] + [""]
    if s.why:
        lines += [f"**Why:** {md_text(s.why)}", ""]
    lines.append(f"{s.queries} queries, primary metric {md_code(s.primary_metric)}.")
    if s.verification is not UNSET:
        lines.append(f"Verification: {md_text(s.verification.statement)}.")
    budget = _budget_line(s)
    if budget:
        lines.append(md_text(budget.replace("→", "->")))
    lines.append("")
    rows = dict(zip((n for n, _ in _ordered(s.metrics)), _rows(s, True)))
    gated = [r for n, r in rows.items() if s.metrics[n].gated]
    if gated:
        lines.append(md_table(HEADER, gated, right_from=2))
    notes = _notes(s)
    settings = _settings_line(pred.parameters)
    if settings:
        notes.append(settings)
    notes += [f"provenance: {line}" for line in provenance_lines(s)]
    if notes:
        lines += [f"- {md_text(r)}" for r in notes] + [""]
    lines += _regressed_block(pred.details.most_regressed, s)
    lines += _plan_block(s)
    lines += _folded_block(rows, s)
    return "\n".join(lines).rstrip("\n") + "\n"


def table(pred: ComparePredicate) -> str:
    s = pred.summary
    lines = [f"ragspan gate: {s.verdict.upper()} ({s.queries} queries)"]
    overridden = override_line(s)
    if overridden:
        lines.append(f"  {overridden}")
    lines += [f"  - {r}" for r in s.reasons]
    if s.verification is not UNSET:
        lines.append(f"  verification: {s.verification.statement}")
    lines += [f"  {r}" for r in _notes(s)]
    settings = _settings_line(pred.parameters)
    if settings:
        lines.append(f"  {settings}")
    lines += [f"  provenance: {line}" for line in provenance_lines(s)]
    if s.why:
        lines.append(f"why: {s.why}")
    planned = plan_lines(s.plan or None)
    if planned:
        lines.append("plan: " + "; ".join(planned))
    budget = _budget_line(s)
    if budget:
        lines.append(budget)
    lines.append("")
    text = "\n".join(lines) + "\n" + aligned(HEADER, _rows(s, False), left=2)
    worst = pred.details.most_regressed
    if worst:
        text += f"\nmost regressed ({s.primary_metric}):\n"
        for q in worst:
            label = f"  [{q.label}]" if q.label else ""
            text += (f"  {q.id}: {q.baseline:.2f} -> {q.candidate:.2f}{label}  "
                     f"{(q.query or '')[:70]}\n")
    return text
