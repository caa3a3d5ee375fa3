"""Exact-level throughput on the platform JAX runs on — a GPU where one is present — with every
answer class checked on the CPU in the same process (issue 16, item 6).

Three workloads, Laplace noise, (ε, δ) = (1, 1e-6) unless swept:
  * ``--gaussian`` random Gaussian pairs (default 10⁶);
  * ``--mixtures`` random pairs of 3-component mixtures (default 10⁵);
  * an ``--sweep`` N_ε × N_δ grid (default 100 × 100, ε ∈ [0.1, 10], δ ∈ [1e-9, 1e-3]) over
    ``--sweep-pairs`` Gaussian pairs (default 10): one batched call, N_ε·N_δ·pairs lanes.
Each is run on the chosen platform first on one ``--chunk`` of its pairs and on its last,
partial chunk (the first call: it compiles the programs the full run needs, and its time is
printed) and then in full, warm;
lanes/s is the full run's. Then a random subsample of each workload's answers
(``--check``) is checked on the CPU backend of the same process: the exact δ at the returned
scale (``delta_exact``) must not exceed the target, and the CPU's own calibration of the same
pairs is printed beside it (max relative difference of the scales). On a CPU-only machine the
"check" is the same backend, so it only re-verifies the certificate.

Measured 2026-11-26 (lanes/s of the full, warm run; first call in parentheses, compiles included):
  * one NVIDIA H200, JAX 0.11.2, ``--chunk 65536``: 10⁶ Gaussian pairs 26,453 /s (118.7 s on
    65,536 pairs); the 100 × 100 sweep over 10 pairs 44,533 /s (66.1 s); 10⁵ mixture pairs did not
    finish inside the device time left (under ~180 s for the first 65,536-pair call, not enough).
    CPU check of 2,000 answers each: max δ/target 0.99999999995; scales within 6e-15 (Gaussian)
    and 1.8e-12 (sweep) of the CPU's.
  * this 2-core CPU, JAX 0.10.2, default chunk: 6,629 /s; 3,788 /s; 2,048 mixture pairs 104 /s.
    The mixtures' CPU check found delta_exact in another batch shape at 1.0000086 × target; the
    independent reference gave 0.99999994 × target (the upper bound's jitter in the docstring of
    :func:`certificate_on_cpu`).

Measured 2026-11-28, one NVIDIA H200, JAX 0.11.2, ``--gaussian 0 --sweep 1 1 --sweep-pairs 0
--mixtures 100000 --chunk 8192 --check 1000 --progress``: 10⁵ mixture pairs, first call (8,192
pairs) 145.7 s; full run 86.8 s, 1,152 /s. The progress bar splits it: the 12 full chunks
(98,304 pairs) took 18.9 s, **5,195 /s**; the last, partial chunk (1,696 pairs, padded to 2,048)
took ~53 s, nearly all the compile of its shape, which the first call had not compiled (it now
does: :func:`warm_up_index`); the certificate's ~15 s followed, its bound then compiled at a
shape of its own (100,032 lanes; since then it runs in the search's chunk shapes). CPU check of
1,000 answers: ``delta_exact`` in the CPU's batch shape gave up to 1.0034 × target, the
independent reference 0.9999999 × target (the jitter above); scales within 1.4e-7 of the CPU's.
The same run on this CPU (JAX 0.10.2), ``--mixtures 10000 --check 200``: 124 /s (first call, all
10⁴ pairs, 126.0 s); the certificate took under 1 s of its 80.7 s; the check gave 1.0007 ×
target by ``delta_exact`` in a batch of 256 and 0.9999996 × target by the reference.

Usage: python bench_gpu.py [--platform gpu|cpu] [--gaussian 1000000] [--mixtures 100000]
                           [--sweep 100 100] [--sweep-pairs 10] [--check 2000] [--chunk 16384]
                           [--json results.json] [--progress]
"""
import argparse
import json
import pathlib
import sys
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from adversarial.reference import exact_delta as reference_delta  # noqa: E402  (the harness's independent reference: scipy, no jaxpuffer)
from _pairs import gaussian_pairs, mixture_pairs  # noqa: E402

EPS, DELTA = 1.0, 1e-6


def timed(fn, *args):
    """(``fn(*args)``, its wall time), waiting for its per-pair scales."""
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out.per_pair)
    return out, time.perf_counter() - start


