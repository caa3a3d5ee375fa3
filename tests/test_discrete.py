"""Discrete priors, the quantile plan, the Kantorovich paper's closed forms and exact δ.

Reference values: the paper's Tables 1–6 (as fractions), MATH.md §8, scipy (binom, brentq) and
the numpy/scipy evaluator ``_reference.discrete_delta_reference`` (scan + bisection + closed-form
mixture CDFs), written independently of jaxpuffer's segment formula and certified grid.
"""
import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest
from _reference import discrete_delta_reference, north_west_corner
from scipy import optimize, stats

import jaxpuffer as jp
from jaxpuffer import kantorovich as K

TABLE1 = ([1, 2, 3, 4], [Fr(1, 3), Fr(1, 6), Fr(1, 3), Fr(1, 6)], [Fr(1, 4), Fr(1, 4), Fr(1, 6), Fr(1, 3)])
TABLE4 = ([1, 2, 3, 4, 5], [Fr(8, 40), Fr(9, 40), Fr(20, 40), Fr(3, 40), 0], [0, Fr(3, 40), Fr(20, 40), Fr(9, 40), Fr(8, 40)])
# the paper's Table 3 and Table 6, π*(x, x') with rows x (s_i) and columns x' (s_j)
TABLE3 = [[Fr(1, 4), Fr(1, 12), 0, 0], [0, Fr(1, 6), 0, 0], [0, 0, Fr(1, 6), Fr(1, 6)], [0, 0, 0, Fr(1, 6)]]
TABLE6 = [
    [0, Fr(3, 40), Fr(5, 40), 0, 0],
    [0, 0, Fr(9, 40), 0, 0],
    [0, 0, Fr(6, 40), Fr(9, 40), Fr(5, 40)],
    [0, 0, 0, 0, Fr(3, 40)],
    [0, 0, 0, 0, 0],
]
TABLE5 = [[0, 0.075, 0.2, 0.2, 0.2], [0, 0.075, 0.425, 0.425, 0.425], [0, 0.075, 0.575, 0.8, 0.925], [0, 0.075, 0.575, 0.8, 1], [0, 0.075, 0.575, 0.8, 1]]


def pair_of(table):
    x, p, q = table
    return jp.PairSet(jp.Discrete(x, [float(v) for v in p]), jp.Discrete(x, [float(v) for v in q]))


def random_discrete_pairs(n_pairs, n_atoms, seed, zero_frac=0.25):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.choice(np.arange(40.0), size=(n_pairs, n_atoms), replace=True), axis=1)
    x = np.sort(x + rng.uniform(0, 0.5, size=x.shape) * (rng.random((n_pairs, 1)) < 0.5), axis=1)

    def pmf():
        w = rng.gamma(0.7, size=(n_pairs, n_atoms)) * (rng.random((n_pairs, n_atoms)) > zero_frac)
        w[w.sum(1) == 0, 0] = 1.0
        return w / w.sum(1, keepdims=True)

    p, q = pmf(), pmf()
    q[:5] = p[:5]  # identical priors: no noise needed
    p[5:8] = 0.0
    p[5:8, -1] = 1.0  # point masses
    return x, p, q


# ----------------------------------------------------------------------------- priors and plans


def test_discrete_validation_names_the_argument():
    with pytest.raises(ValueError, match="probs must sum to 1"):
        jp.Discrete([0, 1], [0.5, 0.6])
    with pytest.raises(ValueError, match="probs must be >= 0"):
        jp.Discrete([0, 1], [1.5, -0.5])
    with pytest.raises(ValueError, match="support must be sorted"):
        jp.Discrete([1, 0], [0.5, 0.5])
    with pytest.raises(ValueError, match="support must be finite"):
        jp.Discrete([0, np.inf], [0.5, 0.5])
    with pytest.raises(ValueError, match="values must lie on the alphabet"):
        jp.Discrete.from_values([1, 2, 7], [1, 2, 3])


