"""Span scoring: eval set + span run (+ corpus) -> per-query span metrics (``SpanReport``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspan.base.errors import InputError, UsageError
from ragspan.base.facts import FusionSources
from ragspan.base.warned import said
from ragspan.io.chunks import ChunkManifest, chunks_outside_documents
from ragspan.io.corpus import Corpus, doc_id_hint
from ragspan.io.evalset import EvalSet, corpus_drift, query_digests
from ragspan.io.runs.anchoring import UNPLACED_DOC
from ragspan.io.runs.spans import SpanList, SpanRun
from ragspan.records.score_facts import ChunkRecall, OffScope, Reordering, Saturation
from ragspan.scoring import spans as sp
from ragspan.scoring.metrics.failures import ChunkColumns, Labels, label_failures, span_facts
from ragspan.scoring.metrics.registry import (
    CHROMA_METRICS,
    SPAN_METRICS,
    Tokens,
    format_name,
    parse_name,
    sorted_cutoffs,
)
from ragspan.scoring.metrics.span import GoldColumns, RankedColumns
from ragspan.scoring.metrics.span_scores import SpanScores, score_spans
from ragspan.scoring.run_facts import chunk_recall, fusion_sources, off_scope, reordering, saturation
from ragspan.scoring.steps import StepDetails, step_details
from ragspan.scoring.token_counts import TokenizerLike, with_token_counts

log = logging.getLogger("ragspan")

DEFAULT_KS = (5, 10)


DEFAULT_TAU = 0.5




@dataclass
class DocCodes:
    """Dense integer codes for document ids (for array arithmetic)."""

    codes: dict[str, int] = field(default_factory=dict)

    def code(self, doc_id: str) -> int:
        c = self.codes.get(doc_id)
        if c is None:
            c = self.codes[doc_id] = len(self.codes)
        return c

    def many(self, doc_ids: Sequence[str]) -> np.ndarray:
        get = self.code
        return np.fromiter((get(d) for d in doc_ids), dtype=np.int64, count=len(doc_ids))


def gold_columns(evalset: EvalSet, codes: DocCodes) -> GoldColumns:
    q, d, s, e = [], [], [], []
    for i, query in enumerate(evalset.queries):
        if not query.gold_spans:
            raise InputError(f"query '{query.id}' has no gold spans", evalset.path, query.line)
        for span in query.gold_spans:
            q.append(i)
            d.append(codes.code(span.doc_id))
            s.append(span.start)
            e.append(span.end)
    return GoldColumns(
        query=np.asarray(q, dtype=np.int64),
        doc=np.asarray(d, dtype=np.int64),
        start=np.asarray(s, dtype=np.int64),
        end=np.asarray(e, dtype=np.int64),
        match_any=np.asarray([x.match == "any" for x in evalset.queries], dtype=bool),
        n_queries=len(evalset.queries),
    )


def ranked_columns(spans: SpanList, row_to_query: np.ndarray, codes: DocCodes,
                   n_queries: int = 0) -> RankedColumns:
    """Columns of the rows that map to an eval query (``row_to_query[row] >= 0``); with
    steps, each entry's step and rank in it, and each of the ``n_queries`` queries' step
    count (a query without a row: one empty step)."""
    counts = np.diff(spans.offsets)
    row_of_span = np.repeat(np.arange(len(spans.ids)), counts)
    rank = np.arange(spans.start.size) - np.repeat(spans.offsets[:-1], counts)
    query = row_to_query[row_of_span]
    sel = query >= 0
    doc = codes.many(spans.doc_names)[spans.doc_code] if spans.doc_code.size else spans.doc_code
    layout = spans.steps
    if layout is None:
        return RankedColumns(query[sel], doc[sel], spans.start[sel], spans.end[sel], rank[sel],
                             np.flatnonzero(sel))
    n = max(n_queries, int(row_to_query.max(initial=-1)) + 1)
    query_steps = np.ones(n, dtype=np.int64)
    mapped = row_to_query >= 0
    query_steps[row_to_query[mapped]] = layout.row_steps[mapped]
    return RankedColumns(query[sel], doc[sel], spans.start[sel], spans.end[sel], rank[sel],
                         np.flatnonzero(sel), step=layout.step[sel],
                         step_rank=layout.step_rank[sel], query_steps=query_steps)


def check_against_corpus(evalset: EvalSet, run: SpanRun, corpus: Corpus) -> None:
    """Every span must name a corpus document and end inside it; what the eval set recorded
    about the documents must hold (``io.span_anchors.drift``: each document's sha256 in its
    ``_header``, unless every gold span in it is anchored and intact; each span's anchor) and
    each gold span's ``text``. Drift is an InputError that says "corpus drifted" and names
    the command that repairs it."""
    drifted, intact = corpus_drift(evalset, corpus)
    if drifted:
        line = next((q.line for q in evalset.queries if q.id == drifted[0].query), 1)
        more = f" ({len(drifted)} documents drifted)" if len(drifted) > 1 else ""
        raise InputError(drifted[0].message + more, evalset.path, line)
    if intact:
        log.warning("%d documents changed since the eval set was made (%s); the gold spans in "
                    "them are intact: each anchored span still matches its anchor",
                    len(intact), ", ".join(intact[:5]) + (" ..." if len(intact) > 5 else ""),
                    extra=said("documents_changed", len(intact)))
    lengths = corpus.lengths()
    for query in evalset.queries:
        for i, span in enumerate(query.gold_spans):
            _check_one(span.doc_id, span.end, lengths, evalset.path, query.line, "gold span")
            if span.text is not None and corpus.text(span.doc_id)[span.start:span.end] != span.text:
                raise InputError(f"gold_spans[{i}]: '{span.doc_id}'[{span.start}:{span.end}] "
                                 f"does not slice back to its text {span.text[:40]!r}",
                                 evalset.path, query.line)
    if run.unplaced:  # the results kept at their ranks though their texts were not placed
        lengths = {**lengths, UNPLACED_DOC: len(run.unplaced)}
    for stage in (run.spans, run.first_stage):
        if stage is None:
            continue
        doc_len = np.fromiter((lengths.get(d, -1) for d in stage.doc_id), dtype=np.int64,
                              count=len(stage.doc_id))
        bad = np.flatnonzero((doc_len < 0) | (stage.end > doc_len))
        if bad.size:
            i = int(bad[0])
            row = int(np.searchsorted(stage.offsets, i, side="right")) - 1
            _check_one(stage.doc_id[i], int(stage.end[i]), lengths, run.path, run.lines[row],
                       f"retrieved span {i - int(stage.offsets[row])}")


def check_run_made_for(evalset: EvalSet, header: dict[str, Any] | None, path: str,
                       corpus: Corpus | None) -> list[tuple[int, str]]:
    """What the run's header says it was made from, against the files given: another corpus
    is an InputError naming both digests (documents edited since the run was made: its
    offsets point elsewhere); questions whose text differs from the ones the run answered
    are an InputError naming the count and the first; questions whose answers only changed
    (gold spans, grades) are a warning naming the count, returned with the count. A run without a header
    (``header`` None), or whose header records none of this, is not checked; ``path`` is
    the run's file, named in an error."""
    header = header or {}
    made_on = header.get("corpus_sha256")
    if corpus is not None and isinstance(made_on, str) and made_on != corpus.sha256:
        drifted, _ = corpus_drift(evalset, corpus)
        fix = ("the eval set's gold spans were made on the corpus before the edit too: carry "
               "them over with `ragspan migrate` (docs/datasets.md), then run the retriever "
               "again on this corpus" if drifted else "run the retriever again")
        raise InputError(f"the run was made on another corpus (sha256 {made_on[:12]}; this "
                         f"one is {corpus.sha256[:12]}): its documents were edited since, so "
                         f"its offsets may point at other text; {fix}", path)
    recorded = header.get("queries")
    if not isinstance(recorded, dict) or header.get("eval_set_sha256") == evalset.sha256:
        return []
    now = query_digests(evalset)
    asked = [q for q, d in recorded.items() if q in now and isinstance(d, list) and d
             and d[0] != now[q][0]]
    if asked:
        raise InputError(f"the run was made for another version of the eval set: {len(asked)} "
                         f"of its questions differ (e.g. '{asked[0]}'), so it answered other "
                         "questions; run the retriever again", path)
    judged = [q for q, d in recorded.items() if q in now and isinstance(d, list)
              and len(d) > 1 and d[1] != now[q][1]]
    if not judged:
        return []
    return [(len(judged), f"the eval set changed since the run was made: {len(judged)} of "
             f"its questions have other gold spans now (e.g. '{judged[0]}'); the questions "
             "are the same")]


def _check_one(doc_id: str, end: int, lengths: dict[str, int], path: str, line: int,
               what: str) -> None:
    if doc_id not in lengths:
        raise InputError(f"{what} names doc_id '{doc_id}', absent from the corpus"
                         f"{doc_id_hint(doc_id, lengths)}", path, line)
    if end > lengths[doc_id]:
        raise InputError(
            f"{what} end={end} is past the end of '{doc_id}' ({lengths[doc_id]} characters)",
            path, line,
        )


def chunk_columns(manifest: ChunkManifest, codes: DocCodes) -> ChunkColumns:
    chunks = manifest.chunks
    return ChunkColumns(codes.many([c.doc_id for c in chunks]),
                        np.fromiter((c.start for c in chunks), np.int64, len(chunks)),
                        np.fromiter((c.end for c in chunks), np.int64, len(chunks)),
                        tuple(c.chunk_id for c in chunks))


def check_manifest(manifest: ChunkManifest, run: SpanRun, corpus: Corpus | None) -> None:
    """The manifest must be the run's chunking (same pipeline digest when both record one)
    and lie inside the corpus's documents when a corpus is given."""
    made = (manifest.header or {}).get("config_digest")
    used = (run.config or {}).get("config_digest")
    if made and used and made != used:
        raise InputError(f"the chunk manifest was made by pipeline {made[:12]}, the run by "
                         f"{used[:12]}: it is not the run's chunking", manifest.path)
    if corpus is None:
        return
    chunks_outside_documents(manifest, corpus)


@dataclass(frozen=True)
class SpanReport:
    """Everything the span scoring computed (``report_body.span_body`` makes it a report)."""

    evalset: EvalSet
    run: SpanRun
    corpus: Corpus | None
    ks: tuple[int, ...]
    tau: float
    scores: SpanScores
    first_stage: SpanScores | None
    in_run: np.ndarray
    unmatched_run_ids: list[str]
    labels: Labels
    ranked: RankedColumns
    manifest: ChunkManifest | None = None
    chroma: bool = False  # Chroma's chunking metrics computed (``score --chroma-metrics``)
    precision_omega: np.ndarray | None = None  # per query, with chroma and a manifest
    saturation: Saturation | None = None  # with a corpus and scoped queries
    off_scope: OffScope | None = None  # results outside the query's document
    reordering: Reordering | None = None  # with a first stage
    chunk_recall: ChunkRecall | None = None  # with a chunk manifest
    fusion: FusionSources | None = None  # items naming their retrievers
    tokenizer: str | None = None  # what the token budgets counted in (None: no token budget)
    steps: StepDetails | None = None  # a run with steps: what each step found

    def metric_names(self) -> list[str]:
        bases = SPAN_METRICS + (CHROMA_METRICS if self.chroma else ())
        names = [format_name(b, k) for b in bases for k in self.ks]
        if self.first_stage is not None:
            names += [format_name(b, k, True) for b in bases for k in self.ks]
        return names

    def values(self) -> dict[str, np.ndarray]:
        out = dict(self.scores.values)
        if self.first_stage is not None:
            for name, arr in self.first_stage.values.items():
                parsed = parse_name(name)
                out[format_name(parsed.base, parsed.k, True)] = arr
        return out


def _map_rows(evalset: EvalSet, spans: SpanList) -> tuple[np.ndarray, list[str]]:
    index = {q.id: i for i, q in enumerate(evalset.queries)}
    row_to_query = np.fromiter((index.get(r, -1) for r in spans.ids), dtype=np.int64,
                               count=len(spans.ids))
    unmatched = [r for r, i in zip(spans.ids, row_to_query) if i < 0]
    return row_to_query, unmatched


def compute_span_report(
    evalset: EvalSet,
    run: SpanRun,
    corpus: Corpus | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    tau: float = DEFAULT_TAU,
    manifest: ChunkManifest | None = None,
    chroma: bool = False,
    tokenizer: TokenizerLike | None = None,
) -> SpanReport:
    """Score a span run against an eval set (see ``metrics.span`` for the conventions), and
    label every query failing complete grounding (``metrics.failures``; the two labels that
    need the chunking only with ``manifest``); ``chroma``: also Chroma's chunking metrics.
    A token budget among ``ks`` measures the results in ``tokenizer``'s tokens, which needs
    the corpus (their texts)."""
    token_budgets = any(isinstance(k, Tokens) for k in ks)
    if token_budgets and (corpus is None or tokenizer is None):
        raise UsageError("a token budget (--k 512t) counts the tokens of the results' texts: "
                         "give --corpus")
    if corpus is not None:
        check_against_corpus(evalset, run, corpus)
    if manifest is not None:
        check_manifest(manifest, run, corpus)
    ks = sorted_cutoffs(ks)
    codes = DocCodes()
    gold = gold_columns(evalset, codes)
    row_to_query, unmatched = _map_rows(evalset, run.spans)
    in_run = np.zeros(len(evalset.queries), dtype=bool)
    in_run[row_to_query[row_to_query >= 0]] = True
    ranked = ranked_columns(run.spans, row_to_query, codes, len(evalset.queries))
    first_ranked = None if run.first_stage is None else \
        ranked_columns(run.first_stage, row_to_query, codes)
    if token_budgets and corpus is not None and tokenizer is not None:  # (checked above)
        names = list(codes.codes)
        extra = {UNPLACED_DOC: run.unplaced} if run.unplaced else {}
        ranked = with_token_counts(ranked, corpus, names, tokenizer, extra)
        if first_ranked is not None:
            first_ranked = with_token_counts(first_ranked, corpus, names, tokenizer, extra)
    try:
        scores = score_spans(gold, ranked, ks, tau, chroma)
        first = None
        if first_ranked is not None:
            first = score_spans(gold, first_ranked, ks, tau, chroma)
    except OverflowError as exc:  # offsets x groups beyond one int64 line (spans.make_line)
        raise InputError(f"offsets too large to score together: {exc}", run.path) from None
    chunks = None if manifest is None else chunk_columns(manifest, codes)
    facts = span_facts(gold, ranked, chunks)
    grounded = {k: scores.values[format_name("complete_grounding", k)] >= 1.0 for k in ks}
    labels = label_failures(gold, facts, scores.gold_fraction, grounded, tau, scores.slots)
    omega = precision_omega(gold, chunks) if chroma and chunks is not None else None
    sat = saturation(evalset, corpus, ranked, codes.code, ks) if corpus is not None else None
    c_recall = chunk_recall(gold, ranked, chunks, facts.chunk_pairs, ks, first_ranked) \
        if chunks is not None and facts.chunk_pairs is not None else None
    return SpanReport(evalset, run, corpus, ks, tau, scores, first, in_run, unmatched, labels,
                      ranked, manifest, chroma, omega, sat, off_scope(evalset, ranked, codes.code, ks),
                      reordering(run), c_recall,
                      fusion_sources(ranked, run.spans, facts.pool_pairs, ks),
                      tokenizer.name if token_budgets and tokenizer is not None else None,
                      step_details(gold, ranked, tau, in_run))


def precision_omega(gold: GoldColumns, chunks: ChunkColumns) -> np.ndarray:
    """Chroma's precision_Ω per query: the IoU of an oracle that retrieves every chunk of the
    manifest intersecting one of the query's references, as Chroma's ``_full_precision_score``
    computes it: |∪(c ∩ g)| / |(∪ of those chunks) ∪ (the reference characters they leave
    uncovered)| -- a union throughout, so overlapping chunks (and references) count once. A
    chunk meets a reference when they share a character (Chroma also counts a chunk that only
    touches one; measured -0.03 to -0.8 points on its own data, docs/results.md). A ceiling of
    the chunking that needs no model; 0 for a query without references."""
    n = gold.n_queries
    out = np.zeros(n)
    by_doc: dict[int, np.ndarray] = {}
    order = np.argsort(chunks.doc, kind="stable")
    docs, first = np.unique(chunks.doc[order], return_index=True)
    for d, part in zip(docs.tolist(), np.split(order, first[1:])):
        by_doc[d] = part
    g_order = np.argsort(gold.query, kind="stable")
    queries, g_first = np.unique(gold.query[g_order], return_index=True)
    for q, idx in zip(queries.tolist(), np.split(g_order, g_first[1:])):
        total = numerator = 0
        for d in np.unique(gold.doc[idx]).tolist():
            g = idx[gold.doc[idx] == d]
            gs, ge = gold.start[g], gold.end[g]
            cand = by_doc.get(d, np.zeros(0, dtype=np.int64))
            s, e = chunks.start[cand], chunks.end[cand]
            hit = ((s[:, None] < ge[None, :]) & (e[:, None] > gs[None, :])).any(axis=1)
            cu = sp.union(s[hit], e[hit])
            gu = sp.union(gs, ge)
            inside = int(sp.covered(cu, gu.start, gu.end).sum())
            numerator += inside
            total += int(cu.lengths.sum()) + int(gu.lengths.sum()) - inside  # |∪c ∪ ∪g|
        den = total
        out[q] = numerator / den if den else 0.0
    return out
