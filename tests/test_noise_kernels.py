"""Noise kernels (issue 12): GG(p) against scipy.stats.gennorm and mpmath (independent), p = 1 and
p = 2 against the Laplace and Normal kernels, samples against the variance, names and errors."""
import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import jaxpuffer as jp
from jaxpuffer.noise import GeneralizedGaussian, Laplace, Normal

PS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0)
B = 1.7


def _grid(p):
    """z/b from 0 to where the tail reaches 1e-300 ((z/b)^p ≈ 690), 1e3 for p ≤ 1; both signs."""
    far = 1e3 if p <= 1 else 690.0 ** (1.0 / p)
    t = np.concatenate([[0.0, 1e-8, 0.3, 1.0], np.geomspace(1.5, far, 14)])
    return np.concatenate([-t[::-1], t]) * B


def _mp_log_sf(z, p):
    mp.mp.dps = 40
    x = (mp.mpf(abs(z)) / B) ** p
    half_q = mp.gammainc(1 / mp.mpf(p), x, mp.inf, regularized=True) / 2
    return float(mp.log(half_q if z >= 0 else 1 - half_q))


@pytest.mark.parametrize("p", PS)
def test_gg_kernel_against_mpmath_and_scipy(p):
    k = GeneralizedGaussian(p)
    z = _grid(p)
    ref_sf = np.array([_mp_log_sf(v, p) for v in z])
    ref_cdf = np.array([_mp_log_sf(-v, p) for v in z])
    keep = ref_sf > np.log(1e-300)
    np.testing.assert_allclose(np.asarray(k.log_sf(z, B))[keep], ref_sf[keep], rtol=0, atol=1e-12)
    keep = ref_cdf > np.log(1e-300)
    np.testing.assert_allclose(np.asarray(k.log_cdf(z, B))[keep], ref_cdf[keep], rtol=0, atol=1e-12)
    # the log-density in closed form against scipy's gennorm, and the CDF where scipy's does not underflow
    np.testing.assert_allclose(np.asarray(k.log_density(z, B)), stats.gennorm.logpdf(z, p, scale=B), rtol=1e-13, atol=1e-13)
    mid = np.abs(z / B) ** p < 30
    np.testing.assert_allclose(np.exp(np.asarray(k.log_sf(z, B)))[mid], stats.gennorm.sf(z[mid], p, scale=B), rtol=1e-12)
    assert float(k.variance(B)) == pytest.approx(stats.gennorm.var(p, scale=B), rel=1e-13)


def test_gg_special_cases_are_laplace_and_normal():
    z = np.linspace(-40, 40, 81)
    for fn in ("log_density", "log_sf", "log_cdf"):
        np.testing.assert_allclose(getattr(GeneralizedGaussian(1.0), fn)(z, B), getattr(Laplace(), fn)(z, B), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(getattr(GeneralizedGaussian(2.0), fn)(z, B * np.sqrt(2)), getattr(Normal(), fn)(z, B), rtol=1e-12, atol=1e-12)
    assert float(GeneralizedGaussian(2.0).variance(B * np.sqrt(2))) == pytest.approx(float(Normal().variance(B)), rel=1e-14)
    assert float(GeneralizedGaussian(1.0).variance(B)) == pytest.approx(float(Laplace().variance(B)), rel=1e-14)


def test_samples_match_the_variance_and_kernels_are_pytrees():
    key = jax.random.PRNGKey(0)
    for k in (Laplace(), Normal(), GeneralizedGaussian(3.0)):
        x = k.sample(key, (200_000,), B)
        assert x.dtype == jnp.float64
        assert float(jnp.var(x)) == pytest.approx(float(k.variance(B)), rel=0.02)
    # a kernel is a pytree (its shape parameter a leaf): jit and grad pass through it
    d_var = jax.grad(lambda p: jax.jit(lambda k: k.variance(1.0))(GeneralizedGaussian(p)))(3.0)
    h = 1e-6
    fd = (float(GeneralizedGaussian(3.0 + h).variance(1.0)) - float(GeneralizedGaussian(3.0 - h).variance(1.0))) / (2 * h)
    assert float(d_var) == pytest.approx(fd, rel=1e-6)


def test_names_and_errors():
    assert jp.noise.resolve("laplace") == Laplace() and jp.noise.resolve("gaussian") == Normal()
    assert jp.noise.resolve(GeneralizedGaussian(1.5)).p == 1.5
    with pytest.raises(ValueError, match="^noise must be one of"):
        jp.noise.resolve("cauchy")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="^p must be"):
            GeneralizedGaussian(bad)
