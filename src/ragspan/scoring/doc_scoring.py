"""Doc-level scoring: qrels (or an eval set's doc judgments) + a doc run -> trec_eval metrics;
and the doc-level projection of a span run (gold docs = docs holding gold spans, grade 1;
ranking = first occurrence of each doc in the span ranking).

Query sets follow trec_eval ``-c`` by default: every judged query counts, a judged query the
run lacks scores 0; ``judged_only`` averages over queries in both (trec_eval without ``-c``).
A query listed with no judgments at all is excluded and counted; run rows for queries without
judgments are ignored and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, repeat
from typing import Any

import numpy as np

from ragspan.base.errors import InputError, UsageError
from ragspan.base.ids import TwinsNote, normalization_twins, twins_note
from ragspan.base.warned import said
from ragspan.io.qrels import read_qrels
from ragspan.io.rows import Skipped
from ragspan.io.runs.columns import DocRun, text_keys
from ragspan.io.runs.docs import read_doc_run
from ragspan.scoring.metrics.rank import UNJUDGED, Judgments, Ranking, rank_metrics
from ragspan.scoring.metrics.registry import DOC_METRICS, Chars, format_name

log = logging.getLogger("ragspan")


@dataclass(frozen=True)
class QueryCounts:
    """What a doc-level score counts beside its metrics, each a key of the report's summary:
    queries the judgments list with no judged document, judged queries the run has no row
    for, run rows for unjudged queries, evaluated queries with nothing judged relevant at the
    relevance level, and the note on ids that match only after Unicode normalisation (None
    when there are none)."""

    queries_without_judgments: int
    judged_queries_without_run_row: int
    run_rows_for_unjudged_queries: int
    queries_without_relevant: int
    ids_differing_by_normalization: TwinsNote | None = None


@dataclass
class DocScores:
    qids: list[str]  # evaluated queries, in judgment order
    values: dict[str, np.ndarray]
    in_run: np.ndarray
    counts: QueryCounts
    ks: tuple[int, ...]
    level: int
    judged_only: bool

    def metric_names(self) -> list[str]:
        return [n for b in DOC_METRICS for k in self.ks if (n := format_name(b, k)) in self.values]

    def without_judged(self) -> DocScores:
        """These scores without ``doc_judged``: against an eval set's judgments (its gold
        documents, or its ``relevance``), every document is judged by construction (a
        document the eval set names no evidence in holds none), so the share of judged
        results would only repeat ``doc_precision``; it is the trec_eval family's number,
        for qrels."""
        return replace(self, values={
            n: v for n, v in self.values.items() if not n.startswith("doc_judged@")})


@dataclass(frozen=True)
class JudgedDocs:
    """Judgments flattened for scoring, before any run is read. ``judged``: the queries with
    at least one judgment, in file order; ``listed``: how many queries the judgments list;
    per judgment its query's index in ``judged``, its document and grade. ``keys``: the
    documents' byte keys when every id is 1-8 ASCII characters (see ``text_keys``)."""

    judged: list[str]
    listed: int
    query: np.ndarray
    docs: list[str]
    grade: np.ndarray
    keys: np.ndarray | None

    @classmethod
    def of(cls, judgments: dict[str, dict[str, int]]) -> JudgedDocs:
        judged = [q for q, docs in judgments.items() if docs]
        per_query = [judgments[q] for q in judged]
        docs = list(chain.from_iterable(per_query))
        query = np.repeat(np.arange(len(judged), dtype=np.int64), [len(j) for j in per_query])
        grade = np.fromiter(chain.from_iterable(map(dict.values, per_query)), dtype=np.int64,
                            count=len(docs))
        return cls(judged, len(judgments), query, docs, grade, text_keys(docs))

    def doc_codes(self, run_docs: list[str], run_keys: np.ndarray | None) -> np.ndarray:
        """Each judged document's code in ``run_docs``; ``len(run_docs)`` for a document the
        run lacks. ``run_keys``: the run documents' byte keys, sorted (then ``run_docs``
        is in the same order), or None."""
        missing = len(run_docs)
        if self.keys is not None and run_keys is not None and run_keys.size:
            pos = np.minimum(np.searchsorted(run_keys, self.keys), run_keys.size - 1)
            return np.where(run_keys[pos] == self.keys, pos, missing)
        code = dict(zip(run_docs, range(missing)))
        return np.fromiter(map(code.get, self.docs, repeat(missing)), dtype=np.int64,
                           count=len(self.docs))

    def check(self, level: int) -> None:
        """A relevance level below 1 is a UsageError; judgments of no query an InputError."""
        if isinstance(level, bool) or not isinstance(level, int) or level < 1:
            raise UsageError(f"relevance level must be an integer of at least 1, got {level!r}: "
                             "a grade below 1 means judged not relevant")
        if not self.judged:
            raise InputError(f"none of the {self.listed} queries listed has a judgment: "
                             "there is nothing to score")

    def score(self, run_qids: list[str], run_docs: list[str], run_query: np.ndarray,
              run_doc: np.ndarray, run_rank: np.ndarray, ks: Sequence[int], level: int = 1,
              judged_only: bool = False, run_keys: np.ndarray | None = None,
              per_query: Mapping[int, np.ndarray] | None = None) -> DocScores:
        """Score a ranking (codes into ``run_qids``/``run_docs``, grouped by query, in
        order). ``level`` is at least 1 (a grade below 1 is trec_eval's "judged not
        relevant": a level of 0 would count every judged document relevant); judgments with
        no query judged at all are an InputError (a score of nothing is not a pass).
        ``per_query``: each budget cutoff of ``ks`` with every run row's own k."""
        self.check(level)
        ks = tuple(sorted(set(ks)))
        per_query = per_query or {}
        run_set = set(run_qids)
        judged_set = set(self.judged)
        in_run = np.fromiter((q in run_set for q in self.judged), dtype=bool,
                             count=len(self.judged))
        jd, jq, jg = self.doc_codes(run_docs, run_keys), self.query, self.grade
        evaluated = self.judged
        if judged_only:  # renumber the queries in both; drop the others' judgments
            evaluated = [q for q, present in zip(self.judged, in_run.tolist()) if present]
            renumber = np.cumsum(in_run) - 1
            keep = in_run[jq]
            jd, jq, jg = jd[keep], renumber[jq[keep]], jg[keep]
            in_run = np.ones(len(evaluated), dtype=bool)
        n = len(evaluated)
        index = {q: i for i, q in enumerate(evaluated)}
        row_map = np.fromiter((index.get(q, -1) for q in run_qids), dtype=np.int64,
                              count=len(run_qids))
        eq = row_map[run_query] if run_query.size else np.zeros(0, np.int64)
        # every metric is cut at some k: entries ranked at or below max(k) change no value
        own, deepest = _per_evaluated(per_query, row_map, n, ks)
        sel = (eq >= 0) & (run_rank < deepest)
        eq, ed, er = eq[sel], run_doc[sel], run_rank[sel]

        grade = _grades(jq, jd, jg, eq, ed, len(run_docs) + 1)

        values = rank_metrics(Ranking(eq, er, grade), Judgments(jq, jg), n,
                              [k for k in ks if k not in per_query], level, own)
        # a query judged with nothing relevant at ``level`` scores 0 on every binary-relevance
        # metric whatever the run (trec_eval scores it so; nDCG counts every positive
        # grade): counted and said, never silent
        relevant = np.zeros(n, dtype=bool)
        relevant[jq[jg >= level]] = True
        counts = QueryCounts(
            queries_without_judgments=self.listed - len(self.judged),
            judged_queries_without_run_row=sum(1 for q in self.judged if q not in run_set),
            run_rows_for_unjudged_queries=sum(1 for q in run_qids if q not in judged_set),
            queries_without_relevant=int(n - relevant.sum()))
        if counts.queries_without_relevant:
            log.warning("%d of %d judged queries have no document judged relevant (grade >= "
                        "%d): their precision, recall, MAP, MRR and hit rate are 0 whatever "
                        "the run", counts.queries_without_relevant, n, level,
                        extra=said("no_relevant_document", counts.queries_without_relevant))
        return DocScores(evaluated, values, in_run, counts, ks, level, judged_only)

    def score_run(self, run: DocRun, ks: Sequence[int], level: int,
                  judged_only: bool) -> DocScores:
        """``score`` on a doc run; run ids that match a judged query only after Unicode
        normalisation are counted (``ids_differing_by_normalization``) and warned about."""
        scores = self.score(run.qids, run.docs, run.query, run.doc, run.rank, ks, level,
                            judged_only, run.doc_keys)
        run_set, judged_set = set(run.qids), set(self.judged)
        twins = twins_note(normalization_twins([q for q in self.judged if q not in run_set],
                                               [q for q in run.qids if q not in judged_set]),
                           "run ids")
        if twins is not None:
            scores.counts = replace(scores.counts, ids_differing_by_normalization=twins)
        return scores


