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
    assert math.isnan(value) and rounding > 1e-8
    value, rounding = series.taylor_entropy(P, P, 60)
    assert math.isnan(value) and rounding > 1e-8
    with pytest.raises(ValueError, match="series"):
        series.kl(P, Q, 5, series="fourier")


def _mp_series(p, r, terms, which, a):
    """The series of :mod:`jaxpuffer.leakage.series` re-evaluated in 50-digit arithmetic from the
    same moments (exact binomials; c_n of the Legendre series from its j-sum in rationals), so the
    difference is the float64 evaluation's rounding alone."""
    from fractions import Fraction

    mp.mp.dps = 50
    a = mp.mpf(float(a))
    mu = [mp.exp(mp.mpf(float(x))) / a**k for k, x in enumerate(np.asarray(moments.log_power_moments(p, r, terms)))]
    if which == "taylor":
        return -mp.log(a) - mp.fsum(mp.mpf((-1) ** (n - 1)) / n * mp.fsum(math.comb(n, k) * (-1) ** (n - k) * mu[k] for k in range(n + 1)) for n in range(1, terms + 1))
    total = mp.mpf(0)
    for n in range(terms + 1):
        s = [Fraction((-1) ** (n + j) * math.factorial(n + j), math.factorial(n - j) * math.factorial(j + 1) ** 2) for j in range(n + 1)]
        c = (2 * n + 1) * (sum(t * (j + 1) for j, t in enumerate(s)) * mp.log(a) - mp.mpf(sum(s).numerator) / sum(s).denominator)
        total -= c * mp.fsum((-1) ** (n + i) * math.comb(n, i) * math.comb(n + i, i) * mu[i] for i in range(n + 1))
    return total


def test_series_batched_differentiable_and_rounding_bound_honest():
    rng = np.random.default_rng(11)
    n = 12
    w = rng.dirichlet(np.ones(2), size=(2, n))
    ps, qs = (MGM(w[i], rng.normal(0.0, 1.5, (n, 2, 1)), rng.uniform(0.4, 2.0, (n, 2, 1, 1))) for i in (0, 1))
    one = lambda t, k: jax.tree_util.tree_map(lambda x: x[k], t)  # noqa: E731
    for which, terms in (("taylor", 20), ("legendre", 10)):
        values, rounding = jax.jit(jax.vmap(lambda p, q: series.kl(p, q, terms, series=which, max_rounding=np.inf)))(ps, qs)
        assert values.shape == (n,) and np.all(np.isfinite(values))
        for k in range(4):  # one call per pair = the batched row, to the two rounding bounds
            single, single_rounding = series.kl(one(ps, k), one(qs, k), terms, series=which, max_rounding=np.inf)
            assert abs(float(single) - float(values[k])) <= float(single_rounding + rounding[k])
        # the stated rounding bound covers the float64 evaluation (50-digit re-evaluation, same moments)
        entropy = series.taylor_entropy if which == "taylor" else series.legendre_entropy
        for k in range(3):
            p, q = one(ps, k), one(qs, k)
            a = float(moments.density_peak_bound(q))
            value, bound = entropy(p, q, terms, a, max_rounding=np.inf)
            assert abs(float(value) - float(_mp_series(p, q, terms, which, a))) <= float(bound)
    # differentiable in the parameters: d KL / d means against central differences (a fixed)
    p, q = one(ps, 0), one(qs, 0)
    a = max(float(moments.density_peak_bound(p)), float(moments.density_peak_bound(q)))
    kl_of = lambda m: series.kl(MGM.tree_unflatten(None, (p.weights, m, p.covs)), q, 20, a=a)[0]  # noqa: E731
    grad = np.asarray(jax.grad(kl_of)(p.means))
    for c in range(2):
        step = np.zeros((2, 1))
        step[c, 0] = 1e-5
        fd = (float(kl_of(p.means + step)) - float(kl_of(p.means - step))) / 2e-5
        assert grad[c, 0] == pytest.approx(fd, rel=1e-5, abs=1e-9)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="terms"):
            series.kl(P, Q, bad)


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
    # d > 1: a second coordinate shared by both (N(0, 1), independent) leaves every total variation
    # as in 1-D; exact for equal covariances, Monte Carlo within 4 standard errors otherwise
    from jaxpuffer.leakage.distance import tv_gaussians

    cov = lambda v: np.array([[v, 0.0], [0.0, 1.0]])  # noqa: E731
    assert tv_gaussians(KEY, [0.0, 0.0], cov(2.0), [1.5, 0.0], cov(2.0))[0] == pytest.approx(tv_gaussians_1d(0, math.sqrt(2), 1.5, math.sqrt(2)), rel=1e-13)
    value, se = tv_gaussians(KEY, [0.3, 0.0], cov(0.49), [-1.0, 0.0], cov(3.61))
    assert 0 < se < 2e-3 and abs(value - tv_gaussians_1d(0.3, 0.7, -1, 1.9)) < 4 * se
    lift = lambda m: MGM(m.weights, np.concatenate([np.asarray(m.means), np.zeros((2, 1))], axis=1), [cov(float(c[0, 0])) for c in np.asarray(m.covs)])  # noqa: E731
    value, se = dist_gmm(lift(P), lift(Q), key=KEY)
    assert abs(value - dist_gmm(P, Q)) < 4 * se
    with pytest.raises(ValueError, match="key"):
        dist_gmm(lift(P), lift(Q))


