"""The noise N in Y = X + N: kernels as registered objects (:mod:`.kernels`) and the densities of
priors convolved with them (:mod:`.convolved`).

``jaxpuffer.noise.Laplace()``, ``jaxpuffer.noise.Normal()`` and
``jaxpuffer.noise.GeneralizedGaussian(p)`` are the kernels; the strings ``"laplace"`` and
``"gaussian"`` name the first two wherever a ``noise=`` argument is taken.
"""
from .convolved import (  # noqa: F401  (the evaluators' special functions)
    _log1m,
    gauss_laplace,
    interval_mass,
    laplace_log_ratio,
    laplace_terms,
    log_mills,
    log_ndtr_accurate,
    ndtr_pair,
    normal_mass,
    normal_mass_ulps,
    safe_erfcx,
    shift_agm,
    tail_normalized,
)
from .kernels import GeneralizedGaussian, Laplace, Normal, gg_shift_delta, log_gammaincc, names, register, resolve

__all__ = ["GeneralizedGaussian", "Laplace", "Normal", "gg_shift_delta", "log_gammaincc", "names", "register", "resolve"]
