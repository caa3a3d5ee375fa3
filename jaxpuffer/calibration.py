"""Calibration: the smallest noise scale that meets (ε, δ) for every pair, and its certificate.

``calibrate`` validates its inputs eagerly, finds per pair the smallest scale b whose δ at the
requested level of the ladder (MATH.md §6) is ≤ the target, takes the maximum over every pair and
prior, and reports the exact δ at that scale.

Per-pair search (levels ``exact``, ``coupling``, ``indicator``), batched over pairs:

1. **No noise needed.** If δ(0) ≤ δ (the priors' own hockey-stick, or Δμ = Δσ = 0 for the
   coupling levels) the answer is 0.
2. **Bracket.** ``hi`` starts at a scale that is feasible in theory — Theorem 1's closed form for
   Laplace noise (every level is ≤ L3) — and is *verified*; where it fails, or where no closed
   form exists (Gaussian noise), it doubles until δ(hi) ≤ δ. ``lo = hi·2⁻⁴⁰`` is verified
   infeasible (else it is the answer). Exact level, Laplace noise, Gaussian priors: the first
   point is b_pure·(1 − 3e-4), just below b_pure of MATH.md §6, where δ vanishes (δ often
   reaches the target within 1e-4 of it). Mixture priors with a kernel whose tails have
   limits (Laplace): 1 % below the tail floor (:func:`_pure_floor`), which the
   model takes as b_c until an evaluation disproves it (:func:`_search_init`).
3. **Solve.** ``solver="optax"``: model steps in u = log b (:func:`_model_root`: a power law
   log δ = c + k log(b_c − b) fitted to the last two slopes, Newton on log δ where none fits),
   passed through an optax transform chain (a trust-region clip of 2 in log b) and kept inside
   the bracket (halving or bisection when a step leaves it, or, from the 6th evaluation, when the
   bracket has not halved over the last 3); proposals alternate a hair above and below the model's
   root so both ends close in; the last 48 evaluations before ``max_iter`` bisect, so a search
   whose model creeps along one end still closes (issue 17). ``solver="bisection"``: geometric
   bisection of the bracket in ``lax`` loops. Every evaluation moves ``lo`` or ``hi``; both
   solvers stop when hi/lo − 1 ≤ ``rtol`` and return ``hi`` — the very scale whose δ was
   evaluated ≤ the target: the feasibility guarantee holds by construction. ``converged`` says
   whether the bracket closed. Concrete inputs are searched in passes: pairs still open after a pass are compacted,
   their state carried, so the batch stops paying for finished pairs.
4. **Pure ε** (δ = 0, exact level, Laplace noise): ``lo`` starts at :func:`_pure_floor`, the
   largest scale found where a tail limit of the noisy log-ratio exceeds ε (so δ > 0), and the
   first point is a hair above it (where the supremum is in the tails, as for every Gaussian pair
   tried, that point is the answer); the model's vanishing point b_c is then the root, and after
   a point with δ = 0 the search steps back 1% of the gap (``_ZERO_PULL``).
5. **Derivatives** of the result with respect to ε, δ and the prior parameters are implicit:
   db/dθ = −(∂δ/∂θ)/(∂δ/∂b) at the root (``jax.custom_jvp``), not through the loop. Where a
   lane has at most ``_MAX_SLOPES`` inputs (Gaussian pairs), its slopes ∂δ/∂b and ∂δ/∂x are
   computed once, forward, and the derivative is their combination with the tangents, so that
   ``jax.grad`` transposes that combination and not the evaluator (:func:`_slopes`). Where the
   evaluator gives δ's whole gradient in closed form with its value (Gaussian and mixture pairs,
   Laplace noise, exact level: any number of inputs per lane), the search's own program computes those slopes in one more evaluation
   (:func:`_slopes_by_search`), so an eager ``jax.grad`` compiles no program of its own.
6. **Devices and processes** (:mod:`jaxpuffer._parallel`): every compiled lanewise step (search,
   implicit tangent, certificate) runs under ``shard_map`` over ``devices``, each device its own
   block of lanes; under ``jax.distributed`` each process searches its part of the pairs and
   :func:`_conclude` gathers the per-pair scales, the binding pair and the certificate.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import _parallel, _validate, families
from ._cache import LATENCY_OPTIONS, ExportedJit, default_platform, defined_here
from ._progress import ProgressBar
from .families.gaussian import theorem_level as _theorem_level
from .noise import kernels
from .pairs import PairSet, require_pairs
from .tau import METHODS as TAU_METHODS

LEVELS = ("theorem", "indicator", "coupling", "exact")
NOISES = kernels.names()
SOLVERS = ("optax", "bisection")
CERTIFY = ("exact", "level")
GAUSSIAN_NOISE_LEVELS = kernels.Normal.levels

_DEFAULT_SOLVER, _DEFAULT_RTOL, _DEFAULT_CHUNK = "optax", 1e-10, 16384  # calibrate's defaults (exact_delta_by_search runs their program)
_FLOOR = 2.0**-40  # the initial lo is hi·_FLOOR
_BELOW_TAIL_FLOOR = 1e-2  # families with no closed-form vanishing point start this far below the tail floor (:func:`_search_init`)
_MAX_DOUBLINGS = 80
_QUICK_LANES = 64  # the most lanes of a search compiled for latency (:func:`_compile_for_latency`)
# compaction of the concrete search (:func:`_solve_concrete`): the evaluations after which the
# unfinished pairs are re-batched, and the padding a batch may add (a fraction of the pairs it
# holds). Where an evaluation is costly (mixtures at the exact level, ~1 ms per pair), after every
# evaluation while most pairs finish, in tight batches (2,048 mixture pairs from the tail floor:
# 13.6 s warm with the rare schedule, 11.8 s with this one); elsewhere rarely and in few batch
# sizes, since each new size is a compile that costs more than the evaluations it saves (10⁴
# Gaussian pairs under Gaussian noise: a cold first call 4.9 s, 9.1 s with the frequent schedule;
# 4,096 discrete pairs 10.2 -> 12.9 s)
_COMPACT_OFTEN = ((4, *range(5, 15), 16, 20, 24, 32, 48, 64), 0.25)
_COMPACT_RARELY = ((4, 5, 8, 16), 1.0)
_COSTLY_PIECE = 4  # granules in the largest piece of a costly exact search (:func:`_solve_concrete`)
_STALL_FROM, _STALL_CHECK = 6, 3  # optax solver: when and how often the bracket must shrink
# optax solver: the last evaluations before max_iter bisect, so that a search whose model steps
# creep still closes its bracket (a verified bracket spans at most a factor 2⁴⁰ in b: 48 halvings
# of its log width take it below rtol = 1e-10)
_BISECT_RESERVE = 48
# optax solver, against creeping (see _search_run): a model step on the same side as the last
# two evaluations that is longer than _CREEP_RATIO times the last step is doubled per evaluation
# in the run, up to 2^_MAX_STRETCH-fold
_CREEP_RATIO, _MAX_STRETCH = 0.1, 30
_ZERO_PULL = 1e-2  # δ = 0 targets: see _search_run (mean evaluations of the pairs, about half of 512 random discrete
# pairs, whose first point is not the answer: 1e-3: 21, 1e-2: 18, 0.1: 21, 0.3: 27)
# The smallest target the exact evaluators certify (issue 17): their grids reach 13 prior stds
# beyond every component (Gaussian tail mass 6e-39), and an adversarial audit found the exact
# level clean down to 1e-30 and wrong below 1e-36 (a far-tail crossing is never searched).
DELTA_FLOOR = 1e-30


class Calibration(NamedTuple):
    """The result of :func:`calibrate`.

    Concrete results hold Python numbers where a person reads them (``scale``, ``delta_achieved``,
    ``eps``, ``delta``: floats; ``converged``: bool; ``iterations``: int) and arrays where there are
    many (``per_pair``; for a sweep over arrays of ε and δ, numpy arrays of the sweep's shape for
    those four too); under ``jit``/``vmap``/``grad`` they are JAX values. ``str(result)`` is a
    short summary; ``result.to_dict()`` a JSON-ready dict.

    Attributes:
      scale: the noise scale to use: Laplace b or Gaussian std θ, the max over pairs and priors.
      per_pair: the smallest feasible scale for each pair, shape ``pairs.batch_shape``.
      binding: index (tuple) into ``per_pair`` of the pair that sets ``scale``.
      delta_achieved: a certified δ at ``scale``, max over pairs and orders: the level named by
        ``certificate``. ``"exact"``: the exact δ (L0) — for very large pair sets a certified
        upper bound on it (see :func:`_max_exact_delta`); ``"theorem"``: the closed form's own δ
        at ``scale`` (Theorem 1 or 2 inverted; ≥ L0 and ≤ the target); ``"coupling"``: the
        coupling bound (≥ L0; kernels with no exact evaluator, such as generalized Gaussian
        noise). None when calibrate runs under a JAX transformation such as ``grad``.
      level, noise, solver: how the scale was obtained (``noise``: the kernel's name, or the
        kernel itself where it has shape parameters, e.g. ``GeneralizedGaussian(p=1.5)``).
      eps, delta: the target.
      converged: whether every per-pair search closed its bracket to ``rtol`` (closed forms: True;
        None under a JAX transformation).
      iterations: the most solver iterations any pair used (closed forms: 0; None likewise).
      certificate: the level whose δ ``delta_achieved`` is (see there).
      binding_pair: the pair that sets ``scale`` (``pairs[binding]``, a one-pair
        :class:`PairSet` with its priors' parameters); None under a JAX transformation.
    """

    scale: Any
    per_pair: Any
    binding: tuple
    delta_achieved: Any
    level: str
    noise: Any
    eps: Any
    delta: Any
    converged: bool
    iterations: int
    solver: str = "closed form"
    certificate: str = "exact"
    binding_pair: Any = None

    @property
    def variance(self):
        """Variance of the noise: 2b² for Laplace, θ² for Gaussian (the kernel's ``variance``)."""
        variance = kernels.resolve(self.noise).variance(self.scale)
        return float(variance) if isinstance(self.scale, float) else variance

    def to_dict(self) -> dict:
        """The result as plain Python values (JSON-ready); ``binding_pair`` as its priors' fields."""
        def plain(value):
            return np.asarray(value).tolist() if value is not None else None

        pair = self.binding_pair
        return {
            "scale": plain(self.scale), "variance": plain(self.variance), "per_pair": plain(self.per_pair),
            "binding": plain(self.binding),
            "binding_pair": None if pair is None else {
                side: {"prior": type(prior).__name__, **{f: plain(getattr(prior, f)) for f in prior._fields}}
                for side, prior in (("first", pair.first), ("second", pair.second))
            },
            "delta_achieved": plain(self.delta_achieved), "certificate": self.certificate, "level": self.level, "noise": str(self.noise),
            "eps": plain(self.eps), "delta": plain(self.delta), "converged": self.converged,
            "iterations": self.iterations, "solver": self.solver,
        }

    def __str__(self) -> str:
        kernel = kernels.resolve(self.noise)
        sym = kernel.symbol
        if np.ndim(self.scale):
            return self._sweep_table(sym)
        lines = [
            f"Calibration: {self.noise} noise, {sym} = {float(self.scale):.6g} (variance {float(self.variance):.6g}) "
            f"for (ε, δ) = ({float(self.eps):g}, {float(self.delta):g}), {self.level} level ({self.solver})",
            f"  δ at {sym} ({self.certificate} level): {'not computed' if self.delta_achieved is None else format(float(self.delta_achieved), '.4g')}"
            f"   pairs: {np.size(self.per_pair)}   converged: {self.converged}   iterations: {self.iterations}",
        ]
        if self.binding_pair is not None:
            first, second = (_describe_prior(p) for p in (self.binding_pair.first, self.binding_pair.second))
            lines.append(f"  binding pair {tuple(self.binding)}: {first} vs {second}")
        return "\n".join(lines)

    def _sweep_table(self, sym) -> str:
        """One line per (ε, δ) of a sweep: the scale, the noise's std and the certified δ."""
        scale = np.asarray(self.scale, np.float64)
        pairs = np.size(self.per_pair) // scale.size
        lines = [
            f"Calibration sweep: {self.noise} noise, {self.level} level ({self.solver}), {scale.size} (ε, δ) points × {pairs} pairs, "
            f"converged: {self.converged}",
            f"  {'ε':>10} {'δ':>10} {sym:>12} {'noise std':>12} {'δ at ' + sym + ' (' + self.certificate + ')':>22}",
        ]
        achieved = np.full(scale.shape, np.nan) if self.delta_achieved is None else np.asarray(self.delta_achieved, np.float64)
        std = np.sqrt(np.asarray(self.variance, np.float64))
        for e, d, b, sd, a in zip(*(np.broadcast_to(v, scale.shape).reshape(-1) for v in (self.eps, self.delta, scale, std, achieved))):
            lines.append(f"  {e:>10.4g} {d:>10.3g} {b:>12.6g} {sd:>12.6g} {a:>22.4g}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython / Jupyter
        printer.text(str(self))


@partial(jax.jit, static_argnames=("family", "points"))
def _theorem_certificate(params, scale, eps, family, points):
    """The theorem level's certificate: per sweep point, the max over its pairs of the closed
    form's δ at its scale (``scale`` and ``eps`` per lane or shared)."""
    return jnp.max(families.get(family).theorem_delta(params, scale, eps).reshape(points, -1), axis=1)


def _describe_prior(prior) -> str:
    fields = ", ".join(f"{f}={np.array2string(np.asarray(getattr(prior, f)), precision=6)}" for f in prior._fields)
    return f"{type(prior).__name__}({fields})"


class _Config(NamedTuple):
    """Static search settings (one compiled search per distinct value).

    ``family`` names the prior type and the per-pair parameter tuple the search carries:
    ``"gaussian"`` — (Δμ, σ_i, σ_j); ``"discrete"`` — (support, p_i, p_j), atoms on the last axis;
    ``"mixture"`` — (w, Δμ, Δσ) on the (k, k) component grid, w the GMM plan's weights, then
    (α, μ_i, σ_i, β, μ_j, σ_j) per component (:func:`jaxpuffer.losses_mixture.mixture_params`).
    """

    level: str
    noise: Any  # a kernel name, or a kernel with concrete shape parameters (hashable)
    solver: str
    rtol: float
    family: str = "gaussian"
    pure: bool = False  # some targets are δ = 0: those searches start at the analytic floor (:func:`_pure_floor`)
    mesh: Any = None  # the devices sharing the lanes (:mod:`jaxpuffer._parallel`), None for one
    quick: bool = False  # its programs are compiled for latency (:func:`_compile_for_latency`)


# ----------------------------------------------------------------------------- per-pair search


def _noise_and_params(cfg: _Config, params):
    """(the search's noise kernel, the family's params). A kernel with shape parameters (GG's p)
    has them erased from ``cfg.noise`` (:meth:`search_key`) and carried as the last entries of
    ``params``, 0-d values shared by every lane (as a scalar ε is). So one compiled search serves
    every p, and p's tangents reach the implicit derivative as the priors' do."""
    template = kernels.resolve(cfg.noise)
    k = len(template.shape_names)
    if not k:
        return cfg.noise, params
    return template.with_shape(tuple(params[-k:])), tuple(params[:-k])


def _delta(cfg: _Config, symmetric, b, params, eps):
    noise, params = _noise_and_params(cfg, params)
    return families.get(cfg.family).delta(cfg.level, noise, params, b, eps, symmetric)


def _delta_and_slope(cfg: _Config, symmetric, b, params, eps):
    """(δ, slopes (n, G)) per lane, ∂δ/∂b first, for the search's model and its state
    (:func:`jaxpuffer.families.delta_and_slope`)."""
    noise, params = _noise_and_params(cfg, params)
    return families.delta_and_slope(families.get(cfg.family), cfg.level, noise, params, b, eps, symmetric)


def _slope_columns(cfg: _Config, params, eps) -> int:
    """The columns of the search state's ``slopes_last``: 1 + the per-lane entries of (params, ε)
    (:func:`_slopes`' layout) where the optax search's evaluator gives δ's whole gradient in closed
    form (:func:`jaxpuffer.families.gradient_in_closed_form`), else 0: a slope carried out of the
    search's loop for nothing is not free (exact level, Gaussian noise, where ∂δ/∂b is a JVP:
    10⁵ pairs warm 1.1 -> 3.1 s with it, XLA's fusion of δ and its slope split in two)."""
    noise, _ = _noise_and_params(cfg, params)
    whole = cfg.solver == "optax" and families.gradient_in_closed_form(families.get(cfg.family), cfg.level, noise)
    return 1 + sum(_lane_sizes((params, eps))) if whole else 0


def _delta_at_zero(cfg: _Config, symmetric, params, eps):
    noise, params = _noise_and_params(cfg, params)
    return families.get(cfg.family).delta_at_zero(cfg.level, noise, params, eps, symmetric)


def _delta_at_zero_floor(cfg: _Config, symmetric, params, eps):
    noise, params = _noise_and_params(cfg, params)
    return families.get(cfg.family).delta_at_zero_floor(cfg.level, noise, params, eps, symmetric)


class _SearchState(NamedTuple):
    """Per-pair state of :func:`_search_run` (every field has the batch as its leading axis)."""

    u: Any  # log b to evaluate next
    log_lo: Any  # verified infeasible (or the initial floor)
    log_hi: Any  # feasible once hi_ok
    hi_ok: Any
    b_hi: Any  # the scale evaluated at log_hi (returned as is: it is the one verified; NaN until one is)
    opt_state: Any
    it: Any  # evaluations spent
    done: Any
    width_ref: Any  # bracket width at the last stall check
    points: Any  # (…, 2, 3): the last two evaluations with δ > 0, as (b, log δ, d log δ/db); NaN if none
    zero_at: Any  # the smallest b known to give δ = 0 (the analytic pure-ε scale, or +inf)
    seen_zero: Any  # whether zero_at was evaluated (not only known in theory)
    log_cap: Any  # hi may double up to here
    streak: Any  # evaluations in a row on the same side of the target, counted while u is a solver step (else 1); 0 before the first
    last_feasible: Any  # the side of the last evaluation
    modeled: Any  # whether u is a solver step (model or secant; not a bisection, doubling or halving)
    step: Any  # |log b| moved to reach u
    g_lo: Any  # log δ − log δ_target at log_lo (NaN if not evaluated there), Illinois-scaled
    g_hi: Any  # the same at log_hi (≤ 0; −inf where δ = 0)
    b_next: Any  # the scale evaluated next: exp(u), or a scale given exactly (:func:`_evaluation_call`)
    d_last: Any  # δ at the last evaluation (NaN before the first)
    slopes_last: Any  # (…, G): its slopes, those of :func:`_slopes`, where the evaluator gives them with δ (:func:`_slope_columns`; else G = 0)


_TRANSFORM = optax.chain(optax.clip(2.0), optax.scale(-1.0))  # a trust region of 2 in log b


def _model_root(points, zero_at, seen_zero, log_target):
    """The next log b proposed from the last evaluations with δ > 0 (the optax solver's step).

    δ(b) vanishes at a finite scale b_c (pure ε beyond it), like a power (b_c − b)^k near it, so
    log δ is concave there and a Newton step on log δ overshoots. In order of preference:
      * two points: fit log δ = c + k log(b_c − b) to both slopes, s = −k/(b_c − b), which gives
        k = (b₁ − b₂)/(1/s₁ − 1/s₂) and b_c = b₁ − k/s₁, and solve it for log δ = log δ_target;
      * one point and a known b_c not yet evaluated (MATH.md §6's b_pure): the same with k = −s₁(b_c − b₁);
      * one point and a scale where δ was 0: linear interpolation in −1/log δ (0 at that scale);
      * otherwise Newton on log δ in log b.
    Returns (log b, valid); invalid where no point exists or no step applies.
    """
    b1, l1, s1 = points[..., 0, 0], points[..., 0, 1], points[..., 0, 2]
    b2, s2 = points[..., 1, 0], points[..., 1, 2]
    has1, has2 = ~jnp.isnan(b1), ~jnp.isnan(b2)
    s1_ = jnp.where(has1 & (s1 < 0), s1, -1.0)
    s2_ = jnp.where(has2 & (s2 < 0), s2, -2.0)
    inv_gap = 1.0 / s1_ - 1.0 / s2_
    k_two = (b1 - b2) / jnp.where(inv_gap != 0, inv_gap, 1.0)
    bc_two = b1 - k_two / s1_
    fit_two = has2 & (s1 < 0) & (s2 < 0) & (inv_gap != 0) & (k_two > 0) & (bc_two > jnp.maximum(b1, b2)) & (bc_two <= zero_at)
    known = ~seen_zero & jnp.isfinite(zero_at) & (zero_at > b1)
    k_one = -s1_ * (jnp.where(known, zero_at, b1 + 1.0) - b1)
    fit_one = has1 & (s1 < 0) & known & (k_one > 0)
    bc = jnp.where(fit_two, bc_two, jnp.where(known, zero_at, b1 + 1.0))
    k = jnp.where(fit_two, k_two, jnp.where(fit_one, k_one, 1.0))
    power = jnp.log(bc - (bc - b1) * jnp.exp((log_target - l1) / k))
    interp = jnp.log(b1 + (jnp.where(seen_zero, zero_at, b1) - b1) * (1.0 - l1 / log_target))
    newton = jnp.log(jnp.where(has1, b1, 1.0)) - (l1 - log_target) / (s1_ * b1)
    # (a target of 0, log δ_target = −∞: the power law's root is b_c itself; interpolation would
    # propose the zero already seen, and Newton has no root — the search bisects instead)
    proposal = jnp.where(fit_two | fit_one, power, jnp.where(seen_zero & jnp.isfinite(log_target), interp, newton))
    valid = has1 & (s1 < 0) & jnp.isfinite(proposal)
    return jnp.where(valid, proposal, 0.0), valid


def _pure_floor(cfg: _Config, params, eps, hi, symmetric):
    """For δ = 0 (pure ε): a scale proven infeasible, 0 where none is found (also the first point
    of a family with no closed-form vanishing point, :func:`_search_init`). Under Laplace(b) noise
    the log-ratio of the noisy densities tends to log M_i(±1/b) − log M_j(±1/b) as y → ±∞
    (``tail_log_ratios``); where a limit exceeds ε, δ(b) > 0, and so at every smaller scale (δ is
    non-increasing in b: Lap(b') = Lap(b) ⊛ [(b/b')² point mass at 0 + (1 − (b/b')²) Lap(b')] for
    b' > b, a post-processing). Geometric bisection on [hi·2⁻⁶⁰, hi] keeping the lower end where a
    limit exceeds ε. This is what makes a zero from the exact evaluator, whose grid reaches 13
    prior stds beyond the components, a safe answer: at these scales the tails are already within
    ε in the limit (e.g. equal variances: the log-ratio is Δμ(y − μ̄)/σ² far past that grid)."""
    family = families.get(cfg.family)
    noise, family_params = _noise_and_params(cfg, params)
    kernel = kernels.resolve(noise)

    def excess(b):
        limits = kernel.tail_log_ratios(partial(family.log_mgf_ratio, family_params), b)
        return jnp.where(symmetric, jnp.max(jnp.abs(limits), axis=0), jnp.max(limits, axis=0)) - eps

    def halve(_, bracket):
        lo, up = bracket
        mid = jnp.sqrt(lo) * jnp.sqrt(up)
        above = excess(mid) > 0  # NaN (an overflowing limit) proves nothing
        return jnp.where(above, mid, lo), jnp.where(above, up, mid)

    lo0 = hi * 2.0**-60
    lo, _ = jax.lax.fori_loop(0, 64, halve, (lo0, hi))
    return jnp.where(excess(hi) > 0, hi, jnp.where(excess(lo0) > 0, lo, 0.0))


def _search_init(cfg: _Config, params, eps, target, symmetric, zero_ok=None) -> _SearchState:
    """The initial bracket and first point of every pair (see :func:`_search_run`). A family with
    no closed form for the scale where δ vanishes (its ``bracket`` gives ``pure=None``) starts, at
    the exact level with a kernel whose tails have limits, 1 % below :func:`_pure_floor`'s scale,
    which the model also takes as that vanishing point until an evaluation disproves it: δ > 0
    below the floor, and for random mixtures the root lies within a few percent of it (median
    ratio 1.01 at (ε, δ) = (1, 1e-3), 1.00001 at (0.3, 1e-6)), where Theorem 2's scale is 1.1–17×
    the root. Mean evaluations per pair on 1,024 random 3-component mixtures, Laplace noise:
    10.0 → 5.2 at (1, 1e-3), 17.2 → 6.8 at (0.3, 1e-6), 21.4 → 6.0 at (3, 1e-9), 28.2 → 7.1 at
    (0.1, 0.05). The start steers the search only; the answer is still the verified upper end.
    Targets of 0
    (``cfg.pure``): ``lo`` is :func:`_pure_floor`'s scale, and the first point a hair above it;
    where that floor is > 0 the pair needs noise even if its δ(0) evaluated to 0 (an underflow:
    N(0, 1) vs N(0.006, 1) has δ(0) ≈ Φ(−164) at ε = 1). ``zero_ok``: whether each pair needs no
    noise, where the caller has settled it (:func:`_zero_noise_enough`); None: δ(0) ≤ target here."""
    if zero_ok is None:
        zero_ok = _delta_at_zero(cfg, symmetric, params, eps) <= target
    hi0, start, pure = families.get(cfg.family).bracket(cfg.level, *_noise_and_params(cfg, params), eps, target)
    tails = cfg.level == "exact" and kernels.resolve(cfg.noise).pure_eps
    floor = _pure_floor(cfg, params, eps, hi0, symmetric) if cfg.pure or (tails and pure is None) else None
    if pure is None:  # no closed form for where δ vanishes: estimated by the tail floor, if the kernel has one
        pure = jnp.full(hi0.shape, jnp.inf)
        if floor is not None:
            near = floor * (1.0 - _BELOW_TAIL_FLOOR)
            use = (near > 0) & (near < hi0) & (target > 0)  # (a target of 0 starts at the floor itself, below)
            start, pure = jnp.where(use, near, start), jnp.where(use, floor, pure)
    u0, log_hi0 = jnp.log(start), jnp.log(hi0)
    log_lo0 = log_hi0 + math.log(_FLOOR)
    if cfg.pure:
        proven = (target == 0) & (floor > 0)
        zero_ok = zero_ok & ~proven
        log_lo0 = jnp.where(proven, jnp.log(jnp.where(proven, floor, 1.0)), log_lo0)
        u0 = jnp.where(proven, log_lo0 + 0.5 * math.log1p(cfg.rtol), u0)
    n = u0.shape
    return _SearchState(
        u=u0, log_lo=log_lo0, log_hi=log_hi0, hi_ok=jnp.zeros(n, bool), b_hi=jnp.full(n, jnp.nan), opt_state=_TRANSFORM.init(u0),
        it=jnp.zeros(n, int), done=zero_ok, width_ref=jnp.full(n, jnp.inf), points=jnp.full(n + (2, 3), jnp.nan),
        zero_at=pure, seen_zero=jnp.zeros(n, bool), log_cap=log_hi0 + _MAX_DOUBLINGS * math.log(2.0),
        streak=jnp.zeros(n, int), last_feasible=jnp.zeros(n, bool), modeled=jnp.zeros(n, bool),
        step=jnp.full(n, jnp.inf), g_lo=jnp.full(n, jnp.nan), g_hi=jnp.full(n, jnp.nan), b_next=jnp.exp(u0), d_last=jnp.full(n, jnp.nan),
        slopes_last=jnp.full(n + (_slope_columns(cfg, params, eps),), jnp.nan),
    )


def _search_run(cfg: _Config, params, eps, target, max_iter, bisect_from, symmetric, state: _SearchState) -> _SearchState:
    """Runs the per-pair search until every pair is done or has spent ``max_iter`` evaluations.

    One ``lax.while_loop``; each iteration evaluates δ once per pair (with its slope ∂δ/∂b for the
    optax solver: in closed form where the family has one, else by JVP,
    :func:`jaxpuffer.families.delta_and_slope`) at ``u = log b`` and updates the bracket:
      * feasible (δ ≤ target): ``hi = u``, verified;
      * infeasible below ``hi``: ``lo = u``; infeasible at an unverified ``hi``: ``lo = hi`` and
        ``hi`` doubles (the bracket expands until a feasible point is found).
    The next point is ``hi`` itself when the bracket has closed but ``hi`` is not yet verified,
    else the solver's proposal inside (lo, hi): :func:`_model_root` (optax; its steps doubled
    while they creep along one end of the bracket, and an Illinois secant on log δ between the
    bracket's ends where the model has no step) or the geometric midpoint (bisection). A pair is
    done when its bracket is closed (hi/lo − 1 ≤ rtol) with ``hi`` verified, when δ(0) ≤ target
    (answer 0), or when ``hi`` doubled past its cap.
    """
    f = partial(_delta, cfg, symmetric)
    log_tol = math.log1p(cfg.rtol)
    log_target = jnp.log(target)
    newton = cfg.solver == "optax"

    def body(s: _SearchState) -> _SearchState:
        b = s.b_next
        slopes = s.slopes_last
        if newton:
            d, every = _delta_and_slope(cfg, symmetric, b, params, eps)
            dd = every[:, 0]  # dδ/db
            slopes = every if s.slopes_last.shape[-1] else slopes
        else:
            d = f(b, params, eps)
        feasible = d <= target
        at_hi = s.u >= s.log_hi
        live = ~s.done & (s.it < max_iter)
        grow = live & ~feasible & at_hi
        log_lo = jnp.where(live & ~feasible, jnp.where(at_hi, s.log_hi, jnp.maximum(s.log_lo, s.u)), s.log_lo)
        log_hi = jnp.where(live & feasible, jnp.minimum(s.log_hi, s.u), jnp.where(grow, s.log_hi + math.log(2.0), s.log_hi))
        hi_ok = jnp.where(live & feasible, True, jnp.where(grow, False, s.hi_ok))
        b_hi = jnp.where(live & feasible & (s.u <= s.log_hi), b, s.b_hi)
        closed = (log_hi - log_lo) <= log_tol
        mid = 0.5 * (log_lo + log_hi)
        streak = jnp.where(live, jnp.where(s.modeled & (feasible == s.last_feasible), s.streak + 1, 1), s.streak)
        last_feasible = jnp.where(live, feasible, s.last_feasible)
        # the bracket ends' values for the secant; Illinois: an end that stays while the other
        # moves twice in a row has its value halved, so that the next secant step reaches past the root
        g = jnp.log(d) - log_target
        run = streak >= 2
        g_lo = jnp.where(live & ~feasible & (log_lo > s.log_lo), g, jnp.where(live & feasible & run, 0.5 * s.g_lo, s.g_lo))
        g_hi = jnp.where(live & feasible & (s.u <= s.log_hi), g, jnp.where(grow, jnp.nan, jnp.where(live & ~feasible & run, 0.5 * s.g_hi, s.g_hi)))
        points, zero_at, seen_zero, opt_state = s.points, s.zero_at, s.seen_zero, s.opt_state
        if newton:
            positive = live & (d > 0)
            new = jnp.stack([b, jnp.log(jnp.where(positive, d, 1.0)), dd / jnp.where(positive, d, 1.0)], axis=-1)
            points = jnp.where(positive[:, None, None], jnp.stack([new, points[:, 0]], axis=1), points)
            # δ > 0 at or beyond zero_at disproves it (b_pure is where the tails stop adding to δ,
            # but a bump of the log-ratio above ε in the core can outlive it, e.g. for small ε)
            disproved = positive & (b >= zero_at)
            vanished = live & (d == 0)
            zero_at = jnp.where(vanished, jnp.minimum(zero_at, b), jnp.where(disproved, jnp.inf, zero_at))
            seen_zero = (seen_zero & ~disproved) | vanished
            target_u, valid = _model_root(points, zero_at, seen_zero, log_target)
            updates, opt_state = _TRANSFORM.update(s.u - target_u, opt_state)
            # proposals alternate a hair above and below the model's root, so both ends close in
            proposal = optax.apply_updates(s.u, updates) + jnp.where(feasible, -0.25, 0.25) * log_tol
            # a target of 0: the power law's b_c overshoots the vanishing point by O(gap²), and a
            # point with δ = 0 adds no slope to correct it, so after one the search steps a fraction
            # _ZERO_PULL of the gap back towards the last δ > 0 (each such pair of steps shrinks the gap ~100× once the model is close)
            pull = jnp.where(~jnp.isfinite(log_target) & feasible & valid, _ZERO_PULL * (proposal - jnp.log(points[:, 0, 0])), 0.0)
            proposal = jnp.where(pull > 0, proposal - pull, proposal)
            # a model that errs to one side of a bracketed root creeps: each step lands on the
            # same side as the last and is not much shorter (68 evaluations for a mixture under
            # Laplace noise whose δ vanishes just above the root; the bracket's other end never
            # moves). Then each model step on that side doubles, so the root is crossed in O(log)
            # steps. A converging model's steps shrink by orders of magnitude, and are left alone.
            bracketed = ~jnp.isnan(g_lo) & ~jnp.isnan(g_hi)  # both ends evaluated (not an approach from one side)
            creeping = bracketed & (jnp.abs(proposal - s.u) > _CREEP_RATIO * s.step)
            stretch = jnp.exp2(jnp.where(creeping, jnp.clip(streak - 1, 0, _MAX_STRETCH), 0).astype(float))
            proposal = s.u + (proposal - s.u) * stretch
            inside = valid & (proposal > log_lo) & (proposal < log_hi)
            # no model step (e.g. where δ is dominated by the evaluator's allowances, whose slope
            # it does not report): the secant on log δ between the bracket's ends (Illinois)
            secant = log_lo + (log_hi - log_lo) * g_lo / jnp.where(g_lo > g_hi, g_lo - g_hi, 1.0)
            use_secant = ~inside & (g_lo > 0) & (g_hi <= 0) & jnp.isfinite(g_lo - g_hi) & (secant > log_lo) & (secant < log_hi)
            # else halve or double b, or bisect once the bracket is narrower than that
            halve = jnp.where(feasible, jnp.maximum(mid, s.u - math.log(2.0)), jnp.minimum(mid, s.u + math.log(2.0)))
            proposal = jnp.where(inside, proposal, jnp.where(use_secant, secant, halve))
            inside = inside | use_secant
        else:
            proposal, inside = mid, False
        # safeguard: past _STALL_FROM evaluations, every _STALL_CHECK the bracket must have halved
        # (in log b) since the last check, else bisect (a model step can creep along one end)
        width = log_hi - log_lo
        check = (s.it >= _STALL_FROM) & ((s.it % _STALL_CHECK) == 0)
        stalled = check & (width > 0.5 * s.width_ref)
        width_ref = jnp.where(check, width, s.width_ref)
        bisect = stalled | (s.it >= bisect_from)
        proposal = jnp.where(bisect, mid, proposal)
        u_next = jnp.where(live, jnp.where(closed | grow, log_hi, proposal), s.u)
        modeled = jnp.where(live, inside & ~bisect & ~closed & ~grow, s.modeled)
        step = jnp.where(live, jnp.abs(u_next - s.u), s.step)
        finished = live & ((closed & hi_ok) | (log_hi > s.log_cap))
        return s._replace(u=u_next, log_lo=log_lo, log_hi=log_hi, hi_ok=hi_ok, b_hi=b_hi, opt_state=opt_state, it=s.it + live.astype(int),
                          done=s.done | finished, width_ref=width_ref, points=points, zero_at=zero_at, seen_zero=seen_zero,
                          streak=streak, last_feasible=last_feasible, modeled=modeled, step=step, g_lo=g_lo, g_hi=g_hi,
                          b_next=jnp.exp(u_next), d_last=d, slopes_last=slopes)

    return jax.lax.while_loop(lambda s: jnp.any(~s.done & (s.it < max_iter)), body, state)


def _search_result(state: _SearchState, rtol: float):
    """(b, converged, iterations) per pair: b = hi (0 where no noise is needed), NaN where no scale
    was evaluated feasible (the start's upper end is a guess for most kernels: Theorem 1's (5) is a
    bound for Laplace noise only)."""
    zero_ok = state.done & (state.it == 0)
    closed = state.hi_ok & ((state.log_hi - state.log_lo) <= math.log1p(rtol))
    where = np.where if isinstance(state.b_hi, np.ndarray) else jnp.where  # (a state on the host stays there)
    b = where(zero_ok, 0.0, state.b_hi)
    return b, zero_ok | (state.done & closed), state.it


def _bisect_from(max_iter: int) -> int:
    """The evaluation from which the optax solver bisects: the last ``_BISECT_RESERVE`` of ``max_iter``."""
    return max(max_iter - _BISECT_RESERVE, 0)


def _compile_for_latency(family, kernel, level: str, lanes: int, mesh) -> bool:
    """Whether a search of ``lanes`` lanes compiles its programs for latency
    (:data:`jaxpuffer._cache.LATENCY_OPTIONS`, LLVM unoptimised): a call of at most
    ``_QUICK_LANES`` lanes on one CPU process whose family says its evaluator at this level runs
    cheaply even so (its optional ``quick_to_run(level, kernel)``,
    :func:`jaxpuffer.families.quick_to_run`), where compiling is most of the call. Such a call's
    scales may differ from a larger call's in the last bits (each is verified by its own
    evaluation, rounding allowances included)."""
    platform = default_platform() if mesh is None else mesh.devices.flat[0].platform
    return (lanes <= _QUICK_LANES and platform == "cpu" and _parallel.processes() == 1
            and families.quick_to_run(family, level, kernel))


def _compile_options(cfg: _Config):
    """The XLA options of ``cfg``'s programs (None: XLA's defaults)."""
    return LATENCY_OPTIONS if cfg.quick else None


def _ours(cfg: _Config) -> bool:
    """The search of ``cfg`` is jaxpuffer's code only (one device; its family and noise kernel
    defined in jaxpuffer), so that a digest of jaxpuffer's sources identifies its program."""
    return cfg.mesh is None and defined_here(families.get(cfg.family), kernels.resolve(cfg.noise))


def _state_tree(cfg, args):
    """The tree of a :class:`_SearchState` (both search programs return one)."""
    opt_state = jax.eval_shape(_TRANSFORM.init, jax.ShapeDtypeStruct((), jnp.float64))
    return jax.tree_util.tree_structure(_SearchState(*[0.0] * len(_SearchState._fields))._replace(opt_state=opt_state))


# the two search programs, traced once per (cfg, shapes) on this machine: later processes load them
# from disk (_cache.ExportedJit; 1.0–2.5 s of tracing and lowering per warm call)
_search_init_jit = ExportedJit(_parallel.over_lanes(_search_init), portable=_ours, out_tree=_state_tree, options=_compile_options)
_search_run_jit = ExportedJit(_parallel.over_lanes(_search_run), portable=_ours, out_tree=_state_tree, options=_compile_options)


def _on_host(state: _SearchState) -> _SearchState:
    """The search state as numpy arrays, the form in which both the concrete search and an eager
    implicit-gradient root (:func:`_root`) pass it to ``_search_run_jit``: one compiled program for
    both (a committed device state lowers to another: 23 s of compile again for the GG(3) exact
    level)."""
    return jax.tree_util.tree_map(np.array, state)


def _zero_noise_enough(cfg: _Config, params, eps, target, symmetric, pieces=None):
    """Whether each lane needs no noise, δ(0) ≤ target, for concrete lanes of a family with a cheap
    lower bound of δ(0) at this level (:func:`jaxpuffer.families.has_zero_floor`): the bound first,
    in the search's own ``pieces`` (lanes, padded size; None: all lanes in one), then δ(0) itself
    (the same evaluator and answer as :func:`_search_init`'s) only on the lanes whose bound does
    not exceed their target, gathered into padded batches as the certificate gathers its lanes at
    scale 0 (:func:`_deltas_in_pieces`). So a call
    whose every pair needs noise neither compiles nor runs the priors' own evaluator (mixtures at
    the exact level: a whole evaluator under Gaussian noise of std 0, 5–6 s of a cold call's
    compile and ~10 % of a warm search; ~1 % of random pairs need no noise). None otherwise
    (:func:`_search_init` then evaluates δ(0) in its own program)."""
    if not families.has_zero_floor(families.get(cfg.family), cfg.level):
        return None
    n = params[0].shape[0]
    floor = np.empty(n)
    for idx, size in pieces or [(np.arange(n), n)]:
        *part, part_eps = _parallel.pad_take((*params, eps), idx, size)
        floor[idx] = np.asarray(_delta_at_zero_floor_jit(cfg, symmetric, tuple(part), part_eps))[: idx.size]
    target = np.broadcast_to(np.asarray(target), floor.shape)
    zero_ok = np.zeros(n, bool)
    unsettled = np.flatnonzero(~(floor > target))  # (NaN proves nothing)
    if unsettled.size:
        for sub, value in _deltas_in_pieces(cfg, None, symmetric, params, np.zeros(n), eps, unsettled, n, zero=True):
            zero_ok[sub] = value <= target[sub]
    return zero_ok


@partial(jax.custom_jvp, nondiff_argnums=(0, 4, 5))
def _root(cfg, params, eps, target, max_iter, symmetric):
    """The per-pair calibrated scale (one uncompacted search, the same compiled functions as the
    concrete path); differentiable by the implicit function theorem."""
    eager = all(_validate.is_concrete(v) and getattr(v, "is_fully_addressable", True) for v in (*params, eps, target))
    state = _search_init_jit(cfg, params, eps, target, symmetric, _zero_noise_enough(cfg, params, eps, target, symmetric) if eager else None)
    if eager:
        state = _on_host(state)  # eager jax.grad
    state = _search_run_jit(cfg, params, eps, target, max_iter, _bisect_from(max_iter), symmetric, state)
    return _search_result(state, cfg.rtol)[0]


@partial(jax.jit, static_argnums=0)
@_parallel.over_lanes
def _implicit_tangent(cfg, symmetric, b, primals, tangents):
    """db = (dδ_target − ∂_θ δ · dθ) / ∂_b δ at the root δ(b(θ); θ) = δ_target (0 where b = 0)."""
    params, eps, _ = primals
    b_pos = jnp.where(b > 0, b, 1.0)
    _, d_theta = jax.jvp(lambda pr, e: _delta(cfg, symmetric, b_pos, pr, e), (params, eps), tangents[:2])
    _, d_b = jax.jvp(lambda bb: _delta(cfg, symmetric, bb, params, eps), (b_pos,), (jnp.ones_like(b_pos),))
    return _tangent_from_slopes(b, d_b, d_theta, primals, tangents)


def _tangent_from_slopes(b, d_b, d_theta, primals, tangents):
    """(dδ_target − d_theta) / ∂_b δ per lane, 0 where b = 0 or δ does not fall with b."""
    ok = (b > 0) & (d_b < 0)
    tangent = jnp.where(ok, (tangents[2] - d_theta) / jnp.where(ok, d_b, -1.0), 0.0)
    # δ = 0 (pure ε): the scale solves sup_y log-ratio = ε, where δ and its derivatives vanish;
    # that root's derivative is not implemented, and a 0 would pass for one
    return tangent + jnp.where((primals[2] == 0) & (b > 0), jnp.nan, 0.0) * _touched(tangents)


# at most this many per-lane inputs (θ's entries and ε), the implicit derivative is built from the
# per-lane slopes of δ (:func:`_slopes`) rather than from a JVP in the caller's tangents
_MAX_SLOPES = 8


def _lane_sizes(tree) -> list:
    """The number of per-lane entries of each leaf (0-d leaves, shared by every lane: 1)."""
    return [1 if jnp.ndim(v) == 0 else math.prod(jnp.shape(v)[1:]) for v in jax.tree_util.tree_leaves(tree)]


@partial(jax.jit, static_argnums=0)
@_parallel.over_lanes
def _slopes(cfg, symmetric, b, params, eps):
    """Per lane, ∂δ/∂b and ∂δ/∂x for each per-lane entry x of (θ, ε), in the order of
    :func:`_lane_sizes` (n, 1 + P): one JVP whose tangent is batched over the 1 + P unit
    directions, so the evaluator is traced once and its value computed once. The implicit
    derivative is then a combination of these slopes with the caller's tangents, linear and
    small: reverse mode (``jax.grad``) transposes that combination, not the evaluator. For one
    Gaussian pair at the GG(3) exact level, a cold ``jax.grad`` of the scale after a plain call
    compiled for 258 s through the transposed evaluator, 184 s this way (2-core CPU). (A
    ``jax.jvp`` after a ``jax.grad`` in one process still compiles this program again: JAX lowers
    it differently under the two, as it did the JVP path before.)"""
    leaves, tree = jax.tree_util.tree_flatten((params, eps))
    n = b.shape[0]
    sizes = _lane_sizes(leaves)
    starts = np.cumsum([1, *sizes[:-1]])  # direction 0 is b

    def direction(k):
        units = [(jnp.arange(size) == k - start).astype(v.dtype) for v, start, size in zip(leaves, starts, sizes)]
        units = [u[0] if jnp.ndim(v) == 0 else jnp.broadcast_to(u.reshape(jnp.shape(v)[1:]), jnp.shape(v)) for u, v in zip(units, leaves)]
        tangent_b = jnp.full((n,), jnp.where(k == 0, 1.0, 0.0))
        return jax.jvp(lambda bb, args: _delta(cfg, symmetric, bb, *args), (b, jax.tree_util.tree_unflatten(tree, leaves)),
                       (tangent_b, jax.tree_util.tree_unflatten(tree, units)))[1]

    return jax.vmap(direction, out_axes=1)(jnp.arange(1 + sum(sizes)))


def _slopes_by_search(cfg: _Config, symmetric, b, params, eps):
    """:func:`_slopes` from one evaluation in the search's own compiled program (its state's
    ``slopes_last``, :func:`_evaluation_call`) where the evaluator gives δ's whole gradient in
    closed form (:func:`_slope_columns`: Gaussian and mixture pairs under Laplace noise at the exact level) and
    every input is concrete (an eager ``jax.grad`` of a calibration), so that the implicit
    derivative compiles no program of its own (a fresh process's jax.grad of 3 Gaussian pairs'
    scale: 34.6 -> 15.7 s wall, 48.2 -> 21.0 CPU-s; the JVP program had compiled for about twice
    as long as the search's own). None otherwise, and where a lane with b > 0 has a
    slope that is not finite (an order whose δ is the coupling bound): then the JVP's."""
    leaves = (b, *jax.tree_util.tree_leaves((params, eps)))
    if not _slope_columns(cfg, params, eps) or not all(_validate.is_concrete(v) and getattr(v, "is_fully_addressable", True) for v in leaves):
        return None
    b = np.asarray(b)
    with _eval_context():  # (not under the caller's JVP: partial evaluation would split the program, a compile of its own)
        slopes = np.asarray(_search_run_jit(*_evaluation_call(cfg, symmetric, np.where(b > 0, b, 1.0), params, eps)).slopes_last)
    return slopes if np.all(np.isfinite(slopes[b > 0])) else None


# runs JAX calls on concrete values as a plain call would, inside a transformation's rule (JAX's
# own context; a JAX without it compiles one more program there, nothing else changes)
_eval_context = getattr(jax._src.core, "eval_context", contextlib.nullcontext)


def _touched(tangents):
    """Per lane, the sum of every input tangent of the lane: NaN times it poisons the lane's
    derivative linearly (as a JVP rule must be; on d_theta alone, reverse mode would drop it where
    the evaluator selects a constant 0)."""
    return sum(t if t.ndim == 0 else jnp.sum(t.reshape(t.shape[0], -1), axis=1) for t in jax.tree_util.tree_leaves(tangents))


def _entangled(tangents):
    """Each tangent plus 0 × its lane's sum of every tangent (:func:`_touched`; the sum over lanes
    for a 0-d one). Under ``jax.grad`` every tangent is then unknown to JAX's partial evaluation,
    whichever inputs are differentiated, so :func:`_implicit_tangent` is one program for every
    ``argnums`` (a tangent that is a known zero splits it differently: a second compile, 4.5 s for
    a mixture pair at the coupling level)."""
    lane = _touched(tangents)
    return jax.tree_util.tree_map(lambda t: t + 0.0 * (jnp.sum(lane) if t.ndim == 0 else lane.reshape((-1,) + (1,) * (t.ndim - 1))), tangents)


@_root.defjvp
def _root_jvp(cfg, max_iter, symmetric, primals, tangents):
    b = _root(cfg, *primals, max_iter, symmetric)
    tangents = jax.tree_util.tree_map(lambda t, p: jnp.broadcast_to(t, jnp.shape(p)).astype(jnp.float64), tangents, primals)
    params, eps, _ = primals
    slopes = _slopes_by_search(cfg, symmetric, b, params, eps)
    if slopes is None:
        if sum(_lane_sizes((params, eps))) > _MAX_SLOPES:
            return b, _implicit_tangent(cfg, symmetric, b, tuple(primals), _entangled(tuple(tangents)))
        slopes = _slopes(cfg, symmetric, jnp.where(b > 0, b, 1.0), params, eps)
    per_lane = [jnp.broadcast_to(t, b.shape)[:, None] if t.ndim == 0 else t.reshape(t.shape[0], -1) for t in jax.tree_util.tree_leaves(tangents[:2])]
    d_theta = jnp.sum(slopes[:, 1:] * jnp.concatenate(per_lane, axis=1), axis=1)
    return b, _tangent_from_slopes(b, slopes[:, 0], d_theta, primals, tangents)


# ----------------------------------------------------------------------------- certificate


# the certificate's programs (one δ per lane), kept on disk as the search's are
_delta_jit = ExportedJit(_parallel.over_lanes(_delta), portable=_ours, options=_compile_options)
_delta_at_zero_jit = ExportedJit(_parallel.over_lanes(_delta_at_zero), portable=_ours, options=_compile_options)
_delta_at_zero_floor_jit = ExportedJit(_parallel.over_lanes(_delta_at_zero_floor), portable=_ours, options=_compile_options)


def _evaluation_call(cfg: _Config, symmetric, b, params, eps) -> tuple:
    """The arguments of ``_search_run_jit`` for one evaluation of δ per lane at exactly the scales
    ``b`` (> 0), its ``d_last``: the search's own compiled program (:func:`_search_run` for one
    evaluation from a state whose next scale is ``b``), so that the certificate of a calibration
    compiles nothing more (issue 15: the certificate's own program cost 5–9 s of a cold
    exact-level call). Lanes a multiple of the mesh's granule, as the search's."""
    b = np.asarray(b, np.float64)
    n = b.shape[0]
    full = lambda value, dtype=np.float64, shape=(): np.full((n, *shape), value, dtype)  # noqa: E731
    state = _SearchState(
        u=np.log(b), log_lo=full(-np.inf), log_hi=full(np.inf), hi_ok=full(False, bool), b_hi=b, opt_state=_TRANSFORM.init(np.log(b)),
        it=full(0, np.int64), done=full(False, bool), width_ref=full(np.inf), points=full(np.nan, shape=(2, 3)), zero_at=full(np.inf),
        seen_zero=full(False, bool), log_cap=full(np.inf), streak=full(0, np.int64), last_feasible=full(False, bool),
        modeled=full(False, bool), step=full(np.inf), g_lo=full(np.nan), g_hi=full(np.nan), b_next=b, d_last=full(np.nan),
        slopes_last=full(np.nan, shape=(_slope_columns(cfg, params, eps),)),
    )
    return cfg, params, eps, np.ones(n), 1, 1, symmetric, state


def _deltas_in_pieces(cfg: _Config, searches: list | None, symmetric, params, b, eps, idx, size, zero=False, fallback=None):
    """(lanes, δ per lane) for the lanes ``idx`` of (``params``, ``b``, ``eps``), in batches padded
    as the search pads its own: one batch of :func:`jaxpuffer._parallel.bucket` lanes (at most
    ``size``), or a costly evaluator's pieces (:func:`_costly_pieces`). ``zero``: the lanes are at
    scale 0 (the priors' own δ); else δ at ``b`` by the compiled program of a search in
    ``searches`` (configurations, :func:`_evaluation_call`): the first whose program is at hand
    where there is a choice to make, else the first — or by ``fallback(lanes)`` (δ of those lanes)
    where none is at hand already (:meth:`ExportedJit.holds`: a search program compiles for longer
    than a δ program alone, 12.9–14.4 s against 10.3 s for Gaussian pairs under Laplace noise); by
    ``cfg``'s δ program where ``searches`` is None."""
    step = _parallel.granule(cfg.mesh)
    pieces = _split(idx, _costly_pieces(idx.size, step)) if _costly_search(cfg) else [(idx, _parallel.bucket(idx.size, size, step))]
    for sub, sub_size in pieces:
        *part, part_b, part_eps = _parallel.pad_take((*params, b, eps), sub, sub_size)
        part = tuple(part)
        if zero:
            value = _delta_at_zero_jit(cfg, symmetric, part, part_eps)
        elif searches is not None:
            calls = [_evaluation_call(search, symmetric, part_b, part, part_eps) for search in searches]
            held = next((call for call in calls if _search_run_jit.holds(*call)), None) if fallback is not None or len(calls) > 1 else None
            value = fallback(sub) if fallback is not None and held is None else _search_run_jit(*(held or calls[0])).d_last
        else:
            value = _delta_jit(cfg, symmetric, part_b, part, part_eps)
        yield sub, np.asarray(value)[: sub.size]


def exact_delta_by_search(family: str, noise, params, b, eps, symmetric, fallback=None) -> np.ndarray:
    """δ per lane at the exact level, at scales ``b`` > 0 (every input concrete; ``params`` the
    family's per-lane parameters, ``noise`` a kernel or its name), in the batches that an
    exact-level :func:`calibrate` with its default options on every local device pads to, each
    evaluated by that calibration's compiled search program where this process has it at hand
    (run already, or stored on disk), so that checking a calibration's scales with
    :func:`jaxpuffer.delta_exact` compiles nothing more (a first such check of 3 Gaussian pairs
    after an exact-level calibration, Laplace noise, compiled for 10.3 s in a program of its
    own); else by ``fallback(lanes)``, the δ of those lanes of ``params``, ``b``, ``eps`` (a
    program of the evaluator alone, which compiles in less time than the search's; None: always
    the search's). The value is the level's δ, rounded up as the evaluator rounds it."""
    kernel = kernels.resolve(noise)
    params = (*params, *(jnp.asarray(v, jnp.float64) for v in kernel.shape_values()))  # as calibrate carries them
    b, eps = jnp.asarray(b, jnp.float64), jnp.asarray(eps, jnp.float64)
    n = b.shape[0]
    # the program of a calibration of as many lanes, else of a larger one (not compiled for latency)
    mesh = _parallel.resolve_mesh(None)
    quick = _compile_for_latency(families.get(family), kernel, "exact", n, mesh)
    searches = [_Config("exact", kernel.search_key(), _DEFAULT_SOLVER, _DEFAULT_RTOL, family, mesh=mesh, quick=q)
                for q in dict.fromkeys((quick, False))]
    out = np.empty(n)
    for start in range(0, n, _DEFAULT_CHUNK):  # the batches of calibrate's default chunk_size
        idx = np.arange(start, min(start + _DEFAULT_CHUNK, n))
        for sub, value in _deltas_in_pieces(searches[0], searches, symmetric, params, b, eps, idx, _DEFAULT_CHUNK, fallback=fallback):
            out[sub] = value
    return out


def _prune_bound(cfg, symmetric, params, b, eps):
    """The family's cheap upper bound on δ per lane."""
    return families.get(cfg.family).prune_bound(*_noise_and_params(cfg, params), b, eps, symmetric)


_prune_bound_jit = ExportedJit(_parallel.over_lanes(_prune_bound), portable=_ours, options=_compile_options)


def _prune_bounds(cfg, symmetric, params, b, eps, cap, step):
    """The family's cheap upper bound on δ on every lane, ``cap`` lanes per compiled batch padded
    as the search's chunks are; None where the family has none."""
    n = b.shape[0]
    parts = []
    for start in range(0, n, cap):
        idx = np.arange(start, min(start + cap, n))
        *part, part_b, part_eps = _parallel.pad_take((*params, b, eps), idx, _parallel.bucket(idx.size, cap, step))
        value = _prune_bound_jit(cfg, symmetric, tuple(part), part_b, part_eps)
        if value is None:
            return None
        parts.append(np.asarray(value)[: idx.size])
    return np.concatenate(parts)


def _max_exact_delta(family, params, scale, eps, noise, symmetric, chunk: int = 256, budget: int = 64, level: str = "exact", mesh=None,
                     search: _Config | None = None, batch: int | None = None):
    """A certified max over pairs of the exact δ at the calibrated scale, pruned by a bound ≥ L0
    (``level``: the δ certified; a kernel without an exact evaluator certifies its coupling bound
    instead). Returns one δ per sweep point: ``scale`` has shape (S,) (or is a scalar, S = 1) and
    the lanes of ``params`` (and ``eps``, where it is per lane) are S groups of n pairs, group s at
    ``scale[s]``.

    Where the family has a cheap upper bound (its ``prune_bound``: the coupling bound L1 for
    Gaussian priors with Laplace noise, the plan's bound (24) for mixtures), lanes are visited in
    decreasing order of their bound (each group's largest first, then each group's second, ...),
    ``chunk`` at a time, skipping every lane whose bound is ≤ its
    group's running max (then that max is exact), until none is left or ``budget`` chunks are spent
    (then the largest remaining bound of each group stands in for its unvisited lanes: still an
    upper bound; a NaN bound counts as +inf). Otherwise every lane, in chunks (one batch where the
    family's exact δ is a closed form). Lanes at scale 0 take the priors' own δ. ``family`` is the
    family's name; ``mesh``: the devices sharing each chunk's lanes; ``search``: the configuration
    of a search at this ``level`` (the calibration's own, or the exact level's with its options), whose compiled program then
    evaluates the certificate (:func:`_evaluation_call`); ``batch``: the most lanes in one
    compiled batch (the calibration's ``chunk_size``; None: all), padded as the search's chunks
    are (:func:`jaxpuffer._parallel.bucket`), so that the bound and the cheap δ compile no shape of their own for
    each new pair count, and their memory stays bounded.
    """
    fam = families.get(family)
    cfg = _Config(level, noise, "bisection", 0.0, family, mesh=mesh, quick=search is not None and search.quick)
    step = _parallel.granule(mesh)
    scale = np.asarray(scale, np.float64)
    n_lanes = params[0].shape[0]
    group = np.arange(n_lanes) // (n_lanes // scale.size)
    lane_scale = scale.reshape(-1)[group]
    b = jax.device_put(lane_scale)
    best = np.zeros(scale.size)

    def visit(idx, zero, size):
        for sub, value in _deltas_in_pieces(cfg, None if search is None else [search], symmetric, params, b, eps, idx, size, zero):
            np.maximum.at(best, group[sub], value)

    cap = n_lanes if batch is None else batch
    zero = np.flatnonzero(lane_scale == 0.0)
    size = max(chunk, cap) if fam.exact_is_cheap(noise, True) else chunk
    for start in range(0, zero.size, size):
        visit(zero[start : start + size], True, size)
    lanes = np.flatnonzero(lane_scale != 0.0)
    bound = _prune_bounds(cfg, symmetric, params, b, eps, cap, step) if lanes.size else None
    if bound is None:
        size = max(chunk, cap) if fam.exact_is_cheap(noise, False) else chunk
        for start in range(0, lanes.size, size):
            visit(lanes[start : start + size], False, size)
        return best.reshape(scale.shape)
    bound = bound[lanes]
    bound = np.where(np.isnan(bound), np.inf, bound)
    # visit order: every group's largest bound first, then every group's second, ... (by bound
    # within a rank), so that one chunk sets every sweep point's running max
    by_group = np.lexsort((-bound, group[lanes]))
    sorted_groups = group[lanes][by_group]
    firsts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    rank = np.empty(lanes.size, int)
    rank[by_group] = np.arange(lanes.size) - np.repeat(firsts, np.diff(np.r_[firsts, lanes.size]))
    order = np.lexsort((-bound, rank))
    lanes, bound = lanes[order], bound[order]
    visited = np.zeros(lanes.size, bool)
    for _ in range(budget):
        pending = np.flatnonzero(~visited & (bound > best[group[lanes]]))
        if not pending.size:
            return best.reshape(scale.shape)
        visit(lanes[pending[:chunk]], False, chunk)
        visited[pending[:chunk]] = True
    left = ~visited & (bound > best[group[lanes]])  # budget spent: their bounds stand in
    np.maximum.at(best, group[lanes[left]], bound[left])
    return best.reshape(scale.shape)


# ----------------------------------------------------------------------------- entry point


def _calibration_bar(total: int, level: str) -> ProgressBar:
    """The calibration's bar: pairs done, percent, and the rate since the call began."""
    return ProgressBar(total, f"calibrating {total} pairs, {level} level", "pairs")


def _pieces(m: int, n: int, step: int = _parallel.VECTOR_LANES, pad: float = 0.25) -> list:
    """Batch sizes that cover m unfinished pairs of a batch of n, each n or step·4^k (few compiled
    shapes, so that a warm run compiles nothing): greedily, the smallest size that holds the rest
    where it pads at most ``pad`` times the rest, else the largest size that fits (1,600 of 2,048
    pairs, pad 1/4: 1,024 + 256 + 256 + 64, not one batch of 2,048); m > n takes pieces of n."""
    sizes = sorted({n, *(step * 4**k for k in range(12) if step * 4**k < n)})
    out = []
    while m > 0:
        up = next((s for s in sizes if s >= m), None)
        size = up if up is not None and (up <= (1.0 + pad) * m or up == sizes[0]) else max(s for s in sizes if s <= m)
        out.append(size)
        m -= size
    return out


def _costly_search(cfg: _Config) -> bool:
    """Whether the exact-level search of ``cfg`` evaluates a costly δ (the family's
    ``costly_exact``, or an opt-in exact evaluator: :func:`jaxpuffer.families.costly_exact`)."""
    return cfg.level == "exact" and families.costly_exact(families.get(cfg.family), kernels.resolve(cfg.noise))


def _costly_pieces(m: int, step: int) -> list:
    """:func:`_pieces` of at most ``_COSTLY_PIECE`` granules for m pairs of a costly search."""
    return _pieces(m, step * _COSTLY_PIECE, step, _COMPACT_OFTEN[1])


def _split(idx: np.ndarray, sizes: list):
    """(lanes, padded size) for consecutive runs of ``idx``, one per entry of ``sizes``."""
    starts = np.cumsum([0, *sizes[:-1]])
    return [(idx[start : start + size], size) for start, size in zip(starts, sizes)]


def _solve_concrete(cfg, params, eps, target, max_iter, symmetric):
    """Search on concrete arrays, compacting as pairs finish: every pair runs the schedule's first
    number of evaluations, then the unfinished ones are gathered (state included) into smaller
    padded batches and resumed up to the next pass limit, and so on up to ``max_iter``; the batch
    does not keep paying for pairs that are done. The schedule is ``_COMPACT_OFTEN`` at the exact
    level of a family whose evaluator is costly (:func:`_costly_search`), else ``_COMPACT_RARELY``.

    Batches: a cheap evaluator runs the whole (padded) batch, then :func:`_pieces` of it. A costly
    one runs every step — the start and the certificate included — in :func:`_pieces` of at most
    ``_COSTLY_PIECE`` granules (64 and 256 lanes per device), and the batch is not padded first:
    two compiled shapes whatever the pair count, and no evaluation of padding beyond the last
    piece. Measured on 1,024 random 3-component mixture pairs, Laplace noise, (1, 1e-3), no
    persistent cache, 2 CPU cores: cold 66.5 s (47.8 s compiling) with whole padded batches,
    52.4 s (36.4 s) in pieces of at most 256 lanes, 41.0 s (26.0 s) in pieces of 64; warm 7.3–8.0,
    6.1–7.4 and 9.1–9.2 s: 64-lane pieces cost the vmapped evaluator a third of its speed."""
    n = params[0].shape[0]
    costly = _costly_search(cfg)
    passes, pad = _COMPACT_OFTEN if costly else _COMPACT_RARELY
    step = _parallel.granule(cfg.mesh)
    sizes = (lambda m: _costly_pieces(m, step)) if costly else (lambda m: _pieces(m, n, step, pad))

    def inputs(idx, size):
        *sub_params, sub_eps, sub_target = _parallel.pad_take((*params, eps, target), idx, size)
        return tuple(sub_params), sub_eps, sub_target

    def scatter(state, idx, sub):
        for field, value in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(sub)):
            field[idx] = np.asarray(value)[: idx.size]

    state = None
    pieces = _split(np.arange(n), sizes(n))
    zero_ok = _zero_noise_enough(cfg, params, eps, target, symmetric, pieces)
    for idx, size in pieces:
        sub = _on_host(_search_init_jit(cfg, *inputs(idx, size), symmetric, None if zero_ok is None else zero_ok[_parallel.pad_index(idx, size)]))
        if state is None:
            state = jax.tree_util.tree_map(lambda v: np.empty((n, *v.shape[1:]), v.dtype), sub)
        scatter(state, idx, sub)
    live = np.arange(n)
    for limit in (*[p for p in passes if p < max_iter], max_iter):
        live = live[~state.done[live] & (state.it[live] < max_iter)]
        for idx, size in _split(live, sizes(live.size)):
            sub = jax.tree_util.tree_map(lambda a: a[_parallel.pad_index(idx, size)], state)
            scatter(state, idx, _search_run_jit(cfg, *inputs(idx, size), limit, _bisect_from(max_iter), symmetric, sub))
    b, conv, iters = _search_result(state, cfg.rtol)
    return np.asarray(b), np.asarray(conv), np.asarray(iters)


def _chunked_root(cfg, params, eps, target, max_iter, symmetric, chunk_size, progress):
    """The per-pair search over flat arrays, in chunks of bounded size padded to a few compiled
    shapes. Concrete inputs: :func:`_solve_concrete`, with diagnostics. Traced inputs (jax.grad,
    jit or vmap around calibrate): the implicit-gradient root; diagnostics are then None.
    """
    n = params[0].shape[0]
    cap = n if chunk_size is None else chunk_size
    concrete = all(_validate.is_concrete(v) for v in (*params, eps, target))
    parts, converged, iterations = [], True, 0
    report = _calibration_bar(n, cfg.level) if progress else None
    own_pieces = concrete and _costly_search(cfg)  # a concrete costly search pads its own pieces (:func:`_solve_concrete`)
    for start in range(0, n, cap):
        idx = np.arange(start, min(start + cap, n))
        size = idx.size if own_pieces else _parallel.bucket(idx.size, cap, _parallel.granule(cfg.mesh))
        *take, take_eps, take_target = _parallel.pad_take((*params, eps, target), idx, size)
        take = tuple(take)
        if concrete:
            b, conv, iters = _solve_concrete(cfg, take, take_eps, take_target, max_iter, symmetric)
            converged = converged and bool(conv[: idx.size].all())
            iterations = max(iterations, int(iters[: idx.size].max()))
            parts.append(jax.device_put(b[: idx.size]))
        else:
            parts.append(_root(cfg, take, take_eps, take_target, max_iter, symmetric)[: idx.size])
        if report:
            report(int(idx[-1]) + 1)
    if not concrete:
        converged, iterations = None, None
    return (parts[0] if len(parts) == 1 else jnp.concatenate(parts)), converged, iterations


def _poisoned(lanes, eps, delta, per_lane, shape_ok, floor, allow_zero, points):
    """Per-lane scales as (sweep points, pairs), with NaN where the inputs are invalid: under a
    transformation they cannot be refused, and their answer must be unusable, never a number (the
    max over pairs propagates the NaN). ``shape_ok``: the kernel's shape parameters are valid;
    ``allow_zero``: δ = 0 is valid (pure ε is searched)."""
    per_lane = per_lane.reshape(points, -1)
    valid = (lanes.first.ok() & lanes.second.ok()).reshape(-1) & _validate.eps_ok(eps) & _validate.delta_ok(delta, floor, allow_zero) & shape_ok
    return _validate.poison(jnp.broadcast_to(valid, (per_lane.size,)).reshape(per_lane.shape), per_lane)


_poison_invalid = jax.jit(_poisoned, static_argnames=("floor", "allow_zero", "points"))


@partial(jax.jit, static_argnames=("family", "tau", "floor", "allow_zero", "points"))
def _theorem_lanes(lanes, params, eps, delta, shape_ok, family, tau, floor, allow_zero, points):
    """The theorem level: the family's closed form per lane, invalid lanes NaN (:func:`_poisoned`),
    one compiled program (op by op, a cold call compiled one per operation: 3 mixture pairs, 26)."""
    per_lane = families.get(family).theorem(params, eps, delta, tau)
    return _poisoned(lanes, eps, delta, per_lane, shape_ok, floor, allow_zero, points)


def _refuse_pure(family, kernel, noise_key, params, lane_eps, lane_delta, pairs):
    """Raises unless every lane with δ = 0 needs no noise at all: a kernel without ``pure_eps``
    (Gaussian noise) leaves the log-ratio of two different noisy priors unbounded (N(μ_i, σ_i² + θ²)
    vs N(μ_j, σ_j² + θ²): always; mixtures and atoms: unless their extreme components coincide,
    special cases that are not searched), and an evaluator's δ that underflows to 0 at a huge
    scale would be no proof of δ = 0. δ(0) by the certificate's compiled program, padded as its
    chunks are (run eagerly, op by op, a mixture pair's took 30 s and 584 small compiles)."""
    n_lanes = params[0].shape[0]
    *part, part_eps = _parallel.pad_take((*params, lane_eps), np.arange(n_lanes), _parallel.bucket(n_lanes, n_lanes))
    cfg = _Config("exact", noise_key, "bisection", 0.0, family.name)
    at_zero = np.asarray(_delta_at_zero_jit(cfg, pairs.symmetric, tuple(part), part_eps))[:n_lanes]
    needs = np.flatnonzero((np.asarray(lane_delta) == 0) & (at_zero > 0))
    if needs.size:
        index = tuple(int(i) for i in np.unravel_index(needs[0] % pairs.size, pairs.batch_shape))
        pair = pairs[index]
        raise ValueError(
            f"delta=0 (pure ε) with {kernel} noise: pair {index} "
            f"({_describe_prior(pair.first)} vs {_describe_prior(pair.second)}) needs noise, and no scale of this noise "
            "is known to give δ = 0: the log-ratio of two different priors under noise with tails lighter than Laplace's is "
            "unbounded (Gaussian priors: always; mixture and discrete priors: unless their extreme components coincide, cases "
            "that are not searched). Use noise='laplace' (or GeneralizedGaussian(1.0), the same noise: δ = 0 is reached at a "
            "finite scale), or a delta > 0."
        )


def calibrate(
    pairs: PairSet,
    eps,
    delta,
    *,
    noise: str = "laplace",
    level: str | None = None,
    solver: str = _DEFAULT_SOLVER,
    tau: str = "exact",
    rtol: float = _DEFAULT_RTOL,
    max_iter: int = 100,
    chunk_size: int | None = _DEFAULT_CHUNK,
    progress: bool = False,
    certify: str | None = None,
    devices=None,
) -> Calibration:
    """The noise scale that makes Y = X + N (ε, δ)-pufferfish private for every pair in ``pairs``.

    Args:
      pairs: a :class:`PairSet` of Gaussian, Discrete or GaussianMixture priors; every batch axis
        is maximised over.
      eps: ε > 0. delta: δ ∈ (0, 1), or 0 for *pure ε* (below). Scalars, or arrays of any shapes
        that broadcast together: a *sweep*, one batched search over every (ε, δ) point and pair
        (each point's answer equals its single call: the same compiled search, each pair a lane
        with its own ε and δ). Tracers allowed: the result is differentiable (except at δ = 0,
        where the derivative is NaN: not implemented).

        **δ = 0 (pure ε)**, level ``"exact"``, Laplace noise (or ``GeneralizedGaussian(1.0)``, the
        same noise), every prior family: the
        smallest b whose exact δ is 0, i.e. sup_y log p_i(y)/p_j(y) ≤ ε for the noisy densities
        (MATH.md §6: b_pure for Gaussian pairs whose supremum is in the tails). The search starts
        at a scale where a tail limit of that log-ratio, log M_i(±1/b) − log M_j(±1/b) with M the
        priors' MGFs, exceeds ε (δ > 0 there and below: δ does not increase with b), and returns a
        scale where the exact evaluator finds no positive part, within ``rtol`` of the smallest.
        Gaussian noise leaves the log-ratio of priors that differ unbounded (a ValueError, unless
        no pair needs noise). Mixtures: their evaluator proves δ = 0 on the outer pieces from the
        same MGF bound (:func:`jaxpuffer.losses_mixture._outer_negative`); where the supremum is an
        interior peak its proof margin can leave the answer up to ~1e-4 above the smallest
        (measured: 47 of 48 adversarial pairs within 1e-6).
      noise: ``"laplace"`` (scale b) or ``"gaussian"`` (std θ; levels ``exact`` and ``coupling``),
        or a kernel of :mod:`jaxpuffer.noise`: ``GeneralizedGaussian(p)``, p ≥ 1 (scale b; levels
        ``exact`` and ``coupling``). At the exact level a concrete p = 1 or 2 is calibrated as the
        same noise under its other name (:meth:`~jaxpuffer.noise.kernels._Kernel.exact_equivalent`:
        Laplace with the same b, Gaussian with θ = b/√2, b rounded up), by their closed forms and
        with δ = 0 allowed for p = 1; a traced p takes the certified quadrature at every p.
      level: None (the default): the tightest level the prior family has under this noise —
        ``"exact"``, except Gaussian and mixture priors under GG noise, whose exact level (a
        certified quadrature, ~0.2 s per pair and evaluation) is opt-in: ``"coupling"`` there
        (``Calibration.level`` says which ran). Or one level:
        ``"theorem"`` — Theorem 1, eq. (5), closed form; ``"indicator"`` — the smallest b with
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
      max_iter: cap on δ evaluations per pair; the optax solver bisects over the last 48 of them,
        so ``converged`` is False only where even a verified bracket could not be closed (a δ
        target no scale below 2⁸⁰ times Theorem 1's reaches, or too small a ``max_iter``); such a
        pair's scale is its last verified upper end, NaN if none was (never an unverified guess).
      chunk_size: pairs per compiled batch (bounded memory), None for one batch. Closed forms and
        the coupling level give bit-identical answers for any chunking; at the exact level XLA may
        round one δ evaluation by an ulp differently in another batch shape, which can flip a
        bracket decision at the target: each answer is still verified, and they agree to ``rtol``
        (measured: ≤ 5e-11 relative, on 3 of 300 mixture pairs and 93 of 2,500 Gaussian pairs).
      progress: print a progress bar on stderr while chunks are processed.
      certify: what ``delta_achieved`` reports. ``"exact"``: the exact δ at the scale (the
        tightest; it compiles the exact evaluator, tens of CPU seconds on a first call);
        ``"level"``: the δ of the level that produced the scale (for ``"theorem"`` its closed form
        inverted, a few microseconds: Theorem 1's 2Q((εb − |Δμ|)/|Δσ|), Theorem 2's sum over its
        plan, and for discrete priors the coupling bound of π* that proves Kantorovich Theorem 1).
        Default: ``"level"`` at the theorem level, whose closed form already proves
        δ ≤ target, and ``"exact"`` at the numerical levels. ``Calibration.certificate`` says which.
      devices: where the pairs are searched (:mod:`jaxpuffer._parallel`): None for every device of
        this process, a sequence of devices, or a ``jax.sharding.Mesh``; the pair axis (every lane
        of a sweep) is split over them with ``shard_map``, each device on its own block, and the
        max, binding pair and certificate are taken over all of them. The theorem level, a closed
        form, runs where its inputs are. Answers match the one-device answers to ``rtol`` for
        Gaussian and discrete priors (measured ≤ 1.5e-12 relative) and to ~1e-7 for mixtures
        (measured 6.6e-8), not bit for bit: XLA compiles the partitioned program with other
        algebraic rewrites, δ evaluations differ by ulps, and the mixture evaluator's upper bound
        can then take another root-finding branch; every answer is verified by its own evaluator.

        **Processes.** Under ``jax.distributed.initialize`` with several processes, every process
        calls ``calibrate`` with the same arguments except ``pairs``: its own part of the pair set,
        the global set being the parts concatenated along the first batch axis in process order
        (parts may differ in length along it). Each process searches its part on its own devices;
        the per-pair scales, the binding pair and the certificate meet through JAX's collectives,
        and every process returns the Calibration of the whole set (``per_pair`` of the global
        shape: 8 bytes per pair and sweep point on each process). Inputs must be concrete there
        (no ``jit``/``grad`` around it). An error on one process raises on every process.

    Returns:
      A :class:`Calibration`; for a sweep its ``scale``, ``delta_achieved``, ``eps`` and ``delta``
      are arrays of the sweep's shape, ``per_pair`` has shape (*sweep, *pairs.batch_shape),
      ``binding`` holds index arrays of the sweep's shape and ``binding_pair`` the binding pair of
      every point.
    """
    kernel = kernels.resolve(noise)
    twin = kernel.exact_equivalent()
    if twin is not None and (level or _default_level(families.for_pairs(pairs), kernel)) == "exact":
        # GG(1) is Laplace noise, GG(2) Gaussian noise: their exact level, in this kernel's units
        twin_kernel, factor = twin
        found = calibrate(pairs, eps, delta, noise=twin_kernel, level="exact", solver=solver, tau=tau, rtol=rtol, max_iter=max_iter,
                          chunk_size=chunk_size, progress=progress, certify=certify, devices=devices)
        in_units = partial(kernels.in_equivalent_units, factor=1.0 / factor, up=True)
        return found._replace(scale=in_units(found.scale), per_pair=in_units(found.per_pair), noise=kernel.with_shape(kernel.shape_values()))
    mismatch = ("calibrate across processes: every process must pass the same eps, delta and options, and pairs that differ "
                "only in the length of the first batch axis")
    with _parallel.agreement("calibrate", mismatch) as ballot:
        run = _search_lanes(pairs, eps, delta, noise, level, solver, tau, rtol, max_iter, chunk_size, progress, certify, devices)
        if _parallel.processes() > 1:
            ballot.fingerprint = _process_part_fingerprint(run, (run.noise, run.level, solver, tau, rtol, max_iter, certify))
    return _conclude(run)


class _Run(NamedTuple):
    """One process's part of a calibration: its pairs searched, before the max over every pair."""

    pairs: PairSet
    family: Any
    params: tuple
    lane_eps: Any
    per_lane: Any  # (sweep points, this process's pairs), NaN where an input is invalid
    sweep: tuple
    eps: Any
    delta: Any
    level: str
    noise_key: Any  # the search's key (cfg.noise)
    noise: Any  # what the result names: the key, or the kernel itself where it has shape parameters
    certified: str
    converged: Any
    iterations: Any
    solver: str
    mesh: Any
    search: Any  # the _Config of the search program that evaluates the certified level (its program certifies); None: the theorem's
    chunk_size: Any  # lanes per compiled batch (calibrate's argument; None: all)


def _default_level(family, kernel) -> str:
    """The tightest level ``family`` has under ``kernel``, unless its exact level is opt-in."""
    return "exact" if families.exact_by_default(family, kernel) else "coupling"


def _search_lanes(pairs, eps, delta, noise, level, solver, tau, rtol, max_iter, chunk_size, progress, certify, devices) -> _Run:
    """Validates the arguments and finds every lane's scale on this process's devices."""
    kernel = kernels.resolve(noise)
    family = families.for_pairs(pairs)
    if level is None:
        level = _default_level(family, kernel)
    _validate.choice("level", level, LEVELS)
    _validate.choice("solver", solver, SOLVERS)
    _validate.choice("tau", tau, TAU_METHODS)
    if certify is None:  # the theorem level's own closed form; else the exact δ where it is not opt-in
        certify = "level" if level == "theorem" or not families.exact_by_default(family, kernel) else "exact"
    _validate.choice("certify", certify, CERTIFY)
    if level not in kernel.levels:
        ok = " or ".join(repr(v) for v in reversed(kernel.levels))
        why = "is a Laplace-noise bound" if level in ("theorem", "indicator") else f"has no evaluator for {kernel!r} yet"
        raise ValueError(f"level {level!r} {why}; for noise={kernel.name!r} use level {ok}")
    noise_key = kernel.search_key()  # static: the name, or the kernel with its shape parameters erased
    shape = kernel.shape_values()  # those parameters (validated where concrete), carried in params as 0-d values
    if not (isinstance(rtol, float) and 0 < rtol < 1e-2):
        raise ValueError(f"rtol must be a float in (0, 0.01); got {rtol!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive integer or None; got {chunk_size!r}")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    mesh = _parallel.resolve_mesh(devices)
    require_pairs(pairs, family.prior_type, "calibrate")
    if level != "theorem" and level not in family.levels:
        ok = ", ".join(repr(v) for v in ("theorem", *family.levels[:-1])) + f" or {family.levels[-1]!r}"
        raise ValueError(f"level {level!r} is for Gaussian priors; for {family.prior_type.__name__} pairs use {ok}")
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta, allow_zero=True)
    sweep = _validate.broadcast_shapes(eps=eps.shape, delta=delta.shape)
    floor = DELTA_FLOOR if level == "exact" else 0.0
    pure = _validate.is_concrete(delta) and bool(np.any(np.asarray(delta) == 0))
    if pure and level != "exact":
        raise ValueError(
            f"delta=0 (pure ε) is calibrated at level 'exact' only: the other levels' bounds stay positive at every scale for priors "
            f"of unbounded support; got level={level!r}"
        )
    if pure and not family.pure_eps:
        raise ValueError(
            f"delta=0 (pure ε) is not supported for {family.prior_type.__name__} pairs yet: their exact evaluator bounds δ "
            "from above with an allowance for the far tails (~1e-33), so it cannot prove δ = 0. "
            f"Use delta={DELTA_FLOOR:g} (the smallest target it certifies)."
        )
    smallest = float(np.min(np.where(np.asarray(delta) > 0, delta, np.inf))) if _validate.is_concrete(delta) else math.inf
    if smallest < floor:
        raise ValueError(
            f"delta must be 0 or >= {DELTA_FLOOR:g} at level 'exact' (the smallest δ its evaluators certify); got {smallest!r}. "
            "Use level 'coupling' or 'theorem' (closed forms valid at any δ) for smaller targets."
        )
    pure_ok = level == "exact" and kernel.pure_eps and family.pure_eps  # where δ = 0 is a valid target (and searched)
    lanes, lane_eps, lane_delta = _sweep_lanes(pairs, eps, delta, sweep)
    params = family.params(lanes, lane_delta, tau)
    params = (*params, *(jnp.asarray(v, jnp.float64) for v in shape))  # 0-d: shared by every lane
    if pure and not kernel.pure_eps:
        _refuse_pure(family, kernel, noise_key, params, lane_eps, lane_delta, pairs)
    points = math.prod(sweep)  # sweep points (1 for scalar ε and δ)

    cfg = None
    if level == "theorem":
        per_lane = _theorem_lanes(lanes, params, lane_eps, lane_delta, kernel.shape_ok(), family=family.name, tau=tau, floor=floor,
                                  allow_zero=pure_ok or pure, points=points)
        if progress:  # one vectorized closed form: done at once
            _calibration_bar(per_lane.size, "theorem")(per_lane.size)
        converged, iterations, solver_name = True, 0, "closed form"
    else:
        quick = _compile_for_latency(family, kernel, level, params[0].shape[0], mesh)
        cfg = _Config(level, noise_key, solver, float(rtol), family.name,
                      pure=pure_ok and (pure or not _validate.is_concrete(delta)), mesh=mesh, quick=quick)
        per_lane, converged, iterations = _chunked_root(cfg, params, lane_eps, lane_delta, max_iter, pairs.symmetric, chunk_size, progress)
        if converged is False:
            warnings.warn(
                f"calibrate: the {solver} search did not close every bracket within max_iter={max_iter}; "
                "per_pair holds the last verified upper ends, not tight, and NaN where no scale was "
                "verified (converged=False). Raise max_iter.",
                RuntimeWarning,
                stacklevel=3,
            )
        solver_name = solver
        per_lane = _poison_invalid(lanes, lane_eps, lane_delta, per_lane, kernel.shape_ok(), floor=floor, allow_zero=pure_ok or pure, points=points)
    # the level whose δ certifies the scale: the level's own, or the tightest the kernel has; a
    # theorem with no inverse (a family whose theorem_delta is None) is certified exactly
    certified = level if certify == "level" or not families.has_exact(family, kernel) else "exact"
    if certified == "theorem" and family.theorem_delta is None:
        certified = "exact"
    # the certificate runs the search program of the certified level: this call's own, or the one
    # an exact-level call with these options compiles (a coupling-level call, then an exact-level
    # call, compile the exact evaluator once, not twice)
    search = cfg if certified == level else _Config("exact", noise_key, solver, float(rtol), family.name, mesh=mesh,
                                                    quick=_compile_for_latency(family, kernel, "exact", params[0].shape[0], mesh))
    return _Run(pairs, family, params, lane_eps, per_lane, sweep, eps, delta, level, noise_key, kernel.with_shape(shape) if shape else noise_key, certified, converged, iterations, solver_name, mesh,
                search if certified != "theorem" else None, chunk_size)


def _process_part_fingerprint(run: _Run, options) -> bytes:
    """Across processes: checks that this process's inputs are concrete and have a first batch axis
    to split; returns what must agree on every process (ε, δ, options, the per-pair shapes).
    Collectives would otherwise meet mismatched shapes: a hang or an error deep inside them."""
    pairs = run.pairs
    if not all(_validate.is_concrete(v) for v in (run.eps, run.delta, run.per_lane, *run.params)):
        raise ValueError("calibrate across processes needs concrete inputs (no jit, vmap or grad around it)")
    if not pairs.batch_shape:
        raise ValueError("calibrate across processes: pairs must have a batch axis (each process holds a part of the first one)")
    shapes = [np.shape(leaf)[len(pairs.batch_shape):] for leaf in jax.tree_util.tree_leaves(pairs)]
    described = repr((options, pairs.batch_shape[1:], pairs.symmetric, jax.tree_util.tree_structure(pairs), shapes))
    return described.encode() + np.asarray(run.eps).tobytes() + np.asarray(run.delta).tobytes()


def _conclude(run: _Run) -> Calibration:
    """The max over every pair (and process), the binding pair and the certificate."""
    per_lane, batch_shape, sweep = run.per_lane, run.pairs.batch_shape, run.sweep
    converged, iterations = run.converged, run.iterations
    across = _parallel.processes() > 1
    if across:
        local_binding = _binding(per_lane, batch_shape, sweep)
        per_lane = _parallel.gather_rows(np.asarray(per_lane))
        batch_shape = (per_lane.shape[1] // math.prod(batch_shape[1:]),) + batch_shape[1:]
        every_converged, every_iterations = _parallel.gather_tree((np.bool_(converged), np.int64(iterations)))
        converged, iterations = bool(every_converged.all()), int(every_iterations.max())
    # concrete values are reduced and checked on the host (each eager JAX operation on a new shape
    # compiles a program of its own: ~20 ms apiece, most of a cold theorem-level call)
    on_host = _validate.is_concrete(per_lane)
    per_lane = np.asarray(per_lane) if on_host else per_lane
    xp = np if on_host else jnp
    scale = xp.max(per_lane, axis=1)
    # (a search that did not converge leaves NaN where it verified no scale, and has said so)
    if converged is not False and on_host and bool(np.any(np.isnan(scale))):
        raise ValueError("the calibrated scale is NaN: an input is invalid (a prior built around its validation?)")
    if on_host and bool(np.any(scale > _validate.RESULT_MAX)):
        raise ValueError(
            f"the calibrated scale {float(np.max(scale))!r} is beyond the certified range (<= {_validate.RESULT_MAX:g}): "
            "eps is too small for these priors"
        )
    per_pair, scale = per_lane.reshape(sweep + batch_shape), scale.reshape(sweep)
    per_pair = jax.device_put(per_pair) if on_host else per_pair
    achieved = None  # under a transformation the certificate is not computed
    points = per_lane.shape[0]
    if all(_validate.is_concrete(v) for v in (scale, *run.params, run.lane_eps)):
        if run.certified == "theorem":
            lane_scale = np.repeat(scale.reshape(-1), run.per_lane.shape[1])
            achieved = np.asarray(_theorem_certificate(run.params, lane_scale, run.lane_eps, family=run.family.name, points=points)).reshape(sweep)
        else:
            achieved = _max_exact_delta(run.family.name, run.params, scale, run.lane_eps, run.noise_key, run.pairs.symmetric,
                                        level=run.certified, mesh=run.mesh, search=run.search, batch=run.chunk_size)
        if across:
            achieved = _parallel.gather_tree(np.asarray(achieved)).max(axis=0)
        achieved = np.where(np.isnan(scale), np.nan, np.asarray(achieved))  # (no scale verified: nothing to certify)
    binding = _binding(per_lane, batch_shape, sweep)
    concrete = all(_validate.is_concrete(v) for v in (scale, run.eps, run.delta))
    binding_pair = None
    if concrete and _validate.is_concrete(per_pair):
        binding_pair = _binding_pair_across(run, local_binding) if across else _pairs_at(run.pairs, binding)

    def readable(value):  # what a person reads: a float, or a numpy array of the sweep's shape
        if not concrete:
            return value
        return np.broadcast_to(np.asarray(value, np.float64), sweep) if sweep else float(value)

    return Calibration(
        scale=readable(scale),
        per_pair=per_pair,
        binding=binding,
        delta_achieved=None if achieved is None else readable(achieved),
        level=run.level,
        noise=run.noise,
        eps=readable(run.eps),
        delta=readable(run.delta),
        converged=converged,
        iterations=iterations,
        solver=run.solver,
        certificate=run.certified,
        binding_pair=binding_pair,
    )


def _pairs_at(pairs: PairSet, index) -> PairSet:
    """``pairs[index]`` (``index`` a tuple over the batch axes, as :func:`_binding` gives), leaf by
    leaf with :func:`jaxpuffer._parallel.take_lanes` (on the host where the pairs are in CPU memory)."""
    return jax.tree_util.tree_map(lambda leaf: _parallel.take_lanes(leaf, index), pairs)


def _binding_pair_across(run: _Run, local_binding) -> PairSet:
    """The binding pair of every sweep point when the pairs are split over processes: each process
    sends its own binding pair and its max; the first process holding the global max owns the
    global binding pair (the parts are concatenated in process order, and argmax takes the first)."""
    local_max = np.max(np.asarray(run.per_lane), axis=1).reshape(run.sweep)
    every_pair, every_max = _parallel.gather_tree((run.pairs[local_binding], local_max))
    owner = np.argmax(every_max, axis=0)  # (*sweep)
    pick = (owner, *np.indices(run.sweep)) if run.sweep else (owner,)
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf[pick]), every_pair)


