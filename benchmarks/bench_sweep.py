"""A privacy-utility sweep (issue 16, item 3): one batched calibrate call over an (ε, δ) grid vs
the Python loop of one call per grid point, in the same process, both warm (compiled once).

Each point of the sweep equals its single call bit for bit (tests/test_sweep.py); the sweep runs
every (pair, point) as one lane of the same compiled search, so the loop pays the per-call cost
(validation, dispatch, a small padded batch, the certificate) once per point.

Usage: python bench_sweep.py [--pairs 100] [--grid 10 10] [--levels theorem exact]
"""
import argparse

import numpy as np

import jaxpuffer as jp
from _pairs import gaussian_pairs
from _timing import best_time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--grid", type=int, nargs=2, default=(10, 10), metavar=("N_EPS", "N_DELTA"))
    parser.add_argument("--levels", nargs="+", default=["theorem", "exact"])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.pairs
    pairs = gaussian_pairs(n, rng)
    eps = np.geomspace(0.1, 10, args.grid[0])
    delta = np.geomspace(1e-3, 1e-9, args.grid[1])
    points = eps.size * delta.size
    print(f"{n} Gaussian pairs, {args.grid[0]} ε × {args.grid[1]} δ = {points} points, Laplace noise, warm, best of {args.repeat}")
    print(f"{'level':<9} {'sweep (s)':>10} {'loop (s)':>10} {'ratio':>8} {'pair-points/s (sweep)':>22}")
    for level in args.levels:
        sweep = lambda: jp.calibrate(pairs, eps, delta[:, None], level=level).scale  # noqa: E731
        loop = lambda: [jp.calibrate(pairs, float(e), float(d), level=level).scale for d in delta for e in eps]  # noqa: E731
        sweep(), loop()  # compile both
        t_sweep, t_loop = best_time(sweep, repeat=args.repeat), best_time(loop, repeat=args.repeat)
        print(f"{level:<9} {t_sweep:10.3f} {t_loop:10.3f} {t_loop / t_sweep:7.1f}x {n * points / t_sweep:22.4g}")


if __name__ == "__main__":
    main()
