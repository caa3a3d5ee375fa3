"""Exact (ε, δ)-DP calibration of the GG mechanism (issue 13): the smallest b with exact δ(ε) ≤
target for 10⁴ scalar-query configurations (ε, δ, p, Δ), jaxpuffer's batched call (one per p)
against a per-configuration scipy loop in the same process (both warm); then 10⁴ Laplace
mechanisms on 3-coordinate vector queries (one batched call on the closed form) against a
per-configuration brentq on dp_accounting's composed Laplace PLD (connect the dots, step 1e-4).

The loop does what a careful user would without jaxpuffer: per configuration, brentq on log b of
δ(b) − target, δ from the crossing y* of |y − d|^p − |y|^p = ε (brentq) and scipy's gennorm CDFs
(p = 1 and 2 with dp_accounting's analytic Laplace and Gaussian privacy losses instead). It is not
certified; jaxpuffer's δ is a certified upper bound and its b is verified.

Usage: python bench_gg_dp.py [--configs 10000] [--baseline-configs 200] [--vector-baseline-configs 10]
"""
import argparse
import math

import jaxpuffer  # noqa: F401  (before jax: it switches JAX to float64, README "float64")
import jax.numpy as jnp
import numpy as np
from scipy import optimize, stats

from _timing import best_time
from jaxpuffer.mechanisms import gg_exact

ORDERS = (1.0, 1.5, 2.0, 3.0, 4.0)


def _delta_scipy(p, d, eps):
    if p == 1.0:
        from dp_accounting.pld import privacy_loss_mechanism as plm

        return plm.LaplacePrivacyLoss(1.0, sensitivity=d).get_delta_for_epsilon(eps)
    if p == 2.0:
        from dp_accounting.pld import privacy_loss_mechanism as plm

        return plm.GaussianPrivacyLoss(1 / math.sqrt(2), sensitivity=d).get_delta_for_epsilon(eps)
    def gap(y):  # |y − d|^p − |y|^p − ε, without cancellation for y < 0
        if y < 0:
            return abs(y) ** p * math.expm1(p * math.log1p(d / abs(y))) - eps
        return abs(y - d) ** p - y**p - eps

    left = -2 * (eps / (p * d)) ** (1 / (p - 1)) - 1
    if gap(d / 2) >= 0 or gap(left) <= 0:
        return 0.0 if gap(d / 2) >= 0 else 1.0
    y = optimize.brentq(gap, left, d / 2, xtol=1e-14, rtol=1e-14)
    return max(stats.gennorm.cdf(y, p) - math.exp(eps) * stats.gennorm.cdf(y - d, p), 0.0)


def _baseline_one(p, sens, eps, delta):
    f = lambda log_b: _delta_scipy(p, sens / math.exp(log_b), eps) - delta  # noqa: E731
    return math.exp(optimize.brentq(f, math.log(sens) - 10, math.log(sens) + 12, xtol=1e-13))


def _dp_accounting_vector_b(sens, eps, delta):
    """brentq on log b of dp_accounting's δ for the composed per-coordinate Laplace PLDs."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    def delta_at(log_b):
        pld = None
        for v in sens:
            one = pld_lib.from_laplace_mechanism(math.exp(log_b), sensitivity=float(v), value_discretization_interval=1e-4)
            pld = one if pld is None else pld.compose(one)
        return pld.get_delta_for_epsilon(eps) - delta

    # b lies between the largest coordinate's own Laplace answer and ‖Δ‖₁/ε (where δ = 0)
    lo, hi = math.log(max(sens) / (eps - 2 * math.log1p(-delta))), math.log(sum(sens) / eps)
    return math.exp(optimize.brentq(delta_at, lo - 1e-3, hi + 1e-3, xtol=1e-10))


def vector_section(n, k):
    rng = np.random.default_rng(1)
    eps = rng.uniform(0.1, 3.0, n)
    delta = 10.0 ** rng.uniform(-6, -2, n)
    sens = rng.uniform(0.1, 2.0, (n, 3))
    ours = lambda: gg_exact.calibrate_vector(jnp.asarray(eps), jnp.asarray(delta), jnp.asarray(sens), 1.0)  # noqa: E731
    result = np.asarray(ours())  # compile
    theirs = lambda: np.array([_dp_accounting_vector_b(sens[i], eps[i], delta[i]) for i in range(k)])  # noqa: E731
    t_ours, t_theirs = best_time(ours, repeat=2), best_time(theirs, repeat=1)
    ratio_b = result[:k] / theirs()
    rate_ours, rate_theirs = n / t_ours, k / t_theirs
    print("\nexact (ε, δ)-DP Laplace mechanism on vector queries, r = 3, ε in [0.1, 3], δ in [1e-6, 1e-2], warm")
    print(f"jaxpuffer (closed form) {n:>6} configurations {t_ours:8.3f} s  {rate_ours:12,.0f} /s")
    print(f"dp_accounting PLD loop  {k:>6} configurations {t_theirs:8.3f} s  {rate_theirs:12,.0f} /s")
    print(f"ratio {rate_ours / rate_theirs:,.0f}x; jaxpuffer's b / dp_accounting's (pessimistic) b on the first {k}: "
          f"{ratio_b.min():.6f} to {ratio_b.max():.6f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", type=int, default=10_000)
    parser.add_argument("--baseline-configs", type=int, default=200)
    parser.add_argument("--vector-baseline-configs", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.configs
    p = rng.choice(ORDERS, n)
    eps = rng.uniform(0.1, 3.0, n)
    delta = 10.0 ** rng.uniform(-10, -2, n)
    sens = rng.uniform(0.5, 2.0, n)
    groups = [(q, np.flatnonzero(p == q)) for q in ORDERS]

    def ours():
        out = np.empty(n)
        for q, idx in groups:  # one compiled search per p (p is static), all its configurations at once
            out[idx] = np.asarray(gg_exact.calibrate_shift(jnp.asarray(eps[idx]), jnp.asarray(delta[idx]), jnp.asarray(sens[idx]), q))
        return out

    k = args.baseline_configs
    theirs = lambda: np.array([_baseline_one(p[i], sens[i], eps[i], delta[i]) for i in range(k)])  # noqa: E731
    result = ours()  # compile
    t_ours, t_theirs = best_time(ours, repeat=2), best_time(theirs, repeat=1)
    agree = np.max(np.abs(result[:k] / theirs() - 1))
    rate_ours, rate_theirs = n / t_ours, k / t_theirs
    print(f"exact (ε, δ)-DP GG calibration, scalar queries, p in {ORDERS}, ε in [0.1, 3], δ in [1e-10, 1e-2], warm")
    print(f"jaxpuffer  {n:>6} configurations {t_ours:8.3f} s  {rate_ours:12,.0f} /s")
    print(f"scipy loop {k:>6} configurations {t_theirs:8.3f} s  {rate_theirs:12,.0f} /s")
    print(f"ratio {rate_ours / rate_theirs:,.0f}x; largest relative difference on the first {k}: {agree:.2g}")
    vector_section(n, args.vector_baseline_configs)


if __name__ == "__main__":
    main()
