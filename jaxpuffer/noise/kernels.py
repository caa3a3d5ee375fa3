"""Noise kernels: the distribution of N in Y = X + N, as small registered objects (issue 12).

A kernel answers what the layers above ask of the noise, for a scale ``b`` given per call (the
scale is what calibration solves for; the kernel holds only its shape):

* ``log_density(z, b)``, ``log_cdf(z, b)``, ``log_sf(z, b)`` — in log space, so that a δ of
  1e-300 never comes out of 1 − 0.999…;
* ``sample(key, shape, b)``; ``variance(b)``; ``name`` (the ``noise=`` string that selects it);
* ``levels`` — the levels of :func:`jaxpuffer.calibrate` that have an evaluator for it;
* ``pure_eps`` — whether δ = 0 (pure ε) is searched at the exact level: Laplace tails keep the
  log-ratio of two noisy priors bounded (MATH.md §6), so δ vanishes at a finite scale, and
  ``tail_log_ratios(log_mgf_ratio, b)`` gives its limits as y → ±∞ (δ > 0 where one exceeds ε);
  lighter tails (Gaussian) leave it unbounded for priors that differ, except in special cases
  that are not searched;
* ``shift_delta(w, b, eps)`` — the exact hockey-stick δ between the kernel and its own shift by
  w ≥ 0 (the point-mass / differential-privacy case); ``coupling_cost(w, b, eps)`` — the per-point
  cost h(w) of the coupling bound U = E_π[h(|x − x'|)] (MATH.md §6, Appendix E), ≥ the shift δ, and
  ``coupling_zero(b, eps)``, the shift below which that cost vanishes.

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
import numpy as np
from jax.custom_derivatives import SymbolicZero
from jax.scipy.special import gammaincc, gammaln

from .._roots import illinois
from .convolved import log_ndtr_accurate, shift_agm

_LOG_HALF = math.log(0.5)
_EPS64 = 2.0**-52
_ASYMPTOTIC_X = 200.0  # log Q(a, x) from its asymptotic series from here on
_SERIES_TERMS = 11


def _log1m_half_exp(log_t):
    """log(1 − e^{log_t}/2), for log_t ≤ 0 (no cancellation: the argument is ≤ 1/2)."""
    return jnp.log1p(-0.5 * jnp.exp(log_t))


_FAST_A = 0.125  # a = 1/p ≥ this (p ≤ 8): the fixed-length series / continued fraction below
_LOWER_SERIES_TERMS = 48  # x < a + 1 ≤ 3: the terms fall below 3^n/n! < 1e-34 past this
_FRACTION_TERMS = 64  # x ≥ a + 1


def _log_q_fixed(a, x):
    """log Q(a, x) for 1/8 ≤ a ≤ 2, x ≤ 200, in a fixed number of steps (XLA's ``igammac`` loops
    until its slowest element converges: 20× slower on a batch). x < a + 1: Q = 1 − P with
    P = x^a e^{−x}/Γ(a+1) Σ_n x^n/((a+1)…(a+n)); else the continued fraction of Γ(a, x) e^x x^{−a}
    (modified Lentz). Against mpmath (50 digits) on 450 points x ∈ [1e-12, 250] per a: worst
    48 ulps of 1 + |log Q| for a ∈ [1/8, 2] (the cancellation in 1 − P where Q is small)."""
    small = x < a + 1.0
    origin = x == 0  # Q(a, 0) = 1, kept out of log x (whose derivative there is infinite)
    xs = jnp.where(small & ~origin, x, 0.5 * (a + 1.0))

    def series(n, carry):
        term, total = carry
        term = term * xs / (a + n)
        return term, total + term

    _, total = jax.lax.fori_loop(1, _LOWER_SERIES_TERMS, series, (jnp.ones_like(xs), jnp.ones_like(xs)))
    lower = jnp.log1p(-jnp.exp(a * jnp.log(xs) - xs - gammaln(a + 1.0) + jnp.log(total)))
    xl = jnp.where(small, a + 2.0, x)
    tiny = 1e-300

    def fraction(i, carry):
        bb, c, d, h = carry
        an = -i * (i - a)
        bb = bb + 2.0
        d = an * d + bb
        c = bb + an / c
        d = 1.0 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        return bb, c, d, h * d * c

    bb0 = xl + 1.0 - a
    _, _, _, h = jax.lax.fori_loop(1, _FRACTION_TERMS, fraction, (bb0, jnp.full_like(xl, 1.0 / tiny), 1.0 / bb0, 1.0 / bb0))
    upper = a * jnp.log(xl) - xl - gammaln(a) + jnp.log(h)
    return jnp.where(origin, 0.0, jnp.where(small, lower, upper))


def log_gammaincc(a, x):
    """log Q(a, x), the regularised upper incomplete gamma, accurate where Q underflows (x ≥ 200:
    asymptotic series; below: :func:`_log_q_fixed` for 1/8 ≤ a ≤ 2, else
    ``jax.scipy.special.gammaincc``; a concrete a picks one branch at trace time, one traced a
    shared by every x — GG's p in a calibration — at run time with ``lax.cond``: computing both
    made GG calibrations 2.5× slower, the library's loops running until their slowest element
    converges).

    Its derivative in x is the closed form d/dx log Q = −x^{a−1} e^{−x} / (Γ(a) Q(a, x)) (a custom
    JVP: differentiating the fixed-length loops instead made reverse mode store every step, 1.3 GB
    for one 64-atom discrete pair under GG noise, and gave NaN through their 1e-300 guards); at
    x = 0 its limit, −1 for a = 1 and 0 for a > 1, and 0 for a < 1, where it is −∞ but every caller's
    x = (t/b)^p with p = 1/a > 1 has a zero tangent there. The derivative in a is forward-mode
    through the series (taken only where a carries a tangent)."""
    from .. import _validate

    a, x = jnp.asarray(a, jnp.float64), jnp.asarray(x, jnp.float64)
    if not _validate.is_concrete(a) and a.ndim == 0:
        return _log_q("switch", a, x)
    a, x = jnp.broadcast_arrays(a, x)
    fast_ok = (a >= _FAST_A) & (a <= 2.0)
    if _validate.is_concrete(a) and bool(jnp.all(fast_ok)):
        mode = "fixed"
    elif _validate.is_concrete(a) and not bool(jnp.any(fast_ok)):
        mode = "library"
    else:
        mode = "either"
    return _log_q(mode, a, x)


def _log_q_value(mode, a, x):
    """:func:`log_gammaincc` by the branch ``mode`` picked for a."""
    xs = jnp.maximum(x, _ASYMPTOTIC_X)
    term, total = jnp.ones_like(xs), jnp.ones_like(xs)
    for k in range(1, _SERIES_TERMS + 1):
        term = term * (a - k) / xs
        total = total + term
    asymptotic = (a - 1.0) * jnp.log(xs) - xs - gammaln(a) + jnp.log(total)
    xd = jnp.minimum(x, _ASYMPTOTIC_X)
    if mode == "fixed":
        direct = _log_q_fixed(a, xd)
    elif mode == "library":
        direct = jnp.log(gammaincc(a, xd))
    elif mode == "switch":  # one a (0-d) for every x: only its branch runs
        fast_ok = (a >= _FAST_A) & (a <= 2.0)
        direct = jax.lax.cond(fast_ok, lambda: _log_q_fixed(jnp.where(fast_ok, a, 1.0), xd), lambda: jnp.log(gammaincc(a, xd)))
    else:
        fast_ok = (a >= _FAST_A) & (a <= 2.0)
        a_fast = jnp.where(fast_ok, a, 1.0)
        direct = jnp.where(fast_ok, _log_q_fixed(a_fast, xd), jnp.log(gammaincc(a, xd)))
    return jnp.where(x >= _ASYMPTOTIC_X, asymptotic, direct)


_log_q = jax.custom_jvp(_log_q_value, nondiff_argnums=(0,))


def _log_q_jvp(mode, primals, tangents):
    a, x = primals
    a_dot, x_dot = tangents
    value = _log_q_value(mode, a, x)
    positive = x > 0
    log_x = jnp.log(jnp.where(positive, x, 1.0))
    slope = jnp.where(positive, -jnp.exp((a - 1.0) * log_x - x - gammaln(a) - value), jnp.where(a == 1.0, -1.0, 0.0))
    tangent = jnp.zeros_like(value) if type(x_dot) is SymbolicZero else slope * x_dot
    if type(a_dot) is not SymbolicZero:
        tangent = tangent + jax.jvp(lambda a_: _log_q_value(mode, a_, x), (a,), (a_dot,))[1]
    return value, tangent


_log_q.defjvp(_log_q_jvp, symbolic_zeros=True)


class _Kernel:
    """Shared log-CDF/survival plumbing: a kernel symmetric about 0 defines ``_log_tail(t, b)`` =
    log P(N > t) for t ≥ 0 (≤ log ½); log_sf and log_cdf follow without cancellation. A log-concave
    kernel also defines ``log_density_decay(t, b)`` (−d/dt log g_b at t ≥ 0) and
    ``decay_offsets(levels)`` (the standardised t where log g has fallen by ``levels``), which is
    all the exact level of discrete priors needs (:mod:`jaxpuffer.losses_enclosure`)."""

    name: ClassVar[str]
    symbol: ClassVar[str] = "b"  # how tables name the scale
    levels: ClassVar[tuple] = ()
    pure_eps: ClassVar[bool] = False
    shape_names: ClassVar[tuple] = ()  # the shape parameters (:meth:`shape_values`)

    def log_density_curvature_slope(self, t, b):
        """|dκ/dt| at t ≥ 0 (κ = −d²/dt² log g_b; monotone in t; at 0 the right limit), the third
        derivative that the density bounds of :mod:`jaxpuffer.losses_convolved` take to third order.
        +∞ here: a kernel that does not define it gets their second-order bounds."""
        return jnp.full(jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)), jnp.inf)

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

    def coupling_cost(self, w, b, eps):
        """h(w) of the coupling bound: the exact shift δ unless a kernel keeps a paper's form."""
        return self.shift_delta(w, b, eps)

    def coupling_zero(self, b, eps):
        """The cost vanishes for |w| below this (0: nowhere known)."""
        return jnp.zeros_like(b)

    def calibration_key(self):
        """What a compiled δ program of :mod:`jaxpuffer.losses` is keyed on (static, hashable): the
        name of a kernel without shape parameters."""
        return self.name

    def search_key(self):
        """What :func:`jaxpuffer.calibrate`'s compiled search is keyed on (static, hashable): the
        kernel's name, or the kernel with its shape parameters erased — they travel as values
        (:meth:`shape_values`), so that one compiled search serves every value."""
        return self.name

    def shape_values(self) -> tuple:
        """The kernel's shape parameters as values of the search (none here); concrete ones are
        validated."""
        return ()

    def with_shape(self, values):
        """This kernel with the shape parameters ``values`` (as :meth:`shape_values` orders them)."""
        return self

    def shape_ok(self):
        """Whether the shape parameters are valid for calibration (traced ones included)."""
        return np.bool_(True)

    def exact_equivalent(self):
        """(kernel, factor) where this kernel at scale b *is* ``kernel`` at scale b·factor (the same
        distribution, so the same exact δ), None where no other kernel is: the exact level then
        runs the other kernel's evaluator (closed forms where this one has a certified quadrature)."""
        return None

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True)
class Laplace(_Kernel):
    """Laplace noise, density e^{−|z|/b}/(2b) (MATH.md §6); ``noise="laplace"``."""

    name: ClassVar[str] = "laplace"
    symbol: ClassVar[str] = "b"
    levels: ClassVar[tuple] = ("theorem", "indicator", "coupling", "exact")
    pure_eps: ClassVar[bool] = True

    def log_density(self, z, b):
        return -jnp.abs(z) / b - jnp.log(2.0 * b)

    def _log_tail(self, t, b):
        return _LOG_HALF - t / b

    def sample(self, key, shape, b):
        return jax.random.laplace(key, shape, jnp.float64) * b

    def variance(self, b):
        return 2.0 * jnp.square(b)

    def log_density_decay(self, t, b):
        """−d/dt log g_b(t), t ≥ 0."""
        return jnp.broadcast_to(1.0 / b, jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)))

    def decay_offsets(self, levels):
        """The standardised t ≥ 0 where log g has fallen by ``levels`` from its peak."""
        return levels

    def log_density_curvature(self, t, b):
        """κ(t) = −d²/dt² log g_b(t) at t ≥ 0 (monotone in t; at 0 the right limit)."""
        return jnp.zeros(jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)))

    def log_density_curvature_slope(self, t, b):
        return jnp.zeros(jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)))

    def shift_delta(self, w, b, eps):
        """(1 − e^{(ε − w/b)/2})_+: the Laplace mechanism's exact δ for sensitivity w."""
        return jnp.maximum(-jnp.expm1(0.5 * (eps - jnp.abs(w) / b)), 0.0)

    def coupling_cost(self, w, b, eps):
        """The paper's per-point bound (1 − e^{ε − w/b})_+ of (35) (level L1 of MATH.md §6), ≥ the
        exact shift δ; kept so that the coupling level reproduces the Gaussian-priors paper."""
        return jnp.maximum(-jnp.expm1(eps - jnp.abs(w) / b), 0.0)

    def coupling_zero(self, b, eps):
        return eps * b

    def tail_log_ratios(self, log_mgf_ratio, b):
        """The limits of log p_i(y) − log p_j(y) as y → +∞ and −∞, stacked, for p = prior ⊛ Lap(b):
        p(y) e^{y/b}·2b → E[e^{X/b}] = M(1/b), so the limits are log M_i(±1/b) − log M_j(±1/b)
        (``log_mgf_ratio(t)``; MATH.md §6's (σ_i² − σ_j²)/(2b²) ± Δμ/b for Gaussian priors). δ > 0
        wherever one exceeds ε (the basis of δ = 0 calibration)."""
        return jnp.stack([log_mgf_ratio(1.0 / b), log_mgf_ratio(-1.0 / b)])


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

    def log_density_decay(self, t, b):
        return t / jnp.square(b)

    def decay_offsets(self, levels):
        return jnp.sqrt(2.0 * levels)

    def log_density_curvature(self, t, b):
        return jnp.broadcast_to(1.0 / jnp.square(b), jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)))

    def log_density_curvature_slope(self, t, b):
        return jnp.zeros(jnp.broadcast_shapes(jnp.shape(t), jnp.shape(b)))

    def shift_delta(self, w, b, eps):
        """The analytic Gaussian mechanism (Balle & Wang 2018) for sensitivity w, std b."""
        return shift_agm(jnp.abs(w), b, eps)


