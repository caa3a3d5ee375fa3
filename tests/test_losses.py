"""Privacy-loss levels at a given noise scale against independent references (mpmath, scipy)."""
import jax
import numpy as np
import pytest
import scipy.stats
from _reference import (
    coupling_laplace_quad,
    exact_delta_gaussian_quad,
    exact_delta_laplace,
    exact_delta_laplace_quad,
    exact_delta_laplace_scipy,
)

import jaxpuffer as jp

# (μ_i, σ_i, μ_j, σ_j, ε): σ ratios 1 to 100, point masses, mixed point mass / Gaussian
PAIRS = [
    (0.0, 1.0, 1.0, 2.0, 1.0),
    (0.0, 1.0, 0.0, 3.0, 0.5),
    (2.0, 1.0, 0.0, 1.0, 1.0),
    (0.0, 1.0, 0.0, 100.0, 1.0),
    (0.0, 0.05, 3.0, 5.0, 2.0),
    (0.0, 0.0, 1.0, 0.0, 1.0),
    (0.0, 0.0, 0.5, 1.0, 0.7),
]
TARGETS = [0.5, 1e-3, 1e-6, 1e-12]


def gauss_pair(mi, si, mj, sj):
    return jp.PairSet(jp.Gaussian(mi, si), jp.Gaussian(mj, sj))


@pytest.fixture(scope="module")
def scales():
    """For every (pair, target) the exact-level scale, so δ spans 0.5 down to 1e-12."""
    out = {}
    for k, (mi, si, mj, sj, eps) in enumerate(PAIRS):
        for t in TARGETS:
            out[k, t] = float(jp.calibrate(gauss_pair(mi, si, mj, sj), eps, t, level="exact").scale)
    return out


@pytest.mark.parametrize("k", range(len(PAIRS)))
@pytest.mark.parametrize("target", TARGETS)
def test_exact_laplace_matches_mpmath(scales, k, target):
    mi, si, mj, sj, eps = PAIRS[k]
    b = scales[k, target] or 0.05  # b = 0 (no noise needed): check a small scale instead
    ours = float(jp.delta_exact(gauss_pair(mi, si, mj, sj), b, eps))
    ref = exact_delta_laplace(mi, si, mj, sj, b, eps)  # mpmath, 40 digits
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-13)


def test_exact_identical_priors_is_zero():
    for s in (0.0, 0.3, 10.0):
        assert float(jp.delta_exact(gauss_pair(1.0, s, 1.0, s), 0.7, 0.5)) == 0.0


def test_references_agree_with_each_other():
    # the mpmath reference against scipy quad of the integrand itself (no CDFs)
    for mi, si, mj, sj, eps, b in [(0, 1, 1, 2, 1, 1.2596), (0, 1, 0, 3, 0.5, 2.7798), (0, 0.3, 0.5, 1, 0.7, 0.6)]:
        mp_val = exact_delta_laplace(mi, si, mj, sj, b, eps)
        quad = max(exact_delta_laplace_quad(mi, si, mj, sj, b, eps), exact_delta_laplace_quad(mj, sj, mi, si, b, eps))
        assert quad == pytest.approx(mp_val, rel=1e-8)


def test_exact_math_md_table():
    # MATH.md §6: at the tabulated L0 scales δ_exact is the target (4-decimal scales)
    for (mi, si, mj, sj, eps, delta, b) in [(0, 1, 1, 2, 1, 0.05, 1.2596), (0, 1, 1, 2, 1, 1e-5, 1.8216), (0, 1, 0, 3, 0.5, 1e-3, 2.7798), (2, 1, 0, 1, 1, 1e-3, 1.9857)]:
        got = float(jp.delta_exact(gauss_pair(mi, si, mj, sj), b, eps))
        assert got == pytest.approx(delta, rel=0.03)


def test_exact_batched_matches_scipy_on_random_pairs():
    rng = np.random.default_rng(7)
    n = 60
    mi, mj = rng.normal(0, 2, n), rng.normal(0, 2, n)
    si, sj = rng.uniform(0, 3, n) * (rng.uniform(size=n) > 0.1), rng.uniform(0.01, 3, n)
    b, eps = rng.uniform(0.2, 4, n), rng.uniform(0.1, 2, n)
    ours = np.asarray(jp.delta_exact(jp.PairSet(jp.Gaussian(mi, si), jp.Gaussian(mj, sj)), b, eps))
    ref = np.array([exact_delta_laplace_scipy(*row) for row in zip(mi, si, mj, sj, b, eps)])
    np.testing.assert_allclose(ours, ref, rtol=1e-7, atol=1e-13)


