"""``jaxpuffer`` command line: calibration over the public Python API.

    jaxpuffer calibrate                      # the built-in example
    jaxpuffer calibrate --level exact        # the smallest scale that truly meets (ε, δ)
    jaxpuffer calibrate --noise gaussian     # Gaussian noise (exact level)
    jaxpuffer calibrate --pairs pairs.csv --eps 1 --delta 1e-3 --format json
    jaxpuffer sum-query --users users.csv --eps 1 --delta 0.3
    jaxpuffer sum-query --K 1000 --mean 1 --std 2 --eps 1 --delta 0.3

Bad files or values print one ``jaxpuffer: error: ...`` line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys

import jax
import numpy as np

from .noise import kernels
from .calibration import GAUSSIAN_NOISE_LEVELS, LEVELS, NOISES, SOLVERS, Calibration, calibrate
from .pairs import PairSet, concatenate, sum_query_presence
from .priors import Gaussian
from .tau import METHODS as TAU_METHODS

PAIR_COLUMNS = ("mean_i", "std_i", "mean_j", "std_j")
USER_COLUMNS = ("mean", "std")
TABLE_ROWS = 20  # rows shown in a table before the (announced) cut; csv and json show all


class CLIError(ValueError):
    """A user-facing error: printed as one line, exit status 2."""


# --------------------------------------------------------------------------- inputs


def read_csv_columns(path: str, columns: tuple[str, ...], what: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """Read the named numeric columns of a CSV file with a header row; optional ``label`` column."""
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            header = [h.strip() for h in (reader.fieldnames or [])]
            missing = [c for c in columns if c not in header]
            if missing:
                raise CLIError(f"{what} file {path}: missing column(s) {', '.join(missing)} (header: {','.join(header) or 'none'})")
            reader.fieldnames = header
            labels, values = [], {c: [] for c in columns}
            for row in reader:
                line = reader.line_num
                if not any((v or "").strip() for v in row.values()):
                    continue
                for c in columns:
                    text = (row.get(c) or "").strip()
                    try:
                        number = float(text)
                    except ValueError:
                        raise CLIError(f"{what} file {path}, line {line}: {c} is {text!r}, not a number") from None
                    if not math.isfinite(number):
                        raise CLIError(f"{what} file {path}, line {line}: {c} must be finite, got {text!r}")
                    if c.startswith("std") and number < 0:
                        raise CLIError(f"{what} file {path}, line {line}: {c} must be >= 0, got {text!r}")
                    values[c].append(number)
                labels.append((row.get("label") or "").strip() or str(len(labels)))
    except OSError as err:
        raise CLIError(f"cannot read {what} file {path}: {err.strerror or err}") from None
    except csv.Error as err:
        raise CLIError(f"{what} file {path}: malformed CSV: {err}") from None
    if not labels:
        raise CLIError(f"{what} file {path}: no data rows")
    return labels, {c: np.asarray(v) for c, v in values.items()}


def builtin_example() -> tuple[list[str], PairSet, str]:
    """A small, meaningful pair set: a 6-user sum query (presence pairs) and three attribute secrets."""
    means = np.array([1.2, 0.8, 2.5, 1.0, 0.3, 1.7])
    stds = np.array([0.5, 0.4, 1.5, 0.6, 0.2, 0.9])
    presence = sum_query_presence(means, stds)
    secrets = PairSet(Gaussian([0.0, 0.0, 2.0], [1.0, 1.0, 1.0]), Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    labels = [f"user {k + 1} in/out" for k in range(len(means))] + ["N(0,1) vs N(1,2²)", "N(0,1) vs N(0,3²)", "N(2,1) vs N(0,1)"]
    about = (
        "Built-in example: the sum of 6 users' values, each Gaussian to the adversary (pairs: user k "
        "present vs absent, Corollary 1(a)), plus three Gaussian attribute secrets."
    )
    return labels, concatenate(presence, secrets), about


# --------------------------------------------------------------------------- outputs


def _rows(labels, pairs: PairSet, result: Calibration) -> list[dict]:
    first, second = pairs.first, pairs.second
    cols = {
        "mean_i": first.mean, "std_i": first.std, "mean_j": second.mean, "std_j": second.std,
        "delta_mu": np.abs(first.mean - second.mean), "delta_sigma": np.abs(first.std - second.std),
        "scale": result.per_pair,
    }
    cols = {k: np.asarray(v).ravel() for k, v in cols.items()}
    binding = int(np.ravel_multi_index(result.binding, result.per_pair.shape)) if result.binding else 0
    return [
        {"pair": labels[n], **{k: float(v[n]) for k, v in cols.items()}, "binding": n == binding}
        for n in range(len(labels))
    ]


def _summary(result: Calibration, rows: list[dict]) -> dict:
    binding = next(r for r in rows if r["binding"])
    return {
        "eps": float(result.eps), "delta": float(result.delta), "level": result.level, "noise": result.noise,
        "solver": result.solver, "scale": float(result.scale), "variance": float(result.variance),
        "delta_achieved": float(result.delta_achieved), "binding": binding["pair"],
        "converged": bool(result.converged), "num_pairs": len(rows),
    }


def render(result: Calibration, rows: list[dict], fmt: str, about: str = "") -> str:
    summary = _summary(result, rows)
    if fmt == "json":
        return json.dumps({**summary, "pairs": rows}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    shown = sorted(rows, key=lambda r: -r["scale"])[:TABLE_ROWS] if len(rows) > TABLE_ROWS else rows
    width = max(4, *(len(r["pair"]) for r in shown))
    sym = kernels.resolve(result.noise).symbol
    lines = [about] if about else []
    lines.append(f"(ε, δ) = ({summary['eps']:g}, {summary['delta']:g})   noise: {result.noise}   level: {result.level} ({result.solver})")
    lines.append("")
    lines.append(f"  {'pair':<{width}}  {'μ_i':>9} {'σ_i':>9} {'μ_j':>9} {'σ_j':>9} {'Δμ':>9} {'Δσ':>9} {sym + ' per pair':>12}")
    for r in shown:
        mark = "*" if r["binding"] else " "
        lines.append(
            f"{mark} {r['pair']:<{width}}  {r['mean_i']:9.4g} {r['std_i']:9.4g} {r['mean_j']:9.4g} {r['std_j']:9.4g} "
            f"{r['delta_mu']:9.4g} {r['delta_sigma']:9.4g} {r['scale']:12.6g}"
        )
    if len(shown) < len(rows):
        lines.append(f"  ... showing the {len(shown)} largest of {len(rows)} pairs; --format csv or json lists all")
    lines += [
        "",
        f"binding pair (*):  {summary['binding']}",
        f"noise scale {sym}:     {summary['scale']:.6g}",
        f"noise variance:    {summary['variance']:.6g}",
        f"exact δ at {sym}:      {summary['delta_achieved']:.3g}  (target {summary['delta']:g})",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands


def _common(parser: argparse.ArgumentParser, delta_default: float) -> None:
    parser.add_argument("--eps", type=float, default=1.0, help="ε > 0 (default 1)")
    parser.add_argument("--delta", type=float, default=delta_default, help=f"δ in (0, 1) (default {delta_default:g})")
    parser.add_argument(
        "--level", choices=LEVELS,
        help="theorem (Theorem 1, closed form; the default for Laplace noise), indicator, coupling, or "
        "exact (the smallest scale; the default for Gaussian noise)",
    )
    parser.add_argument("--noise", default="laplace", choices=NOISES, help="noise distribution (default laplace)")
    parser.add_argument("--solver", default="optax", choices=SOLVERS, help="search for the numerical levels")
    parser.add_argument("--tau", default="exact", choices=TAU_METHODS, help="τ*(δ) for the theorem level")
    parser.add_argument("--format", default="table", choices=("table", "json", "csv"), help="output format")


def _run(labels, pairs, args, about="") -> str:
    level = args.level or ("exact" if args.noise == "gaussian" else "theorem")
    if args.noise == "gaussian" and level not in GAUSSIAN_NOISE_LEVELS:
        raise CLIError(f"--level {level} is a Laplace-noise bound; with --noise gaussian use --level exact or coupling")
    result = calibrate(pairs, args.eps, args.delta, noise=args.noise, level=level, solver=args.solver, tau=args.tau)
    return render(result, _rows(labels, pairs, result), args.format, about)


def cmd_calibrate(args) -> str:
    if args.pairs is None:
        labels, pairs, about = builtin_example()
        return _run(labels, pairs, args, about)
    labels, cols = read_csv_columns(args.pairs, PAIR_COLUMNS, "pairs")
    pairs = PairSet(Gaussian(cols["mean_i"], cols["std_i"]), Gaussian(cols["mean_j"], cols["std_j"]))
    return _run(labels, pairs, args)


def cmd_sum_query(args) -> str:
    if args.users is not None:
        if args.K is not None:
            raise CLIError("give either --users FILE or --K/--mean/--std, not both")
        labels, cols = read_csv_columns(args.users, USER_COLUMNS, "users")
        labels = [f"user {label}" for label in labels]
        pairs = sum_query_presence(cols["mean"], cols["std"])
        about = f"Sum query over {len(labels)} users from {args.users}: pairs user k present vs absent (Corollary 1(a))."
        return _run(labels, pairs, args, about)
    if args.K is None or args.mean is None or args.std is None:
        raise CLIError("sum-query needs --users FILE, or all of --K, --mean and --std")
    if args.K < 1:
        raise CLIError(f"--K must be >= 1; got {args.K}")
    if args.std < 0 or not math.isfinite(args.std) or not math.isfinite(args.mean):
        raise CLIError("--mean must be finite and --std finite and >= 0")
    # All users identical: one representative presence pair, K users vs K − 1 (eq. (11)).
    K, mean, std = args.K, args.mean, args.std
    pairs = PairSet(Gaussian(K * mean, math.sqrt(K) * std), Gaussian((K - 1) * mean, math.sqrt(K - 1) * std))
    about = f"Sum query over K = {K} identical users N({mean:g}, {std:g}²): any user present vs absent (eq. (11))."
    return _run([f"any of {K} users in/out"], pairs, args, about)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxpuffer", description="Calibrate noise for (ε, δ)-pufferfish privacy.")
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="calibrate the noise for Gaussian secret pairs (built-in example by default)")
    cal.add_argument("--pairs", metavar="FILE.csv", help="CSV with columns mean_i,std_i,mean_j,std_j (optional label)")
    _common(cal, 1e-3)
    cal.set_defaults(func=cmd_calibrate)
    sq = sub.add_parser("sum-query", help="calibrate the noise for a sum over independent users")
    sq.add_argument("--users", metavar="FILE.csv", help="CSV with columns mean,std (one user a row; optional label)")
    sq.add_argument("--K", type=int, help="number of identical users")
    sq.add_argument("--mean", type=float, help="each user's mean")
    sq.add_argument("--std", type=float, help="each user's standard deviation")
    _common(sq, 0.3)
    sq.set_defaults(func=cmd_sum_query)
    return parser


def _enable_compilation_cache() -> None:
    """Keep compiled kernels on disk between runs of the command (JAX's persistent cache), so only
    the first run of a calibration pays the compile time. JAXPUFFER_CACHE_DIR overrides the folder;
    an empty value turns the cache off."""
    folder = os.environ.get("JAXPUFFER_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "jaxpuffer"))
    if not folder:
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return  # no writable cache folder: compile every time
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _enable_compilation_cache()
    try:
        output = args.func(args)
    except ValueError as err:  # CLIError and the API's validation errors
        print(f"jaxpuffer: error: {err}", file=sys.stderr)
        return 2
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
