"""Closed-form calibrations of the Gaussian-priors paper (Laplace noise N ~ L(b), MATH.md §5).

Each function returns the sufficient noise scale b per pair (or per user), vectorized over any
batch shape; ``eps`` and ``delta`` may be arrays that broadcast with it. These are *sufficient*
conditions; :func:`jaxpuffer.calibrate` takes the maximum over pairs and priors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from .couplings import component_costs, transport_plan
from .pairs import PairSet, _users, presence_totals, require_pairs
from .priors import Gaussian, GaussianMixture
from .tau import METHODS as TAU_METHODS
from .tau import tau_star_unchecked


def _gaussian_pairs(pairs, caller: str) -> PairSet:
    return require_pairs(pairs, Gaussian, caller)


def _eps_delta_tau(eps, delta, tau):
    _validate.choice("tau", tau, TAU_METHODS)
    return _validate.epsilon(eps), tau_star_unchecked(_validate.delta(delta), tau)


def theorem1_scale(delta_mu, delta_sigma, eps, tau_value):
    """b = (|Δμ| + |Δσ| τ*) / ε, the maximand of (5) for one pair (no validation)."""
    return (jnp.abs(delta_mu) + jnp.abs(delta_sigma) * tau_value) / eps


def pure_scale(d_mu, s1, s2, eps):
    """b_pure of MATH.md §6, (|Δμ| + √(Δμ² + 2ε|σ_i² − σ_j²|))/(2ε): below it the tail limits
    (σ_i² − σ_j²)/(2b²) ± Δμ/b of the log-ratio of N(μ_i, σ_i²) ⊛ Lap(b) and N(μ_j, σ_j²) ⊛ Lap(b)
    exceed ε in one order, so δ > 0; at and beyond it δ = 0 unless a bump of the log-ratio in the
    core exceeds ε (a candidate the exact evaluator verifies, not a theorem)."""
    return (jnp.abs(d_mu) + jnp.sqrt(d_mu**2 + 2.0 * eps * jnp.abs((s1 - s2) * (s1 + s2)))) / (2.0 * eps)


def theorem1(pairs: PairSet, eps, delta, *, tau: str = "exact") -> jax.Array:
    """Theorem 1, eq. (5): b ≥ (1/ε) ( |μ_i − μ_j| + |σ_i − σ_j| τ*(δ) ) for each Gaussian pair.

    Args:
      pairs: a :class:`PairSet` of :class:`Gaussian` priors.
      eps: ε > 0; delta: δ ∈ (0, 1) (scalars or arrays broadcasting with the batch).
      tau: how τ*(δ) is computed: ``"exact"`` (20), ``"lambert"`` (23), ``"lambert_implicit"`` (22).

    Returns:
      The sufficient Laplace scale b for each pair, shape ``pairs.batch_shape``.
    """
    pairs = _gaussian_pairs(pairs, "theorem1")
    eps, tau_value = _eps_delta_tau(eps, delta, tau)
    return theorem1_scale(pairs.first.mean - pairs.second.mean, pairs.first.std - pairs.second.std, eps, tau_value)


def remark1(pairs: PairSet, eps, *, rtol: float = 1e-12) -> jax.Array:
    """Remark 1, eq. (6): for translation priors (σ_i = σ_j), b ≥ |μ_i − μ_j| / ε gives δ = 0.

    Raises ``ValueError`` if some pair's standard deviations differ by more than ``rtol``
    (relative), i.e. the priors are not translations of each other.
    """
    pairs = _gaussian_pairs(pairs, "remark1")
    eps = _validate.epsilon(eps)
    s1, s2 = pairs.first.std, pairs.second.std
    if _validate.is_concrete(s1) and _validate.is_concrete(s2):
        gap = np.abs(np.asarray(s1) - np.asarray(s2))
        if np.any(gap > rtol * np.maximum(np.asarray(s1), np.asarray(s2))):
            raise ValueError(
                "pairs must be translations of each other (equal std) for remark1; "
                f"largest std difference {gap.max():.3g}; use theorem1"
            )
    return jnp.abs(pairs.first.mean - pairs.second.mean) / eps


def presence_delta_sigma(stds, others_var, total_var):
    """Δσ_k = √V − √(V − σ_k²) of (9), in the cancellation-free form σ_k² / (√V + √(V − σ_k²))."""
    denom = jnp.sqrt(total_var) + jnp.sqrt(others_var)
    return jnp.where(denom > 0, stds**2 / jnp.where(denom > 0, denom, 1.0), 0.0)


def corollary1_presence(user_means, user_stds, eps, delta, *, tau: str = "exact") -> jax.Array:
    """Corollary 1(a), eq. (9): sum query X = Σ_k Z_k, pairs 𝕊_⊥ (user k present vs absent):

        b_k = (1/ε) ( |μ_k| + Δσ_k τ*(δ) ),  Δσ_k = √(Σ_{k'≠k} σ_k'² + σ_k²) − √(Σ_{k'≠k} σ_k'²).

    O(K) time and memory from the total variance. Returns b_k per user (the calibrated scale is
    the max over k).
    """
    means, stds = _users(user_means, user_stds)
    eps, tau_value = _eps_delta_tau(eps, delta, tau)
    _, total_var, others_var = presence_totals(means, stds)
    return theorem1_scale(means, presence_delta_sigma(stds, others_var, total_var), eps, tau_value)


def corollary1_value(a, a_prime, eps) -> jax.Array:
    """Corollary 1(b), eq. (10): pairs 𝕊_a (user reports a vs a'): b ≥ |a − a'| / ε, δ = 0."""
    a = _validate.float_array("a", a)
    a_prime = _validate.float_array("a_prime", a_prime)
    return jnp.abs(a - a_prime) / _validate.epsilon(eps)


def identical_users(mean, std, K, eps, delta, *, tau: str = "exact") -> jax.Array:
    """Eq. (11), K independent identical users N(μ, σ²), presence pairs:

        b = (1/ε) ( |μ| + (√K − √(K−1)) σ τ*(δ) ),

    with √K − √(K−1) = 1/(√K + √(K−1)) evaluated without cancellation. As K → ∞, b → |μ|/ε.
    ``mean``, ``std``, ``K`` (≥ 1), ``eps``, ``delta`` broadcast together (Figure 2 sweeps K and σ).
    """
    mean = _validate.float_array("mean", mean)
    std = _validate.float_array("std", std)
    _validate.nonnegative("std", std)
    K = _validate.float_array("K", K)
    _validate._check("K", K, lambda k: (k >= 1) & (k == np.floor(k)), "an integer >= 1")
    eps, tau_value = _eps_delta_tau(eps, delta, tau)
    gap = 1.0 / (jnp.sqrt(K) + jnp.sqrt(K - 1.0))
    return theorem1_scale(mean, gap * std, eps, tau_value)


# ----------------------------------------------------------------------------- Gaussian mixtures

_ROUND_UP = 1.0 + 2.0**-49


FORMS = ("max", "paper")


def theorem2(pairs: PairSet, eps, delta, *, coupling: str = "w2", form: str = "max", tau: str = "exact") -> jax.Array:
    """Theorem 2, Gaussian-mixture priors, for a coupling w of the weight vectors (MATH.md §3):

    * ``form="paper"`` — eq. (13) as printed, b = (1/ε) Σ_{m,l} w_ml (|μ_im − μ_jl| + τ*(δ)|σ_im − σ_jl|).
      **Erratum: not a sufficient condition in general.** Its proof (Appendix C) factors the
      kernel mass ∫_B e^{−|y−x|/b}/2b dy out of the sum over components although x differs per
      component, and takes [·]_+ after averaging the displacements (Jensen), so a small average
      can hide a large displacement of a light component. Counterexample: 0.99 N(0, 1) + 0.01
      N(100, 1) vs 0.99 N(0, 1) + 0.01 N(−100, 1), ε = 1: (13) gives b = 2 "with δ = 0", but the
      exact δ at b = 2 is 0.0100 (scipy quadrature; the mass near ±100 is not covered). Kept to
      reproduce the paper's numbers.
    * ``form="max"`` (default) — b = (1/ε) max over the cells with w_ml > 0 of
      (|μ_im − μ_jl| + τ*(δ)|σ_im − σ_jl|): then every component pair's Monge bound U1_ml ≤
      P(|W_ml| > εb) ≤ δ (Theorem 1 per pair), and the coupling bound of the plan (12),
      Σ w_ml U1_ml, which bounds the exact δ for any coupling (Appendix E), is ≤ δ. Valid.

    ``coupling="w2"`` is the paper's w* (minimising Σ w W2²); ``"bound"`` minimises the paper
    form's own sum Σ w (|Δμ| + τ*|Δσ|) (MATH.md §3). Both LPs are solved exactly
    (:func:`jaxpuffer.couplings.transport_plan`). Returns b per pair.
    """
    pairs = require_pairs(pairs, GaussianMixture, "theorem2")
    _validate.choice("coupling", coupling, ("w2", "bound"))
    _validate.choice("form", form, FORMS)
    eps, tau_value = _eps_delta_tau(eps, delta, tau)
    tau_value = jnp.broadcast_to(tau_value, pairs.batch_shape)
    bound_cost = component_costs(pairs.first, pairs.second, "bound", tau_value)
    plan_cost = bound_cost if coupling == "bound" else component_costs(pairs.first, pairs.second, "w2")
    weights = transport_plan(pairs.first.weights, pairs.second.weights, plan_cost).weights
    return mixture_theorem_scale(weights, bound_cost, eps, form)


def mixture_theorem_scale(weights, bound_cost, eps, form: str = "max"):
    """(1/ε) max_{w > 0} c_ml (valid) or (1/ε) Σ w c_ml (eq. (13) as printed), rounded up."""
    if form == "paper":
        total = jnp.sum(weights * bound_cost, axis=(-2, -1))
    else:
        total = jnp.max(jnp.where(weights > 0, bound_cost, 0.0), axis=(-2, -1))
    return total / eps * _ROUND_UP


def corollary2(pairs: PairSet, eps, *, form: str = "max", rtol: float = 1e-9) -> jax.Array:
    """Corollary 2, GMM-UBM priors (same weights and variances component by component, means
    differ), δ = 0 under the identity coupling of components:

    * ``form="paper"`` — eq. (15), b = (1/ε) Σ_m α_m |μ_im − μ_jm|. **Erratum: not sufficient in
      general** (the counterexample of :func:`theorem2` is a GMM-UBM pair: (15) gives b = 2, exact
      δ = 0.01).
    * ``form="max"`` (default) — b = (1/ε) max_{α_m > 0} |μ_im − μ_jm|: each component pair is a
      translation, so Remark 1 applies to it and the coupling bound is exactly 0. Valid.

    Raises ``ValueError`` unless weights and stds match within ``rtol`` (relative).
    """
    pairs = require_pairs(pairs, GaussianMixture, "corollary2")
    _validate.choice("form", form, FORMS)
    eps = _validate.epsilon(eps)
    for name in ("weights", "stds"):
        one, two = getattr(pairs.first, name), getattr(pairs.second, name)
        if _validate.is_concrete(one) and _validate.is_concrete(two):
            one, two = np.asarray(one), np.asarray(two)
            if np.any(np.abs(one - two) > rtol * np.maximum(np.abs(one), np.abs(two))):
                raise ValueError(f"pairs must share {name} component by component for corollary2 (GMM-UBM); use theorem2")
    k = pairs.first.num_components
    weights = pairs.first.weights[..., :, None] * jnp.eye(k)  # the identity coupling of components
    shift = jnp.abs(pairs.first.means - pairs.second.means)[..., :, None] * jnp.eye(k)
    return mixture_theorem_scale(weights, shift, eps, form)
