"""Leakage measures of the GMM-masking paper (issue 14, first part; ``../shared/papers/002``,
MATH.md §10) against references computed here: mpmath quadrature, scipy, Monte Carlo intervals,
the Gaussian closed form, and MATH.md's test case."""
import math

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from scipy import optimize, stats

import jaxpuffer as jp
from jaxpuffer.leakage import MultivariateGaussianMixture as MGM
from jaxpuffer.leakage import moments, references, series

KEY = jax.random.PRNGKey(7)
# MATH.md §10's test case (d = 1, two components)
P = MGM([0.3, 0.7], [[-1.0], [2.0]], [[[0.5]], [[1.5]]])
Q = MGM([0.4, 0.6], [[-0.5], [2.5]], [[[0.8]], [[1.2]]])


def _mp_mixture(w, m, v):
    return lambda x: sum(wi * mp.exp(-((x - mi) ** 2) / (2 * vi)) / mp.sqrt(2 * mp.pi * vi) for wi, mi, vi in zip(w, m, v))


def test_math_md_case_moments_entropies_and_kl():
    assert math.exp(float(moments.log_power_moment(P, P, 1))) == pytest.approx(0.161253908, abs=5e-10)
    assert math.exp(float(moments.log_power_moment(P, Q, 1))) == pytest.approx(0.155925698, abs=5e-10)
    h_p, err = references.entropy_quadrature_1d(P)
    assert h_p == pytest.approx(1.91964696, abs=5e-9) and err < 1e-10
    assert references.entropy_quadrature_1d(P, Q)[0] == pytest.approx(1.94616297, abs=5e-9)
    kl, _ = references.kl_quadrature_1d(P, Q)
    assert kl == pytest.approx(0.02651601, abs=5e-9)
    mean, se = references.kl_monte_carlo(KEY, P, Q, 400_000)
    assert abs(float(mean) - kl) < 3.29 * float(se)


def test_power_moments_against_mpmath_and_monte_carlo():
    mp.mp.dps = 30
    p = _mp_mixture([0.3, 0.7], [-1, 2], [0.5, 1.5])
    q = _mp_mixture([0.4, 0.6], [-0.5, 2.5], [0.8, 1.2])
    for k in (2, 5, 10):
        ref = float(mp.quad(lambda x: p(x) * q(x) ** k, [-mp.inf, -1, -0.5, 2, 2.5, mp.inf]))
        assert math.exp(float(moments.log_power_moment(P, Q, k))) == pytest.approx(ref, rel=1e-11)
    # d = 2, three components: E_P[R^k] as the Monte Carlo mean of R(x)^k, x ~ P (99.9% interval)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 2, 2))
    covs = a @ np.swapaxes(a, -1, -2) + 0.5 * np.eye(2)
    p2 = MGM([0.2, 0.5, 0.3], rng.normal(size=(3, 2)), covs)
    r2 = MGM([0.6, 0.4], rng.normal(size=(2, 2)), np.array([np.eye(2), 2 * np.eye(2)]))
    x = p2.sample(KEY, 400_000)
    for k in (1, 2, 3):
        values = np.exp(k * np.asarray(r2.log_density(x)))
        closed = math.exp(float(moments.log_power_moment(p2, r2, k)))
        assert abs(values.mean() - closed) < 3.29 * values.std() / math.sqrt(values.size)
    # a single Gaussian: E_P[P] = (4π)^{−d/2} |S|^{−1/2}
    single = MGM([1.0], [[0.0, 1.0]], [covs[0]])
    expect = (4 * math.pi) ** -1 / math.sqrt(np.linalg.det(covs[0]))
    assert math.exp(float(moments.log_power_moment(single, single, 1))) == pytest.approx(expect, rel=1e-13)


