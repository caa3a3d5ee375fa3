"""The command line, run in-process through main() (and once as the installed script)."""
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from jaxpuffer.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_builtin_example_table(capsys):
    code, out, err = run(capsys, "calibrate")
    assert code == 0 and err == ""
    for text in ("binding pair", "noise scale b", "noise variance", "user 3 in/out", "Δμ", "Δσ"):
        assert text in out


def test_pairs_file_json_and_csv(tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_text("label,mean_i,std_i,mean_j,std_j\nA,0,1,1,2\nB,0,1,0,3\n")
    code, out, _ = run(capsys, "calibrate", "--pairs", str(path), "--eps", "0.5", "--delta", "1e-3", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["binding"] == "B" and len(data["pairs"]) == 2
    assert data["scale"] == pytest.approx(13.1621, abs=5e-5)  # MATH.md §6, Thm 1 column
    code, out, _ = run(capsys, "calibrate", "--pairs", str(path), "--format", "csv")
    assert out.splitlines()[0].startswith("pair,mean_i,std_i") and len(out.splitlines()) == 3


def test_exact_level_and_gaussian_noise(capsys):
    code, out, _ = run(capsys, "calibrate", "--level", "exact", "--format", "json")
    exact = json.loads(out)
    code2, out2, _ = run(capsys, "calibrate", "--format", "json")
    theorem = json.loads(out2)
    assert code == code2 == 0 and exact["level"] == "exact" and exact["scale"] < theorem["scale"]
    assert exact["delta_achieved"] <= 1e-3
    code, out, _ = run(capsys, "calibrate", "--noise", "gaussian", "--format", "json")
    gauss = json.loads(out)
    assert code == 0 and gauss["noise"] == "gaussian" and gauss["level"] == "exact" and gauss["delta_achieved"] <= 1e-3
    code, _, err = run(capsys, "calibrate", "--noise", "gaussian", "--level", "theorem")
    assert code == 2 and "Laplace-noise bound" in err


def test_sum_query_identical_and_file(tmp_path, capsys):
    code, out, _ = run(capsys, "sum-query", "--K", "1000", "--mean", "1", "--std", "2", "--format", "json")
    assert code == 0
    from jaxpuffer import bounds

    assert json.loads(out)["scale"] == pytest.approx(float(bounds.identical_users(1.0, 2.0, 1000, 1.0, 0.3)), rel=1e-6)
    users = tmp_path / "users.csv"
    users.write_text("mean,std\n" + "".join(f"{k % 5},{1 + k % 3}\n" for k in range(40)))
    code, out, _ = run(capsys, "sum-query", "--users", str(users))
    assert code == 0 and "showing the 20 largest of 40 pairs" in out


@pytest.mark.parametrize(
    "content,message",
    [
        ("mean_i,std_i,mean_j\n1,2,3\n", "missing column(s) std_j"),
        ("mean_i,std_i,mean_j,std_j\n1,x,3,4\n", "line 2: std_i is 'x', not a number"),
        ("mean_i,std_i,mean_j,std_j\n1,-2,3,4\n", "std_i must be >= 0"),
        ("mean_i,std_i,mean_j,std_j\n1,nan,3,4\n", "must be finite"),
        ("mean_i,std_i,mean_j,std_j\n", "no data rows"),
        ("", "missing column"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "pairs.csv"
    path.write_text(content)
    code, out, err = run(capsys, "calibrate", "--pairs", str(path))
    assert code == 2 and out == "" and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["calibrate", "--eps", "0"], "eps must be > 0"),
        (["calibrate", "--delta", "1.5"], "delta must be in the open interval"),
        (["calibrate", "--pairs", "/no/such/file.csv"], "cannot read pairs file"),
        (["sum-query", "--K", "10"], "needs --users FILE"),
        (["sum-query", "--K", "0", "--mean", "1", "--std", "1"], "--K must be >= 1"),
        (["sum-query", "--K", "5", "--mean", "1", "--std", "-1"], "--std"),
    ],
)
def test_bad_values(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_installed_console_script():
    beside = pathlib.Path(sys.executable).parent / "jaxpuffer"  # the venv that runs the tests
    exe = str(beside) if beside.exists() else shutil.which("jaxpuffer")
    if exe is None:
        pytest.fail("the jaxpuffer console script is not on PATH: is the package installed?")
    proc = subprocess.run([exe, "calibrate", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["num_pairs"] == 9
    bad = subprocess.run([exe, "calibrate", "--eps", "-3"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("jaxpuffer: error:")
