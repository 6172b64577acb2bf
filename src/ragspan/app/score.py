"""``ragspan score``: a span report (eval set + span run) or a doc report (qrels, or an eval
set, + a doc run)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

import msgspec

from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError, UsageError, present
from ragspan.base.options import MAX_CHARS_CUTOFF, MAX_K, MAX_KS
from ragspan.base.records import InputRef, ReportBody
from ragspan.base.voice import setting
from ragspan.base.warned import recording, said
from ragspan.evalsets.checks import refuse_errors
from ragspan.io.chunks import read_chunks
from ragspan.io.corpus import Corpus, read_corpus
from ragspan.io.evalset import EvalSet, read_eval_set
from ragspan.io.files import read_head
from ragspan.io.rows import ON_DUPLICATE, Skipped
from ragspan.io.runs.anchoring import Anchor
from ragspan.io.runs.docs import detect_run_format, read_doc_run
from ragspan.io.runs.spans import read_span_run, run_header
from ragspan.records.score import SkippedRows, SpanSummary
from ragspan.records.score_facts import Saturation
from ragspan.records.score_settings import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_TOKENIZER,
    Anchoring,
    ScoreSettings,
)
from ragspan.records.score_summary import ReportWarning
from ragspan.report.envelope import statement_of
from ragspan.report.render.score import repairs
from ragspan.retrieval.tokens import load_tokenizer
from ragspan.scoring.doc_scoring import evalset_judgments, read_and_score, score_doc_run, span_doc_projection
from ragspan.scoring.metrics.registry import Chars, Tokens, is_budget, parse_cutoff
from ragspan.scoring.report_body import doc_body, span_body
from ragspan.scoring.run_facts import SATURATION_WARN, budgets_over_documents
from ragspan.scoring.span_scoring import DEFAULT_KS, check_run_made_for, compute_span_report

__all__ = ["DEFAULT_MIN_COVERAGE", "DEFAULT_TOKENIZER", "MAX_K", "MAX_KS", "Anchoring",
           "ScoreSettings",
           "eval_set_body", "qrels_body", "run"]

log = logging.getLogger("ragspan")


BUDGET_GRID = tuple(Chars(250 * 2 ** i) for i in range(8))  # 250c, 500c, ..., 32000c


def parse_k(text: str) -> int:
    """A ``--k`` value: a count of results in [1, MAX_K], or a character budget ``2000c``
    (``registry.Chars``) or a token budget ``512t`` (``registry.Tokens``) in [1,
    MAX_CHARS_CUTOFF]; ValueError says what is wrong."""
    try:
        k = parse_cutoff(text.strip())
    except ValueError:
        raise ValueError("expected a count (5), a character budget (2000c) or a token budget "
                         f"(512t), got {text!r}") from None
    high = MAX_CHARS_CUTOFF if is_budget(k) else MAX_K
    if int(k) > high:
        what = ("character budget" if isinstance(k, Chars) else "token budget"
                if isinstance(k, Tokens) else "k")
        raise ValueError(f"{text} is past the largest {what}, {high}")
    return k




def check_coverage(covered: int, total: int, run: str, what: str, minimum: float) -> None:
    """A run with rows for none of the scored queries, or for fewer than ``minimum`` of
    them, is an InputError with the counts: a score of a run that missed the eval set is not
    a measurement (ids that differ, the wrong file). ``minimum`` 0 allows any."""
    if total and covered == 0:
        raise InputError(f"the run has a row for none of the {total} {what} (do its query ids "
                         "match?)", run)
    if total and covered / total < minimum:
        raise InputError(f"the run has rows for {covered} of the {total} {what} "
                         f"({covered / total:.0%}), below {setting('min-coverage')} {minimum:g}", run)


def refuse_budgets(ks: Sequence[int], why: str) -> None:
    """A character budget cuts span metrics only: at doc level it is a usage error."""
    budgets = [k for k in ks if is_budget(k)]
    if budgets:
        what = "a character budget" if isinstance(budgets[0], Chars) else "a token budget"
        raise UsageError(f"{setting('k')} {budgets[0]} is {what}, a cutoff of span metrics; "
                         f"{why}: give counts ({setting('k')} 10)")


def run(*, eval_set: str | None, run: str, settings: ScoreSettings, corpus: str | None = None,
        qrels: str | None = None, chunks: str | None = None) -> CommandResult:
    """Score ``run``: against ``qrels`` (doc level), or against ``eval_set`` (span level for
    a span run, doc level for a TREC or ``retrieved_ids`` run), with ``settings``
    (``records.score_settings.ScoreSettings``; no cutoffs: 5 and 10). ``chunks``: the run's
    chunk manifest, which lets the failure labels that need the chunking be decided (span
    level only). ``settings.budget_grid``: the character cutoffs ``BUDGET_GRID`` beside the
    cutoffs; None (the default) adds them to every span-level score, so that ``compare``
    can decide any change of the retrieval budget at equal budget; False leaves them out;
    True asks for them (an error at doc level). ``settings.on_duplicate``: ``error``
    refuses a JSON-lines row of the judgments or the run that has no ``id`` or repeats one;
    ``first`` keeps the first row of each id, skips the rest, and the report counts them
    (``summary.skipped_rows``, ``skipped_rows``)."""
    if not settings.ks:
        settings = msgspec.structs.replace(settings, ks=DEFAULT_KS)
    if settings.on_duplicate not in ON_DUPLICATE:
        raise UsageError(f"{setting('on-duplicate')} {settings.on_duplicate}: expected one of "
                         f"{', '.join(ON_DUPLICATE)}")
    skipped = (Skipped(), Skipped()) if settings.on_duplicate == "first" else None
    if settings.chroma_metrics and qrels is not None:
        raise UsageError(f"{setting('chroma-metrics')} are span metrics: give it with "
                         f"{setting('eval-set')} and a span run")
    if settings.budget_grid and qrels is not None:
        raise UsageError(f"{setting('budget-grid')} adds character cutoffs, which span metrics take: "
                         f"give it with {setting('eval-set')} and a span run")
    if (eval_set is None) == (qrels is None):
        raise UsageError(f"give exactly one of {setting('eval-set')} (span level) or "
                         f"{setting('qrels')} (doc level)")
    if chunks is not None and qrels is not None:
        raise UsageError(f"{setting('chunks')} labels span-level failures: give it with "
                         f"{setting('eval-set')} and a span run")
    if qrels is not None:
        refuse_budgets(settings.ks, f"{setting('qrels')} scores documents")

    def build() -> ReportBody:
        if qrels is not None:
            body = qrels_body(qrels, run, settings, skipped)
        else:
            body = eval_set_body(present(eval_set, setting("eval-set")), run, corpus, chunks,
                                 settings, skipped=skipped)
        if skipped is not None:
            body = with_skipped_rows(body, skipped,
                                     "qrels" if qrels is not None else "eval_set")
        return body

    return CommandResult(statement_of(with_warnings(build)))


def with_warnings(build: Callable[[], ReportBody]) -> ReportBody:
    """The body ``build`` makes, with every warning said while making it in
    ``summary.warnings`` (``base.warned``: code, count, example), whatever ``-q`` prints:
    a reader of the report sees what stderr said. ``compare``'s verification re-scores
    through this too, so a report's warnings are part of what it is checked against."""
    with recording() as got:
        body = build()
    warned = [ReportWarning(code=code, count=count, example=example)
              for code, count, example in got.merged()]
    if not warned:
        return body
    return replace(body, summary=msgspec.structs.replace(body.summary, warnings=warned))


