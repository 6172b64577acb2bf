"""Paired statistics on per-query deltas, vectorised over many metrics at once.

``deltas`` is an ``(n_queries, n_metrics)`` matrix of candidate - baseline. Every routine takes
its random generator as an argument (never global state) and returns frozen results that hold
what is needed to audit them.

Randomization (sign-flip) test, following ``scipy.stats.permutation_test(...,
permutation_type='samples')`` on the paired samples exactly:

* statistic: the mean delta; under H0 each query's delta has a random sign;
* exact enumeration of all ``2**n`` sign vectors when ``n <= exact_max`` (default 16), else
  ``n_resamples`` seeded Monte Carlo draws with the +1 correction ``(hits + 1) / (R + 1)`` so a
  p-value is never 0;
* two-sided p = ``min(1, 2 * min(P(T* <= t), P(T* >= t)))``; null values within
  ``gamma = max(100 * eps * |t|, 1e-12 * mean|d|)`` of ``t`` count as ties. scipy uses
  the first term only, which misses ties when ``t`` should be exactly 0 but arrives as
  rounding noise (then ``|t|`` is tiny while the rounding of each null mean scales with
  ``mean|d|``); the second term catches those, and is far below any real difference of
  means of metric values.

References: scipy.stats.permutation_test; Efron & Tibshirani, *An Introduction to the
Bootstrap* (1993), ch. 15; Holm (1979) for the step-down correction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ragspan.gate.clusters import cluster_sums, count

EXACT_MAX = 16
BLOCK = 1024


@dataclass(frozen=True)
class TestResult:
    """p-values per metric, and how they were obtained."""

    p_values: np.ndarray
    method: str  # "randomization-exact", "randomization-monte-carlo", "t-test"
    n_resamples: int | None
    seed: int | None


def tie_tolerance(d: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Per column: how close a null mean must be to the observed mean to count as a tie."""
    tol: np.ndarray = np.maximum(np.abs(100 * np.finfo(float).eps * observed),
                                 1e-12 * np.abs(d).mean(axis=0))
    return tol


def _tail_p(null: np.ndarray, observed: np.ndarray, count: int, adjustment: int,
            gamma: np.ndarray) -> np.ndarray:
    less = ((null <= observed + gamma).sum(axis=0) + adjustment) / (count + adjustment)
    greater = ((null >= observed - gamma).sum(axis=0) + adjustment) / (count + adjustment)
    p: np.ndarray = np.clip(2 * np.minimum(less, greater), 0, 1)
    return p


