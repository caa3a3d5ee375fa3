"""Calibration: the smallest noise scale that meets (ε, δ) for every pair, and its certificate.

``calibrate`` validates its inputs eagerly, finds per pair the smallest scale b whose δ at the
requested level of the ladder (MATH.md §6) is ≤ the target, takes the maximum over every pair and
prior, and reports the exact δ at that scale.

Per-pair search (levels ``exact``, ``coupling``, ``indicator``), batched over pairs:

1. **No noise needed.** If δ(0) ≤ δ (the priors' own hockey-stick, or Δμ = Δσ = 0 for the
   coupling levels) the answer is 0.
2. **Bracket.** ``hi`` starts at a scale that is feasible in theory — Theorem 1's closed form for
   Laplace noise (every level is ≤ L3), improved by b_pure of MATH.md §6 where it verifies — and
   is *verified*; where it fails, or where no closed form exists (Gaussian noise), it doubles until
   δ(hi) ≤ δ. ``lo = hi·2⁻⁴⁰`` is verified infeasible (else it is the answer).
3. **Solve.** ``solver="optax"``: Newton steps on u = log b driving log δ(b) to log δ, passed
   through an optax transform chain (a trust-region clip of 2 in log b) and kept inside the
   bracket (bisection when a step leaves it, or, after 16 iterations, when the bracket has not
   halved over the last 3); proposals alternate a hair above and below the Newton root so both ends
   close in. ``solver="bisection"``: geometric bisection of the bracket
   in ``lax`` loops. Every evaluation moves ``lo`` or ``hi``; both solvers stop when
   hi/lo − 1 ≤ ``rtol`` and return ``hi``, whose δ was evaluated ≤ the target: the feasibility
   guarantee holds by construction. ``converged`` says whether the bracket closed.
4. **Derivatives** of the result with respect to ε, δ and the prior parameters are implicit:
   db/dθ = −(∂δ/∂θ)/(∂δ/∂b) at the root (``jax.custom_jvp``), not through the loop.
"""

from __future__ import annotations

import math
import sys
import warnings
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import _validate, kantorovich
from .bounds import _gaussian_pairs, mixture_theorem_scale, theorem1_scale, theorem2
from .couplings import gmm_coupling
from .kantorovich import THEOREM3_CONSTANTS
from .losses import pair_delta, prior_delta
from .losses_mixture import mixture_delta, mixture_delta_at_zero, mixture_params
from .losses_discrete import discrete_delta
from .pairs import PairSet
from .priors import Discrete, GaussianMixture
from .tau import METHODS as TAU_METHODS
from .tau import tau_star_unchecked

LEVELS = ("theorem", "indicator", "coupling", "exact")
NOISES = ("laplace", "gaussian")
SOLVERS = ("optax", "bisection")
GAUSSIAN_NOISE_LEVELS = ("coupling", "exact")

# Closed-form scales are rounded up by a few ulps so that floating-point rounding in the formula
# never lands on the unsafe side of the condition it certifies.
_ROUND_UP = 1.0 + 2.0**-49
_FLOOR = 2.0**-40  # the initial lo is hi·_FLOOR
_MAX_DOUBLINGS = 80
_FIRST_PASS = 20  # optax iterations for the whole batch; slower pairs are re-solved compacted
_LEFTOVER_BUCKET = 256
_STALL_FROM, _STALL_CHECK = 16, 3  # optax solver: when and how often the bracket must shrink


class Calibration(NamedTuple):
    """The result of :func:`calibrate`.

    Attributes:
      scale: the noise scale to use: Laplace b or Gaussian std θ, the max over pairs and priors.
      per_pair: the smallest feasible scale for each pair, shape ``pairs.batch_shape``.
      binding: index (tuple) into ``per_pair`` of the pair that sets ``scale``.
      delta_achieved: the exact δ (L0) at ``scale``, max over pairs and orders — for very large
        pair sets a certified upper bound on it (see :func:`_max_exact_delta`); None when
        calibrate runs under a JAX transformation such as ``grad``.
      level, noise, solver: how the scale was obtained.
      eps, delta: the target.
      converged: whether every per-pair search closed its bracket to ``rtol`` (closed forms: True;
        None under a JAX transformation).
      iterations: the most solver iterations any pair used (closed forms: 0; None likewise).
    """

    scale: Any
    per_pair: Any
    binding: tuple
    delta_achieved: Any
    level: str
    noise: str
    eps: Any
    delta: Any
    converged: bool
    iterations: int
    solver: str = "closed form"

    @property
    def variance(self):
        """Variance of the noise: 2b² for Laplace, θ² for Gaussian."""
        return 2.0 * self.scale**2 if self.noise == "laplace" else self.scale**2


