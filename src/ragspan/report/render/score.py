"""Score reports (``score.span``, ``score.doc``) as a table and as markdown, from their
records (``records.score``). A renderer reads the parameters and the summary only: it is
handed the predicate with its details left as they were read (``SpanView``, ``DocView``), so
showing a report of 10,000 rows decodes none of them."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.records.envelope import Predicate
from ragspan.records.score import (
    DocSummary,
    FailureLabels,
    Fusion,
    MacroMean,
    ScoreParameters,
    SpanSummary,
)
from ragspan.records.score_facts import ChunkRecall, ChunkRecallAt, OffScope
from ragspan.report.render.text import (
    Markdown,
    aligned,
    md_lines,
    md_table,
    metric_grid,
    ordered_metrics,
)
from ragspan.scoring.metrics.registry import cutoff_key, parse_cutoff

SpanView = Predicate[ScoreParameters, SpanSummary, object]
DocView = Predicate[ScoreParameters, DocSummary, object]
ScoreView = SpanView | DocView
COUNTS = ("queries_without_run_row", "run_rows_without_query", "queries_without_judgments",
          "judged_queries_without_run_row", "run_rows_for_unjudged_queries",
          "queries_without_relevant")


def table(pred: ScoreView) -> str:
    s = pred.summary
    ks, rows = metric_grid(ordered_metrics(s.metrics))
    head = [f"ragspan score ({pred.kind}): {s.queries} queries"]
    extra = []
    for key in COUNTS:
        count = getattr(s, key, UNSET)
        if count:
            extra.append(f"{key.replace('_', ' ')}: {count}")
    if pred.parameters.grounding_threshold is not UNSET:
        head.append(f"grounding threshold tau = {pred.parameters.grounding_threshold}")
    lat = s.latency_ms if isinstance(s, SpanSummary) else UNSET
    if lat is not UNSET:
        head.append(f"latency per query: p50 {lat.p50:.1f} ms, p95 {lat.p95:.1f} ms "
                    f"({lat.rows} rows)")
        for stage, v in (lat.stages or {}).items():
            head.append(f"  {stage}: p50 {v.p50:.1f} ms, p95 {v.p95:.1f} ms")
    grid = aligned(["metric", *[f"@{k}" for k in ks]], [[b, *c] for b, c in rows])
    text = "\n".join(head + extra + repair_lines(s)) + "\n\n" + grid
    labels = _labels(s)
    if labels:
        header, body, note = labels
        text += "\nfailing complete grounding, by label:\n" + aligned(header, body, left=2)
        text += note
    off = _off_scope(s)
    if off:
        text += "\n" + off + "\n"
    macro = _macro(s)
    if macro:
        text += "\n" + macro + "\n"
    for line in _fusion(s):
        text += "\n" + line + "\n"
    for line in chunk_level_lines(s):
        text += "\n" + line + "\n"
    return text


def chunk_level_lines(summary: SpanSummary | DocSummary) -> list[str]:
    """Per count cutoff, one line of chunk-level figures (``summary.chunking.chunk_recall``,
    a score with a chunk manifest): recall with its ceiling and nDCG, and, for a run that
    records its first stage, the same before the rerank or fusion; none without them."""
    chunking = getattr(summary, "chunking", UNSET)
    found: ChunkRecall | None = None if chunking is UNSET else chunking.chunk_recall or None
    if found is None or not found.by_k:
        return []
    before = found.first_stage or {}
    out = []
    for k, v in sorted(found.by_k.items(), key=lambda kv: cutoff_key(parse_cutoff(kv[0]))):
        line = (f"chunk level at k = {k} ({found.queries} queries with a relevant chunk): "
                f"recall {v.recall:.4f} (ceiling {v.ceiling:.4f}), nDCG {v.ndcg:.4f}"
                + _own(v))
        b = before.get(k)
        if b is not None:
            line += (f"; before the rerank or fusion: recall {b.recall:.4f}, "
                     f"nDCG {b.ndcg:.4f}" + _own(b))
        out.append(line)
    return out


def _own(v: ChunkRecallAt) -> str:
    """The candidate-set nDCG beside trec_eval's, each named."""
    return f" (trec_eval's ideal) / {v.ndcg_candidates:.4f} (the candidate set's ideal)"


