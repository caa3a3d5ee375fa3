"""The example scripts run, print their numbers and write their figures."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(name, tmp_path, *extra):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--out", str(tmp_path), *extra],
        capture_output=True, text=True, timeout=600, cwd=EXAMPLES,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


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
