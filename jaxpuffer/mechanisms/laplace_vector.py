"""The exact δ(ε) of the Laplace mechanism on a vector query, in closed form (GG paper with p = 1;
MATH.md §9) — what a privacy-loss-distribution grid only approximates.

Neighbours differ by Δ = (Δ_1, …, Δ_r); the noise is iid Laplace(0, b) per coordinate; d_k = Δ_k/b.
With z_k ~ Laplace(0, 1) the privacy loss is L = Σ_k L_k, L_k = |z_k − d_k| − |z_k|, and each L_k has

* an atom at +d_k (z_k ≤ 0) of mass ½,
* an atom at −d_k (z_k ≥ d_k) of mass ½ e^{−d_k},
* a continuous part on (−d_k, d_k) (0 < z_k < d_k, ℓ = d_k − 2z_k) of density ¼ e^{−d_k/2} e^{ℓ/2}.

Choose per coordinate an atom or the continuous part. For a choice with continuous set C (m = |C|),
atom total c and weight W = Π_atoms (mass) · Π_C ¼e^{−d_k/2}, the continuous sum S has density
e^{S/2} g_C(S), where g_C is the convolution of the indicators of (−d_k, d_k) (a box spline), written
from the top of its support (D_C = Σ_C d_k) as g_C(s) = Σ_{J⊆C} (−1)^{|J|} (D_C − 2d_J − s)_+^{m−1}/(m−1)!
(exact for every s). The choice contributes W ∫ e^{s/2} g_C(s) (1 − e^{κ−s})_+ ds, κ = ε − c:

* κ ≤ −D_C (every continuous value counts): W (1 − e^κ) Π_C 4 sinh(d_k/2), i.e. the choice's whole
  mass times (1 − e^κ) — no sum over J (the total of e^{±s/2} against g_C factorises);
* otherwise, per J with U = D_C − 2d_J > κ and x = (U − κ)/2: (−1)^{|J|} W e^{U/2} ∫_0^{U−κ}
  e^{−t/2}(1 − e^{t−(U−κ)}) t^{m−1}/(m−1)! dt = (−1)^{|J|} W e^{U/2} 2^{m+1} e^{−x} Σ_{j≥0} x^{m+1+2j}/(m+1+2j)!
  (the m-fold integral of sinh: a series of positive terms, :func:`_odd_tail`).

δ(ε) = Σ over the 4^r (atom +, atom −, continuous, continuous-in-J) states of those terms. Near the top
of the loss range (small δ) only J = ∅ survives, so the alternating signs cancel only where δ is
large. The returned value is an upper bound: the sum plus a float64 rounding allowance (every
term's exponent is formed with relative error ~ε_mach, so |error| ≤ Σ|terms| · ε_mach (64 + 4 (Σd + |ε|))).

Cost grows as 4^r: the closed form is used for r ≤ :data:`MAX_COORDINATES`. It equals
``dp_accounting``'s connect-the-dots Laplace PLD (step 1e-5) to ~1e-11 relative at r = 3 (test).
"""

from __future__ import annotations

import itertools
import math

import jax.numpy as jnp
import numpy as np

MAX_COORDINATES = 8  # 4^8 = 65,536 terms per evaluation
_SERIES_TERMS = 24  # j < 24 covers x ≤ 10 to far below an ulp (10^49/49! ≈ e^−42 · e^10)
_SERIES_SWITCH = 10.0  # above: the closed form; its subtracted part is at most ~40 % of it (m = 8, x = 10): no cancellation
_EPS = float(np.finfo(np.float64).eps)


def _states(r: int) -> np.ndarray:
    """Every choice per coordinate: 0 atom +d, 1 atom −d, 2 continuous, 3 continuous and in J."""
    return np.asarray(list(itertools.product(range(4), repeat=r)), dtype=np.int8).reshape(-1, r)


