"""The exact δ of a PairSet at given noise scales (level L0 of the ladder, MATH.md §6–7), as the
user checks a calibration with it: the evaluators of :mod:`jaxpuffer.losses` and its siblings,
run where the inputs are concrete by the compiled program that :func:`jaxpuffer.calibrate`
searches and certifies with (issue 15: a first ``delta_exact`` after an exact-level calibration
of 3 Gaussian pairs compiled 10.3 s of its own, as long as the calibration's evaluator)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _parallel, _validate, calibration, losses
from .noise import kernels
from .pairs import PairSet


def delta_exact(pairs: PairSet, scale, eps, *, noise: str = "laplace", weights=None) -> jax.Array:
    """L0: the exact δ, ∫ [p_i − e^ε p_j]_+ dy, of Y = X + N at noise scale ``scale``.

    Args:
      pairs: Gaussian pairs (point masses allowed) or Discrete pairs. Symmetric pairs report the
        max over orders.
      scale: Laplace b, or the Gaussian noise std θ, ≥ 0 (0: the priors' own hockey-stick).
      eps: ε > 0. ``scale`` and ``eps`` broadcast with ``pairs.batch_shape``.
      noise: ``"laplace"`` (Gaussian ⊛ Laplace density and CDF, MATH.md §6) or ``"gaussian"``
        (two-Gaussian closed form, MATH.md §7), or a kernel of :mod:`jaxpuffer.noise`. Discrete
        priors: :mod:`jaxpuffer.losses_discrete` (closed form for Laplace, a certified grid for
        Gaussian noise, a certified cell enclosure for ``GeneralizedGaussian(p)``, p ≥ 1: an upper
        bound, :mod:`jaxpuffer.losses_enclosure`). ``GeneralizedGaussian(1.0)`` and
        ``GeneralizedGaussian(2.0)`` are Laplace noise (same b) and Gaussian noise (θ = b/√2, rounded
        down): every family takes those evaluators for them. Gaussian priors under ``GeneralizedGaussian(p)``:
        a certified quadrature of the noisy densities and the same cell enclosure, an upper bound
        within ~2e-3 of δ, ~0.2 s per pair (:mod:`jaxpuffer.losses_convolved`). GaussianMixture
        priors: :mod:`jaxpuffer.losses_mixture` (located crossings and closed-form component CDFs);
        under ``GeneralizedGaussian(p)`` the same certified quadrature, each component one atom
        (~1.7 s per 2-component pair).
      weights: GaussianMixture pairs only: the :class:`jaxpuffer.couplings.ComponentPlan` whose
        coupling bound (24), also ≥ δ, is taken where it is lower: where the crossing search
        exceeds its budget or a piece's sign is not proven (Laplace and Gaussian noise), and
        everywhere under ``GeneralizedGaussian(p)`` (default: ``jp.gmm_coupling(pairs, cost="w2")``).

    Concrete inputs at scales > 0 are evaluated in the batches an exact-level ``calibrate`` with
    its default options pads to (64, 128, 256, ... lanes; calls with a few pairs share one
    program), by that calibration's compiled search program where this process has it at hand
    (:func:`jaxpuffer.calibration.exact_delta_by_search`): checking a calibration's scales
    compiles nothing more. Where it is not at hand, at scale 0, and for traced inputs (``jit``,
    ``vmap``, ``grad`` around the call), the evaluator's own program runs
    (:func:`jaxpuffer.losses.exact_on_lanes`), which compiles in less time than the search.
    For mixture priors the value is an upper bound whose looseness follows the rounding: in
    another batch shape or on another backend a piece proven in one program may not be in the
    other and fall back to a looser bound. Re-checking a calibration's scales this way can then
    exceed its target although the calibration's certificate (``delta_achieved``, computed in its
    own programs) does not: measured up to 1.0034 × target for 1,000 of 10⁵ mixture answers of an
    H200 re-checked on a CPU and 1.0007 × on the same CPU in a batch of 256, where the
    independent reference (``tests/adversarial/reference.py``) gave ≤ 0.9999999 × target
    (``benchmarks/bench_gpu.py``).
    """
    kernel = kernels.resolve(noise)
    twin = kernel.exact_equivalent()
    if twin is not None:  # GG(1) is Laplace noise, GG(2) Gaussian noise: their closed forms
        kernel, factor = twin
        scale = kernels.in_equivalent_units(_validate.float_array("scale", scale), factor, up=False)
    family, params, b, e, shape = losses.exact_lanes(pairs, scale, eps, weights)
    if not all(_validate.is_concrete(v) for v in (*params, b, e)):
        return losses.exact_on_lanes(family, kernel, params, b, e, pairs.symmetric, shape)
    positive = np.flatnonzero(np.asarray(b) > 0)
    out = np.empty(b.shape[0])

    def own(lanes):  # the evaluator's own program (losses), on lanes of the flat arrays
        take = lambda v: _parallel.take_lanes(v, lanes)  # noqa: E731
        return np.asarray(losses.exact_on_lanes(family, kernel, tuple(map(take, params)), take(b), take(e), pairs.symmetric, (lanes.size,)))

    if positive.size:  # the search program where it is at hand, else the evaluator's own
        take = lambda v: _parallel.take_lanes(v, positive)  # noqa: E731
        out[positive] = calibration.exact_delta_by_search(family, kernel, tuple(map(take, params)), take(b), take(e), pairs.symmetric,
                                                          fallback=lambda sub: own(positive[sub]))
    zero = np.flatnonzero(np.asarray(b) == 0)
    if zero.size:
        out[zero] = own(zero)
    return jax.device_put(out.reshape(shape))