def test_pairs_on_different_alphabets_are_aligned_on_their_union():
    pairs = jp.PairSet(jp.Discrete([1, 3], [0.5, 0.5]), jp.Discrete([2, 3, 4], [0.2, 0.3, 0.5]))
    np.testing.assert_array_equal(pairs.first.support, [1, 2, 3, 4])
    np.testing.assert_allclose(pairs.first.probs, [0.5, 0, 0.5, 0])
    np.testing.assert_allclose(pairs.second.probs, [0, 0.2, 0.3, 0.5])
    # batched, different alphabets per pair: concatenated and sorted; δ is unchanged
    first = jp.Discrete(np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([[0.5, 0.5], [0.3, 0.7]]))
    second = jp.Discrete([0.0, 3.0], [0.5, 0.5])
    ragged = jp.PairSet(first, second)
    for k in range(2):
        x = np.asarray(ragged.first.support[k])
        ref = discrete_delta_reference(x, ragged.first.probs[k], ragged.second.probs[k], 0.8, 0.5)
        assert float(jp.delta_exact(ragged[k], 0.8, 0.5)) == pytest.approx(max(ref, discrete_delta_reference(x, ragged.second.probs[k], ragged.first.probs[k], 0.8, 0.5)), rel=1e-9)
    # no noise: the merged atoms' own hockey-stick (the duplicated point 0 counts once)
    assert float(jp.delta_exact(ragged, 0.0, 0.5)[0]) == pytest.approx(0.5, rel=1e-9)


@pytest.mark.parametrize("table, plan, cmf", [(TABLE1, TABLE3, None), (TABLE4, TABLE6, TABLE5)])
def test_plans_equal_the_papers_tables(table, plan, cmf):
    pairs = pair_of(table)
    got = np.asarray(jp.quantile_plan(pairs).mass)
    np.testing.assert_allclose(got, np.array(plan, dtype=float), rtol=0, atol=1e-15)
    # the four-term formula of Appendix C in exact fractions gives the same table
    x, p, q = table
    F = list(itertools.accumulate(p))
    G = list(itertools.accumulate(q))
    C = lambda a, b: 0 if a < 0 or b < 0 else min(F[a], G[b])  # noqa: E731
    four = [[C(a, b) - C(a - 1, b) - C(a, b - 1) + C(a - 1, b - 1) for b in range(len(x))] for a in range(len(x))]
    assert four == plan
    if cmf is not None:
        np.testing.assert_allclose(np.asarray(jp.quantile_cmf(pairs)), cmf, atol=1e-15)
    assert float(jp.plan_sensitivity(jp.quantile_plan(pairs))) == (1.0 if table is TABLE1 else 2.0)


def test_plans_equal_the_north_west_corner_on_random_pmfs():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        p = [Fr(int(v), 1) for v in rng.integers(0, 7, n)]
        q = [Fr(int(v), 1) for v in rng.integers(0, 7, n)]
        p[0] += 1
        q[-1] += 1
        p = [v / sum(p) for v in p]
        q = [v / sum(q) for v in q]
        ref = np.array(north_west_corner(p, q), dtype=float)
        pairs = jp.PairSet(jp.Discrete(np.arange(n), [float(v) for v in p]), jp.Discrete(np.arange(n), [float(v) for v in q]))
        plan = np.asarray(jp.quantile_plan(pairs).mass)
        np.testing.assert_allclose(plan, ref, atol=1e-15)
        np.testing.assert_allclose(plan.sum(1), np.array(p, float), atol=1e-15)
        np.testing.assert_allclose(plan.sum(0), np.array(q, float), atol=1e-15)
        # the staircase (2n cells, used by Theorems 1–3) has the dense plan's sensitivity
        staircase = K.sensitivity(pairs.first.support, pairs.first.probs, pairs.second.probs, 1e-12)
        assert float(staircase) == float(jp.plan_sensitivity(jp.quantile_plan(pairs)))


