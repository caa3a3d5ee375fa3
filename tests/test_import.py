"""``import jaxpuffer`` switches JAX to float64 for the process (README, "float64"); it warns once,
and only where that can surprise: JAX was imported first, still in its 32-bit default."""
import os
import subprocess
import sys

import pytest

CASES = [  # (script, extra environment, expect the warning)
    ("import jax, jaxpuffer, jax.numpy as jnp; print(jnp.ones(1).dtype)", {}, True),
    ("import jaxpuffer, jax.numpy as jnp; print(jnp.ones(1).dtype)", {}, False),
    ("import jax, jaxpuffer, jax.numpy as jnp; print(jnp.ones(1).dtype)", {"JAX_ENABLE_X64": "1"}, False),
    ("import jax; jax.config.update('jax_enable_x64', True); import jaxpuffer, jax.numpy as jnp; print(jnp.ones(1).dtype)", {}, False),
]


@pytest.mark.parametrize("script,env,warns", CASES)
def test_float64_switch_warns_only_where_it_surprises(script, env, warns):
    base = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    done = subprocess.run([sys.executable, "-W", "always", "-c", script], env={**base, "JAXPUFFER_CACHE": "0", **env},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "float64"
    assert ("jaxpuffer turned on JAX's 64-bit mode" in done.stderr) is warns, done.stderr[-2000:]
    assert done.stderr.count("64-bit mode for this whole process") <= 1
