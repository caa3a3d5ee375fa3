"""Gaussian-mixture priors at scale: jaxpuffer (jit, warm, batched) vs a per-pair scipy loop.

10⁴ random pairs of 3-component mixtures, (ε, δ) = (1, 1e-3):
  * Theorem 2 (eq. (13) as printed) with the paper's w* and with the bound-optimal w — jaxpuffer's
    exact transportation simplex, batched; baseline scipy.optimize.linprog (HiGHS) per pair;
  * the coupling level of the GMM plan (Σ w U1, the bound-optimal plan): jaxpuffer's batched
    search; baseline linprog + scipy.optimize.brentq on the closed form of (35) in scipy;
  * the exact level (hockey-stick divergence of the mixture ⊛ Laplace releases): jaxpuffer's
    batched search; baseline scipy.optimize.brentq on δ(b) by scipy.integrate.quad of
    [p_i − e^ε p_j]_+ on panels cut at every component mean ± multiples of (σ + b), bracketed by
    the baseline's own coupling-level b (feasible for the exact level).
Ratios are pairs per second, jaxpuffer over the baseline timed on a subsample (a smaller one for
the exact level, whose baseline takes seconds per pair).

Usage: python bench_gmm.py [--pairs 10000] [--baseline 200] [--baseline-exact 10]
"""
import argparse
import math
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np
from scipy import integrate, optimize, special, stats

from _pairs import mixture_columns, mixture_pairset as pairset


EPS, DELTA, K = 1.0, 1e-3, 3


def random_pairs(n, seed):
    return mixture_columns(n, seed, K)


