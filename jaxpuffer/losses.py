"""Privacy loss δ(b) at a given noise scale, one function per level of the ladder (MATH.md §6–7).

Every function returns, per pair, the δ that its level certifies at noise scale b (Laplace b or
Gaussian std θ), maximised over both orders when the pair set is symmetric. Levels, tightest first:

  L0 ``_delta_exact``     the hockey-stick divergence ∫ [p_i − e^ε p_j]_+ dy of the noisy release
                          (public: :func:`jaxpuffer.evaluate.delta_exact`, which runs it in the
                          calibration's own compiled program where its inputs are concrete).
  L1 ``delta_coupling``   the Monge-coupling bound (35): E[(1 − e^{ε − |W|/b})_+], W = x − T(x).
  L2 ``delta_indicator``  the indicator bound (18): P(|W| > εb).
  L3 ``delta_theorem``    Theorem 1's Gaussian-tail certificate, 2 Q((εb − |Δμ|)/|Δσ|).

Under the Monge map T(x) = μ_j + (σ_j/σ_i)(x − μ_i), W = x − T(x) ~ N(Δμ, Δσ²) with
Δμ = μ_i − μ_j, Δσ = σ_i − σ_j; |W| has the same law for both orders, so L1–L3 are symmetric.

How L0 is evaluated (Laplace noise). Write r(y) = log p_i(y) − log p_j(y) − ε; then
δ = Σ over the intervals where r > 0 of [P_i − e^ε P_j](interval), with the closed-form CDF of
Gaussian ⊛ Laplace (:mod:`jaxpuffer.noise`). The crossings are located on a grid adapted to both
priors (μ_k + σ_k·t, |t| ≤ 13, and μ_k + b·t, |t| ≤ 48, beyond which both densities are exact
exponentials with the same rate, so r is constant to ~1e-20), with r and its slope computed in
tail-normalized form (no cancellation of the ±y/b terms), then refined:
  * each sign change of r on the grid (up to ``_ROOTS`` per order) by Newton steps kept inside
    its bracket, from the zero of a quadratic with value and slope at the end nearer 0 (a grid
    point can sit on a near-tangent peak of r, where regula falsi's start stalls Newton);
  * each hidden peak — the slope turning from + to − inside a cell whose ends are ≤ 0, which the
    bound |r'| ≤ 2/b allows to rise above 0 — by an Illinois search for the root of the slope,
    and, where the peak is above 0, its two crossings, Newton starting from the zero of the
    parabola with its vertex at the peak (issue 17: near-tangent slivers at small ε, δ ~1e-13,
    were under-measured up to 16x with regula-falsi starts).
Every crossing is kept as a *bracket* with f of known sign at both ends (Newton,
:func:`jaxpuffer._roots.newton_bracket`, its last estimate bracketed by probes at least the sign
floor (below) over the slope away, then 16 bisection steps on the two widest brackets,
:func:`jaxpuffer._roots.bisect_widest`): masses are taken up to the bracket's
end where f > 0, and what the bracket holds is added as width × p(t₀) × (1 − e^{−F}), F a tent
bound on f from log-concave slope bounds (issue 17: an unconverged far-tail estimate had made δ
2,718x too small). Where more crossings or peaks are found than the fixed budget, that order's δ
is the L1 coupling bound instead (≥ δ). Signs within a rounding-noise floor (at a grid point or a
located peak) count as non-positive and raise δ by the floor, and δ is rounded up by a bound on the
rounding error of its CDF differences: the value returned never falls below the true δ by more
than round-off of round-off, so calibrating to it errs on the safe side. The crossings are
computed under ``stop_gradient``: the integrand vanishes there, so by the envelope theorem the
derivative of δ with respect to b, ε and the prior parameters is exact without differentiating
the search. A batch is evaluated in stages (:func:`_laplace_brackets`): the grid per pair, then
the loops (Illinois, Newton with its probes, bisection) and the CDFs at the crossing points on
the lanes that use them only, gathered across the batch (:func:`jaxpuffer._parallel.on_lanes`):
a Gaussian pair has 0–4 crossings of its 2·(_ROOTS + 2·_PEAKS) = 12 lanes and rarely a peak
candidate, so every lane computed was most of the cost (10⁴ ``bench_calibrate`` pairs: value with
its b-derivative 360 → 220 ms; ``calibrate`` at (1, 1e-6) ~1.35x faster than the evaluator before
the certificate, which it had made 0.65x).

Gaussian noise (MATH.md §7): Y | s ~ N(μ, σ² + θ²), and the set {g_i > e^ε g_j} is where a
quadratic is positive, so δ is a closed-form sum of Φ-differences.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from . import _parallel, _validate, losses_convolved
from ._cache import ExportedJit
from ._parallel import on_lanes
from .bounds import _gaussian_pairs
from ._roots import GRID_CORE as _CORE, GRID_TAIL as _TAIL, first_true, illinois, merge_sorted, bisect_widest, crossing_start, newton_bracket, quadratic_start, sign_floor
from .losses_coupling import coupling_kernel, coupling_laplace_closed, coupling_quadrature
from .noise import gauss_laplace, interval_mass, laplace_log_ratio, normal_mass, normal_mass_ulps, tail_normalized
from .losses_discrete import discrete_delta, discrete_probabilistic
from .losses_mixture import mixture_delta, mixture_delta_at_zero, mixture_params
from .noise import kernels
from .pairs import PairSet, discrete_arrays
from .couplings import gmm_coupling
from .priors import Discrete, GaussianMixture

COUPLING_METHODS = ("closed", "quadrature", "monte_carlo")

_ROOTS = 4  # grid crossings refined per order
_PEAKS = 1  # hidden excursions searched per order
# bisection steps after Newton: a zero on a flat stretch of r − ε (near b_pure, r is flat within
# rounding over wide tails) stalls Newton; the bracket's share of δ is then bounded, and a wide
# bracket made δ(b) jumpy (64 random pairs: up to 10 % above the resolved value with 0 steps,
# 7e-11 with 16, 0 with 32; the optax and bisection solvers then disagreed by 1e-5). Since
# Newton stays on an exact zero and its probes step the sign floor / |f'| out, its brackets at
# bench_calibrate's calibrated scales are all ≤ 1e-8 b (59 % of the pairs had one > 1e-4 b), but
# 4,096 random pairs still gave δ up to 8.8e-6 relative higher without the bisection at random
# b, and 7.9x near b_pure (1e-19 → 1e-18)
_BISECTIONS = 16
# only the widest 2 of the 2·(_ROOTS + 2·_PEAKS) = 12 brackets are bisected (Newton rarely
# stalls on more than one; the rest are held as they are): 10⁴ random pairs at (1, 1e-6) gave the
# same scales bit for bit as bisecting all 12, warm 2.24 s -> 1.57 s; 4,000 pairs with σ ratios up
# to e⁶ at three targets, scales within 9e-11 relative (the search's rtol), same iterations
_BISECT_LANES = 2
_ROOT_STEPS = 8  # safeguarded Newton steps per crossing (quadratic from the regula-falsi start)
_PEAK_STEPS = 16  # Illinois steps locating a hidden peak (root of the slope)
_ROUNDING_ULPS = 64  # Gaussian noise: δ is rounded up by this many ulps of the masses it subtracts, beyond their own errors


# ----------------------------------------------------------------------------- Gaussian noise


def gaussian_hockey_stick(d_mu, s1, s2, eps):
    """∫ [N(y; Δμ, s1²) − e^ε N(y; 0, s2²)]_+ dy in closed form (s1, s2 > 0), MATH.md §7.

    log g1 − log g2 − ε = A y² + B y + C with A = (s1² − s2²)/(2 s1² s2²), B = Δμ/s1²,
    C = −Δμ²/(2 s1²) + log(s2/s1) − ε; the positive set is a half-line (A = 0), the outside of the
    roots (A > 0) or the inside (A < 0). With s1 = s2 = s this is the analytic Gaussian mechanism
    Φ(Δ/2s − εs/Δ) − e^ε Φ(−Δ/2s − εs/Δ) (Balle & Wang 2018).
    """
    a = (s1 - s2) * (s1 + s2) / (2.0 * s1**2 * s2**2)
    b = d_mu / s1**2
    c = -(d_mu**2) / (2.0 * s1**2) + jnp.log(s2 / s1) - eps
    disc = b**2 - 4.0 * a * c
    has_roots = disc > 0
    sq = jnp.where(has_roots, jnp.sqrt(jnp.where(has_roots, disc, 1.0)), 0.0)
    q = -0.5 * (b + jnp.where(b >= 0, sq, -sq))
    q = jnp.where(q == 0, 1e-300, q)
    linear = a == 0
    a_safe = jnp.where(linear, 1.0, a)
    r1, r2 = q / a_safe, c / q
    lo, hi = jnp.minimum(r1, r2), jnp.maximum(r1, r2)
    # A == 0: half-line y > −C/B (B > 0) or y < −C/B (B < 0); B == 0: empty.
    b_safe = jnp.where(b == 0, 1.0, b)
    cut = -c / b_safe

    def standard(x, mu, s):  # (x − μ)/s, with ±∞ kept out of the arithmetic (NaN-free gradients)
        finite = jnp.isfinite(x)
        return jnp.where(finite, (jnp.where(finite, x, 0.0) - mu) / s, jnp.sign(x) * 40.0)

    # the positive set as two intervals (lo_k, hi_k], the second one (hi, ∞) used only outside
    # the roots: A = 0, the half-line; A > 0, (−∞, lo] and (hi, ∞); A < 0, (lo, hi]
    inf = jnp.inf
    first_lo = jnp.where(linear, jnp.where(b > 0, cut, -inf), jnp.where(a > 0, -inf, lo))
    first_hi = jnp.where(linear, jnp.where(b > 0, inf, cut), jnp.where(a > 0, lo, hi))
    used = (jnp.where(linear, b != 0, has_roots), ~linear & (a > 0) & has_roots)
    ends_lo, ends_hi = jnp.stack(jnp.broadcast_arrays(first_lo, hi)), jnp.stack(jnp.broadcast_arrays(first_hi, inf))
    # [P1 − e^ε P2] of each interval, rounded up by a bound on its rounding error; both priors'
    # masses in one normal_mass call (one Φ evaluation site: compile time grows with the sites)
    ends = (jnp.stack([standard(ends_lo, d_mu, s1), standard(ends_lo, 0.0, s2)]),
            jnp.stack([standard(ends_hi, d_mu, s1), standard(ends_hi, 0.0, s2)]))
    both = normal_mass(*ends)
    # the masses' own rounding (normal_mass_ulps) and that of their difference
    ulps = normal_mass_ulps(*ends) + _ROUNDING_ULPS
    p1, p2 = both[0], both[1]
    e_eps = jnp.exp(eps)
    mass = jnp.maximum(p1 - e_eps * p2, 0.0) + jnp.finfo(jnp.float64).eps * (ulps[0] * p1 + e_eps * ulps[1] * p2)
    return jnp.minimum(jnp.where(used[0], mass[0], 0.0) + jnp.where(used[1], mass[1], 0.0), 1.0)


def _both_orders(fn, d_mu, s1, s2, *rest):
    """fn at (Δμ, σ_1, σ_2) and at the reversed order (−Δμ, σ_2, σ_1), as one call on stacked
    arguments: one evaluation site for fn's special functions (XLA's compile time grows with the
    number of sites, not with the size of the arrays)."""
    d_mu, s1, s2, *rest = jnp.broadcast_arrays(d_mu, s1, s2, *rest)
    out = fn(jnp.stack([d_mu, -d_mu]), jnp.stack([s1, s2]), jnp.stack([s2, s1]), *rest)
    return out[0], out[1]


def _gaussian_exact_one(d_mu, s1, s2, theta, eps):
    """δ for Gaussian noise std θ (the priors' own hockey-stick at θ = 0, point masses included)."""
    ok = theta > 0
    smooth_prior = (s1 > 0) & (s2 > 0)
    v1, v2 = jnp.sqrt(s1**2 + theta**2), jnp.sqrt(s2**2 + theta**2)
    # one closed-form call: N(Δμ, σ² + θ²) where θ > 0, else the priors themselves where smooth
    smooth = gaussian_hockey_stick(
        d_mu, jnp.where(ok, v1, jnp.where(smooth_prior, s1, 1.0)), jnp.where(ok, v2, jnp.where(smooth_prior, s2, 1.0)), eps
    )
    atoms = jnp.where((s1 == 0) & (s2 == 0) & (d_mu == 0), 0.0, 1.0)
    return jnp.where(ok | smooth_prior, smooth, atoms)


def prior_delta(d_mu, s1, s2, eps, symmetric):
    """δ with no noise: the priors' own hockey-stick, the max over both orders when symmetric."""
    fwd, rev = _both_orders(_gaussian_exact_one, d_mu, s1, s2, 0.0, eps)
    return jnp.where(symmetric, jnp.maximum(fwd, rev), fwd)


# ----------------------------------------------------------------------------- Laplace noise


_SIGNS = (1.0, -1.0)  # order 1→2: f = r − ε; order 2→1: f = −r − ε


def _lane_f(x, sgn, m1, s1, m2, s2, b, eps):
    """f = sgn·r − ε and its slope at x, elementwise over lanes (a lane: one bracket of one pair)."""
    value, slope, _ = laplace_log_ratio(x, m1, s1, m2, s2, b)
    return sgn * value - eps, sgn * slope


def _grid_stage(m1, s1, m2, s2, b, eps):
    """One pair (constants): the signs of f on the grid, its crossings and peak candidates."""
    y = merge_sorted(merge_sorted(m1 + s1 * _CORE, m2 + s2 * _CORE), merge_sorted(m1 + b * _TAIL, m2 + b * _TAIL))
    r, dr, size = laplace_log_ratio(y, m1, s1, m2, s2, b, separate=True)
    signs = jnp.array(_SIGNS)
    f = signs[:, None] * r[None, :] - eps
    df = signs[:, None] * dr[None, :]
    # below this floor the sign of r − ε is rounding noise (it matters where the tail limit of r
    # equals ε, i.e. at b_pure). Such points count as non-positive, and δ is raised by the floor
    # (a region with 0 < r − ε ≤ floor contributes at most floor).
    floor = sign_floor(size, eps)
    pos = f > floor[None, :]
    slack = jnp.where(jnp.any(jnp.abs(f) <= floor[None, :], axis=1), jnp.max(floor), 0.0)

    # crossings on the grid, and hidden peaks (slope + → − inside a cell whose ends are ≤ 0)
    cross_idx, cross_ok = first_true(pos[:, :-1] != pos[:, 1:], _ROOTS)
    # a peak candidate: the slope turns from + to − (beyond rounding noise, which flips its sign
    # where r is flat in the tails), both ends ≤ 0, and |r'| ≤ 2/b lets the cell's max exceed 0
    slope_floor = 1e-9 / b
    reach = 0.5 * (f[:, :-1] + f[:, 1:] + 2.0 * (y[1:] - y[:-1]) / b)
    peak_cells = (df[:, :-1] > slope_floor) & (df[:, 1:] < -slope_floor) & ~pos[:, :-1] & ~pos[:, 1:] & (reach > -floor[None, 1:])
    peak_idx, peak_ok = first_true(peak_cells, _PEAKS)
    n_cross = jnp.sum(pos[:, :-1] != pos[:, 1:], axis=1)
    resolved = (n_cross <= _ROOTS) & (jnp.sum(peak_cells, axis=1) <= _PEAKS)

    rows = jnp.arange(2)[:, None]

    def at(v, idx):
        return v[rows, idx].reshape(-1)

    ca, cc = y[cross_idx].reshape(-1), y[cross_idx + 1].reshape(-1)
    fa_c, fc_c = at(f, cross_idx), at(f, cross_idx + 1)
    # a quadratic from the end nearer 0 for grid crossings (a grid point can sit on a near-tangent peak)
    start_c = crossing_start(ca, fa_c, at(df, cross_idx), cc, fc_c, at(df, cross_idx + 1))
    return dict(
        y0=y[0], pos_first=pos[:, 0], pos_last=pos[:, -1], floor=jnp.max(floor), slack=slack, resolved=resolved,
        ca=ca, cc=cc, fa_c=fa_c, fc_c=fc_c, start_c=start_c, cross_ok=cross_ok.reshape(-1),
        pa=y[peak_idx].reshape(-1), pc=y[peak_idx + 1].reshape(-1), fa_p=at(f, peak_idx), fc_p=at(f, peak_idx + 1),
        dfa_p=at(df, peak_idx), dfc_p=at(df, peak_idx + 1), peak_ok=peak_ok.reshape(-1),
    )


def _bracket_stage(g, peak_at, m1, s1, m2, s2, b, eps):
    """One pair (constants): the value of f at its located peaks, and every bracket of both
    orders for one Newton loop — grid crossings, then the flanks of hidden peaks — with their
    first points (the vertex parabola for a peak's flanks: from regula falsi's start such flanks
    are out of 8 Newton steps' reach)."""
    sign_p = jnp.repeat(jnp.array(_SIGNS), _PEAKS)
    peak_r, _, peak_size = laplace_log_ratio(peak_at, m1, s1, m2, s2, b)
    peak_val = sign_p * peak_r - eps
    hidden = g["peak_ok"] & (peak_val > 0)
    # a peak within the floor of 0 (a near-tangency at rounding level, e.g. where δ(b) vanishes
    # at a small ε) may truly rise above 0 however it evaluated: the floor's slack, as for a grid
    # point (harness seed 103: sup f = 2e-15 at the returned b, evaluated ≤ 0; true δ 1.4e-26
    # against a target of 1.3e-27)
    peak_floor = sign_floor(peak_size, eps)
    near_zero = (g["peak_ok"] & (jnp.abs(peak_val) <= peak_floor)).reshape(2, _PEAKS)
    slack = jnp.maximum(g["slack"], jnp.where(jnp.any(near_zero, axis=1), jnp.maximum(g["floor"], jnp.max(peak_floor)), 0.0))
    top = jnp.where(hidden, peak_val, 1.0)
    brackets = dict(
        a=jnp.concatenate([g["ca"], g["pa"], peak_at]),
        c=jnp.concatenate([g["cc"], peak_at, g["pc"]]),
        fa=jnp.concatenate([g["fa_c"], g["fa_p"], top]),
        fc=jnp.concatenate([g["fc_c"], top, g["fc_p"]]),
        start=jnp.concatenate([
            g["start_c"], quadratic_start(peak_at, peak_val, 0.0, g["pa"], g["fa_p"]), quadratic_start(peak_at, peak_val, 0.0, g["pc"], g["fc_p"]),
        ]),
        sgn=jnp.concatenate([jnp.repeat(jnp.array(_SIGNS), _ROOTS), sign_p, sign_p]),
    )
    return brackets, jnp.concatenate([g["cross_ok"], hidden, hidden]), hidden, slack


def _lanes_of(per_pair, count):
    """Per-pair arrays (n,) repeated for the ``count`` lanes of each pair, flat (n·count,)."""
    return tuple(jnp.repeat(v, count) for v in per_pair)


def _flat(v):
    """Per-pair lanes (n, m) as one flat axis of lanes (n·m,)."""
    return v.reshape(-1)


def _laplace_brackets(m1, s1, m2, s2, b, eps):
    """Every crossing of f = ±r − ε of a batch of pairs (1-D arrays, constants), as a bracket with
    f of known sign at both ends: (grid stage, (lo, hi, f(lo), f(hi)) each (n, B), used (n, B),
    sgn (n, B), hidden peaks (n, 2·_PEAKS), slack (n, 2)), B = 2·(_ROOTS + 2·_PEAKS).

    The loops (Illinois on peaks, Newton, bisection) run on the lanes that need them only,
    gathered across the batch (:func:`jaxpuffer._parallel.on_lanes`): a Gaussian pair has 0–4
    crossings of its 2·_ROOTS lanes and rarely a peak candidate, and computing every lane was
    most of the evaluation's cost."""
    n = m1.shape[0]
    pair = (m1, s1, m2, s2, b, eps)
    g = jax.vmap(_grid_stage)(*pair)

    # hidden peaks: an Illinois search for the root of the slope, on the candidate cells only
    def peaks(a, c, fa, fc, sgn, *lane):
        return illinois(lambda x: _lane_f(x, sgn, *lane)[1], a, c, fa, fc, _PEAK_STEPS)

    lanes_p = _lanes_of(pair, 2 * _PEAKS)
    sgn_p = jnp.tile(jnp.repeat(jnp.array(_SIGNS), _PEAKS), n)
    peak_at = on_lanes(peaks, _flat(g["peak_ok"]), _flat(g["pa"]), _flat(g["pa"]), _flat(g["pc"]), _flat(g["dfa_p"]), _flat(g["dfc_p"]), sgn_p, *lanes_p)
    brackets, used, hidden, slack = jax.vmap(_bracket_stage)(g, peak_at.reshape(n, -1), *pair)

    # Newton on every used bracket, its estimate bracketed by probes
    width = used.shape[1]
    lanes = _lanes_of(pair, width)
    noise = jnp.repeat(g["floor"], width)

    def newton(a, c, fa, fc, start, sgn, noise, *lane):
        return newton_bracket(lambda x: _lane_f(x, sgn, *lane), a, c, fa, fc, _ROOT_STEPS, start, noise=noise)

    b_ = {k: _flat(v) for k, v in brackets.items()}
    bracket = on_lanes(newton, _flat(used), (b_["a"], b_["c"], b_["fa"], b_["fc"]), b_["a"], b_["c"], b_["fa"], b_["fc"], b_["start"], b_["sgn"], noise, *lanes)
    bracket = tuple(v.reshape(n, width) for v in bracket)

    # bisection on the _BISECT_LANES widest used brackets of each pair (where Newton stalled)
    live = jnp.where(used, jnp.abs(bracket[1] - bracket[0]), -1.0)
    pick = jax.lax.top_k(live, _BISECT_LANES)[1]
    rows = jnp.arange(n)[:, None]
    chosen = tuple(_flat(v[rows, pick]) for v in (*bracket, brackets["sgn"]))

    def halve(lo, hi, f_lo, f_hi, sgn, *lane):
        return bisect_widest(lambda x, _: _lane_f(x, sgn, *lane)[0], lo, hi, f_lo, f_hi, _BISECTIONS, lo.shape[0], True)

    halved = on_lanes(halve, _flat(used[rows, pick]), chosen[:4], *chosen, *_lanes_of(pair, _BISECT_LANES))
    bracket = tuple(v.at[rows, pick].set(h.reshape(n, _BISECT_LANES)) for v, h in zip(bracket, halved))
    return g, bracket, used, brackets["sgn"], hidden, slack


def _bracket_points(g, bracket, used, sgn, m1, s1, m2, s2, b):
    """One pair (constants): the point each bracket stands for, and the bound on what it holds
    but for the density factor. Each zero stands for its bracket's end on the positive side
    (f > 0): the positive set's masses are then taken between points where f > 0, and what a
    bracket holds is bounded apart — ∫ (p − e^ε q)_+ ≤ ∫ p (1 − e^{−f})_+ ≤ (width) p(t₀)(1 − e^{−F})
    with t₀ the bracket's point nearest the median of p (unimodal) and F = (f(lo) + f(hi))/2 +
    L width/2 ≥ sup f there (L ≥ |f'| on the bracket, below; ≤ 2/b). Issue 17: 8 Newton steps
    left a far-tail crossing (σ ratio 1285) 10⁴ units off; the mass up to it was 5e-5 of the true
    δ. Returns (points, t₀, width·(1 − e^{−F}))."""
    lo_b, hi_b, f_lo_b, f_hi_b = bracket
    ends = jnp.where(f_lo_b > 0, lo_b, hi_b)
    points = jnp.where(used & jnp.isfinite(ends), ends, g["y0"])
    width = jnp.where(used, jnp.abs(hi_b - lo_b), 0.0)
    # |f'| on the bracket: both densities are log-concave, so each log-slope s_k decreases and
    # s_1 − s_2 lies between s_1(hi) − s_2(lo) and s_1(lo) − s_2(hi) (flat tails: nearly 0)
    left, right = jnp.minimum(lo_b, hi_b), jnp.maximum(lo_b, hi_b)
    ends = jnp.stack([left - m1, right - m1, left - m2, right - m2])
    slope_1l, slope_1r, slope_2l, slope_2r = tail_normalized(ends, jnp.stack([s1, s1, s2, s2])[:, None], b, True)[1]
    lip = jnp.maximum(jnp.abs(slope_1r - slope_2l), jnp.abs(slope_1l - slope_2r)) + 1e-12 / b
    tent = jnp.maximum(0.5 * (f_lo_b + f_hi_b) + 0.5 * jnp.minimum(lip, 2.0 / b) * width, 0.0)
    t0 = jnp.clip(jnp.where(sgn > 0, m1, m2), left, right)
    return points, t0, width * -jnp.expm1(-tent)


def _lane_cdfs(x, t0, sgn, m1, s1, m2, s2, b, gradient=False):
    """Per lane: both priors' CDF and survival at the point x, and log p(t₀) of the order's first
    prior, in one gauss_laplace call (one site: compile time); ``gradient``: then, per prior, the
    CDF's ∂/∂b, the density p and its slope p' at x (:func:`jaxpuffer.noise.gauss_laplace`, p from
    its own terms rather than exp(log p), as the mixture evaluator takes it)."""
    out = gauss_laplace(jnp.stack([x - m1, x - m2, t0 - jnp.where(sgn > 0, m1, m2)]), jnp.stack([s1, s2, jnp.where(sgn > 0, s1, s2)]), b, gradient, gradient, gradient)
    log_p, F, S = out[:3]
    extra = (out[3][0], out[3][1], out[5][0], out[4][0], out[5][1], out[4][1]) if gradient else ()
    return (log_p[2], F[0], S[0], F[1], S[1], *extra)


def _laplace_masses(g, points, cdfs, used, sgn, hidden, slack, spread, m1, m2, eps):
    """One pair: (δ for order 1→2, δ for order 2→1) from the CDFs at its crossing points (module
    docstring), with their derivatives in m, s, b, ε (the points themselves are fixed). Where
    ``cdfs`` also holds, per prior, the CDFs' slopes in C parameters at the points (arrays (C,
    points): :func:`_laplace_exact`): ((δ₁₂, δ₂₁), (g₁₂, g₂₁)), g the C slopes and then ∂/∂ε (C + 1,)
    by the envelope theorem — Σ over the positive pieces of ∂[P_i − e^ε P_j](piece) at fixed ends,
    ∂_ε of a piece −e^ε P_j — without differentiating the masses (:func:`pair_delta_and_slope`)."""
    cross = points[: 2 * _ROOTS].reshape(2, _ROOTS)
    cross_ok = g["cross_ok"].reshape(2, _ROOTS)
    flank_l = points[2 * _ROOTS : 2 * _ROOTS + 2 * _PEAKS].reshape(2, _PEAKS)
    flank_r = points[2 * _ROOTS + 2 * _PEAKS :].reshape(2, _PEAKS)
    log_p0, F1, S1, F2, S2 = cdfs[:5]
    with_slope = len(cdfs) > 5
    dF1, dF2 = cdfs[5:] if with_slope else (jnp.zeros_like(F1)[None], jnp.zeros_like(F2)[None])
    held = spread * jnp.exp(log_p0) * (1.0 + 1e-12)
    held = jax.lax.stop_gradient(jnp.where(used & (spread > 0), held, 0.0))
    held = (jnp.sum(jnp.where(sgn > 0, held, 0.0)), jnp.sum(jnp.where(sgn < 0, held, 0.0)))
    e_eps = jnp.exp(eps)

    def interval(a, c, ends_i, ends_j, mu_i, mu_j):
        """[P_i − e^ε P_j](a, c], a bound on its rounding error in ulps (interval_mass), its slopes
        in the C parameters (C, …) and P_j(a, c]; ``ends`` = (F(a), S(a), F(c), S(c), ∂F(a), ∂F(c))
        of each prior, ∂F its slopes (C, …)."""
        p_i, size_i = interval_mass(*ends_i[:4], a, c, mu_i)
        p_j, size_j = interval_mass(*ends_j[:4], a, c, mu_j)
        return p_i - e_eps * p_j, size_i + e_eps * size_j, ends_i[5] - ends_i[4] - e_eps * (ends_j[5] - ends_j[4]), p_j

    out, slopes = [], []
    for k, (mu_i, F_i, S_i, dF_i, mu_j, F_j, S_j, dF_j) in enumerate(((m1, F1, S1, dF1, m2, F2, S2, dF2), (m2, F2, S2, dF2, m1, F1, S1, dF1))):
        c_slice = slice(k * _ROOTS, (k + 1) * _ROOTS)
        ok, x = cross_ok[k], cross[k]
        Fi, Si, Fj, Sj, dFi, dFj = (v[..., c_slice] for v in (F_i, S_i, F_j, S_j, dF_i, dF_j))
        # the positive set: (−∞ or previous crossing, each down-crossing], [last up-crossing, ∞),
        # and the hidden excursions [left flank, right flank]
        first_pos = g["pos_first"][k]
        down = ok & jnp.where(jnp.arange(_ROOTS) % 2 == 0, first_pos, ~first_pos)
        has_prev = jnp.arange(_ROOTS) >= 1
        pi = jnp.maximum(jnp.arange(_ROOTS) - 1, 0)

        def before(v, missing):
            return jnp.where(has_prev, v[..., pi], missing)

        n_ok = jnp.sum(ok)
        last = jnp.maximum(n_ok - 1, 0)

        def from_last(v, missing):
            return jnp.where(n_ok > 0, v[..., last], missing)

        p_slice = slice(2 * _ROOTS + k * _PEAKS, 2 * _ROOTS + (k + 1) * _PEAKS)
        q_slice = slice(2 * _ROOTS + 2 * _PEAKS + k * _PEAKS, 2 * _ROOTS + 2 * _PEAKS + (k + 1) * _PEAKS)
        pieces = [
            (down, interval(before(x, -jnp.inf), x, (before(Fi, 0.0), before(Si, 1.0), Fi, Si, before(dFi, 0.0), dFi),
                            (before(Fj, 0.0), before(Sj, 1.0), Fj, Sj, before(dFj, 0.0), dFj), mu_i, mu_j)),
            (g["pos_last"][k], interval(from_last(x, -jnp.inf), jnp.inf, (from_last(Fi, 0.0), from_last(Si, 1.0), 1.0, 0.0, from_last(dFi, 0.0), 0.0),
                                        (from_last(Fj, 0.0), from_last(Sj, 1.0), 1.0, 0.0, from_last(dFj, 0.0), 0.0), mu_i, mu_j)),
            (hidden[k * _PEAKS : (k + 1) * _PEAKS], interval(flank_l[k], flank_r[k], *((v[p_slice], w[p_slice], v[q_slice], w[q_slice], d[..., p_slice], d[..., q_slice])
                                                                                       for v, w, d in ((F_i, S_i, dF_i), (F_j, S_j, dF_j))), mu_i, mu_j)),
        ]
        total = sum(jnp.sum(jnp.where(mask, jnp.maximum(val, 0.0), 0.0)) for mask, (val, *_) in pieces)
        size = sum(jnp.sum(jnp.where(mask, mag, 0.0)) for mask, (_, mag, *_) in pieces)
        # round up by a bound on the rounding error of the masses and their sums (interval_mass:
        # P_i − e^ε P_j cancels when δ is tiny against the masses), and by the sign floor's slack:
        # δ never comes out too small
        rounding = jnp.finfo(jnp.float64).eps * size
        out.append(jnp.minimum(total + rounding + slack[k] + held[k], 1.0))
        if with_slope:  # (the positive pieces' slopes, each (C, pieces) or (C,), summed per parameter)
            channels = sum(jnp.sum(jnp.where(mask & (val > 0), dval, 0.0).reshape(dF1.shape[0], -1), axis=1) for mask, (val, _, dval, _) in pieces)
            by_eps = -e_eps * sum(jnp.sum(jnp.where(mask & (val > 0), p_j, 0.0)) for mask, (val, _, _, p_j) in pieces)
            slopes.append(jnp.where(out[-1] < 1.0, jnp.append(channels, by_eps), 0.0))
    return ((out[0], out[1]), (slopes[0], slopes[1])) if with_slope else (out[0], out[1])


def _laplace_exact(d_mu, s1, s2, b, eps, gradient=False):
    """Both orders' δ for Laplace noise per pair (1-D arrays), the second prior at 0; L1 (≥ δ) for
    an order whose crossings or peaks exceed the fixed budget. The CDFs are evaluated at the used
    points only (:func:`jaxpuffer._parallel.on_lanes`; 0–4 of a pair's 12 lanes, typically).
    ``gradient``: ((δ₁₂, δ₂₁), (g₁₂, g₂₁)), g (n, 5) the slopes of δ in (b, Δμ, σ_i, σ_j, ε) in
    closed form (:func:`_laplace_masses`; the CDF's slopes in the prior's mean and std are −p and
    σ p', :func:`jaxpuffer.noise.gauss_laplace`), NaN for an order that takes L1, 0 at b = 0."""
    ok = b > 0
    b_safe = jnp.where(ok, b, 1.0)
    m2 = 0.0 * d_mu
    pair = (d_mu, s1, m2, s2, b_safe)
    g, bracket, used, sgn, hidden, slack = _laplace_brackets(*jax.lax.stop_gradient((*pair, eps)))
    points, t0, spread = jax.vmap(_bracket_points)(g, bracket, used, sgn, *jax.lax.stop_gradient(pair))
    n, width = used.shape
    lanes = (_flat(points), _flat(t0), _flat(sgn), *_lanes_of(pair, width))
    zeros, ones = jnp.zeros(n * width), jnp.ones(n * width)
    missing = (zeros, zeros, ones, zeros, ones, *((zeros,) * 6 if gradient else ()))
    cdfs = tuple(v.reshape(n, width) for v in on_lanes(partial(_lane_cdfs, gradient=gradient), _flat(used), missing, *lanes))
    if gradient:  # each prior's CDF slopes in (b, Δμ, σ_i, σ_j) at the points, (n, 4, width): ∂F/∂μ = −p, ∂F/∂σ = σ p'
        log_p0, F1, S1, F2, S2, dF1, dF2, p1, dp1, p2, dp2 = cdfs
        none = jnp.zeros_like(F1)
        cdfs = (log_p0, F1, S1, F2, S2, jnp.stack([dF1, -p1, s1[:, None] * dp1, none], axis=1), jnp.stack([dF2, none, none, s2[:, None] * dp2], axis=1))
    masses = jax.vmap(_laplace_masses)(g, points, cdfs, used, sgn, hidden, slack, spread, d_mu, m2, eps)
    (d12, d21), slopes = masses if gradient else (masses, None)
    fallback = coupling_laplace_closed(d_mu, s1 - s2, b_safe, eps)
    d12, d21 = jnp.where(g["resolved"][:, 0], d12, fallback), jnp.where(g["resolved"][:, 1], d21, fallback)
    zero, zero_rev = _both_orders(_gaussian_exact_one, d_mu, s1, s2, 0.0, eps)
    value = jnp.where(ok, d12, zero), jnp.where(ok, d21, zero_rev)
    if not gradient:
        return value
    # L1's slope is left unknown (NaN: the search's model takes no step from it and its secant
    # does; its JVP cost the search's program 0.7 s of compile for a rare case)
    return value, tuple(jnp.where(ok[:, None], jnp.where(g["resolved"][:, k, None], slopes[k], jnp.nan), 0.0) for k in (0, 1))


# ----------------------------------------------------------------------------- coupling levels


def _coupling_monte_carlo(d_mu, d_sigma, b, eps, noise, key, num_samples, confidence):
    """Sample W = Δμ + Δσ Z; mean of h(W) and an empirical-Bernstein upper bound (h ∈ [0, 1]).

    Upper bound (Audibert, Munos & Szepesvári 2007): mean + √(2 V log(3/α)/n) + 3 log(3/α)/n,
    holding with probability ≥ 1 − α, α = 1 − confidence.
    """
    z = jax.random.normal(key, d_mu.shape + (num_samples,), dtype=jnp.float64)
    w = d_mu[..., None] + d_sigma[..., None] * z
    values = coupling_kernel(noise, b, eps)(w)
    mean = jnp.mean(values, axis=-1)
    var = jnp.var(values, axis=-1)
    log_term = math.log(3.0 / (1.0 - confidence))
    upper = mean + jnp.sqrt(2.0 * var * log_term / num_samples) + 3.0 * log_term / num_samples
    return mean, jnp.minimum(upper, 1.0)


def _indicator(d_mu, d_sigma, b, eps):
    """L2, (18): P(|W| > εb) for W ~ N(Δμ, Δσ²)."""
    s = jnp.abs(d_sigma)
    has_s = s > 0
    s_safe = jnp.where(has_s, s, 1.0)
    c = eps * b
    smooth = ndtr((d_mu - c) / s_safe) + ndtr((-c - d_mu) / s_safe)
    return jnp.where(has_s, jnp.minimum(smooth, 1.0), jnp.where(jnp.abs(d_mu) > c, 1.0, 0.0))


def theorem_delta(delta_mu, delta_sigma, scale, eps):
    """L3 for one pair: 2 Q((εb − |Δμ|)/|Δσ|), capped at 1; for Δσ = 0, 0 if εb ≥ |Δμ| else 1.

    Inverting (5) for δ: b = (|Δμ| + |Δσ| τ*(δ))/ε ⇔ τ*(δ) = (εb − |Δμ|)/|Δσ| ⇔ δ = 2Q(that).
    """
    slack = eps * scale - jnp.abs(delta_mu)
    abs_sigma = jnp.abs(delta_sigma)
    t = slack / jnp.where(abs_sigma > 0, abs_sigma, 1.0)
    tail = jnp.minimum(2.0 * ndtr(-t), 1.0)
    return jnp.where(abs_sigma > 0, tail, jnp.where(slack >= 0, 0.0, 1.0))


# ----------------------------------------------------------------------------- per-pair kernels


def _flat_batch(fn, *arrays):
    """Apply a batch kernel of 1-D arrays (returning a tuple of them) to broadcast arrays of any shape."""
    arrays = jnp.broadcast_arrays(*arrays)
    shape = arrays[0].shape
    out = fn(*(a.reshape(-1) for a in arrays))
    return tuple(o.reshape(shape) for o in out)


def pair_delta(level: str, noise: str, d_mu, s1, s2, b, eps, symmetric, padded=False):
    """δ per pair at one level, as a function of arrays (Δμ = μ_i − μ_j, σ_i, σ_j, b, ε).

    ``symmetric`` (a bool, possibly traced) takes the max over both orders. Used by the public
    functions here and by the calibration solvers (``padded``: the batch's copies of its first pair
    are padding, :func:`jaxpuffer.losses_convolved.gaussian_delta`); no validation.
    """
    if level == "exact":
        if noise == "laplace":
            d12, d21 = _flat_batch(_laplace_exact, d_mu, s1, s2, b, eps)
        elif noise == "gaussian":
            d12, d21 = _both_orders(_gaussian_exact_one, d_mu, s1, s2, b, eps)
        else:  # any other log-concave kernel (GG): certified quadrature and cell enclosure, or the
            # coupling bound where that is lower (both bound δ from above; the enclosure's density
            # bounds, ~1e-4 apart in log p, leave a floor where the priors nearly coincide and ε is
            # small: 1.2e-6 against a true 2.2e-10 for N(0.0704, 1.124²) vs N(0.0708, 1.124²), GG(6.2),
            # ε = 0.0019, which no scale took below a target of 1.9e-24)
            enclosed = losses_convolved.gaussian_delta(noise, d_mu, s1, s2, b, eps, symmetric, prior_delta, padded)
            ok = b > 0  # (the coupling bound at b = 0 is NaN, and its derivative would reach the selected branch's)
            bound = pair_delta("coupling", noise, d_mu, s1, s2, jnp.where(ok, b, 1.0), eps, symmetric)
            return jnp.where(ok, jnp.minimum(enclosed, bound), enclosed)
        return jnp.where(symmetric, jnp.maximum(d12, d21), d12)
    d_sigma = s1 - s2
    if level == "coupling":
        if noise == "laplace":
            return coupling_laplace_closed(d_mu, d_sigma, b, eps)
        d_mu, d_sigma, b, eps = jnp.broadcast_arrays(d_mu, d_sigma, b, eps)
        return coupling_quadrature(d_mu, d_sigma, b, eps, noise)
    if level == "indicator":
        return _indicator(d_mu, d_sigma, b, eps)
    return theorem_delta(d_mu, d_sigma, b, eps)


def pair_delta_and_slope(level: str, noise: str, d_mu, s1, s2, b, eps, symmetric):
    """(δ, G) per pair, δ as :func:`pair_delta` (the exact search's value) and G (n, 5) its slopes
    in (b, Δμ, σ_i, σ_j, ε), where they have a closed form; else None (the search then takes the
    JVP of δ in b, :func:`jaxpuffer.families.delta_and_slope`). Inputs broadcast to one axis of
    pairs. The exact level under Laplace noise takes the slopes in closed form (the envelope theorem
    on the CDFs' slopes at the crossing points: in b, :func:`jaxpuffer.noise.gauss_laplace`; in the
    prior's mean and std, −p and σ p'), so that the search's program holds no derivative of the
    evaluator (a cold first exact-level call of 3 pairs, runs alternating with the JVP's: 19.6,
    20.5, 21.1 -> 16.8, 18.1, 17.7 CPU-s; warm, 4,096 pairs: 0.33 -> 0.30 s at (1, 1e-6), 0.39 ->
    0.35 s at (0.3, 1e-3), the same scales), and an eager ``jax.grad`` of a calibration takes its
    implicit derivative from the search's own program, with no JVP of its own
    (:func:`jaxpuffer.calibration._slopes_by_search`). Against the JVP of δ (4,096 random pairs, b
    from 0.3 to 1.5 times b_pure): the same δ bit for bit, d log δ / d log b within 1e-8 relative
    (the JVP also differentiates δ's rounding allowance). An order whose δ is the L1 fallback has
    slopes NaN: the model takes no step from it."""
    if level != "exact" or noise != "laplace":
        return None
    d_mu, s1, s2, b, eps = (a.reshape(-1) for a in jnp.broadcast_arrays(d_mu, s1, s2, b, eps))
    (d12, d21), (g12, g21) = _laplace_exact(d_mu, s1, s2, b, eps, gradient=True)
    second = symmetric & (d21 > d12)
    return jnp.where(symmetric, jnp.maximum(d12, d21), d12), jnp.where(second[:, None], g21, g12)


def _pair_delta_program(static, d_mu, s1, s2, b, eps, symmetric):
    level, noise, padded = static
    return pair_delta(level, noise, d_mu, s1, s2, b, eps, symmetric, padded)


# the public δ functions' programs, static (level, noise, ..., padded) first, kept on disk (jaxpuffer._cache)
_pair_delta_jit = ExportedJit(_pair_delta_program)
_LANES_PER_CALL = 16384  # the most lanes in one batch of a public δ function (calibrate's default chunk_size)


def _on_buckets(jitted, static, lanes, symmetric, shape=None):
    """``jitted((*static, padded), *lanes, symmetric)``, per lane of ``lanes`` (arrays with one
    leading batch axis). Concrete lanes run in batches of at most ``_LANES_PER_CALL``, each padded
    with copies of its first lane to the sizes ``calibrate`` pads to
    (:func:`jaxpuffer._parallel.bucket`: 64, 128, 256, ... lanes): calls with 1, 3 or 50 pairs
    share one compiled program instead of compiling one each (15–25 s for a mixture or GG
    evaluator on a 2-core CPU), and every pair is evaluated in a full vector lane group, as in a
    calibration. Traced lanes (``jit``, ``vmap``, ``grad`` around the call) run as they are. The
    result is reshaped to ``shape`` (None: one axis of lanes)."""
    n = lanes[0].shape[0]
    shape = (n,) if shape is None else shape
    if n == 0 or not all(_validate.is_concrete(a) for a in lanes):
        return jitted((*static, False), *lanes, symmetric).reshape(shape)
    lanes = [np.asarray(a) for a in lanes]
    parts = []
    for start in range(0, n, _LANES_PER_CALL):
        idx = np.arange(start, min(start + _LANES_PER_CALL, n))
        batch = _parallel.pad_take(lanes, idx, _parallel.bucket(idx.size, _LANES_PER_CALL))
        parts.append(np.asarray(jitted((*static, True), *batch, symmetric))[: idx.size])
    return jax.device_put(np.concatenate(parts).reshape(shape))


def _on_pair_lanes(jitted, static, arrays, symmetric, shape):
    """:func:`_on_buckets` of ``arrays`` (batch shape ``shape``, then per-lane axes), reshaped to ``shape``."""
    flat = [jnp.reshape(a, (-1,) + jnp.shape(a)[len(shape):]) for a in arrays]
    return _on_buckets(jitted, static, flat, symmetric, shape)


# ----------------------------------------------------------------------------- public API


def _discrete_delta_program(static, x, p, q, b, eps, symmetric):
    level, noise, _ = static  # (every lane is evaluated: padded or not)
    return discrete_delta(level, noise, x, p, q, b, eps, symmetric)


_discrete_delta_jit = ExportedJit(_discrete_delta_program)


def _noise_key(noise):
    """The evaluators' static key for ``noise`` (a kernel name or object: its name, or a GG kernel
    with a concrete p)."""
    return kernels.resolve(noise).calibration_key()


def _prepare_discrete(pairs, scale, eps):
    """(x, p, q, b, ε) of discrete pairs, broadcast to one batch shape, validated."""
    scale = _validate.float_array("scale", scale)
    _validate.nonnegative("scale", scale)
    eps = _validate.epsilon(eps)
    shape = _validate.broadcast_shapes(pairs=pairs.batch_shape, scale=scale.shape, eps=eps.shape)
    x, p, q = (jnp.broadcast_to(a, shape + a.shape[-1:]) for a in discrete_arrays(pairs))  # the width calibrate compiles for
    return x, p, q, jnp.broadcast_to(scale, shape), jnp.broadcast_to(eps, shape)


def _is_mixture(pairs) -> bool:
    return isinstance(pairs, PairSet) and isinstance(pairs.first, GaussianMixture)


def _mixture_delta_program(static, *lanes):
    level, noise, with_zero, padded = static
    *params, b, eps, symmetric = lanes
    params = tuple(params)
    ok = b > 0
    value = mixture_delta(level, noise, params, jnp.where(ok, b, 1.0), eps, symmetric, padded)
    if not with_zero:
        return value
    return jnp.where(ok, value, mixture_delta_at_zero(params, eps, symmetric))


_mixture_delta_jit = ExportedJit(_mixture_delta_program)


def _mixture_lanes(level, pairs, scale, eps, weights):
    """(params, b, ε, batch shape) of GaussianMixture pairs as flat lanes (the mixture family's
    parameter layout, :func:`jaxpuffer.losses_mixture.mixture_params`), validated."""
    scale = _validate.float_array("scale", scale)
    (_validate.nonnegative if level == "exact" else _validate.positive)("scale", scale)
    eps = _validate.epsilon(eps)
    shape = _validate.broadcast_shapes(pairs=pairs.batch_shape, scale=scale.shape, eps=eps.shape)
    plan = gmm_coupling(pairs, cost="w2") if weights is None else weights
    params = mixture_params(pairs, plan)
    lead = pairs.batch_shape
    params = tuple(jnp.broadcast_to(a.reshape(lead + a.shape[1:]), shape + a.shape[1:]).reshape((-1,) + a.shape[1:]) for a in params)
    b, e = (jnp.broadcast_to(x, shape).reshape(-1) for x in (scale, eps))
    return params, b, e, shape


def _mixture_on_lanes(level, noise, params, b, e, symmetric, shape):
    with_zero = not (_validate.is_concrete(b) and bool(jnp.all(b > 0)))
    return _on_buckets(_mixture_delta_jit, (level, _noise_key(noise), with_zero), (*params, b, e), symmetric, shape)


def _mixture_public(level, pairs, scale, eps, noise, weights):
    """δ of GaussianMixture pairs at one level, broadcast over pairs, scale and ε."""
    *lanes, shape = _mixture_lanes(level, pairs, scale, eps, weights)
    return _mixture_on_lanes(level, noise, *lanes, pairs.symmetric, shape)


def _is_discrete(pairs) -> bool:
    return isinstance(pairs, PairSet) and isinstance(pairs.first, Discrete)


def _prepare(pairs, scale, eps):
    pairs = _gaussian_pairs(pairs, "the privacy-loss functions")
    scale = _validate.float_array("scale", scale)
    _validate.nonnegative("scale", scale)
    eps = _validate.epsilon(eps)
    shape = _validate.broadcast_shapes(pairs=pairs.batch_shape, scale=scale.shape, eps=eps.shape)
    d_mu = pairs.first.mean - pairs.second.mean
    return pairs, [jnp.broadcast_to(a, shape) for a in (d_mu, pairs.first.std, pairs.second.std, scale, eps)]


def exact_lanes(pairs, scale, eps, weights=None):
    """The inputs of the exact δ of ``pairs`` at ``scale`` and ``eps`` (validated), as flat lanes:
    (the prior family's name, its per-lane parameters in the layout of
    :mod:`jaxpuffer.families` — the mixture plan ``weights``, default the W2 plan, included —
    b, ε, the broadcast batch shape)."""
    if _is_mixture(pairs):
        return ("mixture", *_mixture_lanes("exact", pairs, scale, eps, weights))
    if _is_discrete(pairs):
        args, family = _prepare_discrete(pairs, scale, eps), "discrete"
    else:
        args, family = _prepare(pairs, scale, eps)[1], "gaussian"
    shape = args[-1].shape
    *params, b, e = (jnp.reshape(a, (-1,) + jnp.shape(a)[len(shape):]) for a in args)
    return family, tuple(params), b, e, shape


def exact_on_lanes(family, noise, params, b, e, symmetric, shape):
    """The exact δ of lanes from :func:`exact_lanes` under ``noise``'s own evaluator, by this
    module's programs (any inputs: traced ones run as they are), reshaped to ``shape``."""
    if family == "mixture":
        return _mixture_on_lanes("exact", noise, params, b, e, symmetric, shape)
    jitted = _discrete_delta_jit if family == "discrete" else _pair_delta_jit
    return _on_buckets(jitted, ("exact", _noise_key(noise)), (*params, b, e), symmetric, shape)


def _delta_exact(pairs, scale, eps, noise, weights):
    """:func:`delta_exact` by ``noise``'s own evaluator (no equivalent kernel is taken)."""
    family, params, b, e, shape = exact_lanes(pairs, scale, eps, weights)
    return exact_on_lanes(family, noise, params, b, e, pairs.symmetric, shape)


def delta_coupling(
    pairs: PairSet,
    scale,
    eps,
    *,
    noise: str = "laplace",
    method: str = "closed",
    key=None,
    num_samples: int = 100_000,
    confidence: float = 0.999,
    weights=None,
):
    """L1: the Monge-coupling bound (35), U1(b) = E[h(|W|)], W = x − T(x) ~ N(Δμ, Δσ²).

    h(w) = (1 − e^{ε − w/b})_+ for Laplace noise; for Gaussian noise h(w) is the analytic Gaussian
    mechanism's δ at shift w (the same coupling argument, Appendix E); for any other kernel of
    :mod:`jaxpuffer.noise` (``noise=jp.noise.GeneralizedGaussian(p)``, p ≥ 1) its shift δ. Methods:

    * ``"closed"`` — Laplace only, MATH.md §6's closed form;
    * ``"quadrature"`` — composite Gauss–Legendre (16 × 16 nodes) in (W − Δμ)/|Δσ| on each side
      of the region where h vanishes;
    * GaussianMixture pairs (``"closed"``, either noise): the bound (24) of the GMM plan (12),
      Σ w_ml U1_ml (U1 in closed form for Laplace, by quadrature for Gaussian noise), with
      ``weights`` a :class:`jaxpuffer.couplings.ComponentPlan` (default: the paper's w*,
      ``jp.gmm_coupling(pairs, cost="w2")``);
    * Discrete pairs: the bound of the quantile plan π*, Σ π*(x, x') h(|x − x'|), ``"closed"``
      only (any noise);
    * ``"monte_carlo"`` — ``num_samples`` draws of W (``key`` required); returns
      ``(estimate, upper)``, ``upper`` an empirical-Bernstein bound at ``confidence``.
    """
    _validate.choice("method", method, COUPLING_METHODS)
    if _is_mixture(pairs):
        if method != "closed":
            raise ValueError("method must be 'closed' for GaussianMixture pairs (a finite sum over the plan's cells)")
        return _mixture_public("coupling", pairs, scale, eps, noise, weights)
    if _is_discrete(pairs):
        if method != "closed":
            raise ValueError("method must be 'closed' for Discrete pairs (the plan's finite sum is exact)")
        x, p, q, b, e = _prepare_discrete(pairs, scale, eps)
        return _on_pair_lanes(_discrete_delta_jit, ("coupling", _noise_key(noise)), (x, p, q, b, e), pairs.symmetric, b.shape)
    noise = _noise_key(noise)
    pairs, (d_mu, s1, s2, b, eps) = _prepare(pairs, scale, eps)
    _validate.positive("scale", b)
    if method == "closed":
        if noise != "laplace":
            raise ValueError(f"method 'closed' is for Laplace noise; use method='quadrature' for {noise} noise")
        return _coupling_closed_jit(d_mu, s1 - s2, b, eps)
    if method == "quadrature":
        return _coupling_quadrature_jit(d_mu, s1 - s2, b, eps, noise)
    if key is None:
        raise ValueError("key is required for method='monte_carlo' (a jax.random key)")
    if not isinstance(num_samples, int) or num_samples < 2:
        raise ValueError(f"num_samples must be an integer >= 2; got {num_samples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    return _coupling_monte_carlo(d_mu, s1 - s2, b, eps, noise, key, num_samples, confidence)


def delta_probabilistic(pairs: PairSet, scale, eps) -> jax.Array:
    """The δ of the Kantorovich paper's δ-approximation (its Theorem 3), Gaussian noise std θ.

    max over orders of P_{Y∼p_i}(log p_i(Y)/p_j(Y) > ε): the probability that the privacy loss
    exceeds ε, which Theorem 3's proof bounds by δ. It is ≥ the set-based δ of Definition 1
    (:func:`delta_exact`), which subtracts e^ε P_j of the same set. Discrete pairs only.
    (The paper's display, p_i(y) − δ ≤ e^ε p_j(y) pointwise, compares a δ with *densities*; its
    proof controls this probability instead, which is what is computed.)
    """
    if not _is_discrete(pairs):
        raise ValueError("pairs must hold Discrete priors for delta_probabilistic")
    x, p, q, b, eps = _prepare_discrete(pairs, scale, eps)
    return _probabilistic_jit(x, p, q, b, eps, pairs.symmetric)


_probabilistic_jit = jax.jit(discrete_probabilistic)
# the public coupling bounds as one compiled program each (eagerly, op by op, a first call compiled
# 120 small programs in 4.2 s)
_coupling_closed_jit = jax.jit(coupling_laplace_closed)
_coupling_quadrature_jit = jax.jit(coupling_quadrature, static_argnums=4)


def delta_indicator(pairs: PairSet, scale, eps) -> jax.Array:
    """L2: the indicator bound (18), P(|W| > εb), W ~ N(Δμ, Δσ²) (Laplace noise)."""
    pairs, (d_mu, s1, s2, b, eps) = _prepare(pairs, scale, eps)
    return _indicator(d_mu, s1 - s2, b, eps)


def delta_theorem(pairs: PairSet, scale, eps) -> jax.Array:
    """L3 (Theorem 1, eq. (5) inverted): the δ certified at Laplace scale ``scale`` per pair."""
    pairs, (d_mu, s1, s2, b, eps) = _prepare(pairs, scale, eps)
    return theorem_delta(d_mu, s1 - s2, b, eps)
