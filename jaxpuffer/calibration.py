"""Calibration: the smallest noise scale that meets (ε, δ) for every pair, and its certificate.

``calibrate`` validates its inputs eagerly, computes the scale per pair at the requested level of
the ladder (MATH.md §6), rounds it up to the safe side, takes the maximum over every pair and
prior, and reports the δ that the level certifies at that scale.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from .bounds import _gaussian_pairs, theorem1_scale
from .losses import theorem_delta
from .pairs import PairSet
from .tau import METHODS as TAU_METHODS
from .tau import tau_star_unchecked

LEVELS = ("theorem",)
NOISES = ("laplace",)

# Closed-form scales are rounded up by a few ulps so that floating-point rounding in the formula
# never lands on the unsafe side of the condition it certifies.
_ROUND_UP = 1.0 + 2.0**-49


class Calibration(NamedTuple):
    """The result of :func:`calibrate`.

    Attributes:
      scale: the noise scale to use: Laplace b (or Gaussian std θ), the max over pairs and priors.
      per_pair: the smallest scale for each pair, shape ``pairs.batch_shape``.
      binding: index (tuple) into ``per_pair`` of the pair that sets ``scale``.
      delta_achieved: the δ that ``level`` certifies at ``scale`` (max over pairs and orders).
      level, noise: how the scale was obtained.
      eps, delta: the target.
      converged: whether every per-pair search met its tolerance (closed forms: True).
      iterations: solver iterations used (closed forms: 0).
    """

    scale: Any
    per_pair: Any
    binding: tuple
    delta_achieved: Any
    level: str
    noise: str
    eps: Any
    delta: Any
    converged: bool
    iterations: int

    @property
    def variance(self):
        """Variance of the noise: 2b² for Laplace, θ² for Gaussian."""
        return 2.0 * self.scale**2 if self.noise == "laplace" else self.scale**2


@partial(jax.jit, static_argnames="tau")
def _theorem_level(pairs: PairSet, eps, delta, tau):
    d_mu = pairs.first.mean - pairs.second.mean
    d_sigma = pairs.first.std - pairs.second.std
    per_pair = theorem1_scale(d_mu, d_sigma, eps, tau_star_unchecked(delta, tau)) * _ROUND_UP
    scale = jnp.max(per_pair)
    achieved = jnp.max(theorem_delta(d_mu, d_sigma, scale, eps))
    return per_pair, scale, achieved


def calibrate(
    pairs: PairSet,
    eps,
    delta,
    *,
    noise: str = "laplace",
    level: str = "theorem",
    tau: str = "exact",
) -> Calibration:
    """The noise scale that makes Y = X + N (ε, δ)-pufferfish private for every pair in ``pairs``.

    Args:
      pairs: a :class:`PairSet`; every batch axis (pairs, adversaries' priors) is maximised over.
      eps: ε > 0. delta: δ ∈ (0, 1). Scalars.
      noise: ``"laplace"``.
      level: ``"theorem"``: Theorem 1, eq. (5), b = max (|Δμ| + |Δσ| τ*(δ))/ε.
      tau: τ*(δ) method for the theorem level (see :func:`jaxpuffer.tau_star`).

    Returns:
      A :class:`Calibration`; ``delta_achieved`` is Theorem 1's certificate 2Q((εb − |Δμ|)/|Δσ|)
      at the returned scale, ≤ ``delta``.
    """
    _validate.choice("level", level, LEVELS)
    _validate.choice("noise", noise, NOISES)
    _validate.choice("tau", tau, TAU_METHODS)
    pairs = _gaussian_pairs(pairs, "calibrate")
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta)
    if eps.ndim or delta.ndim:
        raise ValueError("eps and delta must be scalars for calibrate; use jaxpuffer.bounds for arrays")
    per_pair, scale, achieved = _theorem_level(pairs, eps, delta, tau)
    return Calibration(
        scale=scale,
        per_pair=per_pair,
        binding=_binding(per_pair),
        delta_achieved=achieved,
        level=level,
        noise=noise,
        eps=eps,
        delta=delta,
        converged=True,
        iterations=0,
    )


def _binding(per_pair) -> tuple:
    """Index of the largest per-pair scale (concrete: ints; traced: arrays)."""
    flat = jnp.argmax(per_pair.reshape(-1))
    if _validate.is_concrete(flat):
        return tuple(int(i) for i in np.unravel_index(int(flat), per_pair.shape))
    return tuple(jnp.unravel_index(flat, per_pair.shape))