def test_release_information_bracket_and_references():
    from jaxpuffer.leakage import information

    for sigma in (0.1, 1.0, 5.0):
        lower, upper = (float(v) for v in information.release_information_bounds(P, sigma))
        exact, err = information.release_information_quadrature_1d(P, sigma)
        assert err < 1e-10 and lower <= exact <= upper
        mean, se = (float(v) for v in information.release_information_monte_carlo(KEY, P, sigma, 100_000))
        assert abs(mean - exact) < 3.29 * se
    # a single Gaussian: the bracket closes on I = ½ log det(I + S/σ²)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    lower, upper = information.release_information_bounds(MGM([1.0], [[0.5, -1.0]], [cov]), 0.7)
    exact = 0.5 * np.linalg.slogdet(np.eye(2) + cov / 0.49)[1]
    assert float(lower) == pytest.approx(exact, rel=1e-12) and float(upper) == pytest.approx(exact, rel=1e-12)
    # d = 3 random mixtures: the bracket holds the Monte Carlo reference (99.9 % interval)
    rng = np.random.default_rng(4)
    for _ in range(3):
        a = rng.normal(size=(3, 3, 3))
        m = MGM(rng.dirichlet(np.ones(3)), 2 * rng.normal(size=(3, 3)), a @ np.swapaxes(a, -1, -2) + 0.1 * np.eye(3))
        lower, upper = (float(v) for v in information.release_information_bounds(m, 0.8))
        mean, se = (float(v) for v in information.release_information_monte_carlo(KEY, m, 0.8, 200_000))
        assert lower - 3.29 * se <= mean <= upper + 3.29 * se and lower <= upper


def test_secret_information_references_and_bound():
    from jaxpuffer.leakage import information

    rng = np.random.default_rng(5)
    for trial in range(12):
        k = 1 + trial % 3
        a = MGM(rng.dirichlet(np.ones(k)), 2 * rng.normal(size=(k, 1)), rng.uniform(0.1, 3, size=(k, 1, 1)))
        b = MGM(rng.dirichlet(np.ones(k)), 2 * rng.normal(size=(k, 1)), rng.uniform(0.1, 3, size=(k, 1, 1)))
        prior = float(rng.uniform(0.05, 0.95))
        exact, err = information.secret_information_quadrature_1d(a, b, prior)
        upper = float(information.secret_information_upper(a, b, prior))
        entropy = -prior * math.log(prior) - (1 - prior) * math.log1p(-prior)
        assert err < 1e-9 and 0 <= exact <= upper <= entropy + 1e-12
        if trial < 3:
            mean, se = (float(v) for v in information.secret_information_monte_carlo(KEY, a, b, prior, 100_000))
            assert abs(mean - exact) < 3.29 * se
    # the two-Gaussian case against mpmath: I = H(Y) − H(Y|S)
    mix = _mp_mixture([0.3, 0.7], [0.0, 1.5], [1.0, 2.0])
    h = lambda f: -mp.quad(lambda x: f(x) * mp.log(f(x)), [-mp.inf, -5, 0, 1.5, 7, mp.inf])  # noqa: E731
    reference = h(mix) - 0.3 * 0.5 * mp.log(2 * mp.pi * mp.e) - 0.7 * 0.5 * mp.log(2 * mp.pi * mp.e * 2)
    got = information.secret_information_quadrature_1d(MGM([1.0], [[0.0]], [[[1.0]]]), MGM([1.0], [[1.5]], [[[2.0]]]), 0.3)[0]
    assert got == pytest.approx(float(reference), rel=1e-10)
    assert information.secret_information_quadrature_1d(P, P, 0.4)[0] == pytest.approx(0.0, abs=1e-14)
    with pytest.raises(ValueError, match="prior"):
        information.secret_information_quadrature_1d(P, Q, 1.0)


