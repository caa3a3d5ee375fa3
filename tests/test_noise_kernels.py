"""Noise kernels (issue 12): GG(p) against scipy.stats.gennorm and mpmath (independent), p = 1 and
p = 2 against the Laplace and Normal kernels, samples against the variance, names and errors."""
import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import jaxpuffer as jp
from jaxpuffer.noise import GeneralizedGaussian, Laplace, Normal

PS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0)
B = 1.7


def _grid(p):
    """z/b from 0 to where the tail reaches 1e-300 ((z/b)^p ≈ 690), 1e3 for p ≤ 1; both signs."""
    far = 1e3 if p <= 1 else 690.0 ** (1.0 / p)
    t = np.concatenate([[0.0, 1e-8, 0.3, 1.0], np.geomspace(1.5, far, 14)])
    return np.concatenate([-t[::-1], t]) * B


def _mp_log_sf(z, p):
    mp.mp.dps = 40
    x = (mp.mpf(abs(z)) / B) ** p
    half_q = mp.gammainc(1 / mp.mpf(p), x, mp.inf, regularized=True) / 2
    return float(mp.log(half_q if z >= 0 else 1 - half_q))


@pytest.mark.parametrize("p", PS)
def test_gg_kernel_against_mpmath_and_scipy(p):
    k = GeneralizedGaussian(p)
    z = _grid(p)
    ref_sf = np.array([_mp_log_sf(v, p) for v in z])
    ref_cdf = np.array([_mp_log_sf(-v, p) for v in z])
    keep = ref_sf > np.log(1e-300)
    np.testing.assert_allclose(np.asarray(k.log_sf(z, B))[keep], ref_sf[keep], rtol=0, atol=1e-12)
    keep = ref_cdf > np.log(1e-300)
    np.testing.assert_allclose(np.asarray(k.log_cdf(z, B))[keep], ref_cdf[keep], rtol=0, atol=1e-12)
    # the log-density in closed form against scipy's gennorm, and the CDF where scipy's does not underflow
    np.testing.assert_allclose(np.asarray(k.log_density(z, B)), stats.gennorm.logpdf(z, p, scale=B), rtol=1e-13, atol=1e-13)
    mid = np.abs(z / B) ** p < 30
    np.testing.assert_allclose(np.exp(np.asarray(k.log_sf(z, B)))[mid], stats.gennorm.sf(z[mid], p, scale=B), rtol=1e-12)
    assert float(k.variance(B)) == pytest.approx(stats.gennorm.var(p, scale=B), rel=1e-13)


def test_gg_special_cases_are_laplace_and_normal():
    z = np.linspace(-40, 40, 81)
    for fn in ("log_density", "log_sf", "log_cdf"):
        np.testing.assert_allclose(getattr(GeneralizedGaussian(1.0), fn)(z, B), getattr(Laplace(), fn)(z, B), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(getattr(GeneralizedGaussian(2.0), fn)(z, B * np.sqrt(2)), getattr(Normal(), fn)(z, B), rtol=1e-12, atol=1e-12)
    assert float(GeneralizedGaussian(2.0).variance(B * np.sqrt(2))) == pytest.approx(float(Normal().variance(B)), rel=1e-14)
    assert float(GeneralizedGaussian(1.0).variance(B)) == pytest.approx(float(Laplace().variance(B)), rel=1e-14)


def test_curvature_and_its_slope_are_the_log_density_derivatives():
    """κ = −(log g)'' and |κ'| (what the third-order density bounds of losses_convolved take) against
    mpmath's derivatives of log g written from its formula, for t > 0 (rel 1e-12); at t = 0 the
    right limits (∞ where the power is negative, else 0 or the constant), and 0 for Laplace and
    Normal noise (ℓ is affine or quadratic)."""
    mp.mp.dps = 40
    t = np.array([1e-3, 0.2, 1.0, 2.5, 7.0]) * B
    for p in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 8.0):
        k = GeneralizedGaussian(p)
        log_g = lambda u: -((u / mp.mpf(B)) ** p)  # noqa: E731 (u > 0; the constant has no derivative)
        curvature = np.array([-float(mp.diff(log_g, mp.mpf(v), 2)) for v in t])
        slope = np.array([abs(float(mp.diff(log_g, mp.mpf(v), 3))) for v in t])
        np.testing.assert_allclose(np.asarray(k.log_density_curvature(t, B)), curvature, rtol=1e-12, atol=1e-30)  # (mp.diff: ~1e-53 where the truth is 0)
        np.testing.assert_allclose(np.asarray(k.log_density_curvature_slope(t, B)), slope, rtol=1e-12, atol=1e-30)
        at_zero = float(k.log_density_curvature_slope(0.0, B))
        assert at_zero == (np.inf if p in (1.5, 2.5) else 6.0 / B**3 if p == 3.0 else 0.0), (p, at_zero)
    for kernel in (Laplace(), Normal()):
        assert np.all(np.asarray(kernel.log_density_curvature_slope(np.concatenate([[0.0], t]), B)) == 0.0)


