"""dist_GMM, the GMM-masking paper's eq. (3): the distance between two mixtures of K components,
min over matchings π of max_i max(|w_i − w'_π(i)|, d_TV(N_i, N'_π(i))), for d = 1 with the total
variation between two Gaussians in closed form.

d_TV(N(m₁, s₁²), N(m₂, s₂²)) = ½ ∫ |f − g|: the densities cross where the quadratic
log f − log g vanishes (one root when s₁ = s₂ and m₁ ≠ m₂, else zero or two), and f − g keeps one
sign between crossings, so d_TV = ½ Σ over those intervals I of |P_f(I) − P_g(I)| (normal CDFs).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special

from .mixtures import MultivariateGaussianMixture


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


def dist_gmm(p: MultivariateGaussianMixture, q: MultivariateGaussianMixture) -> float:
    """Eq. (3) for two 1-D mixtures with the same number of components (K! matchings, K ≤ 8)."""
    if p.dim != 1 or q.dim != 1 or p.batch_shape or q.batch_shape:
        raise ValueError("dist_gmm needs two single 1-D mixtures (d = 1, no batch shape)")
    k = p.components
    if q.components != k:
        raise ValueError(f"p and q must have the same number of components; got {k} and {q.components}")
    if k > 8:
        raise ValueError(f"dist_gmm enumerates K! matchings: K must be <= 8; got {k}")
    wp, mp_, sp = np.asarray(p.weights), np.asarray(p.means[:, 0]), np.sqrt(np.asarray(p.covs[:, 0, 0]))
    wq, mq, sq = np.asarray(q.weights), np.asarray(q.means[:, 0]), np.sqrt(np.asarray(q.covs[:, 0, 0]))
    cost = np.array([[max(abs(wp[i] - wq[j]), tv_gaussians_1d(mp_[i], sp[i], mq[j], sq[j])) for j in range(k)] for i in range(k)])
    return float(min(max(cost[i, perm[i]] for i in range(k)) for perm in itertools.permutations(range(k))))
