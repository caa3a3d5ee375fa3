"""The adversarial soundness harness: ``python -m tests.adversarial --budget 30m``.

Draws random and extreme pair sets of every family (:mod:`tests.adversarial.generators`), ε
log-uniform in [1e-3, 20] and δ log-uniform from the exact level's floor (1e-30) to 0.99, calibrates
them with ``calibrate(level="exact")`` for Laplace and Gaussian noise (``--noises``; ``gg`` adds
generalized Gaussian GG(p) noise, p log-uniform in [1, 8] per round, for every family — Gaussian
and mixture priors in batches of ``--batch``/16 pairs, mixtures of 2 components: each component
pair costs the library ~0.5 s per δ at that level, and the reference a quadrature per density
value), and checks every per-pair answer b with the independent reference
(:mod:`tests.adversarial.reference`):

* **violation**: reference δ(b) > target·(1 + 1e-9) (b = 0: the priors' own δ);
* **tight**: reference δ(b·(1 − 1e-4)) > target (b > 0). An answer that is not tight is reported
  with its reason: ``bound`` where the library's own δ at b·(1 − 1e-4) is above the target (its
  evaluator's bound, slack or fallback, is above the truth there), ``search`` where it is not (the
  search stopped above a feasible scale).

``--pure``: δ = 0 (pure ε, Laplace noise, every family), checked with the
reference's supremum of the noisy log-ratio (violation: above ε + 1e-9; tight: above ε at
b·(1 − 1e-6)).

Prints the counts, the worst ratio δ(b)/target and the tightness, and each violation as a
reproducer; exits 1 if any violation was found. ``--workers N`` checks in N processes.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import sys
import time

import numpy as np

from .memory import bound_memory_maps
from .reference import check as _check
from .reference import check_pure as _check_pure

TOL = 1e-9


def run(budget_s: float, seed: int, workers: int, batch: int, families, noises=("laplace", "gaussian"), out=sys.stdout, pure=False):
    import jaxpuffer as jp
    from .generators import FAMILIES

    rng = np.random.default_rng(seed)
    stats = {"checks": 0, "violations": 0, "worst": 0.0, "tight": 0, "positive": 0, "zero": 0, "unconverged": 0}
    bad = []
    loose = {}  # (family, noise) -> [answers with b > 0 not tight, answers with b > 0]
    t0 = time.time()
    pool = cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) if workers > 1 else None
    while True:  # at least one round
        for family in families:
            for noise in noises:
                eps = float(np.exp(rng.uniform(np.log(1e-3), np.log(20))))
                target = 0.0 if pure else float(np.exp(rng.uniform(np.log(1e-30), np.log(0.99))))
                convolved = noise == "gg" and family != "discrete"  # (see the module docstring)
                small = {"k": 2} if convolved and family == "mixture" else {}
                pairs, ref = FAMILIES[family](rng, max(1, batch // 16) if convolved else batch, **small)
                kernel, own_delta, noise_name = _noise(jp, noise, rng)
                res = jp.calibrate(pairs, eps, target, level="exact", noise=kernel)
                b = np.asarray(res.per_pair).reshape(-1)
                own = np.asarray(own_delta(pairs, np.asarray(res.per_pair) * (1 - 1e-4), eps)).reshape(-1)
                stats["unconverged"] += 0 if res.converged else 1
                jobs = [(f, s, float(bi), eps, target, noise_name) for (f, s), bi in zip(ref, b)]
                check = _check_pure if pure else _check
                results = list(pool.map(check, jobs, chunksize=4)) if pool else list(map(check, jobs))
                for job, (ratio, tight), own_below in zip(jobs, results, own):
                    stats["checks"] += 1
                    stats["worst"] = max(stats["worst"], ratio)
                    if ratio > 1 + TOL:
                        stats["violations"] += 1
                        bad.append((family, noise, ratio, job))
                        _report("VIOLATION", family, noise, ratio, job, out)
                    if tight is None:
                        stats["zero"] += 1
                    else:
                        stats["positive"] += 1
                        stats["tight"] += bool(tight)
                        row = loose.setdefault((family, noise), [0, 0, 0])
                        row[0] += not tight and own_below > target  # the evaluator's bound
                        row[1] += not tight and own_below <= target  # the search
                        row[2] += 1
                        if not tight:
                            reason = "bound" if own_below > target else "search"
                            _report(f"NOT TIGHT ({reason}, own δ(b·(1 − 1e-4)) = {own_below:.4g})", family, noise, ratio, job, out)
        print(f"[{time.time() - t0:7.1f} s] {stats}", file=out, flush=True)
        bound_memory_maps()  # a new program set per round (component counts, batch shapes, GG orders)
        if time.time() - t0 >= budget_s:
            break
    if pool:
        pool.shutdown()
    tight_frac = stats["tight"] / max(stats["positive"], 1)
    print(f"checks {stats['checks']}, violations {stats['violations']}, worst δ/target {stats['worst']:.6g}, "
          f"tight {stats['tight']}/{stats['positive']} ({100 * tight_frac:.2f}%), zero answers {stats['zero']}, "
          f"calls not converged {stats['unconverged']}", file=out)
    for (family, noise), (n_bound, n_search, n) in sorted(loose.items()):
        print(f"  {family:9s} {noise:9s} not tight {n_bound + n_search}/{n} (bound {n_bound}, search {n_search})", file=out)
    for family, noise, ratio, job in bad[:20]:
        _report("VIOLATION", family, noise, ratio, job, out)
    return stats, bad


def _noise(jp, noise, rng):
    """(the kernel calibrate gets, the library's own exact δ at (pairs, scale, ε), the reference's
    name of the noise) for "laplace", "gaussian" or "gg" (p drawn log-uniform in [1, 8])."""
    if noise == "gg":
        shape = float(np.exp(rng.uniform(0.0, np.log(8.0))))
        kernel, name = jp.noise.GeneralizedGaussian(shape), f"gg:{shape!r}"
    else:
        kernel, name = noise, noise
    return kernel, lambda pairs, b, eps: jp.delta_exact(pairs, b, eps, noise=kernel), name


def _report(kind, family, noise, ratio, job, out):
    """One violation (or answer not tight) as a reproducer line; violations are printed again in
    the summary."""
    first, second, b, eps, target, noise = job  # the reference's name of the noise (GG: with its p)
    print(f"{kind} {family} {noise} ratio {ratio:.6g}: first={[list(map(float, a)) for a in first]} "
          f"second={[list(map(float, a)) for a in second]} b={b!r} eps={eps!r} delta={target!r}", file=out, flush=True)


def _duration(text: str) -> float:
    unit = {"s": 1, "m": 60, "h": 3600}.get(text[-1], None)
    return float(text[:-1]) * unit if unit else float(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.adversarial", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", default="30m", help="wall time, e.g. 90s, 30m (default 30m)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=64, help="pairs per calibrate call")
    parser.add_argument("--families", default=None, help="default gaussian,mixture,discrete")
    parser.add_argument("--noises", default=None, help="default laplace,gaussian; gg: GG(p) noise, p in [1, 8]")
    parser.add_argument("--pure", action="store_true", help="δ = 0 with Laplace noise (pure ε)")
    args = parser.parse_args(argv)
    families = args.families or "gaussian,mixture,discrete"
    noises = ("laplace",) if args.pure else tuple((args.noises or "laplace,gaussian").split(","))
    stats, _ = run(_duration(args.budget), args.seed, args.workers, args.batch, families.split(","), noises, pure=args.pure)
    return 1 if stats["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
