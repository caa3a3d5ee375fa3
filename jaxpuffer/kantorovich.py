"""Closed-form calibrations of the Kantorovich paper (``papers/001_*``, MATH.md §8), discrete priors.

The noise N_θ of the exponential mechanism has density ∝ e^{−η(θ) d(z)}; Laplace is η(θ) = 1/θ,
d = |z| (the default everywhere: ``eta_inverse=None`` means η⁻¹(v) = 1/v). Every function works
per pair on the Kantorovich plan π* (:func:`jaxpuffer.quantile_plan`), batched over pairs, and
returns the per-pair scale; the calibrated scale is their maximum.

* :func:`theorem1` — Lemma 1 / Theorem 1, eq. (10): θ = η⁻¹(ε / Δ_π*), Δ_π* = max d(x − x') on
  the support of π*. ε-pufferfish private (δ = 0).
* :func:`theorem2` — the relaxed condition (14)–(16), per line of the plan:
  Σ_x π*(x, x') (e^{η d(x − x')} − e^ε) ≤ 0 for each column x' and Σ_{x'} π*(x, x')(…) ≤ 0 for
  each row x (the paper's (16) sums over both x and x', an erratum: each line is its own
  equation). The largest η meeting every line is found by Newton steps; θ = η⁻¹ of it. δ = 0.
* :func:`theorem3` — Gaussian noise, the paper's δ-approximation: (a) θ ≥ √(2 ln(1.25/δ)) Δ/ε for
  ε ≤ 1; (b) θ = cΔ/ε, c = kδ^{-1/3} + √(k²δ^{-2/3} + ε/2), with the paper's k = 0.41 or the
  constant its derivation gives, k = ½ (2/e)^{1/3} (2/π)^{1/6} = 0.418648… (``constant=
  "corrected"``, the default: 0.41 is slightly below it, so the paper's c is slightly too small).
* :func:`lemma2` — separable deterministic queries (V independent users): θ_i = η⁻¹(ε / Δ_f(𝕊_i)),
  Δ_f(𝕊_i) = max_a f_i(a) − min_a f_i(a), whatever the prior.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from .couplings import DEFAULT_ATOL, _discrete_pairs, _metric, check_atol, vmap_pairs
from .pairs import PairSet

THEOREM3_CONSTANTS = {"paper": 0.41, "corrected": 0.5 * (2.0 / math.e) ** (1.0 / 3.0) * (2.0 / math.pi) ** (1.0 / 6.0)}
_ROUND_UP = 1.0 + 2.0**-49
_NEWTON_STEPS = 12
_EPS64 = float(np.finfo(np.float64).eps)


def _laplace_eta_inverse(eta):
    return 1.0 / eta


def _eta_inverse(eta_inverse) -> Callable:
    if eta_inverse is None:
        return _laplace_eta_inverse
    if not callable(eta_inverse):
        raise ValueError(f"eta_inverse must be a callable η⁻¹ or None (Laplace); got {eta_inverse!r}")
    return eta_inverse


def _arrays(pairs: PairSet, caller: str, atol: float):
    pairs = _discrete_pairs(pairs, caller)
    return pairs.first.support, pairs.first.probs, pairs.second.probs, check_atol(atol)


@partial(jax.jit, static_argnames="metric")
def sensitivity(x, p, q, atol, metric="l1"):
    """Δ_π* = max d(x − x') over the cells of π* with mass > atol, per pair (arrays with the atoms
    on the last axis; no validation): the staircase of :func:`_staircase`, O(n log n) per pair."""
    return vmap_pairs(lambda x, p, q: _max_on_support(*_staircase(x, p, q, atol, metric)[2:]), x, p, q)


def _max_on_support(mass, dist):
    return jnp.max(jnp.where(mass > 0, dist, 0.0))


def _eta_theorem1(eps, sensitivity):
    return jnp.where(sensitivity > 0, eps / jnp.where(sensitivity > 0, sensitivity, 1.0), jnp.inf)


def _scale_from_eta(eta, eta_inverse):
    """θ = η⁻¹(η) rounded up a few ulps; η = ∞ (no constraint) gives θ = 0."""
    finite = jnp.isfinite(eta)
    theta = eta_inverse(jnp.where(finite, eta, 1.0)) * _ROUND_UP
    return jnp.where(finite, theta, 0.0)


def theorem1(pairs: PairSet, eps, *, metric="l1", eta_inverse=None, atol: float = DEFAULT_ATOL) -> jax.Array:
    """Kantorovich paper, Theorem 1 / Lemma 1, eq. (10): θ = η⁻¹(ε / max_{supp π*} d(x − x')).

    Laplace (default): θ = Δ_π*/ε. Pairs whose plan has no off-diagonal mass (identical priors)
    need no noise: θ = 0. Returns θ per pair, shape ``pairs.batch_shape``.
    """
    eps = _validate.epsilon(eps)
    eta_inverse = _eta_inverse(eta_inverse)
    spread = sensitivity(*_arrays(pairs, "kantorovich.theorem1", atol), metric=metric)
    return theorem1_scale(spread, eps, eta_inverse)


@partial(jax.jit, static_argnames="eta_inverse")
def theorem1_scale(spread, eps, eta_inverse=_laplace_eta_inverse):
    """θ = η⁻¹(ε / Δ) rounded up (θ = 0 where Δ = 0), per pair, from the sensitivity Δ_π* (no
    validation; one compiled program, not one per operation)."""
    return _scale_from_eta(_eta_theorem1(eps, spread), eta_inverse)


def _lines_eta(mass, dist, line, num_lines, eps):
    """Per line of π*, the largest η with Σ_k m_k e^{η d_k} ≤ e^ε Σ_k m_k (sums over the cells k of
    the line; ``line`` gives each cell's line, distances d ≥ 0).

    In log form h(η) = log Σ m_k e^{η d_k} − ε − log Σ m_k ≤ 0, with h convex (a log-sum-exp of
    affine functions) and increasing. At lo = ε / max d, h ≤ 0 (Theorem 1's point); at
    hi = (ε + log(Σ m / m_far)) / d_max, h ≥ 0 (the far cells alone reach e^ε Σ m). Newton steps
    from hi decrease monotonically to the root η* (convexity); the last iterate η_k ≥ η* gives the
    feasible η_k − h(η_k)/h'(lo) ≤ η*, as h' ≥ h'(lo) on [η*, η_k]; it is checked (h ≤ 0, else lo)
    before use. A line with no mass off d = 0 gives η = ∞ (no constraint).
    """
    seg = partial(jax.ops.segment_sum, segment_ids=line, num_segments=num_lines)
    seg_max = partial(jax.ops.segment_max, segment_ids=line, num_segments=num_lines)
    far = mass > 0
    d_max = jnp.maximum(seg_max(jnp.where(far, dist, 0.0)), 0.0)
    log_total = jnp.log(jnp.maximum(seg(mass), 1e-300))
    m_far = seg(jnp.where(far & (dist == d_max[line]), mass, 0.0))
    constrained = d_max > 0
    d_safe = jnp.where(constrained, d_max, 1.0)
    lo = eps / d_safe
    hi = (eps + log_total - jnp.log(jnp.where(constrained, m_far, 1.0))) / d_safe
    log_mass = jnp.where(far, jnp.log(jnp.where(far, mass, 1.0)), -jnp.inf)

    def h_and_slope(eta):
        terms = log_mass + eta[line] * dist
        top = seg_max(terms)
        top = jnp.where(jnp.isfinite(top), top, 0.0)
        weights = jnp.exp(terms - top[line])
        total = seg(weights)
        safe = jnp.where(total > 0, total, 1.0)
        return top + jnp.log(safe) - eps - log_total, seg(weights * dist) / safe

    def newton(_, eta):
        h, slope = h_and_slope(eta)
        return jnp.maximum(eta - h / jnp.where(slope > 0, slope, 1.0), lo)

    upper = jax.lax.fori_loop(0, _NEWTON_STEPS, newton, hi)
    h_up, _ = h_and_slope(upper)
    _, slope_lo = h_and_slope(lo)
    candidate = jnp.maximum(upper - jnp.maximum(h_up, 0.0) / jnp.where(slope_lo > 0, slope_lo, 1.0), lo)
    candidate = candidate * (1.0 - 4 * _EPS64)
    feasible = h_and_slope(candidate)[0] <= 0
    return jnp.where(constrained, jnp.where(feasible, candidate, lo), jnp.inf)


def _staircase(x, p, q, atol, metric):
    """The ≤ 2n cells of π* for one pair, without the n × n grid: the merged quantile breakpoints
    of F_p and F_q cut [0, 1] into intervals, each the mass of one cell (row, col) — the same
    overlaps as :func:`jaxpuffer.couplings.quantile_masses`. Returns (row, col, mass, distance)."""
    n = p.shape[-1]
    f, g = jnp.cumsum(p).at[-1].set(1.0), jnp.cumsum(q).at[-1].set(1.0)
    cuts = jnp.sort(jnp.concatenate([f, g]))
    start = jnp.concatenate([jnp.zeros(1, cuts.dtype), cuts[:-1]])
    width = cuts - start
    mid = start + 0.5 * width
    row = jnp.clip(jnp.searchsorted(f, mid, side="left"), 0, n - 1)
    col = jnp.clip(jnp.searchsorted(g, mid, side="left"), 0, n - 1)
    return row, col, jnp.where(width > atol, width, 0.0), _metric(metric)(x[row] - x[col])


def theorem2(pairs: PairSet, eps, *, metric="l1", eta_inverse=None, atol: float = DEFAULT_ATOL) -> jax.Array:
    """Kantorovich paper, Theorem 2 (relaxed condition), eqs. (14)–(16), per pair.

    For every column x' and every row x of π*, the largest η(θ) with
    Σ π*(x, x') e^{η d(x − x')} ≤ e^ε × (the line's mass) is found by monotone Newton steps with a
    verified feasible end (vmapped over lines and pairs); θ = η⁻¹ of the smallest such η over all lines, rounded up. Lines with mass only at
    d = 0 give no constraint. Laplace on Table 1 gives θ = 1/ln(2e^ε − 1). Always ≤ Theorem 1.
    """
    eps = _validate.epsilon(eps)
    eta_inverse = _eta_inverse(eta_inverse)
    return _scale_from_eta(_theorem2_eta(*_arrays(pairs, "kantorovich.theorem2", atol), eps, metric=metric), eta_inverse)


@partial(jax.jit, static_argnames="metric")
def _theorem2_eta(x, p, q, atol, eps, metric):
    """min over the lines (rows and columns) of π* of the largest feasible η, per pair."""

    def one(x, p, q, eps):
        n = p.shape[-1]
        row, col, mass, dist = _staircase(x, p, q, atol, metric)
        both = jnp.concatenate([_lines_eta(mass, dist, row, n, eps), _lines_eta(mass, dist, col, n, eps)])
        return jnp.min(both)

    return vmap_pairs(one, x, p, q, eps)


def theorem3(pairs: PairSet, eps, delta, *, part: str = "b", constant: str = "corrected", atol: float = DEFAULT_ATOL):
    """Kantorovich paper, Theorem 3: the Gaussian noise std θ for the δ-approximation of
    ε-pufferfish privacy (with probability ≥ 1 − δ the log density ratio is within ±ε).

    part ``"a"``: θ = √(2 ln(1.25/δ)) Δ/ε, valid for ε ≤ 1 only. part ``"b"``: θ = cΔ/ε with
    c = kδ^{-1/3} + √(k²δ^{-2/3} + ε/2); ``constant`` ``"paper"`` (k = 0.41) or ``"corrected"``
    (k = 0.418648…, what the proof's (2/e)^{1/3}(2/π)^{1/6}/2 gives). Δ = Δ_π* in ℓ1.
    """
    _validate.choice("part", part, ("a", "b"))
    _validate.choice("constant", constant, tuple(THEOREM3_CONSTANTS))
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta)
    if part == "a" and _validate.is_concrete(eps) and np.any(np.asarray(eps) > 1.0):
        raise ValueError("eps must be <= 1 for Theorem 3(a); use part='b' for larger eps")
    spread = sensitivity(*_arrays(pairs, "kantorovich.theorem3", atol))
    if part == "a":
        c = jnp.sqrt(2.0 * jnp.log(1.25 / delta))
    else:
        k = THEOREM3_CONSTANTS[constant] * delta ** (-1.0 / 3.0)
        c = k + jnp.sqrt(k**2 + eps / 2.0)
    return c * spread / eps * _ROUND_UP


def lemma2(query_values, eps, *, eta_inverse=None) -> jax.Array:
    """Kantorovich paper, Lemma 2, separable query f(s) = Σ_i f_i(s_i) over V independent users.

    Args:
      query_values: f_i(a) for each user i (rows) and each value a of its alphabet (columns).
      eps: ε > 0.

    Returns θ_i = η⁻¹(ε / Δ_f(𝕊_i)) per user, Δ_f(𝕊_i) = max_a f_i(a) − min_a f_i(a); it attains
    (ε, 𝕊_i ∪ 𝕊_⊥i)-pufferfish privacy for every prior (counting query: Δ = 1, θ = 1/ε).
    """
    values = _validate.float_array("query_values", query_values)
    if values.ndim != 2 or values.shape[1] < 1:
        raise ValueError(f"query_values must be a 2-D array (users, values); got shape {values.shape}")
    eps = _validate.epsilon(eps)
    sensitivity = jnp.max(values, axis=1) - jnp.min(values, axis=1)
    eta = jnp.where(sensitivity > 0, eps / jnp.where(sensitivity > 0, sensitivity, 1.0), jnp.inf)
    return _scale_from_eta(eta, _eta_inverse(eta_inverse))
