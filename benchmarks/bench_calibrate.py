"""Numerical calibration at scale: jaxpuffer (jit, warm, batched) vs a per-pair scipy loop.

Baseline, in the same process: for each pair, scipy.optimize.brentq on δ(b) evaluated by
scipy.integrate.quad (adaptive) of [p_i − e^ε p_j]_+ (both orders), with the Gaussian ⊛ Laplace
density of MATH.md §6 in scipy; the coupling level integrates (35) with quad; Gaussian noise the
two-Gaussian hockey-stick with quad. Run on a small subsample and scaled to pairs per second.
Also: the presence pairs of a sum query over K = 10⁵ heterogeneous users at the exact level.

Usage: python bench_calibrate.py [--sizes 10000 100000] [--baseline 12]
"""
import argparse
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np
from scipy import integrate, optimize, special, stats

from _pairs import gaussian_columns as random_pairs, gaussian_pairset as pairset


EPS, DELTA = 1.0, 1e-6


# ----------------------------------------------------------------------------- scipy baseline


def _pdf_laplace(y, mu, s, b):
    z, u, v = y - mu, (y - mu) / s, s / b
    return (np.exp(v * v / 2 - z / b + special.log_ndtr(u - v)) + np.exp(v * v / 2 + z / b + special.log_ndtr(-u - v))) / (2 * b)


def _hockey(pdf1, pdf2, points):
    f = lambda y: max(pdf1(y) - np.exp(EPS) * pdf2(y), 0.0)  # noqa: E731
    pts = sorted(points)
    return sum(integrate.quad(f, a, c, limit=200)[0] for a, c in zip([-np.inf] + pts, pts + [np.inf]))


def scipy_delta(level, noise, mi, si, mj, sj, b):
    if level == "coupling":
        m, s = mi - mj, abs(si - sj)
        h = lambda w: (1 - np.exp(EPS - abs(w) / b)) * stats.norm.pdf(w, m, s)  # noqa: E731
        return integrate.quad(h, EPS * b, np.inf)[0] + integrate.quad(h, -np.inf, -EPS * b)[0]
    # breakpoints on the scale of the noisy release, so quad sees the tails where δ lives
    spread = np.array([0.0, 1, -1, 2, -2, 4, -4, 8, -8, 16, -16])
    v1, v2 = (np.hypot(s, b) if noise == "gaussian" else s + b for s in (si, sj))
    pts = list(np.unique(np.concatenate([mi + v1 * spread, mj + v2 * spread])))
    if noise == "gaussian":
        g1 = lambda y: stats.norm.pdf(y, mi, np.hypot(si, b))  # noqa: E731
        g2 = lambda y: stats.norm.pdf(y, mj, np.hypot(sj, b))  # noqa: E731
    else:
        g1 = lambda y: _pdf_laplace(y, mi, si, b)  # noqa: E731
        g2 = lambda y: _pdf_laplace(y, mj, sj, b)  # noqa: E731
    return max(_hockey(g1, g2, pts), _hockey(g2, g1, pts))


def scipy_calibrate(level, noise, mi, si, mj, sj):
    hi = (abs(mi - mj) + abs(si - sj) * stats.norm.isf(DELTA / 2)) / EPS
    while scipy_delta(level, noise, mi, si, mj, sj, hi) > DELTA:
        hi *= 2
    return optimize.brentq(lambda b: scipy_delta(level, noise, mi, si, mj, sj, b) - DELTA, hi * 1e-3, hi, xtol=1e-10 * hi)


# ----------------------------------------------------------------------------- runs


def run(level, noise, sizes, n_baseline):
    cols = random_pairs(n_baseline, seed=99)
    start = time.perf_counter()
    base = [scipy_calibrate(level, noise, *row) for row in zip(*cols)]
    base_rate = n_baseline / (time.perf_counter() - start)
    ours_sub = np.asarray(jp.calibrate(pairset(cols), EPS, DELTA, level=level, noise=noise).per_pair)
    agree = np.max(np.abs(ours_sub - base) / np.asarray(base))
    print(f"\n{level} level, {noise} noise, (ε, δ) = ({EPS}, {DELTA})   scipy loop: {base_rate:.3g} pairs/s on {n_baseline} pairs "
          f"(max rel. difference from jaxpuffer {agree:.1e})")
    print(f"{'pairs':>8} {'jaxpuffer s':>12} {'pairs/s':>10} {'ratio vs scipy':>15} {'iterations':>11} {'converged':>10}")
    for n in sizes:
        pairs = pairset(random_pairs(n, seed=2))
        # compile and warm on the same pairs: the search compacts unfinished pairs into batches of
        # a few sizes, and which sizes a pair set needs depends on its data (a new size compiles)
        jp.calibrate(pairs, EPS, DELTA, level=level, noise=noise)
        start = time.perf_counter()
        res = jp.calibrate(pairs, EPS, DELTA, level=level, noise=noise)
        jax.block_until_ready(res.per_pair)
        t = time.perf_counter() - start
        print(f"{n:>8d} {t:12.3f} {n / t:10.4g} {n / t / base_rate:14.0f}x {res.iterations:>11d} {str(res.converged):>10}")


def sum_query(K):
    rng = np.random.default_rng(5)
    means, stds = rng.uniform(0, 2, K), rng.uniform(0.2, 3, K)
    pairs = jp.sum_query_presence(means, stds)
    print(f"\nSum query, K = {K} heterogeneous users, presence pairs (Corollary 1(a)), (ε, δ) = ({EPS}, {DELTA})")
    for level in ("theorem", "coupling", "exact"):
        jp.calibrate(pairs, EPS, DELTA, level=level)  # compile, warm
        start = time.perf_counter()
        res = jp.calibrate(pairs, EPS, DELTA, level=level)
        t = time.perf_counter() - start
        print(f"  {level:>8}: b = {float(res.scale):.6f} (binding user {res.binding[0]}), {res.certificate} δ at b = {res.delta_achieved:.3g}, {t:.2f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--baseline", type=int, default=12, help="pairs in the scipy subsample")
    parser.add_argument("--users", type=int, default=100_000)
    args = parser.parse_args()
    print(f"devices: {jax.devices()}")
    run("exact", "laplace", args.sizes, args.baseline)
    run("coupling", "laplace", args.sizes, args.baseline)
    run("exact", "gaussian", args.sizes, args.baseline)
    sum_query(args.users)


if __name__ == "__main__":
    main()
