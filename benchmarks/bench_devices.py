"""Exact-level calibration of Gaussian pairs (Laplace noise) on one device vs every device of this
process (``calibrate(devices=...)``, issue 16), in the same run, as a ratio; then a scaling curve
(pairs/s and the process's peak resident memory so far) over the sizes asked for.

On this CPU the devices are forced host devices (``--host-devices N`` sets
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` before JAX starts: N threads sharing the
machine's cores); on a GPU machine ``--platform gpu`` uses its GPUs.

Usage: python bench_devices.py [--host-devices 2] [--platform cpu|gpu] [--sizes 10000 100000 1000000]
"""
import argparse
import os
import resource
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host-devices", type=int, default=2, help="forced host devices (CPU platform)")
    parser.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    if args.platform == "cpu":
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={args.host_devices}"

    import jax
    import numpy as np

    import jaxpuffer as jp
    from _pairs import gaussian_pairs
    from _timing import best_time

    devices = jax.devices(args.platform)
    print(f"jaxpuffer {jp.__version__}, JAX {jax.__version__}: {len(devices)} {args.platform} device(s): {devices}")
    rng = np.random.default_rng(0)

    def pairs(n):
        return gaussian_pairs(n, rng)

    def run(p, devs):
        return jp.calibrate(p, 1.0, 1e-6, level="exact", devices=devs).per_pair

    print(f"{'pairs':>9} {'1 device (s)':>13} {'all (s)':>9} {'ratio':>6} {'pairs/s (all)':>14} {'peak RSS (GiB)':>15}  agree (max rel, first 10⁵)")
    for n in args.sizes:
        p = pairs(n)
        warm = p[: min(n, 100_000)]  # the compiles are not timed (chunks of 16,384: the same shapes as n)
        run(warm, devices[:1]), run(warm, devices)
        repeat = 2 if n <= 100_000 else 1
        t_one = best_time(run, p, devices[:1], repeat=repeat)
        t_all = best_time(run, p, devices, repeat=repeat)
        one, every = np.asarray(run(warm, devices[:1])), np.asarray(run(warm, devices))
        rel = float(np.max(np.abs(one - every) / np.maximum(one, 1e-300)))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"{n:>9} {t_one:>13.2f} {t_all:>9.2f} {t_one / t_all:>6.2f} {n / t_all:>14,.0f} {peak:>15.2f}  {rel:.1e}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
