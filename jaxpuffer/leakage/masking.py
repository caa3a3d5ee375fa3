"""The masking mechanism of the GMM-masking paper (its Algorithm 1, after Nuradha's perturbed EM;
MATH.md §10): each component's weight, mean and covariance are perturbed by Gaussian noise and
the weights renormalised.

Per component i, one round:
1. w_i ← max(0, w_i + η_w g), g ~ N(0, 1);
2. μ_i ← μ_i + η_μ g, g ~ N(0, Σ_i);
3. Σ_i ← L_i (I + η_Σ G)(I + η_Σ G)ᵀ L_iᵀ, G a d×d matrix of iid N(0, 1) entries;
4. w ← w / Σ w.

**Choices the paper leaves open, made here.** Step 3 uses the Cholesky factor L_i instead of the
paper's symmetric Σ_i^{1/2}: L_i = Σ_i^{1/2} U with U orthogonal, and U G Uᵀ has the law of G, so the
masked covariance has the same distribution. The middle factor is positive semi-definite by
construction; its eigenvalues are floored at 1e-12 × its largest (relative), so every masked
covariance is positive definite in floating point. If every weight clips to 0 in step 1 the
component with the largest perturbed weight gets weight 1 (the paper divides by zero).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .. import _validate
from .mixtures import MultivariateGaussianMixture

_EIG_FLOOR = 1e-12


def _one_round(key, weights, means, covs, eta_w, eta_mu, eta_cov):
    k_w, k_mu, k_cov = jax.random.split(key, 3)
    kc, d = means.shape
    raw = weights + eta_w * jax.random.normal(k_w, (kc,), jnp.float64)
    clipped = jnp.maximum(raw, 0.0)
    clipped = jnp.where(jnp.sum(clipped) > 0, clipped, jax.nn.one_hot(jnp.argmax(raw), kc, dtype=jnp.float64))
    chol = jnp.linalg.cholesky(covs)
    means = means + eta_mu * jnp.einsum("kij,kj->ki", chol, jax.random.normal(k_mu, (kc, d), jnp.float64))
    factor = jnp.eye(d) + eta_cov * jax.random.normal(k_cov, (kc, d, d), jnp.float64)
    middle = factor @ jnp.swapaxes(factor, -1, -2)
    vals, vecs = jnp.linalg.eigh(middle)
    vals = jnp.maximum(vals, _EIG_FLOOR * jnp.max(vals, axis=-1, keepdims=True))
    middle = (vecs * vals[..., None, :]) @ jnp.swapaxes(vecs, -1, -2)
    covs = chol @ middle @ jnp.swapaxes(chol, -1, -2)
    covs = 0.5 * (covs + jnp.swapaxes(covs, -1, -2))  # exactly symmetric
    return clipped / jnp.sum(clipped), means, covs


@functools.partial(jax.jit, static_argnames=("rounds",))
def _mask(keys, weights, means, covs, eta_w, eta_mu, eta_cov, rounds: int):
    def one(key):
        state = (weights, means, covs)
        for sub in jax.random.split(key, rounds):
            state = _one_round(sub, *state, eta_w, eta_mu, eta_cov)
        return state

    return jax.vmap(one)(keys)


def mask(key, mixture: MultivariateGaussianMixture, eta_w, eta_mu, eta_cov, *, draws: int = 1, rounds: int = 1):
    """``draws`` independent masked copies of one mixture (no batch shape), each after ``rounds``
    rounds of Algorithm 1; returns a :class:`MultivariateGaussianMixture` of batch shape (draws,)."""
    if mixture.batch_shape:
        raise ValueError(f"mask takes one mixture (no batch shape); got batch shape {mixture.batch_shape}")
    if not (isinstance(draws, int) and draws >= 1) or not (isinstance(rounds, int) and rounds >= 1):
        raise ValueError(f"draws and rounds must be integers >= 1; got {draws!r}, {rounds!r}")
    etas = []
    for name, value in (("eta_w", eta_w), ("eta_mu", eta_mu), ("eta_cov", eta_cov)):
        arr = _validate.float_array(name, value)
        _validate.nonnegative(name, arr)
        etas.append(arr)
    w, m, c = _mask(jax.random.split(key, draws), mixture.weights, mixture.means, mixture.covs, *etas, rounds)
    return MultivariateGaussianMixture.tree_unflatten(None, (w, m, c))