def with_skipped_rows(body: ReportBody, skipped: tuple[Skipped, Skipped],
                      judgments: str) -> ReportBody:
    """``--on-duplicate first`` stated: ``parameters.on_duplicate``, the rows skipped per
    file in ``summary.skipped_rows`` (``judgments``: ``eval_set`` or ``qrels``), and one
    stderr line per file that had any."""
    files = {judgments: skipped[0], "run": skipped[1]}
    for role, tally in files.items():
        if tally.repeated_docs:
            log.warning(f"{setting('on-duplicate')} first: %s: %d repeated documents dropped from their "
                        "rows (each document's first place kept)", role.replace("_", " "),
                        tally.repeated_docs, extra=said("repeated_docs", tally.repeated_docs))
        if tally.total:
            log.warning(f"{setting('on-duplicate')} first: %s: %d rows skipped (%d repeating an earlier "
                        "row's id, %d without id; the first row of each id kept)",
                        role.replace("_", " "), tally.total, tally.repeated, tally.without_id,
                        extra=said("rows_skipped", tally.total))
    return replace(body, parameters=msgspec.structs.replace(body.parameters,
                                                            on_duplicate="first"),
                   summary=msgspec.structs.replace(body.summary, skipped_rows={
                       r: SkippedRows(repeated=t.repeated, without_id=t.without_id,
                                      repeated_docs=t.repeated_docs, lines=list(t.lines))
                       for r, t in files.items()}))


