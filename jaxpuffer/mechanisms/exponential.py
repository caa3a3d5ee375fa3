"""The exponential mechanism and its GG form (GG paper, Section 3: Definition 6, Lemmas 7–9).

Definition 6 releases s* with probability ∝ exp(u(s*|x) ε/(2Δ_u)), Δ_u the utility's sensitivity.

* **Lemma 7**: its actual privacy cost max |log P(s*|x) − log P(s*|x')| is below ε, and is ε/2 (for
  a utility change of Δ_u) when the normaliser A(x) does not depend on x —
  :func:`privacy_cost` computes it on a finite output set.
* **Lemma 8**: with u = −‖s* − s‖_p^p the mechanism is the GG(s, b, p) mechanism with
  b^p = 2Δ_u/ε (:func:`gg_scale`).
* **Lemma 9**: bounds on Δ_u for bounded s: Σ_k Δ_k (p = 1), 2 Σ_k Δ_k (c_{k1} − c_{k0}) (p = 2) and
  Σ_k Σ_{i=1}^p C(p,i) max(|c_{k0}|, |c_{k1}|)^{p−i} Δ_k^{(i)} (integer p; Δ_k^{(i)} the sensitivity
  of s_k^i) (:func:`utility_sensitivity_bound`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import _validate
from . import _gg


def log_probabilities(utilities, eps, utility_sensitivity):
    """log P(s*|x) ∝ u(s*|x) ε/(2Δ_u) over a finite output set (the last axis), normalised."""
    u = _validate.float_array("utilities", utilities)
    eps = _validate.epsilon(eps)
    du = _validate.float_array("utility_sensitivity", utility_sensitivity)
    _validate.positive("utility_sensitivity", du)
    scores = u * (eps / (2.0 * du))[..., None]
    return scores - jax.scipy.special.logsumexp(scores, axis=-1, keepdims=True)


def privacy_cost(utilities, neighbour_utilities, eps, utility_sensitivity=None):
    """Lemma 7: the actual privacy cost max_{s*} |log P(s*|x) − log P(s*|x')| of Definition 6 for
    the pairs of utility vectors given (last axis: the outputs; leading axes: neighbouring pairs,
    maxed over). Δ_u defaults to the largest |u(s*|x) − u(s*|x')| among the pairs given."""
    u = _validate.float_array("utilities", utilities)
    v = _validate.float_array("neighbour_utilities", neighbour_utilities)
    _validate.broadcast_shapes(utilities=u.shape, neighbour_utilities=v.shape)
    du = jnp.max(jnp.abs(u - v)) if utility_sensitivity is None else utility_sensitivity
    return jnp.max(jnp.abs(log_probabilities(u, eps, du) - log_probabilities(v, eps, du)))


def gg_scale(utility_sensitivity, eps, p):
    """Lemma 8: b = (2Δ_u/ε)^{1/p}, the GG scale of the exponential mechanism with u = −‖s* − s‖_p^p."""
    p = _gg.order(p)
    eps = _validate.epsilon(eps)
    du = _validate.float_array("utility_sensitivity", utility_sensitivity)
    _validate.nonnegative("utility_sensitivity", du)
    return (2.0 * du / eps) ** (1.0 / p)


def utility_sensitivity_bound(coordinate_sensitivities, lower, upper, p, *, power_sensitivities=None):
    """Lemma 9's bound on Δ_u for u = −‖s* − s‖_p^p with s, s* in the box [lower, upper]:
    (a) p = 1: Σ_k Δ_k; (b) p = 2: 2 Σ_k Δ_k (c_{k1} − c_{k0}); (c) integer p:
    Σ_k Σ_{i=1}^p C(p,i) max(|c_{k0}|, |c_{k1}|)^{p−i} Δ_k^{(i)}, with ``power_sensitivities[..., k, i−1]`` =
    Δ_k^{(i)}, the sensitivity of s_k^i (required for p ≥ 3; for p = 2 (b) is returned, which the
    paper shows is the tighter of (b) and (c))."""
    p = int(_gg.order(p, integer=True))
    sens = _gg.sensitivities(coordinate_sensitivities, "coordinate_sensitivities")
    lo = _validate.float_array("lower", lower)
    hi = _validate.float_array("upper", upper)
    if p == 1:
        return jnp.sum(sens, axis=-1)
    if p == 2:
        return 2.0 * jnp.sum(sens * (hi - lo), axis=-1)
    if power_sensitivities is None:
        raise ValueError("power_sensitivities (Δ_k^{(i)}, the sensitivity of s_k^i, i = 1..p) is needed for p >= 3 (Lemma 9 c)")
    dp = _gg.sensitivities(power_sensitivities, "power_sensitivities")
    if dp.shape[-1] != p:
        raise ValueError(f"power_sensitivities must have p = {p} entries on its last axis (i = 1..p); got shape {dp.shape}")
    reach = jnp.maximum(jnp.abs(lo), jnp.abs(hi))[..., None]
    i = jnp.arange(1, p + 1, dtype=jnp.float64)
    binom = jnp.asarray([math.comb(p, k) for k in range(1, p + 1)], jnp.float64)
    return jnp.sum(binom * reach ** (p - i) * dp, axis=(-2, -1))