class _Config(NamedTuple):
    """Static search settings (one compiled search per distinct value).

    ``family`` names the prior type and the per-pair parameter tuple the search carries:
    ``"gaussian"`` — (Δμ, σ_i, σ_j); ``"discrete"`` — (support, p_i, p_j), atoms on the last axis;
    ``"mixture"`` — (w, Δμ, Δσ) on the (k, k) component grid, w the GMM plan's weights, then
    (α, μ_i, σ_i, β, μ_j, σ_j) per component (:func:`jaxpuffer.losses_mixture.mixture_params`).
    """

    level: str
    noise: str
    solver: str
    rtol: float
    family: str = "gaussian"


# ----------------------------------------------------------------------------- per-pair search


def _delta(cfg: _Config, symmetric, b, params, eps):
    if cfg.family == "mixture":
        return mixture_delta(cfg.level, cfg.noise, params, b, eps, symmetric)
    if cfg.family == "discrete":
        return discrete_delta(cfg.level, cfg.noise, *params, b, eps, symmetric)
    return pair_delta(cfg.level, cfg.noise, *params, b, eps, symmetric)


def _delta_at_zero(cfg: _Config, symmetric, params, eps):
    if cfg.family == "mixture" and cfg.level == "exact":
        return mixture_delta_at_zero(params, eps, symmetric)
    if cfg.family == "mixture":  # the plan's mass moved at all (U1 → P(W ≠ 0) as b → 0)
        w, d_mu, d_sigma = params[:3]
        return jnp.sum(jnp.where((d_mu != 0) | (d_sigma != 0), w, 0.0), axis=(-2, -1))
    if cfg.family == "discrete":
        # exact: the atoms' own hockey-stick; coupling: the plan's mass moved a nonzero distance
        return discrete_delta(cfg.level, cfg.noise, *params, jnp.zeros_like(eps), eps, symmetric)
    d_mu, s1, s2 = params
    if cfg.level == "exact":
        return prior_delta(d_mu, s1, s2, eps, symmetric)
    return jnp.where((d_mu == 0) & (s1 == s2), 0.0, 1.0)


def _discrete_guess(cfg: _Config, params, eps, target):
    """Kantorovich Theorem 1 (Laplace: Δ/ε, pure ε) or Theorem 3(b) with the corrected constant
    (Gaussian noise), Δ the ℓ1 sensitivity of the quantile plan with no support tolerance."""
    spread = kantorovich.sensitivity(*params, 0.0)
    if cfg.noise == "laplace":
        return spread / eps
    k = THEOREM3_CONSTANTS["corrected"] * target ** (-1.0 / 3.0)
    return (k + jnp.sqrt(k**2 + eps / 2.0)) * spread / eps


def _initial_bracket(cfg: _Config, params, eps, target):
    """(hi, start): a scale expected to be feasible — Theorem 1's (5), which bounds every level for
    Laplace noise and is a first guess for Gaussian noise (discrete priors: the Kantorovich
    paper's Theorem 1 or 3(b)) — and the first point to evaluate: b_pure of MATH.md §6 where
    smaller (exact level, Laplace, Gaussian priors), else hi. Neither is trusted: the search
    verifies them."""
    if cfg.family == "discrete":
        hi = jnp.maximum(_discrete_guess(cfg, params, eps, target) * _ROUND_UP, 1e-300)
        return hi, hi
    if cfg.family == "mixture":  # Theorem 2 in its valid (max) form, with the same plan (a first
        w, d_mu, d_sigma = params[:3]  # guess for Gaussian noise, which the search may double)
        cost = theorem1_scale(d_mu, d_sigma, 1.0, tau_star_unchecked(target, "exact"))
        hi = jnp.maximum(mixture_theorem_scale(w, cost, eps, "max"), 1e-300)
        return hi, hi
    d_mu, s1, s2 = params
    hi = theorem1_scale(d_mu, s1 - s2, eps, tau_star_unchecked(target, "exact")) * _ROUND_UP
    hi = jnp.maximum(hi, 1e-300)
    start = hi
    if cfg.noise == "laplace" and cfg.level == "exact":
        b_pure = (jnp.abs(d_mu) + jnp.sqrt(d_mu**2 + 2.0 * eps * jnp.abs(s1**2 - s2**2))) / (2.0 * eps)
        start = jnp.where((b_pure > 0) & (b_pure < hi), b_pure, hi)
    return hi, start