def qrels_body(qrels: str, run: str, settings: ScoreSettings,
                skipped: tuple[Skipped, Skipped] | None = None) -> ReportBody:
    """The report body of ``score --qrels``: the doc-level metrics of ``run``."""
    q, r, scores = read_and_score(qrels, run, settings.qrels_format, settings.run_format,
                                  settings.ks, settings.relevance_level, settings.judged_only,
                                  skipped)
    judged = len(scores.in_run) if not settings.judged_only else \
        len(scores.in_run) + scores.counts.judged_queries_without_run_row
    check_coverage(judged - scores.counts.judged_queries_without_run_row, judged, r.path,
                   "judged queries", settings.min_coverage)
    inputs = [InputRef("qrels", q.path, q.sha256), InputRef("run", r.path, r.sha256)]
    return doc_body(scores, inputs, InputRef("run", r.path, r.sha256), q.format, r.format)


def warn_saturation(saturation: Saturation | None) -> None:
    """One warning naming every cutoff at which the results cover most of the scoped
    documents of at least ``SATURATION_WARN`` of the queries (recall there is high by
    construction): said once, not once per cutoff of the budget grid."""
    if saturation is None:
        return
    hit = [(k, v) for k, v in saturation.by_k.items() if v.share >= SATURATION_WARN]
    if not hit:
        return
    (k, v), rest = hit[0], hit[1:]
    more = "".join(f", k = {k2} ({v2.queries} queries, {100 * v2.share:.0f}%)"
                   for k2, v2 in rest)
    log.warning("at k = %s the results cover at least %.0f%% of the scoped document (the "
                "corpus, for a question without doc_id) for %d queries (%.0f%%)%s: recall "
                "there is high by construction, not by ranking", k,
                100 * saturation.threshold, v.queries, 100 * v.share,
                f"; so too at {more[2:]}" if more else "",
                extra=said("saturated", max(x.queries for _, x in hit)))


def warn_whole_documents(over: list[tuple[str, int, int]], wide: bool = False) -> None:
    """One warning naming each character budget that holds the documents of at least
    ``SATURATION_WARN`` of the counted queries whole (``run_facts.budgets_over_documents``):
    there a retriever can return all of them. ``wide``: corpus-wide queries were counted
    by their gold documents together, and the warning says so."""
    said_at = [(k, fits, scoped) for k, fits, scoped in over if fits >= SATURATION_WARN * scoped]
    if not said_at:
        return
    scoped = said_at[0][2]
    what = ("the whole named document (for a question without one, all its gold documents "
            "together)" if wide else "the whole named document")
    at = ", ".join(f"k = {k} ({fits} of {scoped} queries, {100 * fits / scoped:.0f}%)"
                   for k, fits, _ in said_at)
    log.warning("the budget holds %s at %s: grounding there says nothing of ranking", what, at,
                extra=said("budget_over_document", said_at[-1][1]))


def _doc_run_body(evalset: EvalSet, run: str, run_format: str, settings: ScoreSettings,
                  doc_only: bool, skipped: Skipped | None = None) -> ReportBody:
    """The doc-level report of a doc run (or of a span run's documents, ``doc_only``: the
    eval set judges documents only) against the eval set's judgments."""
    ks = settings.ks
    refuse_budgets(ks, "this is a doc-level run" if not doc_only
                   else "this eval set has doc-level judgments only")
    r = read_doc_run(run, run_format, top=max(ks), skipped=skipped)
    scores = score_doc_run(r, evalset_judgments(evalset), ks, settings.relevance_level,
                           settings.judged_only).without_judged()
    missing = scores.counts.judged_queries_without_run_row
    total = len(scores.in_run) + (missing if settings.judged_only else 0)
    check_coverage(total - missing, total, r.path, "queries of the eval set",
                   settings.min_coverage)
    inputs = [InputRef("eval_set", evalset.path, evalset.sha256),
              InputRef("run", r.path, r.sha256)]
    return doc_body(scores, inputs, InputRef("run", r.path, r.sha256), "eval_set", r.format)


