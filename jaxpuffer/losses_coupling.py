"""The Monge-coupling bound (35) (level L1 of MATH.md §6) for one pair of Gaussian components.

Under the Monge map T(x) = μ_j + (σ_j/σ_i)(x − μ_i), W = x − T(x) ~ N(Δμ, Δσ²) and
δ ≤ U1 = E[h(|W|)], h(w) the hockey-stick of the noise against its own shift by w: Laplace
(1 − e^{ε − w/b})_+, Gaussian the analytic Gaussian mechanism (Appendix E). Used by the Gaussian
pairs of :mod:`jaxpuffer.losses` and, component by component, by the mixtures of
:mod:`jaxpuffer.losses_mixture`.
"""

from __future__ import annotations

import math
from functools import partial

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr

from .noise import kernels, log_mills, log_ndtr_accurate

_EPS64 = float(np.finfo(np.float64).eps)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def log_mills_drop(u, v):
    """An upper bound on M(u) − M(u − v) ≥ 0 (v ≥ 0), M(x) = log Φ(x) + x²/2, that cannot cancel.

    Forming M(u − v) and M(u) separately loses everything when u is large (both ≈ u²/2: two stds
    that differ by an ulp made the coupling bound 0 where δ was 0.4, issue 17). Instead, with
    x = u − v:  x ≥ 0: v(u − v/2) + log Φ(u) − log Φ(x);  x < 0 ≤ u: u²/2 + log Φ(u) − M(x);
    u < 0: M(u) − M(x) (erfcx forms, no x² terms). Each is raised by 32 ulps of the terms it adds
    (their rounding), and capped by the convexity bound v M'(u), M'(u) = u + φ(u)/Φ(u) (M is
    convex: 0 < M'' < 1), which is exact to first order for small v and accurate for u ≥ −1.
    """
    x = u - v
    u_ok = jnp.where(u >= -1.0, u, 0.0)
    # each special function once, on stacked points (compile time grows with the call sites)
    log_u, log_x, log_u_ok = log_ndtr(jnp.stack(jnp.broadcast_arrays(u, x, u_ok)))
    m_u, m_x = log_mills(jnp.stack(jnp.broadcast_arrays(u, x)))
    kink = v * (u - 0.5 * v)
    drop = jnp.where(x >= 0, kink + log_u - log_x, jnp.where(u >= 0, 0.5 * u**2 + log_u - m_x, m_u - m_x))
    size = jnp.where(x >= 0, jnp.abs(kink) + jnp.abs(log_u) + jnp.abs(log_x), jnp.where(u >= 0, 0.5 * u**2 + jnp.abs(log_u), jnp.abs(m_u)) + jnp.abs(m_x))
    raised = drop + 32.0 * _EPS64 * (size + 1.0)
    slope = u_ok + jnp.exp(-0.5 * u_ok**2 - _LOG_SQRT_2PI - log_u_ok)
    first_order = jnp.where(u >= -1.0, v * slope * (1.0 + 1e-13), jnp.inf)
    return jnp.maximum(jnp.minimum(raised, first_order), 0.0)


def coupling_laplace_closed(d_mu, d_sigma, b, eps):
    """L1, (35) in closed form: Σ over the two tails of E[(1 − e^{ε − |W|/b}); ±W > εb].

    Each tail is Φ(u) − e^{T(u, v)} = Φ(u) (1 − e^{−(M(u) − M(u − v))}), u = (±Δμ − εb)/|Δσ|,
    v = |Δσ|/b (MATH.md §6 with the exponentials folded into T), with the drop M(u) − M(u − v)
    bounded above without cancellation (:func:`log_mills_drop`) and the product rounded up, so
    the bound stays an upper bound for std differences down to one ulp.
    """
    s = jnp.abs(d_sigma)
    has_s = s > 0
    s_safe = jnp.where(has_s, s, 1.0)
    v = s_safe / b

    def tail(m):
        u = (m - eps * b) / s_safe
        # log Φ(u) is accurate to a few ulps of 1 + min(u, 0)²/2: raised by 8
        return jnp.exp(log_ndtr_accurate(u) + 8.0 * _EPS64 * (1.0 + 0.5 * jnp.minimum(u, 0.0) ** 2)) * -jnp.expm1(-log_mills_drop(u, v))

    right, left = tail(jnp.stack(jnp.broadcast_arrays(d_mu, -d_mu)))  # both tails in one call
    smooth = right + left
    point = jnp.maximum(-jnp.expm1(eps - jnp.abs(d_mu) / b), 0.0)
    return jnp.clip(jnp.where(has_s, smooth, point), 0.0, 1.0)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)  # numpy: the import starts no JAX backend
_PANELS = 16
_Z_MAX = 40.0  # N(0, 1) mass beyond ±40 is below 1e-300


def standard_quadrature(h, d_mu, s, z_lo, z_hi):
    """∫ h(Δμ + s z) φ(z) dz over z_lo < z < z_hi (clipped to ±40) by composite Gauss–Legendre,
    16 panels × 16 nodes: the integrand is smooth inside, so the panels converge fast."""
    lo = jnp.clip(z_lo, -_Z_MAX, _Z_MAX)[..., None]
    hi = jnp.clip(z_hi, -_Z_MAX, _Z_MAX)[..., None]
    edges = lo + (hi - lo) * jnp.linspace(0.0, 1.0, _PANELS + 1)
    half = 0.5 * (edges[..., 1:] - edges[..., :-1])
    z = (0.5 * (edges[..., 1:] + edges[..., :-1]))[..., None] + half[..., None] * _GL_NODES
    w = d_mu[..., None, None] + s[..., None, None] * z
    values = h(w) * jnp.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    return jnp.sum(half * jnp.sum(_GL_WEIGHTS * values, axis=-1), axis=-1)


def coupling_kernel(noise, b, eps, extra_axes: int = 1):
    """h(w): the per-point cost of (35) for the kernel ``noise`` (a name or a kernel: its
    ``coupling_cost``); ``w`` carries ``extra_axes`` trailing axes beyond the batch."""
    b, eps = (x.reshape(x.shape + (1,) * extra_axes) for x in (b, eps))
    return partial(kernels.resolve(noise).coupling_cost, b=b, eps=eps)


def coupling_quadrature(d_mu, d_sigma, b, eps, noise):
    """L1, (35), by quadrature of E[h(|W|)], W ~ N(Δμ, Δσ²), any noise (arrays of one shape)."""
    s = jnp.abs(d_sigma)
    has_s = s > 0
    s_safe = jnp.where(has_s, s, 1.0)
    h = coupling_kernel(noise, b, eps, extra_axes=2)
    cut = kernels.resolve(noise).coupling_zero(b, eps)  # h vanishes on (−cut, cut)
    z_right, z_left = (cut - d_mu) / s_safe, (-cut - d_mu) / s_safe
    smooth = standard_quadrature(h, d_mu, s_safe, z_right, jnp.full_like(b, _Z_MAX)) + standard_quadrature(
        h, d_mu, s_safe, jnp.full_like(b, -_Z_MAX), z_left
    )
    point = coupling_kernel(noise, b, eps, extra_axes=0)(d_mu)
    return jnp.clip(jnp.where(has_s, smooth, point), 0.0, 1.0)
