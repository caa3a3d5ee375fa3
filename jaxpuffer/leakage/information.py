"""Mutual information of a Gaussian release (the GMM-masking paper's Definitions 4 and 6 and its
Theorem 4.3, ``../shared/papers/002``; MATH.md §10), with certified closed-form brackets and
references (1-D quadrature with an error estimate, Monte Carlo with a standard error).

Two quantities, for a release Y = X + N(0, σ² I_d):

* **the data and the release**, I(X; Y) = h(P ⊛ N) − (d/2) log(2πe σ²) for X ~ P (a mixture);
* **a secret and the release**, I(S; Y) for a binary secret S (s_i with probability π, else s_j)
  and X | S = s ~ P_s. With R_s = P_s ⊛ N (pass the convolved mixtures, ``P.convolved(σ)``),
  I(S; Y) = π KL(R_i ‖ M) + (1 − π) KL(R_j ‖ M), M = π R_i + (1 − π) R_j, at most H(π) ≤ log 2.
  Mutual-information pufferfish privacy (Definition 4's MIDP with the pufferfish secrets) asks
  I(S; Y) ≤ ε for every pair and prior.

**Brackets** (Kolchinsky & Tracey 2017, "Estimating mixture entropy with pairwise distances"): for a
mixture Σ c_a f_a, with H_a the entropy of f_a,
Σ c_a H_a − Σ_a c_a log Σ_b c_b e^{−C(f_a, f_b)} ≤ h ≤ Σ c_a H_a − Σ_a c_a log Σ_b c_b e^{−KL(f_a‖f_b)},
C the Bhattacharyya distance (a Chernoff-½ divergence). The upper side follows from the convexity
of log-sum-exp: E_{f_a} log Σ_b c_b f_b ≥ log Σ_b c_b e^{E_{f_a} log f_b}. For I(X; Y) the upper side
is also capped by the Gaussian of the same covariance (maximum entropy). For I(S; Y) the same
upper bound over the two "components" R_i, R_j gives
I(S; Y) ≤ −π log(π + (1 − π) e^{−KL(R_i‖R_j)}) − (1 − π) log(1 − π + π e^{−KL(R_j‖R_i)}),
and it stays valid with each KL replaced by an upper bound (:func:`.bounds.kl_upper`).

**Theorem 4.3** states ε-MIPP for Gaussian noise once
σ² ≥ sup Σ_ml w*_ml Σ_v (|μ_i,m(v) − μ_j,l(v)|² + τ*(δ)² |σ_i,m(v) − σ_j,l(v)|²) / (d (e^{2ε/d} − 1)).
The paper leaves w* and τ*(δ) undefined beyond "τ* = min{τ : P(Z_G > τ) ≤ δ/2}"; read here as an
optimal coupling of the component weights for that cost (a linear programme) and the standard
normal quantile (τ = 1 gives the squared 2-Wasserstein distance of per-coordinate couplings, the
smallest value the formula can take). :func:`theorem43_variance` computes it; the tests check
it against the exact I(S; Y) (quadrature, the worst prior π) and record how loose it is.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize, special

from .bounds import _pairwise_kl, kl_upper
from .mixtures import MultivariateGaussianMixture
from .references import _one_dim, _quad_1d, _log_pdf_1d, bhattacharyya_gaussians


def _component_entropies(m):
    return 0.5 * (m.dim * math.log(2 * math.pi * math.e) + jnp.linalg.slogdet(m.covs)[1])


def _pairwise_term(m, dist):
    """Σ_a c_a log Σ_b c_b e^{−dist_ab} (zero weights drop out)."""
    inner = jax.scipy.special.logsumexp(-dist, b=m.weights[..., None, :], axis=-1)
    return jnp.sum(jnp.where(m.weights > 0, m.weights * inner, 0.0), axis=-1)


@jax.jit
def entropy_bounds(m: MultivariateGaussianMixture):
    """(lower, upper) on the differential entropy h(P) of a mixture (nats; one mixture, ``jax.vmap``
    over many): the pairwise-distance bracket, the upper side capped by the maximum-entropy Gaussian."""
    base = jnp.sum(m.weights * _component_entropies(m), axis=-1)
    bhat = bhattacharyya_gaussians(m.means[:, None, :], m.covs[:, None], m.means[None, :, :], m.covs[None, :])
    lower = base - _pairwise_term(m, bhat)
    upper = base - _pairwise_term(m, _pairwise_kl(m, m))
    mean = m.weights @ m.means
    second = jnp.einsum("k,kij->ij", m.weights, m.covs + m.means[:, :, None] * m.means[:, None, :])
    gaussian = 0.5 * (m.dim * math.log(2 * math.pi * math.e) + jnp.linalg.slogdet(second - jnp.outer(mean, mean))[1])
    return lower, jnp.minimum(upper, gaussian)


def _gaussian_noise_entropy(d, sigma):
    return 0.5 * d * (math.log(2 * math.pi * math.e) + 2.0 * jnp.log(sigma))


def release_information_bounds(p: MultivariateGaussianMixture, sigma):
    """(lower, upper) on I(X; X + N(0, σ² I)) for X ~ P, in nats, from :func:`entropy_bounds` of
    P ⊛ N minus the noise entropy (d/2) log(2πe σ²); the lower side is floored at 0."""
    lower, upper = entropy_bounds(p.convolved(sigma))
    noise = _gaussian_noise_entropy(p.dim, sigma)
    return jnp.maximum(lower - noise, 0.0), upper - noise


def release_information_quadrature_1d(p: MultivariateGaussianMixture, sigma: float):
    """I(X; X + N(0, σ²)) for a 1-D mixture P by adaptive quadrature of h(P ⊛ N); (value, error)."""
    w, m, s = _one_dim(p.convolved(sigma))
    value, err = _quad_1d(lambda x: -math.exp(_log_pdf_1d(x, w, m, s)) * _log_pdf_1d(x, w, m, s), w, m, s)
    return value - float(_gaussian_noise_entropy(1, sigma)), err


def release_information_monte_carlo(key, p: MultivariateGaussianMixture, sigma, draws: int = 1_000_000):
    """I(X; X + N(0, σ² I)) by Monte Carlo of h(P ⊛ N) = −E log(P ⊛ N)(Y), any d and batch shape;
    (mean, standard error)."""
    noisy = p.convolved(sigma)
    logs = -noisy.log_density(noisy.sample(key, draws))
    return jnp.mean(logs, axis=0) - _gaussian_noise_entropy(p.dim, sigma), jnp.std(logs, axis=0) / math.sqrt(draws)


def _two_point_upper(prior, kl_ij, kl_ji):
    return -prior * jnp.log(prior + (1.0 - prior) * jnp.exp(-kl_ij)) - (1.0 - prior) * jnp.log(1.0 - prior + prior * jnp.exp(-kl_ji))


@jax.jit
def secret_information_upper(r_i: MultivariateGaussianMixture, r_j: MultivariateGaussianMixture, prior=0.5):
    """A certified upper bound on I(S; Y) for a binary secret with P(S = s_i) = ``prior`` and
    Y | s ~ R_s (the released, noise-convolved mixtures; one pair, ``jax.vmap`` over pairs)."""
    return _two_point_upper(prior, kl_upper(r_i, r_j), kl_upper(r_j, r_i))


def _secret_terms(y, r_i, r_j, prior):
    """(log R_i, log R_j, log M) at points y, M = π R_i + (1 − π) R_j."""
    log_i, log_j = r_i.log_density(y), r_j.log_density(y)
    return log_i, log_j, jnp.logaddexp(math.log(prior) + log_i, math.log1p(-prior) + log_j)


def secret_information_quadrature_1d(r_i: MultivariateGaussianMixture, r_j: MultivariateGaussianMixture, prior: float = 0.5):
    """I(S; Y) for 1-D released mixtures R_i, R_j by adaptive quadrature; (value, error estimate)."""
    _validate_prior(prior)
    wi, mi, si = _one_dim(r_i)
    wj, mj, sj = _one_dim(r_j)

    def f(x):
        li, lj = _log_pdf_1d(x, wi, mi, si), _log_pdf_1d(x, wj, mj, sj)
        lm = np.logaddexp(math.log(prior) + li, math.log1p(-prior) + lj)
        return prior * math.exp(li) * (li - lm) + (1.0 - prior) * math.exp(lj) * (lj - lm)

    return _quad_1d(f, np.concatenate([wi, wj]), np.concatenate([mi, mj]), np.concatenate([si, sj]))


def secret_information_monte_carlo(key, r_i, r_j, prior: float = 0.5, draws: int = 1_000_000):
    """I(S; Y) by Monte Carlo (any d and batch shape): π E_{R_i} log(R_i/M) + (1 − π) E_{R_j} log(R_j/M)
    on independent draws; (mean, standard error)."""
    _validate_prior(prior)
    k_i, k_j = jax.random.split(key)
    li, _, lm = _secret_terms(r_i.sample(k_i, draws), r_i, r_j, prior)
    a = li - lm
    _, lj, lm = _secret_terms(r_j.sample(k_j, draws), r_i, r_j, prior)
    b = lj - lm
    mean = prior * jnp.mean(a, axis=0) + (1.0 - prior) * jnp.mean(b, axis=0)
    var = prior**2 * jnp.var(a, axis=0) + (1.0 - prior) ** 2 * jnp.var(b, axis=0)
    return mean, jnp.sqrt(var / draws)


def _validate_prior(prior):
    if not 0.0 < float(prior) < 1.0:
        raise ValueError(f"prior must be in (0, 1) (the probability of secret s_i); got {prior}")


def tau_star(delta: float) -> float:
    """Theorem 4.3's τ*(δ) = min{τ : P(Z > τ) ≤ δ/2}, read with Z standard normal: Φ⁻¹(1 − δ/2)."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta}")
    return float(-special.ndtri(delta / 2.0))