def _n(count: int, noun: str) -> str:
    """``1 result``, ``3 results``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _w(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def repair_lines(summary: SpanSummary | DocSummary) -> list[str]:
    """One line per kind of repair or trust the span reader applied to the run's results
    (``repairs``), as the table and markdown show them."""
    return [line for _, _, line in repairs(summary)]


def repairs(summary: SpanSummary | DocSummary) -> list[tuple[str, int, str]]:
    """Each kind of repair or trust the span reader applied to the run's results
    (``summary.placement``, ``summary.results_without_text``) as (code, count, line):
    realigned, placed by text (by step), ambiguous with the first place taken, dropped,
    unchecked, and results given by offsets alone; rows skipped under ``--on-duplicate
    first`` (``summary.skipped_rows``). Said on stderr by ``score`` and kept in its
    ``summary.warnings``."""
    p = getattr(summary, "placement", UNSET) or {}
    out: list[tuple[str, int, str]] = []
    if p.get("realigned"):
        out.append(("realigned", p["realigned"],
                    f"realigned: {_n(p['realigned'], 'result')} whose offsets did not slice "
                    f"back to {_w(p['realigned'], 'its', 'their')} text "
                    f"{_w(p['realigned'], 'was', 'were')} placed by "
                    f"{_w(p['realigned'], 'its', 'their')} text"))
    placed = {m: p.get(m, 0) for m in ("exact", "normalized", "fuzzy")}
    if any(placed.values()):
        out.append(("placed", sum(placed.values()),
                    f"placed by text: {_n(sum(placed.values()), 'result')} (exact "
                    f"{placed['exact']}, normalised {placed['normalized']}, fuzzy "
                    f"{placed['fuzzy']})"))
    if p.get("ambiguous_first"):
        out.append(("ambiguous", p["ambiguous_first"],
                    f"ambiguous: {_n(p['ambiguous_first'], 'result')} had several equally "
                    "good places; the first was taken"))
    if p.get("dropped"):
        out.append(("dropped", p["dropped"],
                    f"dropped: {_n(p['dropped'], 'result')} could not be placed; each is kept at "
                    "its rank as an off-corpus result (no gold, its characters counted)"))
    if p.get("unchecked"):
        out.append(("unchecked", p["unchecked"],
                    f"unchecked: {_n(p['unchecked'], 'result')} "
                    f"{_w(p['unchecked'], 'gives its', 'give their')} text, but no corpus "
                    "was given to check it"))
    untexted = getattr(summary, "results_without_text", UNSET)
    if untexted:
        out.append(("offsets_alone", untexted,
                    f"offsets alone: {_n(untexted, 'result')} "
                    f"{_w(untexted, 'gives', 'give')} no text, so nothing checks that "
                    f"{_w(untexted, 'its', 'their')} offsets point at what was retrieved "
                    "(page-relative offsets "
                    "score against the wrong characters); keep each result's text in the "
                    "run (docs/formats.md)"))
    for role, tally in (summary.skipped_rows or {}).items():
        total = tally.repeated + tally.without_id
        if total:
            out.append(("rows_skipped", total,
                        f"skipped ({role.replace('_', ' ')}): {total} rows under "
                        f"--on-duplicate first ({tally.repeated} repeating an earlier "
                        f"row's id, {tally.without_id} without id; lines "
                        f"{', '.join(map(str, tally.lines))})"))
        if tally.repeated_docs:
            out.append(("repeated_docs", tally.repeated_docs,
                        f"skipped ({role.replace('_', ' ')}): {tally.repeated_docs} "
                        "repeated documents under --on-duplicate first (each document's "
                        "first place in its row kept)"))
    return out


def _fusion(summary: SpanSummary | DocSummary) -> list[str]:
    """Per cutoff, one line: which retriever surfaced the relevant results
    (``summary.fusion``); none without it."""
    found: Fusion | None = getattr(summary, "fusion", UNSET) or None
    if found is None:
        return []
    out = []
    for k, v in sorted(found.by_k.items(), key=lambda kv: cutoff_key(parse_cutoff(kv[0]))):
        only = ", ".join(f"{v[f'found_by_{s}_only']} by {s} only" for s in found.sources)
        out.append(f"fusion at k = {k}: {v['relevant_in_top']} relevant results in the top k, "
                   f"{v['promoted']} put there by the fusion (each retriever alone ranked them "
                   f"below k), {only}")
    return out


MACRO_SHOWN = ("complete_grounding", "char_precision", "char_recall")


def _macro(summary: SpanSummary | DocSummary) -> str | None:
    """One line: the macro mean over subsets (``summary.macro_mean``) of the headline span
    metrics, at each cutoff; None without one."""
    found: MacroMean | None = getattr(summary, "macro_mean", UNSET) or None
    if found is None:
        return None
    shown = [f"{n} {v:.4f}" for n, v in found.metrics.items()
             if n.split("@")[0] in MACRO_SHOWN]
    return (f"macro mean over {len(found.groups)} {found.over}s (each counts the same): "
            + ", ".join(shown))


def _off_scope(summary: SpanSummary | DocSummary) -> str | None:
    """One line: per cutoff, the share of the scoped queries' results from another
    document (``summary.off_scope``); None when there are none."""
    found: OffScope | None = getattr(summary, "off_scope", UNSET) or None
    if found is None:
        return None
    ks = sorted(found.by_k, key=lambda k: cutoff_key(parse_cutoff(k)))
    parts = [f"k = {k}: {100 * found.by_k[k].share:.1f}% ({found.by_k[k].outside} "
             f"of {found.by_k[k].results})" for k in ks]
    return (f"results outside the query's document ({found.scoped_queries} queries name "
            f"theirs): " + "; ".join(parts))


LABEL_ORDER = ["ceiling-bound", "chunk-severance", "retrieval-miss", "rank-miss",
               "partial-grounding"]


def _labels(summary: SpanSummary | DocSummary
            ) -> tuple[list[str], list[list[str]], str] | None:
    """The failure labels as rows (label, a count per k, the lever), and a note of the labels
    no manifest let decide; None for reports without labels."""
    found: FailureLabels | None = getattr(summary, "failure_labels", UNSET) or None
    if found is None:
        return None
    ks = sorted(found.by_k, key=lambda k: cutoff_key(parse_cutoff(k)))
    body = [[label, lever, *[str(found.by_k[k][label]) for k in ks]]
            for label, lever in (found.levers or {}).items()]
    body.sort(key=lambda r: LABEL_ORDER.index(r[0]) if r[0] in LABEL_ORDER
              else len(LABEL_ORDER))
    note = ""
    if found.undecided:
        note = (f"(undecided without a chunk manifest: {', '.join(found.undecided)}; "
                "score --chunks decides them)\n")
    return ["label", "points at", *[Markdown(f"@{k}") for k in ks]], body, note


def markdown(pred: ScoreView) -> str:
    s = pred.summary
    ks, rows = metric_grid(ordered_metrics(s.metrics))
    title = f"### ragspan score: {s.queries} queries\n\n"
    repairs = repair_lines(s)
    if repairs:
        title += "".join(f"- {md_lines(line)}\n" for line in repairs) + "\n"
    text = title + md_table(["metric", *[Markdown(f"@{k}") for k in ks]],
                            [[b, *c] for b, c in rows])
    labels = _labels(s)
    if labels:
        header, body, note = labels
        text += "\n#### Failing complete grounding, by label\n\n"
        text += md_table(header, body, right_from=2)
        if note:
            text += "\n" + note
    off = _off_scope(s)
    if off:
        text += "\n" + md_lines(off) + "\n"
    macro = _macro(s)
    if macro:
        text += "\n" + md_lines(macro) + "\n"
    for line in _fusion(s) + chunk_level_lines(s):
        text += "\n" + md_lines(line) + "\n"
    return text