def test_counting_query_pmfs_match_scipy_and_enumeration():
    zero, one, unknown = (np.asarray(a) for a in jp.counting_query_pmfs(np.full(25, 0.7)))
    k = np.arange(26)
    np.testing.assert_allclose(zero[3], stats.binom.pmf(k, 24, 0.7), atol=1e-15)
    np.testing.assert_allclose(one[3], stats.binom.pmf(k - 1, 24, 0.7), atol=1e-15)
    np.testing.assert_allclose(unknown[3], stats.binom.pmf(k, 25, 0.7), atol=1e-15)
    rng = np.random.default_rng(0)
    probs = rng.uniform(0.05, 0.95, 10)  # Figure 2: heterogeneous p_i, V = 10
    zero, _, _ = (np.asarray(a) for a in jp.counting_query_pmfs(probs))
    brute = np.zeros(11)
    for bits in itertools.product([0, 1], repeat=9):
        others = np.delete(probs, 0)
        brute[sum(bits)] += np.prod(np.where(bits, others, 1 - others))
    np.testing.assert_allclose(zero[0], brute, atol=1e-15)


@pytest.mark.parametrize("pair", ["0-1", "0-bot", "1-bot"])
def test_counting_query_plans_have_sensitivity_one_despite_round_off(pair):
    pairs = jp.counting_query(np.full(25, 0.7), pair)
    assert np.all(np.asarray(jp.plan_sensitivity(jp.quantile_plan(pairs))) == 1.0)
    if pair == "0-1":  # the round-off trap: with no tolerance, float residue widens the support
        assert np.max(np.asarray(jp.plan_sensitivity(jp.quantile_plan(pairs, atol=0.0)))) > 1.0
    assert np.all(np.asarray(K.theorem1(pairs, 1.0)) == pytest.approx(1.0, rel=1e-12))


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("eps", [0.5, 0.8, 1.0, 2.0])
def test_theorem2_table1_is_one_over_log_of_2e_eps_minus_1(eps):
    pairs = pair_of(TABLE1)
    assert float(K.theorem2(pairs, eps)) == pytest.approx(1.0 / math.log(2 * math.exp(eps) - 1), rel=1e-12)
    assert float(K.theorem1(pairs, eps)) == pytest.approx(1.0 / eps, rel=1e-12)


@pytest.mark.parametrize("eps", [0.5, 0.8, 1.0, 2.0])
def test_theorem2_table4_matches_an_independent_root_solve(eps):
    x, p, q = (np.array(v, dtype=float) for v in TABLE4)
    plan = np.array(TABLE6, dtype=float)
    d = np.abs(np.subtract.outer(x, x))
    etas = []
    for line_mass, line_d in itertools.chain(zip(plan.T, d.T), zip(plan, d)):
        if np.all(line_d[line_mass > 0] == 0) or line_mass.sum() == 0:
            continue
        g = lambda eta: np.sum(line_mass * (np.exp(eta * line_d) - math.exp(eps)))  # noqa: E731
        etas.append(optimize.brentq(g, 1e-9, 50.0, xtol=1e-15, rtol=1e-15))
    expected = 1.0 / min(etas)
    got = float(K.theorem2(pair_of(TABLE4), eps))
    assert got == pytest.approx(expected, rel=1e-12) and got >= expected
    if eps == 1.0:
        assert got == pytest.approx(1.690211, abs=5e-7)  # MATH.md §8


