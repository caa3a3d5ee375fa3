"""Certified brackets on KL(P‖Q) between Gaussian mixtures, from closed-form Gaussian quantities
only (Hershey & Olsen 2007; Durrieu, Thiran & Kelly 2012), any d, batched over pairs.

With P = Σ_a π_a f_a, Q = Σ_b ω_b g_b, D_ab = KL(f_a‖g_b), D'_aα = KL(f_a‖f_α), z_ab = ∫ f_a g_b,
and H_a the entropy of f_a:

* **lower**: E_P log P ≥ Σ_a π_a [log Σ_α π_α e^{−D'_aα} − H_a] (Jensen on log Σ_α, the best
  weights φ_α ∝ π_α e^{−D'_aα}) and E_P log Q ≤ Σ_a π_a log Σ_b ω_b z_ab (Jensen), so
  KL ≥ Σ_a π_a [log Σ_α π_α e^{−D'_aα} − H_a − log Σ_b ω_b z_ab];
* **upper** (the variational upper bound): for any φ_ab ≥ 0 with Σ_b φ_ab = π_a and ψ_ab ≥ 0 with
  Σ_a ψ_ab = ω_b, joint convexity of KL gives KL ≤ Σ_ab φ_ab [log(φ_ab/ψ_ab) + D_ab]; the fixed-point
  updates φ_ab = π_a ψ_ab e^{−D_ab}/Σ_b' ψ_ab' e^{−D_ab'}, ψ_ab = ω_b φ_ab/Σ_a' φ_a'b lower it, and every
  iterate is a valid bound.
* **Rényi upper**: ∫ P^α Q^{1−α} is jointly convex for α > 1 (the perspective of t^α), so for any
  coupling γ of the weights (Σ_b γ_ab = π_a, Σ_a γ_ab = ω_b)
  D_α(P‖Q) ≤ log Σ_ab γ_ab e^{(α−1) D_α(f_a‖g_b)} / (α − 1); the smaller of two plans is taken, the
  product πωᵀ and the index-matched plan (min(π_a, ω_a) on the diagonal, the rest as a product),
  which is the right one after masking (component a of Q is component a of P perturbed).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from .moments import _log_product_integral, precisions_and_log_dets
from .references import kl_gaussians, renyi_gaussians

_UPPER_STEPS = 50


def _pairwise_kl(p, q):
    """D_ab = KL(p_a ‖ q_b), shape (..., K_P, K_Q)."""
    return kl_gaussians(p.means[..., :, None, :], p.covs[..., :, None, :, :], q.means[..., None, :, :], q.covs[..., None, :, :, :])


def _log_overlap(p, q):
    """log z_ab = log ∫ p_a q_b (one pair of mixtures, no batch shape)."""
    kp, kq = p.components, q.components
    counts = jnp.concatenate([jnp.broadcast_to(jnp.eye(kp)[:, None, :], (kp, kq, kp)), jnp.broadcast_to(jnp.eye(kq)[None, :, :], (kp, kq, kq))], axis=-1)
    covs = jnp.concatenate([p.covs, q.covs], axis=0)
    return _log_product_integral(counts, jnp.concatenate([p.means, q.means], axis=0), *precisions_and_log_dets(covs))


@jax.jit
def kl_lower(p, q):
    """A certified lower bound on KL(P‖Q) (one pair; ``jax.vmap`` over pairs), at least 0."""
    d = p.dim
    entropies = 0.5 * (d * math.log(2 * math.pi * math.e) + jnp.linalg.slogdet(p.covs)[1])
    self_term = jax.scipy.special.logsumexp(-_pairwise_kl(p, p), b=p.weights[None, :], axis=-1)
    cross = jax.scipy.special.logsumexp(_log_overlap(p, q), b=q.weights[None, :], axis=-1)
    return jnp.maximum(jnp.sum(p.weights * (self_term - entropies - cross)), 0.0)


@functools.partial(jax.jit, static_argnames=("steps",))
def kl_upper(p, q, steps: int = _UPPER_STEPS):
    """The variational upper bound on KL(P‖Q) after ``steps`` fixed-point updates (one pair)."""
    dist = _pairwise_kl(p, q)
    live_p, live_q = (p.weights > 0)[:, None], (q.weights > 0)[None, :]  # zero-weight components carry no plan
    live = live_p & live_q
    log_pi, log_om = jnp.log(p.weights)[:, None], jnp.log(q.weights)[None, :]
    lse = jax.scipy.special.logsumexp

    def plan(log_psi):  # φ_ab = π_a ψ_ab e^{−D_ab} / Σ_b' ψ_ab' e^{−D_ab'}
        scores = jnp.where(live, log_psi - dist, -jnp.inf)
        return jnp.where(live, log_pi + scores - lse(scores, axis=1, keepdims=True), -jnp.inf)

    def step(_, log_psi):  # ψ_ab = ω_b φ_ab / Σ_a' φ_a'b
        log_phi = plan(log_psi)
        return jnp.where(live, log_om + log_phi - lse(log_phi, axis=0, keepdims=True), -jnp.inf)

    log_psi = jax.lax.fori_loop(0, steps, step, jnp.where(live, log_pi + log_om, -jnp.inf))  # ψ = πω: feasible
    log_phi = plan(log_psi)
    terms = jnp.where(live, jnp.exp(log_phi) * (log_phi - jnp.where(live, log_psi, 0.0) + dist), 0.0)
    return jnp.sum(terms)


def _matched_plan(w_p, w_q):
    """The coupling with min(w_p[a], w_q[a]) on the diagonal and the remainders as a product."""
    k = min(w_p.shape[-1], w_q.shape[-1])
    common = jnp.minimum(w_p[:k], w_q[:k])
    rest_p, rest_q = w_p.at[:k].add(-common), w_q.at[:k].add(-common)
    left = jnp.sum(rest_p)
    diag = jnp.zeros((w_p.shape[-1], w_q.shape[-1])).at[jnp.arange(k), jnp.arange(k)].set(common)
    return diag + jnp.where(left > 0, jnp.outer(rest_p, rest_q) / jnp.where(left > 0, left, 1.0), 0.0)


@jax.jit
def renyi_upper(alpha, p, q):
    """A certified upper bound on the Rényi divergence D_α(P‖Q), α > 1, between Gaussian mixtures
    (one pair; ``jax.vmap`` over pairs); +inf where every plan meets a divergent component pair."""
    dist = renyi_gaussians(alpha, p.means[:, None, :], p.covs[:, None], q.means[None, :, :], q.covs[None, :])

    def through(plan):
        scores = jnp.where(plan > 0, (alpha - 1.0) * dist, -jnp.inf)
        return jax.scipy.special.logsumexp(scores, b=plan) / (alpha - 1.0)

    return jnp.minimum(through(jnp.outer(p.weights, q.weights)), through(_matched_plan(p.weights, q.weights)))