def eval_set_body(eval_set: str, run: str, corpus: str | None, chunks: str | None,
                  settings: ScoreSettings,
                  read: tuple[EvalSet, Corpus | None] | None = None,
                  skipped: tuple[Skipped, Skipped] | None = None) -> ReportBody:
    """The report body of ``score --eval-set``: span level for a span run (with the
    doc-level view and, given ``chunks``, every failure label; ``settings.budget_grid`` as
    ``run`` says), doc level otherwise (``sweep`` scores its configurations through this
    too, with ``read``: the eval set and corpus it read once from those paths).
    ``skipped``: the eval set's and the run's tallies under ``--on-duplicate first``."""
    evalset = read[0] if read is not None else \
        read_eval_set(eval_set, None if skipped is None else skipped[0])
    run_skipped = None if skipped is None else skipped[1]
    # what validate calls an error about the gold itself (spans listed twice, overlapping):
    # the rest (inside the documents, texts, provenance) is checked against the corpus
    refuse_errors(evalset, None)
    run_format = settings.run_format
    if run_format == "auto":
        run_format = detect_run_format(read_head(run), run)
    doc_only = run_format == "span" and not any(q.gold_spans for q in evalset.queries) \
        and any(q.relevance for q in evalset.queries)
    if doc_only and chunks is not None:
        raise UsageError(f"{setting('chunks')} labels span-level failures: this eval set has doc-level "
                         "judgments only (no gold spans)")
    if doc_only:  # judgments only (as import beir writes): the span run's doc-level view
        log.info("the eval set has doc-level judgments only: scoring the run's documents")
        run_format = "doc"
    if run_format != "span" and chunks is not None:
        raise UsageError(f"{setting('chunks')} labels span-level failures: the run is a doc-level run")
    if run_format != "span":
        if settings.budget_grid:
            raise UsageError(f"{setting('budget-grid')} adds character cutoffs, which span metrics take: "
                             "this is a doc-level run")
        return _doc_run_body(evalset, run, "span" if doc_only else run_format, settings,
                             doc_only, run_skipped)
    if settings.judged_only:
        raise UsageError(f"{setting('judged-only')} applies to doc-level scoring (qrels or a doc run): a "
                         "span report scores every query of the eval set, so its doc-level "
                         "view does too")
    if settings.budget_grid is not False:
        settings = msgspec.structs.replace(
            settings, ks=tuple(dict.fromkeys((*settings.ks, *BUDGET_GRID))))
    corp = read[1] if read is not None else read_corpus(corpus) if corpus else None
    return _span_run_body(evalset, run, corp, chunks, settings, run_skipped)


def _span_run_body(evalset: EvalSet, run: str, corp: Corpus | None, chunks: str | None,
                   settings: ScoreSettings, skipped: Skipped | None = None) -> ReportBody:
    """The span-level report of a span run: what the run was made from checked, its texts
    placed, scored at ``settings.ks`` (with the doc-level view at the count cutoffs)."""
    ks = settings.ks
    # a text without doc_id is placed in its query's scope document (never its gold's)
    placing = {} if settings.anchoring is None else msgspec.structs.asdict(settings.anchoring)
    anchor = Anchor(corp, {q.id: q.doc_id for q in evalset.queries}, **placing)
    # what the run says it was made from, checked before its texts are placed
    for changed, line in check_run_made_for(evalset, run_header(run), run, corp):
        log.warning("%s", line, extra=said("eval_set_changed", changed))
    span_run = read_span_run(run, anchor, skipped=skipped)
    manifest = read_chunks(chunks) if chunks else None
    tokens = (load_tokenizer(settings.tokenizer) if corp is not None
              and any(isinstance(k, Tokens) for k in ks) else None)
    report = compute_span_report(evalset, span_run, corp, ks, settings.tau, manifest,
                                 settings.chroma_metrics, tokens)
    check_coverage(int(report.in_run.sum()), len(evalset.queries), span_run.path,
                   "queries of the eval set", settings.min_coverage)
    # doc metrics at the counts and the character cutoffs (a document within N characters)
    cut = [k for k in ks if not isinstance(k, Tokens)]
    doc_view = span_doc_projection(report, cut, settings.relevance_level, False) \
        if cut else None
    warn_saturation(report.saturation)
    if corp is not None:
        warn_whole_documents(*budgets_over_documents(evalset, corp, ks))
    body = span_body(report, doc_view)
    summary = body.summary
    assert isinstance(summary, SpanSummary)  # span_body's
    for code, count, line in repairs(summary):
        log.warning("%s", line, extra=said(code, count))
    log.info(
        "scored %d queries (%d without a run row, %d run rows without a query)",
        len(evalset.queries), int((~report.in_run).sum()), len(report.unmatched_run_ids),
    )
    return body
