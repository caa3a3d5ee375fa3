"""Pure ε (issue 16, item 5): ``calibrate(..., delta=0, level="exact")`` with Laplace noise returns
the smallest b whose exact δ is 0, for Gaussian and discrete priors; a clear ValueError where none
is searched (Gaussian noise on priors that differ, mixtures, other levels).

Reference (independent of jaxpuffer): ``tests/adversarial/reference.py``'s ``sup_log_ratio``, the
supremum over y of log p_i − log p_j for the noisy densities written with scipy (a sinh-spaced scan
150 scales into every tail, its largest maxima refined by scipy's bounded optimiser), both orders.
δ(b) = 0 exactly when that supremum is ≤ ε; so at the returned b it must be ≤ ε (to 1e-9 nats
plus the reference's own rounding bound, 16 ulps of the terms that cancel in its log-densities:
a b 1e-6 too small would exceed ε by ~1e-6·ε), and at b·(1 − 1e-6) it must exceed ε (the b is
the smallest, to 1e-6)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpuffer as jp
from adversarial import generators
from adversarial.reference import sup_log_ratio
from jaxpuffer.bounds import pure_scale
from jaxpuffer.cli import main

EPS = 1.0
ROUNDING = 1e-9


def assert_smallest_pure_scales(pairs, refs, n_zero_expected=None):
    result = jp.calibrate(pairs, EPS, 0.0, level="exact")
    assert result.converged and result.delta_achieved == 0.0 and result.certificate == "exact"
    scales = np.asarray(result.per_pair)
    assert np.all(np.isfinite(scales)) and np.all(scales >= 0)
    for b, (first, second) in zip(scales, refs):
        if b == 0:  # no noise needed: the priors' own δ is 0 (identical priors)
            continue
        sup, rounding = sup_log_ratio(first, second, b)
        assert sup - EPS <= ROUNDING + rounding, b
        assert sup_log_ratio(first, second, b * (1 - 1e-6))[0] - EPS > 0, b
    return result


def test_gaussian_pairs_get_the_smallest_pure_scale():
    pairs, refs = generators.gaussian_pairs(np.random.default_rng(5), 200)
    result = assert_smallest_pure_scales(pairs, refs)
    # MATH.md §6: the tail limits (σ_i² − σ_j²)/(2b²) ± Δμ/b make b_pure a lower bound; where the
    # supremum sits in the tails (every pair here) the answer is b_pure to the search's rtol
    d_mu = np.asarray(pairs.first.mean - pairs.second.mean)
    b_pure = np.asarray(pure_scale(d_mu, np.asarray(pairs.first.std), np.asarray(pairs.second.std), EPS))
    assert np.all(np.asarray(result.per_pair) >= b_pure * (1 - 1e-15))
    np.testing.assert_allclose(np.asarray(result.per_pair), b_pure, rtol=1e-9)


def test_discrete_pairs_get_the_smallest_pure_scale():
    pairs, refs = generators.discrete_pairs(np.random.default_rng(5), 200)
    result = assert_smallest_pure_scales(pairs, refs)
    # the Kantorovich paper's Theorem 1 (b = Δ/ε) is pure ε too, and never smaller
    theorem = jp.calibrate(pairs, EPS, 1e-6, level="theorem")
    assert np.all(np.asarray(result.per_pair) <= np.asarray(theorem.per_pair) * (1 + 1e-12))


def test_pure_scale_examples_of_math_md():
    """MATH.md §6: (0,1) vs (1,2), ε = 1: b_pure = (1 + √7)/2 = 1.8229; (0,0.1) vs (0,10):
    √(2·99.99)/2 = 7.07."""
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 3.0], [1.0, 0.1, 1.0]), jp.Gaussian([1.0, 0.0, 3.0], [2.0, 10.0, 1.0]))
    result = jp.calibrate(pairs, EPS, 0.0, level="exact")
    np.testing.assert_allclose(np.asarray(result.per_pair)[:2], [(1 + np.sqrt(7)) / 2, np.sqrt(2 * 99.99) / 2], rtol=1e-9)
    assert result.per_pair[2] == 0.0  # identical priors need no noise
    assert result.iterations == 1  # the first point, a hair above the analytic floor, is verified


def test_sweep_with_a_zero_delta_equals_its_single_calls():
    pairs = jp.PairSet(jp.Gaussian([0.0, 1.0], [1.0, 2.0]), jp.Gaussian([1.0, 0.0], [1.5, 1.0]))
    eps, delta = np.array([0.5, 1.0, 2.0]), np.array([0.0, 1e-6])
    swept = jp.calibrate(pairs, eps, delta[:, None], level="exact")
    for k, d in enumerate(delta):
        for m, e in enumerate(eps):
            one = jp.calibrate(pairs, float(e), float(d), level="exact")
            assert swept.scale[k, m] == one.scale and swept.delta_achieved[k, m] == one.delta_achieved
    assert np.all(swept.delta_achieved[0] == 0) and np.all(swept.scale[0] > swept.scale[1])


def test_pure_epsilon_under_jit_and_grad():
    pairs = jp.PairSet(jp.Gaussian([0.0], [1.0]), jp.Gaussian([1.0], [2.0]))
    concrete = jp.calibrate(pairs, EPS, 0.0, level="exact").scale
    traced = jax.jit(lambda d: jp.calibrate(pairs, EPS, d, level="exact").scale)(0.0)
    assert float(traced) == concrete
    # the pure-ε scale's derivative is not implemented: NaN, never a plausible 0
    grad = jax.grad(lambda m: jp.calibrate(jp.PairSet(jp.Gaussian(m, 1.0), jp.Gaussian(1.0, 2.0)), EPS, 0.0, level="exact").scale)
    assert np.isnan(grad(jnp.array([0.0]))).all()


@pytest.mark.parametrize(
    "pairs, kwargs, match",
    [
        (jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(0.0, 2.0)), {"noise": "gaussian"}, "unbounded"),  # unequal variances
        (jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 1.0)), {"noise": "gaussian"}, "unbounded"),  # a mean shift
        (jp.PairSet(jp.GaussianMixture([0.5, 0.5], [0.0, 1.0], [1.0, 1.0]), jp.GaussianMixture([0.5, 0.5], [0.0, 2.0], [1.0, 1.0])),
         {}, "not supported for GaussianMixture"),
        (jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(0.0, 2.0)), {"level": "theorem"}, "level 'exact' only"),
        (jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(0.0, 2.0)), {"level": "coupling"}, "level 'exact' only"),
    ],
)
def test_pure_epsilon_refused_where_no_scale_is_searched(pairs, kwargs, match):
    with pytest.raises(ValueError, match=match):
        jp.calibrate(pairs, EPS, 0.0, **{"level": "exact", **kwargs})


def test_gaussian_noise_on_identical_priors_needs_no_noise():
    pairs = jp.PairSet(jp.Gaussian([0.0, 2.0], [1.0, 3.0]), jp.Gaussian([0.0, 2.0], [1.0, 3.0]))
    assert jp.calibrate(pairs, EPS, 0.0, noise="gaussian", level="exact").scale == 0.0


def test_invalid_zero_delta_under_jit_is_nan():
    pairs = jp.PairSet(jp.Gaussian([0.0], [1.0]), jp.Gaussian([1.0], [2.0]))
    out = jax.jit(lambda d: jp.calibrate(pairs, EPS, d, noise="gaussian", level="exact").scale)(0.0)
    assert np.isnan(out)


def test_cli_pure_epsilon(capsys):
    assert main(["calibrate", "--delta", "0"]) == 0
    out = capsys.readouterr().out
    assert "level: exact" in out and "pure ε-private" in out
