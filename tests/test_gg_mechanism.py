"""The generalized Gaussian mechanism paper (issue 13; ``../shared/papers/003``, MATH.md §9), against
references computed here: scipy's ``gennorm``, mpmath quadrature, brute-force grids of the
log-ratio, ``dp_accounting``'s analytic privacy losses, and the paper's (corrected) numbers.
"""
import math

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld import privacy_loss_mechanism as plm
from scipy import integrate, optimize, special, stats

from jaxpuffer.mechanisms import exponential, gg_exact, gg_probabilistic, gg_pure, laplace_vector, sensitivity
from jaxpuffer.noise import GeneralizedGaussian

KEY = jax.random.PRNGKey(2026)


# ---- Definition 1, Lemma 2 ----

def test_lp_sensitivity_and_lemma2_bound():
    rng = np.random.default_rng(0)
    s, s2 = rng.normal(size=(50, 4)), rng.normal(size=(50, 4))
    for p in (1.0, 1.5, 2.0, 3.0):
        expected = np.max(np.sum(np.abs(s - s2) ** p, axis=1) ** (1 / p))
        assert sensitivity.lp_sensitivity(s, s2, p) == pytest.approx(expected, rel=1e-13)
        # Lemma 2: (Σ_k Δ_k^p)^{1/p} with Δ_k the per-coordinate maxima bounds every pair's ℓp norm
        bound = sensitivity.lemma2_bound(np.max(np.abs(s - s2), axis=0), p)
        assert bound >= expected
    assert sensitivity.lp_sensitivity(s, s2, np.inf) == pytest.approx(np.max(np.abs(s - s2)))
    with pytest.raises(ValueError, match="p must be >= 1"):
        sensitivity.lemma2_bound([1.0, 2.0], 0.5)


# ---- errata of the printed formulas (MATH.md §9) ----

def test_printed_density_and_variance_are_typos():
    b, p = math.sqrt(2.0), 3.0
    kernel = GeneralizedGaussian(p)
    # the library's density: integrates to 1 and equals scipy's gennorm
    total = integrate.quad(lambda x: math.exp(kernel.log_density(x, b)), -np.inf, np.inf)[0]
    assert total == pytest.approx(1.0, rel=1e-10)
    x = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(np.exp(kernel.log_density(jnp.asarray(x), b)), stats.gennorm.pdf(x, p, scale=b), rtol=1e-13)
    # printed: p/(2bΓ(p − 1)) e^{−(|x|/b)^p} (the minus sign restored) does not integrate to 1
    printed = integrate.quad(lambda x: p / (2 * b * math.gamma(p - 1)) * math.exp(-((abs(x) / b) ** p)), -np.inf, np.inf)[0]
    assert abs(printed - 1.0) > 0.5
    # variance b²Γ(3/p)/Γ(1/p) = scipy's; the printed b²Γ(3/b)/Γ(1/b) is not
    assert float(kernel.variance(b)) == pytest.approx(stats.gennorm.var(p, scale=b), rel=1e-13)
    assert abs(b**2 * math.gamma(3 / b) / math.gamma(1 / b) - stats.gennorm.var(p, scale=b)) > 0.1


def test_lemma11_threshold_corrected_and_sharp():
    assert gg_probabilistic.LEMMA11_DELTA == pytest.approx(2 * stats.norm.cdf(-math.sqrt(2)), rel=1e-14)
    assert gg_probabilistic.LEMMA11_DELTA == pytest.approx(0.157299, abs=5e-7)
    assert gg_probabilistic.LEMMA11_DELTA_PRINTED > 1  # 2Φ(√2) is not a probability
    eps = jnp.asarray([1e-6, 1e-2, 1.0, 10.0, 100.0])
    below = gg_probabilistic.variance_ratio_gaussian_to_laplace(eps, gg_probabilistic.LEMMA11_DELTA * (1 - 1e-6))
    above = gg_probabilistic.variance_ratio_gaussian_to_laplace(eps, gg_probabilistic.LEMMA11_DELTA * (1 + 1e-3))
    assert np.all(np.asarray(below) > 1.0)  # Lemma 11: more variance than Laplace for every ε
    assert float(above[0]) < 1.0  # just above the threshold it fails as ε → 0: the constant is sharp
    # the ratio against independent arithmetic: σ² (Lemma 10) / (2(Δ/ε)²)
    z = stats.norm.ppf(0.01 / 2)
    sigma = (math.sqrt(z * z + 2.0) - z) / 2.0
    assert float(gg_probabilistic.variance_ratio_gaussian_to_laplace(1.0, 0.01)) == pytest.approx(sigma**2 / 2.0, rel=1e-13)


