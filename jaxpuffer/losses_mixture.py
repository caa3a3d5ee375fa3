"""Privacy loss δ(b) for Gaussian-mixture priors (MATH.md §3, §6–7).

A pair of mixtures p_i = Σ_m α_m N(μ_m, σ_m²), p_j = Σ_l β_l N(ν_l, τ_l²) released with noise N
has the densities p_i ⊛ k_b and p_j ⊛ k_b, each a mixture of Gaussian ⊛ noise components
(:mod:`jaxpuffer.noise`). Arrays carry the components on their last axis.

**Coupling bound, level (24).** For any coupling w of the weights (the GMM plan (12)),
δ ≤ Σ_ml w_ml U1(Δμ_ml, Δσ_ml; b), U1 the Monge bound (35) between components m and l
(:mod:`jaxpuffer.losses_coupling`): closed form for Laplace noise, quadrature for Gaussian noise.

**Exact δ = ∫ [p_i − e^ε p_j]_+ dy.** Write f(y) = log p_i(y) − log p_j(y) − ε. δ is the sum, over
the pieces between consecutive points of any set containing every zero of f, of
[P_i − e^ε P_j](piece)_+ (f has one sign on each piece), with the component CDFs in closed form.
The zeros are located as for a Gaussian pair (:mod:`jaxpuffer.losses`): on a grid adapted to every
component (μ + s·t, |t| ≤ 13, s = σ for Laplace noise and √(σ² + θ²) for Gaussian noise; for
Laplace noise also μ + b·t, |t| ≤ 48, and the outer points min(μ − 13σ) − 75b, max(μ + 13σ) + 75b)
f and f' are evaluated (log-sum-exp over components, Laplace terms in tail-normalized form so that
the ±y/b parts cancel analytically), then

  * each sign change of f on the grid is refined by safeguarded Newton steps;
  * each cell whose ends have one sign but whose slope turns against it (a peak between two ends
    ≤ 0, a dip between two ends > 0), and whose Lipschitz bound lets f reach the other side
    (|f'| ≤ 2/b for Laplace noise; for Gaussian noise |f'| ≤ max over components and ends of
    |y − μ|/s² for each mixture, its slope being a convex combination of the components'), has
    its extremum located by an Illinois search on f' and, where it crosses, the two zeros beside
    it by Newton steps.

Both orders (f = r − ε and −r − ε, r = log p_i − log p_j) share one pool of ``_ROOTS`` crossings
and ``_EXTREMA`` extrema. Newton starts from :func:`jaxpuffer._roots.quadratic_start` (crossings:
a grid point may sit on a near-tangent peak; for flanks, from the extremum with slope 0),
and returns the final *bracket* [lo, hi] of each zero, both ends with their f (issue 17: flank
roots of narrow slivers left 8 steps short under-measured δ by up to 2x).

**Why the sum is an upper bound (proof sketch).** δ = Σ over the pieces between consecutive
points (grid, bracket ends, extrema; each carries f of both orders as evaluated) of
∫_piece [p_i − e^ε p_j]_+. A piece with f ≥ 0 at both ends and no zero inside holds exactly
P_i − e^ε P_j (a CDF difference, raised by its rounding bound); one with f ≤ 0 at both ends holds
0 (a computed value above its rounding bound is kept all the same). A piece whose ends have
strictly opposite signs (a zero's bracket) holds at most P_i·(1 − e^{−F}), F the tent bound
(f(a) + f(c))/2 + L(c − a)/2 ≥ sup f there (L the Lipschitz bound above), however wide Newton
left the bracket (:func:`jaxpuffer._roots.newton_bracket` closes it on both sides). Every inner
piece holds at most its width times Σ α/(√(2π) s) (and 1/(2b) per Laplace component), which caps
the rounding bound of narrow pieces near a component's median (large noise makes many). The
proven part ends at the one-sign claim for cells with same-sign ends: it holds where the tent
bound excludes a zero, and where one extremum is found and refined (above); a cell with two
hidden extrema and end slopes of one sign is the remaining gap, which the adversarial harness
(``python -m tests.adversarial``) probes.

No noise (b = 0): the same evaluation with Gaussian noise of std 0 (s = σ) over the continuous
components, plus Σ over atom locations x of [P(x) − e^ε Q(x)]_+ for point-mass components.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax
from jax.scipy.special import ndtr

from ._roots import GRID_CORE, GRID_TAIL, crossing_start, first_true, illinois, newton_bracket, quadratic_start
from .losses_coupling import coupling_laplace_closed, coupling_quadrature
from .noise import gauss_laplace, interval_mass, tail_normalized

_ROOTS = 24  # grid crossings refined, both orders together
_EXTREMA = 12  # hidden peaks or dips searched, both orders together
_ROOT_STEPS = 12  # safeguarded Newton steps per zero (8 left near-tangent flanks short: δ(b) jittered)
_EXTREMUM_STEPS = 16  # Illinois steps on f' per extremum
_NOISE_ULPS = 32
_ROUNDING_ULPS = 64
_EPS64 = float(jnp.finfo(jnp.float64).eps)
_CORE_SIGMAS = 13.0
_TAIL_SCALES = 75.0  # outer points: the Laplace mass beyond is e^{−75}/2 ≈ 1.3e-33, below DELTA_FLOOR


# ----------------------------------------------------------------------------- coupling level


def mixture_differences(pairs):
    """Δμ_ml = μ_im − μ_jl and Δσ_ml = σ_im − σ_jl of mixture pairs, shape batch + (k, k)."""
    first, second = pairs.first, pairs.second
    return first.means[..., :, None] - second.means[..., None, :], first.stds[..., :, None] - second.stds[..., None, :]


def mixture_coupling(w, d_mu, d_sigma, b, eps, noise: str = "laplace"):
    """The coupling bound of the GMM plan (12), level (24): Σ_ml w_ml U1(Δμ_ml, Δσ_ml; b), U1 the
    Monge bound (35) between components m and l. ``w``, ``d_mu``, ``d_sigma`` carry the component
    axes (k, k) last; ``b``, ``eps`` the batch. Laplace noise: closed form; other kernels (Gaussian:
    b the std θ): composite Gauss–Legendre quadrature of the kernel's shift δ."""
    b_, eps_ = b[..., None, None], eps[..., None, None]
    if noise == "laplace":
        per_component = coupling_laplace_closed(d_mu, d_sigma, b_, eps_)
    else:
        d_mu, d_sigma, b_, eps_ = jnp.broadcast_arrays(d_mu, d_sigma, b_, eps_)
        per_component = coupling_quadrature(d_mu, d_sigma, b_, eps_, noise)
    return jnp.minimum(jnp.sum(w * per_component, axis=(-2, -1)), 1.0)


