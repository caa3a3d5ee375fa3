"""Eager input validation for the public API.

Every public function converts its numeric inputs with :func:`float_array` and checks them here,
*outside* of tracing: when a value is a JAX tracer (inside ``jit``, ``vmap`` or ``grad``) its
contents are unknown and the checks are skipped, so the same functions stay transformable.
Each failure is a ``ValueError`` whose message starts with the argument's name.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def is_concrete(x) -> bool:
    """True when ``x`` holds known values (not a tracer), so it can be checked eagerly."""
    return not isinstance(x, jax.core.Tracer)


def _describe(arr: np.ndarray) -> str:
    bad = arr.ravel()
    return repr(bad[0].item()) if bad.size == 1 else f"array of shape {arr.shape}"


def float_array(name: str, value) -> jax.Array:
    """``value`` as a float64 array; raises if it is not real-valued or not finite."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a real number or array; got {value!r}")
    try:
        arr = jnp.asarray(value, dtype=jnp.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array; got {value!r}") from None
    if is_concrete(arr):
        host = np.asarray(arr)
        if not np.all(np.isfinite(host)):
            bad = host[~np.isfinite(host)]
            raise ValueError(f"{name} must be finite; got {bad.ravel()[0].item()!r} in {_describe(host)}")
    return arr


def _check(name: str, arr, ok, requirement: str) -> None:
    if is_concrete(arr):
        host = np.asarray(arr)
        good = ok(host)
        if not np.all(good):
            bad = host[~good] if host.ndim else host
            raise ValueError(f"{name} must be {requirement}; got {np.ravel(bad)[0].item()!r}")


def nonnegative(name: str, arr) -> None:
    _check(name, arr, lambda a: a >= 0, ">= 0")


def positive(name: str, arr) -> None:
    _check(name, arr, lambda a: a > 0, "> 0")


def open_unit(name: str, arr) -> None:
    _check(name, arr, lambda a: (a > 0) & (a < 1), "in the open interval (0, 1)")


def epsilon(eps) -> jax.Array:
    """The privacy parameter ε: finite and > 0."""
    arr = float_array("eps", eps)
    positive("eps", arr)
    return arr


def delta(delta_, name: str = "delta") -> jax.Array:
    """The privacy parameter δ: in the open interval (0, 1)."""
    arr = float_array(name, delta_)
    open_unit(name, arr)
    return arr


def choice(name: str, value, options: Sequence[str]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def broadcast_shapes(**named_shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Common broadcast shape; the error names the arguments whose shapes clash."""
    try:
        return tuple(np.broadcast_shapes(*named_shapes.values()))
    except ValueError:
        desc = ", ".join(f"{k} {tuple(v)}" for k, v in named_shapes.items())
        raise ValueError(f"shapes do not broadcast: {desc}") from None


def probability_vector(name: str, arr) -> jax.Array:
    """Non-negative entries summing to 1 within 1e-9 along the last axis, renormalised exactly."""
    nonnegative(name, arr)
    if is_concrete(arr):
        total = np.sum(np.asarray(arr), axis=-1)
        off = np.abs(total - 1.0) > 1e-9
        if np.any(off):
            raise ValueError(f"{name} must sum to 1 along the last axis (within 1e-9); got a sum of {total[off].ravel()[0]!r}")
    return arr / jnp.sum(arr, axis=-1, keepdims=True)
