"""Closed forms at scale: Theorem 1 over 10⁶ and 10⁷ pairs, Corollary 1(a) for K up to 10⁷ users.

Baselines run in the same process: a per-pair Python loop over scipy (scipy.stats.norm.isf for
τ*(δ)) on a 10⁴ subsample, scaled to pairs per second; for Corollary 1(a) a vectorized numpy O(K)
computation. Ratios, not absolute times, are the figures to compare (the machine is shared).
"""

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np
import scipy.stats

from _timing import best_time, rate

EPS, DELTA = 1.0, 1e-6


def scipy_loop(mi, si, mj, sj):
    out = np.empty(len(mi))
    for k in range(len(mi)):
        out[k] = (abs(mi[k] - mj[k]) + abs(si[k] - sj[k]) * scipy.stats.norm.isf(DELTA / 2)) / EPS
    return out


def numpy_corollary(means, stds):
    var = stds**2
    total = var.sum()
    d_sigma = var / (np.sqrt(total) + np.sqrt(np.maximum(total - var, 0)))
    return (np.abs(means) + d_sigma * scipy.stats.norm.isf(DELTA / 2)) / EPS


def main():
    rng = np.random.default_rng(0)
    print(f"devices: {jax.devices()}")
    sub = 10_000
    cols = [rng.normal(size=sub), rng.uniform(size=sub), rng.normal(size=sub), rng.uniform(size=sub)]
    t_loop = best_time(scipy_loop, *cols, repeat=1)
    loop_rate = sub / t_loop
    print(f"\nTheorem 1 (eq. 5), pairs per second      [scipy per-pair loop on {sub}: {loop_rate:.4g} /s]")
    print(f"{'pairs':>10} {'jit kernel':>16} {'calibrate()':>16} {'ratio kernel/loop':>18} {'ratio calibrate/loop':>21}")
    kernel = jax.jit(lambda p: jp.bounds.theorem1(p, EPS, DELTA))
    for n in (10**6, 10**7):
        pairs = jp.PairSet(jp.Gaussian(rng.normal(size=n), rng.uniform(size=n)), jp.Gaussian(rng.normal(size=n), rng.uniform(size=n)))
        check = np.asarray(kernel(pairs)[:sub])
        ref = scipy_loop(*(np.asarray(a)[:sub] for a in (pairs.first.mean, pairs.first.std, pairs.second.mean, pairs.second.std)))
        assert np.allclose(check, ref, rtol=1e-12), "jaxpuffer and the scipy loop disagree"
        t_kernel = best_time(kernel, pairs)
        t_cal = best_time(lambda p: jp.calibrate(p, EPS, DELTA, level="theorem").per_pair, pairs)
        print(f"{n:>10d} {rate(n, t_kernel):>16} {rate(n, t_cal):>16} {n / t_kernel / loop_rate:18.0f}x {n / t_cal / loop_rate:20.0f}x")

    print("\nCorollary 1(a) (eq. 9), K users: O(K) from the totals")
    print(f"{'K':>10} {'jaxpuffer s':>12} {'ns / user':>10} {'numpy s':>10} {'ratio numpy/jax':>16}")
    kernel = jax.jit(lambda m, s: jp.bounds.corollary1_presence(m, s, EPS, DELTA))
    for K in (10**5, 10**6, 10**7):
        means, stds = rng.normal(size=K), rng.uniform(size=K)
        assert np.allclose(np.asarray(kernel(means, stds)), numpy_corollary(means, stds), rtol=1e-9)
        t_jax = best_time(kernel, means, stds)
        t_np = best_time(numpy_corollary, means, stds)
        print(f"{K:>10d} {t_jax:12.4g} {t_jax / K * 1e9:10.3g} {t_np:10.4g} {t_np / t_jax:15.2f}x")
    print("\n(linear scaling: the ns / user column stays flat as K grows tenfold)")


if __name__ == "__main__":
    main()
