"""The random pair sets the benchmarks share (the same draws, in the same order, in every script).

Gaussian pairs: N(μ, σ²) against N(μ', σ'²), means ~ N(0, 2²), stds ~ U(0.1, 3). Mixture pairs:
two k-component mixtures, weights ~ Dirichlet(1, …, 1), means ~ N(0, 3²), stds ~ U(0.2, 2.5).
``seed``: a seed or a ``numpy.random.Generator`` (which then advances).
"""
import numpy as np

import jaxpuffer as jp


def gaussian_columns(n, seed):
    """(μ_i, σ_i, μ_j, σ_j), each (n,)."""
    rng = np.random.default_rng(seed)
    return rng.normal(0, 2, n), rng.uniform(0.1, 3, n), rng.normal(0, 2, n), rng.uniform(0.1, 3, n)


def gaussian_pairset(cols):
    return jp.PairSet(jp.Gaussian(cols[0], cols[1]), jp.Gaussian(cols[2], cols[3]))


def gaussian_pairs(n, seed):
    return gaussian_pairset(gaussian_columns(n, seed))


def mixture_columns(n, seed, k=3):
    """((weights, means, stds), (weights, means, stds)), each (n, k)."""
    rng = np.random.default_rng(seed)
    make = lambda: (rng.dirichlet(np.ones(k), n), rng.normal(0, 3, (n, k)), rng.uniform(0.2, 2.5, (n, k)))  # noqa: E731
    return make(), make()


def mixture_pairset(cols):
    return jp.PairSet(jp.GaussianMixture(*cols[0]), jp.GaussianMixture(*cols[1]))


def mixture_pairs(n, seed, k=3):
    return mixture_pairset(mixture_columns(n, seed, k))
