"""The command line, run in-process through main() (and once as the installed script)."""
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from jaxpuffer.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_builtin_example_table(capsys):
    """The main job: every level per pair, the exact level's answer and the noise it saves."""
    code, out, err = run(capsys, "calibrate")
    assert code == 0 and err == ""
    for text in ("binding pair", "noise scale b", "noise variance", "user 3 in/out", "Δμ", "Δσ",
                 "b theorem", "b coupling", "b exact", "level: exact", "less noise than Theorem 1",
                 "needs no noise", "whether user k's value is in the sum"):
        assert text in out, text
    code, out, _ = run(capsys, "calibrate", "--format", "json")
    data = json.loads(out)
    levels = data["scales_by_level"]
    assert data["level"] == "exact" and data["scale"] == levels["exact"]
    assert levels["exact"] < levels["coupling"] < levels["theorem"]
    # the saving printed in the table is the ratio of these scales
    assert f"{levels['theorem'] / levels['exact']:.3g}× less noise than Theorem 1" in run(capsys, "calibrate")[1]
    for row in data["pairs"]:  # per pair too, the levels are ordered (MATH.md §6 ladder)
        assert row["scale_exact"] <= row["scale_coupling"] * (1 + 1e-9) <= row["scale_theorem"] * (1 + 1e-9)


