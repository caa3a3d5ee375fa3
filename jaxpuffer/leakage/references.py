"""References for the leakage measures (MATH.md §10): the closed form for two Gaussians, 1-D
adaptive quadrature with its error estimate, and Monte Carlo with a confidence interval (any d).
KL between mixtures has no closed form."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from scipy import integrate

from .mixtures import MultivariateGaussianMixture


def kl_gaussians(mean_p, cov_p, mean_q, cov_q):
    """KL(N(m_p, S_p) ‖ N(m_q, S_q)) = ½[tr(S_q⁻¹S_p) + (m_q − m_p)ᵀS_q⁻¹(m_q − m_p) − d + log|S_q|/|S_p|],
    batched over leading axes."""
    mean_p, mean_q = jnp.asarray(mean_p, jnp.float64), jnp.asarray(mean_q, jnp.float64)
    cov_p, cov_q = jnp.asarray(cov_p, jnp.float64), jnp.asarray(cov_q, jnp.float64)
    d = mean_p.shape[-1]
    solve = jnp.linalg.solve(cov_q, cov_p)
    diff = mean_q - mean_p
    maha = jnp.sum(diff * jnp.linalg.solve(cov_q, diff[..., None])[..., 0], axis=-1)
    log_ratio = jnp.linalg.slogdet(cov_q)[1] - jnp.linalg.slogdet(cov_p)[1]
    return 0.5 * (jnp.trace(solve, axis1=-2, axis2=-1) + maha - d + log_ratio)


def bhattacharyya_gaussians(mean_p, cov_p, mean_q, cov_q):
    """The Bhattacharyya distance −log ∫ √(N(m_p, S_p) N(m_q, S_q)) = ⅛ Δᵀ S̄⁻¹ Δ + ½ log(|S̄| / √(|S_p||S_q|)),
    S̄ = (S_p + S_q)/2, Δ = m_p − m_q, batched over leading axes."""
    mean_p, mean_q = jnp.asarray(mean_p, jnp.float64), jnp.asarray(mean_q, jnp.float64)
    cov_p, cov_q = jnp.asarray(cov_p, jnp.float64), jnp.asarray(cov_q, jnp.float64)
    mid = 0.5 * (cov_p + cov_q)
    diff = mean_p - mean_q
    maha = jnp.sum(diff * jnp.linalg.solve(mid, diff[..., None])[..., 0], axis=-1)
    log_dets = jnp.linalg.slogdet(mid)[1] - 0.5 * (jnp.linalg.slogdet(cov_p)[1] + jnp.linalg.slogdet(cov_q)[1])
    return 0.125 * maha + 0.5 * log_dets


def _one_dim(mixture: MultivariateGaussianMixture):
    if mixture.dim != 1 or mixture.batch_shape:
        raise ValueError("1-D quadrature needs one mixture (no batch shape) with d = 1")
    return np.asarray(mixture.weights), np.asarray(mixture.means[:, 0]), np.sqrt(np.asarray(mixture.covs[:, 0, 0]))


def _log_pdf_1d(x, w, m, s):
    z = (x - m) / s
    with np.errstate(divide="ignore"):  # a zero weight: log 0 = −inf, dropped by the log-sum-exp
        return np.logaddexp.reduce(np.log(w) - 0.5 * z * z - np.log(s) - 0.5 * math.log(2 * math.pi))


def _quad_1d(f, w, m, s):
    """∫ f over ℝ, split at every component mean ± 12σ (scipy quad on each piece); (value, error)."""
    cuts = np.unique(np.concatenate([m - 12 * s, m, m + 12 * s]))
    pieces = [(-np.inf, cuts[0])] + list(zip(cuts[:-1], cuts[1:])) + [(cuts[-1], np.inf)]
    out = [integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200) for lo, hi in pieces]
    return math.fsum(v for v, _ in out), math.fsum(e for _, e in out)


def entropy_quadrature_1d(p, r=None):
    """−E_P log R (R = P by default: the entropy H(P); else the cross-entropy H(P, R)) for 1-D
    mixtures by adaptive quadrature; returns (value, quadrature error estimate)."""
    wp, mp_, sp = _one_dim(p)
    wr, mr, sr = _one_dim(p if r is None else r)
    f = lambda x: -math.exp(_log_pdf_1d(x, wp, mp_, sp)) * _log_pdf_1d(x, wr, mr, sr)  # noqa: E731
    return _quad_1d(f, np.concatenate([wp, wr]), np.concatenate([mp_, mr]), np.concatenate([sp, sr]))


def kl_quadrature_1d(p, q):
    """KL(P‖Q) = ∫ P log(P/Q) for 1-D mixtures by adaptive quadrature; (value, error estimate)."""
    wp, mp_, sp = _one_dim(p)
    wq, mq, sq = _one_dim(q)

    def f(x):
        lp = _log_pdf_1d(x, wp, mp_, sp)
        return math.exp(lp) * (lp - _log_pdf_1d(x, wq, mq, sq))

    return _quad_1d(f, np.concatenate([wp, wq]), np.concatenate([mp_, mq]), np.concatenate([sp, sq]))


def kl_monte_carlo(key, p, q, draws: int = 1_000_000):
    """KL(P‖Q) = E_P[log P − log Q] by Monte Carlo over ``draws`` samples of P, for mixtures of any
    d and batch shape; returns (mean, standard error) per pair — mean ± 3.29·se is a 99.9% interval."""
    x = p.sample(key, draws)
    diff = p.log_density(x) - q.log_density(x)
    return jnp.mean(diff, axis=0), jnp.std(diff, axis=0) / math.sqrt(draws)


def renyi_gaussians(alpha, mean_p, cov_p, mean_q, cov_q):
    """The Rényi divergence of order α > 1 between N(m_p, S_p) and N(m_q, S_q):
    D_α = (α/2) Δᵀ S_α⁻¹ Δ − log(|S_α| / (|S_p|^{1−α} |S_q|^α)) / (2(α − 1)), S_α = α S_q + (1 − α) S_p,
    Δ = m_p − m_q; +inf where S_α is not positive definite (the integral diverges)."""
    mean_p, mean_q = jnp.asarray(mean_p, jnp.float64), jnp.asarray(mean_q, jnp.float64)
    cov_p, cov_q = jnp.asarray(cov_p, jnp.float64), jnp.asarray(cov_q, jnp.float64)
    s_a = alpha * cov_q + (1.0 - alpha) * cov_p
    sign, log_det = jnp.linalg.slogdet(s_a)
    pd = (sign > 0) & jnp.all(jnp.linalg.eigvalsh(s_a) > 0, axis=-1)
    diff = mean_p - mean_q
    maha = jnp.sum(diff * jnp.linalg.solve(s_a, diff[..., None])[..., 0], axis=-1)
    value = 0.5 * alpha * maha - (log_det - (1.0 - alpha) * jnp.linalg.slogdet(cov_p)[1] - alpha * jnp.linalg.slogdet(cov_q)[1]) / (2.0 * (alpha - 1.0))
    return jnp.where(pd, value, jnp.inf)


def renyi_quadrature_1d(alpha, p, q):
    """D_α(P‖Q) = log(∫ P^α Q^{1−α})/(α − 1) for 1-D mixtures by adaptive quadrature; (value, error
    estimate of the integral, relative). (+inf, 0) where the integral diverges: α σ_Q,max² + (1 − α)
    σ_P,max² ≤ 0 for the widest components (the equality case, decided by the linear terms, is
    reported divergent too)."""
    wp, mp_, sp = _one_dim(p)
    wq, mq, sq = _one_dim(q)
    if alpha * np.max(sq[wq > 0]) ** 2 + (1.0 - alpha) * np.max(sp[wp > 0]) ** 2 <= 0:
        return math.inf, 0.0  # the widest components' tails: P^α Q^{1−α} ~ e^{−x² S_α/(2 σ_P² σ_Q²)}, S_α ≤ 0
    f = lambda x: math.exp(alpha * _log_pdf_1d(x, wp, mp_, sp) + (1.0 - alpha) * _log_pdf_1d(x, wq, mq, sq))  # noqa: E731
    integral, err = _quad_1d(f, np.concatenate([wp, wq]), np.concatenate([mp_, mq]), np.concatenate([sp, sq]))
    return math.log(integral) / (alpha - 1.0), err / integral


def renyi_to_dp(alpha, renyi, delta):
    """(ε, δ)-DP from a Rényi divergence bound D_α ≤ ρ (Mironov 2017, Proposition 3):
    ε = ρ + log(1/δ)/(α − 1) — to compare a Rényi leakage with the hockey-stick calibrations."""
    return renyi + math.log(1.0 / delta) / (alpha - 1.0) if not hasattr(renyi, "shape") else renyi + jnp.log(1.0 / delta) / (alpha - 1.0)
