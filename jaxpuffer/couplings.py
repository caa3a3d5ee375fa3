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

import itertools
from functools import lru_cache, partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .pairs import PairSet, require_pairs
from . import _validate
from .priors import Discrete, GaussianMixture
from .tau import tau_star_unchecked

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


def vmap_pairs(fn, x, p, q, *scalars):
    """Apply a one-pair function fn(x, p, q, *scalars) (atoms on the last axis) over the batch
    axes of (x, p, q) and of per-pair scalars; outputs (a pytree) get the batch shape back."""
    batch, n = p.shape[:-1], p.shape[-1]
    flat = lambda a: jnp.broadcast_to(a, batch + (n,)).reshape(-1, n)  # noqa: E731
    out = jax.vmap(fn)(flat(x), flat(p), flat(q), *(jnp.broadcast_to(v, batch).reshape(-1) for v in scalars))
    return jax.tree_util.tree_map(lambda o: o.reshape(batch + o.shape[1:]), out)


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



# ----------------------------------------------------------------------------- Gaussian mixtures

GMM_COSTS = ("w2", "bound")


class ComponentPlan(NamedTuple):
    """A coupling w of two mixtures' weight vectors (MATH.md §3, eq. (12)).

    Attributes:
      weights: w_ml, shape ``batch + (k, k)``; rows sum to α_i (first mixture), columns to α_j
        (to float round-off, ≤ 1e-12).
      cost: Σ w_ml c_ml at this plan.
      gap: a certified bound on cost − (the optimal cost of the transport LP), from a feasible
        dual solution (0 up to round-off at an optimal basis).
      converged: whether the simplex stopped at an optimal basis within its iteration cap (the
        enumeration of small problems: whether it found one).
    """

    weights: jax.Array
    cost: jax.Array
    gap: jax.Array
    converged: jax.Array


def component_costs(first, second, cost: str, tau=None):
    """c_ml between component m of ``first`` and l of ``second``: ``"w2"`` — W2² of the two
    Gaussians, (μ_m − μ_l)² + (σ_m − σ_l)²; ``"bound"`` — |μ_m − μ_l| + τ |σ_m − σ_l|, the cost
    of Theorem 2's bound (13) (τ = τ*(δ))."""
    d_mu = jnp.abs(first.means[..., :, None] - second.means[..., None, :])
    d_sigma = jnp.abs(first.stds[..., :, None] - second.stds[..., None, :])
    if cost == "w2":
        return d_mu**2 + d_sigma**2
    return d_mu + jnp.asarray(tau)[..., None, None] * d_sigma


def _north_west(a, b):
    """Initial basic feasible solution: the north-west-corner staircase of k + l − 1 cells."""
    k, l = a.shape[0], b.shape[0]

    def step(_, state):
        i, j, ra, rb, x, basis = state
        v = jnp.minimum(ra[i], rb[j])
        x, basis = x.at[i, j].set(v), basis.at[i, j].set(True)
        ra, rb = ra.at[i].add(-v), rb.at[j].add(-v)
        down = (j == l - 1) | ((i < k - 1) & (ra[i] <= rb[j]))
        return jnp.where(down, i + 1, i), jnp.where(down, j, j + 1), ra, rb, x, basis

    init = (0, 0, a, b, jnp.zeros((k, l)), jnp.zeros((k, l), bool))
    return jax.lax.fori_loop(0, k + l - 1, step, init)[4:]


def _tree_duals(c, basis):
    """u, v with u_i + v_j = c_ij on the basis (a spanning tree), u_0 = 0."""
    k, l = c.shape

    def step(_, state):
        u, v, ku, kv = state
        from_u = basis & ku[:, None]
        v = jnp.where(kv, v, jnp.max(jnp.where(from_u, c - u[:, None], -jnp.inf), axis=0))
        kv = kv | jnp.any(from_u, axis=0)
        from_v = basis & kv[None, :]
        u = jnp.where(ku, u, jnp.max(jnp.where(from_v, c - v[None, :], -jnp.inf), axis=1))
        ku = ku | jnp.any(from_v, axis=1)
        return u, v, ku, kv

    init = (jnp.zeros(k), jnp.zeros(l), jnp.arange(k) == 0, jnp.zeros(l, bool))
    u, v, _, _ = jax.lax.fori_loop(0, k + l, step, init)
    return u, v


