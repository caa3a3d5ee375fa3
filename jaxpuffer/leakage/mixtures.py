"""d-dimensional Gaussian mixtures (the GMM-masking paper, ``../shared/papers/002``, Definition 1;
MATH.md §10): P(x) = Σ_m w_m N(x | μ_m, Σ_m), x ∈ ℝ^d.

A :class:`MultivariateGaussianMixture` holds weights (…, K), means (…, K, d) and covariances
(…, K, d, d) with any batch shape in front; it is a JAX pytree (``jit``, ``vmap`` and ``grad`` pass
through it). Concrete inputs are validated eagerly: finite values, weights a probability vector,
covariances symmetric (to 1e-12 relative) and positive definite (a Cholesky factor exists).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate
from ..priors import GaussianMixture


@jax.tree_util.register_pytree_node_class
class MultivariateGaussianMixture:
    """Σ_m w_m N(μ_m, Σ_m) in d dimensions; ``diagonal=True`` reads ``covs`` as variances (…, K, d)."""

    def __init__(self, weights, means, covs, *, diagonal: bool = False):
        weights = _validate.float_array("weights", weights)
        means = _validate.float_array("means", means)
        covs = _validate.float_array("covs", covs)
        if means.ndim < 2:
            raise ValueError(f"means must have shape (..., K, d) (components, then dimension); got shape {means.shape}")
        if diagonal:
            _validate.positive("covs", covs)
            covs = covs[..., :, None] * jnp.eye(covs.shape[-1])
        if covs.ndim < 3 or covs.shape[-1] != covs.shape[-2]:
            raise ValueError(f"covs must have shape (..., K, d, d); got shape {covs.shape}")
        if covs.shape[-1] != means.shape[-1]:
            raise ValueError(f"covs and means disagree on the dimension d: covs {covs.shape}, means {means.shape}")
        if weights.ndim < 1:
            raise ValueError("weights must have a component axis (last axis)")
        shape = _validate.broadcast_shapes(weights=weights.shape, means=means.shape[:-1], covs=covs.shape[:-2])
        weights = _validate.probability_vector("weights", jnp.broadcast_to(weights, shape))
        means = jnp.broadcast_to(means, shape + means.shape[-1:])
        covs = jnp.broadcast_to(covs, shape + covs.shape[-2:])
        if _validate.is_concrete(covs):
            host = np.asarray(covs)
            asym = np.abs(host - np.swapaxes(host, -1, -2)) > 1e-12 * np.maximum(np.abs(host), 1e-300)
            if np.any(asym):
                raise ValueError("covs must be symmetric (each d×d covariance equal to its transpose within 1e-12 relative)")
            if not _positive_definite(host):
                raise ValueError("covs must be positive definite (a Cholesky factor must exist for every component)")
        self.weights, self.means, self.covs = weights, means, covs

    def tree_flatten(self):
        return (self.weights, self.means, self.covs), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.weights, obj.means, obj.covs = children
        return obj

    @property
    def dim(self) -> int:
        return self.means.shape[-1]

    @property
    def components(self) -> int:
        return self.weights.shape[-1]

    @property
    def batch_shape(self) -> tuple:
        return self.weights.shape[:-1]

    def log_density(self, x):
        """log P(x) for points x of shape (..., d), broadcast against the batch shape."""
        each = component_log_densities(jnp.asarray(x, jnp.float64)[..., None, :], self.means, self.covs)
        return jax.scipy.special.logsumexp(each, b=self.weights, axis=-1)

    def sample(self, key, n: int):
        """n draws per mixture of the batch: shape (n, *batch_shape, d). Every component transforms the
        same normal draw and the chosen one is kept (K small: cheaper than gathering factors)."""
        k_comp, k_norm = jax.random.split(key)
        comp = jax.random.categorical(k_comp, jnp.log(self.weights), shape=(n,) + self.batch_shape)
        chol = jnp.linalg.cholesky(self.covs)
        z = jax.random.normal(k_norm, (n,) + self.batch_shape + (self.dim,), jnp.float64)
        each = self.means + jnp.sum(chol * z[..., None, None, :], axis=-1)  # (n, *batch, K, d)
        return jnp.take_along_axis(each, comp[..., None, None], axis=-2)[..., 0, :]

    def convolved(self, sigma) -> "MultivariateGaussianMixture":
        """The law of X + N(0, σ² I) for X ~ this mixture: every covariance plus σ² I (no validation,
        so σ may be traced)."""
        return MultivariateGaussianMixture.tree_unflatten(None, (self.weights, self.means, self.covs + jnp.square(sigma) * jnp.eye(self.dim)))

    @classmethod
    def from_1d(cls, mixture: GaussianMixture) -> "MultivariateGaussianMixture":
        """The d = 1 mixture of a :class:`jaxpuffer.GaussianMixture` (its stds must be > 0)."""
        _validate.positive("stds", mixture.stds)
        return cls(mixture.weights, mixture.means[..., None], jnp.square(mixture.stds)[..., None, None])

    def to_1d(self) -> GaussianMixture:
        """The :class:`jaxpuffer.GaussianMixture` of a d = 1 mixture."""
        if self.dim != 1:
            raise ValueError(f"to_1d needs d = 1; this mixture has d = {self.dim}")
        return GaussianMixture(self.weights, self.means[..., 0], jnp.sqrt(self.covs[..., 0, 0]))

    def __repr__(self):
        return f"MultivariateGaussianMixture(batch_shape={self.batch_shape}, K={self.components}, d={self.dim})"


def component_log_densities(x, means, covs):
    """log N(x | μ_m, Σ_m) by Cholesky factors; x (..., K, d) broadcast against means (..., K, d)
    and covs (..., K, d, d); returns (..., K). The inverse factors L⁻¹ are formed once per component
    and applied by a broadcast product (a triangular solve per point would copy the factors to every
    point)."""
    chol = jnp.linalg.cholesky(covs)
    eye = jnp.broadcast_to(jnp.eye(covs.shape[-1]), covs.shape)
    inv = jax.scipy.linalg.solve_triangular(chol, eye, lower=True)
    z = jnp.sum(inv * (x - means)[..., None, :], axis=-1)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (means.shape[-1] * math.log(2 * math.pi) + log_det + jnp.sum(z * z, axis=-1))


def _positive_definite(host) -> bool:
    try:
        chol = np.linalg.cholesky(host)
    except np.linalg.LinAlgError:
        return False
    return bool(np.all(np.diagonal(chol, axis1=-2, axis2=-1) > 0))