# ----------------------------------------------------------------------------- exact level


def _spreads(stds, b, noise):
    """Per component, the std of its Gaussian part in the release: σ (Laplace), √(σ² + θ²)."""
    return stds if noise == "laplace" else jnp.sqrt(stds**2 + b**2)


def _log_densities(y, weights, means, spreads, b, noise, center):
    """log p(y) + c(y) and d log p/dy of both releases at points y (N,) — components (2, k), one
    row per mixture — as (N, 2) arrays; c(y) is the same for both: |y − center|/b for Laplace
    noise (tail normalization: the ±y/b parts cancel in the ratio), 0 for Gaussian noise."""
    z = y[:, None, None] - means[None]
    if noise == "laplace":
        right = y[:, None, None] >= center
        log_p, slope = tail_normalized(z, spreads[None], b, right)
        log_p = log_p + jnp.where(right, 1.0, -1.0) * (means[None] - center) / b
    else:
        log_p = -0.5 * (z / spreads[None]) ** 2 - jnp.log(spreads[None]) - 0.5 * jnp.log(2 * jnp.pi)
        slope = -z / spreads[None] ** 2
    logits = jnp.log(weights)[None] + log_p
    return logsumexp(logits, axis=2), jnp.sum(softmax(logits, axis=2) * slope, axis=2)


def _component_tails(y, means, spreads, b, noise):
    """F_m(y) = P(Y_m ≤ y) and S_m(y) = P(Y_m > y) per point and component, (N,) + means.shape."""
    z = y.reshape(y.shape + (1,) * means.ndim) - means
    if noise == "laplace":
        _, cdf, sf = gauss_laplace(z, spreads, b)
        return cdf, sf
    return ndtr(z / spreads), ndtr(-z / spreads)


