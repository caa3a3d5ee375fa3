"""τ*(δ) against scipy and mpmath (independent references)."""
import jax
import mpmath
import numpy as np
import pytest
import scipy.special
import scipy.stats

import jaxpuffer as jp

DELTAS = np.concatenate([10.0 ** -np.arange(300, 0, -7.0), np.linspace(0.05, 0.999, 40)])


def test_exact_matches_scipy_isf_down_to_1e300():
    ours = np.asarray(jp.tau_star(DELTAS))
    ref = scipy.stats.norm.isf(DELTAS / 2)  # Q⁻¹(δ/2), eq. (20)
    np.testing.assert_allclose(ours, ref, rtol=1e-13)


def test_lambert_matches_scipy_lambertw():
    deltas = DELTAS[DELTAS > 1e-150]  # 2/(πδ²) overflows float64 below that; see the mpmath test
    ref = np.sqrt(np.real(scipy.special.lambertw(2 / (np.pi * deltas**2))))  # eq. (23)
    np.testing.assert_allclose(np.asarray(jp.tau_star(deltas, "lambert")), ref, rtol=1e-13)


@pytest.mark.parametrize("delta", ["1e-300", "1e-200", "1e-160"])
def test_lambert_tiny_delta_matches_mpmath(delta):
    with mpmath.workdps(40):
        ref = float(mpmath.sqrt(mpmath.lambertw(2 / (mpmath.pi * mpmath.mpf(delta) ** 2))))
    assert float(jp.tau_star(float(delta), "lambert")) == pytest.approx(ref, rel=1e-13)


def test_implicit_equals_closed_lambert_and_bounds_exact():
    implicit = np.asarray(jp.tau_star(DELTAS, "lambert_implicit"))
    np.testing.assert_allclose(implicit, np.asarray(jp.tau_star(DELTAS, "lambert")), rtol=1e-12)
    assert np.all(implicit >= np.asarray(jp.tau_star(DELTAS)))
    # (22) holds with equality at its root: τ² = 2 W0(τ / (√(2π) δ)), checked with scipy.
    d = DELTAS[DELTAS > 1e-150]
    t = implicit[DELTAS > 1e-150]
    np.testing.assert_allclose(t**2, 2 * np.real(scipy.special.lambertw(t / (np.sqrt(2 * np.pi) * d))), rtol=1e-10)


@pytest.mark.parametrize("method", jp.tau.METHODS)
def test_decreasing_in_delta(method):
    values = np.asarray(jp.tau_star(DELTAS, method))
    assert np.all(np.diff(values) < 0)


@pytest.mark.parametrize("method", jp.tau.METHODS)
@pytest.mark.parametrize("delta", [1e-12, 1e-3, 0.3, 0.9])
def test_gradient_matches_finite_difference(method, delta):
    grad = float(jax.grad(lambda d: jp.tau_star(d, method))(delta))
    if method == "exact":
        h = delta * 1e-6
        ref = (scipy.stats.norm.isf((delta + h) / 2) - scipy.stats.norm.isf((delta - h) / 2)) / (2 * h)
    else:  # eq. (23) with scipy's lambertw
        f = lambda d: np.sqrt(np.real(scipy.special.lambertw(2 / (np.pi * d**2))))  # noqa: E731
        h = delta * 1e-6
        ref = (f(delta + h) - f(delta - h)) / (2 * h)
    assert grad == pytest.approx(ref, rel=1e-6)


def test_jit_and_vmap():
    f = jax.jit(lambda d: jp.tau_star(d, "lambert_implicit"))
    np.testing.assert_allclose(f(DELTAS), jax.vmap(f)(DELTAS), rtol=1e-15)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_delta_raises(bad):
    with pytest.raises(ValueError, match="delta"):
        jp.tau_star(bad)


def test_bad_method_raises():
    with pytest.raises(ValueError, match="method"):
        jp.tau_star(0.1, "newton")
