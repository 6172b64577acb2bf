"""``score``: eval set + span run (+ corpus) -> per-query metrics, summary, slices, report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspan.envelope import InputRef, statement
from ragspan.errors import InputError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet
from ragspan.io.runs import SpanList, SpanRun
from ragspan.metrics.registry import SPAN_METRICS, format_name
from ragspan.metrics.span import GoldColumns, RankedColumns, SpanScores, score_spans

DEFAULT_KS = (5, 10)
DEFAULT_TAU = 0.5
MAX_LISTED_IDS = 100


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


def ranked_columns(spans: SpanList, row_to_query: np.ndarray, codes: DocCodes) -> RankedColumns:
    """Columns of the rows that map to an eval query (``row_to_query[row] >= 0``)."""
    counts = np.diff(spans.offsets)
    row_of_span = np.repeat(np.arange(len(spans.ids)), counts)
    rank = np.arange(spans.start.size) - np.repeat(spans.offsets[:-1], counts)
    query = row_to_query[row_of_span]
    sel = query >= 0
    doc = codes.many(spans.doc_names)[spans.doc_code] if spans.doc_code.size else spans.doc_code
    return RankedColumns(query[sel], doc[sel], spans.start[sel], spans.end[sel], rank[sel])


def check_against_corpus(evalset: EvalSet, run: SpanRun, corpus: Corpus) -> None:
    """Every span must name a corpus document and end inside it; what the eval set recorded
    about the documents must hold: the sha256 of each text in its ``_header`` (a corpus
    re-saved with other line endings shifts every span) and each gold span's ``text``."""
    recorded = (evalset.header or {}).get("documents") or {}
    for doc_id, digest in sorted(recorded.items()):
        doc = corpus.documents.get(doc_id)
        if doc is not None and doc.sha256 != digest:
            raise InputError(f"document '{doc_id}' is not the text the offsets were made on "
                             f"(its sha256 differs from the eval set's _header; re-saved with "
                             f"other line endings?)", evalset.path, 1)
    lengths = corpus.lengths()
    for query in evalset.queries:
        for i, span in enumerate(query.gold_spans):
            _check_one(span.doc_id, span.end, lengths, evalset.path, query.line, "gold span")
            if span.text is not None and corpus.text(span.doc_id)[span.start:span.end] != span.text:
                raise InputError(f"gold_spans[{i}]: '{span.doc_id}'[{span.start}:{span.end}] "
                                 f"does not slice back to its text {span.text[:40]!r}",
                                 evalset.path, query.line)
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


def _check_one(doc_id: str, end: int, lengths: dict[str, int], path: str, line: int,
               what: str) -> None:
    if doc_id not in lengths:
        raise InputError(f"{what} names doc_id '{doc_id}', absent from the corpus", path, line)
    if end > lengths[doc_id]:
        raise InputError(
            f"{what} end={end} is past the end of '{doc_id}' ({lengths[doc_id]} characters)",
            path, line,
        )


@dataclass
class SpanReport:
    """Everything ``score`` computed, before it becomes an envelope."""

    evalset: EvalSet
    run: SpanRun
    corpus: Corpus | None
    ks: tuple[int, ...]
    tau: float
    scores: SpanScores
    first_stage: SpanScores | None
    in_run: np.ndarray
    unmatched_run_ids: list[str]
    doc_level: Any = None  # DocScores, filled by the doc-level projection when available

    def metric_names(self) -> list[str]:
        names = [format_name(b, k) for b in SPAN_METRICS for k in self.ks]
        if self.first_stage is not None:
            names += [format_name(b, k, True) for b in SPAN_METRICS for k in self.ks]
        return names

    def values(self) -> dict[str, np.ndarray]:
        out = dict(self.scores.values)
        if self.first_stage is not None:
            for name, arr in self.first_stage.values.items():
                base, k = name.split("@")
                out[format_name(base, int(k), True)] = arr
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
) -> SpanReport:
    """Score a span run against an eval set (see ``metrics.span`` for the conventions)."""
    if corpus is not None:
        check_against_corpus(evalset, run, corpus)
    ks = tuple(sorted(set(ks)))
    codes = DocCodes()
    gold = gold_columns(evalset, codes)
    row_to_query, unmatched = _map_rows(evalset, run.spans)
    in_run = np.zeros(len(evalset.queries), dtype=bool)
    in_run[row_to_query[row_to_query >= 0]] = True
    scores = score_spans(gold, ranked_columns(run.spans, row_to_query, codes), ks, tau)
    first = None
    if run.first_stage is not None:
        first = score_spans(gold, ranked_columns(run.first_stage, row_to_query, codes), ks, tau)
    return SpanReport(evalset, run, corpus, ks, tau, scores, first, in_run, unmatched)


