"""(ε, δ)-probabilistic DP of the GG mechanism (GG paper, Sections 2.4 and 4; MATH.md §9).

(ε, δ)-pDP: the privacy loss L(s*) = log f(s*|s) − log f(s*|s') exceeds ε with probability < δ.
For integer p ≥ 2, L ≤ (Σ_k a_k + Δ_{s,p}^p)/b^p with a_k = Σ_{j=1}^{p−1} C(p,j)|s*_k − s_k|^{p−j}Δ_k^j, so

* **Lemma 5** (corrected): P(Σ_k a_k > ε b^p − Δ_{s,p}^p) < δ suffices. The paper prints the threshold
  b^p − Δ_{s,p}^p ε, an **erratum**: L ≤ ε ⟺ Σ a_k + Δ^p ≤ ε b^p. With the printed form b hardly
  depends on ε (3.95 / 4.06 / 4.30 at ε = 0.5 / 1 / 2, MATH.md §9), against the paper's own
  Figure 2; the corrected one gives 7.89 / 4.07 / 2.15. :func:`lemma5_scale` solves either by
  Monte Carlo, exactly on its draws (an order statistic, no bisection error), with a one-sided
  Clopper–Pearson margin.
* **Lemma 10** (p = 2, r = 1, eq. (18)): b ≥ 2^{−1/2} ε⁻¹ Δ (√(z² + 2ε) − z), z = Φ⁻¹(δ/2), i.e.
  σ = b/√2 = Δ(√(z² + 2ε) − z)/(2ε); the classical **eq. (19)** σ = √(2 ln(1.25/δ)) Δ/ε (ε < 1).
* **Lemma 11**: for δ < 2Φ(−√2) ≈ 0.157299 the pDP Gaussian's variance exceeds the ε-DP Laplace's
  2(Δ/ε)²; the paper prints 2Φ(√2) (≈ 1.84, not a probability) — an **erratum**.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri
from scipy import special as sp_special

from .. import _validate
from . import _gg

LEMMA11_DELTA = float(2.0 * sp_special.ndtr(-math.sqrt(2.0)))  # 2Φ(−√2) ≈ 0.157299 (corrected)
LEMMA11_DELTA_PRINTED = float(2.0 * sp_special.ndtr(math.sqrt(2.0)))  # the paper's 2Φ(√2) ≈ 1.8427


def lemma10_scale(eps, delta, sensitivity):
    """Eq. (18): the GG(p = 2) scale b = 2^{−1/2} ε⁻¹ Δ (√(z² + 2ε) − z), z = Φ⁻¹(δ/2), for
    (ε, δ)-pDP of a scalar query (the Gaussian std is b/√2)."""
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta)
    sens = _validate.float_array("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sens)
    z = ndtri(delta / 2.0)
    return sens * (jnp.sqrt(z**2 + 2.0 * eps) - z) / (math.sqrt(2.0) * eps)


def classical_gaussian_std(eps, delta, sensitivity):
    """Eq. (19), the classical Gaussian mechanism σ = √(2 ln(1.25/δ)) Δ/ε (Dwork & Roth; valid for
    ε < 1, which is checked)."""
    eps = _validate.epsilon(eps)
    if _validate.is_concrete(eps) and not bool(jnp.all(eps < 1)):
        raise ValueError("eps must be < 1 for eq. (19) (the classical Gaussian mechanism)")
    delta = _validate.delta(delta)
    sens = _validate.float_array("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sens)
    return jnp.sqrt(2.0 * jnp.log(1.25 / delta)) * sens / eps


def gaussian_pdp_delta(eps, sensitivity, std):
    """The exact pDP failure probability P(|L| > ε) of the Gaussian mechanism (scalar query, std σ):
    L = (2 e Δ + Δ²)/(2σ²), e ~ N(0, σ²), so P = Φ(−(εσ/Δ − Δ/(2σ))) + Φ(−(εσ/Δ + Δ/(2σ))).
    At Lemma 10's σ it is below δ (0.00665 at ε = 1, δ = 0.01): Lemma 10 bounds |L| by 2|e|Δ + Δ²."""
    eps = _validate.epsilon(eps)
    sens = _validate.float_array("sensitivity", sensitivity)
    std = _validate.float_array("std", std)
    _validate.positive("std", std)
    u = eps * std / sens
    v = sens / (2.0 * std)
    return jax.scipy.special.ndtr(-(u - v)) + jax.scipy.special.ndtr(-(u + v))


