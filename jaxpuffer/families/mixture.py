"""Gaussian-mixture priors: per-pair parameters of the GMM plan that minimises Theorem 2's cost at
this δ, then both mixtures (:func:`jaxpuffer.losses_mixture.mixture_params`; MATH.md §3)."""
from __future__ import annotations

import jax.numpy as jnp

from ..bounds import mixture_theorem_scale, theorem1_scale, theorem2
from ..couplings import gmm_coupling
from ..losses import theorem_delta
from ..losses_mixture import mixture_delta, mixture_delta_at_zero, mixture_params
from ..priors import GaussianMixture
from ..tau import tau_star_unchecked
from . import register


class MixtureFamily:
    name = "mixture"
    prior_type = GaussianMixture
    levels = ("coupling", "exact")
    # its exact evaluator is an upper bound that adds the Laplace mass beyond its outer points
    # (e^{−75}/2 per side): it never proves δ = 0, so δ = 0 targets are refused
    pure_eps = False

    def params(self, pairs, delta, tau):
        return mixture_params(pairs, gmm_coupling(pairs, cost="bound", delta=delta, tau=tau))

    def theorem(self, pairs, params, eps, delta, tau):
        """Theorem 2 in its valid (max) form."""
        return theorem2(pairs, eps, delta, coupling="bound", form="max", tau=tau).reshape(-1)

    def theorem_delta(self, params, b, eps):
        """Theorem 2 inverted on the same plan: Σ_kl w_kl δ_kl(b), δ_kl Theorem 1's δ for the
        component pair (k, l) at b. At Theorem 2's (max form) scale every δ_kl ≤ δ, so the sum is
        ≤ δ; it bounds the plan's coupling bound (24), hence the exact δ."""
        w, d_mu, d_sigma = params[:3]
        per_component = theorem_delta(d_mu, d_sigma, jnp.asarray(b)[..., None, None], jnp.asarray(eps)[..., None, None])
        return jnp.sum(jnp.where(w > 0, w * per_component, 0.0), axis=(-2, -1))

    def delta(self, level, noise, params, b, eps, symmetric):
        return mixture_delta(level, noise, params, b, eps, symmetric)

    def delta_at_zero(self, level, noise, params, eps, symmetric):
        if level == "exact":
            return mixture_delta_at_zero(params, eps, symmetric)
        w, d_mu, d_sigma = params[:3]  # the plan's mass moved at all (U1 → P(W ≠ 0) as b → 0)
        return jnp.sum(jnp.where((d_mu != 0) | (d_sigma != 0), w, 0.0), axis=(-2, -1))

    def bracket(self, level, noise, params, eps, target):
        """Theorem 2 in its valid (max) form with the same plan (a first guess for Gaussian noise,
        which the search may double)."""
        w, d_mu, d_sigma = params[:3]
        cost = theorem1_scale(d_mu, d_sigma, 1.0, tau_star_unchecked(jnp.asarray(target)[..., None, None], "exact"))
        hi = jnp.maximum(mixture_theorem_scale(w, cost, eps, "max"), 1e-300)
        return hi, hi, jnp.full(hi.shape, jnp.inf)

    def prune_bound(self, noise, params, b, eps, symmetric):
        """The plan's coupling bound (24), ≥ the exact δ."""
        return self.delta("coupling", noise, params, b, eps, symmetric)

    def exact_is_cheap(self, noise, zero):
        return False


register(MixtureFamily())
