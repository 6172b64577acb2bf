"""Doc-level scoring: qrels (or an eval set's doc judgments) + a doc run -> trec_eval metrics;
and the doc-level projection of a span run (gold docs = docs holding gold spans, grade 1;
ranking = first occurrence of each doc in the span ranking).

Query sets follow trec_eval ``-c`` by default: every judged query counts, a judged query the
run lacks scores 0; ``judged_only`` averages over queries in both (trec_eval without ``-c``).
A query listed with no judgments at all is excluded and counted; run rows for queries without
judgments are ignored and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragspan.envelope import InputRef, statement
from ragspan.errors import InputError
from ragspan.io.docruns import DocRun
from ragspan.metrics.rank import UNJUDGED, Judgments, Ranking, rank_metrics
from ragspan.metrics.registry import DOC_METRICS, format_name


@dataclass
class DocScores:
    qids: list[str]  # evaluated queries, in judgment order
    values: dict[str, np.ndarray]
    in_run: np.ndarray
    counts: dict[str, int]
    ks: tuple[int, ...]
    level: int
    judged_only: bool

    def metric_names(self) -> list[str]:
        return [format_name(b, k) for b in DOC_METRICS for k in self.ks]


def compute_doc_scores(
    judgments: dict[str, dict[str, int]],
    run_qids: list[str],
    run_docs: list[str],
    run_query: np.ndarray,
    run_doc: np.ndarray,
    run_rank: np.ndarray,
    ks: Sequence[int],
    level: int = 1,
    judged_only: bool = False,
) -> DocScores:
    """Score a ranking (codes into ``run_qids``/``run_docs``, grouped by query, in order)."""
    ks = tuple(sorted(set(ks)))
    judged = [q for q, docs in judgments.items() if docs]
    run_set = set(run_qids)
    counts = {
        "queries_without_judgments": sum(1 for docs in judgments.values() if not docs),
        "judged_queries_without_run_row": sum(1 for q in judged if q not in run_set),
        "run_rows_for_unjudged_queries": sum(
            1 for q in run_qids if not judgments.get(q)
        ),
    }
    evaluated = [q for q in judged if q in run_set] if judged_only else judged
    index = {q: i for i, q in enumerate(evaluated)}
    n = len(evaluated)

    row_map = np.fromiter((index.get(q, -1) for q in run_qids), dtype=np.int64,
                          count=len(run_qids))
    eq = row_map[run_query] if run_query.size else np.zeros(0, np.int64)
    # every metric is cut at some k: entries ranked at or below max(k) cannot change any value
    sel = (eq >= 0) & (run_rank < max(ks))
    eq, ed, er = eq[sel], run_doc[sel], run_rank[sel]

    doc_code = {d: i for i, d in enumerate(run_docs)}
    jq, jd, jg = [], [], []
    for q in evaluated:
        qi = index[q]
        for d, g in judgments[q].items():
            c = doc_code.get(d)
            if c is None:
                c = doc_code[d] = len(doc_code)
            jq.append(qi)
            jd.append(c)
            jg.append(g)
    jq_a = np.asarray(jq, np.int64)
    jg_a = np.asarray(jg, np.int64)
    width = max(len(doc_code), 1)
    jkey = jq_a * width + np.asarray(jd, np.int64)
    order = np.argsort(jkey)
    jkey_s, jg_s = jkey[order], jg_a[order]
    rkey = eq * width + ed
    pos = np.searchsorted(jkey_s, rkey)
    pos_c = np.minimum(pos, max(jkey_s.size - 1, 0))
    found = (pos < jkey_s.size) & (jkey_s[pos_c] == rkey) if jkey_s.size else np.zeros(
        rkey.size, bool)
    grade = np.where(found, jg_s[pos_c] if jkey_s.size else 0, UNJUDGED)

    values = rank_metrics(Ranking(eq, er, grade), Judgments(jq_a, jg_a), n, ks, level)
    in_run = np.asarray([q in run_set for q in evaluated], dtype=bool)
    return DocScores(evaluated, values, in_run, counts, ks, level, judged_only)


def score_doc_run(run: DocRun, judgments: dict[str, dict[str, int]], ks: Sequence[int],
                  level: int, judged_only: bool) -> DocScores:
    return compute_doc_scores(judgments, run.qids, run.docs, run.query, run.doc, run.rank,
                              ks, level, judged_only)


def span_doc_projection(report: Any, ks: Sequence[int], level: int = 1,
                        judged_only: bool = False) -> DocScores:
    """Doc-level view of a span report's eval set and run (first occurrence of each doc)."""
    evalset, spans = report.evalset, report.run.spans
    judgments: dict[str, dict[str, int]] = {}
    judgments.update(evalset_judgments(evalset))
    qids: list[str] = []
    docs: dict[str, int] = {}
    rq, rd, rr = [], [], []
    for i, qid in enumerate(spans.ids):
        seen: set[str] = set()
        qi = len(qids)
        qids.append(qid)
        for j in spans.row(i):
            d = spans.doc_id[j]
            if d in seen:
                continue
            seen.add(d)
            code = docs.setdefault(d, len(docs))
            rq.append(qi)
            rd.append(code)
            rr.append(len(seen) - 1)
    return compute_doc_scores(judgments, qids, list(docs), np.asarray(rq, np.int64),
                              np.asarray(rd, np.int64), np.asarray(rr, np.int64), ks, level,
                              judged_only)


