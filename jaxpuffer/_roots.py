"""Bracketed scalar root finders, vectorized over brackets (used by the exact evaluators)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

# Grids on which the exact evaluators look for the crossings of a log-density ratio:
# offsets from each component's mean, in units of its std (21 points) and of the Laplace scale b
# (16 points; beyond 48 b both Laplace-convolved densities are exact exponentials with one rate).
_CORE = jnp.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5, 7.5, 10.0, 13.0])
GRID_CORE = jnp.concatenate([-_CORE[:0:-1], _CORE])
_TAIL = jnp.array([1.0, 2.5, 5.0, 9.0, 15.0, 24.0, 36.0, 48.0])
GRID_TAIL = jnp.concatenate([-_TAIL[::-1], _TAIL])


def illinois(fun, a, c, fa, fc, steps):
    """Root of fun in each bracket [a, c] (fa, fc of opposite signs); Illinois regula falsi."""

    def step(_, state):
        a, c, fa, fc, side = state
        denom = jnp.where(fc != fa, fc - fa, 1.0)
        x = c - fc * (c - a) / denom
        x = jnp.where((x > jnp.minimum(a, c)) & (x < jnp.maximum(a, c)), x, 0.5 * (a + c))
        fx = fun(x)
        same = jnp.sign(fx) == jnp.sign(fc)
        fa = jnp.where(same, jnp.where(side == 1, 0.5 * fa, fa), fc)
        a = jnp.where(same, a, c)
        return a, x, fa, fx, jnp.where(same, 1, -1)

    a, c, fa, fc, _ = jax.lax.fori_loop(0, steps, step, (a, c, fa, fc, jnp.zeros(a.shape, int)))
    return jnp.where(jnp.abs(fa) < jnp.abs(fc), a, c)


def newton_in_bracket(fun_and_slope, a, c, fa, fc, steps):
    """Root of f in [a, c] (sign change, f(a) = fa, f(c) = fc) by Newton steps kept inside the
    bracket, starting from the regula-falsi point."""
    pos_left = fa > 0
    denom = jnp.where(fc != fa, fc - fa, 1.0)
    start = jnp.clip(a - fa * (c - a) / denom, jnp.minimum(a, c), jnp.maximum(a, c))

    def step(_, state):
        lo, hi, x = state
        f, df = fun_and_slope(x)
        right_of_root = (f > 0) != pos_left  # f has the sign of the right end
        lo, hi = jnp.where(right_of_root, lo, x), jnp.where(right_of_root, x, hi)
        x_new = x - f / jnp.where(df != 0, df, 1.0)
        ok = (df != 0) & (x_new >= lo) & (x_new <= hi)  # a converged step sits on an end
        return lo, hi, jnp.where(ok, x_new, 0.5 * (lo + hi))

    _, _, x = jax.lax.fori_loop(0, steps, step, (a, c, start))
    return x


def merge_sorted(a, c):
    """The ascending union of two ascending arrays along the last axis, by Batcher's bitonic
    merge: log₂ of the padded length min/max stages of elementwise work, several times faster
    under ``vmap`` than ``jnp.sort`` of the concatenation (a comparison sort per row on CPU)."""
    la, lc = a.shape[-1], c.shape[-1]
    half = 1 << (max(la, lc) - 1).bit_length()

    def pad(x):
        return jnp.concatenate([x, jnp.full(x.shape[:-1] + (half - x.shape[-1],), jnp.inf, x.dtype)], axis=-1)

    x = jnp.concatenate([pad(a), pad(c)[..., ::-1]], axis=-1)  # ascending then descending: bitonic
    stride = half
    while stride >= 1:
        x = x.reshape(x.shape[:-1] + (-1, 2, stride))
        lo, hi = x[..., 0, :], x[..., 1, :]
        x = jnp.stack([jnp.minimum(lo, hi), jnp.maximum(lo, hi)], axis=-2).reshape(x.shape[:-3] + (-1,))
        stride //= 2
    return x[..., : la + lc]


def first_true(mask, count):
    """Indices of the first ``count`` True entries of a 1-D mask, and which of them exist."""
    idx = jnp.nonzero(mask, size=count, fill_value=0)[0]
    return idx, jnp.arange(count) < jnp.sum(mask)