def test_exact_asymmetric_pairs_report_one_order():
    sym = gauss_pair(0.0, 1.0, 0.0, 3.0)
    one = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(0.0, 3.0), symmetric=False)
    rev = jp.PairSet(jp.Gaussian(0.0, 3.0), jp.Gaussian(0.0, 1.0), symmetric=False)
    d_one, d_rev, d_sym = (float(jp.delta_exact(p, 2.0, 0.5)) for p in (one, rev, sym))
    assert d_sym == max(d_one, d_rev) and d_one != d_rev
    assert d_one == pytest.approx(exact_delta_laplace(0, 1, 0, 3, 2.0, 0.5, symmetric=False), rel=1e-9)


def test_zero_scale_is_the_priors_own_hockey_stick():
    # b = 0: ∫[g_i − e^ε g_j]_+ of the priors (scipy quad), and 1 for distinct point masses
    pairs = gauss_pair(0.0, 1.0, 0.5, 1.5)
    ref = max(
        scipy.integrate.quad(lambda y: max(scipy.stats.norm.pdf(y, a, s) - np.exp(0.3) * scipy.stats.norm.pdf(y, c, t), 0), -30, 30, limit=200)[0]
        for a, s, c, t in ((0.0, 1.0, 0.5, 1.5), (0.5, 1.5, 0.0, 1.0))
    )
    assert float(jp.delta_exact(pairs, 0.0, 0.3)) == pytest.approx(ref, rel=1e-7)
    assert float(jp.delta_exact(gauss_pair(0.0, 0.0, 1.0, 0.0), 0.0, 1.0)) == 1.0


@pytest.mark.parametrize("mi,si,mj,sj,theta,eps", [(0, 1, 1, 2, 1.5, 1.0), (0, 0, 1, 0, 2.0, 0.5), (0, 1, 0, 3, 2.0, 0.5), (0, 0.1, 0, 10, 30.0, 1.0), (3, 1, 0, 1, 4.0, 1.0)])
def test_exact_gaussian_noise_matches_mpmath_quad(mi, si, mj, sj, theta, eps):
    ours = float(jp.delta_exact(gauss_pair(mi, si, mj, sj), theta, eps, noise="gaussian"))
    assert ours == pytest.approx(exact_delta_gaussian_quad(mi, si, mj, sj, theta, eps), rel=1e-9, abs=1e-15)


def test_gaussian_noise_point_masses_are_the_analytic_gaussian_mechanism():
    # Balle & Wang 2018, Theorem 8: δ = Φ(Δ/2θ − εθ/Δ) − e^ε Φ(−Δ/2θ − εθ/Δ)
    for delta_, theta, eps in [(1.0, 1.0, 1.0), (2.0, 3.0, 0.5), (1.0, 5.0, 0.1)]:
        ref = scipy.stats.norm.cdf(delta_ / (2 * theta) - eps * theta / delta_) - np.exp(eps) * scipy.stats.norm.cdf(-delta_ / (2 * theta) - eps * theta / delta_)
        got = float(jp.delta_exact(gauss_pair(0.0, 0.0, delta_, 0.0), theta, eps, noise="gaussian"))
        assert got == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("d_mu,d_sigma,b,eps", [(-1, -1, 1.8251, 1.0), (0, -2, 9.6744, 0.5), (2, 0, 1.998, 1.0), (0.3, 1.5, 0.4, 2.0), (5, 40, 3.0, 1.0)])
def test_coupling_closed_form_and_quadrature_against_scipy(d_mu, d_sigma, b, eps):
    pairs = gauss_pair(d_mu, 1.0 + max(d_sigma, 0), 0.0, 1.0 + max(-d_sigma, 0))
    ref = coupling_laplace_quad(d_mu, d_sigma, b, eps)
    assert float(jp.delta_coupling(pairs, b, eps)) == pytest.approx(ref, rel=1e-9, abs=1e-15)
    assert float(jp.delta_coupling(pairs, b, eps, method="quadrature")) == pytest.approx(ref, rel=1e-6, abs=1e-14)


def test_coupling_monte_carlo_interval_covers_closed_form():
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 2.0], 1.0), jp.Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    b = np.array([1.8251, 9.6744, 1.998])
    eps = np.array([1.0, 0.5, 1.0])
    closed = np.asarray(jp.delta_coupling(pairs, b, eps))
    est, upper = jp.delta_coupling(pairs, b, eps, method="monte_carlo", key=jax.random.PRNGKey(3), num_samples=400_000)
    assert np.all(np.asarray(upper) >= closed) and np.all(np.asarray(est) <= np.asarray(upper))
    np.testing.assert_allclose(est, closed, rtol=0.05, atol=2e-4)