def test_gaussian_kl_closed_form_against_quadrature_and_monte_carlo():
    one_p, one_q = MGM([1.0], [[0.3]], [[[0.7]]]), MGM([1.0], [[-0.4]], [[[1.9]]])
    closed = float(references.kl_gaussians(one_p.means[0], one_p.covs[0], one_q.means[0], one_q.covs[0]))
    assert closed == pytest.approx(references.kl_quadrature_1d(one_p, one_q)[0], rel=1e-11)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    s_p, s_q = a @ a.T + np.eye(3), b @ b.T + np.eye(3)
    m_p, m_q = rng.normal(size=3), rng.normal(size=3)
    closed = float(references.kl_gaussians(m_p, s_p, m_q, s_q))
    mean, se = references.kl_monte_carlo(KEY, MGM([1.0], [m_p], [s_p]), MGM([1.0], [m_q], [s_q]), 400_000)
    assert abs(float(mean) - closed) < 3.29 * float(se)
    # against scipy's multivariate normal log-density (an independent evaluation of the integrand)
    x = rng.normal(size=(5, 3))
    np.testing.assert_allclose(MGM([1.0], [m_p], [s_p]).log_density(jnp.asarray(x)), stats.multivariate_normal(m_p, s_p).logpdf(x), rtol=1e-12)


def test_series_errata_and_convergence():
    h_p, _ = references.entropy_quadrature_1d(P)
    kl_ref, _ = references.kl_quadrature_1d(P, Q)
    # Taylor (eq. 14) approaches H(P) as N grows (slowly: the tails sit on the series' boundary)
    errors = [abs(series.taylor_entropy(P, P, n)[0] - h_p) for n in (5, 10, 20, 30)]
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:])) and errors[-1] < 0.01
    # Theorem 4.2 as printed has the sign of KL reversed; the corrected difference is KL's sign
    corrected, _ = series.kl(P, Q, 30)
    printed, _ = series.kl(P, Q, 30, printed=True)
    assert printed == -corrected and printed < 0 < corrected
    assert abs(corrected - kl_ref) < 0.05 * kl_ref
    # the Legendre series' spurious −log a: the printed form is the corrected one minus log a
    a = float(moments.density_peak_bound(P))
    fixed, _ = series.legendre_entropy(P, P, 10, a)
    with_log, _ = series.legendre_entropy(P, P, 10, a, printed=True)
    assert with_log - fixed == pytest.approx(-math.log(a), rel=1e-12)
    assert abs(fixed - h_p) < 0.003 < abs(with_log - h_p)
    # float64 cancellation: beyond ~15 Legendre / ~40 Taylor terms the estimate is refused
    value, rounding = series.legendre_entropy(P, P, 25)
    assert math.isnan(value) and rounding > 1.0
    value, rounding = series.taylor_entropy(P, P, 60)
    assert math.isnan(value) and rounding > 1e-8
    with pytest.raises(ValueError, match="series"):
        series.kl(P, Q, 5, series="fourier")


def test_mixture_conversion_sampling_and_bad_input():
    one = jp.GaussianMixture([0.25, 0.75], [0.0, 3.0], [1.0, 0.5])
    m = MGM.from_1d(one)
    back = m.to_1d()
    np.testing.assert_allclose(back.stds, one.stds, rtol=1e-15)
    x = jnp.linspace(-3, 5, 9)[:, None]
    ref = np.log(0.25 * stats.norm.pdf(x[:, 0], 0, 1) + 0.75 * stats.norm.pdf(x[:, 0], 3, 0.5))
    np.testing.assert_allclose(m.log_density(x), ref, rtol=1e-13)
    draws = np.asarray(m.sample(KEY, 100_000))[:, 0]
    assert stats.kstest(draws, lambda v: 0.25 * stats.norm.cdf(v, 0, 1) + 0.75 * stats.norm.cdf(v, 3, 0.5)).pvalue > 1e-3
    diag = MGM([0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [0.5, 0.5]], diagonal=True)
    assert diag.covs.shape == (2, 2, 2) and float(diag.covs[0, 1, 1]) == 2.0
    with pytest.raises(ValueError, match="positive definite"):
        MGM([1.0], [[0.0, 0.0]], [[[1.0, 2.0], [2.0, 1.0]]])
    with pytest.raises(ValueError, match="symmetric"):
        MGM([1.0], [[0.0, 0.0]], [[[1.0, 0.1], [0.0, 1.0]]])
    with pytest.raises(ValueError, match="weights must sum to 1"):
        MGM([0.5, 0.6], [[0.0], [1.0]], [[[1.0]], [[1.0]]])
    with pytest.raises(ValueError, match="dimension"):
        MGM([1.0], [[0.0, 0.0]], [[[1.0]]])
    with pytest.raises(ValueError, match="means must be finite"):
        MGM([1.0], [[float("nan")]], [[[1.0]]])
    with pytest.raises(ValueError, match="d = 1"):
        diag.to_1d()


