"""Closed forms of the Gaussian-priors paper against independent scipy computations."""
import math

import numpy as np
import pytest
import scipy.stats

import jaxpuffer as jp
from jaxpuffer import bounds


def scipy_theorem1(mu_i, s_i, mu_j, s_j, eps, delta):
    """Eq. (5) for one pair, computed independently with scipy's normal quantile."""
    return (abs(mu_i - mu_j) + abs(s_i - s_j) * scipy.stats.norm.isf(delta / 2)) / eps


def random_pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 3, n), rng.uniform(0, 4, n), rng.normal(0, 3, n), rng.uniform(0, 4, n))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.05, 0.5])
def test_theorem1_grid_against_scipy(eps, delta):
    mi, si, mj, sj = random_pairs(200)
    ours = np.asarray(bounds.theorem1(jp.PairSet(jp.Gaussian(mi, si), jp.Gaussian(mj, sj)), eps, delta))
    ref = np.array([scipy_theorem1(*row, eps, delta) for row in zip(mi, si, mj, sj)])
    np.testing.assert_allclose(ours, ref, rtol=1e-13)


def test_theorem1_math_md_table():
    # MATH.md §6 table, columns "Thm 1 (Lambert)" and "Thm 1" (rounded to 4 decimals there).
    cases = [((0, 1, 1, 2), 1, 0.05, 3.0306, 2.9600), ((0, 1, 1, 2), 1, 1e-5, 5.4271, 5.4172),
             ((0, 1, 0, 3), 0.5, 1e-3, 13.2477, 13.1621), ((2, 1, 0, 1), 1, 1e-3, 2.0, 2.0)]
    for (mi, si, mj, sj), eps, delta, lam, exact in cases:
        pairs = jp.PairSet(jp.Gaussian(mi, si), jp.Gaussian(mj, sj))
        assert float(bounds.theorem1(pairs, eps, delta)) == pytest.approx(exact, abs=5e-5)
        assert float(bounds.theorem1(pairs, eps, delta, tau="lambert")) == pytest.approx(lam, abs=5e-5)


def test_theorem1_broadcasts_eps_delta():
    pairs = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0))
    out = bounds.theorem1(pairs, np.array([[0.5], [1.0]]), np.array([1e-3, 0.1, 0.5]))
    assert out.shape == (2, 3)
    assert float(out[1, 1]) == pytest.approx(scipy_theorem1(0, 1, 1, 2, 1.0, 0.1))


def test_point_masses_reduce_to_l1_sensitivity_rule():
    # σ = 0: ε-DP, Laplace b = Δ/ε whatever δ.
    pairs = jp.PairSet(jp.Gaussian([0.0, 3.0, -1.0], 0.0), jp.Gaussian([2.0, 3.5, 4.0], 0.0))
    for delta in (1e-9, 0.3):
        np.testing.assert_allclose(bounds.theorem1(pairs, 0.5, delta), [4.0, 1.0, 10.0], rtol=1e-15)
    np.testing.assert_allclose(bounds.remark1(pairs, 0.5), [4.0, 1.0, 10.0], rtol=1e-15)


def test_remark1_translations_and_rejection():
    pairs = jp.PairSet(jp.Gaussian([0.0, 1.0], [2.0, 0.5]), jp.Gaussian([3.0, -1.0], [2.0, 0.5]))
    np.testing.assert_allclose(bounds.remark1(pairs, 2.0), [1.5, 1.0])
    # translations: Theorem 1 agrees with Remark 1 for every δ
    np.testing.assert_allclose(bounds.theorem1(pairs, 2.0, 1e-6), bounds.remark1(pairs, 2.0))
    with pytest.raises(ValueError, match="translations"):
        bounds.remark1(jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(0.0, 1.1)), 1.0)


def test_corollary1_presence_against_per_user_computation():
    rng = np.random.default_rng(1)
    K = 300
    means, stds = rng.normal(0, 2, K), rng.uniform(0, 3, K)
    eps, delta = 0.7, 1e-4
    ours = np.asarray(bounds.corollary1_presence(means, stds, eps, delta))
    tau = scipy.stats.norm.isf(delta / 2)
    for k in range(K):  # direct: the others' variance summed afresh for each user (math.fsum)
        others = math.fsum(np.delete(stds, k) ** 2)
        d_sigma = math.sqrt(others + stds[k] ** 2) - math.sqrt(others)
        assert ours[k] == pytest.approx((abs(means[k]) + d_sigma * tau) / eps, rel=1e-11)
    # and it is Theorem 1 on the presence pair set
    np.testing.assert_allclose(ours, bounds.theorem1(jp.sum_query_presence(means, stds), eps, delta), rtol=1e-9)


def test_corollary1_value():
    np.testing.assert_allclose(bounds.corollary1_value([1.0, 5.0], 3.0, 2.0), [1.0, 1.0])


def test_identical_users_figure2_setting():
    # Figure 2: μ = 1, σ² ∈ {1..25}, (ε, δ) = (1, 0.3), K = 1..1000.
    K = np.arange(1, 1001)[None, :]
    sigma = np.sqrt(np.arange(1, 26))[:, None]
    ours = np.asarray(bounds.identical_users(1.0, sigma, K, 1.0, 0.3))
    ref = (1 + (np.sqrt(K) - np.sqrt(K - 1)) * sigma * scipy.stats.norm.isf(0.15)) / 1.0
    np.testing.assert_allclose(ours, ref, rtol=1e-9)
    assert np.all(np.diff(ours, axis=1) < 0)  # decreasing in K
    assert np.all(np.diff(ours, axis=0) > 0)  # increasing in σ
    # K = 1: only user present vs nobody: |μ| + σ τ*
    np.testing.assert_allclose(ours[:, 0], 1 + sigma[:, 0] * scipy.stats.norm.isf(0.15), rtol=1e-13)
    # the limit |μ|/ε as K grows
    far = bounds.identical_users(1.0, 5.0, 1e14, 1.0, 0.3)
    assert float(far) == pytest.approx(1.0, abs=1e-6) and float(far) > 1.0
    # eq. (11) is Corollary 1(a) with identical users
    np.testing.assert_allclose(bounds.corollary1_presence(np.ones(50), 2.0 * np.ones(50), 1.0, 0.3),
                               bounds.identical_users(1.0, 2.0, 50, 1.0, 0.3), rtol=1e-12)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda p: bounds.theorem1(p, 0.0, 0.1), "eps"),
        (lambda p: bounds.theorem1(p, -1.0, 0.1), "eps"),
        (lambda p: bounds.theorem1(p, 1.0, 0.0), "delta"),
        (lambda p: bounds.theorem1(p, 1.0, 1.0), "delta"),
        (lambda p: bounds.theorem1(p, 1.0, 0.1, tau="bogus"), "tau"),
        (lambda p: bounds.theorem1("pairs", 1.0, 0.1), "pairs"),
        (lambda p: bounds.identical_users(1.0, 1.0, 0, 1.0, 0.1), "K"),
        (lambda p: bounds.identical_users(1.0, 1.0, 2.5, 1.0, 0.1), "K"),
        (lambda p: bounds.corollary1_presence([1.0], [float("nan")], 1.0, 0.1), "user_stds"),
    ],
)
def test_bad_input_raises(call, name):
    pairs = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0))
    with pytest.raises(ValueError, match=name):
        call(pairs)