def theorem43_variance(p_i: MultivariateGaussianMixture, p_j: MultivariateGaussianMixture, eps: float, *, tau: float = 1.0) -> float:
    """Theorem 4.3's σ² for one pair of priors with diagonal covariances (the theorem is stated per
    coordinate): the optimal-coupling cost Σ_ml w*_ml Σ_v (|Δμ(v)|² + τ² |Δσ(v)|²) over
    d (e^{2ε/d} − 1). ``tau`` = :func:`tau_star` (δ) for the paper's δ-dependent form; the default
    τ = 1 is its smallest (2-Wasserstein) reading."""
    eps = float(eps)
    if not eps > 0:
        raise ValueError(f"eps must be > 0; got {eps}")
    if p_i.dim != p_j.dim or p_i.batch_shape or p_j.batch_shape:
        raise ValueError("p_i and p_j must be single mixtures of the same dimension d")
    stds = []
    for name, m in (("p_i", p_i), ("p_j", p_j)):
        covs = np.asarray(m.covs)
        diag = np.diagonal(covs, axis1=-2, axis2=-1)
        if np.any(covs - diag[..., :, None] * np.eye(m.dim) != 0):
            raise ValueError(f"{name} must have diagonal covariances (Theorem 4.3 is stated per coordinate)")
        stds.append(np.sqrt(diag))
    mean_gap = np.asarray(p_i.means)[:, None, :] - np.asarray(p_j.means)[None, :, :]
    cost = np.sum(mean_gap**2 + tau**2 * (stds[0][:, None, :] - stds[1][None, :, :]) ** 2, axis=-1)
    w_i, w_j = np.asarray(p_i.weights), np.asarray(p_j.weights)
    k_i, k_j = cost.shape
    rows = np.kron(np.eye(k_i), np.ones(k_j))  # Σ_l w_ml = w_i[m]
    cols = np.kron(np.ones(k_i), np.eye(k_j))  # Σ_m w_ml = w_j[l]
    plan = optimize.linprog(cost.ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([w_i, w_j]), bounds=(0, None), method="highs")
    if plan.status != 0:
        raise RuntimeError(f"the coupling linear programme failed: {plan.message}")
    d = p_i.dim
    return float(plan.fun) / (d * math.expm1(2.0 * eps / d))
