"""One calibration over several processes with JAX's multi-controller runtime (issue 16).

Every process runs this script with its own ``--process``; each holds only its part of the pairs
(here: a slice of 10,000 random Gaussian pairs, as if each host had loaded its own file), and each
prints the Calibration of the whole set. On one machine (CPU, gloo collectives):

    python examples/distributed.py --process 0 --processes 2 --port 12355 &
    python examples/distributed.py --process 1 --processes 2 --port 12355

On a GPU cluster or TPU pod: one process per host, started by your scheduler; leave out
``--cpu`` and call ``jax.distributed.initialize()`` with no arguments where the cluster is
auto-detected (SLURM, Open MPI, Cloud TPU); each process searches its part on its own GPUs
(``calibrate(..., devices=None)``: every local device).
"""

import argparse

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--process", type=int, required=True, help="this process's index, 0 … processes − 1")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--coordinator", default="127.0.0.1", help="host of process 0")
    parser.add_argument("--port", type=int, default=12355)
    parser.add_argument("--pairs", type=int, default=10_000, help="pairs in the whole set")
    parser.add_argument("--level", default="exact")
    parser.add_argument("--gpu", action="store_true", help="use the default collectives (NCCL) instead of gloo on CPU")
    args = parser.parse_args()

    if not args.gpu:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # before any JAX computation (importing jaxpuffer starts none)
    jax.distributed.initialize(f"{args.coordinator}:{args.port}", num_processes=args.processes, process_id=args.process)

    import numpy as np


    rng = np.random.default_rng(0)  # the whole set, drawn alike everywhere; each process keeps its slice
    mean, std = rng.normal(0, 1, (2, args.pairs)), rng.uniform(0.5, 3, (2, args.pairs))
    part = slice(args.process * args.pairs // args.processes, (args.process + 1) * args.pairs // args.processes)
    pairs = jp.PairSet(jp.Gaussian(mean[0, part], std[0, part]), jp.Gaussian(mean[1, part], std[1, part]))

    c = jp.calibrate(pairs, 1.0, 1e-6, level=args.level, progress=args.process == 0)
    print(f"process {args.process}: {part.stop - part.start} of {args.pairs} pairs here; b = {c.scale:.10g} "
          f"(binding pair {c.binding[0]}, δ at b = {c.delta_achieved:.3e})")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