def _capacity(r_i, r_j):
    from jaxpuffer.leakage import information

    best = optimize.minimize_scalar(lambda pi: -information.secret_information_quadrature_1d(r_i, r_j, pi)[0], bounds=(1e-4, 1 - 1e-4), method="bounded", options={"xatol": 1e-6})
    return -best.fun


def test_theorem_4_3_against_the_exact_mutual_information():
    """Theorem 4.3's σ² (τ = 1, its smallest reading) keeps the worst-prior I(S; Y) ≤ ε on random
    1-D pairs: measured worst I/ε = 0.33; the exact smallest σ² (brentq on the capacity) is below it."""
    from jaxpuffer.leakage import information

    rng = np.random.default_rng(6)
    worst, ratios = 0.0, []
    for trial in range(8):
        k = 1 + trial % 3
        a = MGM(rng.dirichlet(np.ones(k)), 3 * rng.normal(size=(k, 1)), rng.uniform(0.05, 4, size=(k, 1, 1)))
        b = MGM(rng.dirichlet(np.ones(k)), 3 * rng.normal(size=(k, 1)), rng.uniform(0.05, 4, size=(k, 1, 1)))
        eps = (0.01, 0.1, 0.5)[trial % 3]
        variance = information.theorem43_variance(a, b, eps)
        capacity = _capacity(a.convolved(math.sqrt(variance)), b.convolved(math.sqrt(variance)))
        worst = max(worst, capacity / eps)
        if trial < 3:  # the exact smallest σ² for a capacity ≤ ε
            gap = lambda s: _capacity(a.convolved(s), b.convolved(s)) - eps  # noqa: E731,B023
            ratios.append(variance / optimize.brentq(gap, 1e-3, math.sqrt(variance), xtol=1e-8) ** 2 if gap(1e-3) > 0 else math.inf)
        assert information.theorem43_variance(a, b, eps, tau=information.tau_star(1e-6)) >= variance
    print("worst I/eps", worst, "theorem sigma^2 / exact", ratios)
    assert worst <= 1.0 and min(ratios) > 1.0
    # d = 2 (diagonal covariances): Monte Carlo at π = ½ within ε
    a = MGM([0.5, 0.5], [[0.0, 1.0], [2.0, -1.0]], [[1.0, 0.5], [2.0, 1.0]], diagonal=True)
    b = MGM([1.0], [[1.0, 0.5]], [[0.3, 3.0]], diagonal=True)
    sigma = math.sqrt(information.theorem43_variance(a, b, 0.2))
    mean, se = (float(v) for v in information.secret_information_monte_carlo(KEY, a.convolved(sigma), b.convolved(sigma), 0.5, 200_000))
    assert mean + 3.29 * se <= 0.2
    assert information.tau_star(0.05) == pytest.approx(stats.norm.isf(0.025), rel=1e-14)
    with pytest.raises(ValueError, match="diagonal"):
        information.theorem43_variance(MGM([1.0], [[0.0, 0.0]], [[[1.0, 0.5], [0.5, 1.0]]]), b, 0.2)
    with pytest.raises(ValueError, match="eps"):
        information.theorem43_variance(a, b, 0.0)


