"""Gaussian-mixture priors: per-pair parameters of the GMM plan that minimises Theorem 2's cost at
this δ, then both mixtures (:func:`jaxpuffer.losses_mixture.mixture_params`; MATH.md §3)."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from ..bounds import mixture_theorem_scale, theorem1_scale
from ..couplings import gmm_coupling
from ..losses import theorem_delta
from ..losses_mixture import mixture_delta, mixture_delta_and_slope, mixture_delta_at_zero, mixture_delta_at_zero_floor, mixture_params
from ..pairs import require_pairs
from ..priors import GaussianMixture, log_mgf
from ..tau import tau_star_unchecked
from . import register

_PURE_START = 1e-30  # the δ whose Theorem 2 scale starts the bracket for a target of 0


@partial(jax.jit, static_argnames="tau")
def _plan_params(pairs, delta, tau):
    """:meth:`MixtureFamily.params` on validated pairs and δ, one compiled program (op by op, a
    cold call compiled a dozen small ones beside the LP)."""
    delta = jnp.where(delta > 0, delta, _PURE_START)
    return mixture_params(pairs, gmm_coupling(pairs, cost="bound", delta=delta, tau=tau))


class MixtureFamily:
    name = "mixture"
    prior_type = GaussianMixture
    levels = ("coupling", "exact")
    # with Laplace noise its exact evaluator returns 0 where it proves f < 0 on every piece, the
    # outer ones included (losses_mixture._outer_negative), so δ = 0 targets are searched
    pure_eps = True
    costly_exact = True  # ~1 ms per pair and evaluation (the partition and its piece bounds)
    zero_floor_levels = ("exact",)  # where delta_at_zero_floor is offered
    opt_in_exact = ("generalized_gaussian",)  # ~1–3 s per pair and evaluation (losses_convolved)

    def quick_to_run(self, level, kernel):
        """Laplace noise (3 pairs of 2-component mixtures, exact level, a fresh process: 34.8 ->
        24.2 CPU-s; a second call 0.76 -> 0.91 s)."""
        return kernel.name == "laplace"

    def params(self, pairs, delta, tau):
        """The plan minimising Theorem 2's cost at δ (at δ = 1e-30 for a target of 0: any plan's
        bounds hold; this one serves the bracket and the certificate's pruning)."""
        return _plan_params(require_pairs(pairs, GaussianMixture, "calibrate"), jnp.asarray(delta), tau)

    def theorem(self, params, eps, delta, tau):
        """Theorem 2 in its valid (max) form on the plan of :meth:`params` — the plan
        :func:`jaxpuffer.bounds.theorem2` solves for (``coupling="bound"``: the LP on the costs
        |Δμ_ml| + τ*(δ)|Δσ_ml|, at the same δ), so the same scale, without solving the LP again."""
        w, d_mu, d_sigma = params[:3]
        cost = theorem1_scale(d_mu, d_sigma, 1.0, tau_star_unchecked(jnp.asarray(delta)[..., None, None], tau))
        return mixture_theorem_scale(w, cost, eps, "max")

    def theorem_delta(self, params, b, eps):
        """Theorem 2 inverted on the same plan: Σ_kl w_kl δ_kl(b), δ_kl Theorem 1's δ for the
        component pair (k, l) at b. At Theorem 2's (max form) scale every δ_kl ≤ δ, so the sum is
        ≤ δ; it bounds the plan's coupling bound (24), hence the exact δ."""
        w, d_mu, d_sigma = params[:3]
        per_component = theorem_delta(d_mu, d_sigma, jnp.asarray(b)[..., None, None], jnp.asarray(eps)[..., None, None])
        return jnp.sum(jnp.where(w > 0, w * per_component, 0.0), axis=(-2, -1))

    def delta(self, level, noise, params, b, eps, symmetric):
        return mixture_delta(level, noise, params, b, eps, symmetric, padded=True)  # (the search pads with copies of its first pair)

    def delta_and_slope(self, level, noise, params, b, eps, symmetric):
        """(δ, its gradient in (b, params, ε)) where it has a closed form (the exact level under
        Laplace noise), else None."""
        return mixture_delta_and_slope(level, noise, params, b, eps, symmetric)

    def gradient_in_closed_form(self, level, noise):
        return level == "exact" and noise == "laplace"

    def delta_at_zero(self, level, noise, params, eps, symmetric):
        if level == "exact":
            return mixture_delta_at_zero(params, eps, symmetric)
        w, d_mu, d_sigma = params[:3]  # the plan's mass moved at all (U1 → P(W ≠ 0) as b → 0)
        return jnp.sum(jnp.where((d_mu != 0) | (d_sigma != 0), w, 0.0), axis=(-2, -1))

    def delta_at_zero_floor(self, level, noise, params, eps, symmetric):
        """A cheap lower bound of the priors' own δ (cell masses on the components' grid), which
        settles most pairs without the exact evaluator at zero noise (the coupling level's δ at
        zero is a sum already: ``zero_floor_levels``)."""
        return mixture_delta_at_zero_floor(params, eps, symmetric)

    def bracket(self, level, noise, params, eps, target):
        """Theorem 2 in its valid (max) form with the same plan (a first guess for Gaussian noise,
        which the search may double); no closed form for where δ vanishes (under Laplace noise
        the exact level starts near the tail floor instead)."""
        w, d_mu, d_sigma = params[:3]
        # a target of 0 (pure ε) has no finite theorem: start from its scale at δ = 1e-30, which the search doubles if need be
        target = jnp.where(jnp.asarray(target) > 0, target, _PURE_START)
        cost = theorem1_scale(d_mu, d_sigma, 1.0, tau_star_unchecked(target[..., None, None], "exact"))
        hi = jnp.maximum(mixture_theorem_scale(w, cost, eps, "max"), 1e-300)
        return hi, hi, None

    def log_mgf_ratio(self, params, t):
        """log M_i(t) − log M_j(t), M(t) = Σ_m α_m e^{μ_m t + σ_m² t²/2} (components of weight 0 drop
        out), each formed about the pair's mean component location c (the e^{ct} factors cancel)."""
        alpha, mu_i, s_i, beta, mu_j, s_j = params[3:]
        t = jnp.asarray(t)[..., None]
        c = 0.5 * (jnp.sum(alpha * mu_i, axis=-1) + jnp.sum(beta * mu_j, axis=-1))[..., None]
        return log_mgf(alpha, mu_i, s_i, t, c) - log_mgf(beta, mu_j, s_j, t, c)

    def prune_bound(self, noise, params, b, eps, symmetric):
        """The plan's coupling bound (24), ≥ the exact δ."""
        return self.delta("coupling", noise, params, b, eps, symmetric)

    def exact_is_cheap(self, noise, zero):
        return False


register(MixtureFamily())
