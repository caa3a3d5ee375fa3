"""Calibration to a leakage target: the smallest std σ of Gaussian noise N(0, σ² I) added to a
released value whose distribution is the mixture P (secret one) or Q (secret two) such that the
leakage of the noisy release R_P = P ⊛ N, R_Q = Q ⊛ N is ≤ target (the convolved mixtures are
mixtures with covariances S + σ² I). A leakage measure is a small object with two methods:

* ``upper(r_p, r_q)``: a certified upper bound, jit-able, any d (:mod:`.bounds`, :mod:`.information`);
* ``quadrature(r_p, r_q)``: (value, error estimate) for d = 1 (:mod:`.references`, :mod:`.information`).

Three are defined: :class:`KL` (KL(R_P‖R_Q)), :class:`Renyi` (D_α(R_P‖R_Q), Definition 6's
Rényi pufferfish privacy, eq. (9)) and :class:`SecretInformation` (I(S; Y) for a binary secret,
Definition 4's mutual-information privacy, eq. (7)). A new measure is one more such class.

``method="bound"`` (any d, jit-able, batched with vmap) certifies through the measure's upper
bound; it is safe but can be loose: on MATH.md §10's pair the KL bound asks 8.7× the σ that the
exact KL needs at a target of 0.01 (the bound charges every pair of components for its mean gap, the
exact KL only the mixtures' overall difference). ``method="quadrature"`` (d = 1) solves the exact
leakage by 1-D adaptive quadrature and brentq, and keeps the answer only where the value plus ten
times the quadrature's error estimate is ≤ target at the returned σ (rounded up).

Each bound is non-increasing in σ (each component divergence is, by data processing, and the bound
is a non-decreasing function of them for a fixed plan, minimised over plans), so a bisection on
log σ finds the smallest σ at which it is ≤ target; the answer is the feasible end, evaluated with
the same arithmetic (so verified). True leakage ≤ bound ≤ target: the answer is safe, and at most
as noisy as the bound is loose. Its derivatives (``jax.grad`` in the mixtures' parameters and the
target) are implicit: at the crossing U(σ) = target, dσ = −(∂U/∂θ dθ − d target)/(∂U/∂σ)
(:func:`jaxpuffer._roots.feasible_end`), not the bisection's own derivative (which is wrong: its
bracket moves with the means).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from scipy import optimize

from .. import _validate
from .._roots import feasible_end
from .bounds import kl_upper, renyi_upper
from .information import _validate_prior, secret_information_quadrature_1d, secret_information_upper
from .mixtures import MultivariateGaussianMixture
from .references import kl_quadrature_1d, renyi_quadrature_1d

_STEPS = 80  # halvings of a log-σ bracket 60 wide: 60·2^−80 ≈ 5e-23


@dataclasses.dataclass(frozen=True)
class KL:
    """KL(R_P ‖ R_Q) in nats."""

    def upper(self, r_p, r_q):
        return kl_upper(r_p, r_q)

    def quadrature(self, r_p, r_q):
        return kl_quadrature_1d(r_p, r_q)


@dataclasses.dataclass(frozen=True)
class Renyi:
    """The Rényi divergence D_α(R_P ‖ R_Q) of order α > 1 (eq. (9))."""

    alpha: float

    def __post_init__(self):
        if not float(self.alpha) > 1.0:
            raise ValueError(f"alpha must be > 1; got {self.alpha}")

    def upper(self, r_p, r_q):
        return renyi_upper(self.alpha, r_p, r_q)

    def quadrature(self, r_p, r_q):
        value, rel = renyi_quadrature_1d(self.alpha, r_p, r_q)  # rel: the integral's relative error
        return value, -math.log1p(-min(rel, 0.5)) / (self.alpha - 1.0)


@dataclasses.dataclass(frozen=True)
class SecretInformation:
    """I(S; Y) for a binary secret, P(S = P's secret) = ``prior`` (eq. (7))."""

    prior: float = 0.5

    def __post_init__(self):
        _validate_prior(self.prior)

    def upper(self, r_p, r_q):
        return secret_information_upper(r_p, r_q, self.prior)

    def quadrature(self, r_p, r_q):
        return secret_information_quadrature_1d(r_p, r_q, self.prior)


def _bound_at(measure, log_sigma, p, q):
    """The measure's upper bound on the leakage of P ⊛ N(0, σ²I) against Q ⊛ N(0, σ²I)."""
    return measure.upper(p.convolved(jnp.exp(log_sigma)), q.convolved(jnp.exp(log_sigma)))


@functools.partial(jax.jit, static_argnames=("measure",))
def _noise_for(p, q, target, measure):
    spread = jnp.max(jnp.linalg.norm(p.means[:, None, :] - q.means[None, :, :], axis=-1))
    spread = jnp.maximum(spread, jnp.sqrt(jnp.max(jnp.concatenate([jnp.trace(p.covs, axis1=-2, axis2=-1), jnp.trace(q.covs, axis1=-2, axis2=-1)]))))
    bound = lambda log_sigma, p_, q_: _bound_at(measure, log_sigma, p_, q_)  # noqa: E731
    # (target carries a 1e-12 relative margin: see noise_for_leakage)
    c, found = feasible_end(bound, (p, q), target, jnp.log(spread) - 30.0, jnp.log(spread) + 30.0, _STEPS)
    no_noise = measure.upper(*jax.lax.stop_gradient((p, q))) <= jax.lax.stop_gradient(target)
    return jnp.where(no_noise, 0.0, jnp.where(found, jnp.exp(c), jnp.nan))


def noise_for_leakage(p: MultivariateGaussianMixture, q: MultivariateGaussianMixture, target, measure=KL(), *, method: str = "bound"):
    """The smallest σ with leakage(P ⊛ N(0, σ²I), Q ⊛ N(0, σ²I)) ≤ ``target`` for one pair of
    mixtures of the same dimension, ``measure`` one of :class:`KL` (default), :class:`Renyi`,
    :class:`SecretInformation`: certified by the measure's upper bound (``"bound"``; ``jax.vmap``
    over pairs; ~1e-15 relative on the bound; ``jax.grad`` in the mixtures' parameters and the
    target by implicit differentiation at the crossing) or by quadrature (``"quadrature"``, d = 1;
    scipy, not traced). 0 where no noise is needed; NaN where the target is out of reach of the
    search."""
    if p.dim != q.dim:
        raise ValueError(f"p and q must have the same dimension d; got {p.dim} and {q.dim}")
    _validate.choice("method", method, ("bound", "quadrature"))
    if not hasattr(measure, "upper") or not hasattr(measure, "quadrature"):
        raise ValueError(f"measure must be a leakage measure (KL(), Renyi(alpha), SecretInformation(prior)); got {measure!r}")
    target = _validate.float_array("target", target)
    _validate.positive("target", target)
    if method == "bound":  # a 1e-12 relative margin: re-evaluations in another program may differ by ulps
        return _noise_for(p, q, target * (1.0 - 1e-12), measure)
    if p.dim != 1:
        raise ValueError(f"method='quadrature' needs d = 1; got d = {p.dim}")
    goal = float(target)

    def excess(sigma):
        value, err = measure.quadrature(p.convolved(sigma), q.convolved(sigma))
        return value + 10.0 * err - goal

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e12:
            return math.nan
    sigma = optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=1e-13)
    for _ in range(60):  # round up until verified
        if excess(sigma) <= 0:
            return sigma
        sigma *= 1.0 + 1e-12
    return math.nan


def noise_for_kl(p: MultivariateGaussianMixture, q: MultivariateGaussianMixture, target, *, method: str = "bound"):
    """:func:`noise_for_leakage` with the KL measure."""
    return noise_for_leakage(p, q, target, KL(), method=method)