def test_pairs_file_json_and_csv(tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_text("label,mean_i,std_i,mean_j,std_j\nA,0,1,1,2\nB,0,1,0,3\n")
    code, out, _ = run(capsys, "calibrate", "--pairs", str(path), "--eps", "0.5", "--delta", "1e-3", "--level", "theorem", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["binding"] == "B" and len(data["pairs"]) == 2
    assert data["scale"] == pytest.approx(13.1621, abs=5e-5)  # MATH.md §6, Thm 1 column
    code, out, _ = run(capsys, "calibrate", "--pairs", str(path), "--format", "csv")
    assert out.splitlines()[0].startswith("pair,mean_i,std_i") and len(out.splitlines()) == 3


def test_exact_level_and_gaussian_noise(capsys):
    code, out, _ = run(capsys, "calibrate", "--level", "exact", "--format", "json")
    exact = json.loads(out)
    code2, out2, _ = run(capsys, "calibrate", "--level", "theorem", "--format", "json")
    theorem = json.loads(out2)
    assert code == code2 == 0 and exact["level"] == "exact" and exact["scale"] < theorem["scale"]
    assert "scales_by_level" not in exact  # one level asked: one level computed
    assert exact["delta_achieved"] <= 1e-3
    code, out, _ = run(capsys, "calibrate", "--noise", "gaussian", "--format", "json")
    gauss = json.loads(out)
    assert code == 0 and gauss["noise"] == "gaussian" and gauss["level"] == "exact" and gauss["delta_achieved"] <= 1e-3
    code, _, err = run(capsys, "calibrate", "--noise", "gaussian", "--level", "theorem")
    assert code == 2 and "Laplace-noise bound" in err


def test_sum_query_identical_and_file(tmp_path, capsys):
    code, out, _ = run(capsys, "sum-query", "--K", "1000", "--mean", "1", "--std", "2", "--level", "theorem", "--format", "json")
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
        ("mean_i,std_i,mean_j,std_j\n0,1,1,2,5\n", "line 2: 5 values, but the header has 4 columns"),
        ("mean_i,std_i,mean_j,std_j\n0,1,1\n", "line 2: fewer values than the header's 4 columns"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file, not a CSV text file"),
        (b"mean_i,std_i\xff,mean_j,std_j\n", "is a binary file, not a UTF-8 CSV text file"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "pairs.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    code, out, err = run(capsys, "calibrate", "--pairs", str(path))
    assert code == 2 and out == "" and message in err and str(path) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_utf8_bom_is_accepted(tmp_path, capsys):
    plain, bom = tmp_path / "plain.csv", tmp_path / "bom.csv"
    text = "mean_i,std_i,mean_j,std_j\n0,1,1,2\n"
    plain.write_text(text)
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    outs = [run(capsys, "calibrate", "--pairs", str(p), "--level", "theorem", "--format", "json") for p in (plain, bom)]
    assert outs[0][0] == outs[1][0] == 0 and json.loads(outs[0][1])["scale"] == json.loads(outs[1][1])["scale"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["calibrate", "--eps", "0"], "eps must be > 0"),
        (["calibrate", "--delta", "1.5"], "delta must be in [0, 1)"),
        (["calibrate", "--pairs", "/no/such/file.csv"], "cannot read pairs file"),
        (["sum-query", "--K", "10"], "needs --users FILE"),
        (["sum-query", "--K", "0", "--mean", "1", "--std", "1"], "--K must be >= 1"),
        (["sum-query", "--K", "5", "--mean", "1", "--std", "-1"], "--std must be >= 0; got -1"),
        (["calibrate", "--eps", "inf"], "argument --eps: must be a finite number, got 'inf'"),
        (["calibrate", "--delta", "nan"], "argument --delta: must be a finite number, got 'nan'"),
        (["calibrate", "--eps", "abc"], "argument --eps: 'abc' is not a number"),
        (["sum-query", "--K", "5", "--mean", "inf", "--std", "1"], "argument --mean: must be a finite number"),
        (["calibrate", "--bogus"], "unrecognized arguments: --bogus"),
        (["calibrate", "--level", "best"], "argument --level: invalid choice: 'best'"),
        ([], "the following arguments are required"),
    ],
)
def test_bad_values(capsys, argv, message):
    """Every error, argparse's included, is one 'jaxpuffer: error: ...' line and exit status 2."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err
    assert err.startswith("jaxpuffer: error: ") and len(err.strip().splitlines()) == 1 and "usage:" not in err
    assert "np.float64" not in err and "in inf" not in err  # plain numbers


def test_version_and_help(capsys):
    from jaxpuffer import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"jaxpuffer {__version__}"
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "examples:" in out and "--progress" in out


def test_progress_bar_on_stderr(capsys):
    code, out, err = run(capsys, "calibrate", "--level", "theorem", "--progress", "--format", "json")
    assert code == 0 and json.loads(out)["num_pairs"] == 9
    assert "calibrating 9 pairs, theorem level" in err and "100%" in err and "pairs/s" in err


def test_installed_console_script():
    beside = pathlib.Path(sys.executable).parent / "jaxpuffer"  # the venv that runs the tests
    exe = str(beside) if beside.exists() else shutil.which("jaxpuffer")
    if exe is None:
        pytest.fail("the jaxpuffer console script is not on PATH: is the package installed?")
    proc = subprocess.run([exe, "calibrate", "--level", "theorem", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["num_pairs"] == 9
    bad = subprocess.run([exe, "calibrate", "--eps", "-3"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("jaxpuffer: error:")


DATA = pathlib.Path(__file__).resolve().parents[1] / "examples" / "data"


def test_shipped_pair_files_of_every_family(capsys):
    """examples/data/*.json through the CLI equal the API on the same priors (built independently
    here), at the theorem level; the Kantorovich paper's Table 4 pair gives its printed b = 2."""
    code, out, err = run(capsys, "calibrate", "--pairs", str(DATA / "discrete.json"), "--level", "theorem", "--format", "json")
    data = json.loads(out)
    assert code == 0 and err == "" and data["num_pairs"] == 2
    assert data["pairs"][0]["pair"] == "Kantorovich Table 4" and data["pairs"][0]["scale"] == pytest.approx(2.0, rel=1e-12)
    import jaxpuffer as jp

    mixtures = json.loads((DATA / "mixtures.json").read_text())["pairs"]
    code, out, _ = run(capsys, "calibrate", "--pairs", str(DATA / "mixtures.json"), "--level", "theorem", "--format", "json")
    rows = json.loads(out)["pairs"]
    assert code == 0 and [r["pair"] for r in rows] == [m["label"] for m in mixtures]
    for row, m in zip(rows, mixtures):
        prior = lambda p: jp.GaussianMixture(p["weights"], p["means"], p["stds"])  # noqa: E731
        one = jp.calibrate(jp.PairSet(prior(m["first"]), prior(m["second"])), 1.0, 1e-3, level="theorem")
        assert row["scale"] == pytest.approx(one.scale, rel=1e-12)  # zero-weight padding changes nothing
        assert row["mean_i"] == pytest.approx(float(np.dot(m["first"]["weights"], m["first"]["means"])), rel=1e-12)
    code, out, _ = run(capsys, "calibrate", "--pairs", str(DATA / "pairs.csv"), "--level", "theorem", "--format", "json")
    assert code == 0 and json.loads(out)["binding"] == "N(0,1) vs N(0,3²)"


def test_fit_writes_a_pair_file_that_calibrates(tmp_path, capsys):
    out_file = tmp_path / "fitted.json"
    code, out, err = run(capsys, "fit", "--data", str(DATA / "salaries.csv"), "--value", "salary", "--secret", "dept", "--out", str(out_file))
    assert code == 0 and err == "" and "wrote 6 ordered pairs" in out and "converged: True" in out
    document = json.loads(out_file.read_text())
    assert document["family"] == "mixture" and len(document["pairs"]) == 6
    assert document["pairs"][0]["label"] == "engineering vs sales"
    for pair in document["pairs"]:
        for side in ("first", "second"):
            assert sum(pair[side]["weights"]) == pytest.approx(1.0, abs=1e-9) and len(pair[side]["means"]) == 2
    # the fitted means are those of the data, group by group (EM keeps the weighted mean)
    salaries = {}
    for line in (DATA / "salaries.csv").read_text().splitlines()[1:]:
        dept, salary = line.split(",")
        salaries.setdefault(dept, []).append(float(salary))
    first = document["pairs"][0]["first"]
    assert np.dot(first["weights"], first["means"]) == pytest.approx(np.mean(salaries["engineering"]), rel=1e-6)
    code, out, _ = run(capsys, "calibrate", "--pairs", str(out_file), "--level", "theorem", "--format", "json")
    assert code == 0 and json.loads(out)["num_pairs"] == 6
    # --progress: a bar on stderr, the same pair file
    again = tmp_path / "again.json"
    code, out, err = run(capsys, "fit", "--data", str(DATA / "salaries.csv"), "--value", "salary", "--secret", "dept", "--out", str(again), "--progress")
    assert code == 0 and "fitting 3 mixtures by EM" in err and "100%" in err and "3/3 converged" in err
    assert again.read_text() == out_file.read_text()


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "invalid JSON at line 1"),
        ('{"family": "poisson", "pairs": []}', 'expected {"family": "gaussian" | "mixture" | "discrete"'),
        ('{"family": "mixture", "pairs": [{"first": {"weights": [1]}, "second": {}}]}', "pair 1, first: a mixture prior is an object with the keys weights, means, stds"),
        ('{"family": "mixture", "pairs": [{"first": {"weights": [0.5, 0.5], "means": [0], "stds": [1, 1]}, "second": {"weights": [1], "means": [0], "stds": [1]}}]}', "must have one length; got 2, 1, 2"),
        ('{"family": "gaussian", "pairs": [{"first": {"mean": "a", "std": 1}, "second": {"mean": 0, "std": 1}}]}', "mean must be a number"),
        ('{"family": "gaussian", "pairs": [{"first": {"mean": 0, "std": -1}, "second": {"mean": 0, "std": 1}}]}', "std must be >= 0"),
        ('{"family": "discrete", "pairs": [{"first": {"support": [0, 1], "probs": [0.5, 0.6]}, "second": {"support": [0], "probs": [1]}}]}', "probs must sum to 1"),
    ],
)
def test_bad_pair_json_gives_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "pairs.json"
    path.write_text(content)
    code, out, err = run(capsys, "calibrate", "--pairs", str(path))
    assert code == 2 and out == "" and message in err and str(path) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--value", "dept"], "data file DATA, line 2: dept is 'engineering', not a number"),
        (["--value", "pay"], "missing column(s) pay"),
        (["--components", "0"], "--components must be >= 1"),
    ],
)
def test_fit_errors(tmp_path, capsys, extra, message):
    argv = ["fit", "--data", str(DATA / "salaries.csv"), "--value", "salary", "--secret", "dept", "--out", str(tmp_path / "x.json")]
    code, out, err = run(capsys, *argv, *extra)
    assert code == 2 and message.replace("DATA", str(DATA / "salaries.csv")) in err and len(err.strip().splitlines()) == 1
