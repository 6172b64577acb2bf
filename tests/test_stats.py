"""Statistics against scipy: the randomization test equals ``scipy.stats.permutation_test``
(exactly for n <= 16, within 3 Monte Carlo standard errors for n = 50 and 500); the t-test
equals ``scipy.stats.ttest_rel``; Holm against a hand-worked example."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from ragspan.gate.stats import (
    bootstrap_ci,
    discordant_pairs,
    holm,
    one_sided_upper_drop,
    paired_t_test,
    sign_flip_test,
)


def scipy_p(x, y, n_resamples=np.inf, seed=None):
    res = st.permutation_test(
        (y, x), lambda a, b, axis: np.mean(a - b, axis=axis), permutation_type="samples",
        n_resamples=n_resamples, vectorized=True, random_state=seed)
    return res.pvalue


@pytest.mark.parametrize("n", [2, 5, 8, 12, 16])
def test_exact_equals_scipy(n):
    rng = np.random.default_rng(n)
    for trial in range(5):
        x = rng.random(n)
        y = x + rng.normal(0.05 * trial, 0.2, n)
        y[: n // 3] = x[: n // 3]  # zero deltas and ties
        binary_x = (rng.random(n) < 0.5).astype(float)
        binary_y = (rng.random(n) < 0.5).astype(float)
        d = np.column_stack([y - x, binary_y - binary_x])
        res = sign_flip_test(d)
        assert res.method == "randomization-exact"
        assert res.p_values[0] == scipy_p(x, y)
        assert res.p_values[1] == scipy_p(binary_x, binary_y)


@pytest.mark.parametrize("n", [50, 500])
def test_monte_carlo_within_three_standard_errors(n):
    rng = np.random.default_rng(100 + n)
    x = rng.random(n)
    y = x + rng.normal(0.02, 0.3, n)
    exact_ish = scipy_p(x, y, n_resamples=40_000, seed=1)
    res = sign_flip_test((y - x)[:, None], n_resamples=10_000, seed=3)
    se = math.sqrt(exact_ish * (1 - exact_ish) * (1 / 10_000 + 1 / 40_000))
    assert abs(res.p_values[0] - exact_ish) <= 3 * se
    assert res.method == "randomization-monte-carlo" and res.seed == 3


def test_monte_carlo_is_seeded_and_never_zero():
    d = np.full((40, 1), 0.5)
    a = sign_flip_test(d, 1000, seed=7).p_values
    b = sign_flip_test(d, 1000, seed=7).p_values
    assert a == b
    assert a[0] > 0 and a[0] == pytest.approx(2 / 1001)


def test_t_test_equals_scipy():
    rng = np.random.default_rng(5)
    x, y = rng.random(30), rng.random(30)
    want = st.ttest_rel(y, x).pvalue
    assert paired_t_test((y - x)[:, None]).p_values[0] == pytest.approx(want, rel=1e-12)
    assert paired_t_test(np.zeros((5, 1))).p_values[0] == 1.0


def test_discordant_pairs_exact():
    b = np.array([1, 1, 1, 1, 0, 0, 1, 1], float)
    c = np.array([0, 0, 0, 0, 0, 0, 1, 1], float)
    fixed, broken, p = discordant_pairs(b, c)
    assert (fixed, broken) == (0, 4)
    assert p == pytest.approx(0.125)  # 8 queries, 4 lose their only gold span
    assert p == pytest.approx(st.binomtest(0, 4, 0.5).pvalue)


def test_holm_hand_example():
    # p sorted 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04
    assert holm(np.array([0.04, 0.01, 0.02])).tolist() == pytest.approx([0.04, 0.03, 0.04])


def test_bootstrap_and_upper_bound():
    rng = np.random.default_rng(0)
    d = rng.normal(-0.1, 0.05, (200, 1))
    ci = bootstrap_ci(d, 2000, seed=1)
    assert ci.low[0] < d.mean() < ci.high[0]
    assert bootstrap_ci(d, 2000, seed=1).low[0] == ci.low[0]
    upper = one_sided_upper_drop(d)
    want = -d.mean() + st.t.ppf(0.95, 199) * d.std(ddof=1) / math.sqrt(200)
    assert upper[0] == pytest.approx(want)


@pytest.mark.parametrize("kind", ["normal", "binary", "skewed"])
def test_bootstrap_equals_scipy_percentile_bootstrap(kind):
    """``bootstrap_ci`` against ``scipy.stats.bootstrap(method="percentile")`` on the same
    seeded per-query deltas: the two draw their resamples differently, so the endpoints agree
    to Monte Carlo error (0.15 standard errors of the mean at 20,000 resamples), and both
    columns of a two-metric matrix get the interval their own column gets alone."""
    rng = np.random.default_rng({"normal": 3, "binary": 4, "skewed": 5}[kind])
    n = 60
    if kind == "normal":
        d = rng.normal(-0.02, 0.1, n)
    elif kind == "binary":  # complete grounding deltas: -1, 0, +1
        d = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.2, 0.65, 0.15])
    else:
        d = rng.exponential(0.1, n) - 0.08
    ours = bootstrap_ci(np.column_stack([d, -d]), 20_000, seed=11)
    ref = st.bootstrap((d,), np.mean, n_resamples=20_000, method="percentile",
                       confidence_level=0.95, random_state=np.random.default_rng(12))
    se = d.std(ddof=1) / math.sqrt(n)
    assert ours.low[0] == pytest.approx(ref.confidence_interval.low, abs=0.15 * se)
    assert ours.high[0] == pytest.approx(ref.confidence_interval.high, abs=0.15 * se)
    # the same resamples serve every column: the negated column's interval is the mirror
    assert ours.low[1] == pytest.approx(-ours.high[0], abs=1e-12)
    assert ours.high[1] == pytest.approx(-ours.low[0], abs=1e-12)


def _exact_sign_flip_p(num: list[int]) -> float:
    """Two-sided sign-flip p-value by exact integer arithmetic: ``num`` are the deltas times
    a common denominator, so every null sum is an exact integer and ties are exact."""
    n = len(num)
    bits = (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1
    d = np.asarray(num, dtype=np.int64)
    total = int(d.sum())
    null = total - 2 * (bits @ d)
    less, greater = int((null <= total).sum()), int((null >= total).sum())
    return min(1.0, 2 * min(less, greater) / (1 << n))


def test_sign_flip_equals_exact_rational_enumeration():
    """6,000 seeded vectors of metric-like deltas (differences of ratios a/b with b <= 12, as
    per-query coverage and precision values are; half of them with a candidate that is a
    permutation of the baseline, so the mean delta is exactly 0 but arrives as rounding
    noise): the p-value equals exact enumeration over the rationals, every one."""
    from fractions import Fraction

    rng = np.random.default_rng(20261201)
    wrong = []
    for trial in range(6000):
        n = int(rng.integers(2, 11))
        den_b = rng.integers(1, 13, n)
        base = [Fraction(int(rng.integers(0, b + 1)), int(b)) for b in den_b]
        if trial % 2:
            cand = [base[i] for i in rng.permutation(n)]
        else:
            den_c = rng.integers(1, 13, n)
            cand = [Fraction(int(rng.integers(0, c + 1)), int(c)) for c in den_c]
        exact = [c - b for b, c in zip(base, cand)]
        lcm = math.lcm(*(x.denominator for x in exact))
        expected = _exact_sign_flip_p([int(x * lcm) for x in exact])
        floats = np.array([[float(c) - float(b)] for b, c in zip(base, cand)])
        got = float(sign_flip_test(floats).p_values[0])
        if abs(got - expected) > 1e-12:
            wrong.append((trial, got, expected))
    assert wrong == [], f"{len(wrong)} of 6000 wrong, e.g. {wrong[:3]}"