def _mean(arr: np.ndarray) -> float:
    return float(arr.mean()) if arr.size else 0.0


def distribution(arr: np.ndarray) -> dict[str, float]:
    """Mean, median and 90th percentile (linear interpolation) of per-query values."""
    if arr.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0}
    return {
        "mean": float(arr.mean()),
        "median": float(np.median(arr)),
        "p90": float(np.percentile(arr, 90)),
    }


def slices(evalset: EvalSet, values: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per tag key, per tag value: query count and the mean of every metric."""
    out: dict[str, Any] = {}
    keys = sorted({k for q in evalset.queries for k in q.tags})
    for key in keys:
        groups: dict[str, list[int]] = {}
        for i, q in enumerate(evalset.queries):
            if key in q.tags:
                groups.setdefault(q.tags[key], []).append(i)
        out[key] = {
            value: {
                "count": len(idx),
                "metrics": {n: _mean(arr[np.asarray(idx)]) for n, arr in values.items()},
            }
            for value, idx in sorted(groups.items())
        }
    return out


def _missing(report: SpanReport, values: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Per-query rows; queries failing complete grounding list the gold spans below tau."""
    rows = []
    gold_pos = 0
    for i, q in enumerate(report.evalset.queries):
        n_gold = len(q.gold_spans)
        row: dict[str, Any] = {
            "id": q.id,
            "query": q.query,
            "in_run": bool(report.in_run[i]),
            "metrics": {n: float(arr[i]) for n, arr in values.items()},
        }
        if q.tags:
            row["tags"] = q.tags
        missing: dict[str, Any] = {}
        for k in report.ks:
            if values[format_name("complete_grounding", k)][i] >= 1.0:
                continue
            frac = report.scores.gold_fraction[k][gold_pos: gold_pos + n_gold]
            spans = []
            for span, f in zip(q.gold_spans, frac):
                if f >= report.tau:
                    continue
                entry: dict[str, Any] = {
                    "doc_id": span.doc_id, "start": span.start, "end": span.end,
                    "covered": float(f),
                }
                if report.corpus is not None:
                    entry["text"] = report.corpus.text(span.doc_id)[span.start: span.end]
                spans.append(entry)
            missing[str(k)] = spans
        if missing:
            row["missing_spans"] = missing
        rows.append(row)
        gold_pos += n_gold
    return rows


def inputs_of(report: SpanReport) -> list[InputRef]:
    refs = [InputRef("eval_set", report.evalset.path, report.evalset.sha256),
            InputRef("run", report.run.path, report.run.sha256)]
    if report.corpus is not None:
        refs.append(InputRef("corpus", report.corpus.path, report.corpus.sha256))
    return refs


def span_envelope(report: SpanReport) -> dict[str, Any]:
    """The ``score.span`` report envelope."""
    values = report.values()
    names = report.metric_names()
    summary: dict[str, Any] = {
        "queries": len(report.evalset.queries),
        "queries_without_run_row": int((~report.in_run).sum()),
        "run_rows_without_query": len(report.unmatched_run_ids),
        "metrics": {n: _mean(values[n]) for n in names},
        "retrieved_chars": {
            str(k): distribution(values[format_name("retrieved_chars", k)]) for k in report.ks
        },
    }
    if report.run.latency_ms is not None:
        lat = report.run.latency_ms[np.isfinite(report.run.latency_ms)]
        summary["latency_ms"] = {"p50": float(np.percentile(lat, 50)),
                                 "p95": float(np.percentile(lat, 95)), "rows": int(lat.size)}
    details: dict[str, Any] = {
        "queries": _missing(report, values),
        "slices": slices(report.evalset, values),
        "run_rows_without_query": report.unmatched_run_ids[:MAX_LISTED_IDS],
    }
    parameters: dict[str, Any] = {
        "k": list(report.ks),
        "grounding_threshold": report.tau,
        "level": "span",
        "first_stage": report.first_stage is not None,
    }
    if report.doc_level is not None:
        from ragspan.doclevel import attach_doc_level

        attach_doc_level(report.doc_level, summary, details, parameters)
    if report.run.config is not None:
        parameters["run_config"] = report.run.config
    return statement(
        kind="score.span",
        subject=[InputRef("run", report.run.path, report.run.sha256)],
        inputs=inputs_of(report),
        parameters=parameters,
        summary=summary,
        details=details,
    )
