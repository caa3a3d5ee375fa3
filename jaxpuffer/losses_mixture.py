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

Both orders (f = r − ε and −r − ε, r = log p_i − log p_j) share one pool of crossings, 8k − 4
slots for k components (every crossing there can be: :func:`_pools`), and one of 2k extrema.
Newton starts from :func:`jaxpuffer._roots.quadratic_start` (crossings: a grid point may sit on
a near-tangent peak; for flanks, from the extremum with slope 0), and returns the final
*bracket* [lo, hi] of each zero, both ends with their f (issue 17: flank roots of narrow slivers
left 8 steps short under-measured δ by up to 2x).

**Why the sum is an upper bound (proof sketch).** δ = Σ over the pieces between consecutive
points (grid, bracket ends, extrema; each carries f of both orders as evaluated) of
∫_piece [p_i − e^ε p_j]_+ = ∫_piece p_i (1 − e^{−f})_+. Every piece gets an upper bound on sup f
(:func:`_piece_sup`: the components within 60 nats of the piece's floor, the rest bounded by
η ≤ k e^{−60}; a lower bound κ and an upper bound λ on (log p)'' there; the least of a
convex-minus-convex enclosure, the chord plus a curvature term, and the larger end value where the
slope is proven of one sign), raised by a bound on the rounding of f at its ends, so that it bounds
the exact f (harness seed 149: f ~1e-16 above 0 over a stretch that its computed values put at or
below 0). Where the slope is proven of one sign, f can cross its ends' computed signs only within
a *sliver* next to an end (the rounding over the slope's bound), and a mass below may be the
sliver's (its width × the larger end density, raised by the slope over it). Then

  * a piece with f ≥ 0 at both ends holds P_i − e^ε P_j (a CDF difference, raised by its rounding
    bound) plus, unless sup(−f) ≤ 0 is proven, ∫ [e^ε p_j − p_i]_+ ≤ e^ε P_j (1 − e^{−sup(−f)})
    (P_j of the sliver where f is monotone);
  * a piece with f ≤ 0 at both ends holds 0 where sup f ≤ 0 is proven, else at most
    P_i (1 − e^{−sup f}) (P_i of the sliver where f is monotone);
  * a piece whose ends have strictly opposite signs (a zero's bracket, however wide Newton left
    it: :func:`jaxpuffer._roots.newton_bracket` closes it on both sides) holds at most
    P_i (1 − e^{−F}), F the least of sup f and the tent (f(a) + f(c))/2 + L(c − a)/2;
  * every inner piece holds at most its width times Σ α/(√(2π) s) (and 1/(2b) per Laplace
    component), which caps the rounding bound of narrow pieces near a component's median;
  * an outer piece holds its whole mass (< e^{−75}/2 for Laplace noise), or nothing where
    :func:`_outer_negative` proves f < 0 all the way out (Laplace noise: so that δ = 0 is exact).

The 16 unproven pieces holding the most are split into 16 subpieces each and bounded again by the
same rules (the least of the two bounds is kept): the bounds' gaps shrink with the width squared,
and a slope bound with the width. So no piece's sign pattern is assumed: a missed crossing or
extremum (a pool that overflowed, a cell with two hidden extrema, a bracket left out of the points'
12k + 8 slots: :func:`_extra_points`) costs tightness, not soundness. The pools' overflow, and the
points', is reported (``resolved``). A pair with an unproven piece or an overflowed pool
takes the smaller of this bound and the plan's coupling bound (24), also ≥ δ: the tighter one where
the pools overflowed, and where the priors nearly agree at small ε (halves N(−1, .5²), N(1, 1) vs
the same with −1 + 5e-4, ε = 0.002, scale 1.41: this sum 3.3e-5 with Gaussian noise, 2.4e-5 with
Laplace noise; the coupling bound 2.3e-13 and 0; the truth 0 to the harness's reference).
Diagnostics (unproven pieces per order, pieces subdivided, subpieces still unproven, pieces) are
returned by :func:`_exact_batch`.

**Batches.** Each stage is one function of one pair, vmapped over a batch. Under Laplace noise the
Newton and Illinois loops run on each pair's used slots only, 4 and 2 at a time (:func:`_on_used`;
random 3-component pairs use 0.8 of 20 and 0.07 of 6 on average, near their calibrated scale
fewer). The points stage adds those slots' brackets and extrema to the grid in 12k + 8 slots, the
used ones first (:func:`_extra_points`). The subdivision pass is needed by few pairs (0–4 % of
random 3-component pairs near their calibrated scale, at most 6 pieces each, against the 16 it has
room for): only the pairs with an unproven piece are gathered and computed, n/8 at a time
(:func:`jaxpuffer._parallel.on_lanes`), with the same per-pair arithmetic.

No noise (b = 0): the same evaluation with Gaussian noise of std 0 (s = σ) over the continuous
components, plus Σ over atom locations x of [P(x) − e^ε Q(x)]_+ for point-mass components. A
search asks a cheap lower bound of it first (:func:`mixture_delta_at_zero_floor`: cell masses on
the components' grid), and this evaluation only where that bound does not exceed the target.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax

from . import losses_convolved
from ._parallel import on_lanes as _on_lanes
from ._roots import GRID_CORE, GRID_TAIL, NOISE_ULPS, cell_upper, crossing_start, first_true, illinois, newton_bracket, parabola_upper, quadratic_start, sign_floor
from .losses_coupling import coupling_laplace_closed, coupling_quadrature
from .noise import interval_mass, laplace_terms, log_mills, ndtr_pair, tail_normalized
from .priors import log_mgf

EXACT_KERNELS = ("laplace", "gaussian")  # the component CDFs of Gaussian ⊛ noise in closed form

_ROOT_STEPS = 12  # safeguarded Newton steps per zero (8 left near-tangent flanks short: δ(b) jittered)
_EXTREMUM_STEPS = 16  # Illinois steps on f' per extremum
_EPS64 = float(jnp.finfo(jnp.float64).eps)
_CORE_SIGMAS = 13.0
_REFINE_PIECES = 16  # unproven pieces subdivided per pair (both orders together)
_REFINE_POINTS = 17  # points per subdivided piece
_SUBSET_NATS = 60.0  # components this far below a piece's floor enter its proof as a bound η ≤ k e^{−60}
# lanes per pair in the common batch of the Newton and Illinois loops (:func:`_on_used`): random
# 3-component pairs use 0.8 of 20 crossing slots and 0.07 of 6 extremum slots, on average. Laplace
# noise only: with Gaussian noise XLA's code for the loop's step depends on the lane count (an ulp
# in ~10 % of pairs' δ with 4 or 8 lanes), and its loops are ~1/8 of the evaluation's cost
_POOLS = {"laplace": (4, 2)}
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


def _pools(k: int):
    """(crossing slots, extremum slots) for pairs of k-component mixtures, both orders together.

    p_i − e^ε p_j before noise is a signed sum of 2k Gaussian densities, which has at most
    2(2k − 1) sign changes (Kalai, Moitra & Valiant 2010, Proposition 7; equal variances and point
    masses as limits); the Laplace and Gaussian kernels are Pólya frequency functions, so the
    convolution adds none (variation diminishing; Karlin 1968). A grid crossing is a sign change,
    so 2(4k − 2) slots hold every crossing of both orders. Extrema: 2k slots (random 3-component
    pairs flag at most 6, and only at 1/20 of their calibrated scale). An overflow (rounding
    flicker on a flat f, more candidate extrema) is reported and bounded (module docstring)."""
    return 8 * k - 4, 2 * k


def _extra_points(k: int) -> int:
    """Slots for the points that :func:`_points_stage` adds to the grid (the used brackets' ends and
    the extrema) for k-component pairs: 12k + 8, of the 2(8k − 4 + 2·2k) + 2k = 26k − 8 that every
    slot of both pools would fill. Random pairs (the benchmark's, 2,048 each) need at most 18, 23
    and 28 for k = 2, 3, 5 at their calibrated scales, 28, 29 and 38 at 0.3 times them (counting
    2 per grid crossing and 5 per extremum, an upper count); a pair that needs more is reported
    (:func:`_coarse_pass`). Evaluating the 70 slots of k = 3, ~6 used, made the evaluator
    10–14 % slower (256 such pairs: 128–140 ms against 116–124 ms)."""
    return min(12 * k + 8, 26 * k - 8)


def _spreads(stds, b, noise):
    """Per component, the std of its Gaussian part in the release: σ (Laplace), √(σ² + θ²)."""
    return stds if noise == "laplace" else jnp.sqrt(stds**2 + b**2)


@partial(jax.jit, static_argnames=("noise", "tails", "scale_slope"))
def _components(y, weights, means, spreads, b, noise, center, tails=False, scale_slope=False):
    """Per point y (N,) and component, with components (2, k) one row per mixture:
    ℓ_m(y) + c(y) with ℓ_m = log(α_m p_m) and the true slope ℓ_m'(y), as (N, 2, k) arrays, then c(y)
    and c'(y) as (N,). c is the same for both mixtures and convex: |y − center|/b for Laplace noise
    (tail normalization: the ±y/b parts cancel in the ratio), 0 for Gaussian noise.

    ``tails``: then also, as a second tuple, F_m(y) = P(Y_m ≤ y) and S_m(y) = P(Y_m > y) (each
    (N, 2, k)) and, with ``scale_slope`` (Laplace noise), ∂F_m/∂b, the density's slope p_m' and the
    density p_m in closed form (:func:`jaxpuffer.noise.gauss_laplace`; ∂F_m/∂μ_m = −p_m and
    ∂F_m/∂σ_m = σ_m p_m' follow). Under Laplace noise from the same two erfcx per point and component as ℓ_m
    (:func:`jaxpuffer.noise.laplace_terms`; computed apart, the CDFs took two more)."""
    z = y[:, None, None] - means[None]
    if noise == "laplace":
        right = y[:, None, None] >= center

        def one_mixture(_, row):  # few outputs per step, each two values as one complex array: XLA
            z_, s_ = row  # then writes each out once (as in noise.laplace_log_ratio) instead of
            # re-evaluating its terms in every consumer
            terms = laplace_terms(z_, s_, b, right[:, 0], scale_slope) if tails else tail_normalized(z_, s_, b, right[:, 0])
            terms = (*terms, *[jnp.zeros_like(z_)] * (len(terms) % 2))  # an odd one out paired with a 0
            return None, tuple(jax.lax.complex(*terms[i : i + 2]) for i in range(0, len(terms), 2))

        packed = jax.lax.scan(one_mixture, None, (jnp.moveaxis(z, 1, 0), spreads), unroll=2)[1]  # each (2, N, k)
        log_p, slope, *masses = (jnp.moveaxis(part, 0, 1) for c in packed for part in (c.real, c.imag))
        log_p = log_p + jnp.where(right, 1.0, -1.0) * (means[None] - center) / b
        shift, shift_slope = jnp.abs(y - center) / b, jnp.where(y >= center, 1.0, -1.0) / b
        masses = tuple(masses[: 5 if scale_slope else 2])  # (the pairing's 0 dropped)
    else:
        log_p = -0.5 * (z / spreads[None]) ** 2 - jnp.log(spreads[None]) - 0.5 * jnp.log(2 * jnp.pi)
        slope = -z / spreads[None] ** 2
        shift = shift_slope = jnp.zeros_like(y)
        masses = ndtr_pair(z / spreads[None]) if tails else None  # (−z)/s = −(z/s) exactly
    comps = (jnp.log(weights)[None] + log_p, slope, shift, shift_slope)
    return comps if not tails else (comps, masses)


def _log_densities(y, weights, means, spreads, b, noise, center, comps=None):
    """log p(y) + c(y) and d log p/dy of both releases at points y (N,) as (N, 2) arrays, from
    :func:`_components` at y (``comps`` where already computed there)."""
    logits, slope, _, _ = _components(y, weights, means, spreads, b, noise, center) if comps is None else comps
    return logsumexp(logits, axis=2), jnp.sum(softmax(logits, axis=2) * slope, axis=2)


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


def _curvature_floor(a, c, left, right, means, spreads, b, noise):
    """κ_m ≥ −(log p_m)'' on each piece [a, c] (pieces, 2, k), p_m the m-th component of a release.

    Gaussian noise: 1/s_m². Laplace noise, p_m = N(μ_m, σ_m²) ⊛ L(b): (log p_m)'' = (1 − E[sgn]²)/b²
    − φ_σ(z)/(b² p_m(z)) (z = y − μ_m; the kernel's log has curvature −(2/b)·δ at 0), so
    κ_m = φ_σ(z)/(b² p_m(z)) at the piece's point nearest μ_m, where that ratio decreases in |z|
    (|z| > σ²/b: its log-slope is −z/σ² − (log p_m)' and |(log p_m)'| ≤ 1/b), else 1/σ² (the
    Gaussian factor's own bound); 0 for σ = 0 (a piece never straddles the atom: it is a grid point).
    ``left``, ``right``: log p_m at the piece's ends (pieces, 2, k)."""
    if noise != "laplace":
        return jnp.broadcast_to(1.0 / spreads**2, left.shape)
    sig = jnp.where(spreads > 0, spreads, 1.0)
    z = jnp.where(means < a, a - means, jnp.where(means > c, c - means, 0.0))
    log_p = jnp.where(means < a, left, right)
    log_ratio = -0.5 * (z / sig) ** 2 - jnp.log(sig) - 0.5 * jnp.log(2 * jnp.pi) - log_p - 2.0 * jnp.log(b)
    near = jnp.abs(z) <= sig**2 / b
    kappa = jnp.where(near, 1.0 / sig**2, jnp.exp(jnp.minimum(log_ratio, -2.0 * jnp.log(sig))))
    return jnp.where(spreads > 0, kappa, 0.0)


def _computed_once(x):
    """x itself, computed once rather than once per element of every kernel that reads it through a
    broadcast. XLA's CPU fusion copies a chain of cheap operations (the selects and multiplies at
    the tail of an erfcx) into each such loop, so a per-pair (2, k) value used per piece is
    recomputed for each of ~300 × 2k elements in several kernels. A sort is never fused into its
    consumers: sorting two copies of x along a new axis returns x exactly and leaves it in memory.
    (:func:`_piece_sup` for 2,048 3-component pairs: 0.34 → 0.19 s.)"""
    return jax.lax.sort(jnp.stack([x, x]), dimension=0)[0]


def _piece_sup(pts, weights, means, spreads, b, eps, noise, center, comps=None):
    """Upper bounds on sup f over each piece [p_t, p_{t+1}] of the sorted points, both orders
    (2, pieces): row 0 for f = r − ε, row 1 for f = −r − ε (module docstring, proof sketch).

    Per piece and mixture, the components that matter there, S, are those whose largest ℓ_m =
    log(α_m p_m) on the piece comes within 60 of the floor max_m min_piece ℓ_m (each p_m is unimodal
    about μ_m: its extremes on a piece are at the ends or at μ_m); the rest add η ≤ Σ e^{max ℓ_m −
    floor} ≤ k e^{−60} to log p, so log p_S ≤ log p ≤ log p_S + η. On the piece, with κ ≥ −(log p_S)''
    (the largest κ_m over S, :func:`_curvature_floor`) and λ ≥ (log p_S)'' (log p_S'' is the posterior
    mean of ℓ_m'' plus the posterior variance of ℓ_m', at most τ·range², τ bounding the posterior
    outside the floor's component and range the spread of the decreasing ℓ_m' over S), three
    bounds on sup r_S, r_S = log p_S,i − log p_S,j, are taken (the least):

      * convex minus convex: r_S = U − V with U = log p_S,i + c + κ y²/2 + …, both convex (c the
        common tail normalization), so U ≤ its chord and V ≥ its tangents: max over the piece of
        min(r(a) + t·g1, r(c) + (w − t)·g2), g1 = Δℓ̃_i/w − ℓ̃_j'(a) + wκ/2, g2 = ℓ̃_j'(c) − Δℓ̃_i/w + wκ/2;
      * the chord plus (κ_i + λ_j)·t(w − t)/2 (κ_i + λ_j ≥ −r_S'');
      * max(r(a), r(c)) where r_S' is proven of one sign: r_S' ≥ ℓ̃_i'(a) − ℓ̃_j'(c) − wκ, or the
        slope bounds from r_S'' ∈ [−(κ_i + λ_j), λ_i + κ_j].

    The bound for f = r − ε is that less ε plus η_i, from the ends' values as computed; the other
    order swaps the mixtures. Returned with it, per order and piece (each (2, pieces)): a bound on
    the rounding of f at the ends (NOISE_ULPS ulps of 1 + |ℓ̃_S| per mixture, each component's
    slope times the rounding of y − μ_m, and the slopes' rounding times the width), which the
    exact f's sup may exceed the first by; and the *sliver*, the width within which f may cross
    its ends' computed sign next to an end where r_S' is proven of one sign (that rounding over the
    slope's bound), the whole piece elsewhere.
    ``comps``: :func:`_components` at ``pts`` where the caller already has them."""
    logits, slope, shift, shift_slope = _components(pts, weights, means, spreads, b, noise, center) if comps is None else comps
    true = logits - shift[:, None, None]  # ℓ_m(y)
    a, c = pts[:-1, None, None], pts[1:, None, None]
    if noise == "laplace":  # p_m(μ_m) = e^{v²/2} Φ(−v)/b, v = σ/b: log = M(−v) − log b (noise.convolved.log_mills)
        mode = jnp.log(weights) + log_mills(-spreads / b) - jnp.log(b)
    else:
        mode = jnp.log(weights) - jnp.log(spreads) - 0.5 * jnp.log(2 * jnp.pi)
    mode = _computed_once(mode)
    left, right = true[:-1], true[1:]
    top = jnp.where((means >= a) & (means <= c), mode, jnp.maximum(left, right))
    bottom = jnp.minimum(left, right)
    floor = jnp.max(bottom, axis=2, keepdims=True)
    star = jnp.arange(means.shape[-1]) == jnp.argmax(bottom, axis=2)[..., None]
    in_s = top >= floor - _SUBSET_NATS
    eta = jnp.sum(jnp.where(in_s, 0.0, jnp.exp(top - floor)), axis=2)
    tau = jnp.minimum(jnp.sum(jnp.where(in_s & ~star, jnp.exp(top - floor), 0.0), axis=2), 0.25)
    log_w = jnp.log(weights)
    kappa_m = _curvature_floor(a, c, left - log_w, right - log_w, means, spreads, b, noise)
    kappa = jnp.max(jnp.where(in_s, kappa_m, 0.0), axis=2)
    spread = jnp.max(jnp.where(in_s, slope[:-1], -jnp.inf), axis=2) - jnp.min(jnp.where(in_s, slope[1:], jnp.inf), axis=2)
    lam = tau * jnp.maximum(spread, 0.0) ** 2
    if noise != "laplace":  # the components' own curvature −1/s² (Laplace: ≤ 0, log-concave)
        lam = lam - jnp.min(jnp.where(in_s, 1.0 / spreads**2, jnp.inf), axis=2)

    def subset(logit, slope_, shift_slope_):  # ℓ̃_S and ℓ̃_S' at one end of every piece
        masked = jnp.where(in_s, logit, -jnp.inf)
        return logsumexp(masked, axis=2), jnp.sum(softmax(masked, axis=2) * slope_, axis=2) + shift_slope_[:, None]

    (la, da), (lc, dc) = subset(logits[:-1], slope[:-1], shift_slope[:-1]), subset(logits[1:], slope[1:], shift_slope[1:])
    width = pts[1:] - pts[:-1]
    # the ends' ℓ̃_S as computed are within NOISE_ULPS ulps of 1 + |ℓ̃_S| (the grid's sign floor)
    # plus, per component of S, its slope times the rounding of y − μ_m (harness seed 149: f of
    # ~1e-16 above 0 over 6e-6 of a component 3e-4 wide, read as ≤ 0 proven: δ 0, truth 5e-26)
    moved = 4.0 * _EPS64 * (jnp.abs(pts)[:, None, None] + jnp.abs(means)[None]) * (jnp.abs(slope) + jnp.abs(shift_slope)[:, None, None])
    moved = jnp.maximum(jnp.max(jnp.where(in_s, moved[:-1], 0.0), axis=2), jnp.max(jnp.where(in_s, moved[1:], 0.0), axis=2))
    ends_err = NOISE_ULPS * _EPS64 * (2.0 + jnp.maximum(jnp.abs(la), jnp.abs(lc))) + moved  # (pieces, 2)

    def order(i, j):  # sup of f = ℓ̃_i − ℓ̃_j − ε over each piece
        fa, fc = la[:, i] - la[:, j] - eps, lc[:, i] - lc[:, j] - eps
        k = jnp.maximum(kappa[:, i], kappa[:, j])
        chord_i = (lc[:, i] - la[:, i]) / jnp.where(width > 0, width, 1.0)
        convex = cell_upper(width, fa, fc, chord_i - da[:, j] + 0.5 * width * k, dc[:, j] - chord_i + 0.5 * width * k)
        bend_up, bend_down = lam[:, i] + kappa[:, j], kappa[:, i] + lam[:, j]  # r'' ≤ bend_up, −r'' ≤ bend_down
        chord = parabola_upper(width, fa, fc, bend_down)
        ra, rc = da[:, i] - da[:, j], dc[:, i] - dc[:, j]
        low = jnp.maximum(da[:, i] - dc[:, j] - width * k, -cell_upper(width, -ra, -rc, bend_down, bend_up))
        high = jnp.minimum(dc[:, i] - da[:, j] + width * k, cell_upper(width, ra, rc, bend_up, bend_down))
        margin = NOISE_ULPS * _EPS64 * (jnp.abs(da[:, i]) + jnp.abs(da[:, j]) + jnp.abs(dc[:, i]) + jnp.abs(dc[:, j]) + width * k)
        ends = jnp.maximum(fa, fc)
        bound = jnp.minimum(convex, chord)
        bound = jnp.where((low > margin) | (high < -margin), jnp.minimum(bound, ends), bound)
        value_err = ends_err[:, i] + ends_err[:, j] + _EPS64 * jnp.abs(eps) + width * margin  # f's rounding at the ends
        # where r_S' is proven of one sign, |r_S'| ≥ steep: f crosses its ends' computed sign at
        # most (rounding + η)/steep from an end (the sliver; the whole piece where not proven)
        steep = jnp.maximum(low, -high) - margin
        sliver = jnp.where(steep > 0, jnp.minimum(width, (value_err + eta[:, i] + eta[:, j]) / jnp.where(steep > 0, steep, 1.0)), width)
        return jnp.where(width > 0, bound + eta[:, i], ends), jnp.where(width > 0, value_err, 0.0), sliver

    return tuple(jnp.stack(v) for v in zip(order(0, 1), order(1, 0)))


class _Pair(NamedTuple):
    """One mixture pair as the exact evaluator uses it: components (2, k), one row per mixture,
    held constant (``weights``, ``means``, ``spreads``, ``b``, ``eps``, ``center``) and with their
    gradients (``masses``: weights, means and spreads that the CDF masses are computed from)."""

    weights: jax.Array
    means: jax.Array
    spreads: jax.Array
    b: jax.Array
    eps: jax.Array
    center: jax.Array
    dens_max: jax.Array  # per mixture, Σ α_m × the peak of component m (pieces, below)
    masses: tuple
    b_grad: jax.Array
    eps_grad: jax.Array


def _pair(first, second, b, eps, noise) -> _Pair:
    """The :class:`_Pair` of ``first``, ``second`` = (weights, means, stds), each (k,)."""
    sg = jax.lax.stop_gradient
    weights, means, stds = (sg(jnp.stack(row)) for row in zip(first, second))  # (2, k) each
    b_, eps_ = sg(b), sg(eps)
    spreads = _spreads(stds, b_, noise)
    # the densities are at most Σ α_m / (√(2π) s_m) (and 1/(2b) per Laplace component), so a
    # piece holds at most its width times that: this caps the rounding bound of narrow pieces,
    # whose masses are differences of CDF values near ½ (large noise makes many such pieces)
    peak = 1.0 / (jnp.sqrt(2.0 * jnp.pi) * jnp.where(spreads > 0, spreads, 1.0))
    peak = jnp.where(spreads > 0, peak, jnp.inf) if noise == "gaussian" else jnp.minimum(jnp.where(spreads > 0, peak, jnp.inf), 0.5 / b_)
    dens_max = jnp.sum(jnp.where(weights > 0, weights * peak, 0.0), axis=1) * (1.0 + 1e-12)
    masses = [jnp.stack(row) for row in zip(first, second)]  # the masses carry gradients
    masses[2] = _spreads(masses[2], b, noise)
    return _Pair(weights, means, spreads, b_, eps_, 0.5 * jnp.sum(weights * means), dens_max, tuple(masses), b, eps)


def _at(pair: _Pair, x, noise, scale_slope=False):
    """(:func:`_components` of both releases at points x (N,), held constant; their components'
    tails F_m, S_m (``scale_slope``: and their slopes), from the gradient-carrying ``masses`` and
    b, the same values), from one evaluation of each component's terms."""
    _, means, spreads = pair.masses
    comps, masses = _components(x, pair.weights, means, spreads, pair.b_grad, noise, pair.center, True, scale_slope)
    return jax.lax.stop_gradient(comps), masses


def _ratio(pair: _Pair, x, noise, comps=None):
    """f + ε = log p_i − log p_j at points x (N,), its slope and the size of its terms (from
    ``comps``, the first of :func:`_at` x, where already computed)."""
    log_p, slope = _log_densities(x, pair.weights, pair.means, pair.spreads, pair.b, noise, pair.center, comps)
    return log_p[:, 0] - log_p[:, 1], slope[:, 0] - slope[:, 1], jnp.sum(jnp.abs(log_p), axis=1)


def _pieces(pair: _Pair, pts, f_pts, noise, at_pts, scale_slope=False):
    """Per order (rows), a bound on ∫ [p_i − e^ε p_j]_+ over each piece (−∞, p_0], (p_0, p_1], …,
    (p_last, ∞) of ascending points with f of both orders ``f_pts`` (2, N) as evaluated (an outer
    piece: its whole mass added as well), and which inner pieces are unproven (2, N − 1).
    ``at_pts``: :func:`_at` the points (``scale_slope`` as here). ``scale_slope``: also which pieces count in δ's gradient,
    per order (2, N + 1): those with f ≥ 0 at both ends and a positive value, whose P_i − e^ε P_j
    is differentiated with their ends held fixed (the envelope theorem: f = 0 at the ends of δ's
    positive set), and the ingredients of that derivative per piece (:func:`_gradient`)."""
    weights, means, spreads, b_, eps_, center, dens_max, (w_g, m_g, s_g), b, eps = pair
    comps, (cdf, sf, *d_cdf) = at_pts
    e_eps = jnp.exp(eps)
    width = pts[1:] - pts[:-1]
    lip = _slope_bound(pts, weights, means, spreads, b_, noise)  # |f'| on each inner piece
    sup_computed, f_err, sliver = _piece_sup(pts, weights, means, spreads, b_, eps_, noise, center, comps)
    sup_computed = jnp.where(jnp.isnan(sup_computed), jnp.inf, sup_computed)  # a NaN bound proves nothing
    sup_f = jnp.where(jnp.isnan(f_err), jnp.inf, sup_computed + f_err)
    # each mixture's mass over a sliver at either end of a piece: its width × the larger end
    # density (as computed, raised by its rounding), raised by the slope bound over the sliver
    log_dens = _log_densities(pts, weights, means, spreads, b_, noise, center, comps)[0] - comps[2][:, None]
    near = jnp.maximum(log_dens[:-1], log_dens[1:])  # (pieces, 2)
    sliver_mass = sliver[:, :, None] * jnp.exp(near[None] + (lip * sliver + f_err)[:, :, None])  # (order, pieces, mixture)
    sliver_mass = jnp.where(jnp.isnan(sliver_mass), jnp.inf, sliver_mass)
    ones, zeros = jnp.ones((1,) + m_g.shape), jnp.zeros((1,) + m_g.shape)
    lo_pts = jnp.concatenate([jnp.array([-jnp.inf]), pts])[:, None, None]
    hi_pts = jnp.concatenate([pts, jnp.array([jnp.inf])])[:, None, None]
    mass, mag = interval_mass(
        jnp.concatenate([zeros, cdf]), jnp.concatenate([ones, sf]), jnp.concatenate([cdf, ones]), jnp.concatenate([sf, zeros]),
        lo_pts, hi_pts, m_g[None],
    )
    mag = jnp.where(hi_pts > lo_pts, mag, 0.0)  # a repeated point: both ends the same value
    if scale_slope:  # per piece, mixture and component: its mass's slopes, from F's at the piece's ends (0 at ±∞)
        across = lambda v: jnp.concatenate([v, zeros]) - jnp.concatenate([zeros, v])  # noqa: E731
        d_b, d_dens, dens = (across(v) for v in d_cdf)
        # in (b, then per component its weight, mean and std); ∂F/∂μ = −p, ∂F/∂σ = σ p' (heat equation)
        ingredients = (jnp.sum(d_b * w_g, axis=2), jnp.stack([mass, -w_g * dens, w_g * s_g * d_dens], axis=2))
    mass, mag = jnp.sum(mass * w_g, axis=2), jnp.sum(mag * w_g, axis=2)
    bounds, unproven, counted = [], [], []
    for k in range(2):
        p, q, size_p, size_q = mass[:, k], mass[:, 1 - k], mag[:, k], mag[:, 1 - k]
        value = p - e_eps * q
        rounding = _EPS64 * (size_p + e_eps * size_q)  # (interval_mass: the masses' errors, in ulps)
        f_a = jnp.concatenate([f_pts[k, :1], f_pts[k]])  # f at each piece's ends (an outer
        f_c = jnp.concatenate([f_pts[k], f_pts[k, -1:]])  # piece: its one finite end)
        # a piece with f ≥ 0 at both ends holds P_i − e^ε P_j, raised by its rounding bound and,
        # where f may dip below 0 inside (sup(−f) = sup of the other order's f + 2ε > 0), by
        # ∫ [e^ε p_j − p_i]_+ ≤ e^ε P_j (1 − e^{−sup(−f)}); one with f ≤ 0 at both ends holds
        # nothing where sup f ≤ 0 is proven (a computed value above its rounding bound is kept
        # all the same), else ∫ p_i (1 − e^{−f})_+ ≤ P_i (1 − e^{−sup f}); a piece whose ends have
        # strictly opposite signs (a zero's bracket, however narrow Newton left it) holds at
        # most P_i (1 − e^{−F}), F the least of sup f and the tent (f(a) + f(c))/2 + L (c − a)/2.
        # Each sup is of the exact f (its computed bound plus the ends' rounding), and where f is
        # proven monotone, P_j or P_i may be that of the sliver next to an end only
        own, dip = sup_f[k], sup_f[1 - k] + 2.0 * eps_
        p_sliver, q_sliver = sliver_mass[k, :, k], sliver_mass[k, :, 1 - k]
        p_in, q_in, rounding_in = jnp.maximum(p[1:-1], 0.0), jnp.maximum(q[1:-1], 0.0), rounding[1:-1]
        positive = (f_a >= 0) & (f_c >= 0)
        piece = jnp.where(positive, jnp.maximum(value, 0.0) + rounding, jnp.maximum(value - rounding, 0.0))
        split = (((f_a > 0) & (f_c < 0)) | ((f_a < 0) & (f_c > 0)))[1:-1]
        tent = 0.5 * (f_pts[k, :-1] + f_pts[k, 1:]) + 0.5 * lip * width + f_err[k]
        at_most = lambda mass_, sup: mass_ * -jnp.expm1(-jnp.maximum(sup, 0.0))  # noqa: E731
        inner = jnp.where(
            split,
            at_most(p_in, jnp.minimum(tent, own)) + rounding_in,
            jnp.where(
                positive[1:-1],
                piece[1:-1] + jnp.where(dip > 0, e_eps * at_most(jnp.minimum(q_in, q_sliver), dip), 0.0),
                jnp.where(own > 0, jnp.minimum(at_most(p_in, own) + rounding_in, at_most(p_sliver, own)), piece[1:-1]),
            ),
        )
        inner = jnp.minimum(inner, width * dens_max[k])
        bounds.append(jnp.concatenate([piece[:1] + p[:1] + rounding[:1], inner, piece[-1:] + p[-1:] + rounding[-1:]]))
        # unproven (worth subdividing): a bound above 0 before its rounding margin, which no
        # subdivision removes (it leaves the piece, or its sliver, bounded by the margin)
        unproven.append(~split & (jnp.where(positive[1:-1], sup_computed[1 - k] + 2.0 * eps_, sup_computed[k]) > 0) & (width > 0))
        counted.append(positive & (value > 0))
    if not scale_slope:
        return jnp.stack(bounds), jnp.stack(unproven)
    return jnp.stack(bounds), jnp.stack(unproven), jnp.stack(counted), (*ingredients, mass, e_eps)


def _gradient(counted, ingredients):
    """δ's gradient per order (2, 2 + 6k) from :func:`_pieces`' pieces ``counted`` (2, N + 1) and
    their ``ingredients``: Σ over those pieces of ∂[P_i − e^ε P_j], in b, then the weight, mean and
    std of each component of the first mixture and of the second (the layout of
    :func:`mixture_params`' per-component entries), then ε (−e^ε P_j)."""
    d_b, per_component, mass, e_eps = ingredients
    rows = []
    for k in range(2):
        on = counted[k].astype(mass.dtype)
        sign = jnp.where(jnp.arange(2) == k, 1.0, -e_eps)  # P_i counts +1, P_j −e^ε
        components = jnp.einsum("p,prqm->rqm", on, per_component) * sign[:, None, None]
        rows.append(jnp.concatenate([(on @ d_b @ sign)[None], components.reshape(-1), (-e_eps * (on @ mass[:, 1 - k]))[None]]))
    return jnp.stack(rows)


def _outer_negative(pair: _Pair, y_lo, y_hi):
    """Laplace noise: whether f < 0 is proven on the outer pieces (−∞, y_lo] and [y_hi, ∞), per
    order (rows) and side (columns), so that they hold no part of δ (pure ε needs exact zeros).

    A component g = N(μ, σ²) ⊛ Lap(b) has 2b e^{y/b} g(y) = e^{μ/b + σ²/2b²} A(y − μ) with
    A(z) = Φ(z/σ − σ/b) + e^{2z/b} Φ(−z/σ − σ/b), and A'(z) = (2/b) e^{2z/b} Φ(−z/σ − σ/b) > 0
    (the φ terms cancel), A → 1: so 2b e^{y/b} p(y) ≤ M(1/b) everywhere (M the prior's MGF) and
    e^{y/b} p(y) increases with y. For y ≥ y_hi, then,
        log p_i(y) − log p_j(y) ≤ log M_i(1/b) − log 2b − log p_j(y_hi) − y_hi/b,
    and mirrored (M(−1/b), e^{−y/b} p(y) increasing leftwards) for y ≤ y_lo. Each side is formed
    about the pair's centre c, with log p_j(y) ± (y − c)/b the evaluator's tail-normalised value,
    and must stay below ε by a rounding margin. Returns (proven, the bound on sup r), (order, side)."""
    weights, means, spreads, b, eps, center = pair[:6]
    ends = jnp.stack([y_lo, y_hi])
    normalized = _log_densities(ends, weights, means, spreads, b, "laplace", center)[0]  # log p + |y − c|/b
    offset = (ends - center) / b
    toward = jnp.array([-1.0, 1.0])  # log p − (y − c)/b on the left, log p + (y − c)/b on the right (0 added beyond c)
    log_p = normalized + (toward * offset - jnp.abs(offset))[:, None]  # (side, mixture)
    log_m = log_mgf(weights[None], means[None], spreads[None], toward[:, None, None] / b, center)  # (side, mixture): t = ∓1/b
    sup_r = jnp.stack([log_m[:, 0] - log_p[:, 1], log_m[:, 1] - log_p[:, 0]]) - jnp.log(2.0 * b)  # (order, side)
    size = jnp.stack([jnp.abs(log_m[:, 0]) + jnp.abs(log_p[:, 1]), jnp.abs(log_m[:, 1]) + jnp.abs(log_p[:, 0])]) + jnp.abs(jnp.log(2.0 * b))
    return sup_r - eps < -sign_floor(size, eps), sup_r


def _on_used(fun, pair: _Pair, used, default, lanes, pool):
    """``fun`` (a function of one pair and its lanes' arrays (m,), returning arrays (m,)) on the
    lanes where ``used`` (n, m), ``default`` (arrays (n, m)) elsewhere. Each pair's used lanes are
    taken ``pool`` at a time, in rounds: a round computes ``pool`` lanes of every pair (vmapped)
    and runs only where some pair has that many used lanes left (a ``lax.scan`` of ``lax.cond``s:
    under an outer ``vmap`` every round runs), so ``fun`` is traced once and the cost follows the
    batch's largest count of used lanes. A lane's arithmetic is that of ``fun`` on all m lanes
    (XLA's code for a point does not depend on how many points a pair evaluates from 2 on; with 1
    it differs by an ulp in ~15 % of points, and the pieces' proofs, which compare f at a bracket's
    end with the components there, then lose their sign: ``pool`` ≥ 2). ``pool`` None: every lane
    in one batch."""
    m = used.shape[1]
    if pool is None:
        return jax.vmap(lambda p, u, d, *x: tuple(jnp.where(u, o, d_) for o, d_ in zip(fun(p, *x), d)))(pair, used, default, *lanes)
    rounds = -(-m // pool)
    idx, ok = jax.vmap(lambda u: first_true(u, rounds * pool))(used)  # each pair's used lanes first
    most = jnp.max(jnp.sum(used, axis=1))
    put = jax.vmap(lambda d, o, i, k: d.at[jnp.where(k, i, m)].set(o, mode="drop"))

    def one_round(out, start):
        def compute(out):
            i, k = (jax.lax.dynamic_slice_in_dim(v, start, pool, axis=1) for v in (idx, ok))
            few = jax.vmap(fun)(pair, *(jnp.take_along_axis(a, i, axis=1) for a in lanes))
            return tuple(put(d, o, i, k) for d, o in zip(out, few))

        return jax.lax.cond(start < most, compute, lambda out: out, out), None

    return jax.lax.scan(one_round, tuple(default), jnp.arange(0, rounds * pool, pool))[0]


def _grid_stage(pair: _Pair, noise, scale_slope=False):
    """The exact evaluator's first stage for one mixture pair (module docstring): f of both orders
    and the components on the grid, the crossing cells and the cells that may hide an extremum,
    each in its pool, and the Illinois brackets of the latter (as a dict)."""
    weights, means, spreads, b_, eps_ = pair[:5]
    y = _grid(weights, means, spreads, b_, noise)
    at_grid = _at(pair, y, noise, scale_slope)  # shared with the pieces' bounds (_pieces)
    r, dr, size = _ratio(pair, y, noise, comps=at_grid[0])
    signs = jnp.array([1.0, -1.0])  # order i→j: f = r − ε; order j→i: f = −r − ε
    f = signs[:, None] * r[None, :] - eps_
    df = signs[:, None] * dr[None, :]
    floor = sign_floor(size, eps_)
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
    roots, extremal = _pools(weights.shape[-1])
    cross_at, cross_ok = first_true(crossings, roots)
    ext_at, ext_ok = first_true(extrema, extremal)
    resolved = (jnp.sum(crossings) <= roots) & (jnp.sum(extrema) <= extremal)
    f_flat, df_flat, floor_cells = f.reshape(-1), df.reshape(-1), jnp.tile(floor, 2)

    def bracket(at):  # ends of the cells ``at`` of the flattened (order, cell) grid, with f and f'
        order, cell = at // cells, at % cells
        return dict(sgn=signs[order], a=y[cell], c=y[cell + 1], fa=f_flat[at + order], fc=f_flat[at + order + 1],
                    dfa=df_flat[at + order], dfc=df_flat[at + order + 1], floor=floor_cells[at + order])

    return dict(y=y, f=f, at_grid=at_grid, slack=slack, resolved=resolved, cross=bracket(cross_at), cross_ok=cross_ok,
                ext=bracket(ext_at), ext_ok=ext_ok)


def _bracket_stage(g, at, f_at):
    """One pair: the Newton brackets of every zero — the grid crossings, then both flanks of each
    extremum ``at`` (f there: ``f_at``) that crosses — with their starts, signs and which are used."""
    cr, ex = g["cross"], g["ext"]
    crosses = g["ext_ok"] & ((f_at > ex["floor"]) != (ex["fa"] > ex["floor"]))
    lo = jnp.concatenate([cr["a"], ex["a"], at])
    hi = jnp.concatenate([cr["c"], at, ex["c"]])
    f_lo = jnp.concatenate([cr["fa"], ex["fa"], jnp.where(crosses, f_at, 1.0)])
    f_hi = jnp.concatenate([cr["fc"], jnp.where(crosses, f_at, 1.0), ex["fc"]])
    f_hi = jnp.where(jnp.sign(f_hi) == jnp.sign(f_lo), -f_lo, f_hi)
    # first points: a quadratic from the end nearer 0 for grid crossings (a grid point can sit on
    # a near-tangent peak), the vertex parabola for the flanks of an excursion
    start = jnp.concatenate([
        crossing_start(cr["a"], cr["fa"], cr["dfa"], cr["c"], cr["fc"], cr["dfc"]),
        quadratic_start(at, f_at, 0.0, ex["a"], ex["fa"]), quadratic_start(at, f_at, 0.0, ex["c"], ex["fc"]),
    ])
    sgn = jnp.concatenate([cr["sgn"], ex["sgn"], ex["sgn"]])
    return dict(lo=lo, hi=hi, f_lo=f_lo, f_hi=f_hi, start=start, sgn=sgn, used=jnp.concatenate([g["cross_ok"], crosses, crosses]))


def _points_stage(pair: _Pair, g, at, f_at, br, newton, noise, scale_slope=False):
    """The exact evaluator's last coarse stage for one mixture pair: the grid, the Newton brackets'
    ends and the extrema sorted together, and both orders' bound without the ``_REFINE_PIECES``
    unproven pieces that hold the most (2,), those pieces' own bounds (2, R), which of them are
    unproven (R,), their subdivision points (R·P,), and diagnostics (unproven pieces per order, pieces);
    ``scale_slope``: then also both orders' gradient of δ (2, 2 + 6k) (:func:`_gradient`). With
    them, whether the :func:`_extra_points` slots held every point the pair adds."""
    sg = jax.lax.stop_gradient
    y, f, eps_ = g["y"], g["f"], pair.eps
    b_lo, b_hi, fb_lo, fb_hi = newton
    sgn, sign_e = br["sgn"], g["ext"]["sgn"]
    # every point with f of both orders, sorted together: an extra point carries its own order's
    # f as evaluated (recovering it through r = ±(f + ε) rounds a tiny f to 0, which would turn a
    # one-signed piece into a bracket) and the other order's −f − 2ε
    extra = jnp.concatenate([b_lo, b_hi, at])
    f_own = jnp.concatenate([fb_lo, fb_hi, f_at])
    sgn_x = jnp.concatenate([sgn, sgn, sign_e])
    keep = jnp.concatenate([br["used"], br["used"], g["ext_ok"]]) & jnp.isfinite(extra) & jnp.isfinite(f_own)
    # the kept points first, in _extra_points slots (a pair that needs more is reported)
    slots = _extra_points(pair.weights.shape[-1])
    held = jnp.sum(keep) <= slots
    take, keep = first_true(keep, slots)
    extra, f_own, sgn_x = extra[take], f_own[take], sgn_x[take]
    f_other = -f_own - 2.0 * eps_
    extra = jnp.where(keep, extra, y[0])
    pts, f_0, f_1, perm = jax.lax.sort((
        jnp.concatenate([y, extra]),
        jnp.concatenate([f[0], jnp.where(keep, jnp.where(sgn_x > 0, f_own, f_other), f[0, 0])]),
        jnp.concatenate([f[1], jnp.where(keep, jnp.where(sgn_x > 0, f_other, f_own), f[1, 0])]),
        jnp.arange(y.shape[0] + extra.shape[0]),
    ), num_keys=1)
    pts, f_sorted = sg(pts), sg(jnp.stack([f_0, f_1]))
    # the components at the points: the grid's, and the extra points' computed once here
    at_pts = jax.tree.map(lambda a, x: jnp.concatenate([a, x])[perm], g["at_grid"], _at(pair, sg(extra), noise, scale_slope))
    bounds, unproven, *gradient = _pieces(pair, pts, f_sorted, noise, at_pts, scale_slope)
    if noise == "laplace":  # the outer pieces hold nothing where f < 0 out there is proven
        outer = jnp.array([0, -1])
        negative = _outer_negative(pair, pts[0], pts[-1])[0]
        bounds = bounds.at[:, outer].set(jnp.where(negative, 0.0, bounds[:, outer]))
        if gradient:
            gradient[0] = gradient[0].at[:, outer].set(gradient[0][:, outer] & ~negative)
    # the unproven pieces holding the most (both orders) are left to the second pass
    need = jnp.where(jnp.any(unproven, axis=0), jnp.sum(sg(bounds[:, 1:-1]), axis=0), -1.0)
    picked = jnp.sort(jax.lax.top_k(need, _REFINE_PIECES)[1])
    fine = pts[picked][:, None] + (pts[picked + 1] - pts[picked])[:, None] * jnp.linspace(0.0, 1.0, _REFINE_POINTS)
    fine = fine.at[:, -1].set(pts[picked + 1]).reshape(-1)
    coarse = bounds[:, 1:-1][:, picked]
    # the rest summed over the pieces not picked, never as the total less the picked ones: a
    # picked piece's bound (4e-10) minus itself left nothing of the rest's 3e-26 (harness seed 47)
    kept = jnp.ones(bounds.shape[1] - 2, bool).at[picked].set(False)
    rest = bounds[:, 0] + bounds[:, -1] + jnp.sum(jnp.where(kept, bounds[:, 1:-1], 0.0), axis=1) + g["slack"]
    out = rest, coarse, need[picked] >= 0, fine, (jnp.sum(unproven, axis=1), pts.shape[0] - 1), *([_gradient(*gradient)] if gradient else [])
    return out, held


def _coarse_pass(pair: _Pair, noise, scale_slope=False):
    """The first pass of the exact evaluator for a batch of mixture pairs (module docstring), in
    stages: the grid (:func:`_grid_stage`), Illinois on the cells that may hide an extremum, the
    brackets (:func:`_bracket_stage`), Newton on the used brackets and the points' bounds
    (:func:`_points_stage`). A pair has 8k − 4 crossing and 2k extremum slots and uses few; under
    Laplace noise the loops run on the used ones only (:func:`_on_used`, ``_POOLS``), with the
    arithmetic per slot of a loop on every slot. Returns :func:`_points_stage`'s values per pair
    and whether the pools held every crossing and extremum and the points stage every point
    they give (:func:`_extra_points`)."""
    g = jax.vmap(partial(_grid_stage, noise=noise, scale_slope=scale_slope))(pair)
    ex = g["ext"]
    root_pool, extremum_pool = _POOLS.get(noise, (None, None))

    def extremum(p, a, c, fa, fc, sgn):  # the root of f' in each cell, and f there
        at = illinois(lambda x: sgn * _ratio(p, x, noise)[1], a, c, fa, fc, _EXTREMUM_STEPS)
        return at, sgn * _ratio(p, at, noise)[0] - p.eps

    at, f_at = _on_used(extremum, pair, g["ext_ok"], (ex["a"], ex["fa"]), (ex["a"], ex["c"], ex["dfa"], ex["dfc"], ex["sgn"]), extremum_pool)
    br = jax.vmap(_bracket_stage)(g, at, f_at)

    def newton(p, lo, hi, f_lo, f_hi, start, sgn):
        def f_and_slope(x):
            value, slope, _ = _ratio(p, x, noise)
            return sgn * value - p.eps, sgn * slope

        return newton_bracket(f_and_slope, lo, hi, f_lo, f_hi, _ROOT_STEPS, start)

    ends = (br["lo"], br["hi"], br["f_lo"], br["f_hi"])
    brackets = _on_used(newton, pair, br["used"], ends, (*ends, br["start"], br["sgn"]), root_pool)
    coarse, held = jax.vmap(partial(_points_stage, noise=noise, scale_slope=scale_slope))(pair, g, at, f_at, br, brackets)
    return coarse, g["resolved"] & held


def _fine_pass(pair: _Pair, fine, refine, noise):
    """The second pass: the bounds of the pieces that :func:`_coarse_pass` left open, each split at
    its ``_REFINE_POINTS`` points ``fine`` (R·P,) and bounded again by the same rules where
    ``refine`` (R,); (2, R) bounds (+∞ where not refined) and subpieces still unproven per order."""
    at_fine = _at(pair, fine, noise)
    r_fine = _ratio(pair, fine, noise, at_fine[0])[0]
    fine_bounds, fine_unproven = _pieces(pair, fine, jnp.stack([r_fine - pair.eps, -r_fine - pair.eps]), noise, at_fine)
    shape = (2, _REFINE_PIECES, _REFINE_POINTS)
    per_sub = jnp.concatenate([fine_bounds[:, 1:-1], jnp.zeros((2, 1))], axis=1).reshape(shape)
    refined = jnp.sum(per_sub[:, :, :-1], axis=2)  # the junctions between picked pieces dropped
    still = jnp.concatenate([fine_unproven, jnp.zeros((2, 1), bool)], axis=1).reshape(shape)[:, :, :-1]
    return jnp.where(refine, refined, jnp.inf), jnp.sum(still & refine[None, :, None], axis=(1, 2))


def _exact_batch(first, second, b, eps, noise, scale_slope=False):
    """(δ for order i→j, δ for order j→i, resolved, diagnostics) per mixture pair of a batch, both
    passes (module docstring). diagnostics: (unproven pieces per order (n, 2), pieces subdivided,
    subpieces still unproven per order (n, 2), pieces). ``scale_slope``: then also both orders'
    gradient of δ (n, 2, 2 + 6k) by the envelope theorem (:func:`_gradient`; the coarse pass's pieces).

    ``first``, ``second`` = (weights, means, stds), each (n, k); b > 0 (or θ ≥ 0 for Gaussian noise
    with every positive-weight σ > 0), ``b`` and ``eps`` (n,)."""
    pair = jax.vmap(partial(_pair, noise=noise))(first, second, b, eps)
    (rest, bounds, refine, fine, (unproven, count), *slope), resolved = _coarse_pass(pair, noise, scale_slope)
    unrefined = (jnp.full_like(bounds, jnp.inf), jnp.zeros_like(unproven))
    refined, still = _on_lanes(jax.vmap(partial(_fine_pass, noise=noise)), jnp.any(refine, axis=1), unrefined, pair, fine, refine)
    total = rest + jnp.sum(jnp.minimum(bounds, refined), axis=2)
    out = jnp.minimum(total[:, 0], 1.0), jnp.minimum(total[:, 1], 1.0), resolved, (unproven, jnp.sum(refine, axis=1), still, count)
    return (*out, jnp.where(total[..., None] < 1.0, slope[0], 0.0)) if scale_slope else out


def _atoms(mixture):
    """Which components of a mixture (weights, means, stds) are point masses, and the weights of
    its continuous part (0 at the point masses)."""
    weights, _, stds = mixture
    atom = (weights > 0) & (stds <= 0)
    return atom, jnp.where(atom, 0.0, weights)


def _continuous_parts(first, second):
    """For δ with no noise: each mixture's continuous part (point masses, std 0, get weight 0 and
    std 1; so do components of weight 0 and std 0, whose std 0 made every density NaN and δ's
    bound 1 even for identical priors) where both mixtures have one, and whether they do."""
    (a, m1, s1), (c, m2, s2) = first, second
    (_, cont1), (_, cont2) = _atoms(first), _atoms(second)
    both = jnp.any(cont1 > 0) & jnp.any(cont2 > 0)
    return (jnp.where(both, cont1, a), m1, jnp.where(s1 <= 0, 1.0, s1)), (jnp.where(both, cont2, c), m2, jnp.where(s2 <= 0, 1.0, s2)), both


def _with_atoms(first, second, eps, both, d12, d21):
    """Both orders' δ with no noise, the mixtures' own hockey-stick: ``d12``, ``d21`` (the
    continuous parts' δ, :func:`_continuous_parts`) + Σ over atom locations x of [P(x) − e^ε Q(x)]_+;
    where one side has no continuous part, the other side's continuous mass is all in δ."""
    (a, m1, _), (c, m2, _) = first, second
    (atom1, cont1), (atom2, cont2) = _atoms(first), _atoms(second)
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
    return jnp.minimum(d12, 1.0), jnp.minimum(d21, 1.0)


def mixture_delta(level: str, noise, params, b, eps, symmetric, padded=False, scale_slope=False):
    """δ per pair at level ``"coupling"`` or ``"exact"`` for flat batches of mixture pairs.

    ``params`` = (w, Δμ, Δσ, α, μ_i, σ_i, β, μ_j, σ_j): the plan and component differences on the
    (n, k, k) grid, then both mixtures (n, k). ``b`` > 0 and ``eps`` are (n,). The exact level's
    δ is the lower of the exact evaluation and, where a piece's sign was not proven or a pool
    overflowed, the plan's coupling bound (both ≥ δ, both orders).
    The exact level under a kernel without closed-form component CDFs (not in ``EXACT_KERNELS``:
    GG(p)) is the lower of :func:`jaxpuffer.losses_convolved.mixture_delta` (``padded`` its
    argument) and the plan's coupling bound. ``scale_slope`` (exact level, Laplace noise):
    (δ, its gradient (n, G)), see :func:`mixture_delta_and_slope`.
    """
    n = params[0].shape[0]
    b, eps = jnp.broadcast_to(b, (n,)), jnp.broadcast_to(eps, (n,))
    bound = partial(mixture_coupling, *params[:3], b, eps, noise)
    if level == "coupling":
        return bound()
    first, second = params[3:6], params[6:9]
    if noise not in EXACT_KERNELS:
        # both upper bounds of δ: the enclosure has a floor (~1e-6 where the priors nearly agree at
        # small ε), below which only the plan's coupling bound reaches
        return jnp.minimum(losses_convolved.mixture_delta(noise, first, second, b, eps, symmetric, padded), bound())
    d12, d21, resolved, (unproven, *_), *slopes = _exact_batch(first, second, b, eps, noise, scale_slope)
    # both are upper bounds. Where every piece's sign was proven the sum is δ to rounding; where the
    # pools overflowed, or a piece's sign was not proven (the priors nearly agree at small ε: the
    # unproven pieces' sup bounds, each loose by a curvature term, add up to ~1e-5 where δ is
    # ~1e-13), the coupling bound may be the tighter one. It is computed on those pairs only (with
    # Gaussian noise it costs about as much as the exact evaluation: on every pair, 2.3x slower)
    loose = ~resolved | jnp.any(unproven > 0, axis=1)
    fallback = _on_lanes(partial(mixture_coupling, noise=noise), loose, jnp.ones_like(d12), *params[:3], b, eps)
    taken = fallback < d12, fallback < d21
    d12, d21 = jnp.minimum(d12, fallback), jnp.minimum(d21, fallback)
    value = jnp.where(symmetric, jnp.maximum(d12, d21), d12)
    if not scale_slope:
        return value
    # (the coupling bound's slopes: unknown); δ does not depend on the plan (w, Δμ, Δσ): 3k² zeros after b's
    g12, g21 = (jnp.where(taken[k][:, None], jnp.nan, slopes[0][:, k]) for k in (0, 1))
    gradient = jnp.where((symmetric & (d21 > d12))[:, None], g21, g12)
    plan = jnp.zeros((n, sum(math.prod(a.shape[1:]) for a in params[:3])))
    return value, jnp.concatenate([gradient[:, :1], plan, gradient[:, 1:]], axis=1)


def mixture_delta_and_slope(level: str, noise, params, b, eps, symmetric):
    """(δ, G) per pair, δ as :func:`mixture_delta` and G (n, 2 + 3k² + 6k) its gradient in (b, then
    each per-pair entry of ``params`` in order, then ε), for the exact search's model (column 0)
    and an eager ``jax.grad`` of a calibration (:func:`jaxpuffer.calibration._slopes_by_search`),
    where it has a closed form; else None (the search then takes the JVP of δ,
    :func:`jaxpuffer.families.delta_and_slope`). The exact level under Laplace noise takes it by
    the envelope theorem: Σ over the coarse pieces with f ≥ 0 at both ends of ∂[P_i − e^ε P_j],
    the pieces' ends held fixed (:func:`_gradient`), from the component CDFs' slopes in closed
    form — ∂F/∂b (Stein's identity), −p in the mean, σ p' in the std (the heat equation), F itself
    in the weight, and −e^ε P_j in ε; 0 in the plan (w, Δμ, Δσ), which the exact δ does not use —
    with no derivative traced through the evaluator; NaN where the coupling bound is the lower (the
    search's model then takes no step from it, and the implicit derivative is a JVP). It is the slope of the true δ, not of the
    evaluator's upper bound, which the JVP follows through the allowances for unproven pieces; under
    Laplace noise the search needs fewer evaluations with it and each costs less (1,024 random
    3-component pairs, warm: (1, 1e-3) 5.8 -> 4.0 s, (0.3, 1e-6) 8.6 -> 6.4 s). Under Gaussian noise
    it needed more (2.7 -> 3.0 s at (1, 1e-5)), so there, as at every other level and kernel, the
    search takes the JVP."""
    if level != "exact" or noise != "laplace":
        return None
    return mixture_delta(level, noise, params, b, eps, symmetric, scale_slope=True)


def mixture_delta_at_zero(params, eps, symmetric):
    """δ with no noise for flat batches of mixture pairs (an upper bound where the pools overflow:
    every piece not resolved is bounded, module docstring)."""
    first, second = params[3:6], params[6:9]
    eps = jnp.broadcast_to(eps, params[0].shape[:1])
    cont_first, cont_second, both = jax.vmap(_continuous_parts)(first, second)
    d12, d21, _, _ = _exact_batch(cont_first, cont_second, jnp.zeros_like(eps), eps, "gaussian")
    d12, d21 = jax.vmap(_with_atoms)(first, second, eps, both, d12, d21)
    return jnp.where(symmetric, jnp.maximum(d12, d21), d12)


def mixture_delta_at_zero_floor(params, eps, symmetric):
    """A lower bound of δ with no noise for flat batches of mixture pairs, cheap beside
    :func:`mixture_delta_at_zero` (the search asks it first: a pair whose bound exceeds its target
    needs noise, and the priors' own evaluator is then neither compiled nor run).

    δ(0) = sup_S P_i(S) − e^ε P_j(S) over sets S, so any union of cells gives a lower bound: the
    sum of [P_i − e^ε P_j](cell)_+ over the cells (y_t, y_{t+1}] between consecutive points of
    every component's core grid (μ + σ·t, |t| ≤ 13, as the evaluator's; for a point mass, μ and
    the float below it) and the two outer half-lines, each cell's masses from the component CDFs
    on the side of each component's median (:func:`jaxpuffer.noise.interval_mass`; point masses,
    σ = 0, exactly) less their rounding bounds, the sum rounded down. NaN inputs give NaN (nothing
    proven). Measured on 4,096 random pairs with point masses and zero weights: never above the
    exact evaluator's δ(0), median ratio to it 0.998 (ε = 1)."""
    first, second = params[3:6], params[6:9]
    eps = jnp.broadcast_to(eps, params[0].shape[:1])

    def one(first, second, eps):
        weights, means, stds = (jnp.stack(row) for row in zip(first, second))  # (2, k) each
        y = means[..., None] + stds[..., None] * GRID_CORE
        y = y.at[..., 0].set(jnp.where(stds > 0, y[..., 0], jnp.nextafter(means, -jnp.inf)))  # a point mass alone in (μ⁻, μ]
        y = jnp.sort(y.reshape(-1))
        y = jnp.concatenate([jnp.array([-jnp.inf]), y, jnp.array([jnp.inf])])
        z = (y[:, None, None] - means[None]) / jnp.where(stds > 0, stds, 1.0)[None]
        atom = (stds <= 0)[None]
        cdf, sf = ndtr_pair(z)
        cdf = jnp.where(atom, (y[:, None, None] >= means[None]).astype(y.dtype), cdf)  # F(y) = P(Y ≤ y)
        sf = jnp.where(atom, (y[:, None, None] < means[None]).astype(y.dtype), sf)
        mass, error_ulps = interval_mass(cdf[:-1], sf[:-1], cdf[1:], sf[1:], y[:-1, None, None], y[1:, None, None], means[None])
        mass, error = jnp.sum(weights * mass, axis=2), _EPS64 * jnp.sum(weights * error_ulps, axis=2)  # (cells, mixture)
        e_eps = jnp.exp(eps)
        orders = [jnp.sum(jnp.maximum(mass[:, k] - e_eps * mass[:, 1 - k] - (error[:, k] + e_eps * error[:, 1 - k]), 0.0)) for k in (0, 1)]
        return jnp.stack(orders) * (1.0 - 1e-12)  # (the sum's own rounding: ≤ 2 × 10³ ulps of its terms, all ≥ 0)

    d12, d21 = jax.vmap(one, out_axes=1)(first, second, eps)
    return jnp.where(symmetric, jnp.maximum(d12, d21), d12)


def mixture_params(pairs, plan):
    """The flat parameter tuple of :func:`mixture_delta` for a PairSet of mixtures and a plan:
    (w, Δμ, Δσ) as (n, k, k), then (α, μ_i, σ_i, β, μ_j, σ_j) as (n, k), n = pairs.size."""
    k = pairs.first.num_components
    grid = tuple(a.reshape(-1, k, k) for a in (plan.weights, *mixture_differences(pairs)))
    return grid + tuple(a.reshape(-1, k) for m in (pairs.first, pairs.second) for a in (m.weights, m.means, m.stds))
