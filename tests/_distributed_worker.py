"""One process of the two-process calibration test (tests/test_parallel.py), run as

    python tests/_distributed_worker.py PROCESS_ID NUM_PROCESSES PORT OUT.json

It joins JAX's multi-controller runtime on localhost (gloo CPU collectives), calibrates its part
of a fixed pair set (process p holds pairs[SPLIT[p]:SPLIT[p + 1]], parts of unequal length), and
writes its Calibration as JSON. Then it checks that an error on one process is an error on every
process (no hang): process 1 alone passes no pair set, then process 1 alone another δ.
"""

import json
import sys

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.config.update("jax_enable_x64", True)  # explicit, as README "float64" advises when jax comes first

import numpy as np  # noqa: E402

import jaxpuffer as jp  # noqa: E402

SPLIT = (0, 23, 60)  # process 0: 23 pairs, process 1: 37
EPS = (0.5, 1.0)  # a sweep of two points: the binding pair of each must come from the right process
DELTA = 1e-6
OPTIONS = dict(level="exact", noise="gaussian")


def pair_set(part=slice(None)):
    """Gaussian pairs with distinct per-pair scales (the binding pair is unique)."""
    rng = np.random.default_rng(20261124)
    n = SPLIT[-1]
    first = jp.Gaussian(rng.normal(0, 1, n), rng.uniform(0.5, 3, n))
    second = jp.Gaussian(rng.normal(0, 1, n), rng.uniform(0.5, 3, n))
    return jp.PairSet(first[part], second[part])


def as_json(c) -> dict:
    return dict(
        scale=np.asarray(c.scale).tolist(),
        per_pair=np.asarray(c.per_pair).tolist(),
        binding=[np.asarray(i).tolist() for i in c.binding],
        delta_achieved=np.asarray(c.delta_achieved).tolist(),
        binding_pair=[np.asarray(leaf).tolist() for leaf in jax.tree_util.tree_leaves(c.binding_pair)],
        converged=bool(c.converged),
        iterations=int(c.iterations),
    )


def outcome(call) -> str:
    try:
        call()
    except Exception as error:  # what each process raised
        return f"{type(error).__name__}: {error}"
    return "no error"


def main():
    pid, count, port, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=count, process_id=pid,
                               initialization_timeout=60, heartbeat_timeout_seconds=30)
    part = pair_set(slice(SPLIT[pid], SPLIT[pid + 1]))
    result = as_json(jp.calibrate(part, np.array(EPS), DELTA, **OPTIONS))
    bad = None if pid == 1 else part  # no pair set on process 1 only: refused there, and process 0 learns of it
    result["invalid_on_one"] = outcome(lambda: jp.calibrate(bad, np.array(EPS), DELTA, **OPTIONS))
    result["delta_differs"] = outcome(lambda: jp.calibrate(part, np.array(EPS), DELTA * (1 + pid), **OPTIONS))
    with open(out, "w") as file:
        json.dump(result, file)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