@dataclasses.dataclass(frozen=True)
class GeneralizedGaussian(_Kernel):
    """Generalized Gaussian noise GG(p), density p/(2bΓ(1/p)) e^{−(|z|/b)^p} (GG paper eq. (2),
    MATH.md §9). p = 1 is :class:`Laplace` (same b), p = 2 is :class:`Normal` with θ = b/√2."""

    p: Any
    name: ClassVar[str] = "generalized_gaussian"
    levels: ClassVar[tuple] = ("coupling", "exact")  # exact: losses_enclosure (Discrete), losses_convolved (Gaussian, mixture)
    shape_names: ClassVar[tuple] = ("p",)

    def __post_init__(self):
        from .. import _validate

        if self.p is not None and _validate.is_concrete(self.p) and not (jnp.ndim(self.p) == 0 and 0 < float(self.p) < math.inf):
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

    def log_density_decay(self, t, b):
        """p t^{p−1}/b^p (at t = 0: 1/b for p = 1, 0 for p > 1). The power is taken only at t > 0, so
        that no derivative at t = 0 is 0·∞ (traced p: (p − 1) 0^{p−2})."""
        p = self.p
        x = t / b
        positive = x > 0
        at_zero = jnp.where(p == 1.0, 1.0 / b, 0.0)
        return jnp.where(positive, p * jnp.where(positive, x, 1.0) ** (p - 1.0) / b, at_zero)

    def decay_offsets(self, levels):
        return levels ** (1.0 / self.p)

    def log_density_curvature(self, t, b):
        """p(p − 1) t^{p−2}/b^p: decreasing in t for p < 2 (∞ at 0), increasing for p > 2, 0 for
        p = 1 (the Laplace kernel, also at t = 0). The values at t = 0 are constants (∞, 2/b², 0),
        the power taken only at t > 0: no derivative is 0·∞ (a traced p = 2 has 0·0^{−1})."""
        p = self.p
        x = t / b
        positive = x > 0
        at_zero = jnp.where(p < 2.0, jnp.inf, jnp.where(p == 2.0, 2.0 / jnp.square(b), 0.0))
        value = jnp.where(positive, p * (p - 1.0) * jnp.where(positive, x, 1.0) ** (p - 2.0) / jnp.square(b), at_zero)
        return jnp.where(p == 1.0, 0.0, value)

    def log_density_curvature_slope(self, t, b):
        """|dκ/dt| = p(p − 1)|p − 2| t^{p−3}/b^p: decreasing in t for p < 3 (∞ at 0 unless p is 1 or
        2, where it is 0 everywhere), constant for p = 3, increasing for p > 3 (0 at 0). As
        :meth:`log_density_curvature`, the power only at t > 0 and constants at t = 0."""
        p = self.p
        x = t / b
        positive = x > 0
        at_zero = jnp.where(p < 3.0, jnp.inf, jnp.where(p == 3.0, 6.0 / b**3, 0.0))
        value = jnp.where(positive, p * (p - 1.0) * jnp.abs(p - 2.0) * jnp.where(positive, x, 1.0) ** (p - 3.0) / b**3, at_zero)
        return jnp.where((p == 1.0) | (p == 2.0), 0.0, value)

    def shift_delta(self, w, b, eps):
        """The exact hockey-stick δ between GG(0, b, p) and GG(w, b, p), p ≥ 1, as a certified upper
        bound (see :func:`gg_shift_delta`)."""
        return gg_shift_delta(self.p, jnp.abs(w) / b, eps)

    def __str__(self):
        return f"{self.name}(p={self.p})"

    def calibration_key(self):
        """This kernel with p a Python float ≥ 1 (the public δ functions compile one program per
        p; :func:`jaxpuffer.calibrate` does not: :meth:`search_key`)."""
        from .. import _validate

        if not _validate.is_concrete(self.p):
            raise ValueError("p of GeneralizedGaussian noise must be concrete here (it keys the compiled δ program); calibrate accepts a traced p")
        return GeneralizedGaussian(float(self.shape_values()[0]))

    def search_key(self):
        """The kernel with p erased: one compiled search for every p, which travels as a value (so
        that ``jax.grad`` of a calibrated scale with respect to p is the implicit derivative)."""
        return GeneralizedGaussian(None)

    def shape_values(self):
        """(p,). A concrete p < 1 is refused: the log-ratio of two shifted GG(p) densities is then
        not monotone and the shift δ has no half-line form (a traced one makes the scale NaN:
        :func:`jaxpuffer.calibration._poison_invalid`)."""
        from .. import _validate

        if _validate.is_concrete(self.p) and not float(self.p) >= 1.0:
            raise ValueError(f"p must be >= 1 to calibrate GeneralizedGaussian noise (p < 1: the shift's privacy loss is not monotone); got {float(self.p)!r}")
        return (float(self.p) if _validate.is_concrete(self.p) else self.p,)

    def with_shape(self, values):
        (p,) = values
        return GeneralizedGaussian(p)

    def shape_ok(self):
        return (self.p >= 1.0) & jnp.isfinite(self.p)

    def exact_equivalent(self):
        """For a concrete p = 1: :class:`Laplace` with the same b (density e^{−|z|/b}/(2b)); p = 2:
        :class:`Normal` with θ = b/√2 (density e^{−z²/b²}/(b√π)). A traced p has none (its exact
        level is the certified quadrature at every p, so that d/dp is taken through it)."""
        from .. import _validate

        if not _validate.is_concrete(self.p):
            return None
        return {1.0: (Laplace(), 1.0), 2.0: (Normal(), math.sqrt(0.5))}.get(float(self.p))


