"""Eager input validation for the public API.

Every public function converts its numeric inputs with :func:`float_array` and checks them here,
*outside* of tracing: when a value is a JAX tracer (inside ``jit``, ``vmap`` or ``grad``) its
contents are unknown and the checks are skipped, so the same functions stay transformable.
Each failure is a ``ValueError`` whose message starts with the argument's name.

**The certified range.** Prior locations (means, atoms) satisfy |x| ≤ 1e50 and scales (stds) are 0
or in [1e-50, 1e50], ε ≤ 100: then squares, products of four such numbers and their quotients stay
inside float64 (1e±200 at most), which is what the closed forms and evaluators form (Δμ², σ²,
σ_i²σ_j², b², (Δμ/σ)²), and a calibrated scale is at most 1e60. Outside it a result could overflow or underflow into a plausible number
("no noise needed" where δ ≈ 1), so it is refused with a ``ValueError`` naming the quantity.

**Under tracing** (``jit``, ``vmap``, ``grad``) nothing can be refused; the ``*_ok`` predicates
here are traceable, and the public entry points turn a result computed from invalid inputs into
NaN — an unusable answer, never a plausible finite one.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def is_concrete(x) -> bool:
    """True when ``x`` holds known values (not a tracer), so it can be checked eagerly."""
    return not isinstance(x, jax.core.Tracer)


def in_host_memory(*arrays) -> bool:
    """Whether every array holds known values in this process's CPU memory (numpy arrays, Python
    numbers, fully addressable JAX arrays on CPU devices): then numpy handles them with no transfer
    and no program compiled for each new shape (an eager JAX operation compiles one, ~20 ms).
    Traced values, and arrays on an accelerator, stay with JAX."""
    for a in arrays:
        if isinstance(a, jax.core.Tracer):
            return False
        if isinstance(a, jax.Array) and not (a.is_fully_addressable and all(d.platform == "cpu" for d in a.devices())):
            return False
    return True


def float_array(name: str, value) -> jax.Array:
    """``value`` as a float64 array; raises if it is not real-valued or not finite."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a real number or array; got {value!r}")
    try:
        # a float64 array (a tracer included) is kept as the same object, so that two priors given
        # one support array are seen to share it under jax.grad too (pairs.align_discrete); a
        # weakly typed one is converted (made strong), as any other input
        same = isinstance(value, jax.Array) and value.dtype == jnp.float64 and not value.aval.weak_type
        host = None if isinstance(value, jax.Array) else _real_on_host(value)
        # (host values are converted by numpy and put on the device as they are: jnp.asarray
        # compiles a program for every new shape and dtype)
        arr = value if same else jax.device_put(host) if host is not None else jnp.asarray(value, dtype=jnp.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array; got {value!r}") from None
    if is_concrete(arr):
        host = np.asarray(arr)
        if not np.all(np.isfinite(host)):
            bad = host[~np.isfinite(host)].ravel()[0].item()
            where = "" if host.size == 1 else f" in an array of shape {host.shape}"
            raise ValueError(f"{name} must be finite; got {bad!r}{where}")
    return arr


def _real_on_host(value):
    """``value`` (a Python number, a sequence of them, a numpy array) as a float64 numpy array, or
    None where numpy cannot take it as real numbers (complex values, tracers in a list, ...): the
    caller then converts it with JAX, which raises or traces as it does."""
    try:
        host = np.asarray(value)
    except Exception:  # (a tracer inside a list: JAX's own conversion error, raised by JAX below)
        return None
    return host.astype(np.float64) if host.dtype.kind in "biuf" else None


def _check(name: str, arr, ok, requirement: str) -> None:
    if is_concrete(arr):
        host = np.asarray(arr)
        good = ok(host)
        if not np.all(good):
            bad = host[~good] if host.ndim else host
            raise ValueError(f"{name} must be {requirement}; got {np.ravel(bad)[0].item()!r}")


LOCATION_MAX = 1e50
SCALE_MIN, SCALE_MAX = 1e-50, 1e50
EPS_MAX = 100.0
RESULT_MAX = 1e60  # a calibrated scale beyond this is refused (b² times σ² stays below 1e220)


def location(name: str, arr) -> None:
    """|arr| ≤ 1e50 (the certified range of locations: means, atoms)."""
    _check(name, arr, location_ok, "within the certified range |x| <= 1e50 (squares of larger values overflow float64)")


def scale(name: str, arr) -> None:
    """arr = 0 or 1e-50 ≤ arr ≤ 1e50 (the certified range of scales: stds)."""
    _check(name, arr, scale_ok, "0 or within the certified range [1e-50, 1e50] (products of four such values must stay finite in float64)")


def location_ok(arr):
    """Traceable: finite and within the certified range of locations."""
    return (arr >= -LOCATION_MAX) & (arr <= LOCATION_MAX)


def scale_ok(arr):
    """Traceable: 0, or within the certified range of scales (NaN and negatives are not)."""
    return (arr == 0) | ((arr >= SCALE_MIN) & (arr <= SCALE_MAX))


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
    _check("eps", arr, lambda a: a <= EPS_MAX, f"<= {EPS_MAX:g} (the certified range: e^eps must not overflow the masses it multiplies)")
    return arr


def eps_ok(eps):
    """Traceable: 0 < ε ≤ 100."""
    return (eps > 0) & (eps <= EPS_MAX)


def delta_ok(delta_, floor: float = 0.0, allow_zero: bool = False):
    """Traceable: floor ≤ δ < 1 and δ > 0 (or δ = 0 where ``allow_zero``: pure ε)."""
    valid = (delta_ > 0) & (delta_ >= floor) & (delta_ < 1)
    return (valid | (delta_ == 0)) if allow_zero else valid


def delta(delta_, name: str = "delta", allow_zero: bool = False) -> jax.Array:
    """The privacy parameter δ: in the open interval (0, 1), or [0, 1) where ``allow_zero``."""
    arr = float_array(name, delta_)
    if allow_zero:
        _check(name, arr, lambda a: (a >= 0) & (a < 1), "in [0, 1) (0: pure ε)")
    else:
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
    """Non-negative entries summing to 1 within 1e-9 along the last axis, renormalised exactly.
    Traced: a row that is not such a vector becomes NaN (it cannot be refused)."""
    nonnegative(name, arr)
    total = jnp.sum(arr, axis=-1, keepdims=True)
    if is_concrete(arr):  # (checked on the host: inside jit, even a concrete array's sum is traced)
        host = np.sum(np.asarray(arr), axis=-1)
        off = np.abs(host - 1.0) > 1e-9
        if np.any(off):
            raise ValueError(f"{name} must sum to 1 along the last axis (within 1e-9); got a sum of {host[off].ravel()[0]!r}")
        return arr / total
    ok = probability_ok(arr)[..., None]
    return jnp.where(ok, arr / jnp.where(ok, total, 1.0), jnp.nan)


def probability_ok(arr):
    """Traceable, per row of the last axis: entries ≥ 0 summing to 1 within 1e-9."""
    return jnp.all(arr >= 0, axis=-1) & (jnp.abs(jnp.sum(arr, axis=-1) - 1.0) <= 1e-9)


def poison(ok, arr):
    """``arr`` where ``ok``, NaN elsewhere: invalid traced inputs give an unusable result."""
    return jnp.where(ok, arr, jnp.nan)