def test_lemma5_threshold_erratum_reproduces_math_md():
    """MATH.md §9: r = 3, Δ = (1, 0.1, 0.05), p = 2, δ = 0.01 — printed threshold 3.95 / 4.06 / 4.30,
    corrected 7.89 / 4.07 / 2.15 at ε = 0.5 / 1 / 2 (Monte Carlo: 1% tolerance)."""
    eps = jnp.asarray([0.5, 1.0, 2.0])
    corrected, corrected_up = gg_probabilistic.lemma5_scale(KEY, eps, 0.01, [1.0, 0.1, 0.05], 2)
    printed, _ = gg_probabilistic.lemma5_scale(KEY, eps, 0.01, [1.0, 0.1, 0.05], 2, threshold="printed")
    np.testing.assert_allclose(corrected, [7.89, 4.07, 2.15], rtol=1e-2)
    np.testing.assert_allclose(printed, [3.95, 4.06, 4.30], rtol=1e-2)
    assert np.all(np.asarray(corrected_up) >= np.asarray(corrected))
    # the corrected b scales like 1/ε; the printed one barely moves (against the paper's Figure 2)
    assert float(corrected[0] / corrected[2]) > 3.0 and float(printed[2] / printed[0]) < 1.2


def test_lemma5_batched_over_p_equals_one_call_per_p():
    """A sequence of p is one call with a leading axis, each row bit-identical to its own call."""
    eps, delta = jnp.asarray([0.5, 2.0]), jnp.asarray([0.01, 0.001])
    both = gg_probabilistic.lemma5_scale(KEY, eps, delta, [1.0, 0.1, 0.05], [2, 4], draws=20_000, threshold="printed")
    for row, p in enumerate((2, 4)):
        one = gg_probabilistic.lemma5_scale(KEY, eps, delta, [1.0, 0.1, 0.05], p, draws=20_000, threshold="printed")
        for got, want in zip(both, one):
            np.testing.assert_array_equal(np.asarray(got)[row], np.asarray(want))
    assert np.asarray(both[0]).shape == (2, 2)


def test_lemma5_converges_to_lemma10_and_lemma10_is_conservative():
    eps = jnp.asarray([0.5, 1.0, 2.0])
    b_mc, b_up = gg_probabilistic.lemma5_scale(KEY, eps, 0.01, [1.0], 2)
    b_10 = gg_probabilistic.lemma10_scale(eps, 0.01, 1.0)
    # eq. (18) is the exact solution of Lemma 5's condition for p = 2, r = 1: the MC answer
    # converges to it (10⁶ draws: the 1% quantile to ~0.5%), and the 95% answer lies above it
    np.testing.assert_allclose(b_mc, b_10, rtol=5e-3)
    assert np.all(np.asarray(b_up) >= np.asarray(b_10))
    # at Lemma 10's σ the exact pDP failure probability P(|L| > ε) is 0.00665, not δ = 0.01
    sigma = float(b_10[1]) / math.sqrt(2.0)
    assert sigma == pytest.approx(2.757, abs=1e-3)
    u, v = sigma, 1.0 / (2 * sigma)
    exact = stats.norm.sf(u - v) + stats.norm.sf(u + v)
    assert float(gg_probabilistic.gaussian_pdp_delta(1.0, 1.0, sigma)) == pytest.approx(exact, rel=1e-12)
    assert exact == pytest.approx(0.00665, abs=5e-5)
    # eq. (18) below eq. (19) for ε in (0, 1)
    e = jnp.linspace(0.05, 0.95, 10)
    for delta in (1e-6, 1e-3, 0.05):
        ratio = gg_probabilistic.lemma10_scale(e, delta, 1.0) / math.sqrt(2.0) / gg_probabilistic.classical_gaussian_std(e, delta, 1.0)
        assert np.all(np.asarray(ratio) < 1.0)
    with pytest.raises(ValueError, match="eps must be < 1"):
        gg_probabilistic.classical_gaussian_std(1.5, 0.01, 1.0)


# ---- ε-DP on bounded data: truncation, its sampler, thresholding ----

def _truncated_cdf(p, lo, hi):
    d = stats.gennorm(p)
    if lo >= 0:
        return lambda x: (d.sf(lo) - d.sf(x)) / (d.sf(lo) - d.sf(hi))
    if hi <= 0:
        return lambda x: (d.cdf(x) - d.cdf(lo)) / (d.cdf(hi) - d.cdf(lo))
    return lambda x: (d.cdf(x) - d.cdf(lo)) / (d.cdf(hi) - d.cdf(lo))