def test_theorem3_constants_and_bad_inputs():
    pairs = pair_of(TABLE4)
    corrected, paper = K.THEOREM3_CONSTANTS["corrected"], K.THEOREM3_CONSTANTS["paper"]
    assert corrected == pytest.approx(0.5 * 0.8373, abs=1e-4) and paper < corrected
    k = corrected * 1e-5 ** (-1 / 3)
    assert float(K.theorem3(pairs, 0.5, 1e-5)) == pytest.approx(2 * (k + math.sqrt(k * k + 0.25)) / 0.5, rel=1e-12)
    assert float(K.theorem3(pairs, 0.5, 1e-5, part="a")) == pytest.approx(2 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-12)
    with pytest.raises(ValueError, match="eps must be <= 1"):
        K.theorem3(pairs, 2.0, 1e-5, part="a")
    with pytest.raises(ValueError, match="constant"):
        K.theorem3(pairs, 1.0, 1e-5, constant="0.42")
    with pytest.raises(ValueError, match="pairs must hold Discrete priors"):
        K.theorem1(jp.PairSet(jp.Gaussian(0, 1), jp.Gaussian(1, 1)), 1.0)


def test_lemma2_separable_query():
    values = np.array([[0.0, 1.0], [0.0, 3.0], [2.0, 2.0]])
    np.testing.assert_allclose(K.lemma2(values, 0.5), [2.0, 6.0, 0.0], rtol=1e-12)


# ----------------------------------------------------------------------------- exact δ


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_exact_delta_matches_the_independent_reference(noise):
    x, p, q = random_discrete_pairs(12, 6, seed=1)
    for k in range(12):
        for b, eps in [(0.05, 0.3), (0.7, 0.2), (2.5, 0.05), (6.0, 1.0)]:
            ref = max(discrete_delta_reference(x[k], p[k], q[k], b, eps, noise), discrete_delta_reference(x[k], q[k], p[k], b, eps, noise))
            pairs = jp.PairSet(jp.Discrete(x[k], p[k]), jp.Discrete(x[k], q[k]))
            got = float(jp.delta_exact(pairs, b, eps, noise=noise))
            assert got >= ref * (1 - 1e-9) - 1e-15
            assert got == pytest.approx(ref, rel=1e-6, abs=1e-13), (k, b, eps)


def test_alphabets_are_padded_to_shared_widths_without_changing_delta():
    """The evaluators pad an alphabet to a bucket width (atoms of probability 0 at its last point), so
    that 5 and 6 atoms, or 7 and 8, share one compiled program. The padded evaluation (what the
    public δ functions and calibrate run) equals the unpadded one on a 5-atom alphabet to rounding
    (measured within 8e-14 relative over 2 to 6 atoms padded to 4 and 8, GG(3) included), on random
    pairs with repeated atoms, zero-probability atoms, point masses and identical priors."""
    import jax

    from jaxpuffer import families
    from jaxpuffer.losses_discrete import discrete_delta
    from jaxpuffer.priors import atom_bucket

    assert [atom_bucket(n) for n in (1, 2, 3, 4, 5, 6, 7, 9, 13, 33, 64, 65, 100)] == [1, 2, 3, 4, 6, 6, 8, 12, 16, 48, 64, 96, 128]
    prior = jp.Discrete([0.0, 1.0, 1.0], [0.5, 0.5, 0.0])
    padded = prior.padded(4)
    np.testing.assert_array_equal(padded.support, [0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(padded.probs, [0.5, 0.5, 0.0, 0.0])
    assert prior.padded(3) is prior and prior.bucketed() is prior
    with pytest.raises(ValueError, match="atoms must be >= 3"):
        prior.padded(2)

    x, p, q = random_discrete_pairs(64, 5, seed=11)
    rng = np.random.default_rng(12)
    b, eps = np.exp(rng.uniform(-1.5, 2.0, 64)), rng.uniform(0.05, 2.0, 64)
    pairs = jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q))
    assert [a.shape for a in families.get("discrete").params(pairs, 1e-6, None)] == [(64, 6)] * 3
    for level, public in (("exact", jp.delta_exact), ("coupling", jp.delta_coupling)):
        for noise in ("laplace", "gaussian"):
            unpadded = np.asarray(jax.jit(lambda *a: discrete_delta(level, noise, *a, True))(x, p, q, b, eps))
            got = np.asarray(public(pairs, b, eps, noise=noise))
            assert np.count_nonzero(unpadded) > 32, (level, noise)  # not a comparison of zeros
            # (absolute 1e-15: the plan's masses are differences of cumulative sums ≤ 1, exact to
            # ~1e-16; for identical priors the unpadded plan moved 2.2e-16, the padded one 0)
            np.testing.assert_allclose(got, unpadded, rtol=1e-12, atol=1e-15, err_msg=f"{level} {noise}")