def _random_mixture(rng, d):
    k = int(rng.integers(1, 4))
    a = rng.normal(size=(k, d, d))
    covs = a @ np.swapaxes(a, -1, -2) / d + 0.3 * np.eye(d)
    return MGM(rng.dirichlet(np.ones(k)), rng.normal(0, 2, (k, d)), covs)


def test_variational_bracket_contains_the_reference():
    from jaxpuffer.leakage import bounds

    rng = np.random.default_rng(4)
    for _ in range(25):  # d = 1 against quadrature
        p, q = _random_mixture(rng, 1), _random_mixture(rng, 1)
        ref, err = references.kl_quadrature_1d(p, q)
        assert float(bounds.kl_lower(p, q)) <= ref + 10 * err + 1e-12
        assert ref - 10 * err - 1e-12 <= float(bounds.kl_upper(p, q))
    for d in (2, 5):  # against Monte Carlo's 99.9% interval
        p, q = _random_mixture(rng, d), _random_mixture(rng, d)
        mean, se = references.kl_monte_carlo(KEY, p, q, 200_000)
        assert float(bounds.kl_lower(p, q)) <= float(mean) + 3.29 * float(se)
        assert float(mean) - 3.29 * float(se) <= float(bounds.kl_upper(p, q))
    # zero-weight components (as masking leaves them) change neither bound
    padded_p = MGM([0.3, 0.7, 0.0], [[-1.0], [2.0], [5.0]], [[[0.5]], [[1.5]], [[1.0]]])
    padded_q = MGM([0.4, 0.0, 0.6], [[-0.5], [9.0], [2.5]], [[[0.8]], [[2.0]], [[1.2]]])
    assert float(bounds.kl_upper(padded_p, padded_q)) == pytest.approx(float(bounds.kl_upper(P, Q)), rel=1e-12)
    assert float(bounds.kl_lower(padded_p, padded_q)) == pytest.approx(float(bounds.kl_lower(P, Q)), abs=1e-12)
    # one component each: the upper bound is the closed form
    p, q = MGM([1.0], [[0.0, 1.0]], [np.eye(2)]), MGM([1.0], [[1.0, 0.0]], [2 * np.eye(2)])
    closed = float(references.kl_gaussians(p.means[0], p.covs[0], q.means[0], q.covs[0]))
    assert float(bounds.kl_upper(p, q)) == pytest.approx(closed, rel=1e-12)


def test_masking_keeps_valid_mixtures_under_extreme_noise():
    from jaxpuffer.leakage import masking

    p = MGM([0.3, 0.7], [[-1.0, 0.0], [2.0, 1.0]], [0.5 * np.eye(2), [[1.5, 0.3], [0.3, 1.0]]])
    for etas, rounds in (((0.1, 0.2, 0.1), 1), ((10.0, 100.0, 100.0), 3)):
        masked = masking.mask(KEY, p, *etas, draws=10_000, rounds=rounds)
        w, c = np.asarray(masked.weights), np.asarray(masked.covs)
        assert np.all(w >= 0) and np.allclose(w.sum(axis=-1), 1.0, atol=1e-14)
        assert np.all(c == np.swapaxes(c, -1, -2)) and np.all(np.linalg.eigvalsh(c) > 0)
        np.linalg.cholesky(c)  # raises if any masked covariance is not positive definite
    # one round, small noise: the mean's perturbation has covariance η_μ² Σ_i (Monte Carlo, 5%)
    masked = masking.mask(KEY, p, 0.1, 0.2, 0.1, draws=10_000)
    shift = np.asarray(masked.means - p.means)[:, 1, :] / 0.2
    np.testing.assert_allclose(np.cov(shift.T), np.asarray(p.covs[1]), rtol=0.05, atol=0.02)
    with pytest.raises(ValueError, match="eta_mu"):
        masking.mask(KEY, p, 0.1, -1.0, 0.1)
    with pytest.raises(ValueError, match="no batch shape"):
        masking.mask(KEY, masked, 0.1, 0.1, 0.1)