def attach_doc_level(scores: DocScores, summary: dict[str, Any], details: dict[str, Any],
                     parameters: dict[str, Any]) -> None:
    """Add the doc-level family to a span report (same queries, same order)."""
    names = scores.metric_names()
    for name in names:
        summary["metrics"][name] = float(scores.values[name].mean()) if scores.qids else 0.0
    pos = {q: i for i, q in enumerate(scores.qids)}
    for row in details["queries"]:
        i = pos.get(row["id"])
        if i is not None:
            for name in names:
                row["metrics"][name] = float(scores.values[name][i])
    parameters["relevance_level"] = scores.level


def doc_envelope(scores: DocScores, inputs: list[InputRef], subject: InputRef,
                 qrels_format: str, run_format: str) -> dict[str, Any]:
    names = scores.metric_names()
    n = len(scores.qids)
    summary: dict[str, Any] = {
        "queries": n,
        "metrics": {m: float(scores.values[m].mean()) if n else 0.0 for m in names},
        **scores.counts,
    }
    rows = [
        {"id": q, "in_run": bool(scores.in_run[i]),
         "metrics": {m: float(scores.values[m][i]) for m in names}}
        for i, q in enumerate(scores.qids)
    ]
    parameters = {
        "k": list(scores.ks),
        "level": "doc",
        "relevance_level": scores.level,
        "judged_only": scores.judged_only,
        "qrels_format": qrels_format,
        "run_format": run_format,
        "trec_eval_equivalents": {
            "doc_precision": "P_k", "doc_recall": "recall_k", "doc_ndcg": "ndcg_cut_k",
            "doc_map": "map_cut_k", "doc_mrr": "recip_rank (top k)", "doc_hit_rate": "success_k",
        },
    }
    return statement(kind="score.doc", subject=[subject], inputs=inputs, parameters=parameters,
                     summary=summary, details={"queries": rows})


def doc_score_command(*, qrels: str, run: str, qrels_format: str, run_format: str,
                      ks: Sequence[int], relevance_level: int, judged_only: bool
                      ) -> dict[str, Any]:
    from ragspan.io.docruns import read_doc_run
    from ragspan.io.qrels import read_qrels

    q = read_qrels(qrels, qrels_format)
    r = read_doc_run(run, "auto" if run_format == "auto" else run_format, top=max(ks))
    if not q.judgments:
        raise InputError("no judgments", qrels)
    scores = score_doc_run(r, q.judgments, ks, relevance_level, judged_only)
    inputs = [InputRef("qrels", q.path, q.sha256), InputRef("run", r.path, r.sha256)]
    return doc_envelope(scores, inputs, InputRef("run", r.path, r.sha256), q.format, r.format)


def evalset_judgments(evalset: Any) -> dict[str, dict[str, int]]:
    """Doc-level judgments of an eval set: ``relevance`` when given, else the docs holding
    gold spans (grade 1)."""
    return {q.id: dict(q.relevance or {s.doc_id: 1 for s in q.gold_spans})
            for q in evalset.queries}


def evalset_doc_score(evalset: Any, run: str, run_format: str, ks: Sequence[int],
                      relevance_level: int, judged_only: bool) -> dict[str, Any]:
    """``score --eval-set E --run R`` with a doc-level run (TREC or JSONL ``retrieved_ids``)."""
    from ragspan.io.docruns import read_doc_run

    r = read_doc_run(run, run_format, top=max(ks))
    scores = score_doc_run(r, evalset_judgments(evalset), ks, relevance_level, judged_only)
    inputs = [InputRef("eval_set", evalset.path, evalset.sha256), InputRef("run", r.path, r.sha256)]
    return doc_envelope(scores, inputs, InputRef("run", r.path, r.sha256), "eval_set", r.format)
