"""ℓp global sensitivity of a vector query s = (s_1, …, s_r) (GG paper, Definition 1 and Lemma 2).

Definition 1: Δ_{s,p} = max over neighbouring data sets x, x' of ‖s(x) − s(x')‖_p. Lemma 2: with
Δ_{s_k} the (ℓ1) sensitivity of coordinate k, Δ_{s,p} ≤ (Σ_k Δ_{s_k}^p)^{1/p}.
"""

from __future__ import annotations

import jax.numpy as jnp

from .. import _validate
from ._gg import scaled_norm


def _order(p) -> float:
    p = float(p)
    if not p >= 1.0:
        raise ValueError(f"p must be >= 1 (an ℓp norm); got {p!r}")
    return p


def lp_sensitivity(values, neighbour_values, p) -> float:
    """Definition 1 on an enumerated set of neighbouring pairs: max_i ‖s(x_i) − s(x'_i)‖_p.

    Args:
      values, neighbour_values: the query's values s(x_i), s(x'_i) on each enumerated pair, shape
        (n_pairs, r) — the last axis holds the r coordinates ((n_pairs, 1) for a scalar query).
      p: the norm's order, ≥ 1 (``jnp.inf`` for the max norm).

    The global sensitivity is the max over *all* neighbouring pairs; this is exact only when the
    pairs given are all of them (or contain a worst one).
    """
    a = _validate.float_array("values", values)
    b = _validate.float_array("neighbour_values", neighbour_values)
    _validate.broadcast_shapes(values=a.shape, neighbour_values=b.shape)
    diff = jnp.abs(jnp.atleast_1d(a - b))
    if p == jnp.inf:
        norms = jnp.max(diff, axis=-1)
    else:
        norms = scaled_norm(diff, _order(p))
    return float(jnp.max(norms))


def lemma2_bound(coordinate_sensitivities, p) -> float:
    """Lemma 2: (Σ_k Δ_{s_k}^p)^{1/p} ≥ Δ_{s,p}, from the coordinates' ℓ1 sensitivities Δ_{s_k}
    (last axis: the coordinates; returns one value per leading index, a float for one query)."""
    d = _validate.float_array("coordinate_sensitivities", coordinate_sensitivities)
    _validate.nonnegative("coordinate_sensitivities", d)
    out = scaled_norm(jnp.atleast_1d(d), _order(p))
    return float(out) if out.ndim == 0 else out
