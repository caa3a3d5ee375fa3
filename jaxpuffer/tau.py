"""τ*(δ): the standard-normal threshold of the Gaussian-priors paper (Appendix A, MATH.md §4).

* ``"exact"`` (20): τ*(δ) = min{τ : P(Z > τ) ≤ δ/2} = Q⁻¹(δ/2) = −Φ⁻¹(δ/2), computed with
  ``ndtri`` on δ/2 (no 1 − Φ subtraction), accurate down to δ = 1e-300.
* ``"lambert"`` (23): τ*(δ) = √W0(2/(πδ²)), from the Gaussian tail bound (21)
  P(Z > τ) ≤ φ(τ)/τ. W0 is evaluated in log space, so δ = 1e-300 does not overflow.
* ``"lambert_implicit"`` (22): the smallest τ > 0 with τ² ≥ 2 W0(τ/(√(2π) δ)), solved numerically
  by bisection. Note: (22) ⇔ φ(τ)/τ ≤ δ/2 ⇔ (23), so the two Lambert forms agree to round-off;
  both are ≥ the exact Q⁻¹(δ/2) since they rest on the tail bound (21).

All three are vectorized, jit-able and differentiable in δ (custom JVPs from the implicit
equations, so gradients do not pass through the iterations).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri

from . import _validate

METHODS = ("exact", "lambert", "lambert_implicit")

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@jax.custom_jvp
def lambertw_exp(x):
    """W0(e^x), the principal Lambert W of e^x, for any real x, without forming e^x.

    Solves u + e^u = x for u = log W0(e^x) (w e^w = e^x ⇔ log w + w = x) by Newton's method;
    g(u) = e^u + u − x is convex and increasing, so Newton converges monotonically after the first
    step. dW/dx = W/(1 + W).
    """
    x = jnp.asarray(x, dtype=jnp.float64)
    # W0(e^x) ≈ x − log x for large x, ≈ e^x for very negative x.
    big = jnp.maximum(x, 1.5)
    u = jnp.where(x > 1.5, jnp.log(big - jnp.log(big)), x - jnp.log1p(jnp.exp(jnp.minimum(x, 1.5))))
    for _ in range(12):
        eu = jnp.exp(u)
        u = u - (eu + u - x) / (eu + 1.0)
    return jnp.exp(u)


@lambertw_exp.defjvp
def _lambertw_exp_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    w = lambertw_exp(x)
    return w, w / (1.0 + w) * dx


@jax.custom_jvp
def _tau_exact(delta):
    return -ndtri(0.5 * delta)


@_tau_exact.defjvp
def _tau_exact_jvp(primals, tangents):
    (delta,), (ddelta,) = primals, tangents
    tau = _tau_exact(delta)
    # dτ/dδ = −1 / (2 φ(τ)), with φ in log space so tiny δ does not overflow.
    return tau, -0.5 * jnp.exp(0.5 * tau**2 + _LOG_SQRT_2PI) * ddelta


def _tau_lambert(delta):
    return jnp.sqrt(lambertw_exp(math.log(2 / math.pi) - 2.0 * jnp.log(delta)))


@jax.custom_jvp
def _tau_lambert_implicit(delta):
    """Bisection on log τ for the implicit condition (22), τ ∈ [1e-3, 64]."""
    log_scale = jnp.log(delta) + _LOG_SQRT_2PI  # log(√(2π) δ)

    def feasible(log_tau):
        return jnp.exp(2 * log_tau) >= 2.0 * lambertw_exp(log_tau - log_scale)

    lo = jnp.full_like(delta, math.log(1e-3))
    hi = jnp.full_like(delta, math.log(64.0))

    def step(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = feasible(mid)
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    _, hi = jax.lax.fori_loop(0, 60, step, (lo, hi))
    return jnp.exp(hi)


@_tau_lambert_implicit.defjvp
def _tau_lambert_implicit_jvp(primals, tangents):
    (delta,), (ddelta,) = primals, tangents
    tau = _tau_lambert_implicit(delta)
    # (22) ⇔ G(τ, δ) = τ²/2 + log τ + log(√(2π) δ/2) = 0, so dτ/dδ = −(1/δ) / (τ + 1/τ).
    return tau, -ddelta / (delta * (tau + 1.0 / tau))


_IMPLEMENTATIONS = {
    "exact": _tau_exact,
    "lambert": _tau_lambert,
    "lambert_implicit": _tau_lambert_implicit,
}


def tau_star(delta, method: str = "exact") -> jax.Array:
    """τ*(δ) of the Gaussian-priors paper: eq. (20) ``"exact"``, (23) ``"lambert"``, (22)
    ``"lambert_implicit"``. ``delta`` must lie in (0, 1); any shape.

    >>> float(tau_star(0.05))  # Q⁻¹(0.025)
    1.959963984540054
    """
    _validate.choice("method", method, METHODS)
    delta = _validate.delta(delta)
    return tau_star_unchecked(delta, method)


@partial(jax.jit, static_argnames="method")
def tau_star_unchecked(delta: jax.Array, method: str) -> jax.Array:
    """:func:`tau_star` without validation, for callers that validated already (and inside jit).
    One compiled program per method and shape: called eagerly (the theorem level, a family's
    plan), ``ndtri``'s ~25 operations would otherwise each compile on their own (0.35 CPU-s cold)."""
    return _IMPLEMENTATIONS[method](delta)