def _grades(jq: np.ndarray, jd: np.ndarray, jg: np.ndarray, eq: np.ndarray, ed: np.ndarray,
            width: int) -> np.ndarray:
    """The grade of each ranked entry: (query, doc) looked up among the judged pairs; a
    document the run lacks has the extra code ``width - 1``, which no entry carries."""
    jkey = jq * width + jd
    order = np.argsort(jkey)
    jkey_s, jg_s = jkey[order], jg[order]
    rkey = eq * width + ed
    pos = np.minimum(np.searchsorted(jkey_s, rkey), max(jkey_s.size - 1, 0))
    found = jkey_s[pos] == rkey if jkey_s.size else np.zeros(rkey.size, dtype=bool)
    grades: np.ndarray = np.where(found, jg_s[pos] if jkey_s.size else 0, UNJUDGED)
    return grades


def _per_evaluated(per_query: Mapping[int, np.ndarray], row_map: np.ndarray, n: int,
                   ks: Sequence[int]) -> tuple[dict[int, np.ndarray], int]:
    """Each budget cutoff's k per run row, as per evaluated query (0 without a run row), and
    the deepest rank any cutoff of ``ks`` reaches."""
    deepest = max([int(k) for k in ks if k not in per_query]
                  + [int(v.max(initial=0)) for v in per_query.values()] or [0])
    own = {}
    rows = row_map >= 0
    for k, by_row in per_query.items():
        at = np.zeros(n, dtype=np.int64)
        at[row_map[rows]] = np.asarray(by_row, dtype=np.int64)[rows]
        own[k] = at
    return own, deepest


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
    return JudgedDocs.of(judgments).score(run_qids, run_docs, run_query, run_doc, run_rank,
                                          ks, level, judged_only)


