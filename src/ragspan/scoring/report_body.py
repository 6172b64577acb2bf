"""A score report's body, assembled once from the computed scores: ``span_body`` (span
metrics, plus the doc-level view of the same queries) and ``doc_body`` (doc-level metrics).
Reading a report back is the gate's (``ragspan.gate.inputs``): nothing here reads a report."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType, structs

from ragspan.base.facts import FusionSources
from ragspan.base.ids import normalization_twins, twins_note
from ragspan.base.records import InputRef, ReportBody
from ragspan.io.chunks import ChunkManifest
from ragspan.io.evalset import EvalSet
from ragspan.records.envelope import encode
from ragspan.records.score import (
    Anchoring,
    CharsSpread,
    DocSummary,
    FailureLabels,
    Fusion,
    MacroMean,
    ScoreParameters,
    SpanSummary,
    Twins,
)
from ragspan.records.score_columns import DocColumns, PlacedItem, Questions, Slice
from ragspan.records.score_facts import Percentiles, RunLatency
from ragspan.records.score_rows import Placed
from ragspan.records.score_summary import Documents
from ragspan.records.validate import ScoreChunking
from ragspan.scoring.chunking import chunking_summary
from ragspan.scoring.doc_scoring import DocScores
from ragspan.scoring.metrics.failures import Labels
from ragspan.scoring.metrics.registry import FAILURE_LEVERS, cutoff_json, format_name, is_budget
from ragspan.scoring.report_columns import span_columns
from ragspan.scoring.span_scoring import SpanReport

ANCHOR_SETTINGS = ("align", "on_ambiguous", "unplaced", "threshold")

MAX_LISTED_IDS = 100


def _mean(arr: np.ndarray) -> float:
    return float(arr.mean()) if arr.size else 0.0


def distribution(arr: np.ndarray) -> CharsSpread:
    """Mean, median and 90th percentile (linear interpolation) of per-query values."""
    if arr.size == 0:
        return CharsSpread(mean=0.0, median=0.0, p90=0.0)
    return CharsSpread(mean=float(arr.mean()), median=float(np.median(arr)),
                       p90=float(np.percentile(arr, 90)))


def slices(evalset: EvalSet, values: dict[str, np.ndarray],
           labels: Labels | None = None) -> dict[str, dict[str, Slice]]:
    """Per tag key, per tag value: query count, the mean of every metric, and (with
    ``labels``) the failure labels counted per k."""
    out: dict[str, dict[str, Slice]] = {}
    keys = sorted({k for q in evalset.queries for k in q.tags})
    for key in keys:
        groups: dict[str, list[int]] = {}
        for i, q in enumerate(evalset.queries):
            if key in q.tags:
                groups.setdefault(q.tags[key], []).append(i)
        out[key] = {}
        for value, idx in sorted(groups.items()):
            rows = np.asarray(idx)
            out[key][value] = Slice(
                count=len(idx), metrics={n: _mean(arr[rows]) for n, arr in values.items()},
                failure_labels=UNSET if labels is None
                else {str(k): labels.counts(k, rows) for k in labels.ks})
    return out


MACRO_TAG = "subset"


def macro_mean(evalset: EvalSet, cut: dict[str, dict[str, Slice]]) -> MacroMean | None:
    """The mean over subsets of each metric's mean per subset, when the eval set's header
    lists several ``subsets`` and its queries are tagged with them (``import
    legalbench-rag``): the benchmark's own headline weighting (each subset counts the same,
    whatever its number of tests), beside ``summary.metrics``, the mean over queries."""
    listed = (evalset.header or {}).get("subsets")
    groups = cut.get(MACRO_TAG, {})
    if not isinstance(listed, list) or len(listed) < 2 or len(groups) < 2:
        return None
    names = next(iter(groups.values())).metrics
    return MacroMean(over=MACRO_TAG, groups=sorted(groups),
                     metrics={n: float(np.mean([g.metrics[n] for g in groups.values()]))
                              for n in names})


def documents_summary(report: SpanReport) -> Documents:
    """How many documents the corpus holds (None when scored without ``--corpus``) and how
    many the eval set asks about (its questions' ``doc_id``, else the documents of their gold
    spans: a question without ``doc_id`` adds the documents it asks about, not one made-up
    document for them together): what the gate's default sampling unit is decided from."""
    asked: set[str] = set()
    for q in report.evalset.queries:
        asked.update([str(q.doc_id)] if q.doc_id else [s.doc_id for s in q.gold_spans])
    return Documents(corpus=len(report.corpus) if report.corpus is not None else None,
                     asked=len(asked))


def failure_summary(report: SpanReport) -> FailureLabels:
    """The failure labels counted per k, the lever each points at, the labels no manifest
    let decide, and the depth of the ranked pool (the longest run row)."""
    labels = report.labels
    offsets = report.run.spans.offsets
    return FailureLabels(by_k={str(k): labels.counts(k) for k in labels.ks},
                         levers=dict(FAILURE_LEVERS), undecided=list(labels.undecided),
                         pool_depth=int(np.diff(offsets).max(initial=0)))


