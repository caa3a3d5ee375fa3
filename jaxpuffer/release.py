"""Release: draw Y = X + N with the calibrated noise."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import _validate
from .noise import kernels


@jax.jit
def _privatize(key, x, scale, kernel):
    return x + kernel.sample(key, jnp.broadcast_shapes(x.shape, scale.shape), scale)


def privatize(key, x, scale, *, noise="laplace") -> jax.Array:
    """Y = X + N with N drawn from the noise kernel at ``scale``: Laplace(scale) (density
    e^{−|z|/b}/(2b)), N(0, scale²), or any kernel of :mod:`jaxpuffer.noise` (e.g. GG(p)).

    Args:
      key: a ``jax.random`` key.
      x: the values to publish (any shape).
      scale: the noise scale b (Laplace) or standard deviation θ (Gaussian), ≥ 0, broadcastable
        with ``x`` (use :attr:`Calibration.scale`).
      noise: ``"laplace"``, ``"gaussian"`` or a kernel (``jaxpuffer.noise.GeneralizedGaussian(p)``).
    """
    kernel = kernels.resolve(noise)
    x = _validate.float_array("x", x)
    scale = _validate.float_array("scale", scale)
    _validate.nonnegative("scale", scale)
    _validate.broadcast_shapes(x=x.shape, scale=scale.shape)
    return _privatize(key, x, scale, kernel)
