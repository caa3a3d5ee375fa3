"""Calibration with generalized Gaussian noise GG(p) (issue 12): jaxpuffer (jit, warm, batched) vs
a per-pair scipy loop, Gaussian pairs at the coupling level (the level GG noise has today).

Baseline, in the same process: for each pair, scipy.optimize.brentq on the coupling bound
U(b) = E_Z[h(|Δμ + Δσ Z|)] (Z ~ N(0, 1), the Monge coupling of two Gaussians), evaluated by
scipy.integrate.quad, h the GG shift δ: the crossing of the two log-densities by brentq, then
``scipy.stats.gennorm`` CDFs. Run on a small subsample and scaled to pairs per second. The table
also gives the calibrated noise's standard deviation b √(Γ(3/p)/Γ(1/p)), median over pairs.

Usage: python bench_gg.py [--sizes 10000] [--baseline 4] [--ps 1.5 3]
"""
import argparse
import time

import jax
import numpy as np
from scipy import integrate, optimize, stats

import jaxpuffer as jp
from jaxpuffer.noise import GeneralizedGaussian

EPS, DELTA = 1.0, 1e-6


def random_pairs(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 2, n), rng.uniform(0.1, 3, n), rng.normal(0, 2, n), rng.uniform(0.1, 3, n)


def shift_delta(p, w, b):
    if w <= 0:
        return 0.0
    d = w / b
    gap = lambda y: abs(y - d) ** p - abs(y) ** p - EPS  # noqa: E731
    lo = -1.0
    while gap(lo) <= 0:
        lo *= 2
        if lo < -1e6:
            return 0.0
    if gap(d / 2) >= 0:
        return 0.0
    y = optimize.brentq(gap, lo, d / 2, xtol=1e-14)
    return max(stats.gennorm.cdf(y, p) - np.exp(EPS) * stats.gennorm.cdf(y - d, p), 0.0)


def scipy_bound(p, mi, si, mj, sj, b):
    m, s = mi - mj, abs(si - sj)
    if s == 0:
        return shift_delta(p, abs(m), b)
    f = lambda z: shift_delta(p, abs(m + s * z), b) * stats.norm.pdf(z)  # noqa: E731
    return integrate.quad(f, -12, 12, points=[-m / s], limit=200)[0]


def scipy_calibrate(p, mi, si, mj, sj):
    hi = (abs(mi - mj) + abs(si - sj) * stats.norm.isf(DELTA / 2)) / EPS + 1e-3
    while scipy_bound(p, mi, si, mj, sj, hi) > DELTA:
        hi *= 2
    return optimize.brentq(lambda b: scipy_bound(p, mi, si, mj, sj, b) - DELTA, hi * 1e-3, hi, xtol=1e-10 * hi)


def run(p, sizes, n_baseline):
    kernel = GeneralizedGaussian(p)
    cols = random_pairs(n_baseline, seed=99)
    start = time.perf_counter()
    base = [scipy_calibrate(p, *row) for row in zip(*cols)]
    base_rate = n_baseline / (time.perf_counter() - start)
    sub = jp.PairSet(jp.Gaussian(cols[0], cols[1]), jp.Gaussian(cols[2], cols[3]))
    ours_sub = np.asarray(jp.calibrate(sub, EPS, DELTA, level="coupling", noise=kernel).per_pair)
    agree = np.max(np.abs(ours_sub - base) / np.asarray(base))
    print(f"\nGG({p}) noise, coupling level, (ε, δ) = ({EPS}, {DELTA})   scipy loop: {base_rate:.3g} pairs/s on {n_baseline} pairs "
          f"(max rel. difference from jaxpuffer {agree:.1e})")
    print(f"{'pairs':>8} {'jaxpuffer s':>12} {'pairs/s':>10} {'ratio vs scipy':>15} {'iterations':>11} {'median std':>11}")
    for n in sizes:
        c = random_pairs(n, seed=2)
        pairs = jp.PairSet(jp.Gaussian(c[0], c[1]), jp.Gaussian(c[2], c[3]))
        jp.calibrate(pairs, EPS, DELTA, level="coupling", noise=kernel)  # compile, warm
        start = time.perf_counter()
        res = jp.calibrate(pairs, EPS, DELTA, level="coupling", noise=kernel)
        jax.block_until_ready(res.per_pair)
        t = time.perf_counter() - start
        std = np.median(np.sqrt(np.asarray(kernel.variance(res.per_pair))))
        print(f"{n:>8d} {t:12.3f} {n / t:10.4g} {n / t / base_rate:14.0f}x {res.iterations:>11d} {std:11.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--baseline", type=int, default=4, help="pairs in the scipy subsample")
    parser.add_argument("--ps", type=float, nargs="+", default=[1.5, 3.0])
    args = parser.parse_args()
    print(f"devices: {jax.devices()}")
    for p in args.ps:
        run(p, args.sizes, args.baseline)


if __name__ == "__main__":
    main()
