"""The GMM-masking paper's series for entropy, cross-entropy and KL (eqs. (14)–(17), Theorem 4.2;
MATH.md §10), corrected, with their float64 rounding measured.

With μ_k = E_P[R^k]/a^k (closed form: :mod:`.moments`) and R = P (entropy H(P) = −E_P log P) or
R = Q (cross-entropy H(P, Q) = −E_P log Q):

* **Taylor** (eqs. (14), (15)): log R = log a + Σ_{n≥1} (−1)^{n−1}/n ((R − a)/a)^n, so
  Ĥ^T_N = −log a − Σ_{n=1}^N (−1)^{n−1}/n Σ_{k=0}^n C(n,k)(−1)^{n−k} μ_k; it converges for a > ½ max R
  (Lemma 4.1), slowly where R → 0 (the tails: the series' boundary).
* **Legendre** (eqs. (16), (17)): log x on [0, a] in shifted Legendre polynomials, log x ≈ Σ_n c_n L̃_n(x)
  with c_n = (2n+1) Σ_j (−1)^{n+j} (n+j)!((j+1) log a − 1)/((n−j)!(j+1)!²) and
  E_P[L̃_n(R)] = Σ_i (−1)^{n+i} C(n,i) C(n+i,i) μ_i; Ĥ^L_N = −Σ_{n=0}^N c_n E_P[L̃_n(R)] for a ≥ max R.
  **Erratum:** the paper prints a further −log a in front; c_0 already holds log a − 1 (MATH.md:
  at N = 15 it gives 2.3731 against H = 1.54667; without it 1.54695).
* **KL** = H(P, Q) − H(P) = Ĥ(Q) − Ĥ(P). **Erratum:** Theorem 4.2 prints Ĥ(P) − Ĥ(Q), the
  negative.

**Rounding.** The inner sums cancel: their terms reach C(n,k) (Taylor, ~2^n) and C(n,i)C(n+i,i)
(Legendre, ~5.8^n) times values ≤ 1, so float64 loses all digits near n ≈ 50 (Taylor) and n ≈ 20
(Legendre). Each estimate comes with ``rounding``, a bound ε_mach·(n + 2)·Σ|terms| on the
accumulated error; where it exceeds ``max_rounding`` the estimate is NaN (never a wrong number).
The truncation error of the series is not bounded here: compare with :mod:`.references`.
"""

from __future__ import annotations

import math

import numpy as np

from . import moments as _moments

_EPS = np.finfo(np.float64).eps


def _scaled_moments(p, r, n: int, a: float) -> np.ndarray:
    """μ_k = E_P[R^k]/a^k, k = 0..n (float64, from the closed form in log space)."""
    log_mu = np.asarray(_moments.log_power_moments(p, r, n)) - np.arange(n + 1) * math.log(a)
    return np.exp(log_mu)


def _binom(n: int, k: int) -> float:
    return float(math.comb(n, k))


def taylor_entropy(p, r, terms: int, a: float | None = None, *, max_rounding: float = 1e-8, printed: bool = False):
    """Ĥ^T_{N,a}: the Taylor series (eqs. (14)/(15)) for −E_P log R (R = P: H(P); R = Q: H(P, Q)).

    Returns ``(value, rounding)``; value is NaN where the rounding bound exceeds ``max_rounding``.
    a defaults to max(½·peak bound of R, ...) — the peak bound Σ_t v_t N(m_t|m_t, S_t) ≥ max R,
    so a = peak bound satisfies Lemma 4.1's a > ½ max R. ``printed`` has no effect here (eqs. (14)
    and (15) are right as printed; the sign error is Theorem 4.2's, see :func:`kl`)."""
    del printed
    a = float(_moments.density_peak_bound(r)) if a is None else float(a)
    mu = _scaled_moments(p, r, terms, a)
    total, magnitude = -math.log(a), math.log(a)
    for n in range(1, terms + 1):
        inner = [_binom(n, k) * (-1.0) ** (n - k) * mu[k] for k in range(n + 1)]
        total -= (-1.0) ** (n - 1) / n * math.fsum(inner)
        magnitude += sum(abs(t) for t in inner) / n
    rounding = _EPS * (terms + 2) * magnitude
    return (total if rounding <= max_rounding else math.nan), rounding


def legendre_coefficients(terms: int, a: float) -> np.ndarray:
    """c_n, n = 0..N, of log x on [0, a] in shifted Legendre polynomials (the paper's eq. (16))."""
    out = []
    for n in range(terms + 1):
        out.append((2 * n + 1) * math.fsum((-1.0) ** (n + j) * math.factorial(n + j) * ((j + 1) * math.log(a) - 1.0) / (math.factorial(n - j) * math.factorial(j + 1) ** 2) for j in range(n + 1)))
    return np.array(out)


def legendre_entropy(p, r, terms: int, a: float | None = None, *, max_rounding: float = 1e-8, printed: bool = False):
    """Ĥ^L_{N,a}: the Legendre series (eqs. (16)/(17)) for −E_P log R, a ≥ max R (default: the peak
    bound of R). ``printed=True`` keeps the paper's spurious −log a (an erratum). Returns
    ``(value, rounding)`` as :func:`taylor_entropy`."""
    a = float(_moments.density_peak_bound(r)) if a is None else float(a)
    mu = _scaled_moments(p, r, terms, a)
    coef = legendre_coefficients(terms, a)
    total, magnitude = (-math.log(a) if printed else 0.0), 0.0
    for n in range(terms + 1):
        inner = [(-1.0) ** (n + i) * _binom(n, i) * _binom(n + i, i) * mu[i] for i in range(n + 1)]
        total -= coef[n] * math.fsum(inner)
        magnitude += abs(coef[n]) * sum(abs(t) for t in inner)
    rounding = _EPS * (terms + 2) * magnitude
    return (total if rounding <= max_rounding else math.nan), rounding


def kl(p, q, terms: int, *, series: str = "taylor", a: float | None = None, max_rounding: float = 1e-8, printed: bool = False):
    """KL(P‖Q) = Ĥ(Q) − Ĥ(P) (cross-entropy minus entropy) by the chosen series, one ``a`` for both
    (default: the larger peak bound of P and Q). ``printed=True`` gives Theorem 4.2 as printed,
    Ĥ(P) − Ĥ(Q) (the sign reversed; with the Legendre series, also the spurious −log a, which
    cancels in the difference). Returns ``(value, rounding)``."""
    if series not in ("taylor", "legendre"):
        raise ValueError(f"series must be 'taylor' or 'legendre'; got {series!r}")
    a = max(float(_moments.density_peak_bound(p)), float(_moments.density_peak_bound(q))) if a is None else float(a)
    entropy = taylor_entropy if series == "taylor" else legendre_entropy
    h_p, err_p = entropy(p, p, terms, a, max_rounding=math.inf, printed=printed)
    h_pq, err_q = entropy(p, q, terms, a, max_rounding=math.inf, printed=printed)
    value = (h_p - h_pq) if printed else (h_pq - h_p)
    rounding = err_p + err_q
    return (value if rounding <= max_rounding else math.nan), rounding
