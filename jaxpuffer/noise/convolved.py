"""Priors convolved with the Laplace and Gaussian kernels: densities, CDFs and masses in log space (MATH.md §6–7).

Laplace N ~ L(b), density e^{−|z|/b}/(2b); Gaussian N ~ N(0, θ²). For a Gaussian prior
X ~ N(μ, σ²) the release Y = X + N has, with z = y − μ, u = z/σ, v = σ/b:

    Laplace:  p(y) = (1/2b) e^{σ²/(2b²)} [ e^{−z/b} Φ(u − v) + e^{z/b} Φ(−u − v) ]           (MATH.md §6)
              F(y) = Φ(u) − ½ e^{σ²/(2b²) − z/b} Φ(u − v) + ½ e^{σ²/(2b²) + z/b} Φ(−u − v)
    Gaussian: Y ~ N(μ, σ² + θ²).

The Laplace terms are evaluated as e^{T(u, v)} and e^{T(−u, v)} with

    T(u, v) = v²/2 − uv + log Φ(u − v) = −u²/2 + M(u − v),   M(x) = log Φ(x) + x²/2 = log(½ erfcx(−x/√2)),

choosing per element the form without cancellation, so σ/b up to 1e8 and tails down to 1e-300
keep full relative precision. σ = 0 (a point mass) is the plain Laplace kernel.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtr

_SQRT_HALF = math.sqrt(0.5)
_ASYMPTOTIC_FROM = 20.0
_TINY = float(np.finfo(np.float64).tiny)
_UNDERFLOW_ULPS = 2.0**-908  # 2^-960 absolute, in ulps (2^-52): values near and below it may underflow
# (2n − 1)!! / 2^n, the coefficients of the asymptotic series of erfcx in 1/x²
_ERFCX_SERIES = tuple((-1) ** n * math.prod(range(1, 2 * n, 2)) / 2.0**n for n in range(9))


@jax.custom_jvp
def _erfcx_direct(x):
    """e^{x²} erfc(x) as jax.scipy.special.erfcx computes it below its own asymptotic branch
    (x ≤ 26.6), with that function's derivative rule, d/dx = 2x·erfcx(x) − 2/√π. jax's erfcx also
    evaluates its 9-term series on every element and selects; :func:`safe_erfcx` has its own."""
    return jax.lax.exp(jax.lax.square(x)) * jax.lax.erfc(x)


_erfcx_direct.defjvps(lambda g, ans, x: g * (2 * x * ans - 2.0 / np.sqrt(np.pi)))


@jax.jit
def safe_erfcx(x):
    """erfcx(x) = e^{x²} erfc(x), with the asymptotic series for x ≥ 20.

    jax.scipy.special.erfcx (jax 0.10.2) returns exactly 0 for x in [26.5433, 26.6417], where
    erfc underflows (jax-ml/jax#38607, open; fixes proposed in #38822 and #40153). Here
    the series Σ_n (−1)^n (2n−1)!!/(2x²)^n / (x√π), 9 terms, is accurate to
    ~1e-17 relative for x ≥ 20 (``test_log_mills_and_its_derivative_against_mpmath`` checks both
    branches through :func:`log_mills` and its derivative). Below 20 the value and
    derivative are jax's erfcx's (:func:`_erfcx_direct`), without its series: 141 → 116 operations
    per element, the same values bit for bit (the derivative within an ulp).
    """
    big = x >= _ASYMPTOTIC_FROM
    xb = jnp.where(big, x, _ASYMPTOTIC_FROM)
    inv = 1.0 / xb**2
    series = _ERFCX_SERIES[-1]
    for c in _ERFCX_SERIES[-2::-1]:
        series = c + inv * series
    return jnp.where(big, series / (xb * math.sqrt(math.pi)), _erfcx_direct(jnp.where(big, 0.0, x)))


def ndtr_pair(x):
    """(Φ(x), Φ(−x)) from one erf and one erfc per element: bit for bit ``ndtr(x)`` and ``ndtr(−x)``
    of jax.scipy.special (jax 0.10.2), whose rule is ½(1 + erf(w)) for |w| < 1/√2 and else ½erfc(|w|)
    or 1 − ½erfc(|w|), w = x/√2. Called on x and on −x it evaluates erf and erfc twice: XLA does
    not see that w and −w share |w| and that erf(−w) = −erf(w) (odd in float64: x·T(x²)/U(x²)).
    In the mixture evaluator (Laplace noise) the two calls were 13 % of the HLO operations, this 6 %."""
    half_sqrt_2 = 0.5 * math.sqrt(2.0)
    w = x * half_sqrt_2
    z = jax.lax.abs(w)
    near = z < half_sqrt_2
    e, c = jax.lax.erf(w), jax.lax.erfc(z)
    up = jnp.where(near, 1.0 + e, jnp.where(w > 0.0, 2.0 - c, c))
    down = jnp.where(near, 1.0 - e, jnp.where(w < 0.0, 2.0 - c, c))
    return 0.5 * up, 0.5 * down


def log_mills(x, e=None):
    """M(x) = log Φ(x) + x²/2, without cancellation for any real x, from one erfcx per element: with
    e = erfcx(|x|/√2), M = log(e/2) for x < 0 and M = x²/2 + log(1 − (e/2) e^{−x²/2}) for x ≥ 0
    (Φ(−x) = (e/2) e^{−x²/2} ≤ ½; :func:`_log1m`). Within 2.4 ε_mach (1 + |M|) of mpmath on
    [−40, 40] (as the earlier form through log_ndtr, which cost 2.5x as much). ``e``: that erfcx
    where the caller has it (x and −x share it: :func:`as_mirrored`)."""
    neg, log_half_e, log_phi = _log_phi_sides(x, e)
    return jnp.where(neg, log_half_e, 0.5 * jnp.where(neg, 0.0, x) ** 2 + log_phi)


def log_ndtr_accurate(x):
    """log Φ(x) to a few ulps of 1 + min(x, 0)²/2. jax.scipy.special.log_ndtr (jax 0.10.2) errs by up
    to 4e-9 for x in [−30, −20] (its asymptotic series is cut short), a relative error of 4e-9 in
    Φ; below 0 this takes M(x) − x²/2 with M from erfcx (:func:`log_mills`) instead."""
    return jnp.where(x < 0, log_mills(jnp.minimum(x, 0.0)) - 0.5 * jnp.minimum(x, 0.0) ** 2, log_ndtr(jnp.maximum(x, 0.0)))


def erfcx_half(x):
    """erfcx(|x|/√2), the one special function behind :func:`log_mills` and the Laplace terms."""
    return safe_erfcx(jnp.abs(x) * _SQRT_HALF)


@jax.custom_jvp
def as_mirrored(e, x):
    """``e`` = erfcx_half(x) reused as erfcx_half(−x) (:func:`log_mills` of x and −x from one erfcx):
    the same value, and the derivative the latter has. They differ at x = 0 only, where jax
    differentiates |·| from the right (d|x|/dx = 1 there, so d|−x|/dx = −1); M is smooth at 0 and
    each of its forms needs that one-sided slope (sharing e without this put dδ/db under GG(3) 20 %
    off, at cells whose peak argument is exactly 0)."""
    return e


as_mirrored.defjvp(lambda primals, tangents: (primals[0], jnp.where(primals[1] == 0, -tangents[0], tangents[0])))


def _log_phi_sides(x, e=None):
    """(x < 0, log(e/2), log(1 − (e/2) e^{−x²/2})) with e = erfcx(|x|/√2) (:func:`erfcx_half`,
    unless given), one erfcx per element. As Φ(−|x|) = (e/2) e^{−x²/2}, the second is
    log Φ(x) + x²/2 where x < 0 and the third is log Φ(x) where x ≥ 0 (:func:`_log1m`); each holds
    on its own side only. The callers add their own terms to each side, so that no sum cancels
    (:func:`log_mills`, :func:`_log_tail_term`, :func:`_log_mass_term`)."""
    e = erfcx_half(x) if e is None else e
    neg = x < 0
    x_pos = jnp.where(neg, 0.0, x)
    return neg, jnp.log(0.5 * e), _log1m(0.5 * e * jnp.exp(-0.5 * x_pos**2))


def _log1m(t):
    """log(1 − t) for 0 ≤ t ≤ ½, to ~2 ulps. XLA's float64 log1p on CPU errs by up to ~120 ulps
    (1.4e-14 absolute) for arguments in [−0.5, −0.3] (jax 0.10.2); above t = ¼ this takes
    log(1 − t) = log1p(1 − 2t) − log 2 instead, where 1 − 2t is exact and log1p accurate."""
    upper = t > 0.25
    return jnp.log1p(jnp.where(upper, 1.0 - 2.0 * t, -t)) - jnp.where(upper, math.log(2.0), 0.0)


def _log_tail_term(u, v, sides):
    """T(u, v) = v²/2 − uv + log Φ(u − v), the log of e^{σ²/2b² − z/b} Φ(z/σ − σ/b).

    One erfcx per element, in ``sides`` = :func:`_log_phi_sides` of x = u − v (shared with
    :func:`_log_mass_term`, which has the same x): with e = erfcx(|x|/√2),
    x < 0: T = −u²/2 + log(e/2);  x ≥ 0: T = v(v/2 − u) + log(1 − (e/2) e^{−x²/2}) (:func:`_log1m`).
    """
    neg, log_half_e, log_phi = sides
    u_neg = jnp.where(neg, u, 0.0)
    return jnp.where(neg, -0.5 * u_neg**2 + log_half_e, v * (0.5 * v - u) + log_phi)


def _standardize(z, sigma, b):
    point = sigma <= 0
    sig = jnp.where(point, 1.0, sigma)
    return point, jnp.where(point, 0.0, z / sig), jnp.where(point, 0.0, sig / b)


def _laplace_sides(z, sigma, b):
    """(point, u, v, sides at u − v, sides at −u − v): z standardised (u = z/σ, v = σ/b; ``point``
    where σ = 0) and :func:`_log_phi_sides` of the two arguments that every Gaussian ⊛ Laplace term
    here takes, T(±u, v) and G(±u, v) alike: the two erfcx per element behind the tail-normalized
    density and the CDFs (:func:`laplace_terms` computes both from them)."""
    point, u, v = _standardize(z, sigma, b)
    return point, u, v, _log_phi_sides(u - v), _log_phi_sides(-u - v)


def _log_mass_term(u, v, sides):
    """G(u, v) = v²/2 + log Φ(u − v) = T(u, v) + uv, without cancellation (``sides`` as
    :func:`_log_tail_term`'s): x = u − v ≥ 0: v²/2 + log Φ(x); x < 0: u(v − u/2) + M(x)
    (since v²/2 − x²/2 = u(v − u/2))."""
    neg, log_half_e, log_phi = sides
    u_n, v_n, v_p = jnp.where(neg, u, 0.0), jnp.where(neg, v, 0.0), jnp.where(neg, 0.0, v)
    return jnp.where(neg, u_n * (v_n - 0.5 * u_n) + log_half_e, 0.5 * v_p**2 + log_phi)


@jax.jit
def tail_normalized(z, sigma, b, right):
    """(log p ± z/b, d log p/dz) for N(0, σ²) ⊛ Laplace(b) at z: R = log p + z/b where ``right``,
    L = log p − z/b elsewhere. R is bounded in the right tail, L in the left one (both →
    σ²/2b² − log 2b), so differences of log densities formed from them keep full precision far
    out in the tails. With G_a = G(u, v), G_b = G(−u, v) and Δ = G_b − G_a + 2z/b,
    R = max(G_a, G_b + 2z/b) + log1p(e^{−|Δ|}) − log 2b, L = R − 2z/b formed as
    max(G_a − 2z/b, G_b) + log1p(e^{−|Δ|}) − log 2b (no cancellation), slope = tanh(Δ/2)/b."""
    return _normalized(z, b, right, *_laplace_sides(z, sigma, b))


def _normalized(z, b, right, point, u, v, sides_a, sides_b):
    """:func:`tail_normalized` from :func:`_laplace_sides`."""
    zb = z / b
    g_a, g_b = _log_mass_term(u, v, sides_a), _log_mass_term(-u, v, sides_b)
    gap = g_b - g_a + 2.0 * zb
    top = jnp.where(right, jnp.maximum(g_a, g_b + 2.0 * zb), jnp.maximum(g_a - 2.0 * zb, g_b))
    log_2b = jnp.log(2.0 * b)
    value = top + jnp.log1p(jnp.exp(-jnp.abs(gap))) - log_2b
    slope = jnp.tanh(0.5 * gap) / b
    point_value = jnp.where(right, zb, -zb) - jnp.abs(zb) - log_2b
    return jnp.where(point, point_value, value), jnp.where(point, -jnp.sign(z) / b, slope)


def laplace_log_ratio(y, m1, s1, m2, s2, b, separate=False):
    """r(y) = log p_1(y) − log p_2(y) for N(m_k, s_k²) ⊛ Laplace(b), its slope, and the size of
    the terms it was formed from (for a rounding-noise floor on its sign).

    Right of the midpoint of the means r = R_1 − R_2 + (m1 − m2)/b, left of it
    r = L_1 − L_2 − (m1 − m2)/b: the ±y/b parts cancel analytically, so r is accurate to a few
    ulps of |R_1| + |R_2| + |m1 − m2|/b even where y/b is large.

    ``separate=True`` (many points per call, as on the search grid) computes each prior's
    (value, slope) as one complex array in an unrolled two-step ``lax.scan``: XLA on CPU fuses
    a computation into one kernel only where it has a single output, and otherwise writes every
    shared intermediate (the erfcx and log terms) out to memory — about twice as slow.
    """
    right = y >= 0.5 * (m1 + m2)
    if separate:
        def normalized(_, prior):
            m, s = prior
            return None, jax.lax.complex(*tail_normalized(y - m, s, b, right))

        priors = (jnp.stack(jnp.broadcast_arrays(m1, m2)), jnp.stack(jnp.broadcast_arrays(s1, s2)))
        packed = jax.lax.scan(normalized, None, priors, unroll=2)[1]
        (t1, t2), (d1, d2) = packed.real, packed.imag
    else:
        t1, d1 = tail_normalized(y - m1, s1, b, right)
        t2, d2 = tail_normalized(y - m2, s2, b, right)
    shift = jnp.where(right, 1.0, -1.0) * (m1 - m2) / b
    return t1 - t2 + shift, d1 - d2, jnp.abs(t1) + jnp.abs(t2) + jnp.abs(shift)


def gauss_laplace(z, sigma, b, scale_slope=False, density_slope=False, density=False):
    """Log density, CDF and upper tail of N(0, σ²) ⊛ Laplace(b) at z (any broadcastable shapes).

    Returns ``(log_p, cdf, sf)``: log p(z), F(z) = P(Y ≤ z) and S(z) = P(Y > z), each computed
    directly (S is not 1 − F), so both tails are accurate. σ = 0 gives the Laplace kernel.

    ``scale_slope``: also ∂F/∂b (= −∂S/∂b), in closed form from the same two terms. With N = bL,
    ∂_b F = −(1/b) E[(z − W) g_b(z − W)], W ~ N(0, σ²), g_b the Laplace density; Stein's identity
    E[W h(W)] = σ² E[h'(W)] turns that into −(z p + σ² p')/b, and p = (e^{T_a} + e^{T_b})/2b,
    p' = (e^{T_b} − e^{T_a})/2b² (the φ terms of the two parts cancel), so

        ∂_b F = −[(z − σ²/b) e^{T_a} + (z + σ²/b) e^{T_b}] / (2b²)

    (σ = 0: −z e^{−|z|/b}/(2b²)). No derivative is traced: the exact search's slope model
    (:func:`jaxpuffer.losses.pair_delta_and_slope`) needs the number, not a differentiable one.

    ``density_slope`` (with ``scale_slope``): also p'(z) = (e^{T_b} − e^{T_a})/(2b²) (σ = 0:
    −sgn(z) e^{−|z|/b}/(2b²)), from which the CDF's slopes in the prior's parameters follow:
    ∂F/∂μ = −p and, as p = φ_σ ⊛ g_b solves the heat equation ∂p/∂σ = σ p'', ∂F/∂σ = σ p'.
    ``density`` (with both): also p(z) = (e^{T_a} + e^{T_b})/(2b) itself, from the same terms (no
    exp of log p: for 294 points of 6 components, that exp and the log p it needs cost a third of
    a mixture pair's evaluation).
    """
    return _gauss_laplace(z, sigma, b, *_laplace_sides(z, sigma, b), scale_slope, density_slope, density)


def _gauss_laplace(z, sigma, b, point, u, v, sides_a, sides_b, scale_slope, density_slope, density):
    """:func:`gauss_laplace` from :func:`_laplace_sides`."""
    t_a, t_b = _log_tail_term(u, v, sides_a), _log_tail_term(-u, v, sides_b)
    log_p = jnp.logaddexp(t_a, t_b) - jnp.log(2.0 * b)
    e_a, e_b = 0.5 * jnp.exp(t_a), 0.5 * jnp.exp(t_b)
    phi_u, phi_minus_u = ndtr_pair(u)
    cdf = phi_u - e_a + e_b
    sf = phi_minus_u + e_a - e_b
    # point mass: the Laplace kernel itself
    half_tail = 0.5 * jnp.exp(-jnp.abs(z) / b)
    lap_log_p = -jnp.abs(z) / b - jnp.log(2.0 * b)
    lap_cdf = jnp.where(z < 0, half_tail, 1.0 - half_tail)
    lap_sf = jnp.where(z < 0, 1.0 - half_tail, half_tail)
    out = (
        jnp.where(point, lap_log_p, log_p),
        jnp.clip(jnp.where(point, lap_cdf, cdf), 0.0, 1.0),
        jnp.clip(jnp.where(point, lap_sf, sf), 0.0, 1.0),
    )
    if not scale_slope:
        return out
    shift = jnp.where(point, 0.0, sigma**2) / b
    slope = -((z - shift) * e_a + (z + shift) * e_b) / b**2
    slope = jnp.where(point, -z * half_tail / b**2, slope)
    if not density_slope:
        return (*out, slope)
    out = (*out, slope, jnp.where(point, -jnp.sign(z) * half_tail, e_b - e_a) / b**2)
    return (*out, jnp.where(point, half_tail, e_a + e_b) / b) if density else out


def laplace_terms(z, sigma, b, right, scale_slope=False):
    """:func:`tail_normalized` (value, slope) and :func:`gauss_laplace`'s CDF and upper tail (and,
    with ``scale_slope``, ∂F/∂b, p' and p) of N(0, σ²) ⊛ Laplace(b) at z, from one pair of erfcx per
    element (:func:`_laplace_sides`): separately, the two functions evaluate the same two erfcx
    each. The same arithmetic as theirs; compiled in another program, XLA rounds some values
    differently (in the mixture evaluator, 1–3 % of 688,128 values by ≤ 1.4e-12 relative in
    log p and ≤ 2.7e-14 in F and S, as close to mpmath as before: ≤ 67 ulps on 150 of them)."""
    sides = _laplace_sides(z, sigma, b)
    value, slope = _normalized(z, b, right, *sides)
    return value, slope, *_gauss_laplace(z, sigma, b, *sides, scale_slope, scale_slope, scale_slope)[1:]


def tail_ulps(value):
    """A bound, in ulps, on the relative error of a CDF or survival value of N(0, σ²) ⊛ Laplace(b)
    (:func:`gauss_laplace`, σ = 0 included) or of N(0, s²) (``ndtr``): 64 + 4 |log value|. Their
    errors grow with the depth of the tail (the exponent's own rounding, ndtr's ~z² ulps): against
    mpmath, 66 ulps at u = z/σ ≈ 9, 238 at u ≈ 20, 1,320 at u ≈ 33 (value 1e-235), where a flat
    64 ulps had been assumed; ``tests/test_soundness.py`` checks the bound (worst error / bound
    0.6 over 7,000 random (z, σ, b))."""
    return 64.0 + 4.0 * jnp.abs(jnp.log(jnp.maximum(value, _TINY)))


def interval_mass(F_a, S_a, F_c, S_c, a, c, mu):
    """P(a < Y ≤ c) from the CDF left of the median μ, the survival function right of it; and a
    bound on its rounding error in ulps (its value times ε_mach is the error): the values it was
    formed from, each times :func:`tail_ulps` of it, plus 2^-960 absolute per value (values that
    underflow). The error scales with those values, not with the mass: a narrow interval near the
    median is a difference of two values near 1/2."""
    mass = jnp.where(c <= mu, F_c - F_a, jnp.where(a >= mu, S_a - S_c, 1.0 - F_a - S_c))
    err = lambda v: v * tail_ulps(v) + _UNDERFLOW_ULPS  # noqa: E731
    error_ulps = jnp.where(c <= mu, err(F_c) + err(F_a), jnp.where(a >= mu, err(S_a) + err(S_c), 64.0 + err(F_a) + err(S_c)))
    return mass, error_ulps


# Gauss-Legendre nodes and weights on [-1, 1] (numpy.polynomial.legendre.leggauss(6)), for the
# mass of a narrow interval
_LEGENDRE_NODES, _LEGENDRE_WEIGHTS = (tuple(float(v) for v in t) for t in np.polynomial.legendre.leggauss(6))
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def normal_mass(a, c):
    """P(a < Z ≤ c) for standard normal Z, to a relative error of :func:`normal_mass_ulps` ulps.

    A wide interval is a difference of two tails Q(|·|) = Φ(−|·|) on the side that avoids
    cancellation (or 1 less both, across 0). A narrow one, (c − a)·max(|a + c|/2, 1) ≤ 1/2, is
    6-point Gauss-Legendre quadrature of φ: there the two tails agree to many digits and their
    difference loses them (measured against mpmath: up to 1e13 ulps at z ≈ 12 and width 1e-12;
    the discrete ⊛ Gaussian evaluator's narrow cells by a root came out 5.6e-6 low in δ). Beyond,
    the tails differ by a factor e^{−1/2} or more, so their difference loses under 2 bits.
    ``a`` may be −inf and ``c`` +inf.
    """
    width, mid = c - a, 0.5 * (a + c)
    narrow = width * jnp.maximum(jnp.abs(mid), 1.0) <= 0.5  # False for infinite ends
    half, mid = jnp.where(narrow, 0.5 * width, 0.0), jnp.where(narrow, mid, 0.0)
    quadrature = sum(w * jnp.exp(-0.5 * (mid + half * t) ** 2) for t, w in zip(_LEGENDRE_NODES, _LEGENDRE_WEIGHTS))
    tail_a, tail_c = ndtr(-jnp.abs(a)), ndtr(-jnp.abs(c))  # Q(|a|), Q(|c|): one Φ site each
    tails = jnp.where(a >= 0, tail_a - tail_c, jnp.where(c <= 0, tail_c - tail_a, 1.0 - tail_a - tail_c))
    return jnp.where(narrow, half * _INV_SQRT_2PI * quadrature, tails)


def normal_mass_ulps(a, c):
    """A bound, in ulps, on :func:`normal_mass`'s relative error: 64 + 2 z², z = the end nearest 0
    (0 where [a, c] holds 0). Φ's own relative error grows like z² ulps (jax's ndtr against mpmath:
    4 ulps at z < 2, 63 at z ≈ 10, 1,007 at z ≈ 37), as does exp(−z²/2) in the quadrature;
    ``tests/test_soundness.py`` checks the bound against mpmath."""
    z = jnp.maximum(jnp.maximum(a, -c), 0.0)
    return 64.0 + 2.0 * jnp.minimum(z, 1e150) ** 2  # finite: an empty (inf, inf] has mass 0, and 0·inf is NaN


def shift_agm(w, theta, eps):
    """Analytic Gaussian mechanism δ for a shift w ≥ 0 and noise std θ (Balle & Wang 2018)."""
    w_safe = jnp.where(w > 0, w, 1.0)
    x = w_safe / (2 * theta)
    y = eps * theta / w_safe
    val = ndtr(x - y) - jnp.exp(eps + log_ndtr_accurate(-x - y))
    return jnp.where(w > 0, jnp.maximum(val, 0.0), 0.0)
