"""Gaussian priors N(μ, σ²): per-pair parameters (Δμ, σ_i, σ_j) (MATH.md §6–7)."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._validate import in_host_memory
from ..bounds import _gaussian_pairs, pure_scale, theorem1_scale
from ..losses import pair_delta, pair_delta_and_slope, prior_delta, theorem_delta
from ..priors import Gaussian
from ..tau import tau_star_unchecked
from . import register

ROUND_UP = 1.0 + 2.0**-49  # closed forms are rounded up a few ulps, never onto the unsafe side
# exact level, Laplace noise: the first point is b_pure·(1 − this). Mean evaluations per pair on
# 4096 random pairs at (ε, δ) = (1, 1e-6), (1, 1e-3), (1, 1e-10), (0.3, 1e-6), (3, 1e-6):
# 1e-5: 4.44 5.49 3.96 6.11 5.21; 3e-4: 4.10 5.15 4.13 6.17 4.85; 1e-3: 4.81 5.04 4.22 6.36 4.89.
_BELOW_PURE = 3e-4


@partial(jax.jit, static_argnames="tau")
def theorem_level(d_mu, d_sigma, eps, delta, tau):
    """Theorem 1, eq. (5), per pair (rounded up a few ulps) and its max."""
    per_pair = theorem1_scale(d_mu, d_sigma, eps, tau_star_unchecked(delta, tau)) * ROUND_UP
    return per_pair, jnp.max(per_pair)


class GaussianFamily:
    name = "gaussian"
    prior_type = Gaussian
    levels = ("indicator", "coupling", "exact")
    pure_eps = True
    costly_exact = False  # closed forms (Gaussian noise) or a few roots per pair (Laplace)
    opt_in_exact = ("generalized_gaussian",)  # ~0.2 s per pair and evaluation (losses_convolved)

    def quick_to_run(self, level, kernel):
        """Laplace noise: a few roots per pair, cheap unoptimised too (3 pairs, exact level: a fresh
        process 18.8 -> 13.1 CPU-s cold, 2.98 -> 2.84 warm). Not Gaussian noise, whose small
        closed-form program gained 5.8 -> 4.6 CPU-s cold but lost 1.96 -> 2.22 warm."""
        return kernel.name == "laplace"

    def params(self, pairs, delta, tau):
        pairs = _gaussian_pairs(pairs, "calibrate")
        fields = (pairs.first.mean, pairs.second.mean, pairs.first.std, pairs.second.std)
        if in_host_memory(*fields):  # on the host, as exactly, with no program compiled per shape
            m_i, m_j, s_i, s_j = (np.asarray(a).reshape(-1) for a in fields)
            return tuple(jax.device_put(a) for a in (m_i - m_j, s_i, s_j))
        return (fields[0] - fields[1]).reshape(-1), fields[2].reshape(-1), fields[3].reshape(-1)

    def theorem(self, params, eps, delta, tau):
        return theorem_level(params[0], params[1] - params[2], eps, delta, tau)[0]

    def theorem_delta(self, params, b, eps):
        """Theorem 1 inverted: 2Q((εb − |Δμ|)/|Δσ|) (:func:`jaxpuffer.losses.theorem_delta`)."""
        d_mu, s1, s2 = params
        return theorem_delta(d_mu, s1 - s2, b, eps)

    def delta(self, level, noise, params, b, eps, symmetric):
        return pair_delta(level, noise, *params, b, eps, symmetric, padded=True)  # (the search pads with copies of its first pair)

    def delta_and_slope(self, level, noise, params, b, eps, symmetric):
        """(δ, its slopes in (b, Δμ, σ_i, σ_j, ε)) where they have a closed form (the exact level
        under Laplace noise), else None."""
        return pair_delta_and_slope(level, noise, *params, b, eps, symmetric)

    def gradient_in_closed_form(self, level, noise):
        return level == "exact" and noise == "laplace"

    def delta_at_zero(self, level, noise, params, eps, symmetric):
        d_mu, s1, s2 = params
        if level == "exact":
            return prior_delta(d_mu, s1, s2, eps, symmetric)
        return jnp.where((d_mu == 0) & (s1 == s2), 0.0, 1.0)

    def bracket(self, level, noise, params, eps, target):
        """Theorem 1's (5) (bounds every level for Laplace noise; a first guess for Gaussian
        noise). Exact level, Laplace noise: pure = b_pure of MATH.md §6 and the first point just
        below it (δ often reaches the target within 1e-4 of b_pure, like a power of b_pure − b);
        for a target of 0 (pure ε), where (5) has no finite form, hi = 2·b_pure."""
        d_mu, s1, s2 = params
        hi = jnp.maximum(theorem1_scale(d_mu, s1 - s2, eps, tau_star_unchecked(target, "exact")) * ROUND_UP, 1e-300)
        if noise == "laplace" and level == "exact":
            b_pure = pure_scale(d_mu, s1, s2, eps)
            hi = jnp.where(target == 0, jnp.maximum(2.0 * b_pure, 1e-300), hi)
            near = b_pure * (1.0 - _BELOW_PURE)
            return hi, jnp.where((near > 0) & (near < hi), near, hi), jnp.where(b_pure > 0, b_pure, jnp.inf)
        return hi, hi, jnp.full(hi.shape, jnp.inf)

    def log_mgf_ratio(self, params, t):
        """log M_i(t) − log M_j(t) = Δμ t + (σ_i² − σ_j²) t²/2, M the priors' MGFs (σ_i² − σ_j² as
        (σ_i − σ_j)(σ_i + σ_j): exactly 0 for equal stds, where a fused s1² − s2² leaves the
        rounding of one square, which t² ~ 1e10 makes a 5e-8 error in the limit)."""
        d_mu, s1, s2 = params
        return d_mu * t + 0.5 * ((s1 - s2) * (s1 + s2)) * t**2

    def prune_bound(self, noise, params, b, eps, symmetric):
        """Laplace noise: the Monge-coupling bound (35) (L1 ≥ L0, closed form); else None."""
        return self.delta("coupling", noise, params, b, eps, symmetric) if noise == "laplace" else None

    def exact_is_cheap(self, noise, zero):
        return zero or noise == "gaussian"  # closed forms: one batch


register(GaussianFamily())