def sign_flip_test(
    deltas: np.ndarray,
    n_resamples: int = 10_000,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
) -> TestResult:
    """Two-sided paired randomization test of mean delta = 0, per column (see module doc)."""
    d = np.asarray(deltas, dtype=float)
    n, m = d.shape
    if n == 0:
        return TestResult(np.ones(m), "randomization-exact", 0, None)
    observed = d.mean(axis=0)
    total = d.sum(axis=0)
    if n <= exact_max:
        count = 1 << n
        bits = ((np.arange(count)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
        null = (total - 2 * bits @ d) / n
        return TestResult(_tail_p(null, observed, count, 0, tie_tolerance(d, observed)),
                          "randomization-exact", count, None)
    rng = np.random.default_rng(seed)
    gamma = tie_tolerance(d, observed)
    less = np.zeros(m)
    greater = np.zeros(m)
    done = 0
    while done < n_resamples:
        b = min(BLOCK, n_resamples - done)
        raw = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw, axis=1, count=n).astype(float)
        null = (total - 2 * bits @ d) / n
        less += (null <= observed + gamma).sum(axis=0)
        greater += (null >= observed - gamma).sum(axis=0)
        done += b
    p = np.clip(2 * np.minimum((less + 1) / (n_resamples + 1), (greater + 1) / (n_resamples + 1)),
                0, 1)
    return TestResult(p, "randomization-monte-carlo", n_resamples, seed)


def paired_t_test(deltas: np.ndarray) -> TestResult:
    """Two-sided paired t-test per column (equals ``scipy.stats.ttest_rel``). A column of
    identical deltas has no variance: p = 1 when they are 0, else 0 (a constant shift)."""
    from scipy.special import stdtr

    d = np.asarray(deltas, dtype=float)
    n, m = d.shape
    p = np.ones(m)
    if n < 2:
        return TestResult(p, "t-test", None, None)
    sd = d.std(axis=0, ddof=1)
    mean = d.mean(axis=0)
    ok = sd > 0
    t = np.zeros(m)
    t[ok] = mean[ok] / (sd[ok] / math.sqrt(n))
    p[ok] = 2 * stdtr(n - 1, -np.abs(t[ok]))
    p[~ok & (mean != 0)] = 0.0
    return TestResult(p, "t-test", None, None)


def discordant_pairs(baseline: np.ndarray, candidate: np.ndarray) -> tuple[int, int, float]:
    """For a binary metric: (fixed, broken, exact two-sided binomial p on the discordant pairs).

    fixed = 0 -> 1, broken = 1 -> 0; p is McNemar's exact test, ``binomtest(fixed, fixed +
    broken, 0.5)``; 1.0 when there are no discordant pairs."""
    fixed = int(((baseline < 0.5) & (candidate >= 0.5)).sum())
    broken = int(((baseline >= 0.5) & (candidate < 0.5)).sum())
    n = fixed + broken
    if n == 0:
        return fixed, broken, 1.0
    from scipy.special import bdtr

    tail = float(bdtr(min(fixed, broken), n, 0.5))
    return fixed, broken, min(1.0, 2 * tail)


@dataclass(frozen=True)
class Interval:
    low: np.ndarray
    high: np.ndarray
    level: float
    n_resamples: int
    seed: int


def bootstrap_ci(deltas: np.ndarray, n_resamples: int = 2_000, seed: int = 0,
                 level: float = 0.95, clusters: np.ndarray | None = None) -> Interval:
    """Percentile bootstrap CI of the mean delta per column (queries resampled with
    replacement, the same resamples for every metric). ``clusters`` (a cluster number per
    query): whole clusters are resampled and a resample's mean is its total over its number
    of queries (Field & Welsh 2007); every query its own cluster is the plain bootstrap."""
    d = np.asarray(deltas, dtype=float)
    n, m = d.shape
    if n == 0:
        z = np.zeros(m)
        return Interval(z, z, level, 0, seed)
    if clusters is None:
        units, sizes = d, None
    else:
        units = cluster_sums(d, clusters)
        sizes = np.bincount(clusters, minlength=units.shape[0]).astype(float)
    u = units.shape[0]
    rng = np.random.default_rng(seed)
    means = np.empty((n_resamples, m))
    block = max(1, min(n_resamples, 20_000_000 // max(u, 1)))
    done = 0
    while done < n_resamples:
        b = min(block, n_resamples - done)
        idx = rng.integers(0, u, size=(b, u)) + (np.arange(b) * u)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * u).reshape(b, u).astype(float)
        means[done: done + b] = (counts @ units / n if sizes is None
                                 else (counts @ units) / (counts @ sizes)[:, None])
        done += b
    alpha = (1 - level) / 2
    return Interval(np.quantile(means, alpha, axis=0), np.quantile(means, 1 - alpha, axis=0),
                    level, n_resamples, seed)


def one_sided_upper_drop(deltas: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Upper confidence bound (one-sided, t-based) of the mean *drop* (-delta) per column.

    With fewer than 2 queries the bound is the observed drop itself (no interval exists).
    """
    from scipy.special import stdtrit

    d = -np.asarray(deltas, dtype=float)
    n = d.shape[0]
    mean = d.mean(axis=0) if n else np.zeros(d.shape[1])
    if n < 2:
        return mean
    se = d.std(axis=0, ddof=1) / math.sqrt(n)
    bound: np.ndarray = mean + stdtrit(n - 1, level) * se
    return bound


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


# ---- the family of gated hypotheses, and power ---------------------------------------------


def family_alpha(drops: list[np.ndarray], rows: list[np.ndarray], n: int, alpha: float,
                 correction: str, n_resamples: int, seed: int,
                 clusters: np.ndarray | None = None) -> float:
    """The per-hypothesis error rate that holds the family's at ``alpha``.

    Hypothesis ``h`` is "no drop" for the per-query drops ``drops[h]`` of the queries
    ``rows[h]`` (indices into ``n`` queries; a slice is a subset). ``none``: ``alpha``;
    ``holm``: ``alpha / m`` (Bonferroni, Holm's first step: bounds have no step-down);
    ``max-t``: Westfall-Young single-step max-T on one shared sign-flip matrix: ``c`` is the
    ``1 - alpha`` quantile of ``max_h T*_h`` (``T*_h`` the sign-flipped mean drop over its
    null standard error ``sqrt(sum d^2) / n_h``), and the level is the share of the flips
    in which one hypothesis alone passes ``c`` (mid-p at ties, averaged over the
    hypotheses), kept within ``[alpha / m, alpha]``. Correlated hypotheses (one metric at
    two k, a slice and the whole) cost less than Bonferroni; one hypothesis listed twice
    costs nothing. ``clusters`` (a cluster number per query): whole clusters are flipped
    together, and each null standard error is ``sqrt(sum_c s_c^2) / n_h`` over the member's
    cluster totals ``s_c`` (docs/gate.md, "Clustered eval sets")."""
    m = len(drops)
    if m <= 1 or correction == "none":
        return alpha
    if correction == "holm":
        return alpha / m
    if clusters is None:
        clusters = np.arange(n, dtype=np.int64)
    units = count(clusters)
    totals = [np.bincount(clusters[rows[h]], weights=drops[h], minlength=units)
              for h in range(m)]
    scale = [math.sqrt(float((s * s).sum())) / max(len(d), 1) for s, d in zip(totals, drops)]
    live = [h for h in range(m) if scale[h] > 0 and len(drops[h]) >= 2]
    if not live:
        return alpha
    weights = np.stack([totals[h] / len(drops[h]) / scale[h] for h in live], axis=1)
    rng = np.random.default_rng(seed)
    t = np.empty((n_resamples, len(live)))
    done = 0
    while done < n_resamples:
        b = min(BLOCK, n_resamples - done)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(b, units)).astype(float)
        t[done: done + b] = signs @ weights
        done += b
    c = float(np.quantile(t.max(axis=1), 1 - alpha, method="inverted_cdf"))
    tol = 1e-9
    tail = float(((t > c + tol).mean(axis=0) + 0.5 * (np.abs(t - c) <= tol).mean(axis=0)).mean())
    return float(min(alpha, max(alpha / m, tail)))


POWER = 0.8


def minimum_detectable_drop(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """The true mean drop a one-sided level-``alpha`` test finds with probability ``power``
    on ``n`` queries whose per-query drops have standard deviation ``sd`` (normal
    approximation: ``(z_{1-alpha} + z_power) sd / sqrt(n)``)."""
    from scipy.special import ndtri

    if n < 2:
        return math.inf
    return float((ndtri(1 - alpha) + ndtri(power)) * sd / math.sqrt(n))


def queries_needed(flip_rate: float, budget: float, drop: float, alpha: float,
                   power: float = POWER) -> dict[str, float]:
    """Topic-set-size design for a binary metric whose queries change with probability
    ``flip_rate`` (either way) between two configurations (per-query sd ``sqrt(flip_rate)``):

    - ``to_fail``: queries for a true drop ``drop`` to fail the interval gate with
      probability ``power``: its lower bound clears 0 (``((z_a + z_p) sd / drop)^2``) and
      the observed drop exceeds ``budget`` (``(z_p sd / (drop - budget))^2``), the larger;
    - ``to_pass``: queries for a change with no true drop to pass (its upper bound within
      ``budget``) with probability ``power`` rather than read inconclusive."""
    from scipy.special import ndtri

    sd = math.sqrt(flip_rate)
    za, zp = float(ndtri(1 - alpha)), float(ndtri(power))
    fail = ((za + zp) * sd / drop) ** 2
    fail = max(fail, (zp * sd / (drop - budget)) ** 2) if drop > budget else math.inf
    return {"to_fail": math.inf if math.isinf(fail) else max(2, math.ceil(fail)),
            "to_pass": max(2, math.ceil(((za + zp) * sd / budget) ** 2))}

