"""Pure ε (δ = 0, issue 16 item 5): the smallest Laplace b with exact δ = 0 for Gaussian pairs,
jaxpuffer's batched call vs a per-pair scipy loop in the same process (both warm).

The baseline does what a careful user would without jaxpuffer: per pair, geometric bisection (40
steps) on b over [b_pure/2, 2·b_pure] of the predicate "the log-ratio of the two noisy densities
stays ≤ ε" — its supremum taken as the larger of a 4001-point grid over ±40 scales (log-densities
of N(μ, σ²) ⊛ Lap(b) with scipy's log_ndtr) and the analytic tail limits. It checks on a grid
only, so it is a lower bound on the work a certified answer needs; jaxpuffer's answer is verified
by its exact evaluator. Both return b_pure here (to ~1e-10, every pair's supremum is in its tails).

Usage: python bench_pure.py [--pairs 10000] [--baseline-pairs 50]
"""
import argparse
import math

import numpy as np
from scipy import special

import jaxpuffer as jp
from _timing import best_time


def _log_density(y, mu, s, b):
    """log of (N(μ, s²) ⊛ Laplace(b))(y), s > 0, each term in log space."""
    z, v = y - mu, s / b
    first = 0.5 * v * v - z / b + special.log_ndtr(z / s - v)
    second = 0.5 * v * v + z / b + special.log_ndtr(-z / s - v)
    return np.logaddexp(first, second) - math.log(2 * b)


def _baseline_one(m1, s1, m2, s2, eps):
    d, var = m1 - m2, (s1 - s2) * (s1 + s2)
    b_pure = (abs(d) + math.sqrt(d * d + 2 * eps * abs(var))) / (2 * eps)

    def pure(b):
        scale = max(s1, s2, b)
        y = 0.5 * (m1 + m2) + np.linspace(-40, 40, 4001) * scale
        r = _log_density(y, m1, s1, b) - _log_density(y, m2, s2, b)
        tails = abs(var) / (2 * b * b) + abs(d) / b
        return max(np.max(np.abs(r)), tails) <= eps

    lo, hi = b_pure / 2, 2 * b_pure
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if pure(mid) else (mid, hi)
    return hi


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--baseline-pairs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.pairs
    m1, m2 = rng.normal(0, 2, n), rng.normal(0, 2, n)
    s1, s2 = rng.uniform(0.1, 3, n), rng.uniform(0.1, 3, n)
    pairs = jp.PairSet(jp.Gaussian(m1, s1), jp.Gaussian(m2, s2))
    ours = lambda: jp.calibrate(pairs, 1.0, 0.0, level="exact")  # noqa: E731
    k = args.baseline_pairs
    theirs = lambda: [_baseline_one(m1[i], s1[i], m2[i], s2[i], 1.0) for i in range(k)]  # noqa: E731
    result = ours()  # compile
    t_ours, t_theirs = best_time(ours, repeat=args.repeat), best_time(theirs, repeat=1)
    agree = np.max(np.abs(np.asarray(result.per_pair)[:k] / np.array(theirs()) - 1))
    rate_ours, rate_theirs = n / t_ours, k / t_theirs
    print(f"pure ε, Laplace noise, Gaussian pairs, ε = 1, warm; jaxpuffer δ at b: {result.delta_achieved:g} (exact, certified)")
    print(f"jaxpuffer  {n:>6} pairs {t_ours:8.3f} s  {rate_ours:12,.0f} pairs/s")
    print(f"scipy loop {k:>6} pairs {t_theirs:8.3f} s  {rate_theirs:12,.0f} pairs/s")
    print(f"ratio {rate_ours / rate_theirs:,.0f}x; largest relative difference on the first {k} pairs: {agree:.2g}")


if __name__ == "__main__":
    main()
