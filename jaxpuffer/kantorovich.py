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
  equation). The largest η meeting every line is found by bisection; θ = η⁻¹ of it. δ = 0.
* :func:`theorem3` — Gaussian noise, the paper's δ-approximation: (a) θ ≥ √(2 ln(1.25/δ)) Δ/ε for
  ε ≤ 1; (b) θ = cΔ/ε, c = kδ^{-1/3} + √(k²δ^{-2/3} + ε/2), with the paper's k = 0.41 or the
  constant its derivation gives, k = ½ (2/e)^{1/3} (2/π)^{1/6} = 0.418648… (``constant=
  "corrected"``, the default: 0.41 is slightly below it, so the paper's c is slightly too small).
* :func:`lemma2` — separable deterministic queries (V independent users): θ_i = η⁻¹(ε / Δ_f(𝕊_i)),
  Δ_f(𝕊_i) = max_a f_i(a) − min_a f_i(a), whatever the prior.
"""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from .couplings import DEFAULT_ATOL, _discrete_pairs, check_atol, quantile_masses, support_distance
from .pairs import PairSet

THEOREM3_CONSTANTS = {"paper": 0.41, "corrected": 0.5 * (2.0 / math.e) ** (1.0 / 3.0) * (2.0 / math.pi) ** (1.0 / 6.0)}
_ROUND_UP = 1.0 + 2.0**-49
_BISECTION_STEPS = 200


def _laplace_eta_inverse(eta):
    return 1.0 / eta


def _eta_inverse(eta_inverse) -> Callable:
    if eta_inverse is None:
        return _laplace_eta_inverse
    if not callable(eta_inverse):
        raise ValueError(f"eta_inverse must be a callable η⁻¹ or None (Laplace); got {eta_inverse!r}")
    return eta_inverse


def _plan(pairs: PairSet, caller: str, atol: float):
    pairs = _discrete_pairs(pairs, caller)
    mass = quantile_masses(pairs.first.probs, pairs.second.probs)
    return pairs, jnp.where(mass > check_atol(atol), mass, 0.0)


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
    pairs, mass = _plan(pairs, "kantorovich.theorem1", atol)
    dist = support_distance(pairs.first.support, metric)
    sensitivity = jnp.max(jnp.where(mass > 0, dist, 0.0), axis=(-2, -1))
    eta = jnp.where(sensitivity > 0, eps / jnp.where(sensitivity > 0, sensitivity, 1.0), jnp.inf)
    return _scale_from_eta(eta, eta_inverse)


def _line_eta(mass, dist, eps):
    """Largest η with Σ_k m_k (e^{η d_k} − e^ε) ≤ 0 on one line (a vector of masses m, distances d).

    At η = ε / max d every term is ≤ 0 (Theorem 1's point), and the line sum is ≥
    m_far e^{η d_max} − e^ε Σ m, which is > 0 beyond η = (ε + log(Σ m / m_far)) / d_max: the root
    lies between. Bisection keeps the feasible end. A line with no mass off d = 0 gives η = ∞.
    """
    far = mass > 0
    d_max = jnp.max(jnp.where(far, dist, 0.0))
    total = jnp.sum(mass)
    m_far = jnp.sum(jnp.where(far & (dist == d_max), mass, 0.0))
    constrained = d_max > 0
    d_safe = jnp.where(constrained, d_max, 1.0)
    lo = eps / d_safe
    hi = (eps + jnp.log(jnp.where(constrained, total / m_far, 1.0))) / d_safe * (1.0 + 1e-12) + 1e-300
    e_eps = jnp.exp(eps)

    def excess(eta):
        return jnp.sum(mass * (jnp.exp(eta * dist) - e_eps))

    def step(_, bracket):
        a, c = bracket
        mid = 0.5 * (a + c)
        ok = excess(mid) <= 0
        return jnp.where(ok, mid, a), jnp.where(ok, c, mid)

    lo, _ = jax.lax.fori_loop(0, _BISECTION_STEPS, step, (lo, hi))
    return jnp.where(constrained, lo, jnp.inf)


def theorem2(pairs: PairSet, eps, *, metric="l1", eta_inverse=None, atol: float = DEFAULT_ATOL) -> jax.Array:
    """Kantorovich paper, Theorem 2 (relaxed condition), eqs. (14)–(16), per pair.

    For every column x' and every row x of π*, the largest η(θ) with
    Σ π*(x, x') e^{η d(x − x')} ≤ e^ε × (the line's mass) is found by bisection (vmapped over lines
    and pairs); θ = η⁻¹ of the smallest such η over all lines, rounded up. Lines with mass only at
    d = 0 give no constraint. Laplace on Table 1 gives θ = 1/ln(2e^ε − 1). Always ≤ Theorem 1.
    """
    eps = _validate.epsilon(eps)
    eta_inverse = _eta_inverse(eta_inverse)
    pairs, mass = _plan(pairs, "kantorovich.theorem2", atol)
    dist = support_distance(pairs.first.support, metric)
    n = mass.shape[-1]
    batch = mass.shape[:-2]
    eps_b = jnp.broadcast_to(eps, batch)
    cols = jnp.swapaxes(mass, -1, -2), jnp.swapaxes(dist, -1, -2)  # line k = column x'_k
    lines_mass = jnp.concatenate([cols[0], mass], axis=-2).reshape(-1, n)
    lines_dist = jnp.concatenate([cols[1], dist], axis=-2).reshape(-1, n)
    eps_lines = jnp.repeat(eps_b.reshape(-1), 2 * n)
    eta = jax.vmap(_line_eta)(lines_mass, lines_dist, eps_lines).reshape(batch + (2 * n,))
    return _scale_from_eta(jnp.min(eta, axis=-1), eta_inverse)


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
    pairs, mass = _plan(pairs, "kantorovich.theorem3", atol)
    dist = support_distance(pairs.first.support)
    sensitivity = jnp.max(jnp.where(mass > 0, dist, 0.0), axis=(-2, -1))
    if part == "a":
        c = jnp.sqrt(2.0 * jnp.log(1.25 / delta))
    else:
        k = THEOREM3_CONSTANTS[constant] * delta ** (-1.0 / 3.0)
        c = k + jnp.sqrt(k**2 + eps / 2.0)
    return c * sensitivity / eps * _ROUND_UP


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
