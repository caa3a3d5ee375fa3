"""The example scripts run, print their numbers and write their figures."""
import os
import pathlib
import runpy
import subprocess
import sys

import jax
import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, tmp_path, *extra):
    """Run a script in a fresh process, as a user would. It uses this test session's compile cache
    (conftest), as a user's process uses theirs: it loads the programs the tests compiled before it,
    and the ones it compiles serve the tests after it."""
    env = dict(os.environ, JAXPUFFER_CACHE="1", JAXPUFFER_CACHE_DIR=jax.config.jax_compilation_cache_dir)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--out", str(tmp_path), *extra],
        capture_output=True, text=True, timeout=600, cwd=EXAMPLES, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def run_example_here(name, tmp_path, capsys, monkeypatch, *extra):
    """Run a script as __main__ in this process (it shares the compiled functions of the tests
    and of the scripts run before it); its stdout."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "argv", [name, "--out", str(tmp_path), *extra])
    capsys.readouterr()
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "script,png,expect",
    [
        ("figure2_sum_query.py", "figure2_sum_query.png", "limit |μ|/ε = 1.0"),
        ("figure5_tau.py", "figure5_tau.png", "max |(22) − (23)|"),
    ],
)
def test_figure_scripts(tmp_path, script, png, expect):
    out = run_example(script, tmp_path)
    assert expect in out
    assert (tmp_path / png).stat().st_size > 10_000


def test_kantorovich_examples(tmp_path):
    out = run_example("kantorovich_tables.py", tmp_path)
    assert "check: Theorem 2 at ε = 1 is 1/ln(2e − 1) = 0.671195" in out and "sensitivity of π*: 2" in out
    out = run_example("counting_query.py", tmp_path)
    assert "V=25, p=0.7    0-1                  1              2" in out  # sensitivity 1; 2 without the tolerance
    for png in ("kantorovich_tables.png", "counting_query.png"):
        assert (tmp_path / png).stat().st_size > 10_000


def test_kantorovich_adult_on_the_real_file(tmp_path, datasets_dir):
    out = run_example("kantorovich_adult.py", tmp_path, "--data", str(datasets_dir / "adult.data"))
    assert "max |x − x'| on its support = 2 (the paper: 2)" in out
    assert "Theorem 2 ≤ Theorem 1 at every ε: True; exact ≤ Theorem 2: True" in out
    assert (tmp_path / "kantorovich_adult.png").stat().st_size > 10_000


def test_gmm_experiments_on_the_real_files(tmp_path, datasets_dir, capsys, monkeypatch):
    # the Adult pipeline end to end (load, EM, Theorem 2, coupling and exact levels, release, plot)
    out = run_example_here("figure3_adult.py", tmp_path, capsys, monkeypatch, "--data", str(datasets_dir / "adult.data"))
    assert "Theorem 2 as printed, paper's w* (13)" in out and "All 20 ordered pairs" in out
    assert "exact level (hockey-stick divergence)" in out and "exact: b = " in out
    out = run_example_here("figure4_hungarian.py", tmp_path, capsys, monkeypatch, "--data", str(datasets_dir / "processed.hungarian.data"))
    assert "271 rows (23 with chol or sex missing dropped); 74 female, 197 male" in out
    for png in ("figure3_adult.png", "figure4_hungarian.png"):
        assert (tmp_path / png).stat().st_size > 10_000


def test_gaussian_mechanism_example(tmp_path, capsys, monkeypatch):
    # in this process: it shares the Gaussian-noise programs compiled by the tests before it
    out = run_example_here("gaussian_mechanism.py", tmp_path, capsys, monkeypatch)
    assert "Point masses (DP), Δ = 1" in out and "Gaussian priors N(0,1) vs N(1,2²)" in out
    assert (tmp_path / "gaussian_mechanism.png").stat().st_size > 10_000


def test_gg_mechanism_figures(tmp_path, capsys, monkeypatch):
    out = run_example_here("gg_mechanism.py", tmp_path, capsys, monkeypatch, "--draws", "20000")
    assert "Lemma 11 threshold: 2Φ(−√2) = 0.157299 (the paper prints 2Φ(√2) = 1.8427)" in out
    assert "exact (ε, δ)-DP b at ε = 1, δ = 0.01 for p = 2, 3, 4: 2.672" in out  # p = 2: the analytic Gaussian mechanism
    for k in range(1, 7):
        assert (tmp_path / f"gg_figure{k}.png").stat().st_size > 10_000


def test_gg_shape(tmp_path, capsys, monkeypatch):
    """The table's point-mass column against closed forms solved here: p = 1 is the Laplace
    mechanism, 1 − e^{(ε − 1/b)/2} = δ, so b = 1/(ε − 2 log(1 − δ)); p = 2 is the analytic Gaussian
    mechanism (Balle & Wang 2018) at θ = b/√2, solved by brentq."""
    from scipy import optimize, stats

    out = run_example_here("gg_shape.py", tmp_path, capsys, monkeypatch, "--ps", "1,2")
    rows = {float(line.split()[0]): line.split() for line in out.splitlines() if line[:5].strip() in ("1.00", "2.00")}
    eps, delta = 1.0, 1e-5
    laplace = 1.0 / (eps - 2.0 * np.log1p(-delta))
    agm = lambda t: stats.norm.cdf(0.5 / t - eps * t) - np.exp(eps) * stats.norm.cdf(-0.5 / t - eps * t) - delta  # noqa: E731
    gaussian = optimize.brentq(agm, 0.1, 10.0, xtol=1e-14) * np.sqrt(2.0)
    assert float(rows[1.0][1]) == pytest.approx(laplace, abs=1e-4) and float(rows[2.0][1]) == pytest.approx(gaussian, abs=1e-4)
    certified = float(out.split("largest certified δ over all calibrations: ")[1].split()[0])
    assert 0 < certified <= delta
    assert "least noise std, per pair:" in out and (tmp_path / "gg_shape.png").stat().st_size > 10_000


def test_gmm_masking_on_the_real_file(tmp_path, datasets_dir, capsys, monkeypatch):
    out = run_example_here("gmm_masking.py", tmp_path, capsys, monkeypatch, "--data", str(datasets_dir / "adult.data"), "--masks", "4",
                           "--hungarian", str(datasets_dir / "processed.hungarian.data"))
    assert "1-D: education-num, 'White' rows (27816)" in out
    assert "KL without noise 0.2331" in out  # Black vs Asian-Pac-Islander, by quadrature
    assert "(73 female, 197 male)" in out and "I(S; Y), π = 0.750" in out
    assert (tmp_path / "gmm_masking.png").stat().st_size > 10_000