def _log_odd_tail(m: np.ndarray, x):
    """log of e^{−x} Σ_{j≥0} x^{m+1+2j}/(m+1+2j)! for x > 0 (½ the Poisson(x) probability of a count
    ≥ m + 1 of the parity of m + 1), ``m`` a static integer array ≥ 1 (one per term, broadcast
    against ``x``). For x ≤ 10: the first term in log space times Σ_j of the running product of
    the ratios x²/((n+1)(n+2)); above, ½ + ½(−1)^{m+1}e^{−2x} − e^{−x} Σ_{k≤m, k≡m+1 (2)} x^k/k!
    (cosh or sinh of x less its first terms)."""
    n = m[:, None] + 1 + 2 * np.arange(_SERIES_TERMS)  # (T, terms)
    ratio = 1.0 / ((n[:, :-1] + 1.0) * (n[:, :-1] + 2.0))  # term j+1 / term j, over x²
    lead = jnp.asarray(-np.vectorize(math.lgamma)(m + 2.0))  # −log (m+1)!
    small = jnp.minimum(x, _SERIES_SWITCH)
    log_x = jnp.log(small)
    series = 1.0 + jnp.sum(jnp.cumprod(jnp.asarray(ratio) * (small**2)[..., None], axis=-1), axis=-1)
    direct = (m + 1.0) * log_x + lead - small + jnp.log(series)
    k = np.arange(MAX_COORDINATES + 1)
    parity_terms = np.where((k <= m[:, None]) & ((k - m[:, None] - 1) % 2 == 0), 1.0 / np.vectorize(math.factorial)(k), 0.0)
    big = jnp.maximum(x, _SERIES_SWITCH)
    poly = jnp.sum(jnp.asarray(parity_terms) * big[..., None] ** k, axis=-1)
    closed = 0.5 + 0.5 * jnp.where(m % 2 == 1, 1.0, -1.0) * jnp.exp(-2.0 * big) - jnp.exp(-big) * poly
    return jnp.where(x > _SERIES_SWITCH, jnp.log(closed), direct)


def laplace_vector_delta(eps, d):
    """(δ upper bound, δ lower bound) of iid Laplace noise on a vector query: ``eps`` (...),
    ``d`` (..., r) the shifts in units of the scale (Δ_k/b ≥ 0, finite), r ≤ :data:`MAX_COORDINATES`.
    Closed form of the module docstring; the bounds are the sum ± its rounding allowance. jit-able."""
    r = d.shape[-1]
    if r > MAX_COORDINATES:  # a static shape: checked under jit too
        raise ValueError(f"d has {r} coordinates; the closed form takes at most {MAX_COORDINATES} (4^r terms): "
                         "use gg_exact.vector_delta, which falls back to the PLD grid")
    states = _states(r)
    plus, minus, cont, in_j = (states == 0), (states == 1), (states >= 2), (states == 3)
    m_int = cont.sum(-1)
    m = jnp.asarray(m_int, jnp.float64)  # (T,)
    sign = jnp.asarray((-1.0) ** in_j.sum(-1))
    no_j = jnp.asarray(in_j.sum(-1) == 0)
    dd = d[..., None, :]  # (..., 1, r)
    on = lambda mask, v: jnp.sum(jnp.where(mask, v, 0.0), axis=-1)  # noqa: E731  (sum over coordinates)
    c = on(plus, dd) - on(minus, dd)
    top = on(cont, dd)  # D_C
    u = top - 2.0 * on(in_j, dd)
    log_atoms = on(plus, math.log(0.5)) + on(minus, math.log(0.5) - dd)
    kappa = eps[..., None] - c
    whole = kappa <= -top
    # the choice's whole mass: continuous mass (1 − e^{−d})/2 per coordinate of C
    # (a zero shift has no continuous mass: log 0 = −inf, taken without a log(0) whose derivative is NaN)
    dd_pos = jnp.where(dd > 0, dd, 1.0)
    log_mass = log_atoms + on(cont, jnp.where(dd > 0, jnp.log(-jnp.expm1(-dd_pos) / 2.0), -jnp.inf))
    t_whole = jnp.where(whole & no_j & (kappa < 0), jnp.exp(log_mass) * -jnp.expm1(jnp.minimum(kappa, 0.0)), 0.0)
    x = 0.5 * (u - kappa)
    live = ~whole & (m > 0) & (x > 0)
    log_tail = _log_odd_tail(np.maximum(m_int, 1), jnp.where(live, x, 1.0))
    log_part = log_atoms + on(cont, math.log(0.25) - dd / 2.0) + (m + 1.0) * math.log(2.0) + 0.5 * u + log_tail
    t_part = jnp.where(live, sign * jnp.exp(log_part), 0.0)
    delta = jnp.sum(t_whole, axis=-1) + jnp.sum(t_part, axis=-1)
    scale = jnp.sum(jnp.abs(t_whole) + jnp.abs(t_part), axis=-1)
    slack = scale * _EPS * (64.0 + 4.0 * (jnp.sum(d, axis=-1) + jnp.abs(eps)))
    return jnp.clip(delta + slack, 0.0, 1.0), jnp.clip(delta - slack, 0.0, 1.0)
