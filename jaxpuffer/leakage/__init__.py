"""Information leakage of Gaussian-mixture releases (the GMM-masking paper, ``../shared/papers/002``,
Wu; MATH.md §10), one module per concern:

* :mod:`.mixtures` — d-dimensional Gaussian mixtures (:class:`MultivariateGaussianMixture`);
* :mod:`.moments` — the closed-form moments E_P[R^k] (Lemma 3.1, eqs. (12)–(13));
* :mod:`.series` — the Taylor and Legendre series for entropy, cross-entropy and KL (eqs. (14)–(17),
  Theorem 4.2) with the errata corrected and their float64 rounding bounded;
* :mod:`.references` — the Gaussian closed form, 1-D quadrature, Monte Carlo with an interval.

Not yet here (issue 14): the masking mechanism (Algorithm 1), EM in d dimensions, mutual
information and Rényi leakage, the variational bounds, calibration to a leakage target.
"""
from . import moments, references, series  # noqa: F401
from .mixtures import MultivariateGaussianMixture  # noqa: F401

__all__ = ["MultivariateGaussianMixture", "moments", "references", "series"]