def _search(cfg: _Config, params, eps, target, max_iter, symmetric):
    """Per-pair smallest feasible scale; returns (b, converged, iterations). Flat 1-D inputs.

    One ``lax.while_loop``; each iteration evaluates δ once per pair (with its slope for the optax
    solver) at ``u = log b`` and updates the bracket:
      * feasible (δ ≤ target): ``hi = u``, verified;
      * infeasible below ``hi``: ``lo = u``; infeasible at an unverified ``hi``: ``lo = hi`` and
        ``hi`` doubles (the bracket expands until a feasible point is found).
    The next point is ``hi`` itself when the bracket has closed but ``hi`` is not yet verified,
    else the solver's proposal inside (lo, hi). A pair is done when its bracket is closed
    (hi/lo − 1 ≤ rtol) with ``hi`` verified, or when δ(0) ≤ target (answer 0).
    """
    f = partial(_delta, cfg, symmetric)
    zero_ok = _delta_at_zero(cfg, symmetric, params, eps) <= target
    hi0, start = _initial_bracket(cfg, params, eps, target)
    log_tol = math.log1p(cfg.rtol)
    log_target = jnp.log(target)
    transform = optax.chain(optax.clip(2.0), optax.scale(-1.0))
    newton = cfg.solver == "optax"
    cap = jnp.log(hi0) + _MAX_DOUBLINGS * math.log(2.0)

    def body(state):
        u, log_lo, log_hi, hi_ok, opt_state, it, done, width_ref = state
        b = jnp.exp(u)
        if newton:
            d, dd = jax.jvp(lambda bb: f(bb, params, eps), (b,), (b,))  # dd = dδ/du
        else:
            d, dd = f(b, params, eps), jnp.zeros_like(b)
        feasible = d <= target
        at_hi = u >= log_hi
        live = ~done
        grow = live & ~feasible & at_hi
        log_lo = jnp.where(live & ~feasible, jnp.where(at_hi, log_hi, jnp.maximum(log_lo, u)), log_lo)
        log_hi = jnp.where(live & feasible, jnp.minimum(log_hi, u), jnp.where(grow, log_hi + math.log(2.0), log_hi))
        hi_ok = jnp.where(live & feasible, True, jnp.where(grow, False, hi_ok))
        closed = (log_hi - log_lo) <= log_tol
        # the solver's proposal inside (lo, hi)
        mid = 0.5 * (log_lo + log_hi)
        if newton:
            # Newton on log δ(u) = log δ_target, or, where that step leaves the bracket, on
            # δ(u) = δ_target (δ is convex and falls to 0 at b_pure like a power of b_pure − b,
            # where log δ overshoots); the step goes through the optax chain (trust-region clip).
            slope = dd / jnp.maximum(d, 1e-300)
            # far on the feasible side δ falls to 0 at a finite b (pure ε, MATH.md §6): halve there
            usable = (slope < 0) & (d > 0) & ~(feasible & (d < target / 16))
            step_log = (jnp.log(jnp.maximum(d, 1e-300)) - log_target) / jnp.where(usable, slope, -1.0)
            step_lin = (d - target) / jnp.where(dd < 0, dd, -1.0)
            nudge = jnp.where(feasible, -0.25, 0.25) * log_tol
            in_bracket = lambda x: (x > log_lo) & (x < log_hi)  # noqa: E731
            use_log = usable & in_bracket(u - step_log + nudge)
            use_lin = usable & ~use_log & (dd < 0) & in_bracket(u - step_lin + nudge)
            step = jnp.where(use_log, step_log, jnp.where(use_lin, step_lin, 0.0))
            updates, opt_state = transform.update(step, opt_state)
            proposal = optax.apply_updates(u, updates) + nudge
            inside = (use_log | use_lin) & in_bracket(proposal)
            # no usable step (δ = 0 in the pure-ε region, or a flat bound): halve or double b,
            # or bisect once the bracket is narrower than that
            halve = jnp.where(feasible, jnp.maximum(mid, u - math.log(2.0)), jnp.minimum(mid, u + math.log(2.0)))
            proposal = jnp.where(inside, proposal, jnp.where(usable, mid, halve))
        else:
            proposal = mid
        # safeguard: past _STALL_FROM iterations, every _STALL_CHECK iterations the bracket must
        # have halved (in log b) since the last check, else bisect (Newton can creep along one
        # end of a near-kink, as the coupling bound of a mixture with a near-point-mass component)
        width = log_hi - log_lo
        check = (it >= _STALL_FROM) & ((it % _STALL_CHECK) == 0)
        stalled = check & (width > 0.5 * width_ref)
        width_ref = jnp.where(check, width, width_ref)
        proposal = jnp.where(stalled, mid, proposal)
        u_next = jnp.where(closed | grow, log_hi, proposal)
        finished = live & ((closed & hi_ok) | (log_hi > cap))
        return u_next, log_lo, log_hi, hi_ok, opt_state, it + live.astype(int), done | finished, width_ref

    u0 = jnp.log(start)
    log_hi0 = jnp.log(hi0)
    state = (u0, log_hi0 + math.log(_FLOOR), log_hi0, jnp.zeros(u0.shape, bool), transform.init(u0), jnp.zeros(u0.shape, int), zero_ok,
             jnp.full(u0.shape, jnp.inf))
    u, log_lo, log_hi, hi_ok, _, iterations, done, _ = jax.lax.while_loop(
        lambda s: (~jnp.all(s[6])) & (jnp.max(s[5]) < max_iter), body, state
    )
    b = jnp.where(zero_ok, 0.0, jnp.exp(log_hi))
    converged = zero_ok | (done & hi_ok & ((log_hi - log_lo) <= log_tol))
    return b, converged, iterations