@pytest.mark.parametrize("p, lo, hi", [(1.0, -1.0, 2.0), (2.0, -0.5, 3.0), (3.0, 0.5, 2.0), (1.5, -8.0, -6.0), (2.0, 5.0, 8.0)])
def test_truncated_sampler_kolmogorov_smirnov(p, lo, hi):
    """10⁵ draws against the analytic truncated CDF (scipy), α = 10⁻³; (2, 5, 8) is a box of tail
    mass 7.7e-13."""
    draws = np.asarray(gg_pure.sample_truncated(KEY, 0.0, 1.0, p, lo, hi, shape=(100_000,)))
    assert np.all(np.isfinite(draws)) and draws.min() >= lo and draws.max() <= hi
    assert stats.kstest(draws, _truncated_cdf(p, lo, hi)).pvalue > 1e-3


def test_plain_and_thresholded_samplers():
    """The plain GG sampler (the kernel's) by KS against gennorm; the thresholded release's point
    masses against eq. (10)'s p_k, q_k (binomial, 5σ) and its interior by KS on the inside draws."""
    p, b, lo, hi = 3.0, 1.5, -1.0, 2.0
    plain = np.asarray(GeneralizedGaussian(p).sample(KEY, (100_000,), b))
    assert stats.kstest(plain, stats.gennorm(p, scale=b).cdf).pvalue > 1e-3
    released = np.asarray(gg_pure.threshold(plain, lo, hi))
    log_p, log_q = gg_pure.threshold_log_masses(0.0, b, p, lo, hi)
    for frac, mass in ((np.mean(released == lo), float(np.exp(log_p))), (np.mean(released == hi), float(np.exp(log_q)))):
        assert abs(frac - mass) < 5 * math.sqrt(mass * (1 - mass) / plain.size)
    inside = released[(released > lo) & (released < hi)]
    g = stats.gennorm(p, scale=b)
    cdf = lambda x: (g.cdf(x) - g.cdf(lo)) / (g.cdf(hi) - g.cdf(lo))  # noqa: E731
    assert stats.kstest(inside, cdf).pvalue > 1e-3


def test_truncation_mass_against_mpmath():
    mp.mp.dps = 30
    for p, s, b, lo, hi in [(2.0, 0.0, 1.0, 5.0, 8.0), (1.0, 0.3, 0.7, -1.0, 2.0), (3.0, 1.0, 2.0, -4.0, -1.5), (1.5, 0.0, 1.0, -0.2, 0.1)]:
        dens = lambda x: p / (2 * b * mp.gamma(1 / mp.mpf(p))) * mp.exp(-((abs(x - s) / b) ** p))  # noqa: E731
        ref = float(mp.quad(dens, [lo, s, hi] if lo < s < hi else [lo, hi]))
        got = float(np.exp(gg_pure.log_truncation_mass(s, b, p, lo, hi)))
        assert got == pytest.approx(ref, rel=1e-12)


def _max_log_ratio(log_density_at, lo, hi, sens, n=161):
    """Brute force: max over s, s' = s ± Δ in the box and outputs x on a grid of the log-ratio."""
    s = np.linspace(lo, hi, n)
    x = jnp.asarray(np.linspace(lo, hi, 401))[:, None]
    worst = -np.inf
    for sign in (1.0, -1.0):
        s2 = np.clip(s + sign * sens, lo, hi)
        worst = max(worst, float(jnp.max(log_density_at(x, jnp.asarray(s)) - log_density_at(x, jnp.asarray(s2)))))
    return worst


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_truncated_mechanism_is_eps_dp(p):
    eps, sens, lo, hi = 1.0, 1.0, 0.0, 4.0
    b = float(gg_pure.truncated_scale(eps, [sens], lo, hi, p))
    worst = _max_log_ratio(_truncated(b, p, lo, hi), lo, hi, sens)
    assert worst <= eps * (1 + 1e-12)
    assert b == pytest.approx(float(gg_pure.eq6_scale(eps, [sens], hi - lo, p)) * 2 ** (1 / p), rel=1e-13)


def _truncated(b, p, lo, hi):
    return lambda x, s: gg_pure.truncated_log_density(x[..., None], s[None, :, None], b, p, lo, hi)


