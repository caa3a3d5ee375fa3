"""Exact δ of Gaussian and Gaussian-mixture priors under any log-concave noise kernel, by certified
quadrature and cell enclosure (issue 12: generalized Gaussian noise GG(p), p ≥ 1, at the exact
level; MATH.md §3, §6, §9).

A Gaussian prior N(μ, σ²) released with noise of density g_b (symmetric, log-concave: GG(p) with
p ≥ 1) has the density p(y) = ∫ g_b(t) φ_σ(y − μ − t) dt, with no closed form for p ∉ {1, 2}.
Two layers, each a certified enclosure:

**The density** (:func:`log_density_bounds`: lower and upper bounds of log p at any y). With
z = y − μ, the line of t is cut into cells with nodes at t = 0 (the kernel's kink), where log g has
fallen by ``_LEVELS`` around 0, where the prior's factor has around t = z, and around the
integrand's mode t* (between 0 and z, found by bisection) in steps of its width
w = (1/σ² + κ(t*))^{-1/2}; each of those cells is then cut into ``_SPLIT`` equal parts. On a cell
[t₀, t₁] on one side of 0, ℓ = log g has curvature −κ(|t|) with κ = −(log g)'' and |κ'| monotone
in |t| (GG: κ = p(p − 1)|t|^{p−2}/b^p), so by Taylor at the midpoint m to third order, with
d = t − m, h = t₁ − t₀ and J the larger end value of |κ'| (|ℓ‴| ≤ J, |d|³ ≤ (h/2) d²),

    ℓ(m) + ℓ'(m) d − κ_dn d²/2  ≤  ℓ(t)  ≤  ℓ(m) + ℓ'(m) d − κ_up d²/2,
    κ_dn = min(κ_max, κ(m) + Jh/6),   κ_up = max(κ_min, κ(m) − Jh/6)

(κ_min, κ_max its end values; where κ_dn = ∞ — the cell at 0 for p < 2 — the chord bounds ℓ from
below instead; above, the lesser of that and the Taylor bound with κ_min at the end where the
integrand is larger, which stays tight where the prior's factor holds a cell's mass at one end
and does not cancel where ℓ falls by orders of magnitude across a cell). With the second-order
bounds (κ_max, κ_min at m; the upper one split between the two ends) the density's bounds were
2–3x wider and δ's upper bound 1.3–2x further from its lower one (16 random Gaussian pairs,
GG(1.5), GG(3), GG(8); every upper bound is lower now), each evaluation 10–20 % slower at the
same 3 Gaussian integrals per cell, and their upper bound of log p reached 4e16 for p = 8, σ ≫ b
far out (now ≤ 3e-4 above the lower one on 1,200 random points, none off the independent
reference of ``tests/adversarial``). The prior's factor is integrated exactly: for an exponent
quadratic in t,

    ∫_{t₀}^{t₁} e^{α + β d − κ d²/2} φ_σ(z − t) dt = e^{E(t̂)} (1 + κσ²)^{-1/2} [Φ(√A (t₁ − t̂)) − Φ(√A (t₀ − t̂))],

A = κ + 1/σ², t̂ = (β + κm + z/σ²)/A the exponent's peak, E the whole exponent (log φ_σ
included). The error is third order in the cell width (zero for p = 1 and p = 2, where the bounds
coincide); beyond the outer nodes ℓ lies below its tangent there, integrated exactly to ±∞. The
rounding of each cell's value (its exponent's terms, the peak's position moving Φ's arguments by
|ξ| ≤ max(|l|, |h|) per unit — Cauchy's mean value theorem on φ/Φ — and the difference of Φs) is
added outward. σ = 0 (a point mass) is log g itself.

**δ** (:func:`hockey`). log p is concave (a convolution of log-concave densities), so on an outer
cell [a, c] with midpoint m its values at a, m, c bound it: below by the chords, above by the
extensions of the half-cells' chords, ℓ(y) ≤ ℓ(m) + (ℓ(m) − ℓ(c))(m − y)/(c − m) left of m and the
mirror image right of it — a convex V, hence below its own chord through 2ℓ(m) − ℓ(c) at a and
2ℓ(m) − ℓ(a) at c. Those are the tangent and chord enclosures of
:mod:`jaxpuffer.losses_enclosure` with each prior as one "atom" (the line through the V's ends in
place of the tangent at m; the error of each value widens both), so its cell bounds of
∫ [p − e^ε q]_+, its masses by ∫ e^chord ≤ ∫ e^ℓ ≤ ∫ e^V and its refinement of the loosest cells
apply unchanged (refining only the orders that can still decide the result:
:func:`jaxpuffer.losses_enclosure.refined_deciding`). A mixture Σ_k w_k N(μ_k, σ_k²) is the same
with each component one atom (each log-concave; the enclosure's log-sum-exps weigh them), so a
pair of mixtures needs nothing more.
The outer grid puts cell ends around each component's mean where log g and the component have
fallen by the enclosure's levels (their scales added), out to where both have fallen by 80;
beyond, P's mass is at most 2Φ(−√160) + 2P(N > b·80^{1/p}), added to δ.

The kernel supplies ``log_density``, ``log_sf``, ``log_density_decay`` (−ℓ'), ``decay_offsets``,
``log_density_curvature`` (κ, monotone in |t| on each side) and ``log_density_curvature_slope``
(|κ'|, monotone in |t| on each side; +∞ where unknown: the second-order bounds).
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr

from . import losses_enclosure as enclosure
from ._roots import log_or_minus_inf
from .noise.convolved import as_mirrored, erfcx_half, log_mills

_EPS64 = 2.0**-52
# where log g (around t = 0) and the prior's factor (around t = z) have fallen by these, the inner nodes
_LEVELS = (1e-4, 1e-3, 1e-2, 0.03, 0.0625, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0, 128.0)
# the inner nodes around the integrand's mode, in units of its width
_MODE_STEPS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0)
_SPLIT = 1  # equal parts per inner cell (2: the gap of δ's bounds 2e-3 -> 6e-4, at 3.5x the cost)
_BISECTIONS = 48  # the mode's bisection (only where nodes go: any mode is certified)
_REACH = 80.0  # the outer grid's last level (as losses_enclosure)
_OUTER_LEVELS = enclosure._LEVELS
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _log1m_exp(x):
    """log(1 − e^x) for x ≤ 0 (−∞ at 0)."""
    near = x > -math.log(2.0)
    return jnp.where(near, jnp.log(-jnp.expm1(jnp.where(near, x, -1.0))), jnp.log1p(-jnp.exp(jnp.where(near, -1.0, x))))


def _logaddexp(a, c):
    """log(e^a + e^c), −∞ (with zero derivatives, where jnp.logaddexp's are NaN) where both are −∞."""
    return enclosure._lse(jnp.stack([a, c], axis=-1))


def _ramp(x, width, x_err):
    """(log ∫_0^W e^{x v − v²/2} dv − log √(2π), a bound of its error) for W = ``width`` ≥ 0 (+∞
    allowed; −∞ for W = 0), x off by at most ``x_err``, for both parts of a cell (right and left of
    its peak): x and −x, with ``width`` (2, ...) their two widths (results stacked the same way;
    M(x) and M(−x) share one erfcx). With M(x) = log Φ(x) + x²/2
    (:func:`jaxpuffer.noise.convolved.log_mills`, no cancellation for any x), the integral is
    √(2π) [e^{M(x)} − e^{M(x − W) + xW − W²/2}], formed as M(x) + log(1 − e^{D}). On a narrow
    part, where 1 − e^{D} → 0 amplifies rounding without bound, the integrand's end values bound
    it instead (the exponent is concave: between W e^{min(0, xW − W²/2)} and W e^{max(x, 0) W})."""
    x = jnp.stack(jnp.broadcast_arrays(x, -x))
    finite = jnp.isfinite(width)
    empty = jnp.logical_not(width > 0)
    w = jnp.where(finite & ~empty, width, 1.0)  # (an empty or infinite part: a stand-in, masked below, with finite derivatives)
    near, far = jnp.broadcast_arrays(x, x - w)
    # three erfcx for the two parts, not four (M(±x) share one), in one call, as is log_mills: one traced copy of each
    e = erfcx_half(jnp.stack([near[0], far[0], far[1]]))
    m_x, m_far = log_mills(jnp.stack([near, far]), e=jnp.stack([jnp.stack([e[0], as_mirrored(e[0], near[0])]), e[1:]]))
    d = jnp.minimum(m_far + x * w - 0.5 * w**2 - m_x, -1e-300)  # (D ≥ 0 is rounding: the crude form below takes over)
    value = m_x + jnp.where(finite, _log1m_exp(d), 0.0)
    gain = jnp.where(finite, jnp.exp(d) / jnp.maximum(-jnp.expm1(d), 1e-300), 0.0)  # log(1 − e^D)'s amplification
    # |M'| ≤ 1 + max(x, 0) (M' = x + φ(x)/Φ(x) ∈ (0, 1) for x ≤ 0)
    per_x = 1.0 + jnp.maximum(x, 0.0) + gain * (2.0 + 2.0 * jnp.maximum(x, 0.0) + w)
    ulps = 16.0 * (1.0 + jnp.abs(m_x) + gain * (jnp.abs(m_far) + jnp.abs(x * w) + 0.5 * w**2 + jnp.abs(m_x)))
    err = x_err * per_x + _EPS64 * ulps
    log_w = jnp.log(w) - _HALF_LOG_2PI
    hi = log_w + jnp.maximum(x, 0.0) * w
    lo = log_w + jnp.minimum(0.0, x * w - 0.5 * w**2)
    crude_err = 0.5 * (hi - lo) + x_err * w + 16.0 * _EPS64 * (1.0 + jnp.abs(log_w) + jnp.abs(x * w) + w**2)
    crude = finite & (crude_err < err)
    value, err = jnp.where(crude, 0.5 * (hi + lo), value), jax.lax.stop_gradient(jnp.where(crude, crude_err, err))
    return jnp.where(empty, -jnp.inf, value), jnp.where(empty, 0.0, err)


def _gauss_integral(alpha, beta, kappa, m, t0, t1, z, sigma):
    """(log ∫_{t₀}^{t₁} e^{α + β(t − m) − κ(t − m)²/2} φ_σ(z − t) dt, a bound of its rounding) for
    κ ≥ 0 finite, σ > 0, t₀ ≤ t₁ (t₀ may be −∞, t₁ +∞).

    The exponent E(t) (log φ_σ included) is quadratic with curvature −A, A = κ + 1/σ². Expanded
    exactly at e, the point of the cell nearest its peak t̂ = (β + κm + z/σ²)/A, the integral is
    e^{E(e)} A^{-1/2} [∫_0^{√A(t₁−e)} e^{xv − v²/2} dv + ∫_0^{√A(e−t₀)} e^{−xv − v²/2} dv] with
    x = E'(e)/√A (:func:`_ramp`): no term is larger than the exponent's own value on the cell, so
    a peak far outside the cell (a far tail) cancels nothing. Any e gives the same identity, so the
    peak's rounding costs nothing; E(e) and x are rounded to 16 ulps of their terms."""
    prec = 1.0 / sigma**2
    a = kappa + prec
    root = jnp.sqrt(a)
    e = jnp.clip((beta + kappa * m + z * prec) / a, t0, t1)
    # a peak within 1/8 of the cell of an end is moved onto it: a sliver part would carry a rounding
    # bound of ~1/width (log(1 − e^D) with D → 0) for a negligible mass
    h = t1 - t0
    # (the value does not depend on e, so no derivative is taken through it: the split in
    # log_density_bounds shows what such a path's rounding can do)
    e = jax.lax.stop_gradient(jnp.where(e - t0 < 0.125 * h, t0, jnp.where(t1 - e < 0.125 * h, t1, e)))
    d, g = e - m, e - z
    terms = jnp.abs(alpha) + jnp.abs(beta * d) + 0.5 * kappa * d**2 + 0.5 * prec * g**2
    expo = alpha + beta * d - 0.5 * kappa * d**2 - 0.5 * prec * g**2 - 0.5 * jnp.log1p(kappa * sigma**2)
    x = (beta - kappa * d - prec * g) / root
    x_err = 16.0 * _EPS64 * (jnp.abs(beta) + jnp.abs(kappa * d) + prec * jnp.abs(g)) / root
    # an infinite end's width is formed without it: a masked inf would make reverse-mode derivatives NaN
    right_w = jnp.where(jnp.isfinite(t1), root * (jnp.where(jnp.isfinite(t1), t1, e) - e), jnp.inf)
    left_w = jnp.where(jnp.isfinite(t0), root * (e - jnp.where(jnp.isfinite(t0), t0, e)), jnp.inf)
    (right, left), (r_err, l_err) = _ramp(x, jnp.stack(jnp.broadcast_arrays(right_w, left_w)), x_err)
    value = expo + _logaddexp(right, left)
    err = jax.lax.stop_gradient(16.0 * _EPS64 * (2.0 + terms) + jnp.maximum(r_err, l_err))  # (rounding bounds carry no derivative)
    empty = jnp.logical_not(t1 > t0)
    return jnp.where(empty, -jnp.inf, value), jnp.where(empty, 0.0, err)


def _gauss_integrals(z, sigma, *rows):
    """:func:`_gauss_integral` for several sets of cells (each row its (α, β, κ, m, t₀, t₁), broadcast
    against z and σ), evaluated as one concatenated batch: the integral's graph (four log-Mills
    ratios) is traced once, not once per row, which cuts the compiled size of every evaluator built
    on :func:`log_density_bounds` (its five rows once took five copies)."""
    shapes = [jnp.broadcast_shapes(z.shape, sigma.shape, *(jnp.shape(v) for v in row)) for row in rows]
    sizes = [shape[-1] for shape in shapes]
    args = [jnp.concatenate([jnp.broadcast_to(row[i], shape) for row, shape in zip(rows, shapes)], axis=-1) for i in range(6)]
    value, err = _gauss_integral(*args, z, sigma)
    cuts = list(itertools.accumulate(sizes))[:-1]
    return list(zip(jnp.split(value, cuts, axis=-1), jnp.split(err, cuts, axis=-1)))


def _mode(kernel, z, sigma, b):
    """The peak of t ↦ log g_b(t) + log φ_σ(z − t), between 0 and z, by bisection on its slope."""
    lo, hi = jnp.minimum(z, 0.0), jnp.maximum(z, 0.0)

    def step(_, ends):
        lo, hi = ends
        mid = 0.5 * (lo + hi)
        slope = -jnp.sign(mid) * kernel.log_density_decay(jnp.abs(mid), b) + (z - mid) / sigma**2
        return jnp.where(slope > 0, mid, lo), jnp.where(slope > 0, hi, mid)

    lo, hi = jax.lax.fori_loop(0, _BISECTIONS, step, (lo, hi))
    return 0.5 * (lo + hi)


def _inner_nodes(kernel, z, sigma, b):
    """Sorted t nodes (..., n) for the density at z (module docstring)."""
    levels = jnp.asarray(_LEVELS, jnp.float64)
    k_off = kernel.decay_offsets(levels) * b[..., None]
    p_off = jnp.sqrt(2.0 * levels) * sigma[..., None]
    mode = _mode(kernel, z, sigma, b)
    kappa = kernel.log_density_curvature(jnp.maximum(jnp.abs(mode), b), b)
    width = 1.0 / jnp.sqrt(1.0 / sigma**2 + kappa)
    m_off = jnp.asarray(_MODE_STEPS, jnp.float64) * width[..., None]
    zero = jnp.zeros_like(z)[..., None]
    nodes = jnp.concatenate([zero, k_off, -k_off, z[..., None], z[..., None] + p_off, z[..., None] - p_off, mode[..., None], mode[..., None] + m_off, mode[..., None] - m_off], axis=-1)
    nodes = jnp.sort(nodes, axis=-1)
    frac = jnp.arange(_SPLIT, dtype=jnp.float64) / _SPLIT
    parts = nodes[..., :-1, None] + (nodes[..., 1:] - nodes[..., :-1])[..., None] * frac
    return jnp.concatenate([parts.reshape(*nodes.shape[:-1], -1), nodes[..., -1:]], axis=-1)


def _lse_bound(values, up):
    """log Σ e^{v_k}, moved outward (up for ``up``) by the sum's own rounding."""
    top = jnp.max(values, axis=-1)
    slack = (values.shape[-1] + 8) * _EPS64 * (1.0 + jnp.abs(jnp.where(jnp.isfinite(top), top, 0.0)))
    total = enclosure._lse(values)
    return total + slack if up else total - slack


def log_density_bounds(kernel, z, sigma, b):
    """(lower, upper) bounds of log p(z), p = N(0, σ²) ⊛ g_b, for z, σ ≥ 0, b > 0 broadcast
    together (module docstring). σ = 0 gives log g_b(z) (both bounds)."""
    z, sigma, b = jnp.broadcast_arrays(*(jnp.asarray(v, jnp.float64) for v in (z, sigma, b)))
    point = sigma <= 0
    sig = jnp.where(point, 1.0, sigma)
    # the nodes are where the quadrature cuts, not a function it bounds: its derivative is taken at
    # fixed nodes (the bound's own, as finite differences of it show; through the nodes' positions
    # it was 5x off)
    nodes = jax.lax.stop_gradient(_inner_nodes(kernel, z, sig, b))
    t0, t1 = nodes[..., :-1], nodes[..., 1:]
    m = 0.5 * (t0 + t1)
    zc, sc, bc = z[..., None], sig[..., None], b[..., None]
    ell = lambda t: kernel.log_density(t, bc)  # noqa: E731
    slope = -jnp.sign(m) * kernel.log_density_decay(jnp.abs(m), bc)
    k0, k1 = kernel.log_density_curvature(jnp.abs(t0), bc), kernel.log_density_curvature(jnp.abs(t1), bc)
    k_min, k_max = jnp.minimum(k0, k1), jnp.maximum(k0, k1)
    k_min = jnp.where(jnp.isfinite(k_min), k_min, 0.0)  # (∞ only on an empty cell at 0, p < 2: 0 is valid, κ ≥ 0, and keeps ∞·0 out)
    l_m, l_0, l_1 = ell(m), ell(t0), ell(t1)

    def rounding(t, value):  # of ℓ at t: 32 ulps of 1 + |ℓ|, and |ℓ'| times t's own ulps (a power of |t|/b)
        return jax.lax.stop_gradient(32.0 * _EPS64 * (1.0 + jnp.abs(value)) + kernel.log_density_decay(jnp.abs(t), bc) * 4.0 * _EPS64 * jnp.abs(t))

    e_m, e_0, e_1 = rounding(m, l_m), rounding(t0, l_0), rounding(t1, l_1)
    # Third order at the midpoint: ℓ = ℓ(m) + ℓ'(m)d − κ(m)d²/2 + ℓ‴(ξ)d³/6 with |ℓ‴| = |κ'| ≤ J,
    # its larger end value (|κ'| is monotone in |t| on a cell, which never holds 0 inside), and
    # |d|³ ≤ (h/2)d², so ℓ lies between the quadratics of curvature κ(m) ± Jh/6, a third as far
    # apart as those of [κ_min, κ_max] (≈ κ(m) ± Jh/2); each curvature is clipped to that interval,
    # whose ends bound ℓ too (they alone where J is infinite: the cell at 0 for p < 3). κ(m) and
    # Jh/6 are moved outward by 64 ulps for their rounding
    h = t1 - t0
    k_m = kernel.log_density_curvature(jnp.abs(m), bc)
    j_max = jnp.maximum(kernel.log_density_curvature_slope(jnp.abs(t0), bc), kernel.log_density_curvature_slope(jnp.abs(t1), bc))
    third = jnp.isfinite(j_max) & jnp.isfinite(k_m)
    reach = jnp.where(third, j_max * jnp.where(third, h, 0.0) / 6.0, 0.0) * (1.0 + 64.0 * _EPS64)
    k_up = jnp.where(third, jnp.maximum(k_min, k_m * (1.0 - 64.0 * _EPS64) - reach), k_min)  # above ℓ: the larger valid curvature
    k_dn = jnp.where(third, jnp.minimum(k_max, k_m * (1.0 + 64.0 * _EPS64) + reach), k_max)  # below ℓ: the smaller
    # above: the lesser of that bound and the Taylor bound with κ_min at the end where the integrand
    # ℓ + log φ_σ(z − t) is larger (concave: it falls away from there, and with it what the bound
    # overstates). The midpoint's expansion is loose where the prior's factor holds the cell's mass
    # at one end (σ ≪ b), and cancels where ℓ falls by orders of magnitude across a cell (a far
    # end's |ℓ| ~ 1e20), where its rounding bound makes it useless; the end's does neither
    high = l_0 - 0.5 * ((zc - t0) / sc) ** 2 >= l_1 - 0.5 * ((zc - t1) / sc) ** 2
    s_0 = -jnp.sign(m) * kernel.log_density_decay(jnp.abs(t0), bc)
    s_1 = -jnp.sign(m) * kernel.log_density_decay(jnp.abs(t1), bc)
    l_h, s_h, t_h, e_h = (jnp.where(high, a, c) for a, c in ((l_0, l_1), (s_0, s_1), (t0, t1), (e_0, e_1)))
    # below: the Taylor bound with k_dn at the midpoint where it is finite, else the chord
    finite = jnp.isfinite(k_dn)
    chord_slope = (l_1 - l_0) / jnp.where(h > 0, h, 1.0)
    alpha = jnp.where(finite, l_m, 0.5 * (l_0 + l_1))
    beta = jnp.where(finite, slope, chord_slope)
    # the tails beyond the outer nodes: below the tangent there (κ = 0), integrated to ±∞
    first, last = nodes[..., :1], nodes[..., -1:]
    (up_h, err_h), (up_m, err_m), (dn, dn_err), (right, r_err), (left, l_err) = _gauss_integrals(
        zc, sc,
        (l_h, s_h, k_min, t_h, t0, t1),
        (l_m, slope, k_up, m, t0, t1),
        (alpha, beta, jnp.where(finite, k_dn, 0.0), m, t0, t1),
        (ell(last), -kernel.log_density_decay(jnp.abs(last), bc), 0.0, last, last, jnp.inf),
        (ell(first), kernel.log_density_decay(jnp.abs(first), bc), 0.0, first, -jnp.inf, first),
    )
    up = jnp.minimum(up_h + err_h + e_h, up_m + err_m + e_m)  # (two upper bounds: the lesser)
    dn_err = dn_err + jnp.where(finite, e_m, jnp.maximum(e_0, e_1))
    up_all = jnp.concatenate([up, right + r_err + e_1[..., -1:], left + l_err + e_0[..., :1]], axis=-1)
    upper = _lse_bound(up_all, True)
    lower = _lse_bound(dn - dn_err, False)
    exact = kernel.log_density(z, b)
    return jnp.where(point, exact, lower), jnp.where(point, exact, upper)


def _grid(kernel, mu, sigma, b):
    """Sorted outer cell ends: each prior's mean and, on both sides, where the prior and the kernel
    have each fallen by ``losses_enclosure._LEVELS`` (their offsets added)."""
    levels = jnp.asarray(_OUTER_LEVELS, jnp.float64)
    t = jnp.sqrt(2.0 * levels) * sigma[:, None] + kernel.decay_offsets(levels) * b  # (priors, levels), t[:, 0] = 0
    offsets = jnp.concatenate([-t[:, :0:-1], t], axis=1)
    return jnp.sort((mu[:, None] + offsets).reshape(-1))


def _tables(kernel, mu, sigma, b, ends, parent=None):
    """The cells' tables for :func:`losses_enclosure.cell_bounds`, each prior an "atom": log p at the
    ends (chords), the line through the V bound's ends 2ℓ(m) − ℓ(c) and 2ℓ(m) − ℓ(a) (in place of
    the tangent at m), the masses, and each value's error (module docstring). ``"reuse"``: each
    cell's density bounds at its ends and midpoint, (lower, upper) each (..., cells, 3, priors);
    given as ``parent`` for cells cut into parts by ``losses_enclosure.refined`` (``ends`` (picked,
    _SPLIT + 1), whose :data:`losses_enclosure.KNOWN_ENDS` are the parent's ends and midpoint), only
    the parts' other ends and their midpoints are evaluated."""
    ya, yc = ends[..., :-1], ends[..., 1:]
    h = yc - ya
    mids = 0.5 * (ya + yc)
    n = ends.shape[-1]
    known = [] if parent is None else list(enclosure.KNOWN_ENDS)
    new = [k for k in range(n) if k not in known]
    lo, hi = log_density_bounds(kernel, jnp.concatenate([ends[..., new], mids], axis=-1)[..., None] - mu, sigma, b)  # (..., points, priors)

    def on_ends(fresh, old):  # the bounds at every end: evaluated, or the parent's at its known ends
        if parent is None:
            return fresh[..., :n, :]
        return jnp.zeros((*fresh.shape[:-2], n, fresh.shape[-1])).at[..., new, :].set(fresh[..., : len(new), :]).at[..., known, :].set(old)

    lo_e, hi_e = (on_ends(fresh, None if parent is None else parent[k]) for k, fresh in enumerate((lo, hi)))
    lo_m, hi_m = lo[..., len(new):, :], hi[..., len(new):, :]
    reuse = tuple(jnp.stack([e[..., :-1, :], m, e[..., 1:, :]], axis=-2) for e, m in ((lo_e, lo_m), (hi_e, hi_m)))
    lo, hi = jnp.concatenate([lo_e, lo_m], axis=-2), jnp.concatenate([hi_e, hi_m], axis=-2)  # (..., ends + cells, priors)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    la, lc, lm = centre[..., : n - 1, :], centre[..., 1:n, :], centre[..., n:, :]
    ea, ec, em = half[..., : n - 1, :], half[..., 1:n, :], half[..., n:, :]
    err = 2.0 * em + jnp.maximum(ea, ec)
    line_mid = 2.0 * lm - 0.5 * (la + lc)
    line_slope = (lc - la) / jnp.where(h > 0, h, 1.0)[..., None]
    m_up, m_dn = enclosure.quad_masses(h, la, lc, line_mid, line_slope, err)
    return dict(h=h, la=la, lc=lc, lm=line_mid, slope=line_slope, m_up=m_up, m_dn=m_dn, err=err, reuse=reuse)


def hockey(kernel, mu, sigma, lw_p, lw_q, b, eps, symmetric):
    """(upper bound, lower bound) of ∫ [p − e^ε q]_+ dy for one pair of priors that are mixtures of
    the n components N(μ_k, σ_k²) ⊛ g_b: ``mu``, ``sigma`` (n,), ``lw_p``, ``lw_q`` (n,) each prior's
    log weights (−∞: a component it does not hold), b > 0, ε scalars; the max over both orders
    where ``symmetric`` (module docstring: each component one "atom" of the enclosure)."""
    ends = _grid(kernel, mu, sigma, b)
    tables = functools.partial(_tables, kernel, mu, sigma, b)
    tab = tables(ends)
    orders = jnp.stack([jnp.stack([lw_p, lw_q]), jnp.stack([lw_q, lw_p])])
    coarse = jax.vmap(lambda lw: enclosure.cell_bounds(tab, lw[0], lw[1], eps))(orders)
    up, dn = enclosure.refined_deciding(tables, eps, ends, coarse, orders, symmetric, tab["reuse"])
    # P's mass beyond the grid: ≤ P(|X − μ_k| > σ_k√(2R)) + P(|N| > b t(R)) on the two sides
    reach = kernel.decay_offsets(jnp.asarray(_REACH, jnp.float64))
    beyond = 2.0 * jnp.exp(log_ndtr(-math.sqrt(2.0 * _REACH))) + 2.0 * jnp.exp(kernel.log_sf(reach * b, b))
    up = jnp.minimum(up + beyond * (1.0 + 1e-6), 1.0)
    return jnp.where(symmetric, jnp.max(up), up[0]), jnp.where(symmetric, jnp.max(dn), dn[0])


def _per_pair(evaluate, kernel, lanes, padded):
    """``evaluate(kernel, *lane)`` (a scalar) for each pair of the flat ``lanes`` (leading axis the pairs),
    one pair at a time (``lax.map``: ~10⁶ kernel values each, so a vmapped batch gains little and
    holds them all in memory). ``padded`` (the calibration's search, which pads every batch to a
    multiple of 64 lanes with copies of its first pair and discards them): a pair identical to the
    first is not evaluated again but given its value — and its derivatives, so they are the first
    pair's (right for discarded padding, not for a caller's own repeated pairs). Each pair's
    evaluation is rematerialised under differentiation (``jax.checkpoint``): the implicit
    gradient's linearisation would otherwise keep every pair's intermediates at once (out of
    memory at 24 GiB for one padded batch of Gaussian pairs). The kernel (its p may be traced) and
    the lane are the checkpoint's operands rather than closed over."""
    n = lanes[0].shape[0]
    same = [jnp.all((v == v[:1]).reshape(n, -1), axis=1) for v in lanes]
    copy = functools.reduce(jnp.logical_and, same) & (jnp.arange(n) > 0) & padded

    def one(args):
        *lane, skip = args
        return jax.lax.cond(skip, lambda *_: jnp.zeros((), jnp.float64), jax.checkpoint(evaluate), kernel, *lane)

    noisy = jax.lax.map(one, (*lanes, copy))
    return jnp.where(copy, noisy[0], noisy)


def gaussian_delta(kernel, d_mu, s1, s2, b, eps, symmetric, prior_delta, padded=False):
    """The exact δ (its certified upper bound) per pair of Gaussian priors N(Δμ, σ_1²), N(0, σ_2²)
    under the noise ``kernel`` at scale b, arrays of one batch shape; at b = 0 ``prior_delta`` (the
    priors' own hockey-stick, as the other kernels' evaluators). ``padded``: :func:`_per_pair`."""
    d_mu, s1, s2, b, eps = jnp.broadcast_arrays(d_mu, s1, s2, b, eps)
    shape = d_mu.shape
    ok = b > 0
    one_atom = jnp.asarray([0.0, -jnp.inf])

    def evaluate(kernel, m, sa, sb, bb, e, y):
        return hockey(kernel, jnp.stack([m, jnp.zeros_like(m)]), jnp.stack([sa, sb]), one_atom, one_atom[::-1], bb, e, y)[0]

    lanes = [v.reshape(-1) for v in (d_mu, s1, s2, jnp.where(ok, b, 1.0), eps, jnp.broadcast_to(symmetric, shape))]
    noisy = _per_pair(evaluate, kernel, lanes, padded).reshape(shape)
    return jnp.where(ok, noisy, prior_delta(d_mu, s1, s2, eps, symmetric))


def mixture_delta(kernel, first, second, b, eps, symmetric, padded=False):
    """The exact δ (its certified upper bound) per pair of GaussianMixture priors under the noise
    ``kernel`` at scale b > 0: ``first``, ``second`` = (weights, means, stds), each (n, k); b, ε
    (n,). Every component is one atom of :func:`hockey` (log-concave: a Gaussian ⊛ a log-concave
    kernel), the mixture its weighted sum. ``padded``: :func:`_per_pair`."""
    n = first[0].shape[0]
    b, eps, sym = (jnp.broadcast_to(v, (n,)) for v in (b, eps, symmetric))
    absent = jnp.full(first[0].shape[1:], -jnp.inf)

    def evaluate(kernel, alpha, mu_i, s_i, beta, mu_j, s_j, bb, e, y):
        lw_p = jnp.concatenate([log_or_minus_inf(alpha), absent])
        lw_q = jnp.concatenate([absent, log_or_minus_inf(beta)])
        return hockey(kernel, jnp.concatenate([mu_i, mu_j]), jnp.concatenate([s_i, s_j]), lw_p, lw_q, bb, e, y)[0]

    return _per_pair(evaluate, kernel, (*first, *second, b, eps, sym), padded)