@partial(jax.jit, static_argnums=0)
def _search_jit(cfg, params, eps, target, max_iter, symmetric):
    return _search(cfg, params, eps, target, max_iter, symmetric)


@partial(jax.custom_jvp, nondiff_argnums=(0, 4, 5))
def _root(cfg, params, eps, target, max_iter, symmetric):
    """The per-pair calibrated scale; differentiable by the implicit function theorem."""
    return _search_jit(cfg, params, eps, target, max_iter, symmetric)[0]


@partial(jax.jit, static_argnums=0)
def _implicit_tangent(cfg, symmetric, b, primals, tangents):
    """db = (dδ_target − ∂_θ δ · dθ) / ∂_b δ at the root δ(b(θ); θ) = δ_target (0 where b = 0)."""
    params, eps, _ = primals
    b_pos = jnp.where(b > 0, b, 1.0)
    _, d_theta = jax.jvp(lambda pr, e: _delta(cfg, symmetric, b_pos, pr, e), (params, eps), tangents[:2])
    _, d_b = jax.jvp(lambda bb: _delta(cfg, symmetric, bb, params, eps), (b_pos,), (jnp.ones_like(b_pos),))
    ok = (b > 0) & (d_b < 0)
    return jnp.where(ok, (tangents[2] - d_theta) / jnp.where(ok, d_b, -1.0), 0.0)


@_root.defjvp
def _root_jvp(cfg, max_iter, symmetric, primals, tangents):
    b = _root(cfg, *primals, max_iter, symmetric)
    tangents = jax.tree_util.tree_map(lambda t, p: jnp.broadcast_to(t, jnp.shape(p)).astype(jnp.float64), tangents, primals)
    return b, _implicit_tangent(cfg, symmetric, b, tuple(primals), tuple(tangents))


# ----------------------------------------------------------------------------- certificate


_prior_delta_jit = jax.jit(prior_delta)