def test_discarding_out_of_box_laplace_draws_breaks_eps_dp():
    """The Laplace mechanism (p = 1, b = Δ/ε) is ε-DP; discarding its out-of-box draws gives the
    truncated density, whose normalisers A(s) ≠ A(s') push the worst log-ratio to 1.48 ε (box [0, 4],
    Δ = 1): found by brute force here."""
    eps, sens, lo, hi = 1.0, 1.0, 0.0, 4.0
    b = sens / eps
    plain = lambda x, s: -jnp.sum(jnp.abs(x[..., None] - s[None, :, None]), axis=-1) / b  # noqa: E731
    assert _max_log_ratio(plain, lo, hi, sens) == pytest.approx(eps, rel=1e-12)
    assert _max_log_ratio(_truncated(b, 1.0, lo, hi), lo, hi, sens) > 1.4 * eps
    excess = float(gg_pure.discard_log_ratio_excess(jnp.asarray([0.0]), jnp.asarray([1.0]), b, 1.0, lo, hi))
    a0, a1 = (stats.laplace.cdf(hi, loc=m) - stats.laplace.cdf(lo, loc=m) for m in (0.0, 1.0))
    assert excess == pytest.approx(math.log(a1) - math.log(a0), rel=1e-12)


def test_thresholding_scale_is_tight_and_below_eq8():
    """The thresholded release's worst log-ratio (density inside the box, point masses at its ends)
    by brute force with scipy: ≤ ε at the returned b, > ε just below it."""
    eps, p, lo, hi = 1.0, 2.0, 0.0, 4.0
    sens = np.array([1.0, 0.3])
    b = float(gg_pure.thresholding_scale(eps, sens, lo, hi, p))

    def worst(b_):
        total = 0.0
        for d in sens:
            s = np.linspace(lo, hi, 801)
            s2 = np.clip(s - d, lo, hi)
            x = np.linspace(lo, hi, 801)[:, None]
            inside = np.max(((np.abs(x - s2) ** p) - np.abs(x - s) ** p) / b_**p)  # log f(x|s) − log f(x|s')... both orders:
            inside = max(inside, np.max(((np.abs(x - s) ** p) - np.abs(x - s2) ** p) / b_**p))
            g = stats.gennorm(p, scale=b_)
            atoms = max(np.max(np.abs(g.logcdf(lo - s) - g.logcdf(lo - s2))), np.max(np.abs(g.logsf(hi - s) - g.logsf(hi - s2))))
            total += max(inside, atoms)
        return total

    assert worst(b) <= eps * (1 + 1e-9)
    assert worst(b * (1 - 1e-6)) > eps
    assert b < float(gg_pure.truncated_scale(eps, sens, lo, hi, p))


def test_threshold_masses_and_eq14_erratum():
    s, b, p, lo, hi = 1.0, 0.8, 2.0, 0.0, 3.0
    log_p, log_q = gg_pure.threshold_log_masses(s, b, p, lo, hi)
    g = stats.gennorm(p, scale=b)
    assert float(np.exp(log_p)) == pytest.approx(g.cdf(lo - s), rel=1e-12)
    assert float(np.exp(log_q)) == pytest.approx(g.sf(hi - s), rel=1e-12)
    # eq. (14) as printed repeats eq. (13)'s ½ − γ(1/p, ((s − c₀)/b)^p)/(2Γ(1/p)): that is p_k, not q_k
    printed_14 = 0.5 - special.gammainc(1 / p, ((s - lo) / b) ** p) / 2
    assert printed_14 == pytest.approx(float(np.exp(log_p)), rel=1e-12)
    assert abs(printed_14 - float(np.exp(log_q))) > 1e-3
    np.testing.assert_allclose(gg_pure.threshold(jnp.asarray([-1.0, 0.5, 9.0]), lo, hi), [0.0, 0.5, 3.0])


# ---- exponential mechanism, Lemmas 7–9 ----