def test_gaussian_noise_coupling_bounds_exact():
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 1.0], [1.0, 0.5, 0.0]), jp.Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 0.0]))
    exact = np.asarray(jp.delta_exact(pairs, 2.0, 1.0, noise="gaussian"))
    coupling = np.asarray(jp.delta_coupling(pairs, 2.0, 1.0, noise="gaussian", method="quadrature"))
    assert np.all(exact <= coupling + 1e-12)
    assert coupling[2] == pytest.approx(exact[2], rel=1e-9)  # point masses: the coupling is exact


def test_indicator_and_theorem_levels_against_scipy():
    pairs = gauss_pair(0.0, 1.0, 1.0, 2.0)
    ref = scipy.stats.norm.sf(1.0 * 2.6462, -1, 1) + scipy.stats.norm.cdf(-1.0 * 2.6462, -1, 1)
    assert float(jp.delta_indicator(pairs, 2.6462, 1.0)) == pytest.approx(ref, rel=1e-12)
    assert float(jp.delta_theorem(pairs, 2.96, 1.0)) == pytest.approx(2 * scipy.stats.norm.sf(1.96), rel=1e-12)


def test_levels_are_ordered_at_a_fixed_scale():
    rng = np.random.default_rng(11)
    n = 64
    pairs = jp.PairSet(jp.Gaussian(rng.normal(0, 2, n), rng.uniform(0, 3, n)), jp.Gaussian(rng.normal(0, 2, n), rng.uniform(0, 3, n)))
    b = rng.uniform(0.3, 6, n)
    levels = [jp.delta_exact(pairs, b, 1.0), jp.delta_coupling(pairs, b, 1.0), jp.delta_indicator(pairs, b, 1.0), jp.delta_theorem(pairs, b, 1.0)]
    levels = [np.asarray(x) for x in levels]
    for lower, upper in zip(levels[:-1], levels[1:]):
        assert np.all(lower <= upper + 1e-13)


def test_exact_gradient_in_scale_and_parameters():
    def f(b, mu, s):
        return jp.delta_exact(jp.PairSet(jp.Gaussian(mu, s), jp.Gaussian(0.0, 2.0)), b, 1.0)

    args = (1.3, 0.8, 0.6)
    grads = jax.grad(f, argnums=(0, 1, 2))(*args)
    for k in range(3):
        h = 1e-6
        up, down = list(args), list(args)
        up[k] += h
        down[k] -= h
        fd = (float(f(*up)) - float(f(*down))) / (2 * h)
        assert float(grads[k]) == pytest.approx(fd, rel=1e-5)