def inputs_of(report: SpanReport) -> list[InputRef]:
    refs = [InputRef("eval_set", report.evalset.path, report.evalset.sha256),
            InputRef("run", report.run.path, report.run.sha256)]
    if report.corpus is not None:
        refs.append(InputRef("corpus", report.corpus.path, report.corpus.sha256))
    if report.manifest is not None:
        refs.append(InputRef("chunks", report.manifest.path, report.manifest.sha256))
    return refs


def _doc_metrics(doc: DocScores, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The doc-level metric names and, per query of ``ids`` (the eval set's order), the row
    of ``doc``'s values (-1 when the doc view left the query out)."""
    pos = {q: i for i, q in enumerate(doc.qids)}
    return doc.metric_names(), np.fromiter((pos.get(q, -1) for q in ids), dtype=np.int64,
                                           count=len(ids))


def span_body(report: SpanReport, doc: DocScores | None = None) -> ReportBody:
    """The ``score.span`` report: the span metrics of ``report`` and, when given, the
    doc-level view ``doc`` of the same queries (``doc_scoring.span_doc_projection``)."""
    values = report.values()
    metrics = {n: _mean(values[n]) for n in report.metric_names()}
    columns = span_columns(report, values)
    if doc is not None:
        doc_names, where = _doc_metrics(doc, [q.id for q in report.evalset.queries])
        if (where < 0).any():
            raise RuntimeError("internal error: the doc-level view left out query "
                               f"'{report.evalset.queries[int(np.argmin(where))].id}'")
        metrics.update({n: float(doc.values[n].mean()) if doc.qids else 0.0
                        for n in doc_names})
        columns.metrics.update({n: np.asarray(doc.values[n], dtype=np.float64)[where].tolist()
                                for n in doc_names})
    cut = slices(report.evalset, values, report.labels)
    columns = structs.replace(
        columns, placed=_placed(report), slices=cut,
        step_chars=UNSET if report.steps is None else report.steps.step_chars,
        gold=columns.gold if report.steps is None else structs.replace(
            columns.gold, step=[s for q in report.steps.gold_steps for s in q]),
        run_rows_without_query=report.unmatched_run_ids[:MAX_LISTED_IDS])
    return ReportBody(kind="score.span",
                      subject=(InputRef("run", report.run.path, report.run.sha256),),
                      inputs=tuple(inputs_of(report)),
                      parameters=_parameters(report, doc),
                      summary=_summary(report, values, metrics, cut),
                      details=columns)


def _summary(report: SpanReport, values: dict[str, np.ndarray], metrics: dict[str, float],
             cut: dict[str, dict[str, Slice]]) -> SpanSummary:
    """``summary`` of a span report: the counts, the metric means, the characters retrieved,
    and a section per run fact found."""
    placement = report.run.placement
    missing = [q.id for q, present in zip(report.evalset.queries, report.in_run.tolist())
               if not present]
    twins = twins_note(normalization_twins(missing, report.unmatched_run_ids), "run ids")
    macro = macro_mean(report.evalset, cut)
    fusion = report.fusion
    return SpanSummary(
        queries=len(report.evalset.queries),
        queries_without_run_row=int((~report.in_run).sum()),
        run_rows_without_query=len(report.unmatched_run_ids),
        metrics=metrics,
        retrieved_chars={str(k): distribution(values[format_name("retrieved_chars", k)])
                         for k in report.ks},
        placement=UNSET if placement is None
        else {k: v for k, v in encode(placement).items() if k not in ANCHOR_SETTINGS},
        # taken as given: nothing checked them against the corpus
        results_without_text=report.run.untexted or UNSET,
        saturation=report.saturation or UNSET, off_scope=report.off_scope or UNSET,
        first_stage=report.reordering or UNSET,
        fusion=UNSET if fusion is None else fusion_record(fusion),
        steps=UNSET if report.steps is None else report.steps.summary,
        failure_labels=failure_summary(report), documents=documents_summary(report),
        ids_differing_by_normalization=UNSET if twins is None
        else Twins(count=twins.count, example=list(twins.example)),
        chunking=UNSET if report.manifest is None
        else _chunking(report, report.manifest, metrics),
        latency_ms=UNSET if report.run.latency_ms is None
        else _latency(report.run.latency_ms, report.run.stage_ms),
        macro_mean=UNSET if macro is None else macro)


def _placed(report: SpanReport) -> list[PlacedItem] | UnsetType:
    """A run that carried texts: each question's placed items, in the questions' order
    (``details.placed``)."""
    if report.run.placement is None:
        return UNSET
    records = report.run.placement_records
    return [PlacedItem(question=i, **{f: getattr(p, f) for f in Placed.__struct_fields__})
            for i, q in enumerate(report.evalset.queries) for p in records.get(q.id, ())]


def _parameters(report: SpanReport, doc: DocScores | None) -> ScoreParameters:
    """What a span score was computed with: its cutoffs, the grounding threshold, whether
    the run had a first stage, the placement rule of its texts, the run's pipeline
    configuration, a chunk manifest, Chroma's metrics, the tokenizer its token budgets
    counted in, and the relevance level of its doc-level view."""
    placement = report.run.placement
    return ScoreParameters(
        k=[cutoff_json(k) for k in report.ks], grounding_threshold=report.tau, level="span",
        first_stage=report.first_stage is not None,
        run_config=UNSET if report.run.config is None else report.run.config,
        chroma_metrics=True if report.chroma else UNSET,
        tokenizer=UNSET if report.tokenizer is None else report.tokenizer,
        relevance_level=UNSET if doc is None else doc.level,
        anchoring=UNSET if placement is None else msgspec.convert(
            {k: getattr(placement, k) for k in ANCHOR_SETTINGS}, Anchoring),
        chunks=True if report.manifest is not None else UNSET)


def _chunking(report: SpanReport, manifest: ChunkManifest, metrics: dict[str, float]
              ) -> ScoreChunking:
    """``summary.chunking``: the chunking summary with a ceiling per count cutoff, chunk
    recall with its ceiling, and Chroma's precision_omega when computed."""
    counts = tuple(k for k in report.ks if not is_budget(k))
    out = chunking_summary(report.evalset, manifest, counts, report.tau,
                           {k: metrics[format_name("precision", k)] for k in counts})
    return structs.replace(
        out,
        # relevant chunks retrieved, with the ceiling
        chunk_recall=UNSET if report.chunk_recall is None else report.chunk_recall,
        # Chroma's oracle IoU of this chunking
        precision_omega=UNSET if report.precision_omega is None
        else _mean(report.precision_omega))


def _latency(latency_ms: np.ndarray, stage_ms: dict[str, np.ndarray] | None) -> RunLatency:
    """``summary.latency_ms``: p50 / p95 over the rows that recorded a time and, per stage,
    over the rows it ran for."""
    lat = latency_ms[np.isfinite(latency_ms)]
    return RunLatency(
        rows=int(lat.size), p50=float(np.percentile(lat, 50)),
        p95=float(np.percentile(lat, 95)),
        stages=UNSET if stage_ms is None else {
            s: Percentiles(float(np.percentile(v[np.isfinite(v)], 50)),
                           float(np.percentile(v[np.isfinite(v)], 95)))
            for s, v in stage_ms.items()})


def doc_body(scores: DocScores, inputs: Sequence[InputRef], subject: InputRef,
             qrels_format: str, run_format: str) -> ReportBody:
    """The ``score.doc`` report of doc-level scores."""
    names = scores.metric_names()
    n = len(scores.qids)
    counts = scores.counts
    twins = counts.ids_differing_by_normalization
    summary = DocSummary(
        queries=n, metrics={m: float(scores.values[m].mean()) if n else 0.0 for m in names},
        queries_without_judgments=counts.queries_without_judgments,
        judged_queries_without_run_row=counts.judged_queries_without_run_row,
        run_rows_for_unjudged_queries=counts.run_rows_for_unjudged_queries,
        queries_without_relevant=counts.queries_without_relevant,
        ids_differing_by_normalization=UNSET if twins is None
        else Twins(count=twins.count, example=list(twins.example)))
    columns = DocColumns(
        questions=Questions(id=list(scores.qids),
                            in_run=np.asarray(scores.in_run, dtype=bool).tolist()),
        metrics={m: np.asarray(scores.values[m], dtype=np.float64).tolist() for m in names})
    parameters = ScoreParameters(
        k=list(scores.ks), level="doc", relevance_level=scores.level,
        judged_only=scores.judged_only, qrels_format=qrels_format, run_format=run_format,
        trec_eval_equivalents=TREC_EVAL_EQUIVALENTS)
    return ReportBody(kind="score.doc", subject=(subject,), inputs=tuple(inputs),
                      parameters=parameters, summary=summary,
                      details=columns)


TREC_EVAL_EQUIVALENTS = {
    "doc_precision": "P_k", "doc_recall": "recall_k", "doc_ndcg": "ndcg_cut_k",
    "doc_map": "map_cut_k", "doc_mrr": "recip_rank (top k)", "doc_hit_rate": "success_k",
    "doc_judged": "Judged@k (ir_measures)",
}


def fusion_record(fusion: FusionSources) -> Fusion:
    """``summary.fusion``: the fused retrievers and their counts per count cutoff."""
    return Fusion(sources=list(fusion.sources), by_k=fusion.counts())