def test_exponential_mechanism_lemmas_7_to_9():
    rng = np.random.default_rng(3)
    u = rng.normal(size=(20, 30))
    v = u + rng.uniform(-1, 1, size=u.shape)
    du = float(np.max(np.abs(u - v)))
    cost = float(exponential.privacy_cost(u, v, 1.0, du))
    assert cost < 1.0  # Lemma 7: below ε
    # A(x) independent of x (a cyclic shift of the utilities): the cost is exactly ε/2
    ring = -np.abs((np.arange(40)[:, None] - np.arange(40)[None, :] + 20) % 40 - 20).astype(float)
    assert float(exponential.privacy_cost(ring[0], np.roll(ring[0], 1), 1.0, 1.0)) == pytest.approx(0.5, rel=1e-12)
    # Lemma 8: e^{−‖s* − s‖_p^p ε/(2Δ_u)} is the GG(s, b, p) density with b^p = 2Δ_u/ε
    for p in (1.0, 2.0, 3.0):
        b = float(exponential.gg_scale(0.7, 1.3, p))
        x = jnp.linspace(-3, 3, 7)
        log_gg = GeneralizedGaussian(p).log_density(x, b)
        np.testing.assert_allclose(log_gg - log_gg[3], -(np.abs(np.asarray(x)) ** p) * 1.3 / (2 * 0.7), rtol=1e-12, atol=1e-12)
    # Lemma 9: brute-force Δ_u over s, s' (|s − s'| ≤ Δ) and s* in the box, against the bounds
    lo, hi, d = -1.0, 2.0, 0.5
    s = np.linspace(lo, hi, 61)
    grid = np.linspace(lo, hi, 61)[:, None]
    for p in (1, 2, 3):
        worst = max(np.max(np.abs(np.abs(grid - s) ** p - np.abs(grid - np.clip(s + sg * d, lo, hi)) ** p)) for sg in (1, -1))
        powers = [np.max(np.abs(s**i - np.clip(s + d, lo, hi) ** i)) for i in range(1, p + 1)]
        powers = [max(a, np.max(np.abs(s**i - np.clip(s - d, lo, hi) ** i))) for a, i in zip(powers, range(1, p + 1))]
        bound = float(exponential.utility_sensitivity_bound([d], lo, hi, p, power_sensitivities=[powers] if p >= 3 else None))
        assert worst <= bound * (1 + 1e-12)


# ---- exact (ε, δ)-DP: scalar closed form, vector PLD, calibration ----

@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_exact_scalar_delta_matches_dp_accounting(eps):
    for b in (0.5, 1.0, 4.0):
        lap = plm.LaplacePrivacyLoss(b, sensitivity=1.0).get_delta_for_epsilon(eps)
        gau = plm.GaussianPrivacyLoss(b / math.sqrt(2.0), sensitivity=1.0).get_delta_for_epsilon(eps)
        got_lap = float(gg_exact.shift_delta(eps, 1.0, b, 1.0))
        got_gau = float(gg_exact.shift_delta(eps, 1.0, b, 2.0))
        assert got_lap == pytest.approx(lap, rel=1e-6, abs=1e-15)
        assert got_gau == pytest.approx(gau, rel=1e-6, abs=1e-15)


def _mp_shift_delta(p, d, eps):
    """Independent: the crossing of |y − d|^p − |y|^p = ε by mpmath, then mpmath CDF integrals."""
    mp.mp.dps = 40
    p, d, eps = mp.mpf(p), mp.mpf(d), mp.mpf(eps)
    left = -2 * (eps / (p * d)) ** (1 / (p - 1)) - 1  # |t − d|^p − |t|^p ≥ p d |t|^{p−1} ≥ 2ε there (p > 1)
    y = mp.findroot(lambda t: abs(t - d) ** p - abs(t) ** p - eps, (left, d / 2), solver="bisect", tol=mp.mpf(10) ** -36, maxsteps=400)
    dens = lambda t: p / (2 * mp.gamma(1 / p)) * mp.exp(-(abs(t) ** p))  # noqa: E731
    cdf = lambda t: mp.quad(dens, [-mp.inf, min(t, 0), t] if t > 0 else [-mp.inf, t])  # noqa: E731
    return float(cdf(y) - mp.exp(eps) * cdf(y - d))


@pytest.mark.parametrize("p", [1.5, 3.0])
def test_exact_scalar_delta_other_p_against_mpmath(p):
    for d, eps in [(0.5, 0.2), (2.0, 1.0), (4.0, 2.0)]:
        ref = _mp_shift_delta(p, d, eps)
        got = float(gg_exact.shift_delta(eps, d, 1.0, p))
        assert got >= ref * (1 - 1e-12) and got == pytest.approx(ref, rel=1e-6, abs=1e-15)


def _laplace_delta_general(e, d):
    """δ(ε') of Laplace(0, 1) vs Laplace(d, 1), any real ε' (derived in the test: 0 beyond d,
    1 − e^{(ε' − d)/2} on [−d, d], 1 − e^{ε'} below)."""
    if e >= d:
        return 0.0
    if e >= -d:
        return -math.expm1((e - d) / 2)
    return -math.expm1(e)