# GG shift δ: the relative margin on D(u) = |u − d|^p − |u|^p that makes both bracket ends certain
# (D is formed in expm1/log1p forms, accurate to a few ulps where it matters), the relative error
# allowed for each CDF value, in ulps of 1 + |log Q| (``log_gammaincc`` against mpmath on 600
# points x ∈ [1e-10, 760] per p: worst 48 for p ∈ [1/2, 8] (the fixed-length series), 59 for p = 16), and the root solver's steps.
_ROOT_MARGIN = 1e-13
_CDF_ULPS = 128.0
_ILLINOIS_STEPS = 40
_TAIL_X = 745.0  # (|u|)^p beyond which the standard GG tail is below 1e-300: δ ≤ F(−u) ≈ 0


def _gg_gap(u, d, p):
    """D(u) = |u − d|^p − |u|^p (d ≥ 0), non-increasing in u for p ≥ 1, without cancellation:
    u ≤ 0: |u|^p expm1(p log1p(d/|u|)); 0 < u < d: u^p expm1(p log((d − u)/u));
    u ≥ d: u^p expm1(p log1p(−d/u))."""
    a = jnp.abs(u)
    a_safe = jnp.where(a > 0, a, 1.0)
    left = a_safe**p * jnp.expm1(p * jnp.log1p(d / a_safe))
    right = a_safe**p * jnp.expm1(p * jnp.log(jnp.abs(d - u) / a_safe))
    beyond = a_safe**p * jnp.expm1(p * jnp.log1p(-jnp.minimum(d / a_safe, 1.0)))
    right = jnp.where(d - u > 0, right, beyond)
    return jnp.where(a == 0, d**p, jnp.where(u < 0, left, right))


