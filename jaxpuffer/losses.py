"""Privacy loss δ(b) at a given noise scale, one function per level of the ladder (MATH.md §6).

Every function returns, per pair, the δ that its level certifies at scale b: the smallest δ such
that the release is (ε, δ)-pufferfish private *according to that level's bound*, maximised over
both orders of a symmetric pair. Levels, loosest last:

  L3 ``delta_theorem``  Theorem 1's Gaussian-tail certificate, 2 Q((εb − |Δμ|)/|Δσ|).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from . import _validate
from .bounds import _gaussian_pairs
from .pairs import PairSet


def theorem_delta(delta_mu, delta_sigma, scale, eps):
    """L3 for one pair: 2 Q((εb − |Δμ|)/|Δσ|), capped at 1; for Δσ = 0, 0 if εb ≥ |Δμ| else 1.

    Inverting (5) for δ: b = (|Δμ| + |Δσ| τ*(δ))/ε ⇔ τ*(δ) = (εb − |Δμ|)/|Δσ| ⇔ δ = 2Q(that).
    """
    slack = eps * scale - jnp.abs(delta_mu)
    abs_sigma = jnp.abs(delta_sigma)
    t = slack / jnp.where(abs_sigma > 0, abs_sigma, 1.0)
    tail = jnp.minimum(2.0 * ndtr(-t), 1.0)
    return jnp.where(abs_sigma > 0, tail, jnp.where(slack >= 0, 0.0, 1.0))


def delta_theorem(pairs: PairSet, scale, eps) -> jax.Array:
    """Level L3 (Theorem 1, eq. (5) inverted): the δ certified at Laplace scale ``scale`` per pair."""
    pairs = _gaussian_pairs(pairs, "delta_theorem")
    scale = _validate.float_array("scale", scale)
    _validate.nonnegative("scale", scale)
    eps = _validate.epsilon(eps)
    return theorem_delta(pairs.first.mean - pairs.second.mean, pairs.first.std - pairs.second.std, scale, eps)
