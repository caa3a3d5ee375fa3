"""A guard against a deadlock of jaxlib's CPU runtime on machines with few cores (issue 14).

**The deadlock** (jax/jaxlib 0.10.2, CPU, seen on a 2-core machine): jaxlib's batched LAPACK
kernels (``getrf`` behind ``jnp.linalg.inv``/``slogdet``, ``potrf`` behind ``cholesky``,
``trsm`` behind ``solve_triangular``) split their batch over XLA's intra-op thread pool and wait
for the parts (``jax::ParallelBatchMap``, a blocking counter). XLA:CPU runs independent
operations of one program concurrently on that same pool; when as many such kernels start at once
as the pool has threads (two, here), every thread waits for parts that no thread is left to run,
and the call never returns (0 % CPU; the caller waits in ``BlockUntilReady``). Native stacks
(gdb) show both pool threads in ``LuDecomposition::Kernel → ParallelBatchMap →
BlockingCounter::Wait``. Reproducer, a few lines of plain JAX (hangs on the first or second call
on 2 cores; runs with ``taskset -c 0``)::

    x = jnp.asarray(np.random.default_rng(0).normal(size=(100_000, 3, 3))) + 3 * jnp.eye(3)
    f = jax.jit(lambda x, y: (jnp.linalg.inv(x), jnp.linalg.inv(y)))
    for _ in range(20): jax.block_until_ready(f(x, x + 1.0))

In jaxpuffer it hung the batched leakage measures (Monte Carlo KL in d = 5, the series' moments
under ``vmap``). ``--xla_cpu_multi_thread_eigen=false`` does not avoid it;
``--xla_cpu_enable_concurrency_optimized_scheduler=false`` does (its schedule no longer starts
the independent kernels side by side): with it the reproducer and every hanging jaxpuffer case ran
to the end in repeated trials, and calibration times did not change (warm 4096 Gaussian pairs
0.84 s either way; cold whole process 55.0 vs 55.5 s).

So importing jaxpuffer adds that flag to ``XLA_FLAGS``, which XLA reads when its CPU backend starts
(the first computation): it takes effect if nothing ran before the import. A flag the user already
set for this option is kept; ``JAXPUFFER_XLA_GUARD=0`` leaves ``XLA_FLAGS`` alone.
"""

from __future__ import annotations

import os

OPTION = "xla_cpu_enable_concurrency_optimized_scheduler"
FLAG = f"--{OPTION}=false"
_OFF = ("0", "false", "no", "off")


def guard_from_environment() -> bool:
    """Add :data:`FLAG` to ``XLA_FLAGS`` unless turned off or set by the user; True if added."""
    if os.environ.get("JAXPUFFER_XLA_GUARD", "1").strip().lower() in _OFF:
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if OPTION in flags:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()
    return True