def gaussian_pdp_has_more_variance(delta) -> bool | jax.Array:
    """Lemma 11 (corrected): True where δ < 2Φ(−√2) — there the (ε, δ)-pDP Gaussian mechanism
    (Lemma 10) has a larger variance than the ε-DP Laplace mechanism for every ε > 0."""
    return _validate.delta(delta) < LEMMA11_DELTA


def variance_ratio_gaussian_to_laplace(eps, delta):
    """Var(Lemma 10's Gaussian) / Var(Laplace, b = Δ/ε) = (√(z² + 2ε) − z)²/8, z = Φ⁻¹(δ/2)
    (independent of Δ): > 1 for every ε exactly when δ < 2Φ(−√2) (Lemma 11)."""
    eps = _validate.epsilon(eps)
    return (lemma10_scale(eps, delta, 1.0) * eps) ** 2 / 4.0  # σ² ε²/(2Δ²) with σ = b/√2


# Newton steps per draw: the root lies in [v₀/p, v₀] (g(v₀) ≤ pT, g(v₀/p) ≤ T) and Newton from the
# right of a convex increasing g converges monotonically and quadratically
_NEWTON_STEPS = 30


def _lemma5_roots(z, weights, p, lp_power, eps, printed: bool):
    """Per draw, the v = 1/b at which Σ_k a_k = threshold: with e_k = b z_k, dividing by b^p,
    g(v) = Σ_{j=1}^{p−1} c_j v^j + κ v^p = T, c_j = C(p,j) Σ_k |z_k|^{p−j} Δ_k^j, κ = Δ^p, T = ε
    (corrected) or κ = ε Δ^p, T = 1 (printed); g is increasing and convex on v > 0: Newton from
    the right (v₀ = min_j (T/c_j)^{1/j}, where one term alone reaches T) converges monotonically.
    ``weights`` (degree, r): C(p, j) Δ_k^j for the powers j = 1 … degree, 0 from j = p on (one
    shape serves every p up to the degree); the power j = p carries κ."""
    powers = jnp.arange(1, weights.shape[0] + 1, dtype=jnp.float64)
    az = jnp.abs(z)[..., None, :]  # (draws, 1, r)
    below = (powers < p)[:, None]
    kappa = lp_power * jnp.where(printed, eps, 1.0)
    coef = jnp.sum(weights * jnp.where(below, az ** (p - powers)[:, None], 0.0), axis=-1) + jnp.where(powers == p, kappa, 0.0)
    target = jnp.where(printed, 1.0, eps)
    v0 = jnp.min(jnp.where(coef > 0, (target / jnp.where(coef > 0, coef, 1.0)) ** (1.0 / powers), jnp.inf), axis=-1)

    def newton(_, v):
        g = jnp.sum(coef * v[..., None] ** powers, axis=-1) - target
        dg = jnp.sum(coef * powers * v[..., None] ** (powers - 1.0), axis=-1)
        return jnp.where(dg > 0, v - g / jnp.where(dg > 0, dg, 1.0), v)

    return jax.lax.fori_loop(0, _NEWTON_STEPS, newton, v0)


def _binomial_weights(orders, sens, degree: int):
    """Per order p (static integers): the (degree, r) weights C(p, j) Δ_k^j of :func:`_lemma5_roots`
    for j < p (0 from j = p on), exact binomials from ``math.comb``."""
    sens = np.asarray(sens, np.float64)
    j = np.arange(1, degree + 1)[:, None]
    return jnp.asarray(np.stack([np.where(j < p, np.vectorize(math.comb)(p, j) * sens**j, 0.0) for p in orders]))