def test_kantorovich_scales_are_pure_epsilon_by_delta_exact():
    x, p, q = random_discrete_pairs(64, 8, seed=2)
    pairs = jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q))
    t1, t2 = K.theorem1(pairs, 0.7), K.theorem2(pairs, 0.7)
    assert np.all(np.asarray(t2) <= np.asarray(t1) * (1 + 1e-12))
    assert np.max(np.asarray(jp.delta_exact(pairs, t1, 0.7))) <= 1e-12
    assert np.max(np.asarray(jp.delta_exact(pairs, t2, 0.7))) <= 1e-12
    for name in ("TABLE1", "TABLE4"):
        table_pairs = pair_of(globals()[name])
        for eps in (0.5, 1.0, 2.0):
            assert float(jp.delta_exact(table_pairs, K.theorem2(table_pairs, eps), eps)) <= 1e-12


def test_exact_calibration_is_sound_and_tight_on_random_pairs():
    # 500 random discrete pairs (identical priors, point masses and zero-probability atoms among
    # them) at four targets; the reference δ at every returned scale is ≤ target·(1 + 1e-9)
    x, p, q = random_discrete_pairs(500, 6, seed=4)
    violations, loose = 0, 0
    for chunk, (eps, target) in enumerate([(1.0, 1e-12), (0.5, 1e-6), (0.2, 1e-3), (2.0, 0.1)]):
        sl = slice(125 * chunk, 125 * (chunk + 1))
        pairs = jp.PairSet(jp.Discrete(x[sl], p[sl]), jp.Discrete(x[sl], q[sl]))
        res = jp.calibrate(pairs, eps, target, level="exact")
        assert res.converged
        coupling = np.asarray(jp.calibrate(pairs, eps, target, level="coupling").per_pair)
        theorem = np.asarray(jp.calibrate(pairs, eps, target, level="theorem").per_pair)
        per_pair = np.asarray(res.per_pair)
        assert np.all(per_pair <= coupling * (1 + 1e-9)) and np.all(coupling <= theorem * (1 + 1e-9))
        for k in range(125):
            i = 125 * chunk + k
            b = float(per_pair[k])
            ref = max(discrete_delta_reference(x[i], p[i], q[i], b, eps), discrete_delta_reference(x[i], q[i], p[i], b, eps))
            violations += ref > target * (1 + 1e-9)
            if b > 0:  # tight: 0.1 % less noise breaks the target
                below = 0.999 * b
                loose += max(discrete_delta_reference(x[i], p[i], q[i], below, eps), discrete_delta_reference(x[i], q[i], p[i], below, eps)) <= target
        if chunk == 0:
            assert np.all(per_pair[:5] == 0.0)  # identical priors need no noise
    assert violations == 0
    assert loose == 0


