"""Adversary priors: the distribution of the published value X given one secret.

Priors are immutable JAX pytrees with an arbitrary batch shape, so a whole set of secrets (or of
adversaries) is one object that ``jit``, ``vmap`` and ``grad`` pass through. Construction
validates concrete inputs eagerly (finite values, std ≥ 0, broadcastable shapes); JAX's own
unflattening bypasses validation, so tracers and vmap placeholders flow freely.

MATH.md §2: Gaussian X | s ~ N(μ, σ²), σ = 0 being a point mass (the differential-privacy case).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import _validate


class _Prior:
    """Shared pytree plumbing for priors: named array fields, immutable, indexable."""

    _fields: tuple[str, ...] = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **fields) -> None:
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def tree_flatten(self):
        return tuple(getattr(self, f) for f in self._fields), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj._set(**dict(zip(cls._fields, children)))
        return obj

    def _map(self, fn):
        return jax.tree_util.tree_map(fn, self)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


@jax.tree_util.register_pytree_node_class
class Gaussian(_Prior):
    """Gaussian prior N(mean, std²) with any batch shape; ``std == 0`` is a point mass.

    Args:
      mean: the prior mean μ (any shape).
      std: the prior standard deviation σ ≥ 0 (any shape broadcastable with ``mean``).

    The two fields are stored broadcast to their common shape, the prior's ``batch_shape``.
    """

    _fields = ("mean", "std")
    mean: jax.Array
    std: jax.Array

    def __init__(self, mean, std):
        mean = _validate.float_array("mean", mean)
        std = _validate.float_array("std", std)
        _validate.nonnegative("std", std)
        shape = _validate.broadcast_shapes(mean=mean.shape, std=std.shape)
        self._set(mean=jnp.broadcast_to(mean, shape), std=jnp.broadcast_to(std, shape))

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.mean.shape)

    @property
    def variance(self) -> jax.Array:
        return self.std**2

    def broadcast_to(self, shape) -> "Gaussian":
        return self._map(lambda a: jnp.broadcast_to(a, tuple(shape)))

    def reshape(self, *shape) -> "Gaussian":
        return self._map(lambda a: a.reshape(*shape))

    def __getitem__(self, index) -> "Gaussian":
        return self._map(lambda a: a[index])

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError("len() of a Gaussian prior with an empty batch shape")
        return self.batch_shape[0]
