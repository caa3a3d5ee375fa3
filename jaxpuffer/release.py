"""Release: draw Y = X + N with the calibrated noise."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from . import _validate

NOISES = ("laplace", "gaussian")


@partial(jax.jit, static_argnames="noise")
def _privatize(key, x, scale, noise):
    draw = jax.random.laplace if noise == "laplace" else jax.random.normal
    shape = jnp.broadcast_shapes(x.shape, scale.shape)
    return x + scale * draw(key, shape, dtype=jnp.float64)


def privatize(key, x, scale, *, noise: str = "laplace") -> jax.Array:
    """Y = X + N with N ~ Laplace(scale) (density e^{−|z|/b}/(2b)) or N ~ N(0, scale²).

    Args:
      key: a ``jax.random`` key.
      x: the values to publish (any shape).
      scale: the noise scale b (Laplace) or standard deviation θ (Gaussian), ≥ 0, broadcastable
        with ``x`` (use :attr:`Calibration.scale`).
      noise: ``"laplace"`` or ``"gaussian"``.
    """
    _validate.choice("noise", noise, NOISES)
    x = _validate.float_array("x", x)
    scale = _validate.float_array("scale", scale)
    _validate.nonnegative("scale", scale)
    _validate.broadcast_shapes(x=x.shape, scale=scale.shape)
    return _privatize(key, x, scale, noise)
