"""Timing helpers shared by the benchmarks: best-of-n wall time of a blocking call."""
import time

import jaxpuffer  # noqa: F401  (before jax: it switches JAX to float64, README "float64")
import jax


def best_time(fn, *args, repeat: int = 3) -> float:
    """Best wall time (s) of ``fn(*args)`` over ``repeat`` runs, waiting for JAX results."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:12.4g} /s"
