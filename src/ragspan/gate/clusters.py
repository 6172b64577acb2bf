"""Inference when queries come in clusters (docs/gate.md, "Clustered eval sets").

Questions that ask about the same document move together: a change that helps one contract
and hurts another moves all of that contract's questions at once. When the eval set's
documents are a *sample* of the documents users query, the document is the sampling unit,
so every statistic resamples or flips whole clusters (Field & Welsh 2007 for the cluster
bootstrap; Cameron & Miller 2015 for cluster-robust standard errors with few clusters).

``index`` is an integer cluster number per query (0..C-1). With every query its own cluster
each function below is the per-query one it replaces. All drops are per-query values whose
mean over the n queries is the metric's mean drop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BLOCK = 1024


def cluster_index(keys: Sequence[str | None]) -> np.ndarray:
    """Cluster numbers for per-query keys, in first-seen order; a query without a key (None)
    is a cluster of its own."""
    seen: dict[str, int] = {}
    out = np.empty(len(keys), dtype=np.int64)
    count = 0
    for i, key in enumerate(keys):
        if key is None:
            out[i] = count
            count += 1
            continue
        if key not in seen:
            seen[key] = count
            count += 1
        out[i] = seen[key]
    return out


def count(index: np.ndarray) -> int:
    return int(index.max()) + 1 if index.size else 0


def cluster_sums(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per cluster, the sum of each column of ``values`` (n x m) over its queries (C x m),
    added in the queries' order from 0.0 (``np.add.at``'s sums, bit for bit), a column at a
    time."""
    v = np.asarray(values, dtype=float)
    c = count(index)
    out = np.zeros((c, v.shape[1]))
    for j in range(v.shape[1]):
        out[:, j] = np.bincount(index, weights=v[:, j], minlength=c)
    return out


def robust_se(drops: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Cluster-robust standard error of each column's mean (CR1): with cluster totals of the
    residuals ``e_c = sum_{i in c} (d_i - mean)``, ``sqrt(C / (C - 1) * sum e_c^2) / n``.
    Equals the usual ``sd / sqrt(n)`` (times ``sqrt((n-1)/n) * sqrt(n/(n-1))``, i.e. the
    same) when every query is its own cluster. Zero with fewer than 2 clusters."""
    d = np.asarray(drops, dtype=float)
    n = d.shape[0]
    c = count(index)
    if c < 2 or n == 0:
        return np.zeros(d.shape[1])
    resid = cluster_sums(d - d.mean(axis=0), index)
    se: np.ndarray = np.sqrt(c / (c - 1) * (resid ** 2).sum(axis=0)) / n
    return se


def design_effect(drops: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per column: the clustered variance of the mean over the per-query one (1 when the
    clusters change nothing; 0 columns without spread give 1)."""
    d = np.asarray(drops, dtype=float)
    n = d.shape[0]
    if n < 2:
        return np.ones(d.shape[1])
    iid = d.std(axis=0, ddof=1) / math.sqrt(n)
    clustered = robust_se(d, index)
    with np.errstate(divide="ignore", invalid="ignore"):
        de = np.where(iid > 0, (clustered / np.where(iid > 0, iid, 1.0)) ** 2, 1.0)
    return de


def t_bounds(drops: np.ndarray, index: np.ndarray, alpha: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided ``1 - alpha`` bounds on each column's mean drop: the mean minus / plus
    ``t(1 - alpha, C - 1)`` cluster-robust standard errors. With fewer than 2 clusters there
    is no interval: the bounds are unbounded (``-/+ UNBOUNDED``), so no decision is claimed."""
    from scipy.special import stdtrit

    d = np.asarray(drops, dtype=float)
    mean = d.mean(axis=0) if d.shape[0] else np.zeros(d.shape[1])
    c = count(index)
    if c < 2:
        return mean - UNBOUNDED, mean + UNBOUNDED
    se = robust_se(d, index)
    q = float(stdtrit(c - 1, 1 - alpha))
    return mean - q * se, mean + q * se


def t_p_no_drop(drops: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per column, the one-sided p-value of "no drop" of the cluster-robust t test: the
    error rate at which ``t_bounds``' lower bound reaches 0 (a column without spread: 0 when
    its mean drop is above 0, else 1; under 2 clusters: 1, no claim)."""
    from scipy.special import stdtr

    d = np.asarray(drops, dtype=float)
    mean = d.mean(axis=0) if d.shape[0] else np.zeros(d.shape[1])
    c = count(index)
    if c < 2:
        return np.ones(d.shape[1])
    se = robust_se(d, index)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), 0.0)
    p: np.ndarray = np.where(se > 0, stdtr(c - 1, -t), np.where(mean > 0, 0.0, 1.0))
    return p


UNBOUNDED = 1e300  # a bound that no budget and no drop reaches (JSON holds no infinity)


def renumber(index: np.ndarray) -> np.ndarray:
    """``index`` restricted to a subset of queries, numbered 0..C'-1 again."""
    return np.unique(index, return_inverse=True)[1].astype(np.int64)


def populations(by: str, clusters: int, documents: int) -> str:
    """What the verdict generalises to, in words."""
    if by == "none":
        return ("these questions" if not documents else "questions about this one document"
                if documents == 1 else f"questions about these {documents} documents")
    if by == "doc_id":
        return f"documents like these {clusters}"
    return f"{by[len('tag:'):]} groups like these {clusters}"