@partial(jax.jit, static_argnames=("noise", "family"))
def _delta_jit(params, b, eps, noise, symmetric, family):
    return _delta(_Config("exact", noise, "bisection", 0.0, family), symmetric, b, params, eps)


_at_zero_jit = jax.jit(_delta_at_zero, static_argnums=0)


def _max_exact_delta(family, params, scale, eps, noise, symmetric, chunk: int = 256, budget: int = 64):
    """A certified max over pairs of the exact δ at one scale, pruned by a coupling bound ≥ L0.

    Gaussian priors with Laplace noise (bound L1) and Gaussian mixtures (the bound (24) of their
    plan): pairs are visited in decreasing order of their bound, ``chunk`` at a time, until the
    next bound is ≤ the running max (then the max is exact) or ``budget`` chunks are spent (then
    the largest remaining bound stands in for the unvisited pairs: still an upper bound).
    Gaussian priors with Gaussian noise (one batch), discrete priors, and every family at scale 0:
    every pair, in chunks.
    """
    n = params[0].shape[0]
    zero = float(scale) == 0.0
    if zero and family == "gaussian":  # no noise: the priors' own hockey-stick, closed form
        return jnp.max(_prior_delta_jit(*params, eps, symmetric))
    prune = not zero and (family == "mixture" or (family == "gaussian" and noise == "laplace"))
    if prune:
        bound = np.asarray(_delta(_Config("coupling", noise, "bisection", 0.0, family), symmetric, scale, params, eps))
        order = np.argsort(-bound, kind="stable")
    else:
        order = np.arange(n)
        if family == "gaussian":  # Gaussian noise: a closed form, cheap enough for one batch
            chunk = max(chunk, n)
    best = 0.0
    for start in range(0, n, chunk):
        if prune and (bound[order[start]] <= best or start >= chunk * budget):
            return jnp.asarray(max(best, float(bound[order[start]])))
        idx = order[start : start + chunk]
        part = tuple(_pad_take(params, idx, _bucket(idx.size, chunk)))
        if zero and family == "mixture":
            vals = _at_zero_jit(_Config("exact", noise, "bisection", 0.0, family), symmetric, part, eps)
        else:
            vals = _delta_jit(part, scale, eps, noise, symmetric, family)
        best = max(best, float(jnp.max(vals)))
    return jnp.asarray(best)


# ----------------------------------------------------------------------------- entry point


@partial(jax.jit, static_argnames="tau")
def _theorem_level(d_mu, d_sigma, eps, delta, tau):
    """Theorem 1, eq. (5), per pair (rounded up a few ulps) and its max."""
    per_pair = theorem1_scale(d_mu, d_sigma, eps, tau_star_unchecked(delta, tau)) * _ROUND_UP
    return per_pair, jnp.max(per_pair)


