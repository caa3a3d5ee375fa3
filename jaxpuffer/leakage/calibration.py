"""Calibration to a leakage target: the smallest std σ of Gaussian noise N(0, σ² I) added to a
released value whose distribution is the mixture P (secret one) or Q (secret two) such that
KL(P ⊛ N ‖ Q ⊛ N) ≤ target (the convolved mixtures are mixtures with covariances S + σ² I).

``method="bound"`` (any d, jit-able, batched with vmap) certifies through the variational upper
bound of :mod:`.bounds`; it is safe but can be loose: on MATH.md §10's pair it asks 8.7× the σ that
the exact KL needs at a target of 0.01 (the bound charges every pair of components for its mean
gap, the exact KL only the mixtures' overall difference). ``method="quadrature"`` (d = 1) solves
the exact KL by 1-D adaptive quadrature and brentq, and keeps the answer only where KL plus ten
times the quadrature's error estimate is ≤ target at the returned σ (rounded up).

The bound decreases as σ grows (each component KL does, by data processing, and the bound is a
minimum over plans of sums of them) and tends to 0, so a bisection on log σ finds the smallest σ
at which it is ≤ target; the answer is the feasible end, evaluated with the same arithmetic (so
verified). True KL ≤ bound ≤ target: the answer is safe, and at most as noisy as the bound is loose.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import math

from scipy import optimize

from .. import _validate
from .._roots import bisect
from .bounds import kl_upper
from .mixtures import MultivariateGaussianMixture
from .references import kl_quadrature_1d

_STEPS = 80  # halvings of a log-σ bracket 60 wide: 60·2^−80 ≈ 5e-23


def _with_noise(m: MultivariateGaussianMixture, sigma):
    return MultivariateGaussianMixture.tree_unflatten(None, (m.weights, m.means, m.covs + sigma**2 * jnp.eye(m.dim)))


@jax.jit
def _noise_for_kl(p, q, target):
    spread = jnp.max(jnp.linalg.norm(p.means[:, None, :] - q.means[None, :, :], axis=-1))
    spread = jnp.maximum(spread, jnp.sqrt(jnp.max(jnp.concatenate([jnp.trace(p.covs, axis1=-2, axis2=-1), jnp.trace(q.covs, axis1=-2, axis2=-1)]))))
    bound = lambda log_sigma: kl_upper(_with_noise(p, jnp.exp(log_sigma)), _with_noise(q, jnp.exp(log_sigma)))  # noqa: E731
    _, c = bisect(lambda mid: bound(mid) > target, jnp.log(spread) - 30.0, jnp.log(spread) + 30.0, _STEPS)
    no_noise = kl_upper(p, q) <= target
    found = bound(c) <= target  # (target carries a 1e-12 relative margin: see noise_for_kl)
    return jnp.where(no_noise, 0.0, jnp.where(found, jnp.exp(c), jnp.nan))


def noise_for_kl(p: MultivariateGaussianMixture, q: MultivariateGaussianMixture, target, *, method: str = "bound"):
    """The smallest σ with KL(P ⊛ N(0, σ²I) ‖ Q ⊛ N(0, σ²I)) ≤ ``target`` for one pair of mixtures of
    the same dimension: certified by the variational bound (``"bound"``; ``jax.vmap`` over pairs;
    ~1e-15 relative on the bound) or by quadrature (``"quadrature"``, d = 1). 0 where no noise is
    needed; NaN where the target is out of reach of the search."""
    if p.dim != q.dim:
        raise ValueError(f"p and q must have the same dimension d; got {p.dim} and {q.dim}")
    _validate.choice("method", method, ("bound", "quadrature"))
    target = _validate.float_array("target", target)
    _validate.positive("target", target)
    if method == "bound":  # a 1e-12 relative margin: re-evaluations in another program may differ by ulps
        return _noise_for_kl(p, q, target * (1.0 - 1e-12))
    if p.dim != 1:
        raise ValueError(f"method='quadrature' needs d = 1; got d = {p.dim}")
    goal = float(target)

    def excess(sigma):
        value, err = kl_quadrature_1d(_with_noise(p, sigma), _with_noise(q, sigma))
        return value + 10.0 * err - goal

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e12:
            return math.nan
    sigma = optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=1e-13)
    for _ in range(60):  # round up until verified
        if excess(sigma) <= 0:
            return sigma
        sigma *= 1.0 + 1e-12
    return math.nan