def _cycle_signs(basis, ei, ej):
    """±1 on the cycle that cell (ei, ej) closes in the basis tree (+1 at the entering cell)."""
    k, l = basis.shape
    cycle = basis.at[ei, ej].set(True)

    def prune(_, s):
        return s & (jnp.sum(s, axis=1)[:, None] >= 2) & (jnp.sum(s, axis=0)[None, :] >= 2)

    cycle = jax.lax.fori_loop(0, k + l, prune, cycle)

    def walk(t, state):
        i, j, sign, signs, done = state
        along_row = t % 2 == 0  # leave the entering cell along its row, then alternate
        row_next = jnp.argmax(cycle[i] & (jnp.arange(l) != j))
        col_next = jnp.argmax(cycle[:, j] & (jnp.arange(k) != i))
        ni, nj = jnp.where(along_row, i, col_next), jnp.where(along_row, row_next, j)
        done = done | ((ni == ei) & (nj == ej))
        signs = jnp.where(done, signs, signs.at[ni, nj].set(-sign))
        return ni, nj, -sign, signs, done

    signs = jnp.zeros((k, l)).at[ei, ej].set(1.0)
    return jax.lax.fori_loop(0, 2 * min(k, l), walk, (ei, ej, 1.0, signs, False))[3]


def _simplex(a, b, c, max_iter):
    """The transportation simplex (u–v method, Bland's rule) on one k × l problem: the plan, its
    final basis, cost, dual gap and whether it converged."""
    k, l = c.shape
    tol = 1e-12 * jnp.maximum(jnp.max(jnp.abs(c)), 1e-300)
    x, basis = _north_west(a, b)

    def reduced(basis):
        u, v = _tree_duals(c, basis)
        return jnp.where(basis, 0.0, c - u[:, None] - v[None, :])

    def cond(state):
        x, basis, it = state
        return (it < max_iter) & jnp.any(reduced(basis) < -tol)

    def body(state):
        x, basis, it = state
        flat = jnp.argmax((reduced(basis) < -tol).reshape(-1))  # Bland: first improving cell
        ei, ej = flat // l, flat % l
        signs = _cycle_signs(basis, ei, ej)
        minus = signs < 0
        theta = jnp.min(jnp.where(minus, x, jnp.inf))
        leave = jnp.argmax((minus & (x <= theta)).reshape(-1))
        x = jnp.maximum(x + signs * theta, 0.0)
        basis = basis.at[ei, ej].set(True).reshape(-1).at[leave].set(False).reshape(k, l)
        x = jnp.where(basis, x, 0.0)
        return x, basis, it + 1

    x, basis, it = jax.lax.while_loop(cond, body, (x, basis, 0))
    converged = ~jnp.any(reduced(basis) < -tol)
    _, v = _tree_duals(c, basis)
    return x, basis, *_certified(a, b, c, x, v), converged


def _certified(a, b, c, x, v):
    """(cost Σ x c, its gap to the LP's optimum) from column duals ``v`` (those of the plan's basis):
    f, v's c-transform over the positive-weight columns, and v are a feasible dual solution, so
    Σ a f + Σ b v is a lower bound of the optimal cost."""
    f = jnp.min(jnp.where(b[None, :] > 0, c - v[None, :], jnp.inf), axis=1)
    lower = jnp.sum(jnp.where(a > 0, a * f, 0.0)) + jnp.sum(jnp.where(b > 0, b * v, 0.0))
    cost = jnp.sum(x * c)
    return cost, jnp.maximum(cost - lower, 0.0)


# problems with at most this many bases (spanning trees of the k × l cells: k^{l−1} l^{k−1}, 81 for
# 3 × 3, 4,096 for 4 × 4) are solved by enumerating every one, whose program compiles in a third of
# the simplex's time: 3 mixture pairs of 2 components, 0.21 against 0.70 s (trace and lowering 0.12
# against 0.39 s), which was half of a cold theorem-level calibration's call (1.05–1.21 -> 0.49–0.63 s)
_MAX_BASES = 128


