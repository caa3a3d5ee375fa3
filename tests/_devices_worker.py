"""The two-device calibration check of tests/test_parallel.py, run in a process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=2``: every family at the exact level on one
device and on both; prints one JSON line. ``sharded`` records that the two-device call went
through ``jax.shard_map`` (and the one-device call did not)."""

import json

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np

DELTA = 1e-6
traced = []
_shard_map = jax.shard_map


def _counting_shard_map(*args, **kwargs):
    traced.append(1)
    return _shard_map(*args, **kwargs)


jax.shard_map = _counting_shard_map


def families(rng, n=64):
    def gaussian():
        return jp.Gaussian(rng.normal(0, 1, n), rng.uniform(0.5, 3, n))

    def mixture():
        return jp.GaussianMixture(rng.dirichlet(np.ones(3), n), rng.normal(0, 2, (n, 3)), rng.uniform(0.5, 2, (n, 3)))

    support = np.sort(rng.normal(0, 2, (n, 4)), axis=1)
    return {
        "gaussian": (jp.PairSet(gaussian(), gaussian()), "gaussian"),
        "mixture": (jp.PairSet(mixture(), mixture()), "laplace"),
        "discrete": (jp.PairSet(jp.Discrete(support, rng.dirichlet(np.ones(4), n)), jp.Discrete(support, rng.dirichlet(np.ones(4), n))), "laplace"),
    }


def main():
    report = {"devices": len(jax.devices()), "families": {}}
    for name, (pairs, noise) in families(np.random.default_rng(20261124)).items():
        out = {}
        for key, devices in (("one", jax.devices()[:1]), ("two", None)):
            traced.clear()
            c = jp.calibrate(pairs, np.array([0.5, 1.0]), DELTA, level="exact", noise=noise, devices=devices)
            out[key] = np.asarray(c.per_pair).tolist()
            out[f"scale_{key}"] = np.asarray(c.scale).tolist()
            out[f"delta_{key}"] = np.asarray(c.delta_achieved).tolist()
            out[f"binding_{key}"] = [np.asarray(i).tolist() for i in c.binding]
            out[f"traced_{key}"] = len(traced)
        out["sharded"] = out["traced_two"] > 0 and out["traced_one"] == 0
        out["eps"], out["delta"] = [0.5, 1.0], DELTA
        if name == "mixture":  # each pair's (weights, means, stds) of both priors, for the reference
            out["pairs"] = [[[np.asarray(leaf)[i].tolist() for leaf in (prior.weights, prior.means, prior.stds)] for prior in (pairs.first, pairs.second)]
                            for i in range(pairs.first.weights.shape[0])]
        report["families"][name] = out
    pairs, noise = families(np.random.default_rng(20261124))["gaussian"]
    grad = lambda devices: jax.grad(lambda e: jp.calibrate(pairs, e, DELTA, level="exact", noise=noise, devices=devices).scale)(1.0)  # noqa: E731
    report["grad"] = {"one": float(grad(jax.devices()[:1])), "two": float(grad(None))}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