def test_noise_for_leakage_gradients_are_implicit():
    """d σ / d θ of the bound-certified noise against central differences of the solved σ (the
    bisection solves to ~1e-22 in log σ, so differences of 1e-5 resolve it); the bisection's own
    derivative (its bracket ends move with the means, its answer with nothing) was wrong:
    d σ / d μ_0 = −1.78 against −1.29, and 0 for the target."""
    from jaxpuffer.leakage.calibration import KL, Renyi, SecretInformation, noise_for_leakage

    for measure in (KL(), Renyi(2.0), SecretInformation(0.75)):
        sigma = lambda m, t: noise_for_leakage(MGM.tree_unflatten(None, (P.weights, m, P.covs)), Q, t, measure)  # noqa: E731
        d_means, d_target = jax.grad(sigma, argnums=(0, 1))(P.means, 0.01)
        for c in range(2):
            h = np.zeros((2, 1))
            h[c, 0] = 1e-5
            fd = (float(sigma(P.means + h, 0.01)) - float(sigma(P.means - h, 0.01))) / 2e-5
            assert float(d_means[c, 0]) == pytest.approx(fd, rel=1e-6)
        fd = (float(sigma(P.means, 0.01 * (1 + 1e-6))) - float(sigma(P.means, 0.01 * (1 - 1e-6)))) / 2e-8
        assert float(d_target) == pytest.approx(fd, rel=1e-6) and float(d_target) < 0
    # no noise needed: σ = 0 and its gradient 0; batched gradients (vmap of grad) equal single ones
    assert float(jax.grad(lambda t: noise_for_leakage(P, Q, t))(1.0)) == 0.0
    targets = jnp.array([0.01, 0.02])
    batched = jax.vmap(jax.grad(lambda t: noise_for_leakage(P, Q, t)))(targets)
    singles = [float(jax.grad(lambda t: noise_for_leakage(P, Q, t))(float(t))) for t in targets]
    np.testing.assert_allclose(batched, singles, rtol=1e-12)


def test_noise_for_renyi_and_information_targets():
    from jaxpuffer.leakage import bounds
    from jaxpuffer.leakage.calibration import KL, Renyi, SecretInformation, noise_for_leakage

    for measure in (Renyi(2.0), Renyi(5.0), SecretInformation(0.3)):
        exact = noise_for_leakage(P, Q, 1e-4, measure, method="quadrature")
        assert measure.quadrature(P.convolved(exact), Q.convolved(exact))[0] <= 1e-4
        assert measure.quadrature(P.convolved(exact * (1 - 1e-6)), Q.convolved(exact * (1 - 1e-6)))[0] > 1e-4
        certified = float(noise_for_leakage(P, Q, 1e-4, measure))
        assert certified >= exact and float(measure.upper(P.convolved(certified), Q.convolved(certified))) <= 1e-4
    # mutual information of a binary secret never exceeds H(π): a target above it needs no noise
    assert noise_for_leakage(P, Q, 0.7, SecretInformation(0.5), method="quadrature") == 0.0
    # the Rényi bound holds on random and masked pairs (quadrature reference; +inf where it diverges)
    rng = np.random.default_rng(8)
    from jaxpuffer.leakage import masking

    for trial in range(10):
        a = MGM(rng.dirichlet(np.ones(3)), 2 * rng.normal(size=(3, 1)), rng.uniform(0.2, 3, size=(3, 1, 1)))
        b = jax.tree_util.tree_map(lambda x: x[0], masking.mask(jax.random.PRNGKey(trial), a, 0.05, 0.1, 0.1)) if trial % 2 else MGM(rng.dirichlet(np.ones(3)), 2 * rng.normal(size=(3, 1)), rng.uniform(0.2, 3, size=(3, 1, 1)))
        for alpha in (1.5, 3.0):
            exact = references.renyi_quadrature_1d(alpha, a.convolved(0.5), b.convolved(0.5))[0]
            assert float(bounds.renyi_upper(alpha, a.convolved(0.5), b.convolved(0.5))) >= exact * (1 - 1e-12)
    with pytest.raises(ValueError, match="alpha"):
        Renyi(1.0)
    with pytest.raises(ValueError, match="prior"):
        SecretInformation(0.0)
    with pytest.raises(ValueError, match="measure"):
        noise_for_leakage(P, Q, 0.1, "kl")
    assert KL() == KL() and hash(Renyi(2.0)) == hash(Renyi(2.0))  # static arguments of the compiled search


