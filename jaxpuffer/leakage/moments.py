"""Closed-form moments E_P[R(x)^k] of Gaussian mixtures (the GMM-masking paper's Lemma 3.1,
eqs. (12)–(13); MATH.md §10), the raw material of its Taylor and Legendre series.

With P = Σ_i w_i N_i and R = Σ_t v_t M_t (d-dimensional components),
R^k = Σ_{|j| = k} C(k; j) Π_t (v_t M_t)^{j_t} (the multinomial theorem over the C(k + K − 1, K − 1)
multisets j), so E_P[R^k] = Σ_i w_i Σ_j C(k; j) Π_t v_t^{j_t} ∫ N_i Π_t M_t^{j_t} dx, and each
integral of a product of Gaussian densities (with multiplicities n_s) is closed form:
Λ = Σ_s n_s S_s⁻¹, η = Σ_s n_s S_s⁻¹ m_s, c = Σ_s n_s m_sᵀ S_s⁻¹ m_s,
log ∫ = −½ Σ_s n_s (d log 2π + log|S_s|) + (d/2) log 2π − ½ log|Λ| − ½ (c − ηᵀ Λ⁻¹ η).
The sum runs in log space (logsumexp). In d = 1 every quantity is a scalar (matrix products over
the multisets, no batched LAPACK call). The paper's printed eqs. (12)–(13) garble this (Σ written
with 1/j_t, the normalisers as N(0|μ, Σ) ratios); this is the identity they abbreviate.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np


@functools.lru_cache(maxsize=None)
def multisets(k: int, components: int) -> tuple[np.ndarray, np.ndarray]:
    """All j ∈ ℕ^K with |j| = k (rows), and log C(k; j), the multinomial coefficients."""
    rows = np.array([np.bincount(c, minlength=components) for c in itertools.combinations_with_replacement(range(components), k)], np.float64).reshape(-1, components)
    log_coef = math.lgamma(k + 1) - np.sum([[math.lgamma(v + 1) for v in row] for row in rows], axis=1)
    return rows, np.asarray(log_coef, np.float64)


def _log_product_integral(counts, means, precisions, log_dets):
    """log ∫ Π_s N(x | m_s, S_s)^{n_s} dx for each row of ``counts`` (…, S) (the S components'
    means (S, d), precisions S⁻¹ (S, d, d) and log|S| (S,) shared)."""
    d = means.shape[-1]
    if d == 1:  # scalars: matrix products, no batched LAPACK call per multiset and component
        prec, m = precisions[:, 0, 0], means[:, 0]
        lam, eta, c = counts @ prec, counts @ (prec * m), counts @ (prec * m * m)
        log_det_lam, quad = jnp.log(lam), eta**2 / lam
    else:
        lam = jnp.einsum("...s,sij->...ij", counts, precisions)
        eta = jnp.einsum("...s,sij,sj->...i", counts, precisions, means)
        c = jnp.einsum("...s,si,sij,sj->...", counts, means, precisions, means)
        chol = jnp.linalg.cholesky(lam)
        y = jax.scipy.linalg.solve_triangular(chol, eta[..., None], lower=True)[..., 0]
        log_det_lam = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        quad = jnp.sum(y * y, axis=-1)
    n = jnp.sum(counts, axis=-1)
    return -0.5 * (n * d * math.log(2 * math.pi) + counts @ log_dets) + 0.5 * d * math.log(2 * math.pi) - 0.5 * log_det_lam - 0.5 * (c - quad)


def precisions_and_log_dets(covs):
    """(S⁻¹, log|S|) of covariances (S, d, d): elementwise in d = 1 (no batched LAPACK call)."""
    if covs.shape[-1] == 1:
        return 1.0 / covs, jnp.log(covs[..., 0, 0])
    return jnp.linalg.inv(covs), jnp.linalg.slogdet(covs)[1]


def log_power_moment(p, r, k: int):
    """log E_P[R(x)^k] for one pair of :class:`MultivariateGaussianMixture` P, R (no batch shape),
    exactly, for an integer k ≥ 0 (C(k + K − 1, K − 1) multisets)."""
    return log_power_moments(p, r, k)[k]


@functools.partial(jax.jit, static_argnames=("kmax",))
def log_power_moments(p, r, kmax: int):
    """log E_P[R^k] for k = 0..kmax at once (one compiled program per (kmax, K_P, K_R, d)): every
    multiset of every order in one batch, then a log-sum-exp per order."""
    blocks = [multisets(k, r.components) for k in range(1, kmax + 1)]
    rows = jnp.asarray(np.concatenate([b[0] for b in blocks]))  # (J, K_R)
    log_coef = jnp.asarray(np.concatenate([b[1] for b in blocks]))
    order = np.concatenate([np.full(b[0].shape[0], k) for k, b in enumerate(blocks, start=1)])
    stacked = jnp.concatenate([p.covs, r.covs], axis=0)  # P's components first, then R's
    means = jnp.concatenate([p.means, r.means], axis=0)
    precisions, log_dets = precisions_and_log_dets(stacked)
    kp, j = p.components, rows.shape[0]
    counts = jnp.concatenate([jnp.broadcast_to(jnp.eye(kp), (j, kp, kp)), jnp.broadcast_to(rows[:, None, :], (j, kp, rows.shape[1]))], axis=-1)
    log_int = _log_product_integral(counts, means, precisions, log_dets)  # (J, K_P)
    log_terms = jax.scipy.special.logsumexp(log_int + jnp.log(p.weights)[None, :], axis=-1) + log_coef + rows @ jnp.log(r.weights)
    top = jax.ops.segment_max(log_terms, order, num_segments=kmax + 1)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    total = jax.ops.segment_sum(jnp.exp(log_terms - top[order]), order, num_segments=kmax + 1)
    return (top + jnp.log(total)).at[0].set(0.0)


def density_peak_bound(r):
    """An upper bound on max_x R(x): Σ_t v_t N(m_t | m_t, S_t) = Σ_t v_t (2π)^{−d/2} |S_t|^{−1/2}
    (each component at its own mode)."""
    log_dets = jnp.linalg.slogdet(r.covs)[1]
    return jnp.sum(r.weights * jnp.exp(-0.5 * (r.dim * math.log(2 * math.pi) + log_dets)), axis=-1)
