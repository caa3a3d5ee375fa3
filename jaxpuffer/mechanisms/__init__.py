"""Differential-privacy mechanisms of the generalized Gaussian paper (``../shared/papers/003``,
Liu; MATH.md §9), one module per concern:

* :mod:`.sensitivity` — ℓp global sensitivity (Definition 1) and Lemma 2's bound;
* :mod:`.gg_pure` — ε-DP on bounded data: eq. (6), the truncated GG mechanism (eqs. (7)–(9)) and
  its exact sampler, thresholding (eqs. (10)–(14)) with its tight scale, and why discarding fails;
* :mod:`.gg_probabilistic` — (ε, δ)-probabilistic DP: Lemma 5 by Monte Carlo (corrected
  threshold), Lemma 10 / eq. (18), the classical eq. (19), Lemma 11 (corrected constant);
* :mod:`.exponential` — the exponential mechanism, Lemmas 7–9;
* :mod:`.gg_exact` — beyond the paper: the exact (ε, δ)-DP δ of GG noise (closed form for a
  scalar query and for Laplace or Gaussian noise on a vector, pessimistic PLD composition for other
  p) and the smallest b that meets it;
* :mod:`.laplace_vector` — the closed-form δ(ε) of the Laplace mechanism on a vector query.
"""
from . import exponential, gg_exact, gg_probabilistic, gg_pure, laplace_vector, sensitivity  # noqa: F401

__all__ = ["exponential", "gg_exact", "gg_probabilistic", "gg_pure", "laplace_vector", "sensitivity"]
