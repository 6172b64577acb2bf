"""Doc-level rank metrics, exactly as trec_eval 9 computes them, vectorised over all queries.

Input is a ranking already in trec_eval order (score descending, ties by doc id descending) as
flat arrays: ``query[i]`` ranked a document of grade ``grade[i]`` at 0-based ``rank[i]``
(unjudged documents carry grade ``UNJUDGED``). Judged grades per query feed the ideal ranking.

Per query, with ``num_rel`` = judged documents with grade >= relevance level:

* ``P_k``        relevant in top k / k (k, not the number retrieved).
* ``recall_k``   relevant in top k / num_rel (0 when num_rel = 0).
* ``map_cut_k``  sum over relevant in top k of (relevant so far / rank), / num_rel.
* ``ndcg_cut_k`` DCG with gain = grade (grades > 0 only, whatever the relevance level) and
  discount log2(rank + 1), over the ideal DCG of all judged grades > 0, both cut at k.
* ``recip_rank`` 1 / rank of the first relevant document within the top k (trec_eval's
  ``recip_rank`` is the k = infinity case).
* ``success_k``  1 if a relevant document is in the top k.
* ``judged@k``   judged documents (any grade) in top k / k, as ir_measures' ``Judged@k``:
  how much of the ranking the judgments decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragspan.scoring.metrics.registry import format_name

UNJUDGED = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Ranking:
    query: np.ndarray  # int64 query index, grouped (all of a query's entries contiguous)
    rank: np.ndarray  # 0-based position within the query
    grade: np.ndarray  # int64 grade of the document, UNJUDGED when not judged


@dataclass(frozen=True)
class Judgments:
    query: np.ndarray  # int64 query index of each judged document
    grade: np.ndarray  # int64 grade


def _group_cumsum(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum restarting at each new group (groups contiguous)."""
    total = np.cumsum(values)
    if values.size == 0:
        return total
    start = np.ones(values.size, dtype=bool)
    start[1:] = group[1:] != group[:-1]
    first = np.flatnonzero(start)
    offset = np.repeat(total[first] - values[first], np.diff(np.append(first, values.size)))
    restarted: np.ndarray = total - offset
    return restarted


def rank_metrics(
    ranking: Ranking, judged: Judgments, n_queries: int, ks: Sequence[int], level: int = 1,
    per_query: Mapping[int, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Per-query values ``doc_<metric>@k`` for every k (see the module docstring).
    ``per_query``: cutoffs (a character budget, ``registry.Chars``) at which each query has
    its own k, the number of documents it reached within that budget: each metric is the
    module docstring's at that query's k (``P`` divides by it; 0 where it is 0)."""
    n = n_queries
    rel = ranking.grade >= level
    num_rel = np.bincount(judged.query, weights=(judged.grade >= level), minlength=n)
    rel_so_far = _group_cumsum(rel.astype(np.int64), ranking.query)
    prec_at_rel = np.where(rel, rel_so_far / (ranking.rank + 1.0), 0.0)
    gain = np.where(ranking.grade > 0, ranking.grade, 0).astype(float)
    dcg_terms = gain / np.log2(ranking.rank + 2.0)

    # ideal ranking: judged grades > 0 sorted descending within each query
    pos = judged.grade > 0
    jq, jg = judged.query[pos], judged.grade[pos]
    order = np.lexsort((-jg, jq))
    jq, jg = jq[order], jg[order].astype(float)
    jrank = _group_cumsum(np.ones(jq.size, dtype=np.int64), jq) - 1
    ideal_terms = jg / np.log2(jrank + 2.0)

    first_rel = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_rel, ranking.query[rel], ranking.rank[rel])

    out: dict[str, np.ndarray] = {}
    cutoffs: list[tuple[int, np.ndarray | int]] = [(k, k) for k in ks]
    cutoffs += [(k, np.asarray(v, dtype=np.int64)) for k, v in (per_query or {}).items()]
    for k, at in cutoffs:
        # at: one k for every query, or each query's own (indexed by query)
        limit = at if isinstance(at, int) else at[ranking.query]
        top = ranking.rank < limit
        q = ranking.query[top]
        n_rel_k = np.bincount(q, weights=rel[top], minlength=n)
        ap = np.bincount(q, weights=prec_at_rel[top], minlength=n)
        dcg = np.bincount(q, weights=dcg_terms[top], minlength=n)
        inside = jrank < (at if isinstance(at, int) else at[jq])
        ideal = np.bincount(jq[inside], weights=ideal_terms[inside], minlength=n)
        out[format_name("doc_precision", k)] = (n_rel_k / at if isinstance(at, int)
                                                else _div(n_rel_k, at.astype(float)))
        out[format_name("doc_recall", k)] = _div(n_rel_k, num_rel)
        out[format_name("doc_map", k)] = _div(ap, num_rel)
        out[format_name("doc_ndcg", k)] = _div(dcg, ideal)
        hit = first_rel < at
        rr = np.zeros(n)
        np.divide(1.0, first_rel + 1.0, out=rr, where=hit)
        out[format_name("doc_mrr", k)] = rr
        out[format_name("doc_hit_rate", k)] = hit.astype(float)
        n_judged = np.bincount(q, weights=(ranking.grade[top] != UNJUDGED), minlength=n)
        out[format_name("doc_judged", k)] = (n_judged / at if isinstance(at, int)
                                             else _div(n_judged, at.astype(float)))
    return out


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out
