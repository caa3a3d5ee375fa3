"""Fitting Gaussian-mixture priors to data by EM, in JAX (the Gaussian-priors paper, Section V).

``fit_gmm`` runs EM for one data set or a batch of them (leading axes), each with optional
per-sample weights, so ragged groups are one padded batch with zero weights on the padding.
Initialization: k-means++ (D²-weighted sampling of the centres, deterministic for a key) or
weighted quantiles. The variance floor is *added* to every M-step variance (as scikit-learn's
``reg_covar``), which keeps a component from collapsing onto one repeated value — the usual fate
of integer-valued data such as Adult's education-num; for such data a floor near 1/12 (the
variance of a unit-width uniform, i.e. treating each integer as a unit bin) is a sensible choice.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.nn import logsumexp

from . import _validate
from ._progress import ProgressBar
from .priors import GaussianMixture

INITS = ("kmeans++", "quantile")
_LOG_2PI = float(np.log(2 * np.pi))


class GMMFit(NamedTuple):
    """Result of :func:`fit_gmm`: the fitted ``prior``, the mean log-likelihood per (weighted)
    sample, whether the EM converged (change ≤ tol) and the iterations used."""

    prior: GaussianMixture
    log_likelihood: jax.Array
    converged: jax.Array
    iterations: jax.Array


def _log_joint(x, alpha, mu, var):
    """log α_m + log N(x_n; μ_m, var_m), shape (n, k)."""
    return jnp.log(alpha) - 0.5 * (_LOG_2PI + jnp.log(var) + (x[:, None] - mu) ** 2 / var)


def _kmeans_pp(key, x, w, k):
    """k-means++ centres: the first drawn ∝ w, each next ∝ w · D² to the nearest centre."""
    keys = jax.random.split(key, k)
    first = x[jax.random.choice(keys[0], x.shape[0], p=w / jnp.sum(w))]
    centres = jnp.full(k, first)

    def pick(m, centres):
        d2 = jnp.min(jnp.where(jnp.arange(k) < m, (x[:, None] - centres) ** 2, jnp.inf), axis=1)
        p = w * d2
        p = jnp.where(jnp.sum(p) > 0, p / jnp.where(jnp.sum(p) > 0, jnp.sum(p), 1.0), w / jnp.sum(w))
        return centres.at[m].set(x[jax.random.choice(keys[m], x.shape[0], p=p)])

    return jax.lax.fori_loop(1, k, pick, centres)


def _weighted_quantiles(x, w, k):
    order = jnp.argsort(x)
    cdf = jnp.cumsum(w[order]) / jnp.sum(w)
    targets = (jnp.arange(k) + 0.5) / k
    return x[order][jnp.clip(jnp.searchsorted(cdf, targets), 0, x.shape[0] - 1)]


def _initial(key, x, w, k, init, var_floor):
    mu = _kmeans_pp(key, x, w, k) if init == "kmeans++" else _weighted_quantiles(x, w, k)
    mean = jnp.sum(w * x) / jnp.sum(w)
    var = jnp.sum(w * (x - mean) ** 2) / jnp.sum(w) + var_floor
    return jnp.full(k, 1.0 / k), mu, jnp.full(k, var)


class _EMState(NamedTuple):
    """EM for a batch of data sets (leading axis), between blocks of iterations."""

    alpha: jax.Array
    mu: jax.Array
    var: jax.Array
    ll: jax.Array  # mean log-likelihood per (weighted) sample at (α, μ, var)
    converged: jax.Array
    it: jax.Array


def _loglik(x, w, alpha, mu, var):
    return jnp.sum(w * logsumexp(_log_joint(x, alpha, mu, var), axis=1)) / jnp.sum(w)


@partial(jax.jit, static_argnames=("k", "init"))
def _em_start(key, x, w, k, init, var_floor) -> _EMState:
    """The initial parameters of every data set (rows of x, w) and their log-likelihood."""
    alpha, mu, var = jax.vmap(lambda key, x, w: _initial(key, x, w, k, init, var_floor))(jax.random.split(key, x.shape[0]), x, w)
    ll = jax.vmap(_loglik)(x, w, alpha, mu, var)
    return _EMState(alpha, mu, var, ll, jnp.zeros(x.shape[0], bool), jnp.zeros(x.shape[0], int))


@jax.jit
def _em_advance(state: _EMState, x, w, var_floor, tol, until) -> _EMState:
    """EM steps on every data set until it converges (|Δ ll| ≤ tol) or has run ``until`` steps in all."""

    def one(state, x, w):
        total = jnp.sum(w)

        def step(state):
            alpha, mu, var, ll, _, it = state
            joint = _log_joint(x, alpha, mu, var)
            resp = jnp.exp(joint - logsumexp(joint, axis=1, keepdims=True)) * w[:, None]
            nk = jnp.sum(resp, axis=0)
            alive = nk > 1e-12 * total
            nk_safe = jnp.where(alive, nk, 1.0)
            mu_new = jnp.where(alive, jnp.sum(resp * x[:, None], axis=0) / nk_safe, mu)
            var_new = jnp.where(alive, jnp.sum(resp * (x[:, None] - mu_new) ** 2, axis=0) / nk_safe + var_floor, var)
            alpha_new = jnp.maximum(nk / total, 1e-300)
            ll_new = _loglik(x, w, alpha_new, mu_new, var_new)
            return _EMState(alpha_new, mu_new, var_new, ll_new, jnp.abs(ll_new - ll) <= tol, it + 1)

        return jax.lax.while_loop(lambda s: (~s.converged) & (s.it < until), step, state)

    return jax.vmap(one)(state, x, w)


def _em(key, x, w, k, init, var_floor, tol, max_iter, progress):
    """EM on every row of (x, w) from its initial parameters: one call (traceable under the user's
    ``jit``), or with a progress bar in blocks of max_iter/50 iterations, each resuming where the
    last stopped (the same steps)."""
    state = _em_start(key, x, w, k, init, var_floor)
    if not progress:
        return _em_advance(state, x, w, var_floor, tol, max_iter)
    n, block, done = x.shape[0], max(1, max_iter // 50), 0
    bar = ProgressBar(max_iter, f"fitting {n} mixtures by EM", "iterations")
    while done < max_iter:
        done = min(done + block, max_iter)
        state = _em_advance(state, x, w, var_floor, tol, done)
        finished = int(jnp.sum(state.converged))
        if finished == n or done == max_iter:
            bar(max_iter, f"{finished}/{n} converged (last after {int(jnp.max(state.it))})")
            break
        bar(done, f"{finished}/{n} converged")
    return state


@jax.jit
def _sorted_by_mean(state: _EMState):
    """(α, μ, σ) with the components sorted by mean (a canonical order), ll, converged, iterations."""
    order = jnp.argsort(state.mu, axis=-1)
    take = lambda a: jnp.take_along_axis(a, order, axis=-1)  # noqa: E731
    return take(state.alpha), take(state.mu), jnp.sqrt(take(state.var)), state.ll, state.converged, state.it


def fit_gmm(x, n_components: int, *, key, sample_weights=None, init: str = "kmeans++", var_floor: float = 1e-6,
            tol: float = 1e-10, max_iter: int = 1000, progress: bool = False) -> GMMFit:
    """Fit a 1-D Gaussian mixture to ``x`` (…, n) by EM: one fit per leading index (vmapped).

    Args:
      x: samples, last axis; leading axes are independent data sets.
      n_components: k ≥ 1.
      key: a ``jax.random`` key (the k-means++ draws; the fit is deterministic for a key).
      sample_weights: ≥ 0, same shape as x (0 = padding of a ragged group); default all 1.
      init: ``"kmeans++"`` or ``"quantile"`` (weighted quantiles at (m + ½)/k).
      var_floor: added to every component variance (scikit-learn's ``reg_covar``).
      tol: stop when the mean log-likelihood changes by ≤ tol; max_iter: iteration cap.
      progress: a bar on stderr (iterations run, data sets converged); EM then runs in blocks of
        max_iter/50 iterations, each resuming where the last stopped: the same fit.

    Returns:
      :class:`GMMFit`, components sorted by mean.
    """
    _validate.choice("init", init, INITS)
    x = _validate.float_array("x", x)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"x must have at least one sample along its last axis; got shape {x.shape}")
    if not isinstance(n_components, int) or n_components < 1:
        raise ValueError(f"n_components must be a positive integer; got {n_components!r}")
    w = jnp.ones_like(x) if sample_weights is None else _validate.float_array("sample_weights", sample_weights)
    if w.shape != x.shape:
        raise ValueError(f"sample_weights must have the shape of x {x.shape}; got {w.shape}")
    _validate.nonnegative("sample_weights", w)
    if _validate.is_concrete(w) and np.any(np.sum(np.asarray(w) > 0, axis=-1) < n_components):
        raise ValueError(f"every data set needs at least n_components = {n_components} samples with positive weight")
    if not (isinstance(var_floor, float) and var_floor > 0):
        raise ValueError(f"var_floor must be a positive float; got {var_floor!r}")
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0; got {tol!r}")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    batch, n = x.shape[:-1], x.shape[-1]
    state = _em(key, x.reshape(-1, n), w.reshape(-1, n), n_components, init, var_floor, tol, max_iter, progress)
    alpha, mu, std, ll, conv, it = (a.reshape(batch + a.shape[1:]) for a in _sorted_by_mean(state))
    return GMMFit(GaussianMixture.tree_unflatten(None, (alpha, mu, std)), ll, conv, it)


def priors_from_table(values, secrets, n_components: int, *, key, **fit_options):
    """One mixture per secret value: X | S = s fitted by :func:`fit_gmm` on the rows with S = s.

    Groups of different sizes are padded to the largest with zero sample weights and fitted in one
    batched call. Returns (the sorted distinct secrets, :class:`GMMFit` with batch shape
    (number of secrets,)). Rows whose value is not finite raise (drop missing values first).
    """
    values = np.asarray(values, dtype=float)
    secrets = np.asarray(secrets)
    if values.shape != secrets.shape or values.ndim != 1:
        raise ValueError(f"values and secrets must be 1-D arrays of one length; got {values.shape} and {secrets.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite (drop missing values first)")
    labels, index = np.unique(secrets, return_inverse=True)
    counts = np.bincount(index, minlength=labels.size)
    width = int(counts.max())
    x = np.zeros((labels.size, width))
    w = np.zeros((labels.size, width))
    for g in range(labels.size):  # building the padded table, once
        rows = values[index == g]
        x[g, : rows.size], w[g, : rows.size] = rows, 1.0
        x[g, rows.size:] = rows[0]
    return labels, fit_gmm(x, n_components, key=key, sample_weights=w, **fit_options)


class MultivariateGMMFit(NamedTuple):
    """Result of :func:`fit_gmm_nd`: the fitted ``mixture`` (a
    :class:`jaxpuffer.leakage.MultivariateGaussianMixture`), the mean log-likelihood per sample,
    whether EM converged within ``max_iter``, and the iterations run."""

    mixture: object
    log_likelihood: jax.Array
    converged: jax.Array
    iterations: jax.Array


def _log_joint_nd(x, alpha, mu, cov):
    """log α_m + log N(x_n; μ_m, Σ_m), shape (n, k)."""
    from .leakage.mixtures import component_log_densities

    return jnp.log(alpha) + component_log_densities(x[:, None, :], mu, cov)


@partial(jax.jit, static_argnames=("k", "max_iter"))
def _fit_nd(key, x, k, reg_covar, tol, max_iter):
    n, d = x.shape
    # k-means++ centres (D² sampling, squared Euclidean distance)
    keys = jax.random.split(key, k)
    centres = jnp.broadcast_to(x[jax.random.choice(keys[0], n)], (k, d))

    def pick(m, centres):
        d2 = jnp.min(jnp.where(jnp.arange(k)[None, :] < m, jnp.sum((x[:, None, :] - centres[None]) ** 2, axis=-1), jnp.inf), axis=1)
        total = jnp.sum(d2)
        p = jnp.where(total > 0, d2 / jnp.where(total > 0, total, 1.0), 1.0 / n)
        return centres.at[m].set(x[jax.random.choice(keys[m], n, p=p)])

    mu = jax.lax.fori_loop(1, k, pick, centres)
    cov0 = jnp.cov(x.T).reshape(d, d) + reg_covar * jnp.eye(d)
    state0 = (jnp.full(k, 1.0 / k), mu, jnp.broadcast_to(cov0, (k, d, d)))

    def loglik(alpha, mu, cov):
        return jnp.mean(logsumexp(_log_joint_nd(x, alpha, mu, cov), axis=1))

    def step(state):
        (alpha, mu, cov), ll, _, it = state
        joint = _log_joint_nd(x, alpha, mu, cov)
        resp = jnp.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        nk = jnp.sum(resp, axis=0)
        alive = nk > 1e-12 * n
        nk_safe = jnp.where(alive, nk, 1.0)
        mu_new = jnp.where(alive[:, None], resp.T @ x / nk_safe[:, None], mu)
        diff = x[None] - mu_new[:, None, :]  # (k, n, d)
        cov_new = jnp.einsum("nk,kni,knj->kij", resp, diff, diff) / nk_safe[:, None, None] + reg_covar * jnp.eye(d)
        cov_new = jnp.where(alive[:, None, None], 0.5 * (cov_new + jnp.swapaxes(cov_new, -1, -2)), cov)
        alpha_new = jnp.maximum(nk / n, 1e-300)
        ll_new = loglik(alpha_new, mu_new, cov_new)
        return (alpha_new, mu_new, cov_new), ll_new, jnp.abs(ll_new - ll) <= tol, it + 1

    start = (state0, loglik(*state0), jnp.array(False), jnp.array(0))
    (alpha, mu, cov), ll, converged, it = jax.lax.while_loop(lambda s: (~s[2]) & (s[3] < max_iter), step, start)
    order = jnp.argsort(mu[:, 0])  # components sorted by their first coordinate's mean
    return alpha[order], mu[order], cov[order], ll, converged, it


def fit_gmm_nd(x, n_components: int, *, key, reg_covar: float = 1e-6, tol: float = 1e-10, max_iter: int = 1000) -> MultivariateGMMFit:
    """Fit a d-dimensional Gaussian mixture with full covariances to ``x`` (n, d) by EM (the
    GMM-masking paper's setting, issue 14): k-means++ centres, then EM; ``reg_covar`` is added to
    every covariance's diagonal (scikit-learn's ``reg_covar``); stop when the mean log-likelihood
    changes by ≤ tol. Components sorted by the first coordinate of their means."""
    from .leakage.mixtures import MultivariateGaussianMixture

    x = _validate.float_array("x", x)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x must have shape (n, d) with n ≥ 1; got shape {x.shape}")
    if not isinstance(n_components, int) or not 1 <= n_components <= x.shape[0]:
        raise ValueError(f"n_components must be an integer in [1, n]; got {n_components!r}")
    if not (isinstance(reg_covar, float) and reg_covar > 0):
        raise ValueError(f"reg_covar must be a positive float; got {reg_covar!r}")
    alpha, mu, cov, ll, conv, it = _fit_nd(key, x, n_components, reg_covar, tol, max_iter)
    return MultivariateGMMFit(MultivariateGaussianMixture(alpha, mu, cov), ll, conv, it)
