"""Information leakage of Gaussian-mixture releases (the GMM-masking paper, ``../shared/papers/002``,
Wu; MATH.md §10), one module per concern:

* :mod:`.mixtures` — d-dimensional Gaussian mixtures (:class:`MultivariateGaussianMixture`);
* :mod:`.masking` — the masking mechanism (Algorithm 1), batched over keys;
* :mod:`.moments` — the closed-form moments E_P[R^k] (Lemma 3.1, eqs. (12)–(13));
* :mod:`.series` — the Taylor and Legendre series for entropy, cross-entropy and KL (eqs. (14)–(17),
  Theorem 4.2) with the errata corrected and their float64 rounding bounded;
* :mod:`.bounds` — certified lower and upper bounds on KL (Hershey & Olsen; Durrieu et al.), any d;
* :mod:`.distance` — dist_GMM (eq. (3)) for 1-D mixtures, with Gaussian total variation in closed form;
* :mod:`.calibration` — the smallest Gaussian noise σ for a KL target (certified by the bound, or by
  quadrature in 1-D);
* :mod:`.references` — KL and Rényi closed forms for Gaussians, 1-D quadrature, Monte Carlo with an
  interval, and the Rényi → (ε, δ) conversion.

EM in d dimensions is :func:`jaxpuffer.fit_gmm_nd`; ``examples/gmm_masking.py`` runs it all on
the Adult file. Not yet here (issue 14): dist_GMM in d > 1, mutual information, Theorem 4.3's
check, calibration of the masking noise itself (Algorithm 1 is random) and to MI or Rényi targets,
the leakage benchmark.
"""
from . import bounds, calibration, distance, masking, moments, references, series  # noqa: F401
from .mixtures import MultivariateGaussianMixture  # noqa: F401

__all__ = ["MultivariateGaussianMixture", "bounds", "calibration", "distance", "masking", "moments", "references", "series"]