def _laplace_vector_reference(eps, d):
    """Independent of the library's closed form: the one-coordinate δ(ε') above, convolved with one
    coordinate's loss at a time (its two atoms, and scipy ``quad`` over its continuous part, split
    at the kinks ε' = ±d₁ ± d₂ … so every piece is smooth; relative tolerance 1e-12)."""
    f, kinks = (lambda e: _laplace_delta_general(e, d[0])), [-d[0], d[0]]
    for dk in d[1:]:
        f, kinks = _add_laplace_coordinate(f, kinks, dk), sorted({k + s for k in kinks for s in (-dk, dk)})
    return f(eps)


def _add_laplace_coordinate(f, kinks, d):
    def g(e):
        density = lambda t: 0.25 * math.exp((t - d) / 2) * f(e - t)  # noqa: E731  (loss t on (−d, d))
        edges = [-d] + sorted(e - k for k in kinks if -d < e - k < d) + [d]
        part = sum(integrate.quad(density, a, c, epsabs=0, epsrel=1e-12, limit=200)[0] for a, c in zip(edges[:-1], edges[1:]))
        return 0.5 * f(e - d) + 0.5 * math.exp(-d) * f(e + d) + part
    return g


def test_vector_laplace_closed_form_against_quadrature_reference():
    """r = 3 Laplace: the closed form within 1e-10 of the nested-quadrature reference, which lies
    inside [lower, upper]; also r = 1, 2 and 4 on random shifts (zeros included) and ε < 0."""
    b, eps, sens = 1.5, 0.5, [1.0, 0.1, 0.05]
    ref = _laplace_vector_reference(eps, [v / b for v in sens])
    upper, lower = gg_exact.vector_delta(eps, sens, b, 1.0)
    assert float(lower) <= ref <= float(upper) <= ref * (1 + 1e-10)
    rng = np.random.default_rng(3)
    for r in (1, 2, 3, 4, 3):
        d = rng.uniform(0, 2, r) * (rng.uniform(size=r) > 0.2)
        e = float(rng.uniform(-0.5, 3.0))
        ref = _laplace_vector_reference(e, list(d))
        upper, lower = laplace_vector.laplace_vector_delta(jnp.float64(e), jnp.asarray(d))
        assert float(lower) <= ref * (1 + 1e-12) and ref * (1 - 1e-12) <= float(upper) <= ref * (1 + 1e-10) + 1e-300


@pytest.mark.parametrize("p", [1.0, 2.0])
@pytest.mark.parametrize("sens", [[1.0], [1.0, 0.1, 0.05]])
def test_vector_delta_equals_dp_accounting(sens, p):
    """The issue's check: p = 1 and 2, r = 1 and r = 3, against dp_accounting's connect-the-dots
    Laplace and Gaussian PLDs (std b/√2; step 1e-4, composed over the coordinates) to 1e-6, at δ
    between 3e-3 and 0.8."""
    make = pld_lib.from_laplace_mechanism if p == 1.0 else pld_lib.from_gaussian_mechanism
    scale = 1.0 if p == 1.0 else 1.0 / math.sqrt(2.0)
    for eps, b in [(0.5, 1.0), (1.0, 1.0), (0.2, 2.0), (1.0, 1.12), (0.3, 0.5)]:
        pld = None
        for v in sens:
            one = make(b * scale, sensitivity=v, value_discretization_interval=1e-4)
            pld = one if pld is None else pld.compose(one)
        ref = pld.get_delta_for_epsilon(eps)
        upper, _ = gg_exact.vector_delta(eps, sens, b, p)
        assert float(upper) == pytest.approx(ref, rel=1e-6)


