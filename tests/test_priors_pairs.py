"""Priors and pair sets: validation, pytree behaviour, builders."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpuffer as jp


def test_gaussian_broadcasts_and_is_float64():
    g = jp.Gaussian([0.0, 1.0, 2.0], 1.0)
    assert g.batch_shape == (3,)
    assert g.mean.dtype == jnp.float64 and g.std.dtype == jnp.float64
    np.testing.assert_array_equal(g.std, [1.0, 1.0, 1.0])


def test_gaussian_is_immutable():
    g = jp.Gaussian(0.0, 1.0)
    with pytest.raises(AttributeError):
        g.mean = 3.0


@pytest.mark.parametrize(
    "mean,std,name",
    [(0.0, -1.0, "std"), (0.0, float("nan"), "std"), (float("inf"), 1.0, "mean"), ("a", 1.0, "mean"), ([0.0, 1.0], [1.0, 1.0, 1.0], "shapes")],
)
def test_gaussian_validation(mean, std, name):
    with pytest.raises(ValueError, match=name):
        jp.Gaussian(mean, std)


def test_gaussian_passes_through_jit_vmap_grad():
    g = jp.Gaussian(jnp.arange(4.0), 2.0)
    out = jax.jit(lambda p: p.mean + p.std)(g)
    np.testing.assert_allclose(out, np.arange(4.0) + 2)
    per = jax.vmap(lambda p: p.mean * p.std)(g)
    np.testing.assert_allclose(per, 2 * np.arange(4.0))
    assert float(jax.grad(lambda m: jp.Gaussian(m, 1.0).mean ** 2)(3.0)) == 6.0


def test_pairset_validation():
    with pytest.raises(ValueError, match="shapes"):
        jp.PairSet(jp.Gaussian([0.0, 1.0], 1.0), jp.Gaussian([0.0, 1.0, 2.0], 1.0))
    with pytest.raises(ValueError, match="at least one pair"):
        jp.PairSet(jp.Gaussian(np.zeros(0), 1.0), jp.Gaussian(np.zeros(0), 1.0))
    with pytest.raises(ValueError, match="first"):
        jp.PairSet((0.0, 1.0), (1.0, 1.0))


def test_pairset_broadcasts_adversary_axis():
    # 3 adversaries (rows) x 2 secret pairs (columns)
    first = jp.Gaussian(np.zeros((3, 1)), np.array([[1.0], [2.0], [3.0]]))
    second = jp.Gaussian(np.array([1.0, 2.0]), 1.0)
    pairs = jp.PairSet(first, second)
    assert pairs.batch_shape == (3, 2) and pairs.size == 6
    assert pairs.swapped().first.mean.shape == (3, 2)


def test_all_pairs_order_and_count():
    priors = jp.Gaussian(np.arange(4.0), np.arange(1.0, 5.0))
    pairs = jp.all_pairs(priors)
    assert pairs.batch_shape == (12,) and not pairs.symmetric
    i, j = jp.all_pairs_index(4)
    assert all(a != b for a, b in zip(i, j))
    np.testing.assert_array_equal(pairs.first.mean, i)
    np.testing.assert_array_equal(pairs.second.mean, j)
    with pytest.raises(ValueError, match="priors"):
        jp.all_pairs(jp.Gaussian([1.0], 1.0))


def test_sum_query_presence_against_direct_construction():
    rng = np.random.default_rng(0)
    means, stds = rng.normal(size=7), rng.uniform(0.1, 2, size=7)
    pairs = jp.sum_query_presence(means, stds)
    for k in range(7):  # direct: sums over the other users
        others = np.delete(np.arange(7), k)
        assert float(pairs.first.mean[k]) == pytest.approx(means.sum())
        assert float(pairs.first.std[k]) == pytest.approx(np.sqrt((stds**2).sum()))
        assert float(pairs.second.mean[k]) == pytest.approx(means[others].sum())
        assert float(pairs.second.std[k]) == pytest.approx(np.sqrt((stds[others] ** 2).sum()))


def test_sum_query_value_pairs():
    pairs = jp.sum_query_value([1.0, 2.0, 3.0], [1.0, 1.0, 2.0], a=5.0, a_prime=2.0)
    np.testing.assert_allclose(pairs.first.mean - pairs.second.mean, 3.0)
    np.testing.assert_allclose(pairs.first.std, pairs.second.std)
    np.testing.assert_allclose(pairs.first.std[0], np.sqrt(1 + 4))


@pytest.mark.parametrize("means,stds,name", [([], [], "user_means"), ([1.0, 2.0], [1.0, -1.0], "user_stds"), ([1.0, 2.0], [1.0, 2.0, 3.0], "user_stds")])
def test_sum_query_validation(means, stds, name):
    with pytest.raises(ValueError, match=name):
        jp.sum_query_presence(means, stds)


def test_concatenate():
    a = jp.PairSet(jp.Gaussian([0.0, 1.0], 1.0), jp.Gaussian(0.0, 2.0))
    b = jp.PairSet(jp.Gaussian(np.zeros((2, 2)), 1.0), jp.Gaussian(1.0, 1.0))
    both = jp.concatenate(a, b)
    assert both.batch_shape == (6,)
    with pytest.raises(ValueError, match="symmetric"):
        jp.concatenate(a, jp.all_pairs(jp.Gaussian([0.0, 1.0], 1.0)))


def test_discrete_pair_on_one_support_array_keeps_its_atoms_under_tracing():
    """Two priors given the same support array stay on that alphabet under jit, grad and vmap, as
    their concrete values do (they were merged into a 6-atom concatenation once the support was a
    tracer: another compiled search for the traced call, and under jax.grad another implicit
    gradient). Two different traced arrays are still concatenated (their values are unknown).
    Built inside jit, closed-over concrete probs are checked on the host (their sum, traced there,
    raised TracerArrayConversionError)."""
    probs = jnp.array([0.6, 0.3, 0.1]), jnp.array([0.1, 0.3, 0.6])

    def aligned(x, y=None):
        pairs = jp.PairSet(jp.Discrete(x, probs[0]), jp.Discrete(x if y is None else y, probs[1]))
        return pairs.first.support, pairs.first.probs, pairs.second.probs

    x = jnp.array([0.0, 1.0, 2.5])
    concrete = aligned(x)
    assert concrete[0].shape == (3,)
    for traced in (jax.jit(aligned)(x), jax.vmap(aligned)(x[None])):
        for got, want in zip(traced, concrete):
            np.testing.assert_array_equal(np.reshape(got, want.shape), want)
    atoms = []
    jax.grad(lambda x1: (atoms.append(aligned(x.at[1].set(x1))[0].shape[-1]), x1)[1])(1.0)
    assert atoms == [3]
    support, first, second = jax.jit(aligned)(x, x + 0.5)
    assert support.shape == (6,) and np.all(np.diff(np.asarray(support)) >= 0)
    np.testing.assert_allclose([np.sum(first), np.sum(second)], 1.0)
