"""The guard of :mod:`jaxpuffer._xla_guard`: with jaxpuffer imported, two batched LAPACK kernels in
one program return (without it, jaxlib 0.10.2's CPU runtime deadlocked on this reproducer on a
2-core machine in every trial), and the guard leaves a user's own setting alone."""
import os
import subprocess
import sys

from jaxpuffer import _xla_guard

REPRODUCER = """
import numpy as np, jax, jax.numpy as jnp
import jaxpuffer
x = jnp.asarray(np.random.default_rng(0).normal(size=(100_000, 3, 3))) + 3 * jnp.eye(3)
f = jax.jit(lambda x, y: (jnp.linalg.inv(x), jnp.linalg.inv(y), jnp.linalg.cholesky(x @ jnp.swapaxes(x, -1, -2)), jnp.linalg.cholesky(y @ jnp.swapaxes(y, -1, -2))))
for _ in range(10):
    jax.block_until_ready(f(x, x + 1.0))
print("returned")
"""


def test_batched_lapack_kernels_side_by_side_return():
    env = {"PATH": "/usr/bin:/bin", "JAXPUFFER_CACHE": "0"}
    done = subprocess.run([sys.executable, "-c", REPRODUCER], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and "returned" in done.stdout, done.stderr[-2000:]


def test_guard_respects_the_user(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    monkeypatch.delenv("JAXPUFFER_XLA_GUARD", raising=False)
    assert _xla_guard.guard_from_environment()
    assert _xla_guard.FLAG in os.environ["XLA_FLAGS"].split()
    assert not _xla_guard.guard_from_environment()  # already there: not added twice
    monkeypatch.setenv("XLA_FLAGS", f"--{_xla_guard.OPTION}=true")
    assert not _xla_guard.guard_from_environment()
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("JAXPUFFER_XLA_GUARD", "0")
    assert not _xla_guard.guard_from_environment() and os.environ["XLA_FLAGS"] == ""
