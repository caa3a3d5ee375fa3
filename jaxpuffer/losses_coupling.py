"""The Monge-coupling bound (35) (level L1 of MATH.md §6) for one pair of Gaussian components.

Under the Monge map T(x) = μ_j + (σ_j/σ_i)(x − μ_i), W = x − T(x) ~ N(Δμ, Δσ²) and
δ ≤ U1 = E[h(|W|)], h(w) the hockey-stick of the noise against its own shift by w: Laplace
(1 − e^{ε − w/b})_+, Gaussian the analytic Gaussian mechanism (Appendix E). Used by the Gaussian
pairs of :mod:`jaxpuffer.losses` and, component by component, by the mixtures of
:mod:`jaxpuffer.losses_mixture`.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr

from .noise import log_mills, shift_agm


def coupling_laplace_closed(d_mu, d_sigma, b, eps):
    """L1, (35) in closed form: Σ over the two tails of E[(1 − e^{ε − |W|/b}); ±W > εb].

    Each tail is Φ(u) − e^{T(u, v)} = −Φ(u) expm1(M(u − v) − M(u)), u = (±Δμ − εb)/|Δσ|,
    v = |Δσ|/b (MATH.md §6 with the exponentials folded into T, no overflow or cancellation).
    """
    s = jnp.abs(d_sigma)
    has_s = s > 0
    s_safe = jnp.where(has_s, s, 1.0)
    v = s_safe / b

    def tail(m):
        u = (m - eps * b) / s_safe
        return -jnp.exp(log_ndtr(u)) * jnp.expm1(log_mills(u - v) - log_mills(u))

    smooth = tail(d_mu) + tail(-d_mu)
    point = jnp.maximum(-jnp.expm1(eps - jnp.abs(d_mu) / b), 0.0)
    return jnp.clip(jnp.where(has_s, smooth, point), 0.0, 1.0)


_GL_NODES, _GL_WEIGHTS = (jnp.asarray(a) for a in np.polynomial.legendre.leggauss(16))
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
    """h(w): the hockey-stick of the noise against itself shifted by w (the per-point cost of (35));
    ``w`` carries ``extra_axes`` trailing axes beyond the batch."""
    b, eps = (x.reshape(x.shape + (1,) * extra_axes) for x in (b, eps))
    if noise == "laplace":
        return lambda w: jnp.maximum(-jnp.expm1(eps - jnp.abs(w) / b), 0.0)
    return lambda w: shift_agm(jnp.abs(w), b, eps)


def coupling_quadrature(d_mu, d_sigma, b, eps, noise):
    """L1, (35), by quadrature of E[h(|W|)], W ~ N(Δμ, Δσ²), any noise (arrays of one shape)."""
    s = jnp.abs(d_sigma)
    has_s = s > 0
    s_safe = jnp.where(has_s, s, 1.0)
    h = coupling_kernel(noise, b, eps, extra_axes=2)
    cut = eps * b if noise == "laplace" else jnp.zeros_like(b)  # h vanishes on (−cut, cut)
    z_right, z_left = (cut - d_mu) / s_safe, (-cut - d_mu) / s_safe
    smooth = standard_quadrature(h, d_mu, s_safe, z_right, jnp.full_like(b, _Z_MAX)) + standard_quadrature(
        h, d_mu, s_safe, jnp.full_like(b, -_Z_MAX), z_left
    )
    point = coupling_kernel(noise, b, eps, extra_axes=0)(d_mu)
    return jnp.clip(jnp.where(has_s, smooth, point), 0.0, 1.0)