def test_samples_match_the_variance_and_kernels_are_pytrees():
    key = jax.random.PRNGKey(0)
    for k in (Laplace(), Normal(), GeneralizedGaussian(3.0)):
        x = k.sample(key, (200_000,), B)
        assert x.dtype == jnp.float64
        assert float(jnp.var(x)) == pytest.approx(float(k.variance(B)), rel=0.02)
    # a kernel is a pytree (its shape parameter a leaf): jit and grad pass through it
    d_var = jax.grad(lambda p: jax.jit(lambda k: k.variance(1.0))(GeneralizedGaussian(p)))(3.0)
    h = 1e-6
    fd = (float(GeneralizedGaussian(3.0 + h).variance(1.0)) - float(GeneralizedGaussian(3.0 - h).variance(1.0))) / (2 * h)
    assert float(d_var) == pytest.approx(fd, rel=1e-6)


def test_names_and_errors():
    assert jp.noise.resolve("laplace") == Laplace() and jp.noise.resolve("gaussian") == Normal()
    assert jp.noise.resolve(GeneralizedGaussian(1.5)).p == 1.5
    with pytest.raises(ValueError, match="^noise must be one of"):
        jp.noise.resolve("cauchy")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="^p must be"):
            GeneralizedGaussian(bad)


# ----------------------------------------------------------------------------- shift δ (the DP case)


def _mp_shift_delta(p, d, eps):
    """Independent reference: the crossing y* of the two log-densities by bisection at 40 digits,
    then mpmath quadrature of (g(y) − e^ε g(y − d)) over y < y* (no incomplete gamma)."""
    mp.mp.dps = 40
    p, d, eps = mp.mpf(p), mp.mpf(d), mp.mpf(eps)
    if d == 0:
        return 0.0
    norm = p / (2 * mp.gamma(1 / p))
    gap = lambda y: abs(y - d) ** p - abs(y) ** p - eps  # noqa: E731
    lo = -mp.mpf(1)
    while gap(lo) <= 0:
        lo *= 2
        if lo < -1e4:  # the root lies where both tails are far below 1e-300
            return 0.0
    if gap(d / 2) >= 0:
        return 0.0
    a, c = lo, d / 2
    for _ in range(160):
        m = (a + c) / 2
        a, c = (m, c) if gap(m) > 0 else (a, m)
    y = (a + c) / 2
    f = lambda t: norm * (mp.exp(-abs(t) ** p) - mp.exp(eps - abs(t - d) ** p))  # noqa: E731
    cuts = sorted({y - 4, y - 1, y - mp.mpf(1) / 4, y - mp.mpf(1) / 32} | {t for t in (mp.mpf(0), d) if t < y})
    return float(mp.quad(f, [-mp.inf, *cuts, y], maxdegree=10))


GG_SHIFT_GRID = [(p, d, eps) for p in (1.0, 1.5, 2.0, 3.0, 8.0) for d in (0.05, 0.7, 2.0, 6.0) for eps in (0.01, 1.0, 4.0)]


def test_gg_shift_delta_against_mpmath_quadrature():
    """Issue 12 part 3, point masses: the half-line closed form is an upper bound within 1e-9 of an
    mpmath quadrature of the positive part (rel 1e-9 or abs 1e-15), on p × shift × ε."""
    p, d, eps = (np.array(v) for v in zip(*GG_SHIFT_GRID))
    got = np.asarray(jp.noise.gg_shift_delta(p, d, eps))
    ref = np.array([_mp_shift_delta(*row) for row in GG_SHIFT_GRID])
    assert np.all(got >= ref * (1 - 1e-13)), np.max(ref - got)  # an upper bound
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)
    assert np.any((ref > 1e-12) & (ref < 1e-3)) and np.any(ref > 0.5)  # the grid spans small and large δ


