"""Noise kernels: the distribution of N in Y = X + N, as small registered objects (issue 12).

A kernel answers what the layers above ask of the noise, for a scale ``b`` given per call (the
scale is what calibration solves for; the kernel holds only its shape):

* ``log_density(z, b)``, ``log_cdf(z, b)``, ``log_sf(z, b)`` — in log space, so that a δ of
  1e-300 never comes out of 1 − 0.999…;
* ``sample(key, shape, b)``; ``variance(b)``; ``name`` (the ``noise=`` string that selects it);
* ``levels`` — the levels of :func:`jaxpuffer.calibrate` that have an evaluator for it.

Kernels are frozen dataclasses registered as pytrees: their shape parameters (GG's p) are leaves,
so a kernel passes through ``jit``, ``vmap`` and ``grad``.

* :class:`Laplace` — density e^{−|z|/b}/(2b); GG(1) with the same b; variance 2b².
* :class:`Normal` — N(0, θ²), scale θ; GG(2) with b = θ√2; variance θ².
* :class:`GeneralizedGaussian` ``(p)`` — density p/(2bΓ(1/p)) e^{−(|z|/b)^p} (the GG paper, eq. (2);
  MATH.md §9), CDF ½[1 + sgn(z) P(1/p, (|z|/b)^p)] with P the regularised lower incomplete gamma,
  variance b²Γ(3/p)/Γ(1/p). Its tail ½Q(1/p, x), x = (|z|/b)^p, is taken as log Q from the
  asymptotic series x^{a−1}e^{−x}/Γ(a) Σ_k (a−1)…(a−k)/x^k beyond x = 200 (11 terms: relative
  error < 1e-17 for a = 1/p ≤ 2) and from ``gammaincc`` below, where Q ≥ e^{−200}.

``resolve(noise)`` turns a name or a kernel into a kernel; :func:`register` adds a kernel under
its name. A new kernel is one class here (or in its own module) plus one ``register`` call.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaincc, gammaln

from .convolved import log_ndtr_accurate

_LOG_HALF = math.log(0.5)
_ASYMPTOTIC_X = 200.0  # log Q(a, x) from its asymptotic series from here on
_SERIES_TERMS = 11


def _log1m_half_exp(log_t):
    """log(1 − e^{log_t}/2), for log_t ≤ 0 (no cancellation: the argument is ≤ 1/2)."""
    return jnp.log1p(-0.5 * jnp.exp(log_t))


def log_gammaincc(a, x):
    """log Q(a, x), the regularised upper incomplete gamma, accurate where Q underflows (x ≥ 200:
    asymptotic series; below: ``jax.scipy.special.gammaincc``)."""
    xs = jnp.maximum(x, _ASYMPTOTIC_X)
    term, total = jnp.ones_like(xs), jnp.ones_like(xs)
    for k in range(1, _SERIES_TERMS + 1):
        term = term * (a - k) / xs
        total = total + term
    asymptotic = (a - 1.0) * jnp.log(xs) - xs - gammaln(a) + jnp.log(total)
    direct = jnp.log(gammaincc(a, jnp.minimum(x, _ASYMPTOTIC_X)))
    return jnp.where(x >= _ASYMPTOTIC_X, asymptotic, direct)


class _Kernel:
    """Shared log-CDF/survival plumbing: a kernel symmetric about 0 defines ``_log_tail(t, b)`` =
    log P(N > t) for t ≥ 0 (≤ log ½); log_sf and log_cdf follow without cancellation."""

    name: ClassVar[str]
    symbol: ClassVar[str] = "b"  # how tables name the scale
    levels: ClassVar[tuple] = ()

    def _log_tail(self, t, b):  # pragma: no cover - every kernel defines it
        raise NotImplementedError

    def log_sf(self, z, b):
        """log P(N > z)."""
        z = jnp.asarray(z, jnp.float64)
        tail = self._log_tail(jnp.abs(z), b)
        return jnp.where(z >= 0, tail, _log1m_half_exp(tail - _LOG_HALF))

    def log_cdf(self, z, b):
        """log P(N ≤ z)."""
        return self.log_sf(-jnp.asarray(z, jnp.float64), b)

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True)
class Laplace(_Kernel):
    """Laplace noise, density e^{−|z|/b}/(2b) (MATH.md §6); ``noise="laplace"``."""

    name: ClassVar[str] = "laplace"
    symbol: ClassVar[str] = "b"
    levels: ClassVar[tuple] = ("theorem", "indicator", "coupling", "exact")

    def log_density(self, z, b):
        return -jnp.abs(z) / b - jnp.log(2.0 * b)

    def _log_tail(self, t, b):
        return _LOG_HALF - t / b

    def sample(self, key, shape, b):
        return jax.random.laplace(key, shape, jnp.float64) * b

    def variance(self, b):
        return 2.0 * jnp.square(b)


@dataclasses.dataclass(frozen=True)
class Normal(_Kernel):
    """Gaussian noise N(0, θ²), scale θ (MATH.md §7); ``noise="gaussian"``."""

    name: ClassVar[str] = "gaussian"
    symbol: ClassVar[str] = "θ"
    levels: ClassVar[tuple] = ("coupling", "exact")

    def log_density(self, z, b):
        return -0.5 * jnp.square(z / b) - jnp.log(b) - 0.5 * math.log(2.0 * math.pi)

    def _log_tail(self, t, b):
        return log_ndtr_accurate(-t / b)

    def sample(self, key, shape, b):
        return jax.random.normal(key, shape, jnp.float64) * b

    def variance(self, b):
        return jnp.square(b)


@dataclasses.dataclass(frozen=True)
class GeneralizedGaussian(_Kernel):
    """Generalized Gaussian noise GG(p), density p/(2bΓ(1/p)) e^{−(|z|/b)^p} (GG paper eq. (2),
    MATH.md §9). p = 1 is :class:`Laplace` (same b), p = 2 is :class:`Normal` with θ = b/√2."""

    p: Any
    name: ClassVar[str] = "generalized_gaussian"

    def __post_init__(self):
        from .. import _validate

        if _validate.is_concrete(self.p) and not (jnp.ndim(self.p) == 0 and 0 < float(self.p) < math.inf):
            raise ValueError(f"p must be a positive finite scalar (the GG shape); got {self.p!r}")

    def log_density(self, z, b):
        p = self.p
        return jnp.log(p) - jnp.log(2.0 * b) - gammaln(1.0 / p) - (jnp.abs(z) / b) ** p

    def _log_tail(self, t, b):
        return _LOG_HALF + log_gammaincc(1.0 / self.p, (t / b) ** self.p)

    def sample(self, key, shape, b):
        return jax.random.generalized_normal(key, self.p, shape, jnp.float64) * b

    def variance(self, b):
        return jnp.square(b) * jnp.exp(gammaln(3.0 / self.p) - gammaln(1.0 / self.p))


jax.tree_util.register_dataclass(Laplace, data_fields=[], meta_fields=[])
jax.tree_util.register_dataclass(Normal, data_fields=[], meta_fields=[])
jax.tree_util.register_dataclass(GeneralizedGaussian, data_fields=["p"], meta_fields=[])

_REGISTRY: dict = {}


def register(kernel):
    """Makes ``kernel`` selectable by its name (``noise="name"``); returns it."""
    _REGISTRY[kernel.name] = kernel
    return kernel


register(Laplace())
register(Normal())


def resolve(noise):
    """The kernel for ``noise``: a registered name (``"laplace"``, ``"gaussian"``) or a kernel."""
    if isinstance(noise, _Kernel):
        return noise
    if isinstance(noise, str) and noise in _REGISTRY:
        return _REGISTRY[noise]
    raise ValueError(f"noise must be one of {tuple(_REGISTRY)} or a noise kernel (jaxpuffer.noise.Laplace(), ...); got {noise!r}")


def names() -> tuple:
    """The registered kernel names."""
    return tuple(_REGISTRY)