def score_doc_run(run: DocRun, judgments: dict[str, dict[str, int]], ks: Sequence[int],
                  level: int, judged_only: bool) -> DocScores:
    return JudgedDocs.of(judgments).score_run(run, ks, level, judged_only)


def span_doc_projection(report: Any, ks: Sequence[int], level: int = 1,
                        judged_only: bool = False) -> DocScores:
    """Doc-level view of a span report's eval set and run: each query's ranking is the
    documents of its retrieved spans in the order each first occurs (rank 0, 1, ...). At a
    character cutoff N of ``ks`` (``registry.Chars``) each query's k is the number of its
    documents whose first result starts within the first N characters of its results (the
    characters before it fewer than N, as a span metric's cutoff keeps a result): the doc
    metrics there are trec_eval's at that k (docs/metrics.md, "Character cutoffs")."""
    evalset, spans = report.evalset, report.run.spans
    judgments: dict[str, dict[str, int]] = {}
    judgments.update(evalset_judgments(evalset))
    rq, rd, rr = first_occurrences(spans.offsets, spans.doc_code)
    per_query: dict[int, np.ndarray] = {}
    chars = [k for k in ks if isinstance(k, Chars)]
    if chars:
        lengths = (spans.end - spans.start).astype(np.int64)
        ends = np.cumsum(lengths)  # characters up to each result's end, file-wide
        row_base = np.concatenate(([0], ends))[spans.offsets[:-1]]
        before = ends - lengths - np.repeat(row_base, np.diff(spans.offsets))
        at = first_index(spans.offsets, spans.doc_code)
        for k in chars:  # a document counts when its first result starts inside the budget
            inside = before[at] < int(k)
            per_query[k] = np.bincount(rq[inside], minlength=len(spans.ids))
    scores = JudgedDocs.of(judgments)
    return scores.score(list(spans.ids), list(spans.doc_names), rq, rd, rr, ks, level,
                        judged_only, None, per_query).without_judged()


def first_index(offsets: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """For rows ``codes[offsets[i]:offsets[i + 1]]``: the position of each code's first
    occurrence in its row, in row order and then position order."""
    sizes = np.diff(offsets)
    row = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    width = int(codes.max()) + 1 if codes.size else 1
    return np.sort(np.unique(row * width + codes, return_index=True)[1])


def first_occurrences(offsets: np.ndarray, codes: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows ``codes[offsets[i]:offsets[i + 1]]``: the (row, code, rank) of each code's
    first occurrence in its row, in row order and then position order; the rank counts the
    distinct codes before it in the row (0-based)."""
    sizes = np.diff(offsets)
    row = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    first = first_index(offsets, codes)
    rq, rd = row[first], codes[first].astype(np.int64)
    rr = np.arange(first.size, dtype=np.int64) - np.searchsorted(rq, rq, "left")
    return rq, rd, rr



def read_and_score(qrels: str, run: str, qrels_format: str, run_format: str,
                   ks: Sequence[int], relevance_level: int, judged_only: bool,
                   skipped: tuple[Skipped, Skipped] | None = None
                   ) -> tuple[Any, DocRun, DocScores]:
    """Read qrels and run (the run's top ``max(ks)`` per query) and score them. The run is
    read on a worker thread (its parsers spend their time in pyarrow and numpy, outside the
    GIL) while this thread reads the qrels; an error in the qrels is reported first.
    ``skipped`` (``--on-duplicate first``): the qrels' and the run's tallies of the rows
    skipped (``io.rows.row_id``)."""
    from concurrent.futures import ThreadPoolExecutor


    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(read_doc_run, run, run_format, top=max(ks),
                              skipped=None if skipped is None else skipped[1])
        q = read_qrels(qrels, qrels_format, None if skipped is None else skipped[0])
        judged = JudgedDocs.of(q.judgments)
        if not judged.judged:
            raise InputError(f"none of the {judged.listed} queries the qrels list has a "
                             "judgment: there is nothing to score", q.path)
        r = pending.result()
    scores = judged.score_run(r, ks, relevance_level, judged_only)
    return q, r, scores


def evalset_judgments(evalset: Any) -> dict[str, dict[str, int]]:
    """Doc-level judgments of an eval set: ``relevance`` when given, else the docs holding
    gold spans (grade 1)."""
    return {q.id: dict(q.relevance or {s.doc_id: 1 for s in q.gold_spans})
            for q in evalset.queries}