def test_gg_shift_delta_reduces_to_laplace_and_gaussian():
    """p = 1: 1 − e^{(ε − d)/2} (Laplace mechanism); p = 2: the analytic Gaussian mechanism with
    θ = b/√2, through the kernels' own ``shift_delta``: rel 1e-9 where δ ≥ 1e-30 and ε ≥ 0.1.
    Where δ ≪ F(y*) (ε = 1e-3 with shifts ≪ εb; δ below 1e-30 in the far tail) the CDFs' error
    bounds (128 ulps of 1 + |log Q| each) leave the GG value up to 1e-6 above (measured 1e-7 at
    δ = 1e-287, 6e-7 at ε = 1e-3; mpmath confirms the closed forms there); it stays above."""
    w = np.geomspace(1e-4, 60.0, 40)
    for eps in (1e-3, 0.5, 3.0, 12.0):
        gg1 = np.asarray(GeneralizedGaussian(1.0).shift_delta(w, B, eps))
        gg2 = np.asarray(GeneralizedGaussian(2.0).shift_delta(w, B, eps))
        lap = np.asarray(Laplace().shift_delta(w, B, eps))
        agm = np.asarray(Normal().shift_delta(w, B / np.sqrt(2.0), eps))
        for got, ref in ((gg1, lap), (gg2, agm)):
            keep = ref > 1e-290
            strict = keep & (ref >= 1e-30) & (eps >= 0.1)
            np.testing.assert_allclose(got[strict], ref[strict], rtol=1e-9)
            np.testing.assert_allclose(got[keep], ref[keep], rtol=1e-6)
            assert np.all(got[keep] >= ref[keep] * (1 - 1e-9)) and np.all(got[~keep] <= 1e-280)


def test_log_gammaincc_derivatives_against_mpmath():
    """d/dx log Q(a, x) = −x^{a−1} e^{−x}/(Γ(a) Q) (the closed-form custom JVP) against mpmath at 40
    digits, from x = 1e-6 to the asymptotic branch (x ≥ 200), forward and reverse mode alike, with
    its limits at x = 0 (−1 for a = 1, 0 for a = 2); d/da (forward mode through the series) against
    a central difference of mpmath's log Q. Before the custom JVP, reverse mode stored every step of
    the fixed-length loops (1.3 GB for one 64-atom discrete pair under GG noise) and gave NaN."""
    from jaxpuffer.noise import log_gammaincc

    mp.mp.dps = 40
    xs = np.array([1e-6, 0.01, 0.5, 1.0, 2.5, 7.0, 30.0, 150.0, 199.0, 250.0, 600.0])
    for a in (1.0 / 8.0, 1.0 / 3.0, 2.0 / 3.0, 1.0, 2.0, 3.5):
        want = np.array([float(-mp.power(x, a - 1) * mp.exp(-x) / mp.gammainc(a, x, mp.inf)) for x in xs])
        forward = np.array([float(jax.jvp(lambda x_: log_gammaincc(a, x_), (x,), (1.0,))[1]) for x in xs])
        reverse = np.asarray(jax.jit(jax.vmap(jax.grad(lambda x_: log_gammaincc(a, x_))))(jnp.asarray(xs)))
        np.testing.assert_allclose(forward, want, rtol=1e-11)
        np.testing.assert_allclose(reverse, want, rtol=1e-11)
        h = 1e-6
        da = [float((mp.log(mp.gammainc(a + h, x, mp.inf, regularized=True)) - mp.log(mp.gammainc(a - h, x, mp.inf, regularized=True))) / (2 * h)) for x in xs[:8]]
        got = np.asarray(jax.vmap(jax.grad(log_gammaincc), in_axes=(None, 0))(a, jnp.asarray(xs[:8])))
        np.testing.assert_allclose(got, da, rtol=1e-6, atol=1e-9)
    assert float(jax.grad(lambda x_: log_gammaincc(1.0, x_))(0.0)) == -1.0
    assert float(jax.grad(lambda x_: log_gammaincc(2.0, x_))(0.0)) == 0.0


def test_gg_shift_delta_gradient_and_refusals():
    """d δ / d shift by the envelope theorem matches a central difference; p < 1 gives NaN."""
    f = lambda d: jp.noise.gg_shift_delta(3.0, d, 1.0)  # noqa: E731
    d0, h = 1.3, 1e-6
    fd = (float(f(d0 + h)) - float(f(d0 - h))) / (2 * h)
    np.testing.assert_allclose(float(jax.grad(f)(d0)), fd, rtol=1e-6)
    assert np.isnan(float(jp.noise.gg_shift_delta(0.7, 1.0, 1.0)))