def test_gaussian_noise_levels_and_the_probabilistic_delta():
    pairs = pair_of(TABLE4)
    exact = jp.calibrate(pairs, 1.0, 1e-5, level="exact", noise="gaussian")
    coupling = jp.calibrate(pairs, 1.0, 1e-5, level="coupling", noise="gaussian")
    theorem3 = float(K.theorem3(pairs, 1.0, 1e-5))
    assert float(exact.scale) <= float(coupling.scale) <= theorem3
    x, p, q = (np.array(v, dtype=float) for v in TABLE4)
    ref = max(discrete_delta_reference(x, p, q, float(exact.scale), 1.0, "gaussian"), discrete_delta_reference(x, q, p, float(exact.scale), 1.0, "gaussian"))
    assert ref <= 1e-5 * (1 + 1e-9) and ref == pytest.approx(1e-5, rel=1e-4)
    # the δ-approximation (probability that the loss exceeds ε) dominates the set-based δ
    for theta in (float(exact.scale), 2.0, theorem3):
        assert float(jp.delta_probabilistic(pairs, theta, 1.0)) >= float(jp.delta_exact(pairs, theta, 1.0, noise="gaussian"))
    assert float(jp.delta_probabilistic(pairs, theorem3, 1.0)) <= 1e-5


def test_discrete_bad_inputs():
    pairs = pair_of(TABLE1)
    with pytest.raises(ValueError, match="level 'indicator' is for Gaussian priors"):
        jp.calibrate(pairs, 1.0, 1e-3, level="indicator")
    with pytest.raises(ValueError, match="method must be 'closed'"):
        jp.delta_coupling(pairs, 1.0, 1.0, method="quadrature")
    with pytest.raises(ValueError, match="scale must be >= 0"):
        jp.delta_exact(pairs, -1.0, 1.0)
    with pytest.raises(ValueError, match="pairs must hold Discrete priors"):
        jp.delta_probabilistic(jp.PairSet(jp.Gaussian(0, 1), jp.Gaussian(1, 1)), 1.0, 1.0)


def test_general_exponential_mechanism_eta_and_metric():
    # d(z) = z², η(θ) = 1/θ² (a Gaussian-shaped exponential mechanism): Theorem 1 gives
    # θ = η⁻¹(ε/Δ²) = Δ/√ε; Theorem 2 stays below it
    pairs = pair_of(TABLE4)
    kw = dict(metric=lambda z: z**2, eta_inverse=lambda v: v**-0.5)
    assert float(K.theorem1(pairs, 0.5, **kw)) == pytest.approx(2.0 / math.sqrt(0.5), rel=1e-12)
    assert float(K.theorem2(pairs, 0.5, **kw)) < float(K.theorem1(pairs, 0.5, **kw))
    with pytest.raises(ValueError, match="eta_inverse must be a callable"):
        K.theorem1(pairs, 0.5, eta_inverse=3.0)
    with pytest.raises(ValueError, match="metric must be 'l1' or a callable"):
        K.theorem1(pairs, 0.5, metric="l2")


def test_loaders_count_missing_rows_and_reject_bad_files(datasets_dir, tmp_path):
    from jaxpuffer import data

    adult = data.load_adult(datasets_dir / "adult.data", ["education", "race", "workclass"])
    assert adult.rows + adult.dropped == 32561 and adult.dropped == 1836  # '?' in workclass
    races, counts = np.unique(data.load_adult(datasets_dir / "adult.data", ["race"]).columns["race"], return_counts=True)
    assert dict(zip(races, counts))["Asian-Pac-Islander"] == 1039
    heart = data.load_hungarian(datasets_dir / "processed.hungarian.data", ["chol", "sex"])
    assert (heart.rows, heart.dropped) == (271, 23)
    with pytest.raises(ValueError, match="is not a file"):
        data.load_adult(tmp_path / "missing.data")
    bad = tmp_path / "bad.data"
    bad.write_text("39, State-gov, 77516\n")
    with pytest.raises(ValueError, match="line 1: expected 15"):
        data.load_adult(bad)
    bad.write_text("1,x,3,4,5,6,7,8,9,10,11,12,13,14\n")
    with pytest.raises(ValueError, match="column 'sex' is not a number"):
        data.load_hungarian(bad, ["sex"])
    index, keep = data.education_index(["Bachelors", "Preschool", "Doctorate"])
    np.testing.assert_array_equal(index, [1.0, 14.0])
    assert keep.tolist() == [True, False, True]