def test_renyi_divergence_and_its_dp_conversion():
    p1, q1 = MGM([1.0], [[0.3]], [[[0.7]]]), MGM([1.0], [[-0.4]], [[[1.9]]])
    for alpha in (1.5, 2.0, 4.0):
        closed = float(references.renyi_gaussians(alpha, p1.means[0], p1.covs[0], q1.means[0], q1.covs[0]))
        assert closed == pytest.approx(references.renyi_quadrature_1d(alpha, p1, q1)[0], rel=1e-10)
    # S_α not positive definite: the integral diverges
    assert float(references.renyi_gaussians(4.0, 0.0 * p1.means[0], 2.0 * np.eye(1), p1.means[0] * 0, np.eye(1))) == np.inf
    # Mironov's conversion is an upper bound on the exact ε: the Gaussian mechanism (Δ = 1, σ = 2)
    # has D_α = α/(2σ²); the best converted ε stays above the exact ε from dp_accounting's δ(ε)
    from dp_accounting.pld import privacy_loss_mechanism as plm

    delta, sigma = 1e-6, 2.0
    converted = min(references.renyi_to_dp(a, a / (2 * sigma**2), delta) for a in np.linspace(1.1, 60, 600))
    loss = plm.GaussianPrivacyLoss(sigma, sensitivity=1.0)
    exact = optimize.brentq(lambda e: loss.get_delta_for_epsilon(e) - delta, 0.0, 20.0, xtol=1e-12)
    assert converted >= exact and converted < 1.5 * exact


def test_noise_for_a_kl_target_is_safe():
    from jaxpuffer.leakage import bounds
    from jaxpuffer.leakage.calibration import noise_for_kl

    def noisy(m, s):
        return MGM(m.weights, m.means, np.asarray(m.covs) + s**2 * np.eye(m.dim))

    for target in (0.01, 1e-4):
        exact = noise_for_kl(P, Q, target, method="quadrature")
        assert references.kl_quadrature_1d(noisy(P, exact), noisy(Q, exact))[0] <= target
        assert references.kl_quadrature_1d(noisy(P, exact * (1 - 1e-6)), noisy(Q, exact * (1 - 1e-6)))[0] > target
        certified = float(noise_for_kl(P, Q, target))
        assert certified >= exact  # the bound is an upper bound on KL: never less noise than needed
        assert float(bounds.kl_upper(noisy(P, certified), noisy(Q, certified))) <= target
        assert float(bounds.kl_upper(noisy(P, certified * (1 - 1e-9)), noisy(Q, certified * (1 - 1e-9)))) > target
    assert noise_for_kl(P, Q, 1.0, method="quadrature") == 0.0 and float(noise_for_kl(P, Q, 1.0)) == 0.0
    # batched over pairs with vmap (d = 2), each equal to its single call
    rng = np.random.default_rng(9)
    ps = [MGM(rng.dirichlet([1, 1]), rng.normal(size=(2, 2)), np.array([np.eye(2), 2 * np.eye(2)])) for _ in range(3)]
    qs = [MGM(rng.dirichlet([1, 1]), rng.normal(size=(2, 2)), np.array([np.eye(2), 0.5 * np.eye(2)])) for _ in range(3)]
    stack = lambda ms: jax.tree_util.tree_map(lambda *a: jnp.stack(a), *ms)  # noqa: E731
    batched = jax.vmap(lambda a, b: noise_for_kl(a, b, 0.05))(stack(ps), stack(qs))
    np.testing.assert_allclose(batched, [float(noise_for_kl(a, b, 0.05)) for a, b in zip(ps, qs)], rtol=1e-12)
    with pytest.raises(ValueError, match="target"):
        noise_for_kl(P, Q, 0.0)
    with pytest.raises(ValueError, match="d = 1"):
        noise_for_kl(ps[0], qs[0], 0.1, method="quadrature")


