"""Discrete priors at scale: jaxpuffer (jit, warm, batched) vs a per-pair numpy/scipy loop.

10⁴ random pairs of pmfs on alphabets of 16–64 points (padded to 64 with zero-mass copies of the
last point): the Kantorovich plan π* and its sensitivity, Theorem 2 (relaxed) and the exact-level
Laplace calibration. Baseline, in the same process, per pair:
  * plan: the north-west-corner rule in a Python loop (numpy arrays);
  * Theorem 2: scipy.optimize.brentq on each line of the plan;
  * exact level: scipy.optimize.brentq on δ(b), δ evaluated by a numpy scan of the density
    difference with bisection-refined crossings and the mixture CDFs.
Ratios are pairs per second, jaxpuffer over the baseline (timed on a subsample).

Usage: python bench_discrete.py [--pairs 10000] [--baseline 200]
"""
import argparse
import math
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np
from scipy import optimize

from jaxpuffer import kantorovich

EPS, DELTA, WIDTH = 1.0, 1e-6, 64


def random_pairs(n, seed):
    """Alphabets of 16–64 integer points in [0, 100), padded to WIDTH; Dirichlet pmfs."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(16, WIDTH + 1, n)
    x = np.empty((n, WIDTH))
    p = np.zeros((n, WIDTH))
    q = np.zeros((n, WIDTH))
    for k, m in enumerate(sizes):  # data generation only
        pts = np.sort(rng.choice(100, m, replace=False)).astype(float)
        x[k] = np.concatenate([pts, np.full(WIDTH - m, pts[-1])])
        p[k, :m], q[k, :m] = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    return x, p, q


def pairset(x, p, q):
    return jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q))


# ----------------------------------------------------------------------------- baseline


def nw_plan(p, q):
    p, q = p.copy(), q.copy()
    plan = np.zeros((p.size, q.size))
    i = j = 0
    while i < p.size and j < q.size:
        m = min(p[i], q[j])
        plan[i, j] += m
        p[i] -= m
        q[j] -= m
        if p[i] <= 1e-15:
            i += 1
        else:
            j += 1
    return plan


def base_theorem2(x, plan):
    d = np.abs(np.subtract.outer(x, x))
    plan = np.where(plan > 1e-12, plan, 0.0)
    best = math.inf
    for mass, dist in list(zip(plan.T, d.T)) + list(zip(plan, d)):
        far = (mass > 0) & (dist > 0)
        if not far.any():
            continue
        g = lambda eta: np.sum(mass * (np.exp(eta * dist) - math.exp(EPS)))  # noqa: E731
        dmax = dist[mass > 0].max()
        hi = (EPS + math.log(mass.sum() / mass[(mass > 0) & (dist == dmax)].sum())) / dmax + 1e-9
        best = min(best, optimize.brentq(g, EPS / dmax, hi, xtol=1e-14))
    return 1.0 / best


def base_delta(x, p, q, b):
    def one(p, q):
        y = np.unique(np.concatenate([np.linspace(x.min() - 40 * b, x.max() + 40 * b, 4001), x]))
        dens = lambda t, w: np.exp(-np.abs(np.subtract.outer(t, x)) / b) @ w / (2 * b)  # noqa: E731
        f = lambda t: dens(t, p) - math.exp(EPS) * dens(t, q)  # noqa: E731
        fy = f(y)
        idx = np.nonzero(np.sign(fy[:-1]) != np.sign(fy[1:]))[0]
        a, c, fa = y[idx], y[idx + 1], fy[idx]
        for _ in range(60):
            m = 0.5 * (a + c)
            fm = f(m)
            left = np.sign(fm) == np.sign(fa)
            a, c, fa = np.where(left, m, a), np.where(left, c, m), np.where(left, fm, fa)
        edges = np.concatenate([[-np.inf], 0.5 * (a + c), [np.inf]])
        cdf = lambda t, w: (np.where(np.subtract.outer(t, x) < 0, 0.5 * np.exp(np.minimum(np.subtract.outer(t, x), 0) / b), 1 - 0.5 * np.exp(-np.maximum(np.subtract.outer(t, x), 0) / b)) @ w)  # noqa: E731
        inner = np.clip(edges, y[0] - 1, y[-1] + 1)
        mids = 0.5 * (inner[:-1] + inner[1:])
        pos = f(mids) > 0
        fp, fq = cdf(edges[1:], p) - cdf(edges[:-1], p), cdf(edges[1:], q) - cdf(edges[:-1], q)
        return float(np.sum(np.where(pos, np.maximum(fp - math.exp(EPS) * fq, 0), 0)))

    return max(one(p, q), one(q, p))


def base_exact(x, p, q):
    plan = nw_plan(p, q)
    hi = np.abs(np.subtract.outer(x, x))[plan > 1e-12].max() / EPS
    if base_delta(x, p, q, 1e-9 * hi) <= DELTA:
        return 0.0
    return optimize.brentq(lambda b: base_delta(x, p, q, b) - DELTA, 1e-9 * hi, hi, xtol=1e-10 * hi)


# ----------------------------------------------------------------------------- runs


def timed(fn):
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--baseline", type=int, default=200, help="pairs in the plan/Theorem 2 subsample (exact: a tenth)")
    args = parser.parse_args()
    print(f"devices: {jax.devices()}; {args.pairs} pairs, alphabets of 16–{WIDTH} points, (ε, δ) = ({EPS}, {DELTA})")
    x, p, q = random_pairs(args.pairs, seed=1)
    warm = pairset(*random_pairs(args.pairs, seed=2))
    pairs = pairset(x, p, q)
    sub = range(args.baseline)
    sub_exact = range(max(2, args.baseline // 10))

    def plan_and_sensitivity(ps):
        return jp.plan_sensitivity(jp.quantile_plan(ps))

    jobs = [
        ("plan π* + sensitivity", lambda ps: plan_and_sensitivity(ps),
         lambda k: np.abs(np.subtract.outer(x[k], x[k]))[nw_plan(p[k], q[k]) > 1e-12].max(), sub),
        ("Theorem 2", lambda ps: kantorovich.theorem2(ps, EPS), lambda k: base_theorem2(x[k], nw_plan(p[k], q[k])), sub),
        ("exact level", lambda ps: jp.calibrate(ps, EPS, DELTA, level="exact").per_pair, lambda k: base_exact(x[k], p[k], q[k]), sub_exact),
    ]
    print(f"\n{'task':<22} {'jaxpuffer s':>12} {'pairs/s':>10} {'baseline pairs/s':>17} {'ratio':>9} {'max rel. diff':>14}")
    for name, ours, base, subsample in jobs:
        ours(warm)  # compile
        got, t = timed(lambda: ours(pairs))
        start = time.perf_counter()
        ref = np.array([base(k) for k in subsample])
        t_base = (time.perf_counter() - start) / len(subsample)
        got = np.asarray(got)[list(subsample)]
        diff = np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300))
        print(f"{name:<22} {t:12.3f} {args.pairs / t:10.4g} {1 / t_base:17.4g} {args.pairs / t * t_base:8.0f}x {diff:14.1e}")


if __name__ == "__main__":
    main()