def warm_up_index(n, chunk):
    """The pairs of a first call that compiles every shape a call on all n pairs in chunks of
    ``chunk`` compiles: one full chunk, and the last, partial chunk's pairs (padded to a smaller
    shape of its own)."""
    return np.r_[0 : min(n, chunk), (n // chunk) * chunk if n > chunk else n : n]


def as_mixture(prior, i):
    """Prior ``i`` of a batch as (weights, means, stds) arrays (a Gaussian as one component)."""
    if isinstance(prior, jp.Gaussian):
        return np.ones(1), np.atleast_1d(np.asarray(prior.mean)[i]), np.atleast_1d(np.asarray(prior.std)[i])
    return tuple(np.asarray(getattr(prior, f))[i] for f in ("weights", "means", "stds"))


def certificate_on_cpu(pairs, per_pair, eps, delta, sample, rng):
    """For ``sample`` random answers: max δ/target of ``delta_exact`` on the CPU backend at the
    returned scales (lanes at scale 0 need no noise: their δ at b = 0 is checked the same way),
    and, where that exceeds 1, of the harness's independent reference (scipy; the evaluator is
    an upper bound whose looseness moves with rounding: XLA's code for another batch shape or
    backend can prove a piece one way and not the other). ``pairs``, ``eps`` and ``delta`` are
    per lane, like the flat ``per_pair``. Returns (max ratio, max reference ratio or None, count)."""
    idx = np.sort(rng.choice(per_pair.size, size=min(sample, per_pair.size), replace=False))
    with jax.default_device(jax.devices("cpu")[0]):
        ratio = np.asarray(jp.delta_exact(pairs[idx], per_pair[idx], eps[idx])) / delta[idx]
    over = idx[ratio > 1.0]
    truth = [reference_delta(as_mixture(pairs.first, i), as_mixture(pairs.second, i), float(per_pair[i]), float(eps[i])) / delta[i] for i in over]
    return float(np.max(ratio)), (max(truth) if truth else None), idx.size


def agreement_on_cpu(pairs, eps, delta, per_pair, chunk):
    """Max relative difference between ``per_pair`` and the CPU backend's calibration of the same
    pairs at the same (ε, δ)."""
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        mine = np.asarray(jp.calibrate(pairs, eps, delta, level="exact", chunk_size=chunk, devices=[cpu]).per_pair)
    return float(np.max(np.abs(mine - per_pair) / np.maximum(np.abs(per_pair), 1e-300)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default=None, help="JAX platform (default: JAX's default backend)")
    parser.add_argument("--gaussian", type=int, default=1_000_000)
    parser.add_argument("--mixtures", type=int, default=100_000)
    parser.add_argument("--sweep", type=int, nargs=2, default=(100, 100), metavar=("N_EPS", "N_DELTA"))
    parser.add_argument("--sweep-pairs", type=int, default=10)
    parser.add_argument("--check", type=int, default=2000, help="answers per workload checked on the CPU")
    parser.add_argument("--chunk", type=int, default=16384, help="calibrate's chunk_size")
    parser.add_argument("--json", default=None, help="also write the table here")
    parser.add_argument("--progress", action="store_true", help="calibrate's progress bar (stderr) on the full runs")
    args = parser.parse_args()
    platform = args.platform or jax.default_backend()
    device = jax.devices(platform)[0]
    print(f"jaxpuffer {jp.__version__}, JAX {jax.__version__}, platform {platform}: {device.device_kind} ({device})", flush=True)
    rng = np.random.default_rng(0)
    eps_grid = np.geomspace(0.1, 10, args.sweep[0])[:, None]
    delta_grid = np.geomspace(1e-9, 1e-3, args.sweep[1])[None, :]
    workloads = [  # (name, pair generator, size, ε, δ); a size of 0 skips the workload
        ("gaussian", gaussian_pairs, args.gaussian, EPS, DELTA),
        ("sweep", gaussian_pairs, args.sweep_pairs, eps_grid, delta_grid),
        ("mixtures", mixture_pairs, args.mixtures, EPS, DELTA),
    ]
    rows = []
    print(f"{'workload':<9} {'lanes':>9} {'first call (s)':>15} {'warm (s)':>9} {'lanes/s':>10}   CPU check of n answers: max δ/target, "
          "evaluator / reference where > 1; max rel. difference to the CPU's scales", flush=True)
    for name, make_pairs, size, eps, delta in workloads:
        if size == 0:
            continue
        pairs = make_pairs(size, rng)
        def run(p, progress=False):
            return jp.calibrate(p, eps, delta, level="exact", chunk_size=args.chunk, progress=progress)

        with jax.default_device(device):
            _, first = timed(run, pairs[warm_up_index(pairs.batch_shape[0], args.chunk)])
            print(f"{name}: first call {first:.2f} s; now the full run", flush=True)
            result, warm = timed(run, pairs, args.progress)
        per_pair = np.asarray(result.per_pair)
        lanes = per_pair.size
        n = pairs.batch_shape[0]
        flat_pairs = pairs[np.tile(np.arange(n), lanes // n)]  # a sweep's lanes are (ε, δ, pair)
        eps_l, delta_l = (np.broadcast_to(np.expand_dims(v, -1), per_pair.shape).reshape(-1) for v in (np.asarray(eps), np.asarray(delta)))
        ratio, truth, k = certificate_on_cpu(flat_pairs, per_pair.reshape(-1), eps_l, delta_l, args.check, rng)
        if name == "sweep":  # every 10th ε and δ of the grid, all its pairs
            rel = agreement_on_cpu(pairs, eps[::10], delta[:, ::10], per_pair[::10, ::10], args.chunk)
        else:
            sub = np.sort(rng.choice(n, size=min(args.check, n), replace=False))
            rel = agreement_on_cpu(pairs[sub], eps, delta, per_pair[sub], args.chunk)
        truth_s = "-" if truth is None else f"{truth:.12f}"
        print(f"{name:<9} {lanes:>9} {first:>15.2f} {warm:>9.2f} {lanes / warm:>10,.0f}   n={k}: {ratio:.12f} / {truth_s}; {rel:.1e}", flush=True)
        rows.append(dict(workload=name, lanes=lanes, first_s=first, warm_s=warm, lanes_per_s=lanes / warm, check_max_delta_ratio=ratio, check_max_reference_ratio=truth,
                         check_max_rel_scale=rel, checked=k, converged=result.converged, platform=platform, device=str(device.device_kind)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