@lru_cache(maxsize=None)
def _spanning_trees(k: int, l: int):
    """Every basis of the k × l transportation problem, as numpy arrays: the cells of each spanning
    tree of the bipartite graph rows–columns (T, k + l − 1), flat indices; the integer map from
    (a, b without its last entry) to the basic solution on those cells (T, k + l − 1, k + l − 1),
    the inverse of the tree's constraints less the one the others imply; and the integer map from
    the costs on the cells to the duals (u, v) with u_i + v_j = c_ij there and u_0 = 0
    (T, k + l, k + l − 1). The constraint matrices are unimodular, so both inverses are exact."""
    n = k + l - 1
    cells, primal, dual = [], [], []
    for subset in itertools.combinations(range(k * l), n):
        incidence = np.zeros((k + l, n))
        for column, cell in enumerate(subset):
            incidence[cell // l, column] = incidence[k + cell % l, column] = 1.0
        if abs(np.linalg.det(incidence[:-1])) < 0.5:  # not a tree: a cycle, some node left out
            continue
        cells.append(subset)
        primal.append(np.rint(np.linalg.inv(incidence[:-1])))
        dual.append(np.rint(np.linalg.inv(np.vstack([incidence.T, np.eye(1, k + l)])))[:, :-1])
    return np.array(cells), np.array(primal), np.array(dual)


def _bases(k: int, l: int) -> int:
    """The number of bases of a k × l problem (spanning trees of the complete bipartite graph)."""
    return k ** (l - 1) * l ** (k - 1)


def _enumerated(a, b, c):
    """:func:`_simplex`'s result by enumeration: the basic solution and the duals of every basis
    (every vertex of the transportation polytope is a basic solution), and the first basis that is
    both primal feasible (to the marginals' rounding and their sums' mismatch) and dual feasible
    (no reduced cost below the simplex's tolerance): such a basis is optimal, as the simplex's
    final one is, and its duals certify it (a degenerate optimal vertex also has bases whose duals
    are not feasible: taken by cost alone, their gap was up to 2.6 on random 3 × 3 problems with
    tied costs). Where rounding leaves no such basis, the cheapest primal feasible one, and
    ``converged`` is False (as the simplex's where it stops at a basis that is not dual feasible)."""
    k, l = c.shape
    cells, primal, dual = (jnp.asarray(v) for v in _spanning_trees(k, l))
    x_bases = jnp.einsum("tij,j->ti", primal, jnp.concatenate([a, b[:-1]]))
    tol = 8.0 * jnp.finfo(c.dtype).eps * jnp.maximum(jnp.maximum(jnp.sum(a), jnp.sum(b)), 1.0) + jnp.abs(jnp.sum(a) - jnp.sum(b))
    feasible = jnp.all(x_bases >= -tol, axis=1)
    on_cells = c.reshape(-1)[cells]
    duals = jnp.einsum("tij,tj->ti", dual, on_cells)  # (u, v) per basis
    reduced = c[None] - duals[:, :k, None] - duals[:, None, k:]
    optimal = feasible & jnp.all(reduced >= -1e-12 * jnp.maximum(jnp.max(jnp.abs(c)), 1e-300), axis=(1, 2))
    cheapest = jnp.argmin(jnp.where(feasible, jnp.sum(x_bases * on_cells, axis=1), jnp.inf))
    best = jnp.where(jnp.any(optimal), jnp.argmax(optimal), cheapest)
    x = jnp.zeros(k * l, c.dtype).at[cells[best]].set(jnp.maximum(x_bases[best], 0.0)).reshape(k, l)
    basis = jnp.zeros(k * l, bool).at[cells[best]].set(True).reshape(k, l)
    return x, basis, *_certified(a, b, c, x, duals[best, k:]), jnp.any(optimal)


def _solve(a, b, c, max_iter):
    """One k × l problem: by enumeration where it has at most ``_MAX_BASES`` bases, else by the simplex."""
    return _enumerated(a, b, c) if _bases(*c.shape) <= _MAX_BASES else _simplex(a, b, c, max_iter)


@partial(jax.custom_jvp, nondiff_argnums=(3,))
def _transport_one(a, b, c, max_iter):
    """:func:`_solve`'s plan, cost, gap and convergence, differentiable in forward and reverse
    mode (the simplex's ``while_loop`` alone has no transpose: ``jax.grad`` in a mixture's weights
    raised, at every level). The enumeration would differentiate as it stands (its plan is linear
    in the marginals on the chosen basis; the same tangents as this rule's to 2e-16); the rule
    serves both, so that one derivative holds whichever solver ran."""
    x, _, cost, gap, converged = _solve(a, b, c, max_iter)
    return x, cost, gap, converged


@_transport_one.defjvp
def _transport_one_jvp(max_iter, primals, tangents):
    """On the final basis (a spanning tree of the k + l marginals' constraints) the plan is linear
    in the marginals: dx solves row sums = da, column sums = db, dx = 0 off the basis, by the
    pseudo-inverse of that constraint matrix (least squares where Σ da ≠ Σ db); the basis does not
    move with the costs, so the cost's tangent is Σ dx c + Σ x dc. Linear in the tangents, hence
    transposable. At a degenerate vertex (a basic cell at 0) this is one of its one-sided slopes."""
    a, b, c = primals
    da, db, dc = tangents
    x, basis, cost, gap, converged = _solve(a, b, c, max_iter)
    k, l = c.shape
    constraints = jnp.concatenate([jnp.kron(jnp.eye(k), jnp.ones((1, l))), jnp.kron(jnp.ones((1, k)), jnp.eye(l)),
                                   jnp.diag(~basis.reshape(-1)).astype(c.dtype)])
    dx = jnp.where(basis, (jnp.linalg.pinv(constraints) @ jnp.concatenate([da, db, jnp.zeros(k * l)])).reshape(k, l), 0.0)
    tangent_out = (dx, jnp.sum(dx * c) + jnp.sum(x * dc), jnp.zeros_like(gap), np.zeros(converged.shape, jax.dtypes.float0))
    return (x, cost, gap, converged), tangent_out


@partial(jax.jit, static_argnames="max_iter")
def transport_plan(a, b, costs, max_iter: int = 200) -> ComponentPlan:
    """The transport LP min Σ w c s.t. w 1 = a, wᵀ 1 = b, w ≥ 0, exactly, batched over leading axes.

    The transportation simplex: a north-west-corner basis, then pivots (u–v duals on the basis
    tree, Bland's entering and leaving rules, so degenerate problems terminate) until no reduced
    cost is negative. ``gap`` certifies the result from the dual; ``converged`` is False only if
    ``max_iter`` pivots did not reach optimality (the plan is still exactly feasible). A problem
    with at most ``_MAX_BASES`` bases (k × l up to 3 × 3, 2 × 5) takes an optimal one among all of
    its bases instead (:func:`_enumerated`: the same optimal cost, the same plan where the optimum
    is unique, and a program that compiles in a third of the simplex's time).
    """
    batch, k, l = costs.shape[:-2], costs.shape[-2], costs.shape[-1]
    a, b = jnp.broadcast_to(a, batch + (k,)).reshape(-1, k), jnp.broadcast_to(b, batch + (l,)).reshape(-1, l)
    x, cost, gap, ok = jax.vmap(partial(_transport_one, max_iter=max_iter))(a, b, costs.reshape(-1, k, l))
    return ComponentPlan(x.reshape(batch + (k, l)), cost.reshape(batch), gap.reshape(batch), ok.reshape(batch))


def gmm_coupling(pairs: PairSet, *, cost: str = "w2", delta=None, tau: str = "exact") -> ComponentPlan:
    """A coupling w of the component weights of each mixture pair (MATH.md §3, eq. (12)).

    ``cost="w2"``: the paper's w*, minimising Σ w_ml W2²(m, l). ``cost="bound"``: minimising the
    bound's own cost Σ w_ml (|Δμ_ml| + τ*(δ)|Δσ_ml|) (needs ``delta``), which gives a smaller
    valid b in Theorem 2 — its proof holds for every feasible w. See :func:`transport_plan`.
    """
    pairs = require_pairs(pairs, GaussianMixture, "gmm_coupling")
    if cost not in GMM_COSTS:
        raise ValueError(f"cost must be one of 'w2', 'bound'; got {cost!r}")
    tau_value = None
    if cost == "bound":
        if delta is None:
            raise ValueError("delta is required for cost='bound' (the cost uses τ*(δ))")
        tau_value = tau_star_unchecked(_validate.delta(delta), tau)
    costs = component_costs(pairs.first, pairs.second, cost, tau_value)
    return transport_plan(pairs.first.weights, pairs.second.weights, costs)
