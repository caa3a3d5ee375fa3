"""Transport plans between two priors of a pair (MATH.md §3).

Any coupling π of the priors of s_i and s_j yields a sufficient condition for pufferfish privacy;
better couplings give less noise. For 1-D discrete priors the Kantorovich (quantile, comonotone)
plan of the Kantorovich paper, Appendix C, is optimal for every convex cost:

    C(x, x') = min{F_i(x), F_j(x')},
    π*(x, x') = C(x, x') − C(x⁻, x') − C(x, x'⁻) + C(x⁻, x'⁻),

which is the length of the overlap of the quantile intervals (F_i(x⁻), F_i(x)] and
(F_j(x'⁻), F_j(x')]. It is computed here as that overlap, so every entry is ≥ 0 by construction;
entries at or below a tolerance ``atol`` are round-off, not support (a spurious 1e-17 entry far off
the diagonal turns the V = 25 counting query's sensitivity of 1 into 23).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from .pairs import PairSet, require_pairs
from .priors import Discrete

DEFAULT_ATOL = 1e-12


class TransportPlan(NamedTuple):
    """A plan between two discrete priors on a common support, batched over pairs.

    Attributes:
      support: the common alphabet x_1 ≤ … ≤ x_n, shape ``batch + (n,)``.
      mass: π(x_a, x'_b), shape ``batch + (n, n)``: rows index x (prior of s_i), columns x'.
      atol: entries ≤ atol are treated as zero (not on the plan's support).
    """

    support: jax.Array
    mass: jax.Array
    atol: float

    @property
    def on_support(self) -> jax.Array:
        """Boolean mask of the plan's support, π > atol."""
        return self.mass > self.atol


def _discrete_pairs(pairs, caller: str) -> PairSet:
    return require_pairs(pairs, Discrete, caller)


def quantile_masses(p, q):
    """π*(x_a, x'_b) = |(F_p(a⁻), F_p(a)] ∩ (F_q(b⁻), F_q(b)]| for pmfs on one support (no checks)."""
    f_hi, g_hi = jnp.cumsum(p, axis=-1), jnp.cumsum(q, axis=-1)
    f_hi, g_hi = f_hi.at[..., -1].set(1.0), g_hi.at[..., -1].set(1.0)
    f_lo, g_lo = f_hi - p, g_hi - q
    upper = jnp.minimum(f_hi[..., :, None], g_hi[..., None, :])
    lower = jnp.maximum(f_lo[..., :, None], g_lo[..., None, :])
    return jnp.maximum(upper - lower, 0.0)


def quantile_cmf(pairs: PairSet) -> jax.Array:
    """The joint CMF of π*, C(x, x') = min{F_i(x), F_j(x')} (the Kantorovich paper's Tables 2 and 5)."""
    pairs = _discrete_pairs(pairs, "quantile_cmf")
    return jnp.minimum(pairs.first.cdf[..., :, None], pairs.second.cdf[..., None, :])


_quantile_masses_jit = jax.jit(quantile_masses)


def quantile_plan(pairs: PairSet, *, atol: float = DEFAULT_ATOL) -> TransportPlan:
    """The Kantorovich optimal plan π* of each discrete pair (Kantorovich paper, Appendix C).

    Args:
      pairs: a :class:`PairSet` of :class:`Discrete` priors (aligned on a common support).
      atol: support tolerance: entries ≤ atol are round-off (default 1e-12).

    Returns:
      A :class:`TransportPlan`; ``mass`` has rows summing to p_i and columns summing to p_j.
    """
    pairs = _discrete_pairs(pairs, "quantile_plan")
    return TransportPlan(pairs.first.support, _quantile_masses_jit(pairs.first.probs, pairs.second.probs), check_atol(atol))


def _metric(metric):
    if metric == "l1":
        return jnp.abs
    if callable(metric):
        return metric
    raise ValueError(f"metric must be 'l1' or a callable d(z); got {metric!r}")


def support_distance(support, metric: str | Callable = "l1") -> jax.Array:
    """d(x − x') for every cell (x, x') of a support grid, shape ``batch + (n, n)``."""
    return _metric(metric)(support[..., :, None] - support[..., None, :])


def plan_sensitivity(plan: TransportPlan, metric: str | Callable = "l1") -> jax.Array:
    """Δ_π = max d(x − x') over the plan's support {π > atol}, per pair (eq. (10)'s denominator)."""
    if not isinstance(plan, TransportPlan):
        raise ValueError(f"plan must be a TransportPlan; got {type(plan).__name__}")
    _metric(metric)
    return _plan_sensitivity_jit(plan.support, plan.mass, plan.atol, metric)


@partial(jax.jit, static_argnames="metric")
def _plan_sensitivity_jit(support, mass, atol, metric):
    dist = support_distance(support, metric)
    return jnp.max(jnp.where(mass > atol, dist, 0.0), axis=(-2, -1))


def check_atol(atol) -> float:
    """The support tolerance, validated."""
    if not (isinstance(atol, float) and 0.0 <= atol < 1e-3):
        raise ValueError(f"atol must be a float in [0, 1e-3); got {atol!r}")
    return atol