def _grid(weights, means, spreads, b, noise):
    """Points adapted to every component of positive weight (zero-weight ones repeat a live one)."""
    live = weights > 0
    first_live = jnp.argmax(live.reshape(-1))
    means = jnp.where(live, means, means.reshape(-1)[first_live]).reshape(-1)
    spreads = jnp.where(live, spreads, spreads.reshape(-1)[first_live]).reshape(-1)
    parts = [(means[:, None] + spreads[:, None] * GRID_CORE).reshape(-1)]
    if noise == "laplace":
        parts.append((means[:, None] + b * GRID_TAIL).reshape(-1))
        lo = jnp.min(means - _CORE_SIGMAS * spreads) - _TAIL_SCALES * b
        hi = jnp.max(means + _CORE_SIGMAS * spreads) + _TAIL_SCALES * b
        parts.append(jnp.stack([lo, hi]))
    return jnp.sort(jnp.concatenate(parts))


def _slope_bound(y, weights, means, spreads, b, noise):
    """A bound on |d/dy (log p_i − log p_j)| over each cell [y_t, y_{t+1}]: the sum over both
    releases of a bound on |d log p/dy|, a convex combination of the components' slopes (1/b in
    magnitude for Laplace noise, |y − μ|/s² — largest at a cell end — for Gaussian noise)."""
    if noise == "laplace":
        return jnp.full(y.shape[0] - 1, 2.0 / b)
    per = jnp.abs(y[:, None, None] - means[None]) / spreads[None] ** 2
    per = jnp.sum(jnp.max(jnp.where(weights[None] > 0, per, 0.0), axis=2), axis=1)
    return jnp.maximum(per[:-1], per[1:])