def _sweep_lanes(pairs, eps, delta, sweep):
    """The pairs (flattened) and their targets as lanes: every pair at every sweep point (ε and δ
    broadcast to the shape ``sweep``, () for scalars), sweep-major — lane s·n + k is pair k at
    point s — with that point's ε and δ per lane, so that one compiled search serves a single
    (ε, δ) and a sweep. Memory: n·S lanes of the family's per-pair parameters; the search runs
    them ``chunk_size`` at a time."""
    full = sweep + pairs.batch_shape
    if _validate.in_host_memory(*jax.tree_util.tree_leaves(pairs)):  # (on the host: no program compiled per shape)
        rank = len(pairs.batch_shape)
        lanes = jax.tree_util.tree_map(
            lambda a: jax.device_put(np.broadcast_to(a, full + a.shape[rank:]).reshape((-1,) + a.shape[rank:])), pairs)
    else:
        lanes = PairSet.tree_unflatten(pairs.symmetric, tuple(p.broadcast_to(full).reshape(-1) for p in (pairs.first, pairs.second)))

    def per_lane(v):
        xp = np if _validate.in_host_memory(v) else jnp  # (laid out on the host where it is: no program compiled per shape)
        lane = xp.broadcast_to(xp.broadcast_to(v, sweep).reshape(sweep + (1,) * len(pairs.batch_shape)), full).reshape(-1)
        return jax.device_put(lane) if xp is np else lane

    return lanes, per_lane(eps), per_lane(delta)


def _binding(per_lane, batch_shape, sweep) -> tuple:
    """Index (tuple, one entry per pair axis) of the largest per-pair scale: ints for one (ε, δ);
    arrays of the sweep's shape for a sweep; JAX arrays when traced."""
    if not batch_shape:
        return ()
    concrete = _validate.is_concrete(per_lane)
    flat = np.argmax(np.asarray(per_lane), axis=1) if concrete else jnp.argmax(per_lane, axis=1)
    index = np.unravel_index(np.asarray(flat), batch_shape) if concrete else jnp.unravel_index(flat, batch_shape)
    if sweep:
        return tuple(i.reshape(sweep) for i in index)
    return tuple(int(i[0]) if concrete else i[0] for i in index)
