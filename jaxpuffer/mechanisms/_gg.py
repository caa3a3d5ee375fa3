"""Shared pieces of the GG mechanism modules: the standard GG(0, 1, p) masses in log space, the
bound (e + Δ)^p − e^p without cancellation, and eager argument checks."""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax.scipy.special import gammainc

from .. import _validate
from ..noise.kernels import GeneralizedGaussian

LOG_HALF = math.log(0.5)


def order(p, integer: bool = False) -> float:
    """The GG order p as a Python float ≥ 1 (an integer where the paper's binomial forms need one)."""
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"p must be a number >= 1 (the GG order); got {p!r}") from None
    if not (value >= 1.0 and math.isfinite(value)):
        raise ValueError(f"p must be a finite number >= 1 (the GG order); got {p!r}")
    if integer and value != round(value):
        raise ValueError(f"p must be an integer >= 1 here (the paper's binomial expansion); got {p!r}")
    return value


def sensitivities(value, name: str = "sensitivities"):
    arr = _validate.float_array(name, value)
    _validate.nonnegative(name, arr)
    return jnp.atleast_1d(arr)


def log_tail(t, p):
    """log P(Z > t) for Z ~ GG(0, 1, p), t ≥ 0: log(½ Q(1/p, t^p)) (the noise kernel's)."""
    return GeneralizedGaussian(p).log_sf(t, 1.0)


def log_core(t, p):
    """log P(0 < Z < t) for t ≥ 0: log(½ P(1/p, t^p)) (accurate near t = 0)."""
    return LOG_HALF + jnp.log(gammainc(1.0 / p, t**p))


def log_diff(log_a, log_b):
    """log(e^a − e^b) for a ≥ b (−inf where equal)."""
    return log_a + jnp.log(-jnp.expm1(jnp.minimum(log_b - log_a, 0.0)))


def log_interval_mass(lo, hi, p):
    """log P(lo < Z < hi), Z ~ GG(0, 1, p), lo ≤ hi (either may be ±inf), without cancellation:
    a one-sided interval from the tail masses, one around 0 from the core masses."""
    right = lo >= 0
    left = hi <= 0
    a, c = jnp.where(left, -hi, jnp.where(right, lo, 0.0)), jnp.where(left, -lo, jnp.where(right, hi, 0.0))
    side = log_diff(log_tail(a, p), log_tail(c, p))  # one side: (a, c) at distance a ≥ 0
    around = jnp.logaddexp(log_core(jnp.abs(lo), p), log_core(hi, p))
    return jnp.where(left | right, side, around)


def log_gg_density(z, p):
    """log of the GG(0, 1, p) density p/(2Γ(1/p)) e^{−|z|^p} (GG paper eq. (2), corrected: MATH.md §9;
    the noise kernel's)."""
    return GeneralizedGaussian(p).log_density(z, 1.0)


def shifted_power_gap(e, d, p):
    """(e + d)^p − e^p for e, d ≥ 0, as e^p expm1(p log1p(d/e)) (no cancellation for e ≫ d).
    For integer p it is Σ_{j=1}^{p} C(p, j) e^{p−j} d^j, the sum in the GG paper's eqs (6), (8), (15)."""
    safe = jnp.where(e > 0, e, 1.0)
    return jnp.where(e > 0, safe**p * jnp.expm1(p * jnp.log1p(d / safe)), d**p)


def scaled_norm(magnitudes, order: float):
    """(Σ_k m_k^order)^{1/order} over the last axis, scaled by the largest m_k (no overflow)."""
    top = jnp.max(magnitudes, axis=-1, keepdims=True)
    safe = jnp.where(top > 0, top, 1.0)
    return top[..., 0] * jnp.sum((magnitudes / safe) ** order, axis=-1) ** (1.0 / order)
