"""Random and extreme pair sets for the adversarial harness, one generator per prior family.

Each returns (PairSet, [(first, second)] as (w, μ, σ) arrays for the reference). Extremes: std
ratios 1e-4 … 1e4, means up to 1e8, point masses, light far components, narrow components next
to wide ones, atoms with irregular spacing and zero probabilities.
"""
from __future__ import annotations

import numpy as np

import jaxpuffer as jp


def _log_uniform(rng, lo, hi, size=None):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size))


def gaussian_pairs(rng, n):
    scale = _log_uniform(rng, 1e-3, 1e3, n)
    m1 = rng.normal(0, 1, n) * scale * np.where(rng.random(n) < 0.1, 1e5, 1.0)
    m2 = m1 + rng.normal(0, 1, n) * scale * _log_uniform(rng, 1e-3, 10, n)
    s1 = scale * _log_uniform(rng, 1e-2, 1e2, n)
    s2 = s1 * _log_uniform(rng, 1e-4, 1e4, n) ** rng.choice([0.0, 0.25, 1.0], n)
    s1 = np.where(rng.random(n) < 0.08, 0.0, s1)  # point masses
    s2 = np.where(rng.random(n) < 0.08, 0.0, s2)
    m1, m2 = np.clip(m1, -1e8, 1e8), np.clip(m2, -1e8, 1e8)
    pairs = jp.PairSet(jp.Gaussian(m1, s1), jp.Gaussian(m2, s2))
    return pairs, [(([1.0], [a], [b]), ([1.0], [c], [d])) for a, b, c, d in zip(m1, s1, m2, s2)]


def _mixture(rng, k):
    w = rng.dirichlet(np.full(k, 0.7))
    light = rng.random(k) < 0.2
    w = np.where(light, w * _log_uniform(rng, 1e-7, 1e-2, k), w)
    w = w / w.sum()
    spread = _log_uniform(rng, 0.1, 100)
    mu = rng.normal(0, spread, k)
    far = rng.random(k) < 0.15
    mu = np.where(far, mu * 30, mu)
    sd = spread * _log_uniform(rng, 1e-4, 1.0, k)  # narrow next to wide
    return w, mu, sd


def mixture_pairs(rng, n, k=4):
    a = [_mixture(rng, k) for _ in range(n)]
    c = [_mixture(rng, k) for _ in range(n)]
    stack = lambda xs, i: np.stack([x[i] for x in xs])  # noqa: E731
    pairs = jp.PairSet(jp.GaussianMixture(stack(a, 0), stack(a, 1), stack(a, 2)), jp.GaussianMixture(stack(c, 0), stack(c, 1), stack(c, 2)))
    return pairs, list(zip(a, c))


def discrete_pairs(rng, n, atoms=6):
    support = np.sort(np.cumsum(_log_uniform(rng, 1e-2, 10, (n, atoms)), axis=1), axis=1)
    def pmf():
        p = rng.dirichlet(np.full(atoms, 0.6), n)
        p = np.where(rng.random((n, atoms)) < 0.2, 0.0, p)
        p[:, 0] += (p.sum(1) == 0)
        return p / p.sum(1, keepdims=True)
    p, q = pmf(), pmf()
    pairs = jp.PairSet(jp.Discrete(support, p), jp.Discrete(support, q))
    zeros = np.zeros(atoms)
    return pairs, [((pi, x, zeros), (qi, x, zeros)) for x, pi, qi in zip(support, p, q)]


FAMILIES = {"gaussian": gaussian_pairs, "mixture": mixture_pairs, "discrete": discrete_pairs}
