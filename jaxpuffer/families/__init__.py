"""Prior families: how :func:`jaxpuffer.calibrate` turns a PairSet into per-pair parameters and
asks them for δ (issue 12). One module per family, one :func:`register` call each.

A family is a small object answering, for flat batches of per-pair parameters (leading axis the
pairs) and a noise kernel named by ``noise`` (:mod:`jaxpuffer.noise`):

* ``prior_type``, ``name``, ``levels`` — the prior class it handles, its name, and the numerical
  levels of the ladder it has evaluators for (its exact evaluator, where it has one, handles
  every kernel with an exact level: closed forms where they exist, certified enclosures for the
  others, :mod:`jaxpuffer.losses_enclosure`, :mod:`jaxpuffer.losses_convolved`);
* ``params(pairs, delta, tau)`` — the flat per-pair parameter tuple (validating ``pairs``);
* ``theorem(params, eps, delta, tau)`` — the closed-form level, per pair, from the parameters
  alone (traceable: :func:`jaxpuffer.calibration._theorem_lanes` compiles it with the validity
  mask as one program, where op-by-op it compiled a program per operation);
* ``theorem_delta(params, b, eps)`` — the δ that closed form certifies at scale b, per pair (its
  inverse: ≤ δ at the theorem's own scale, ≥ the exact δ); the attribute is None where the
  theorem has no inverse (the theorem level's certificate is then the exact δ);
* ``delta(level, noise, params, b, eps, symmetric)`` — δ per pair at a numerical level;
* optionally ``delta_and_slope(level, noise, params, b, eps, symmetric)`` — (δ, ∂δ/∂b) per pair
  for the search's model where the family has the slope in closed form, else None
  (:func:`delta_and_slope` then takes δ's JVP); where ``gradient_in_closed_form(level, noise)``
  says so, the slope is instead (n, 1 + P): ∂δ/∂b and then the slopes in each per-pair entry of
  (params, ε) in order (the implicit derivative of the scale then needs no program of its own,
  :func:`jaxpuffer.calibration._slopes_by_search`);
* ``delta_at_zero(level, noise, params, eps, symmetric)`` — δ with no noise (answer 0 if ≤ δ);
  optionally ``delta_at_zero_floor(...)`` (same arguments) at the levels ``zero_floor_levels`` —
  a cheap lower bound of it: a pair whose bound exceeds its target needs noise, and
  ``delta_at_zero`` is evaluated only where some pair's bound does not settle it (mixtures, whose
  ``delta_at_zero`` is a whole evaluator: :func:`jaxpuffer.calibration._zero_noise_enough`);
* ``bracket(level, noise, params, eps, target)`` — (hi, start, pure): a scale expected to be
  feasible, the first scale to evaluate, and the scale beyond which δ is known to vanish (+inf
  where unknown; None where the family has no closed form for it: the exact-level search then
  starts near the kernel's tail floor instead, :func:`jaxpuffer.calibration._search_init`); the
  search verifies all three;
* ``pure_eps`` — whether its exact evaluator proves δ = 0 (returns exactly 0 where no positive
  part exists), so that targets δ = 0 are searched; then ``log_mgf_ratio(params, t)`` —
  log M_i(t) − log M_j(t) per pair, M the priors' moment generating functions: under Laplace(b)
  noise the log-ratio of the noisy densities tends to it at t = ±1/b as y → ±∞ (the analytic
  tail limits that δ = 0 needs, MATH.md §6);
* ``costly_exact`` — whether an exact-level evaluation costs far more than compiling one more
  batch size (mixtures: ~1 ms per pair), so that the search re-batches its unfinished pairs after
  every evaluation (:func:`jaxpuffer.calibration._solve_concrete`);
* ``opt_in_exact`` — the kernels (names) whose exact evaluator for this family is costly enough
  to be asked for rather than taken by default (Gaussian and mixture priors under GG noise: a
  nested certified quadrature, :mod:`jaxpuffer.losses_convolved`): :func:`exact_by_default` is False for them, so
  ``calibrate`` defaults to the coupling level and certifies with it, and an exact-level search
  compacts as for ``costly_exact``;
* optionally ``quick_to_run(level, kernel)`` — whether its evaluator runs cheaply even compiled
  without optimisation (LLVM -O0: 3–5x slower, 20–30 % less compile), so that a call of a few
  pairs compiles for latency (:func:`quick_to_run`);
* ``prune_bound(noise, params, b, eps, symmetric)`` — a cheap per-pair upper bound on the exact δ
  that orders the certificate's scan, or None (then ``exact_is_cheap(noise, zero)`` says whether
  the exact δ of every pair, at scale 0 where ``zero``, is evaluated in one batch).

The search, chunking, implicit gradient and certificate in :mod:`jaxpuffer.calibration` only call
these; no layer above switches on the family or the kernel.
"""
from __future__ import annotations

