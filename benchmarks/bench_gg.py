"""Calibration with generalized Gaussian noise GG(p) (issue 12): jaxpuffer (jit, warm, batched) vs
a per-pair scipy loop, Gaussian pairs at the coupling level, and discrete priors at the exact level.

Baseline, in the same process: for each pair, scipy.optimize.brentq on the coupling bound
U(b) = E_Z[h(|Δμ + Δσ Z|)] (Z ~ N(0, 1), the Monge coupling of two Gaussians), evaluated by
scipy.integrate.quad, h the GG shift δ: the crossing of the two log-densities by brentq, then
``scipy.stats.gennorm`` CDFs. Run on a small subsample and scaled to pairs per second. The table
also gives the calibrated noise's standard deviation b √(Γ(3/p)/Γ(1/p)), median over pairs.

Discrete priors (random 4-atom pairs), exact level: the exact δ of both orders at a fixed scale,
jaxpuffer's certified enclosure (``discrete_delta``, jit, warm) vs scipy.integrate.quad of
[p ⊛ g − e^ε q ⊛ g]_+ (``gennorm.pdf``, breakpoints at the atoms) per pair, as δ evaluations per
second with their largest relative difference; then the calibrated scales at the exact and the
coupling level (median ratio: the noise the exact level saves) and the exact level's time.

Usage: python bench_gg.py [--sizes 10000] [--baseline 4] [--ps 1.5 3] [--discrete 1024]
"""
import argparse
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np
from scipy import integrate, optimize, stats

from jaxpuffer.noise import GeneralizedGaussian
from _pairs import gaussian_columns as random_pairs

EPS, DELTA = 1.0, 1e-6


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


def quad_discrete_delta(p, x, pw, qw, b):
    """max over both orders of ∫ [p ⊛ GG − e^ε q ⊛ GG]_+ by scipy.integrate.quad."""
    reach = b * 90.0 ** (1 / p)

    def one(u, v):
        f = lambda y: max(float(np.dot(u - np.exp(EPS) * v, stats.gennorm.pdf((y - x) / b, p))) / b, 0.0)  # noqa: E731
        return integrate.quad(f, x[0] - reach, x[-1] + reach, points=list(x), limit=400, epsabs=1e-14, epsrel=1e-12)[0]

    return max(one(pw, qw), one(qw, pw))


def run_discrete(p, n, n_baseline):
    from jaxpuffer.losses_discrete import discrete_delta

    kernel = GeneralizedGaussian(p)
    rng = np.random.default_rng(5)
    x = np.sort(rng.normal(0.0, 1.5, (n, 4)), axis=-1)
    pw, qw = rng.dirichlet(np.full(4, 0.7), n), rng.dirichlet(np.full(4, 0.7), n)
    b = np.full(n, 1.0)
    evaluate = jax.jit(lambda b: discrete_delta("exact", kernel, x, pw, qw, b, np.full(n, EPS), True))
    jax.block_until_ready(evaluate(b))  # compile, warm
    start = time.perf_counter()
    ours = np.asarray(jax.block_until_ready(evaluate(b)))
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    base = np.array([quad_discrete_delta(p, x[i], pw[i], qw[i], 1.0) for i in range(n_baseline)])
    base_rate = n_baseline / (time.perf_counter() - start)
    diff = np.max(np.abs(ours[:n_baseline] - base) / np.maximum(base, 1e-12))
    print(f"\nGG({p}) noise, discrete priors (4 atoms), exact δ at b = 1, both orders: jaxpuffer {n / t_ours:.4g} pairs/s on {n}, "
          f"scipy quad {base_rate:.3g} pairs/s on {n_baseline}: ratio {n / t_ours / base_rate:.0f}x (max rel. difference {diff:.1e})")
    pairs = jp.PairSet(jp.Discrete(x, pw), jp.Discrete(x, qw))
    jp.calibrate(pairs, EPS, DELTA, level="exact", noise=kernel)  # compile, warm
    start = time.perf_counter()
    exact = jp.calibrate(pairs, EPS, DELTA, level="exact", noise=kernel)
    t_exact = time.perf_counter() - start
    coupling = jp.calibrate(pairs, EPS, DELTA, level="coupling", noise=kernel)
    e, c = np.asarray(exact.per_pair), np.asarray(coupling.per_pair)
    need = e > 0
    print(f"  calibrate, exact level: {t_exact:.2f} s for {n} pairs ({exact.iterations} iterations at most); scale, coupling / exact: "
          f"median {np.median(c[need] / e[need]):.2f}, range {np.min(c[need] / e[need]):.2f}–{np.max(c[need] / e[need]):.2f} "
          f"({np.sum(~need)} pairs need no noise)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--baseline", type=int, default=4, help="pairs in the scipy subsample")
    parser.add_argument("--ps", type=float, nargs="+", default=[1.5, 3.0])
    parser.add_argument("--discrete", type=int, default=1024, help="discrete pairs at the exact level (0: skip)")
    args = parser.parse_args()
    print(f"devices: {jax.devices()}")
    for p in args.ps:
        run(p, args.sizes, args.baseline)
        if args.discrete:
            run_discrete(p, args.discrete, args.baseline)


if __name__ == "__main__":
    main()