def lemma5_scale(key, eps, delta, coordinate_sensitivities, p, *, lp_sensitivity=None, draws: int = 1_000_000,
                 confidence: float = 0.95, threshold: str = "corrected"):
    """Lemma 5: the smallest b with P̂(Σ_k a_k > ε b^p − Δ_{s,p}^p) < δ over ``draws`` Monte Carlo draws of
    the noise z ~ GG(0, 1, p)^r (the same draws for every ε, δ: one key, one set per p).

    Returns ``(b, b_upper)``: ``b`` is the Monte Carlo answer (fewer than δ·draws draws fail);
    ``b_upper`` ≥ b is the one-sided ``confidence`` answer: the Clopper–Pearson upper bound of the
    failure probability is < δ (NaN where ``draws`` are too few for that: even 0 failures leave the
    bound ≥ δ). ε and δ broadcast (a grid is one call); ``p`` is an integer ≥ 2 or a sequence of
    them (a leading axis of the result; every p in one compiled program, its draws from the same
    key as a single-p call, so the answers are the same).

    ``threshold="printed"`` uses the paper's b^p − Δ_{s,p}^p ε (an erratum; for comparison only).
    p must be an integer ≥ 2 (Lemma 5's binomial expansion); Δ_{s,p} defaults to Lemma 2.
    """
    orders = [int(_gg.order(q, integer=True)) for q in np.atleast_1d(np.asarray(p, dtype=object))]
    if np.ndim(p) > 1 or not orders:
        raise ValueError(f"p must be an integer >= 2 or a sequence of them; got {p!r}")
    for q in orders:
        if q < 2:
            raise ValueError(f"p must be an integer >= 2 for Lemma 5 (p = 1 is the Laplace mechanism, ε-DP with b = Δ/ε); got {p!r}")
    _validate.choice("threshold", threshold, ("corrected", "printed"))
    if not (isinstance(draws, (int, np.integer)) and draws >= 100):
        raise ValueError(f"draws must be an integer >= 100; got {draws!r}")
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be in [0.5, 1); got {confidence!r}")
    eps = _validate.epsilon(eps)
    delta = _validate.delta(delta)
    sens = _gg.sensitivities(coordinate_sensitivities, "coordinate_sensitivities")
    if sens.ndim != 1:
        raise ValueError(f"coordinate_sensitivities must be one vector (r,); got shape {sens.shape}")
    if lp_sensitivity is None:
        lp_power = jnp.asarray([jnp.sum(sens**q) for q in orders])  # Lemma 2
    else:
        lp = _validate.float_array("lp_sensitivity", lp_sensitivity)
        _validate.nonnegative("lp_sensitivity", lp)
        lp_power = jnp.asarray([lp**q for q in orders])
    shape = _validate.broadcast_shapes(eps=eps.shape, delta=delta.shape)
    eps_b = jnp.broadcast_to(eps, shape).ravel()
    # allowed failing draws: MC (fewer than δ·n) and Clopper–Pearson (upper bound < δ)
    deltas = np.broadcast_to(np.asarray(delta), shape).ravel()
    k_mc = np.ceil(deltas * draws).astype(np.int64) - 1
    k_cp = _clopper_pearson_allowance(deltas, draws, confidence)
    weights = _binomial_weights(orders, np.asarray(sens), max(orders))
    b, b_up = _lemma5_solve(key, jnp.asarray(orders, jnp.float64), weights, lp_power, eps_b, jnp.asarray(k_mc), jnp.asarray(k_cp),
                            draws, threshold == "printed")
    lead = () if np.ndim(p) == 0 else (len(orders),)
    return b.reshape(lead + shape), b_up.reshape(lead + shape)


def _clopper_pearson_allowance(deltas, n, confidence):
    """The largest count k of failures (−1: none) whose one-sided Clopper–Pearson upper bound at
    ``confidence`` is below δ: Beta⁻¹(confidence; k + 1, n − k) < δ (scipy, eagerly)."""
    out = np.empty(deltas.shape, np.int64)
    for i, d in enumerate(deltas):  # one bisection per distinct δ of the grid (a handful)
        lo, hi = -1, int(np.ceil(d * n))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if sp_special.betaincinv(mid + 1, n - mid, confidence) < d:
                lo = mid
            else:
                hi = mid
        out[i] = lo
    return out


@functools.partial(jax.jit, static_argnames=("draws", "printed"))
def _lemma5_solve(key, orders, weights, lp_power, eps, k_mc, k_cp, draws: int, printed: bool):
    r = weights.shape[-1]

    def one_order(args):  # one p: its draws, the sorted roots per ε, the order statistics
        p, weight, kappa = args
        z = jax.random.generalized_normal(key, p, (draws, r), jnp.float64)
        roots = jax.vmap(lambda e: jnp.sort(_lemma5_roots(z, weight, p, kappa, e, printed)))(eps)  # (grid, draws)
        # draws failing at v = 1/b: those with root < v. Allowing k of them: v = the (k + 1)-th root
        pick = lambda k: jnp.take_along_axis(roots, jnp.clip(k, 0, draws - 1)[:, None], axis=-1)[:, 0]  # noqa: E731
        to_b = lambda k: jnp.where(k >= 0, 1.0 / pick(k), jnp.nan)  # noqa: E731  (k < 0: δ·n < 1, no answer)
        return to_b(k_mc), to_b(k_cp)

    return jax.lax.map(one_order, (orders, weights, lp_power))