from typing import Protocol

import jax
import jax.numpy as jnp

from ..pairs import PairSet


class PriorFamily(Protocol):
    name: str
    prior_type: type
    levels: tuple
    pure_eps: bool
    costly_exact: bool
    opt_in_exact: tuple

    def params(self, pairs, delta, tau) -> tuple: ...
    def theorem(self, params, eps, delta, tau): ...
    def theorem_delta(self, params, b, eps): ...
    def delta(self, level, noise, params, b, eps, symmetric): ...
    def delta_at_zero(self, level, noise, params, eps, symmetric): ...
    def bracket(self, level, noise, params, eps, target): ...
    def log_mgf_ratio(self, params, t): ...
    def prune_bound(self, noise, params, b, eps, symmetric): ...
    def exact_is_cheap(self, noise, zero) -> bool: ...


_REGISTRY: dict = {}
_DEFAULT = "gaussian"


def register(family):
    """Makes ``family`` handle PairSets of ``family.prior_type``; returns it."""
    _REGISTRY[family.name] = family
    return family


def has_exact(family, kernel) -> bool:
    """Whether the exact level exists for ``family`` with the noise ``kernel`` (both have it)."""
    return "exact" in family.levels and "exact" in kernel.levels


def exact_by_default(family, kernel) -> bool:
    """Whether ``calibrate``'s default level and certificate for ``family`` under ``kernel`` are the
    exact level: it exists and is not opt-in (``family.opt_in_exact``)."""
    return has_exact(family, kernel) and kernel.name not in family.opt_in_exact


def costly_exact(family, kernel) -> bool:
    """Whether an exact-level search for ``family`` under ``kernel`` compacts its unfinished pairs
    after every evaluation (``costly_exact``, or an opt-in exact evaluator)."""
    return family.costly_exact or kernel.name in family.opt_in_exact


def quick_to_run(family, level, kernel) -> bool:
    """Whether the family's evaluator at ``level`` under ``kernel`` runs cheaply even compiled
    without optimisation (its optional ``quick_to_run(level, kernel)``; default no), so that a small
    calibration compiles its programs for latency (:func:`jaxpuffer.calibration._compile_for_latency`)."""
    own = getattr(family, "quick_to_run", None)
    return bool(own is not None and own(level, kernel))


def delta_and_slope(family, level, noise, params, b, eps, symmetric):
    """(δ, slopes) per pair, the value and slopes the optax search takes: slopes (n, G), column 0
    ∂δ/∂b (the model's), the others the slopes in each per-pair entry of (params, ε) where the
    family gives δ's whole gradient (:func:`gradient_in_closed_form`; G = 1 otherwise). The
    family's own ``delta_and_slope`` where it gives one (Gaussian and mixture priors under Laplace
    noise at the exact level: in closed form, no derivative in the search's program), else the JVP
    of its ``delta`` in b (the one place that JVP is written)."""
    own = getattr(family, "delta_and_slope", None)
    closed = None if own is None else own(level, noise, params, b, eps, symmetric)
    if closed is None:
        closed = jax.jvp(lambda bb: family.delta(level, noise, params, bb, eps, symmetric), (b,), (jnp.ones_like(b),))
    value, slopes = closed
    return value, slopes if slopes.ndim == 2 else slopes[:, None]


def has_zero_floor(family, level) -> bool:
    """Whether the family offers ``delta_at_zero_floor`` at ``level`` (its optional
    ``zero_floor_levels``; default none)."""
    return level in getattr(family, "zero_floor_levels", ())


def gradient_in_closed_form(family, level, noise) -> bool:
    """Whether the family's ``delta_and_slope`` gives δ's whole gradient per pair at this level and
    kernel (its optional ``gradient_in_closed_form``; default no)."""
    own = getattr(family, "gradient_in_closed_form", None)
    return bool(own is not None and own(level, noise))


def get(name: str):
    """The registered family called ``name``."""
    return _REGISTRY[name]


def for_pairs(pairs):
    """The family of ``pairs``' priors (Gaussian where none matches: its ``params`` then raises
    the usual error for a wrong argument)."""
    if isinstance(pairs, PairSet):
        for family in _REGISTRY.values():
            if isinstance(pairs.first, family.prior_type):
                return family
    return _REGISTRY[_DEFAULT]


from . import discrete, gaussian, mixture  # noqa: E402,F401  (each registers itself)