def _exact_pair(first, second, b, eps, noise):
    """(δ for order i→j, δ for order j→i, resolved) for one mixture pair; see the module docstring.

    ``first``, ``second`` = (weights, means, stds), each (k,); b > 0 (or θ ≥ 0 for Gaussian noise
    with every positive-weight σ > 0)."""
    sg = jax.lax.stop_gradient
    weights, means, stds = (sg(jnp.stack(row)) for row in zip(first, second))  # (2, k) each
    b_, eps_ = sg(b), sg(eps)
    spreads = _spreads(stds, b_, noise)
    center = 0.5 * jnp.sum(weights * means)
    y = _grid(weights, means, spreads, b_, noise)

    def ratio(x):  # f + ε = log p_i − log p_j, its slope and the size of its terms
        log_p, slope = _log_densities(x, weights, means, spreads, b_, noise, center)
        return log_p[:, 0] - log_p[:, 1], slope[:, 0] - slope[:, 1], jnp.sum(jnp.abs(log_p), axis=1)

    r, dr, size = ratio(y)
    signs = jnp.array([1.0, -1.0])  # order i→j: f = r − ε; order j→i: f = −r − ε
    f = signs[:, None] * r[None, :] - eps_
    df = signs[:, None] * dr[None, :]
    floor = _NOISE_ULPS * _EPS64 * (size + jnp.abs(eps_))
    pos = f > floor[None, :]
    slack = jnp.where(jnp.any(jnp.abs(f) <= floor[None, :], axis=1), jnp.max(floor), 0.0)

    # crossings on the grid; hidden peaks (ends ≤ 0) and dips (ends > 0) the slope bound allows
    lip = _slope_bound(y, weights, means, spreads, b_, noise)
    half_rise = 0.5 * lip * (y[1:] - y[:-1])
    mean_f = 0.5 * (f[:, :-1] + f[:, 1:])
    turn = 1e-12 * lip  # slopes within this of 0 are rounding noise in the flat tails
    up, down = df[:, :-1] > turn, df[:, 1:] < -turn
    falling, rising = df[:, :-1] < -turn, df[:, 1:] > turn
    peaks = ~pos[:, :-1] & ~pos[:, 1:] & up & down & (mean_f + half_rise > floor[None, :-1])
    dips = pos[:, :-1] & pos[:, 1:] & falling & rising & (mean_f - half_rise <= floor[None, :-1])
    # one pool of brackets for both orders (rows: order, columns: cell)
    cells = y.shape[0] - 1
    crossings = (pos[:, :-1] != pos[:, 1:]).reshape(-1)
    extrema = (peaks | dips).reshape(-1)
    cross_at, cross_ok = first_true(crossings, _ROOTS)
    ext_at, ext_ok = first_true(extrema, _EXTREMA)
    resolved = (jnp.sum(crossings) <= _ROOTS) & (jnp.sum(extrema) <= _EXTREMA)
    f_flat, df_flat, floor_cells = f.reshape(-1), df.reshape(-1), jnp.tile(floor, 2)

    def bracket(at):  # ends of the cells ``at`` of the flattened (order, cell) grid
        order, cell = at // cells, at % cells
        return order, y[cell], y[cell + 1], f_flat[at + order], f_flat[at + order + 1]

    order_e, ea, ec, fa_e, fc_e = bracket(ext_at)
    sign_e = signs[order_e]
    slope_a, slope_c = df_flat[ext_at + order_e], df_flat[ext_at + order_e + 1]
    at = illinois(lambda x: sign_e * ratio(x)[1], ea, ec, slope_a, slope_c, _EXTREMUM_STEPS)
    f_at = sign_e * ratio(at)[0] - eps_
    floor_e = floor_cells[ext_at + order_e]
    crosses = ext_ok & ((f_at > floor_e) != (fa_e > floor_e))

    # one Newton loop over every bracket: grid crossings, then both flanks of each excursion
    order_c, ca, cc, fa_c, fc_c = bracket(cross_at)
    lo = jnp.concatenate([ca, ea, at])
    hi = jnp.concatenate([cc, at, ec])
    f_lo = jnp.concatenate([fa_c, fa_e, jnp.where(crosses, f_at, 1.0)])
    f_hi = jnp.concatenate([fc_c, jnp.where(crosses, f_at, 1.0), fc_e])
    f_hi = jnp.where(jnp.sign(f_hi) == jnp.sign(f_lo), -f_lo, f_hi)
    sgn = jnp.concatenate([signs[order_c], sign_e, sign_e])
    # first points: a quadratic from the end nearer 0 for grid crossings (a grid point can sit on
    # a near-tangent peak), the vertex parabola for the flanks of an excursion
    dfa_c, dfc_c = df_flat[cross_at + order_c], df_flat[cross_at + order_c + 1]

    start = jnp.concatenate([crossing_start(ca, fa_c, dfa_c, cc, fc_c, dfc_c), quadratic_start(at, f_at, 0.0, ea, fa_e), quadratic_start(at, f_at, 0.0, ec, fc_e)])

    def f_and_slope(x):
        value, slope, _ = ratio(x)
        return sgn * value - eps_, sgn * slope

    b_lo, b_hi, fb_lo, fb_hi = newton_bracket(f_and_slope, lo, hi, f_lo, f_hi, _ROOT_STEPS, start)
    used = jnp.concatenate([cross_ok, crosses, crosses])
    # every point with f of both orders, sorted together: an extra point carries its own order's
    # f as evaluated (recovering it through r = ±(f + ε) rounds a tiny f to 0, which would turn a
    # one-signed piece into a bracket) and the other order's −f − 2ε
    extra = jnp.concatenate([b_lo, b_hi, at])
    f_own = jnp.concatenate([fb_lo, fb_hi, f_at])
    sgn_x = jnp.concatenate([sgn, sgn, sign_e])
    f_other = -f_own - 2.0 * eps_
    keep = jnp.concatenate([used, used, ext_ok]) & jnp.isfinite(extra) & jnp.isfinite(f_own)
    pts, f_0, f_1 = jax.lax.sort((
        jnp.concatenate([y, jnp.where(keep, extra, y[0])]),
        jnp.concatenate([f[0], jnp.where(keep, jnp.where(sgn_x > 0, f_own, f_other), f[0, 0])]),
        jnp.concatenate([f[1], jnp.where(keep, jnp.where(sgn_x > 0, f_other, f_own), f[1, 0])]),
    ), num_keys=1)
    pts, f_sorted = sg(pts), sg(jnp.stack([f_0, f_1]))
    # a Lipschitz bound on f over each piece between consecutive points (its cell's bound holds
    # there: |y − μ| is largest at an end), for the pieces that bracket a zero (below)
    lip_pts = _slope_bound(pts, weights, means, spreads, b_, noise)

    # masses of every piece (−∞, p_0], (p_0, p_1], …, (p_last, ∞) under each release, (pieces, 2),
    # with gradients (the points are fixed)
    weights, means, stds = (jnp.stack(row) for row in zip(first, second))
    cdf, sf = _component_tails(pts, means, _spreads(stds, b, noise), b, noise)
    ones, zeros = jnp.ones((1,) + means.shape), jnp.zeros((1,) + means.shape)
    lo_pts = jnp.concatenate([jnp.array([-jnp.inf]), pts])[:, None, None]
    hi_pts = jnp.concatenate([pts, jnp.array([jnp.inf])])[:, None, None]
    mass, mag = interval_mass(
        jnp.concatenate([zeros, cdf]), jnp.concatenate([ones, sf]), jnp.concatenate([cdf, ones]), jnp.concatenate([sf, zeros]),
        lo_pts, hi_pts, means[None],
    )
    mag = jnp.where(hi_pts > lo_pts, mag, 0.0)  # a repeated point: both ends the same value
    mass, mag = jnp.sum(mass * weights, axis=2), jnp.sum(mag * weights, axis=2)
    p_i, p_j, size_i, size_j = mass[:, 0], mass[:, 1], mag[:, 0], mag[:, 1]
    e_eps = jnp.exp(eps)
    width = pts[1:] - pts[:-1]
    # the densities are at most Σ α_m / (√(2π) s_m) (and 1/(2b) per Laplace component), so a
    # piece holds at most its width times that: this caps the rounding bound of narrow pieces,
    # whose masses are differences of CDF values near ½ (large noise makes many such pieces)
    peak = 1.0 / (jnp.sqrt(2.0 * jnp.pi) * jnp.where(spreads > 0, spreads, 1.0))
    peak = jnp.where(spreads > 0, peak, jnp.inf) if noise == "gaussian" else jnp.minimum(jnp.where(spreads > 0, peak, jnp.inf), 0.5 / b_)
    dens_max = jnp.sum(jnp.where(weights > 0, sg(weights) * peak, 0.0), axis=1) * (1.0 + 1e-12)
    out = []
    for k, (p, q, size_p, size_q) in enumerate(((p_i, p_j, size_i, size_j), (p_j, p_i, size_j, size_i))):
        value = p - e_eps * q
        rounding = _ROUNDING_ULPS * _EPS64 * (size_p + e_eps * size_q)
        f_pts = f_sorted[k]
        f_a = jnp.concatenate([f_pts[:1], f_pts])  # f at each piece's ends (an outer piece: its
        f_c = jnp.concatenate([f_pts, f_pts[-1:]])  # one finite end)
        # a piece with f ≥ 0 at both ends holds P_i − e^ε P_j, raised by its rounding bound; one
        # with f ≤ 0 at both ends holds nothing (a computed value above its rounding bound, which
        # only a zero the search missed explains, is kept all the same)
        piece = jnp.where((f_a >= 0) & (f_c >= 0), jnp.maximum(value, 0.0) + rounding, jnp.maximum(value - rounding, 0.0))
        # a piece whose ends have strictly opposite signs (a zero's bracket, however narrow Newton
        # left it) is not one-signed: its share of δ is ∫ p_i (1 − e^{−f})_+ ≤ P_i (1 − e^{−F}),
        # F the tent bound (f(a) + f(c))/2 + L (c − a)/2 ≥ sup f on it
        split = (((f_a > 0) & (f_c < 0)) | ((f_a < 0) & (f_c > 0)))[1:-1]
        tent = jnp.maximum(0.5 * (f_pts[:-1] + f_pts[1:]) + 0.5 * lip_pts * width, 0.0)
        inner = jnp.where(split, jnp.maximum(p[1:-1], 0.0) * -jnp.expm1(-tent) + rounding[1:-1], piece[1:-1])
        inner = jnp.minimum(inner, width * dens_max[k])
        total = jnp.sum(inner) + piece[0] + piece[-1]
        out.append(jnp.minimum(total + slack[k] + p[0] + p[-1], 1.0))
    return out[0], out[1], resolved


