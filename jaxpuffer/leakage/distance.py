"""dist_GMM, the GMM-masking paper's eq. (3): the distance between two mixtures of K components,
min over matchings π of max_i max(|w_i − w'_π(i)|, d_TV(N_i, N'_π(i))): for d = 1 with the total
variation between two Gaussians in closed form; for d > 1 in closed form where the two covariances
are equal (d_TV = 2Φ(‖Δ‖_Σ/2) − 1, Δ the mean gap in the Mahalanobis norm of Σ) and otherwise by
Monte Carlo, d_TV = E_f[(1 − g/f)₊] on draws of f, with its standard error.

d_TV(N(m₁, s₁²), N(m₂, s₂²)) = ½ ∫ |f − g|: the densities cross where the quadratic
log f − log g vanishes (one root when s₁ = s₂ and m₁ ≠ m₂, else zero or two), and f − g keeps one
sign between crossings, so d_TV = ½ Σ over those intervals I of |P_f(I) − P_g(I)| (normal CDFs).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import jax
import jax.numpy as jnp
from scipy import special

from .mixtures import MultivariateGaussianMixture, component_log_densities


def tv_gaussians_1d(m1: float, s1: float, m2: float, s2: float) -> float:
    """Total variation between N(m1, s1²) and N(m2, s2²), s1, s2 > 0, from the densities' crossings."""
    if s1 == s2:
        roots = [] if m1 == m2 else [0.5 * (m1 + m2)]
    else:
        # log f − log g = 0: a x² + b x + c = 0
        a = 1 / (2 * s2**2) - 1 / (2 * s1**2)
        b = m1 / s1**2 - m2 / s2**2
        c = m2**2 / (2 * s2**2) - m1**2 / (2 * s1**2) + math.log(s2 / s1)
        disc = b * b - 4 * a * c
        roots = [] if disc < 0 else sorted({(-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)})
    cdf = lambda x, m, s: 0.5 * special.erfc(-(x - m) / (s * math.sqrt(2.0)))  # noqa: E731
    edges = [-math.inf, *roots, math.inf]
    parts = [(cdf(hi, m1, s1) - cdf(lo, m1, s1)) - (cdf(hi, m2, s2) - cdf(lo, m2, s2)) for lo, hi in zip(edges[:-1], edges[1:])]
    return 0.5 * math.fsum(abs(v) for v in parts)


def tv_gaussians(key, m1, c1, m2, c2, draws: int = 200_000):
    """Total variation between N(m1, c1) and N(m2, c2) in d dimensions: (value, standard error);
    exact (error 0) where c1 = c2, else Monte Carlo E_f[(1 − g/f)₊] over ``draws`` draws of f."""
    m1, c1, m2, c2 = (np.asarray(v, np.float64) for v in (m1, c1, m2, c2))
    if np.array_equal(c1, c2):
        gap = m1 - m2
        maha = math.sqrt(float(gap @ np.linalg.solve(c1, gap)))
        return float(special.erf(maha / (2 * math.sqrt(2.0)))), 0.0
    x = m1 + jax.random.normal(key, (draws, m1.size), jnp.float64) @ jnp.linalg.cholesky(c1).T
    log_f = component_log_densities(x, jnp.asarray(m1), jnp.asarray(c1))
    log_g = component_log_densities(x, jnp.asarray(m2), jnp.asarray(c2))
    excess = jnp.maximum(-jnp.expm1(log_g - log_f), 0.0)
    return float(jnp.mean(excess)), float(jnp.std(excess)) / math.sqrt(draws)


def dist_gmm(p: MultivariateGaussianMixture, q: MultivariateGaussianMixture, *, key=None, draws: int = 200_000):
    """Eq. (3) for two single mixtures with the same number of components (K! matchings, K ≤ 8).
    d = 1: exact, returns a float. d > 1: returns (value, standard error), the Gaussian total
    variations by :func:`tv_gaussians` (``key`` required where covariances differ); the error is the
    largest standard error among the K² total variations."""
    if p.dim != q.dim or p.batch_shape or q.batch_shape:
        raise ValueError("dist_gmm needs two single mixtures (no batch shape) of the same dimension d")
    k = p.components
    if q.components != k:
        raise ValueError(f"p and q must have the same number of components; got {k} and {q.components}")
    if k > 8:
        raise ValueError(f"dist_gmm enumerates K! matchings: K must be <= 8; got {k}")
    wp, wq = np.asarray(p.weights), np.asarray(q.weights)
    if p.dim == 1:
        mp_, sp = np.asarray(p.means[:, 0]), np.sqrt(np.asarray(p.covs[:, 0, 0]))
        mq, sq = np.asarray(q.means[:, 0]), np.sqrt(np.asarray(q.covs[:, 0, 0]))
        tv = np.array([[tv_gaussians_1d(mp_[i], sp[i], mq[j], sq[j]) for j in range(k)] for i in range(k)])
        se = np.zeros_like(tv)
    else:
        covs_differ = any(not np.array_equal(np.asarray(p.covs[i]), np.asarray(q.covs[j])) for i in range(k) for j in range(k))
        if key is None and covs_differ:
            raise ValueError("key is required for d > 1 where covariances differ (Monte Carlo total variation)")
        keys = jax.random.split(key if key is not None else jax.random.PRNGKey(0), k * k)
        pairs = [[tv_gaussians(keys[i * k + j], p.means[i], p.covs[i], q.means[j], q.covs[j], draws) for j in range(k)] for i in range(k)]
        tv, se = np.array([[v for v, _ in row] for row in pairs]), np.array([[e for _, e in row] for row in pairs])
    cost = np.maximum(np.abs(wp[:, None] - wq[None, :]), tv)
    value = float(min(max(cost[i, perm[i]] for i in range(k)) for perm in itertools.permutations(range(k))))
    return value if p.dim == 1 else (value, float(se.max()))
