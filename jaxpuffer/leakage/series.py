"""The GMM-masking paper's series for entropy, cross-entropy and KL (eqs. (14)–(17), Theorem 4.2;
MATH.md §10), corrected, with their float64 rounding bounded; pure JAX (``jit``, ``vmap`` over
pairs, ``grad`` in the mixtures' parameters).

With μ_k = E_P[R^k]/a^k (closed form: :mod:`.moments`) and R = P (entropy H(P) = −E_P log P) or
R = Q (cross-entropy H(P, Q) = −E_P log Q):

* **Taylor** (eqs. (14), (15)): log R = log a + Σ_{n≥1} (−1)^{n−1}/n ((R − a)/a)^n, so
  Ĥ^T_N = −log a − Σ_{n=1}^N (−1)^{n−1}/n Σ_{k=0}^n C(n,k)(−1)^{n−k} μ_k; it converges for a > ½ max R
  (Lemma 4.1), slowly where R → 0 (the tails: the series' boundary).
* **Legendre** (eqs. (16), (17)): log x on [0, a] in shifted Legendre polynomials, log x ≈ Σ_n c_n L̃_n(x)
  with c_n = (2n+1) Σ_j (−1)^{n+j} (n+j)!((j+1) log a − 1)/((n−j)!(j+1)!²) and
  E_P[L̃_n(R)] = Σ_i (−1)^{n+i} C(n,i) C(n+i,i) μ_i; Ĥ^L_N = −Σ_{n=0}^N c_n E_P[L̃_n(R)] for a ≥ max R.
  The j-sums are exact rationals: c_0 = log a − 1 and c_n = (2n+1)(−1)^{n+1}/(n(n+1)) for n ≥ 1
  (the log a part of c_n is (2n+1)·∫₀¹ L̃_n = 0); :func:`legendre_coefficients` sums them in
  rational arithmetic. **Erratum:** the paper prints a further −log a in front; c_0 already holds
  log a − 1 (MATH.md: at N = 15 it gives 2.3731 against H = 1.54667; without it 1.54695).
* **KL** = H(P, Q) − H(P) = Ĥ(Q) − Ĥ(P). **Erratum:** Theorem 4.2 prints Ĥ(P) − Ĥ(Q), the
  negative.

Both series are linear in (μ_0 … μ_N): each is a constant table (n, k) of the exact coefficients
(float64 from integers) applied to the moment vector, so a batch of pairs is one matrix product.

**Rounding.** The inner sums cancel: their terms reach C(n,k) (Taylor, ~2^n) and C(n,i)C(n+i,i)
(Legendre, ~5.8^n) times values ≤ 1, so float64 loses all digits near n ≈ 50 (Taylor) and n ≈ 20
(Legendre). Each estimate comes with ``rounding``, a bound on the accumulated float64 error:
ε_mach·(2N + 16 + max_k |log μ_k|)·Σ|terms| — N + 1 for the recursive sums of at most N + 1 terms
(γ_{N+1}), N + 8 + |log μ_k| for each μ_k (exp of a log-moment whose absolute error is a few ulps
of its size, and the table's own rounding). Where it exceeds ``max_rounding`` the estimate is NaN
(never a wrong number). The truncation error of the series is not bounded here: compare with
:mod:`.references` or :mod:`.quadrature`.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from . import moments as _moments

_EPS = float(np.finfo(np.float64).eps)
_SERIES = ("taylor", "legendre")


@functools.lru_cache(maxsize=None)
def _taylor_table(terms: int) -> np.ndarray:
    """T[n, k] = (−1)^{n−1}/n · C(n,k)(−1)^{n−k} for 1 ≤ n ≤ N (row 0 zero): Ĥ^T = −log a − Σ_n (Tμ)_n."""
    table = np.zeros((terms + 1, terms + 1))
    for n in range(1, terms + 1):
        for k in range(n + 1):
            table[n, k] = (-1.0) ** (n - 1 + n - k) * math.comb(n, k) / n
    return table


@functools.lru_cache(maxsize=None)
def _legendre_table(terms: int) -> np.ndarray:
    """L[n, i] = (−1)^{n+i} C(n,i) C(n+i,i): E_P[L̃_n(R)] = (Lμ)_n."""
    table = np.zeros((terms + 1, terms + 1))
    for n in range(terms + 1):
        for i in range(n + 1):
            table[n, i] = (-1.0) ** (n + i) * float(math.comb(n, i) * math.comb(n + i, i))
    return table


@functools.lru_cache(maxsize=None)
def _legendre_offsets(terms: int) -> np.ndarray:
    """B_n = (2n+1) Σ_j (−1)^{n+j}(n+j)!/((n−j)!(j+1)!²), summed exactly (Fractions) and rounded
    once: c_n = [n = 0] log a − B_n (the j-sum's log a part is (2n+1)∫₀¹ L̃_n, 1 at n = 0 and 0 after)."""
    out = np.zeros(terms + 1)
    for n in range(terms + 1):
        out[n] = float((2 * n + 1) * sum(Fraction((-1) ** (n + j) * math.factorial(n + j), math.factorial(n - j) * math.factorial(j + 1) ** 2) for j in range(n + 1)))
    return out


def legendre_coefficients(terms: int, a) -> jnp.ndarray:
    """c_n, n = 0..N, of log x on [0, a] in shifted Legendre polynomials (the paper's eq. (16))."""
    offsets = _legendre_offsets(_check_terms(terms))
    return jnp.log(jnp.asarray(a, jnp.float64))[..., None] * (np.arange(terms + 1) == 0) - jnp.asarray(offsets)


def _check_terms(terms) -> int:
    if isinstance(terms, bool) or not isinstance(terms, (int, np.integer)) or terms < 1:
        raise ValueError(f"terms must be an integer ≥ 1 (the series' order N); got {terms!r}")
    return int(terms)


def _scaled_log_moments(p, r, terms: int, a):
    """log μ_k = log E_P[R^k] − k log a, k = 0..N."""
    return _moments.log_power_moments(p, r, terms) - jnp.arange(terms + 1) * jnp.log(a)


def _sum_with_rounding(table, log_mu, weights=None):
    """(Σ_n w_n (table·μ)_n, its rounding bound (module docstring)); the weights w_n default to 1."""
    terms = table.shape[0] - 1
    mu = jnp.exp(log_mu)
    inner = jnp.asarray(table) @ mu
    magnitude_rows = jnp.abs(jnp.asarray(table)) @ mu
    if weights is not None:
        inner, magnitude_rows = weights * inner, jnp.abs(weights) * magnitude_rows
    factor = 2 * terms + 16 + jnp.max(jnp.abs(log_mu))
    return jnp.sum(inner), _EPS * factor * jnp.sum(magnitude_rows)


def _refuse(value, rounding, max_rounding):
    return jnp.where(rounding <= max_rounding, value, jnp.nan), rounding


@functools.partial(jax.jit, static_argnames=("terms", "printed"))
def _taylor(p, r, a, max_rounding, terms: int, printed: bool):
    del printed  # eqs. (14) and (15) are right as printed (the sign error is Theorem 4.2's)
    log_a = jnp.log(a)
    total, rounding = _sum_with_rounding(_taylor_table(terms), _scaled_log_moments(p, r, terms, a))
    return _refuse(-log_a - total, rounding + _EPS * jnp.abs(log_a), max_rounding)


@functools.partial(jax.jit, static_argnames=("terms", "printed"))
def _legendre(p, r, a, max_rounding, terms: int, printed: bool):
    coef = legendre_coefficients(terms, a)
    total, rounding = _sum_with_rounding(_legendre_table(terms), _scaled_log_moments(p, r, terms, a), coef)
    value = -total - (jnp.log(a) if printed else 0.0)
    return _refuse(value, rounding, max_rounding)


def _a_or_default(a, *mixtures):
    """``a``, or the largest peak bound of ``mixtures`` (each ≥ its density's maximum)."""
    if a is None:
        return jnp.max(jnp.stack([_moments.density_peak_bound(m) for m in mixtures]), axis=0)
    return jnp.asarray(a, jnp.float64)


def taylor_entropy(p, r, terms: int, a=None, *, max_rounding: float = 1e-8, printed: bool = False):
    """Ĥ^T_{N,a}: the Taylor series (eqs. (14)/(15)) for −E_P log R (R = P: H(P); R = Q: H(P, Q)).

    Returns ``(value, rounding)`` (0-d arrays; ``jax.vmap`` over pairs of mixtures); value is NaN
    where the rounding bound exceeds ``max_rounding``. a defaults to the peak bound of R,
    Σ_t v_t N(m_t|m_t, S_t) ≥ max R, which satisfies Lemma 4.1's a > ½ max R. ``printed`` has no
    effect here (eqs. (14) and (15) are right as printed; the sign error is Theorem 4.2's, see
    :func:`kl`)."""
    return _taylor(p, r, _a_or_default(a, r), max_rounding, _check_terms(terms), printed)


def legendre_entropy(p, r, terms: int, a=None, *, max_rounding: float = 1e-8, printed: bool = False):
    """Ĥ^L_{N,a}: the Legendre series (eqs. (16)/(17)) for −E_P log R, a ≥ max R (default: the peak
    bound of R). ``printed=True`` keeps the paper's spurious −log a (an erratum). Returns
    ``(value, rounding)`` as :func:`taylor_entropy`."""
    return _legendre(p, r, _a_or_default(a, r), max_rounding, _check_terms(terms), printed)


def kl(p, q, terms: int, *, series: str = "taylor", a=None, max_rounding: float = 1e-8, printed: bool = False):
    """KL(P‖Q) = Ĥ(Q) − Ĥ(P) (cross-entropy minus entropy) by the chosen series, one ``a`` for both
    (default: the larger peak bound of P and Q). ``printed=True`` gives Theorem 4.2 as printed,
    Ĥ(P) − Ĥ(Q) (the sign reversed; with the Legendre series, also the spurious −log a, which
    cancels in the difference). Returns ``(value, rounding)``; ``jax.vmap`` over pairs."""
    if series not in _SERIES:
        raise ValueError(f"series must be 'taylor' or 'legendre'; got {series!r}")
    entropy = _taylor if series == "taylor" else _legendre
    terms = _check_terms(terms)
    a = _a_or_default(a, p, q)
    h_p, err_p = entropy(p, p, a, jnp.inf, terms, printed)
    h_pq, err_q = entropy(p, q, a, jnp.inf, terms, printed)
    value = (h_p - h_pq) if printed else (h_pq - h_p)
    return _refuse(value, err_p + err_q, max_rounding)
