"""Sweeps (issue 16, item 3): ε and δ as arrays are one batched calibrate call whose every point
equals the single-(ε, δ) call bit for bit, at every level and for every prior family; the swept
scale is differentiable (test_numerical_calibration's implicit-gradient test, which shares
its compiled programs); the CLI writes the privacy-utility table and its plot."""
import json

import numpy as np
import pytest
import scipy.stats

import jaxpuffer as jp
from jaxpuffer.cli import builtin_example, main

GAUSSIAN = jp.PairSet(jp.Gaussian([0.0, 1.0, 2.0], [1.0, 2.0, 0.5]), jp.Gaussian([1.0, 0.0, 2.5], [1.5, 1.0, 0.5]))
EPS = np.array([0.3, 0.7, 1.0, 2.0, 4.0])
DELTA = np.array([1e-2, 1e-4, 1e-6, 1e-9])


def assert_sweep_equals_points(pairs, eps, delta, **kwargs):
    """calibrate over the grid (δ on the first axis, ε on the second) against one call per point."""
    swept = jp.calibrate(pairs, eps, delta[:, None], **kwargs)
    grid = (delta.size, eps.size)
    assert swept.scale.shape == grid and swept.delta_achieved.shape == grid
    assert np.shape(swept.per_pair) == grid + pairs.batch_shape
    assert swept.eps.shape == grid and swept.delta.shape == grid
    assert swept.binding_pair.batch_shape == (grid if pairs.batch_shape else ())  # one pair: it binds everywhere
    for k, d in enumerate(delta):
        for m, e in enumerate(eps):
            one = jp.calibrate(pairs, float(e), float(d), **kwargs)
            assert swept.scale[k, m] == one.scale, (e, d)
            assert swept.delta_achieved[k, m] == one.delta_achieved, (e, d)
            np.testing.assert_array_equal(np.asarray(swept.per_pair[k, m]), np.asarray(one.per_pair))
            assert tuple(int(i[k, m]) for i in swept.binding) == one.binding
            assert swept.delta_achieved[k, m] <= d
    return swept


@pytest.mark.parametrize("level", ["theorem", "indicator", "coupling", "exact"])
def test_gaussian_sweep_equals_per_point_calls(level):
    swept = assert_sweep_equals_points(GAUSSIAN, EPS, DELTA, level=level)
    # more privacy, more noise: the scale falls with ε and rises as δ shrinks
    assert np.all(np.diff(swept.scale, axis=1) < 0) and np.all(np.diff(swept.scale, axis=0) >= 0)
    assert "(ε, δ) points × 3 pairs" in str(swept)
    json.dumps(swept.to_dict())


def test_gaussian_noise_and_the_other_families_sweep_equals_per_point_calls():
    assert_sweep_equals_points(GAUSSIAN, EPS[:2], DELTA[1:3], level="exact", noise="gaussian")
    rng = np.random.default_rng(3)
    mixtures = jp.PairSet(
        jp.GaussianMixture(rng.dirichlet(np.ones(2), 2), rng.normal(0, 2, (2, 2)), rng.uniform(0.3, 2, (2, 2))),
        jp.GaussianMixture(rng.dirichlet(np.ones(2), 2), rng.normal(0, 2, (2, 2)), rng.uniform(0.3, 2, (2, 2))),
    )
    for level in ("theorem", "coupling"):  # the GMM plan depends on δ: one per sweep point
        assert_sweep_equals_points(mixtures, EPS[1:3], DELTA[:2], level=level)
    discrete = jp.PairSet(jp.Discrete([0.0, 1.0, 3.0], [0.2, 0.5, 0.3]), jp.Discrete([0.0, 1.0, 3.0], [0.5, 0.3, 0.2]))
    for level in ("theorem", "coupling", "exact"):
        assert_sweep_equals_points(discrete, EPS[1:3], DELTA[:2], level=level)


def test_sweep_below_the_exact_floor_names_delta():
    with pytest.raises(ValueError, match="delta must be 0 or >= 1e-30"):
        jp.calibrate(GAUSSIAN, 1.0, np.array([1e-3, 1e-40]), level="exact")


def test_cli_sweep_table_csv_json_and_plot(tmp_path, capsys):
    plot, table = tmp_path / "sweep.png", tmp_path / "sweep.csv"
    argv = ["sweep", "--eps", "0.5,1,2", "--delta", "1e-3,1e-6", "--levels", "theorem,exact", "--format", "csv", "--out", str(table), "--plot", str(plot)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "wrote 12 rows (2 levels × 2 δ × 3 ε)" in out and plot.stat().st_size > 10_000
    lines = table.read_text().splitlines()
    assert lines[0] == "level,eps,delta,scale,noise_std,delta_achieved,certificate" and len(lines) == 13
    exact = [line.split(",") for line in lines[1:] if line.startswith("exact,1.0,0.001,")]
    # the built-in example's exact scale, as `jaxpuffer calibrate` reports it (README: b = 2.861)
    one = jp.calibrate(builtin_example()[1], 1.0, 1e-3, level="exact")
    assert float(exact[0][3]) == one.scale and float(exact[0][4]) == pytest.approx(np.sqrt(2) * one.scale, rel=1e-15)
    assert main(["sweep", "--eps", "1:4:3", "--delta", "1e-3", "--levels", "theorem", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["eps"] for r in rows] == pytest.approx([1.0, 2.0, 4.0], rel=1e-15)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--eps", "1:x:3"], "--eps takes numbers"), (["--eps", "0:1:3"], "--eps takes numbers"),
        (["--delta", "1e-3,nan"], "--delta needs"), (["--levels", "exact,loose"], "--levels takes"),
        (["--noise", "gaussian", "--levels", "theorem"], "not a level of gaussian noise"),
        (["--eps", "-1", "--levels", "theorem"], "eps"),
    ],
)
def test_cli_sweep_errors(capsys, argv, message):
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxpuffer: error:") and message in err and len(err.strip().splitlines()) == 1


def test_sweep_mixing_points_that_need_no_noise_with_points_that_do():
    # N(0, 1) vs N(1, 1) at ε = 1: the priors alone have δ = Φ(−1/2) − eΦ(−3/2) = 0.127, so
    # δ = 0.2 needs no noise (b = 0, certified by the priors' own δ) and δ = 1e-3 does
    pairs = jp.PairSet(jp.Gaussian([0.0, 5.0], 1.0), jp.Gaussian([1.0, 5.0], 1.0))
    swept = assert_sweep_equals_points(pairs, np.array([1.0, 2.0]), np.array([0.2, 1e-3]), level="exact")
    assert np.all(swept.scale[0] == 0) and np.all(swept.scale[1] > 0)
    assert swept.delta_achieved[0, 0] == pytest.approx(scipy.stats.norm.cdf(-0.5) - np.e * scipy.stats.norm.cdf(-1.5), rel=1e-12)