def test_exact_slopes_in_closed_form_equal_the_derivatives():
    """The exact search's slopes under Laplace noise (losses.pair_delta_and_slope: δ's gradient in
    (b, Δμ, σ_i, σ_j, ε)) in closed form: Stein's identity for the CDFs' ∂/∂b (noise.gauss_laplace),
    −p and σ p' (the heat equation) for their slopes in the prior's mean and std, −e^ε P_j for ε,
    and the envelope theorem over the crossing points. Checked against autodiff of the values
    themselves (JAX's JVP of F and of δ, a different computation): F's slope in b to 1e-9 relative
    plus the form's rounding, 1e-13 (|z| + σ²/b)/b² (it cancels where b ≪ σ, measured ≤ 2.6e-14 of
    that over 20,000 random points), and p' against the JVP of p to 1e-9 relative plus 1e-13 p/b; δ
    to 1e-13 relative or 1e-15 absolute (measured: bit for bit, or 1.2e-18 apart: two programs
    round the masses' sums differently), and each logarithmic slope (x ∂δ/∂x / δ, x = b, |Δμ|,
    σ_i, σ_j, 1 for ε) to 1e-7 relative or 1e-7 absolute (measured ≤ 1.4e-8 and ≤ 2.5e-7 of δ
    below b_pure, up to 1.3e-5 beyond it, where δ is mostly the rounding allowance that the JVP
    also differentiates) on random pairs with point masses, 0.3 to 1.5 times b_pure. A sign error
    in any one term fails it."""
    import jax.numpy as jnp

    from jaxpuffer.bounds import pure_scale
    from jaxpuffer.losses import pair_delta, pair_delta_and_slope
    from jaxpuffer.noise import gauss_laplace

    rng = np.random.default_rng(3)
    n = 512
    z = np.concatenate([[0.0, -0.0, 3.0, -3.0, 40.0, -700.0], rng.normal(size=n - 6) * 10 ** rng.uniform(-2, 2, n - 6)])
    sigma = np.where(rng.uniform(size=n) < 0.15, 0.0, 10 ** rng.uniform(-3, 3, n))
    b = 10 ** rng.uniform(-3, 3, n)
    slope, density_slope = (np.asarray(v) for v in jax.jit(lambda *a: gauss_laplace(*a, True, True)[3:])(z, sigma, b))
    by_jvp = np.asarray(jax.jvp(lambda bb: gauss_laplace(z, sigma, bb)[1], (jnp.asarray(b),), (jnp.ones(n),))[1])
    assert np.all(np.abs(slope - by_jvp) <= 1e-13 * (np.abs(z) + sigma**2 / b) / b**2 + 1e-9 * np.abs(by_jvp))
    density, density_jvp = (np.asarray(v) for v in jax.jvp(lambda zz: jnp.exp(gauss_laplace(zz, sigma, b)[0]), (jnp.asarray(z),), (jnp.ones(n),)))
    smooth = (sigma > 0) | (z != 0)  # (a point mass's density has its kink at 0)
    # (p' is a difference of two terms of size p/b: it cancels near the mode, as ∂F/∂b does where b ≪ σ)
    assert np.all((np.abs(density_slope - density_jvp) <= 1e-13 * density / b + 1e-9 * np.abs(density_jvp))[smooth])
    point, near = sigma == 0, (z != 0) & (np.abs(z) < 100 * b)  # (a point mass: the plain Laplace kernel, no cancellation)
    assert np.all(np.sign(slope[point & near]) == -np.sign(z[point & near]))  # its mass moves outward as b grows

    d_mu = rng.normal(size=n) * 10 ** rng.uniform(-2, 1, n)
    s1 = np.where(rng.uniform(size=n) < 0.1, 0.0, 10 ** rng.uniform(-2, 1, n))
    s2 = np.where(rng.uniform(size=n) < 0.1, 0.0, s1 * 10 ** rng.uniform(-1, 1, n))
    eps = rng.choice([0.1, 0.5, 1.0, 3.0], n)
    b_pure = np.asarray(pure_scale(d_mu, s1, s2, eps))
    closed = jax.jit(lambda *a: pair_delta_and_slope("exact", "laplace", *a, True))

    def autodiff(*args):  # (Δμ, σ_i, σ_j, b, ε): δ and its JVP in each, in the closed form's order (b, Δμ, σ_i, σ_j, ε)
        f = lambda *x: pair_delta("exact", "laplace", *x, True)  # noqa: E731
        units = jnp.eye(5)[jnp.array([3, 0, 1, 2, 4])]  # (one JVP, its tangent batched over the 5 directions)
        along = jax.vmap(lambda unit: jax.jvp(f, args, tuple(u * jnp.ones_like(v) for u, v in zip(unit, args)))[1], out_axes=1)
        return f(*args), along(units)

    autodiff = jax.jit(autodiff)
    for factor in (0.3, 0.9, 0.9999, 1.5):
        scale = np.where(b_pure > 0, b_pure * factor, 1.0)
        (value, slopes), (ref, ref_slopes) = (tuple(map(np.asarray, f(d_mu, s1, s2, scale, eps))) for f in (closed, autodiff))
        np.testing.assert_allclose(value, ref, rtol=1e-13, atol=1e-15)  # (two programs: XLA may round the masses' sums apart by ulps of 1)
        positive = ref > 1e-300
        assert slopes.shape == (n, 5) and positive.sum() > 20 and np.all(np.isfinite(slopes))
        unit = np.stack([scale, np.abs(d_mu), s1, s2, np.ones(n)], axis=1)[positive]  # logarithmic slopes (ε: per unit)
        log_slopes, ref_log_slopes = (unit * g[positive] / ref[positive, None] for g in (slopes, ref_slopes))
        np.testing.assert_allclose(log_slopes[:, 0], ref_log_slopes[:, 0], rtol=1e-7, atol=0)
        tol = 1e-7 if factor < 1 else 2e-5
        np.testing.assert_allclose(log_slopes, ref_log_slopes, rtol=1e-7, atol=tol)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda p: jp.delta_exact(p, -1.0, 1.0), "scale"),
        (lambda p: jp.delta_exact(p, 1.0, 0.0), "eps"),
        (lambda p: jp.delta_exact(p, 1.0, 1.0, noise="cauchy"), "noise"),
        (lambda p: jp.delta_coupling(p, 1.0, 1.0, method="magic"), "method"),
        (lambda p: jp.delta_coupling(p, 1.0, 1.0, method="monte_carlo"), "key"),
        (lambda p: jp.delta_coupling(p, 1.0, 1.0, noise="gaussian"), "closed"),
        (lambda p: jp.delta_indicator(p, float("nan"), 1.0), "scale"),
        (lambda p: jp.delta_exact(p, np.ones(3), 1.0), "shapes"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call(jp.PairSet(jp.Gaussian([0.0, 1.0], 1.0), jp.Gaussian(0.0, 2.0)))