def test_batched_gauss_legendre_kl_against_adaptive_quadrature():
    from jaxpuffer.leakage.quadrature import kl_gauss_legendre_1d

    value, err = kl_gauss_legendre_1d(P, Q)
    assert float(value) == pytest.approx(0.02651601, abs=5e-9) and float(err) < 1e-12  # MATH.md §10
    rng = np.random.default_rng(10)
    n = 40  # variances from 1e-4 to 10: narrow components whose dominance switches far from their means
    ps = MGM(rng.dirichlet(np.ones(4), n), 3 * rng.normal(size=(n, 4, 1)), np.exp(rng.uniform(math.log(1e-4), math.log(10), (n, 4, 1, 1))))
    qs = MGM(rng.dirichlet(np.ones(4), n), 3 * rng.normal(size=(n, 4, 1)), np.exp(rng.uniform(math.log(1e-4), math.log(10), (n, 4, 1, 1))))
    values, errs = jax.vmap(kl_gauss_legendre_1d)(ps, qs)
    for i in range(n):
        ref, ref_err = references.kl_quadrature_1d(jax.tree_util.tree_map(lambda x: x[i], ps), jax.tree_util.tree_map(lambda x: x[i], qs))  # noqa: B023
        assert abs(float(values[i]) - ref) <= float(errs[i]) + ref_err + 1e-13 * abs(ref)
        assert float(errs[i]) <= 1e-8 * max(abs(ref), 1.0)
    # differentiable in the parameters: d KL / d μ against central differences of the same rule
    grad = jax.grad(lambda m: kl_gauss_legendre_1d(MGM.tree_unflatten(None, (P.weights, m, P.covs)), Q)[0])(P.means)
    h = 1e-5
    for c in range(2):
        shift = jnp.zeros_like(P.means).at[c, 0].set(h)
        up = kl_gauss_legendre_1d(MGM.tree_unflatten(None, (P.weights, P.means + shift, P.covs)), Q)[0]
        down = kl_gauss_legendre_1d(MGM.tree_unflatten(None, (P.weights, P.means - shift, P.covs)), Q)[0]
        assert float(grad[c, 0]) == pytest.approx(float(up - down) / (2 * h), rel=1e-6)
    with pytest.raises(ValueError, match="d = 1"):
        kl_gauss_legendre_1d(MGM([1.0], [[0.0, 0.0]], [np.eye(2)]), MGM([1.0], [[0.0, 0.0]], [np.eye(2)]))


def test_monte_carlo_kl_against_a_ten_million_draw_reference():
    """d = 2, 5, 10: a 10⁵-draw estimate within the 99.9 % interval of a 10⁷-draw reference (ten
    independent 10⁶-draw blocks), and the certified bracket holding the reference."""
    from jaxpuffer.leakage import bounds

    rng = np.random.default_rng(11)
    block = jax.jit(lambda key, p, q: references.kl_monte_carlo(key, p, q, 1_000_000))
    for d in (2, 5, 10):
        p, q = _random_mixture(rng, d), _random_mixture(rng, d)
        blocks = [block(jax.random.PRNGKey(100 + i), p, q) for i in range(10)]
        ref = float(np.mean([m for m, _ in blocks]))
        ref_se = float(np.sqrt(np.mean([s**2 for _, s in blocks]) / 10))
        mean, se = (float(v) for v in references.kl_monte_carlo(KEY, p, q, 100_000))
        assert abs(mean - ref) <= 3.29 * math.hypot(se, ref_se)
        assert float(bounds.kl_lower(p, q)) <= ref + 3.29 * ref_se and ref - 3.29 * ref_se <= float(bounds.kl_upper(p, q))
