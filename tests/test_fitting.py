"""EM fitting of Gaussian-mixture priors, against scikit-learn (test-only reference)."""
import jax
import numpy as np
import pytest
from sklearn.mixture import GaussianMixture as SkMixture

import jaxpuffer as jp
from jaxpuffer.fitting import _weighted_quantiles


def synthetic(seed, n=(300, 500, 200), means=(-2.0, 1.0, 5.0), stds=(0.5, 1.0, 0.7)):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(m, s, k) for m, s, k in zip(means, stds, n)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_likelihood_matches_scikit_learn_from_the_same_start(seed):
    x = synthetic(seed)
    fit = jp.fit_gmm(x, 3, key=jax.random.PRNGKey(seed), init="quantile", tol=1e-12)
    mu0 = np.asarray(_weighted_quantiles(jax.numpy.asarray(x), jax.numpy.ones(x.size), 3))
    var0 = x.var() + 1e-6
    sk = SkMixture(3, weights_init=np.full(3, 1 / 3), means_init=mu0[:, None], precisions_init=np.full((3, 1, 1), 1 / var0),
                   tol=1e-12, max_iter=1000, reg_covar=1e-6).fit(x[:, None])
    assert bool(fit.converged)
    assert float(fit.log_likelihood) == pytest.approx(sk.score(x[:, None]), abs=1e-3)
    order = np.argsort(sk.means_.ravel())
    np.testing.assert_allclose(fit.prior.means, sk.means_.ravel()[order], atol=1e-4)


def test_recovers_known_parameters():
    x = synthetic(7, n=(6000, 10000, 4000))
    fit = jp.fit_gmm(x, 3, key=jax.random.PRNGKey(1))
    np.testing.assert_allclose(fit.prior.weights, [0.3, 0.5, 0.2], atol=0.02)
    np.testing.assert_allclose(fit.prior.means, [-2.0, 1.0, 5.0], atol=0.06)
    np.testing.assert_allclose(fit.prior.stds, [0.5, 1.0, 0.7], atol=0.06)


def test_batched_ragged_groups_equal_separate_fits_and_are_deterministic():
    values = np.concatenate([synthetic(3), synthetic(4, n=(50, 80, 40), means=(0, 3, 8))])
    secrets = np.array(["a"] * 1000 + ["b"] * 170)
    labels, fits = jp.priors_from_table(values, secrets, 3, key=jax.random.PRNGKey(0), init="quantile")
    assert list(labels) == ["a", "b"] and fits.prior.batch_shape == (2,)
    alone = jp.fit_gmm(values[1000:], 3, key=jax.random.PRNGKey(0), init="quantile")
    np.testing.assert_allclose(fits.prior.means[1], alone.prior.means, rtol=1e-9)
    assert float(fits.log_likelihood[1]) == pytest.approx(float(alone.log_likelihood), rel=1e-10)
    again = jp.fit_gmm(values[:1000], 3, key=jax.random.PRNGKey(5))
    np.testing.assert_array_equal(again.prior.means, jp.fit_gmm(values[:1000], 3, key=jax.random.PRNGKey(5)).prior.means)


def test_progress_bar_runs_the_same_em(capsys):
    """progress=True runs EM in blocks of max_iter/50 iterations, each resuming the last: the same fit,
    bit for bit, with a bar on stderr; a cap reached before convergence says so."""
    values = np.concatenate([synthetic(3), synthetic(4, n=(50, 80, 40), means=(0, 3, 8))])
    secrets = np.array(["a"] * 1000 + ["b"] * 170)
    _, plain = jp.priors_from_table(values, secrets, 3, key=jax.random.PRNGKey(0))
    _, shown = jp.priors_from_table(values, secrets, 3, key=jax.random.PRNGKey(0), progress=True)
    for a, b in zip(jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(shown)):
        np.testing.assert_array_equal(a, b)
    err = capsys.readouterr().err
    assert "fitting 2 mixtures by EM" in err and "100%" in err and "2/2 converged" in err and err.endswith("\n")
    assert int(np.max(plain.iterations)) < 1000
    capped = jp.fit_gmm(values[:1000], 3, key=jax.random.PRNGKey(0), max_iter=7, progress=True)
    assert not bool(capped.converged) and int(capped.iterations) == 7
    assert "0/1 converged (last after 7)" in capsys.readouterr().err


def test_integer_data_does_not_collapse_with_a_variance_floor():
    rng = np.random.default_rng(0)
    x = rng.choice([9.0, 10.0, 13.0], size=2000, p=[0.5, 0.3, 0.2])  # three repeated integers
    fit = jp.fit_gmm(x, 3, key=jax.random.PRNGKey(0), var_floor=1 / 12)
    assert np.all(np.asarray(fit.prior.stds) >= np.sqrt(1 / 12) - 1e-12)
    assert np.isfinite(float(fit.log_likelihood))


def test_fit_bad_inputs():
    with pytest.raises(ValueError, match="n_components must be a positive integer"):
        jp.fit_gmm([1.0, 2.0], 0, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="at least n_components"):
        jp.fit_gmm([1.0, 2.0], 3, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="x must be finite"):
        jp.fit_gmm([1.0, np.nan, 2.0], 1, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="init must be one of"):
        jp.fit_gmm([1.0, 2.0], 1, key=jax.random.PRNGKey(0), init="random")
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        jp.fit_gmm([1.0, 2.0], 1, key=jax.random.PRNGKey(0), max_iter=0)
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        jp.fit_gmm([1.0, 2.0], 1, key=jax.random.PRNGKey(0), tol=-1.0)