def test_shared_special_functions_equal_the_separate_calls_bit_for_bit():
    """noise.convolved.ndtr_pair(x) is jax's ndtr(x) and ndtr(−x), and log_mills of x and −x from
    one erfcx (as_mirrored, as losses_convolved._ramp forms them) is log_mills(x) and
    log_mills(−x): values and derivatives to the last bit, on random points, on the branch points
    of ndtr (|x| = 1) and erfcx (|x|/√2 = 20), and at ±0, where jax differentiates |x| from the
    right and the shared erfcx needs the mirrored one-sided slope (without it M'(−x) at x = 0 came
    out +√(2/π) instead of −√(2/π), and dδ/db under GG(3) up to 20 % off)."""
    from jax.scipy.special import ndtr
    from jaxpuffer.noise.convolved import as_mirrored, erfcx_half, log_mills, ndtr_pair

    rng = np.random.default_rng(11)
    x = jnp.asarray(np.concatenate([rng.normal(0.0, 12.0, 4000), rng.uniform(-2.0, 2.0, 2000),
                                    [0.0, -0.0, 1.0, -1.0, np.nextafter(1.0, 0.0), 20 * np.sqrt(2.0), -20 * np.sqrt(2.0), 5e-324, np.inf, -np.inf]]))
    ones = jnp.ones_like(x)

    def shared_mills(x):
        e = erfcx_half(x)
        return log_mills(jnp.stack([x, -x]), e=jnp.stack([e, as_mirrored(e, x)]))

    pairs = ((ndtr_pair, lambda x: (ndtr(x), ndtr(-x))), (shared_mills, lambda x: log_mills(jnp.stack([x, -x]))))
    for shared, separate in pairs:
        for got, want in zip(jax.jit(lambda x: jax.jvp(shared, (x,), (ones,)))(x), jax.jit(lambda x: jax.jvp(separate, (x,), (ones,)))(x)):
            got, want = np.asarray(jnp.stack(got) if isinstance(got, tuple) else got), np.asarray(jnp.stack(want) if isinstance(want, tuple) else want)
            assert np.array_equal(got, want, equal_nan=True), np.nonzero(got != want)
    slope = np.asarray(jax.jvp(shared_mills, (jnp.zeros(1),), (jnp.ones(1),))[1])[:, 0]
    np.testing.assert_allclose(slope, [np.sqrt(2 / np.pi), -np.sqrt(2 / np.pi)], rtol=1e-15)


def test_log_mills_and_its_derivative_against_mpmath():
    """M(x) = log Φ(x) + x²/2 (noise.convolved.log_mills, the exact GG evaluator's integrals of a
    Gaussian over a cell, whose rounding bounds take M to a few ulps of 1 + |M|) and M' against
    mpmath (60 digits) on [−60, 40], on the points where its two branches meet (0, ±tiny) and
    where log(1 − Φ(−x)) switches form (Φ(−x) = ¼ at x ≈ 0.674). Measured: 2.4 ε_mach (1 + |M|)."""
    from jaxpuffer.noise.convolved import log_mills

    mp.mp.dps = 60
    rng = np.random.default_rng(5)
    xs = np.concatenate([np.linspace(-60.0, 40.0, 1001), rng.uniform(-3.0, 3.0, 500), -np.exp(rng.uniform(0.0, 7.0, 200)),
                         [0.0, -0.0, 5e-324, -1e-300, 0.6744897501960817, 0.67448975019608, 38.5]])
    ref = np.array([float(mp.log(mp.ncdf(mp.mpf(v))) + mp.mpf(v) ** 2 / 2) for v in xs])
    got = np.asarray(jax.jit(log_mills)(jnp.asarray(xs)))
    assert np.max(np.abs(got - ref) / (2.0**-52 * (1.0 + np.abs(ref)))) < 8.0
    slope = np.asarray(jax.jit(jax.vmap(jax.grad(log_mills)))(jnp.asarray(xs[:1001:5])))
    slope_ref = np.array([float(mp.diff(lambda t: mp.log(mp.ncdf(t)) + t**2 / 2, mp.mpf(v))) for v in xs[:1001:5]])
    np.testing.assert_allclose(slope, slope_ref, rtol=1e-12, atol=1e-13)
