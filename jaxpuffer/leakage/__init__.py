"""Information leakage of Gaussian-mixture releases (the GMM-masking paper, ``../shared/papers/002``,
Wu; MATH.md §10), one module per concern:

* :mod:`.mixtures` — d-dimensional Gaussian mixtures (:class:`MultivariateGaussianMixture`);
* :mod:`.masking` — the masking mechanism (Algorithm 1), batched over keys;
* :mod:`.moments` — the closed-form moments E_P[R^k] (Lemma 3.1, eqs. (12)–(13));
* :mod:`.series` — the Taylor and Legendre series for entropy, cross-entropy and KL (eqs. (14)–(17),
  Theorem 4.2) with the errata corrected and their float64 rounding bounded (pure JAX: vmap over
  pairs, grad in the parameters);
* :mod:`.bounds` — certified lower and upper bounds on KL (Hershey & Olsen; Durrieu et al.) and an
  upper bound on the Rényi divergence (joint convexity), any d;
* :mod:`.information` — mutual information of a Gaussian release, I(X; Y) and a secret's I(S; Y),
  with certified brackets (Kolchinsky & Tracey) and references; Theorem 4.3's σ²;
* :mod:`.distance` — dist_GMM (eq. (3)) for 1-D mixtures, with Gaussian total variation in closed form;
* :mod:`.calibration` — the smallest Gaussian noise σ for a KL, Rényi or mutual-information target
  (certified by a bound, or by quadrature in 1-D);
* :mod:`.quadrature` — KL between 1-D mixtures by a batched, differentiable panel Gauss–Legendre
  rule with an error estimate (the fast path beside the scipy reference);
* :mod:`.references` — KL and Rényi closed forms for Gaussians, 1-D quadrature, Monte Carlo with an
  interval, and the Rényi → (ε, δ) conversion.

EM in d dimensions is :func:`jaxpuffer.fit_gmm_nd`; ``examples/gmm_masking.py`` runs it all on
the Adult file. Not here: calibration of the masking noise of Algorithm 1 itself (the release it
masks is random); :mod:`.calibration` calibrates additive Gaussian noise on the released value.
"""
from . import bounds, calibration, distance, information, masking, moments, quadrature, references, series  # noqa: F401
from .mixtures import MultivariateGaussianMixture  # noqa: F401

__all__ = ["MultivariateGaussianMixture", "bounds", "calibration", "distance", "information", "masking", "moments", "quadrature", "references", "series"]