def _gg_gap_slope(u, d, p):
    """|D'(u)| = p(|u − d|^{p−1} + sgn(u)|u|^{p−1}) (an estimate: it only sizes the bracket)."""
    return p * jnp.abs(jnp.abs(u - d) ** (p - 1.0) + jnp.sign(u) * jnp.abs(u) ** (p - 1.0))


def gg_shift_delta(p, d, eps):
    """δ = sup_B P(B) − e^ε Q(B) for P = GG(0, 1, p), Q = GG(d, 1, p) (shift d = w/b ≥ 0), p ≥ 1.

    For p ≥ 1 the log-ratio log P − log Q = D(y) = |y − d|^p − |y|^p is non-increasing, so
    {P > e^ε Q} is the half-line y < y* with D(y*) = ε, and δ = F(y*) − e^ε F(y* − d), F the GG
    CDF (issue 12; for p = 1 the Laplace mechanism's 1 − e^{(ε − d)/2}, for p = 2 the analytic
    Gaussian mechanism with θ = 1/√2). The root ŷ of D − ε in [max(−745^{1/p}, −2a₀), d/2],
    a₀ = (ε/(pd))^{1/(p−1)} (D(−2a₀) ≥ ε by convexity; checked), comes from Illinois regula
    falsi and is bracketed, a = ŷ − h ≤ y* ≤ c = ŷ + h, by checking
    D(a) ≥ ε(1 + 10⁻¹³) and D(c) ≤ ε(1 − 10⁻¹³). As δ(y) = F(y) − e^ε F(y − d) is stationary
    at y*, δ ≤ δ(ŷ) + (c − a) max_[a,c] p|1 − e^{ε − D}| (second order in the bracket), with each
    CDF moved by its error bound: an upper bound. A shift d ≥ 4·745^{1/p} gives 1 (δ = 1 to
    float64 precision; |u|^p could overflow there). Where the check fails the bound is
    F(d/2) − e^ε F(−745^{1/p} − d) (loose, still an upper bound). Roots beyond |y|^p = 745 leave
    δ ≤ F(−745^{1/p}) < 1e-300, returned as such. Relative looseness: about
    3e-14 (1 + |log F(y*)|) F(y*)/δ, from the CDFs' error bounds — ≤ 1e-9 for δ ≥ 1e-30 and
    ε ≥ 0.1, up to 1e-7 at δ = 1e-287 and 6e-7 at ε = 1e-3 with a shift ≪ ε (where δ ≪ F(y*)).
    p < 1 (the log-ratio is not monotone) gives NaN: the caller refuses it.
    """
    # 1/p for the CDFs: one shared 0-d value where p is one (log_gammaincc then runs one branch)
    inv_p = 1.0 / jnp.asarray(p, jnp.float64)
    p, d, eps = jnp.broadcast_arrays(*(jnp.asarray(v, jnp.float64) for v in (p, d, eps)))
    inv_p = inv_p if inv_p.ndim == 0 else 1.0 / p
    far = -(_TAIL_X ** (1.0 / p))
    half = 0.5 * d
    gap = lambda u: _gg_gap(u, d, p) - eps  # noqa: E731
    # D(u) ≥ p d |u|^{p−1} for u ≤ 0 (convexity), so D(−2a₀) ≥ 2^{p−1} ε, a₀ = (ε/(pd))^{1/(p−1)}:
    # the search starts there where that is checked (p = 1: at 0, D = d on u ≤ 0), else at `far`
    near = jnp.maximum(far, -2.0 * (eps / (p * d)) ** (1.0 / (p - 1.0)))
    near = jnp.where(jnp.isfinite(near), near, far)
    f_near = gap(near)
    far = jnp.where(f_near >= eps * _ROOT_MARGIN, near, far)
    f_far = gap(far)
    found = f_far >= eps * _ROOT_MARGIN  # else the root (if any) lies beyond `far`
    root = illinois(gap, far, half, f_far, -eps, _ILLINOIS_STEPS)
    h = 8.0 * _ROOT_MARGIN * eps / jnp.maximum(_gg_gap_slope(root, d, p), 1e-300) + 4.0 * _EPS64 * (jnp.abs(root) + d)
    a, c = jnp.maximum(root - h, far), jnp.minimum(root + h, half)
    gap_a, gap_c = _gg_gap(a, d, p), _gg_gap(c, d, p)
    sure = found & (gap_a >= eps * (1.0 + _ROOT_MARGIN)) & (gap_c <= eps * (1.0 - _ROOT_MARGIN))
    # δ(y) = F(y) − e^ε F(y − d) is stationary at y*: δ(y*) ≤ δ(ŷ) + (c − a) max_[a,c] |p − e^ε q|,
    # and |p − e^ε q| = p |1 − e^{ε − D}| ≤ p(t₀) expm1(g) on [a, c] (t₀ its point nearest 0)
    g = jnp.maximum(gap_a - eps, eps - gap_c) + 2.0 * _ROOT_MARGIN * eps
    t0 = jnp.clip(0.0, a, c)
    log_peak = jnp.log(p) - math.log(2.0) - gammaln(1.0 / p) - jnp.abs(t0) ** p
    second_order = jax.lax.stop_gradient(jnp.where(sure, (c - a) * jnp.exp(log_peak) * jnp.expm1(g) * (1.0 + 1e-12), 0.0))
    # where unsure: the whole interval (a loose upper bound); where no root: δ ≤ F(far) ≈ 0.
    # The ends carry no gradient: δ is stationary in y at y* (envelope theorem), so ∂δ/∂(d, ε, p)
    # comes from the CDFs alone
    y_p = jax.lax.stop_gradient(jnp.where(sure, root, jnp.where(found, half, far)))
    y_q = jax.lax.stop_gradient(jnp.where(sure, root, far))
    log_qp = log_gammaincc(inv_p, jnp.abs(y_p) ** p)
    log_fp = jnp.where(y_p <= 0, _LOG_HALF + log_qp, _log1m_half_exp(log_qp))  # log F(y_p)
    log_qq = log_gammaincc(inv_p, (d - y_q) ** p)
    log_fq = _LOG_HALF + log_qq  # log F(y_q − d), y_q − d ≤ 0
    fp = jnp.exp(log_fp) * (1.0 + _CDF_ULPS * _EPS64 * (1.0 + jnp.abs(log_qp)))
    fq = jnp.exp(eps + log_fq) * (1.0 - _CDF_ULPS * _EPS64 * (1.0 + jnp.abs(log_qq)))
    value = jnp.where(found, fp - fq, fp) + second_order
    # a shift beyond 4·745^{1/p} (where |u|^p may overflow): B = {y < d/2} gives
    # δ ≥ 1 − (1 + e^ε) F(−d/2) with (d/2)^p ≥ 2^p·745, so δ = 1 in float64
    value = jnp.where(d >= 4.0 * _TAIL_X ** (1.0 / p), 1.0, value)
    return jnp.where(p >= 1.0, jnp.clip(value, 0.0, 1.0), jnp.nan)


jax.tree_util.register_dataclass(Laplace, data_fields=[], meta_fields=[])
jax.tree_util.register_dataclass(Normal, data_fields=[], meta_fields=[])
jax.tree_util.register_dataclass(GeneralizedGaussian, data_fields=["p"], meta_fields=[])

_REGISTRY: dict = {}


def in_equivalent_units(scale, factor, up):
    """``scale``·``factor`` moved outward by a few ulps (up: the product's rounding never below the
    exact value; else never above it), exactly ``scale`` for a factor of 1: a scale handed to or
    from a kernel's :meth:`_Kernel.exact_equivalent` keeps δ on the safe side (δ does not increase
    with the scale). 2⁻⁵⁰ exceeds the roundings involved: at most four of 2⁻⁵³ each (the factor
    itself, e.g. 1/fl(√½), its margin, and the product)."""
    if factor == 1.0:
        return scale
    return scale * (factor * (1.0 + 2.0**-50 if up else 1.0 - 2.0**-50))


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