def lp(a, b, c):
    eq = np.vstack([np.kron(np.eye(K), np.ones(K)), np.kron(np.ones(K), np.eye(K))])
    return optimize.linprog(c.ravel(), A_eq=eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs").x.reshape(K, K)


def costs(first, second, i):
    d_mu = np.abs(first[1][i][:, None] - second[1][i][None, :])
    d_s = np.abs(first[2][i][:, None] - second[2][i][None, :])
    return d_mu, d_s


def base_theorem2(first, second, i, coupling):
    tau = stats.norm.isf(DELTA / 2)
    d_mu, d_s = costs(first, second, i)
    bound = d_mu + tau * d_s
    w = lp(first[0][i], second[0][i], bound if coupling == "bound" else d_mu**2 + d_s**2)
    return np.sum(w * bound) / EPS


def u1(m, s, b):
    """(35) in closed form (MATH.md §6), scipy."""
    if s == 0:
        return max(1 - math.exp(EPS - abs(m) / b), 0.0)
    c = EPS * b
    right = stats.norm.sf((c - m) / s) - math.exp(EPS - m / b + s * s / (2 * b * b) + special.log_ndtr((m - s * s / b - c) / s))
    left = stats.norm.cdf((-c - m) / s) - math.exp(EPS + m / b + s * s / (2 * b * b) + special.log_ndtr((-c - m - s * s / b) / s))
    return max(right + left, 0.0)


def bound_plan(first, second, i):
    """linprog's plan for the bound cost |Δμ| + τ*(δ)|Δσ| of pair i."""
    d_mu_abs, d_s = costs(first, second, i)
    return lp(first[0][i], second[0][i], d_mu_abs + stats.norm.isf(DELTA / 2) * d_s)


def base_coupling(first, second, i):
    tau = stats.norm.isf(DELTA / 2)
    d_mu_abs, d_s = costs(first, second, i)
    w = bound_plan(first, second, i)
    d_mu = first[1][i][:, None] - second[1][i][None, :]
    d_sig = first[2][i][:, None] - second[2][i][None, :]
    f = lambda b: sum(w[m, l] * u1(d_mu[m, l], abs(d_sig[m, l]), b) for m in range(K) for l in range(K) if w[m, l] > 0) - DELTA  # noqa: E731, E741
    hi = np.max(np.where(w > 0, d_mu_abs + tau * d_s, 0)) / EPS
    return optimize.brentq(f, hi * 1e-3, hi, xtol=1e-10 * hi)


def log_density(y, prior, b):
    """log of Σ_m α_m N(μ_m, σ_m²) ⊛ Laplace(b) at y (MATH.md §6), scipy."""
    w, m, s = prior
    z, v = y - m, s / b
    u = z / s
    comps = np.logaddexp(v * v / 2 - z / b + special.log_ndtr(u - v), v * v / 2 + z / b + special.log_ndtr(-u - v)) - np.log(2 * b)
    return special.logsumexp(comps, b=w)


def base_exact(first, second, i):
    p, q = (tuple(a[i] for a in prior) for prior in (first, second))
    ladder = np.array([0.0, 0.5, 1, 2, 4, 8, 16, 32, 60])

    def delta(b):
        cuts = np.unique(np.concatenate([mk + (sk + b) * np.concatenate([ladder, -ladder]) for mk, sk in zip([*p[1], *q[1]], [*p[2], *q[2]])]))

        def one(a, c):
            f = lambda y: max(math.exp(log_density(y, a, b)) - math.exp(EPS + log_density(y, c, b)), 0.0)  # noqa: E731
            return sum(integrate.quad(f, lo, hi, epsabs=1e-15, epsrel=1e-10, limit=200)[0] for lo, hi in zip(cuts[:-1], cuts[1:]))

        return max(one(p, q), one(q, p)) - DELTA

    hi = base_coupling(first, second, i)
    return optimize.brentq(delta, hi * 1e-3, hi, xtol=1e-10 * hi) if delta(hi * 1e-3) > 0 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--baseline", type=int, default=200)
    parser.add_argument("--baseline-exact", type=int, default=10)
    args = parser.parse_args()
    print(f"devices: {jax.devices()}; {args.pairs} pairs of {K}-component mixtures, (ε, δ) = ({EPS}, {DELTA})")
    cols, warm = random_pairs(args.pairs, 1), pairset(random_pairs(args.pairs, 2))
    pairs = pairset(cols)
    jobs = [
        ("Theorem 2, w* (W2)", lambda ps: jp.bounds.theorem2(ps, EPS, DELTA, coupling="w2", form="paper"), lambda i: base_theorem2(*cols, i, "w2")),
        ("Theorem 2, bound-opt w", lambda ps: jp.bounds.theorem2(ps, EPS, DELTA, coupling="bound", form="paper"), lambda i: base_theorem2(*cols, i, "bound")),
        ("coupling level", lambda ps: jp.calibrate(ps, EPS, DELTA, level="coupling").per_pair, lambda i: base_coupling(*cols, i)),
        ("exact level", lambda ps: jp.calibrate(ps, EPS, DELTA, level="exact").per_pair, lambda i: base_exact(*cols, i)),
    ]
    print(f"\n{'task':<24} {'jaxpuffer s':>12} {'pairs/s':>10} {'baseline pairs/s':>17} {'ratio':>8} {'max rel. diff':>14}")
    for name, ours, base in jobs:
        jax.block_until_ready(ours(warm))
        start = time.perf_counter()
        got = np.asarray(jax.block_until_ready(ours(pairs)))
        t = time.perf_counter() - start
        n_base = args.baseline_exact if name == "exact level" else args.baseline
        start = time.perf_counter()
        ref = np.array([base(i) for i in range(n_base)])
        t_base = (time.perf_counter() - start) / n_base
        rel = np.abs(got[:n_base] - ref) / np.maximum(ref, 1e-300)
        note = ""
        if name == "coupling level":  # the bound cost is L1-like: LP ties are common, and tied plans give other b
            ours_w = np.asarray(jp.gmm_coupling(pairset(cols)[: args.baseline], cost="bound", delta=DELTA).weights)
            same = np.array([np.allclose(ours_w[i], bound_plan(*cols, i), atol=1e-9) for i in range(args.baseline)])
            rel = rel[same]
            note = f"  (over the {same.sum()} of {args.baseline} pairs where linprog picked the same optimal plan)"
        print(f"{name:<24} {t:12.3f} {args.pairs / t:10.4g} {1 / t_base:17.4g} {args.pairs / t * t_base:7.0f}x {rel.max():14.1e}{note}")


if __name__ == "__main__":
    main()