def _progress(done: int, total: int) -> None:
    width = 30
    filled = int(width * done / total)
    sys.stderr.write(f"\rjaxpuffer: calibrating {total} pairs [{'#' * filled}{'.' * (width - filled)}] {100 * done // total:3d}%")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _bucket(m: int, cap: int) -> int:
    """Padded batch size for m pairs, at most ``cap``: a power of two ≥ 64 up to 2048, then a
    multiple of 2048 (few compiled shapes, at most 2047 padded pairs of wasted work)."""
    size = max(64, 1 << (m - 1).bit_length()) if m <= 2048 else -(-m // 2048) * 2048
    return min(cap, size)


def _pad_take(arrays, idx: np.ndarray, size: int):
    """Gather ``idx`` from each array, padded to ``size`` by repeating the first index."""
    if idx.size < size:
        idx = np.concatenate([idx, np.full(size - idx.size, idx[0])])
    return tuple(a[idx] for a in arrays)


def _solve_concrete(cfg, params, eps, target, max_iter, symmetric):
    """Search on concrete arrays: a first pass capped at ``_FIRST_PASS`` iterations over everything,
    then the few unfinished pairs again, compacted into small buckets, with the full cap."""
    first = min(max_iter, _FIRST_PASS) if cfg.solver == "optax" else max_iter
    b, conv, iters = (np.array(x) for x in _search_jit(cfg, params, eps, target, first, symmetric))
    left = np.nonzero(~conv)[0]
    if first < max_iter and left.size:
        size = _bucket(left.size, _LEFTOVER_BUCKET)
        for start in range(0, left.size, size):
            idx = left[start : start + size]
            b2, c2, i2 = _search_jit(cfg, _pad_take(params, idx, size), eps, target, max_iter, symmetric)
            b[idx], conv[idx] = np.asarray(b2)[: idx.size], np.asarray(c2)[: idx.size]
            iters[idx] = first + np.asarray(i2)[: idx.size]
    return b, conv, iters


def _chunked_root(cfg, params, eps, target, max_iter, symmetric, chunk_size, progress):
    """The per-pair search over flat arrays, in chunks of bounded size padded to a few compiled
    shapes. Concrete inputs: :func:`_solve_concrete`, with diagnostics. Traced inputs (jax.grad,
    jit or vmap around calibrate): the implicit-gradient root; diagnostics are then None.
    """
    n = params[0].shape[0]
    cap = n if chunk_size is None else chunk_size
    concrete = all(_validate.is_concrete(v) for v in (*params, eps, target))
    parts, converged, iterations = [], True, 0
    for start in range(0, n, cap):
        idx = np.arange(start, min(start + cap, n))
        take = _pad_take(params, idx, _bucket(idx.size, cap))
        if concrete:
            b, conv, iters = _solve_concrete(cfg, take, eps, target, max_iter, symmetric)
            converged = converged and bool(conv[: idx.size].all())
            iterations = max(iterations, int(iters[: idx.size].max()))
            parts.append(jnp.asarray(b[: idx.size]))
        else:
            parts.append(_root(cfg, take, eps, target, max_iter, symmetric)[: idx.size])
        if progress:
            _progress(int(idx[-1]) + 1, n)
    if not concrete:
        converged, iterations = None, None
    return (parts[0] if len(parts) == 1 else jnp.concatenate(parts)), converged, iterations


def calibrate(
    pairs: PairSet,
    eps,
    delta,
    *,
    noise: str = "laplace",
    level: str = "theorem",
    solver: str = "optax",
    tau: str = "exact",
    rtol: float = 1e-10,
    max_iter: int = 100,
    chunk_size: int | None = 16384,
    progress: bool = False,
) -> Calibration:
    """The noise scale that makes Y = X + N (ε, δ)-pufferfish private for every pair in ``pairs``.

    Args:
      pairs: a :class:`PairSet` of Gaussian, Discrete or GaussianMixture priors; every batch axis
        is maximised over.
      eps: ε > 0. delta: δ ∈ (0, 1). Scalars (tracers allowed: the result is differentiable).
      noise: ``"laplace"`` (scale b) or ``"gaussian"`` (std θ; levels ``exact`` and ``coupling``).
      level: ``"theorem"`` — Theorem 1, eq. (5), closed form; ``"indicator"`` — the smallest b with
        P(|W| > εb) ≤ δ (L2); ``"coupling"`` — the Monge-coupling bound (35) (L1); ``"exact"`` —
        the exact hockey-stick divergence (L0), the tightest. Scales satisfy
        exact ≤ coupling ≤ indicator ≤ theorem. Discrete priors (Kantorovich paper): ``"theorem"``
        is its Theorem 1 (Laplace, b = Δ_π*/ε), ``"coupling"`` the bound of the quantile plan
        π*, ``"exact"`` the exact δ; ``"indicator"`` does not apply. GaussianMixture priors:
        ``"theorem"`` is Theorem 2 in its valid max form, ``"coupling"`` the bound (24) of the GMM
        plan that minimises Theorem 2's cost at this δ, ``"exact"`` the exact δ
        (:mod:`jaxpuffer.losses_mixture`); ``"indicator"`` does not apply.
      solver: ``"optax"`` (safeguarded Newton through optax) or ``"bisection"``; both return a
        scale whose δ at the level was evaluated ≤ ``delta`` and agree to ``rtol``.
      tau: τ*(δ) method for the theorem level (see :func:`jaxpuffer.tau_star`).
      rtol: relative width at which a per-pair bracket counts as closed.
      max_iter: iteration cap of the optax solver (``converged`` is False where it is hit).
      chunk_size: pairs per compiled batch (bounded memory; the answer does not depend on it);
        None for one batch.
      progress: print a progress bar on stderr while chunks are processed.

    Returns:
      A :class:`Calibration`.
    """
    _validate.choice("level", level, LEVELS)
    _validate.choice("noise", noise, NOISES)
    _validate.choice("solver", solver, SOLVERS)
    _validate.choice("tau", tau, TAU_METHODS)
    if noise == "gaussian" and level not in GAUSSIAN_NOISE_LEVELS:
        raise ValueError(f"level {level!r} is a Laplace-noise bound; for noise='gaussian' use level 'exact' or 'coupling'")
    if not (isinstance(rtol, float) and 0 < rtol < 1e-2):
        raise ValueError(f"rtol must be a float in (0, 0.01); got {rtol!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive integer or None; got {chunk_size!r}")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    discrete = isinstance(pairs, PairSet) and isinstance(pairs.first, Discrete)
    mixture = isinstance(pairs, PairSet) and isinstance(pairs.first, GaussianMixture)
    family = "discrete" if discrete else "mixture" if mixture else "gaussian"
    if family == "gaussian":
        pairs = _gaussian_pairs(pairs, "calibrate")
    elif discrete and level == "indicator":
        raise ValueError("level 'indicator' is for Gaussian priors; for Discrete pairs use 'theorem', 'coupling' or 'exact'")
    elif mixture and level == "indicator":
        raise ValueError("level 'indicator' is for Gaussian priors; for GaussianMixture pairs use 'theorem', 'coupling' or 'exact'")
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta)
    if eps.ndim or delta.ndim:
        raise ValueError("eps and delta must be scalars for calibrate; use jaxpuffer.bounds for arrays")
    shape = pairs.batch_shape
    if discrete:
        n = pairs.first.num_atoms
        params = tuple(a.reshape(-1, n) for a in (pairs.first.support, pairs.first.probs, pairs.second.probs))
    elif mixture:  # the plan minimising Theorem 2's own cost at this δ
        params = mixture_params(pairs, gmm_coupling(pairs, cost="bound", delta=delta, tau=tau))
    else:
        d_mu = (pairs.first.mean - pairs.second.mean).reshape(-1)
        params = (d_mu, pairs.first.std.reshape(-1), pairs.second.std.reshape(-1))

    if level == "theorem":
        if discrete or mixture:
            per_pair = (kantorovich.theorem1(pairs, eps) if discrete else theorem2(pairs, eps, delta, coupling="bound", form="max", tau=tau)).reshape(-1)
            scale = jnp.max(per_pair)
        else:
            per_pair, scale = _theorem_level(params[0], params[1] - params[2], eps, delta, tau)
        converged, iterations, solver_name = True, 0, "closed form"
    else:
        cfg = _Config(level, noise, solver, float(rtol), family)
        per_pair, converged, iterations = _chunked_root(cfg, params, eps, delta, max_iter, pairs.symmetric, chunk_size, progress)
        if converged is False:
            warnings.warn(
                f"calibrate: the {solver} search did not close every bracket within max_iter={max_iter}; "
                "per_pair holds the last upper ends, which may be neither tight nor verified "
                "(converged=False). Raise max_iter or use solver='bisection'.",
                RuntimeWarning,
                stacklevel=2,
            )
        scale = jnp.max(per_pair)
        solver_name = solver
    per_pair = per_pair.reshape(shape)
    if all(_validate.is_concrete(v) for v in (scale, *params, eps)):
        achieved = _max_exact_delta(family, params, scale, eps, noise, pairs.symmetric)
    else:  # under a transformation the certificate is not computed
        achieved = None
    return Calibration(
        scale=scale,
        per_pair=per_pair,
        binding=_binding(per_pair),
        delta_achieved=achieved,
        level=level,
        noise=noise,
        eps=eps,
        delta=delta,
        converged=converged,
        iterations=iterations,
        solver=solver_name,
    )


def _binding(per_pair) -> tuple:
    """Index of the largest per-pair scale (concrete: ints; traced: arrays)."""
    flat = jnp.argmax(per_pair.reshape(-1))
    if _validate.is_concrete(flat):
        return tuple(int(i) for i in np.unravel_index(int(flat), per_pair.shape))
    return tuple(jnp.unravel_index(flat, per_pair.shape))