def test_laplace_vector_calibration_is_sound_and_tight_batched():
    """One batched call over random (ε, δ, Δ) with δ from 1e-12 to 1e-2 (plus a one-coordinate
    vector, which must equal the scalar closed form, and a zero vector): at b the independent
    reference δ ≤ target (1 + 1e-9), at b (1 − 1e-6) above it."""
    rng = np.random.default_rng(7)
    eps = np.concatenate([rng.uniform(0.05, 3.0, 10), [1.0, 1.0]])
    delta = np.concatenate([10.0 ** rng.uniform(-12, -2, 10), [1e-6, 1e-6]])
    sens = np.concatenate([rng.uniform(0, 2, (10, 3)), [[0.7, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    b = np.asarray(gg_exact.calibrate_vector(eps, delta, sens, 1.0))
    assert b[-1] == 0.0 and b[-2] == pytest.approx(0.7 / (1.0 - 2 * math.log1p(-1e-6)), rel=1e-12)
    for e, dl, s, got in zip(eps[:-1], delta[:-1], sens[:-1], b[:-1]):
        assert _laplace_vector_reference(e, list(s / got)) <= dl * (1 + 1e-9)
        assert _laplace_vector_reference(e, list(s / (got * (1 - 1e-6)))) > dl


def test_vector_pld_brackets_monte_carlo_for_p3():
    """r = 3, p = 3: δ = E[(1 − e^{ε − L})_+] by brute-force Monte Carlo (4·10⁶ draws, numpy's own
    generator and scipy's gennorm), its 5σ interval overlapping the PLD's [lower, upper]."""
    b, eps, sens, p = 3.0, 0.3, np.array([1.0, 0.6, 0.3]), 3.0
    rng = np.random.default_rng(11)
    z = stats.gennorm.rvs(p, size=(4_000_000, 3), random_state=rng)
    d = sens / b
    loss = np.sum(np.abs(z - d) ** p - np.abs(z) ** p, axis=1)
    sample = -np.expm1(np.minimum(eps - loss, 0.0))
    mean, err = sample.mean(), 5 * sample.std() / math.sqrt(sample.size)
    upper, lower = gg_exact.vector_delta(eps, sens, b, p)
    assert float(lower) <= mean + err and mean - err <= float(upper)
    assert float(upper) - float(lower) < 0.01 * float(upper)


def test_vector_gaussian_equals_scalar_l2_and_dp_accounting():
    b, sens = 1.5, np.array([1.0, 0.1, 0.05])
    eps = jnp.asarray([0.5, 1.0])
    ref = [plm.GaussianPrivacyLoss(b / math.sqrt(2), sensitivity=float(np.linalg.norm(sens))).get_delta_for_epsilon(float(e)) for e in eps]
    np.testing.assert_allclose(gg_exact.shift_delta(eps, float(np.linalg.norm(sens)), b, 2.0), ref, rtol=1e-6)
    upper, lower = gg_exact.vector_delta(eps, sens, b, 2.0)
    assert np.all(np.asarray(lower) <= np.asarray(ref)) and np.all(np.asarray(ref) <= np.asarray(upper))


def test_laplace_l1_ball_worst_case_is_one_coordinate():
    """p = 1 over the ℓ1 ball of radius 1: every split of the shift (300 random splits over 2–4
    coordinates, the closed form's upper bound) gives a δ(ε) at or below the single coordinate's
    (the classical Laplace mechanism, 1 − e^{(ε − 1)/2})."""
    rng = np.random.default_rng(5)
    for r in (2, 3, 4):
        split = rng.dirichlet(np.ones(r) * 0.5, size=100)
        eps = rng.uniform(0.0, 1.0, 100)
        upper, _ = laplace_vector.laplace_vector_delta(jnp.asarray(eps), jnp.asarray(split))
        assert np.all(np.asarray(upper) <= -np.expm1((eps - 1.0) / 2) * (1 + 1e-12))


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, 8.0])
def test_exact_calibration_is_sound_and_tight(p):
    """Against independent references: p = 1 the Laplace mechanism with δ, b = Δ/(ε − 2 log(1 − δ));
    p = 2 the analytic Gaussian mechanism by brentq on dp_accounting's δ; other p the mpmath δ at b
    (≤ target) and at b(1 − 1e-6) (> target)."""
    eps = np.array([0.1, 1.0, 1.0, 5.0])
    delta = np.array([1e-3, 1e-6, 1e-12, 1e-9])
    b = np.asarray(gg_exact.calibrate_shift(jnp.asarray(eps), jnp.asarray(delta), 2.0, p))
    assert np.all(np.isfinite(b))
    if p == 1.0:
        exact = 2.0 / (eps - 2 * np.log1p(-delta))
    elif p == 2.0:
        exact = []
        for e, dl in zip(eps, delta):
            f = lambda t: plm.GaussianPrivacyLoss(t / math.sqrt(2), sensitivity=2.0).get_delta_for_epsilon(float(e)) - dl  # noqa: E731
            exact.append(optimize.brentq(f, 1e-3, 1e3, xtol=1e-15, rtol=1e-15))
        exact = np.array(exact)
    else:
        for e, dl, got in zip(eps, delta, b):
            assert _mp_shift_delta(p, 2.0 / got, e) <= dl
            assert _mp_shift_delta(p, 2.0 / (got * (1 - 1e-6)), e) > dl
        exact = b
    assert np.all(b >= exact * (1 - 1e-12)) and np.all(b <= exact * (1 + 1e-6))
    assert float(gg_exact.calibrate_shift(1.0, 1e-6, 0.0, p)) == 0.0


def test_calibrated_scales_have_implicit_gradients():
    """d b / d(ε, δ, Δ) through the bisections, by the implicit function theorem: p = 1 against the
    closed form b = Δ/(ε − 2 log(1 − δ)) differentiated by hand; p = 3, the Laplace vector and the
    thresholding scale against central differences of the solved b (bisected to ~1e-17 in log b).
    Through the loop itself the derivative was 0 in ε and δ."""
    eps, delta = jnp.asarray([0.1, 1.0, 1.0, 5.0]), jnp.asarray([1e-3, 1e-6, 1e-12, 1e-9])
    d_eps, d_delta, d_sens = jax.vmap(jax.grad(lambda e, dl, s: gg_exact.calibrate_shift(e, dl, s, 1.0), argnums=(0, 1, 2)))(eps, delta, jnp.full(4, 2.0))
    span = eps - 2 * jnp.log1p(-delta)
    np.testing.assert_allclose(d_eps, -2.0 / span**2, rtol=1e-9)
    np.testing.assert_allclose(d_delta, -2.0 * 2.0 / (1 - delta) / span**2, rtol=1e-9)
    np.testing.assert_allclose(d_sens, 1.0 / span, rtol=1e-9)

    def central(f, x, h):
        return (float(f(x + h)) - float(f(x - h))) / (2 * h)

    shift3 = lambda e: gg_exact.calibrate_shift(e, 1e-6, 2.0, 3.0)  # noqa: E731
    assert float(jax.grad(shift3)(1.0)) == pytest.approx(central(shift3, 1.0, 1e-5), rel=1e-6)
    vector = lambda e: gg_exact.calibrate_vector(e, 1e-6, jnp.asarray([1.0, 0.3, 0.2]), 1.0)  # noqa: E731
    assert float(jax.grad(vector)(1.0)) == pytest.approx(central(vector, 1.0, 1e-5), rel=1e-5)
    thresholded = lambda e: gg_pure.thresholding_scale(e, np.array([1.0, 0.3]), 0.0, 4.0, 2.0)  # noqa: E731
    assert float(jax.grad(thresholded)(1.0)) == pytest.approx(central(thresholded, 1.0, 1e-5), rel=1e-6)


def test_exact_b_below_pdp_b():
    """pDP is stricter than (ε, δ)-DP: the exact b is below Lemma 10's (p = 2, r = 1) and Lemma 5's
    Monte Carlo b (p = 3, r = 3)."""
    eps = jnp.asarray([0.5, 1.0, 2.0])
    assert np.all(np.asarray(gg_exact.calibrate_shift(eps, 0.01, 1.0, 2.0)) < np.asarray(gg_probabilistic.lemma10_scale(eps, 0.01, 1.0)))
    pdp, _ = gg_probabilistic.lemma5_scale(KEY, 1.0, 0.01, [1.0, 0.1, 0.05], 3)
    exact = gg_exact.calibrate_vector(1.0, 0.01, [1.0, 0.1, 0.05], 3.0, rtol=1e-3)
    assert exact < float(pdp)
    upper, _ = gg_exact.vector_delta(1.0, [1.0, 0.1, 0.05], exact, 3.0)
    assert float(upper) <= 0.01


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="p must be"):
        gg_pure.truncated_scale(1.0, [1.0], 0.0, 1.0, 0.5)
    with pytest.raises(ValueError, match="upper must be > lower"):
        gg_pure.sample_truncated(KEY, 0.0, 1.0, 2.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        gg_exact.calibrate_shift(-1.0, 1e-6, 1.0, 2.0)
    with pytest.raises(ValueError, match="delta"):
        gg_exact.calibrate_shift(1.0, 1.5, 1.0, 2.0)
    with pytest.raises(ValueError, match="integer"):
        gg_probabilistic.lemma5_scale(KEY, 1.0, 0.01, [1.0], 2.5)
    with pytest.raises(ValueError, match="threshold"):
        gg_probabilistic.lemma5_scale(KEY, 1.0, 0.01, [1.0], 2, threshold="paper")
    with pytest.raises(ValueError, match="p must be an integer >= 2"):
        gg_probabilistic.lemma5_scale(KEY, 1.0, 0.01, [1.0], [2, 1])
    with pytest.raises(ValueError, match="at most 8"):
        laplace_vector.laplace_vector_delta(jnp.float64(1.0), jnp.ones(9))
    with pytest.raises(ValueError, match="scalar eps and delta"):
        gg_exact.calibrate_vector([1.0, 2.0], 0.01, [1.0, 0.5], 3.0)
    with pytest.raises(ValueError, match="b must be > 0"):
        gg_pure.log_truncation_mass(0.0, 0.0, 2.0, -1.0, 1.0)