def test_em_in_two_dimensions_matches_scikit_learn():
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], 600), rng.multivariate_normal([4, 1], [[0.5, 0], [0, 2]], 400)])
    fit = jp.fit_gmm_nd(x, 2, key=KEY)
    sk = GaussianMixture(2, covariance_type="full", reg_covar=1e-6, tol=1e-10, max_iter=1000, random_state=0).fit(x)
    order = np.argsort(sk.means_[:, 0])
    assert bool(fit.converged)
    assert float(fit.log_likelihood) >= sk.score(x) - 1e-9
    np.testing.assert_allclose(fit.mixture.weights, sk.weights_[order], atol=1e-5)
    np.testing.assert_allclose(fit.mixture.means, sk.means_[order], atol=1e-5)
    np.testing.assert_allclose(fit.mixture.covs, sk.covariances_[order], atol=1e-5)
    with pytest.raises(ValueError, match="x must have shape"):
        jp.fit_gmm_nd(x[:, 0], 2, key=KEY)


def test_dist_gmm_and_gaussian_total_variation():
    from jaxpuffer.leakage.distance import dist_gmm, tv_gaussians_1d

    mp.mp.dps = 20
    for m1, s1, m2, s2 in [(0, 1, 1, 1), (0, 1, 0, 2), (0.3, 0.7, -1, 1.9), (5, 0.1, -5, 3)]:
        # ½∫|f − g| split at the crossings, found here by a scan and brentq on the log-ratio
        gap = lambda x: stats.norm.logpdf(x, m1, s1) - stats.norm.logpdf(x, m2, s2)  # noqa: E731
        grid = np.linspace(min(m1, m2) - 12 * max(s1, s2), max(m1, m2) + 12 * max(s1, s2), 20001)
        values = gap(grid)
        roots = [optimize.brentq(gap, a, b, xtol=1e-15) for a, b, u, v in zip(grid[:-1], grid[1:], values[:-1], values[1:]) if u * v <= 0]
        f = lambda x: abs(mp.npdf(x, m1, s1) - mp.npdf(x, m2, s2)) / 2  # noqa: E731
        ref = float(mp.quad(f, [-mp.inf, *sorted(set(roots + [m1, m2])), mp.inf]))
        assert tv_gaussians_1d(m1, s1, m2, s2) == pytest.approx(ref, rel=1e-9, abs=1e-14)
    assert tv_gaussians_1d(0.0, 1.0, 0.0, 1.0) == 0.0
    # eq. (3): 0 for identical mixtures, blind to the components' order, and the best matching
    assert dist_gmm(P, P) == 0.0
    swapped = MGM(Q.weights[::-1], Q.means[::-1], Q.covs[::-1])
    assert dist_gmm(P, swapped) == dist_gmm(P, Q)
    straight = max(max(abs(0.3 - 0.4), tv_gaussians_1d(-1, math.sqrt(0.5), -0.5, math.sqrt(0.8))), max(abs(0.7 - 0.6), tv_gaussians_1d(2, math.sqrt(1.5), 2.5, math.sqrt(1.2))))
    crossed = max(max(abs(0.3 - 0.6), tv_gaussians_1d(-1, math.sqrt(0.5), 2.5, math.sqrt(1.2))), max(abs(0.7 - 0.4), tv_gaussians_1d(2, math.sqrt(1.5), -0.5, math.sqrt(0.8))))
    assert dist_gmm(P, Q) == pytest.approx(min(straight, crossed), rel=1e-14)
    with pytest.raises(ValueError, match="same number of components"):
        dist_gmm(P, MGM([1.0], [[0.0]], [[[1.0]]]))