def _at_zero_one(first, second, eps):
    """Both orders' δ with no noise: the mixtures' own hockey-stick. Point-mass components (std 0)
    are split off: δ = ∫ [p_c − e^ε q_c]_+ over the continuous parts (θ = 0, weights as they are)
    + Σ over atom locations x of [P(x) − e^ε Q(x)]_+."""
    (a, m1, s1), (c, m2, s2) = first, second
    atom1, atom2 = (a > 0) & (s1 <= 0), (c > 0) & (s2 <= 0)
    cont1, cont2 = jnp.where(atom1, 0.0, a), jnp.where(atom2, 0.0, c)
    both = jnp.any(cont1 > 0) & jnp.any(cont2 > 0)
    d12, d21, resolved = _exact_pair(
        (jnp.where(both, cont1, a), m1, jnp.where(atom1, 1.0, s1)), (jnp.where(both, cont2, c), m2, jnp.where(atom2, 1.0, s2)),
        jnp.zeros_like(eps), eps, "gaussian",
    )
    # one side without a continuous part: the other side's continuous mass is all in δ
    d12 = jnp.where(both, d12, jnp.where(jnp.any(cont2 > 0), 0.0, jnp.sum(cont1)))
    d21 = jnp.where(both, d21, jnp.where(jnp.any(cont1 > 0), 0.0, jnp.sum(cont2)))

    def atoms(own, own_atom, other, other_atom, w_own, w_other):  # Σ_x [P(x) − e^ε Q(x)]_+
        same = own[:, None] == own[None, :]
        mass_own = (same & own_atom[None, :]) @ w_own
        mass_other = ((own[:, None] == other[None, :]) & other_atom[None, :]) @ w_other
        first_at = own_atom & ~jnp.any(jnp.tril(same & own_atom[None, :], -1), axis=1)  # count each x once
        return jnp.sum(jnp.where(first_at, jnp.maximum(mass_own - jnp.exp(eps) * mass_other, 0.0), 0.0))

    d12 = d12 + atoms(m1, atom1, m2, atom2, a, c)
    d21 = d21 + atoms(m2, atom2, m1, atom1, c, a)
    return jnp.minimum(d12, 1.0), jnp.minimum(d21, 1.0), resolved | ~both


def mixture_delta(level: str, noise: str, params, b, eps, symmetric):
    """δ per pair at level ``"coupling"`` or ``"exact"`` for flat batches of mixture pairs.

    ``params`` = (w, Δμ, Δσ, α, μ_i, σ_i, β, μ_j, σ_j): the plan and component differences on the
    (n, k, k) grid, then both mixtures (n, k). ``b`` > 0 and ``eps`` are (n,). Where the exact
    evaluation exceeds its budgets, the pair's δ is the plan's coupling bound (≥ δ, both orders).
    """
    n = params[0].shape[0]
    b, eps = jnp.broadcast_to(b, (n,)), jnp.broadcast_to(eps, (n,))
    bound = partial(mixture_coupling, *params[:3], b, eps, noise)
    if level == "coupling":
        return bound()
    first, second = params[3:6], params[6:9]
    d12, d21, resolved = jax.vmap(partial(_exact_pair, noise=noise))(first, second, b, eps)
    fallback = jax.lax.cond(jnp.all(resolved), lambda: jnp.zeros_like(d12), bound)
    d12, d21 = jnp.where(resolved, d12, fallback), jnp.where(resolved, d21, fallback)
    return jnp.where(symmetric, jnp.maximum(d12, d21), d12)


def mixture_delta_at_zero(params, eps, symmetric):
    """δ with no noise for flat batches of mixture pairs (unresolved orders: 1, conservative)."""
    first, second = params[3:6], params[6:9]
    d12, d21, resolved = jax.vmap(_at_zero_one)(first, second, jnp.broadcast_to(eps, params[0].shape[:1]))
    d12, d21 = jnp.where(resolved, d12, 1.0), jnp.where(resolved, d21, 1.0)
    return jnp.where(symmetric, jnp.maximum(d12, d21), d12)


def mixture_params(pairs, plan):
    """The flat parameter tuple of :func:`mixture_delta` for a PairSet of mixtures and a plan:
    (w, Δμ, Δσ) as (n, k, k), then (α, μ_i, σ_i, β, μ_j, σ_j) as (n, k), n = pairs.size."""
    k = pairs.first.num_components
    grid = tuple(a.reshape(-1, k, k) for a in (plan.weights, *mixture_differences(pairs)))
    return grid + tuple(a.reshape(-1, k) for m in (pairs.first, pairs.second) for a in (m.weights, m.means, m.stds))
