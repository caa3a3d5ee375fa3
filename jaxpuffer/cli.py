"""``jaxpuffer`` command line: calibration over the public Python API.

    jaxpuffer calibrate                      # the built-in example at every level (exact: the smallest)
    jaxpuffer calibrate --level theorem      # one level only
    jaxpuffer calibrate --noise gaussian     # Gaussian noise (exact level)
    jaxpuffer calibrate --pairs pairs.csv --eps 1 --delta 1e-3 --format json
    jaxpuffer sum-query --users users.csv --eps 1 --delta 0.3
    jaxpuffer sum-query --K 1000 --mean 1 --std 2 --eps 1 --delta 0.3
    jaxpuffer sweep --eps 0.1:10:9 --delta 1e-3,1e-6 --plot sweep.png --format csv --out sweep.csv

Bad files or values print one ``jaxpuffer: error: ...`` line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys

import numpy as np

from .noise import kernels
from .calibration import LEVELS, NOISES, SOLVERS, Calibration, calibrate
from .pairs import PairSet, concatenate, sum_query_presence
from .priors import Discrete, Gaussian, GaussianMixture
from .tau import METHODS as TAU_METHODS

PAIR_COLUMNS = ("mean_i", "std_i", "mean_j", "std_j")
USER_COLUMNS = ("mean", "std")
TABLE_ROWS = 20  # rows shown in a table before the (announced) cut; csv and json show all


class CLIError(ValueError):
    """A user-facing error: printed as one line, exit status 2."""


# --------------------------------------------------------------------------- inputs


def _read_text(path: str, what: str, kind: str) -> str:
    """A file's text: UTF-8 (a byte-order mark is accepted), never a binary file (one-line errors)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        raise CLIError(f"cannot read {what} file {path}: {err.strerror or err}") from None
    if b"\0" in raw[: 1 << 16]:
        raise CLIError(f"{what} file {path} is a binary file, not a {kind} text file (it contains NUL bytes)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CLIError(f"{what} file {path} is a binary file, not a UTF-8 {kind} text file (undecodable byte at offset {err.start})") from None


def _read_rows(path: str, what: str, columns: tuple[str, ...]):
    """The header and the non-blank rows ``(line number, {column: text})`` of a CSV file with a
    header row that holds ``columns``, every row with exactly the header's number of values."""
    reader = csv.DictReader(io.StringIO(_read_text(path, what, "CSV"), newline=""))
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in columns if c not in header]
        if missing:
            raise CLIError(f"{what} file {path}: missing column(s) {', '.join(missing)} (header: {','.join(header) or 'none'})")
        reader.fieldnames = header
        rows = []
        for row in reader:
            line = reader.line_num
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            if None in row:  # DictReader's key for values beyond the header
                raise CLIError(f"{what} file {path}, line {line}: {len(header) + len(row[None])} values, but the header has {len(header)} columns")
            if any(row[h] is None for h in header):
                raise CLIError(f"{what} file {path}, line {line}: fewer values than the header's {len(header)} columns")
            rows.append((line, {h: row[h].strip() for h in header}))
    except csv.Error as err:
        raise CLIError(f"{what} file {path}: malformed CSV: {err}") from None
    if not rows:
        raise CLIError(f"{what} file {path}: no data rows")
    return header, rows


def _number(text: str, where: str, column: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise CLIError(f"{where}: {column} is {text!r}, not a number") from None
    if not math.isfinite(number):
        raise CLIError(f"{where}: {column} must be finite, got {text!r}")
    return number


def read_csv_columns(path: str, columns: tuple[str, ...], what: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """Read the named numeric columns of a CSV file with a header row; optional ``label`` column."""
    _, rows = _read_rows(path, what, columns)
    labels, values = [], {c: [] for c in columns}
    for line, row in rows:
        for c in columns:
            number = _number(row[c], f"{what} file {path}, line {line}", c)
            if c.startswith("std") and number < 0:
                raise CLIError(f"{what} file {path}, line {line}: {c} must be >= 0, got {row[c]!r}")
            values[c].append(number)
        labels.append(row.get("label") or str(len(labels)))
    return labels, {c: np.asarray(v) for c, v in values.items()}


# A JSON pair file: {"family": F, "pairs": [{"label": ..., "first": PRIOR, "second": PRIOR}, ...]}
# with PRIOR per family F (lists of one length within a prior; lengths may differ between priors):
# the priors' own fields: gaussian (mean, std) numbers; mixture (weights, means, stds) one entry
# per component; discrete (support, probs) one entry per atom, support sorted.
PAIR_FILE_FIELDS = {"gaussian": Gaussian._fields, "mixture": GaussianMixture._fields, "discrete": Discrete._fields}


def _json_prior(prior, family: str, where: str) -> list[np.ndarray]:
    fields = PAIR_FILE_FIELDS[family]
    if not isinstance(prior, dict) or set(prior) != set(fields):
        raise CLIError(f"{where}: a {family} prior is an object with the keys {', '.join(fields)}; got {json.dumps(prior)[:80]}")
    out = []
    for f in fields:
        value = prior[f]
        ok = isinstance(value, (int, float)) if family == "gaussian" else (
            isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value))
        if not ok or isinstance(value, bool):
            kind = "a number" if family == "gaussian" else "a non-empty list of numbers"
            raise CLIError(f"{where}: {f} must be {kind}; got {json.dumps(value)[:80]}")
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise CLIError(f"{where}: {f} must be finite")
        out.append(arr)
    if family != "gaussian" and len({a.size for a in out}) > 1:
        raise CLIError(f"{where}: {', '.join(fields)} must have one length; got {', '.join(str(a.size) for a in out)}")
    return out


def _pad(arrays: list[np.ndarray], fill) -> np.ndarray:
    """Stack 1-D arrays of different lengths, padding each row with ``fill(row, extra)``."""
    width = max(a.size for a in arrays)
    return np.stack([np.concatenate([a, fill(a, width - a.size)]) for a in arrays])


def read_pair_json(path: str) -> tuple[list[str], PairSet, str]:
    """Labels, pairs and the family name of a JSON pair file (schema: ``PAIR_FILE_FIELDS``).
    Mixtures with fewer components are padded with zero-weight components, discrete priors with
    zero-probability atoms beyond their largest one: neither changes the prior."""
    try:
        data = json.loads(_read_text(path, "pairs", "JSON"))
    except json.JSONDecodeError as err:
        raise CLIError(f"pairs file {path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    family = data.get("family") if isinstance(data, dict) else None
    if family not in PAIR_FILE_FIELDS or not isinstance(data.get("pairs"), list) or not data["pairs"]:
        raise CLIError(
            f"pairs file {path}: expected {{\"family\": {' | '.join(map(json.dumps, PAIR_FILE_FIELDS))}, "
            "\"pairs\": [{\"label\": ..., \"first\": {...}, \"second\": {...}}, ...]}"
        )
    labels, sides = [], ([], [])
    for n, pair in enumerate(data["pairs"]):
        where = f"pairs file {path}, pair {n + 1}"
        if not isinstance(pair, dict) or "first" not in pair or "second" not in pair:
            raise CLIError(f"{where}: a pair is an object with the keys first, second (and an optional label)")
        labels.append(str(pair.get("label", n)))
        for side, key in zip(sides, ("first", "second")):
            side.append(_json_prior(pair[key], family, f"{where}, {key}"))
    try:
        if family == "gaussian":
            priors = [Gaussian(*(np.array([p[k] for p in side]) for k in range(2))) for side in sides]
        elif family == "mixture":
            priors = [
                GaussianMixture(
                    _pad([p[0] for p in side], lambda a, e: np.zeros(e)),
                    _pad([p[1] for p in side], lambda a, e: np.full(e, a[0])),
                    _pad([p[2] for p in side], lambda a, e: np.full(e, a[0])),
                )
                for side in sides
            ]
        else:
            priors = [
                Discrete(
                    _pad([p[0] for p in side], lambda a, e: a[-1] + 1.0 + np.arange(e)),
                    _pad([p[1] for p in side], lambda a, e: np.zeros(e)),
                )
                for side in sides
            ]
    except ValueError as err:  # the priors' own validation (negative std, weights not summing to 1, ...)
        raise CLIError(f"pairs file {path}: {err}") from None
    return labels, PairSet(*priors), family


def builtin_example() -> tuple[list[str], PairSet, str]:
    """A small, meaningful pair set: a 6-user sum query (presence pairs) and three attribute secrets."""
    means = np.array([1.2, 0.8, 2.5, 1.0, 0.3, 1.7])
    stds = np.array([0.5, 0.4, 1.5, 0.6, 0.2, 0.9])
    presence = sum_query_presence(means, stds)
    secrets = PairSet(Gaussian([0.0, 0.0, 2.0], [1.0, 1.0, 1.0]), Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    labels = [f"user {k + 1} in/out" for k in range(len(means))] + ["N(0,1) vs N(1,2²)", "N(0,1) vs N(0,3²)", "N(2,1) vs N(0,1)"]
    about = (
        "Built-in example. 'user k in/out': a published sum of 6 users' values, each user's value Gaussian to the\n"
        "adversary; the secret is whether user k's value is in the sum or not (Corollary 1(a)). The last three\n"
        "pairs are secrets about one value, with Gaussian priors N(μ_i, σ_i²) vs N(μ_j, σ_j²)."
    )
    return labels, concatenate(presence, secrets), about


# --------------------------------------------------------------------------- outputs

# The levels the main job compares, loosest first (those the noise kernel has).
COMPARED = ("theorem", "coupling", "exact")
LEVEL_NAMES = {"theorem": "Theorem 1", "indicator": "the indicator bound", "coupling": "the coupling bound", "exact": "the exact level"}


def _moments(prior) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of X under a prior of any family."""
    if isinstance(prior, Gaussian):
        return np.asarray(prior.mean), np.asarray(prior.std)
    if isinstance(prior, GaussianMixture):
        w, m, s = (np.asarray(a) for a in (prior.weights, prior.means, prior.stds))
        second_moment = np.sum(w * (s**2 + m**2), axis=-1)
    else:
        w, m = np.asarray(prior.probs), np.asarray(prior.support)
        second_moment = np.sum(w * m**2, axis=-1)
    mean = np.sum(w * m, axis=-1)
    return mean, np.sqrt(np.maximum(second_moment - mean**2, 0.0))


def _rows(labels, pairs: PairSet, result: Calibration, others: dict[str, Calibration]) -> list[dict]:
    (mean_i, std_i), (mean_j, std_j) = _moments(pairs.first), _moments(pairs.second)
    cols = {
        "mean_i": mean_i, "std_i": std_i, "mean_j": mean_j, "std_j": std_j,
        "delta_mu": np.abs(mean_i - mean_j), "delta_sigma": np.abs(std_i - std_j),
        "scale": result.per_pair,
        **{f"scale_{level}": other.per_pair for level, other in others.items()},
    }
    cols = {k: np.asarray(v).ravel() for k, v in cols.items()}
    binding = int(np.ravel_multi_index(result.binding, result.per_pair.shape)) if result.binding else 0
    return [
        {"pair": labels[n], **{k: float(v[n]) for k, v in cols.items()}, "binding": n == binding}
        for n in range(len(labels))
    ]


def _summary(result: Calibration, rows: list[dict], others: dict[str, Calibration]) -> dict:
    binding = next(r for r in rows if r["binding"])
    out = {
        "eps": float(result.eps), "delta": float(result.delta), "level": result.level, "noise": result.noise,
        "solver": result.solver, "scale": float(result.scale), "variance": float(result.variance),
        "delta_achieved": float(result.delta_achieved), "certificate": result.certificate, "binding": binding["pair"],
        "converged": bool(result.converged), "num_pairs": len(rows),
    }
    if others:
        out["scales_by_level"] = {level: float(other.scale) for level, other in others.items()}
    return out


def _savings(summary: dict, sym: str) -> str:
    """'2.3× less noise than Theorem 1 (b = 6.6), ...' for the levels compared, or ''."""
    parts = []
    for level, scale in summary.get("scales_by_level", {}).items():
        if level == summary["level"]:
            continue
        if summary["scale"] > 0:
            parts.append(f"{scale / summary['scale']:.3g}× less noise than {LEVEL_NAMES[level]} ({sym} = {scale:.4g})")
        else:
            parts.append(f"no noise at all, where {LEVEL_NAMES[level]} asks {sym} = {scale:.4g}")
    if not parts:
        return ""
    return f"{LEVEL_NAMES[summary['level']]}: {sym} = {summary['scale']:.4g}, " + "; ".join(parts) + ", for the same (ε, δ)"


def _write_text(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` (a one-line error where it cannot)."""
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as err:
        raise CLIError(f"cannot write {path}: {err.strerror or err}") from None


def _csv(rows: list[dict]) -> str:
    """Rows of dicts as CSV text with a header (the first row's keys)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().rstrip("\n")


def render(result: Calibration, rows: list[dict], fmt: str, about: str = "", others: dict | None = None) -> str:
    others = others or {}
    summary = _summary(result, rows, others)
    if fmt == "json":
        return json.dumps({**summary, "pairs": rows}, indent=2)
    if fmt == "csv":
        return _csv(rows)
    shown = sorted(rows, key=lambda r: -r["scale"])[:TABLE_ROWS] if len(rows) > TABLE_ROWS else rows
    width = max(4, *(len(r["pair"]) for r in shown))
    sym = kernels.resolve(result.noise).symbol
    per_level = list(others) or [result.level]
    lines = [about] if about else []
    lines.append(f"(ε, δ) = ({summary['eps']:g}, {summary['delta']:g})   noise: {result.noise}   level: {result.level} ({result.solver})")
    lines.append("")
    heads = "".join(f" {sym + ' ' + level:>11}" for level in per_level) if others else f" {sym + ' per pair':>12}"
    lines.append(f"  {'pair':<{width}}  {'μ_i':>8} {'σ_i':>8} {'μ_j':>8} {'σ_j':>8} {'Δμ':>8} {'Δσ':>8}{heads}")
    for r in shown:
        mark = "*" if r["binding"] else " "
        scales = "".join(f" {r['scale_' + level]:11.5g}" for level in per_level) if others else f" {r['scale']:12.6g}"
        lines.append(
            f"{mark} {r['pair']:<{width}}  {r['mean_i']:8.4g} {r['std_i']:8.4g} {r['mean_j']:8.4g} {r['std_j']:8.4g} "
            f"{r['delta_mu']:8.4g} {r['delta_sigma']:8.4g}{scales}"
        )
    if len(shown) < len(rows):
        lines.append(f"  ... showing the {len(shown)} largest of {len(rows)} pairs; --format csv or json lists all")
    lines += [
        "",
        "μ, σ: mean and standard deviation of the published value X under each secret (i, j) of the pair, as the",
        "adversary's prior sees it; Δμ, Δσ: their differences. The noise scale is the largest over the pairs.",
        "",
        f"binding pair (*):  {summary['binding']}",
        f"noise scale {sym}:     {summary['scale']:.6g}",
        f"noise variance:    {summary['variance']:.6g}",
        f"{'exact δ at ' + sym + ':':<19}{summary['delta_achieved']:.3g}  (target {summary['delta']:g})"
        if result.certificate == "exact" else
        f"δ at {sym}:           {summary['delta_achieved']:.3g}  (target {summary['delta']:g}; {result.certificate}-level bound, "
        "≥ the exact δ)",
    ]
    saved = _savings(summary, sym)
    if saved:
        lines += ["", saved]
    if any(r["scale"] == 0 for r in rows):
        lines.append(f"{sym} = 0 for a pair: its priors alone already meet (ε, δ); that pair needs no noise.")
    if summary["delta_achieved"] == 0 and result.certificate == "exact":
        lines.append(
            f"exact δ at {sym} = 0: no set of outputs separates any pair by more than the factor e^ε at this scale "
            "(the release is pure ε-private for these pairs)."
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands


class _Parser(argparse.ArgumentParser):
    """argparse that raises its errors as one-line CLIErrors (no usage block)."""

    def error(self, message):
        raise CLIError(message)


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _common(parser: argparse.ArgumentParser, delta_default: float) -> None:
    parser.add_argument("--eps", type=_finite, default=1.0, help="ε > 0 (default 1)")
    parser.add_argument(
        "--delta", type=_finite, default=delta_default,
        help=f"δ in (0, 1), or 0 for pure ε (exact level, Laplace noise) (default {delta_default:g})",
    )
    parser.add_argument(
        "--level", choices=LEVELS,
        help="one level only: theorem (Theorem 1, closed form), indicator, coupling, or exact (the smallest "
        "scale). Default: the exact level, compared with the theorem and coupling levels",
    )
    parser.add_argument("--noise", default="laplace", choices=NOISES, help="noise distribution (default laplace)")
    parser.add_argument("--solver", default="optax", choices=SOLVERS, help="search for the numerical levels")
    parser.add_argument("--tau", default="exact", choices=TAU_METHODS, help="τ*(δ) for the theorem level")
    parser.add_argument("--format", default="table", choices=("table", "json", "csv"), help="output format")
    parser.add_argument("--progress", action="store_true", help="a progress bar (pairs done, rate) on stderr")


def _run(labels, pairs, args, about="") -> str:
    kernel = kernels.resolve(args.noise)
    if args.level is not None and args.level not in kernel.levels:
        raise CLIError(f"--level {args.level} is a Laplace-noise bound; with --noise {args.noise} use --level exact or coupling")
    compared = ["exact"] if args.delta == 0 else COMPARED  # pure ε: only the exact level proves δ = 0
    levels = [args.level] if args.level else [level for level in compared if level in kernel.levels]
    results = {
        level: calibrate(pairs, args.eps, args.delta, noise=args.noise, level=level, solver=args.solver, tau=args.tau, progress=args.progress)
        for level in levels
    }
    result = results[levels[-1]]  # the tightest level asked for
    others = results if len(results) > 1 else {}
    return render(result, _rows(labels, pairs, result, others), args.format, about, others)


def _load_pairs(path: str | None) -> tuple[list[str], PairSet, str]:
    """(labels, pairs, about) from ``--pairs``: the built-in example, a JSON pair file or a CSV of
    Gaussian pairs."""
    if path is None:
        return builtin_example()
    if path.lower().endswith(".json"):
        labels, pairs, family = read_pair_json(path)
        return labels, pairs, f"{len(labels)} pairs of {family} priors from {path}."
    labels, cols = read_csv_columns(path, PAIR_COLUMNS, "pairs")
    return labels, PairSet(Gaussian(cols["mean_i"], cols["std_i"]), Gaussian(cols["mean_j"], cols["std_j"])), ""


def cmd_calibrate(args) -> str:
    labels, pairs, about = _load_pairs(args.pairs)
    return _run(labels, pairs, args, about)


def _grid(text: str, option: str) -> np.ndarray:
    """A list of values: ``a,b,c``, or ``lo:hi:n`` for n log-spaced values from lo to hi."""
    try:
        if ":" in text:
            lo, hi, n = text.split(":")
            lo, hi, count = float(lo), float(hi), int(n)
            if not (lo > 0 and hi > 0 and count >= 1):
                raise ValueError
            return np.geomspace(lo, hi, count)
        values = np.array([float(v) for v in text.split(",") if v.strip()])
    except ValueError:
        raise CLIError(f"{option} takes numbers a,b,c or a range lo:hi:n (n log-spaced values, lo, hi > 0); got {text!r}") from None
    if not values.size or not np.all(np.isfinite(values)):
        raise CLIError(f"{option} needs at least one finite number; got {text!r}")
    return values


def _sweep_plot(path: str, eps, deltas, results: dict, noise: str) -> None:
    """Noise standard deviation against ε (log-log), one colour per δ, one line style per level."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CLIError("--plot needs matplotlib: pip install 'jaxpuffer[plot]'") from None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = {"theorem": ":", "indicator": "-.", "coupling": "--", "exact": "-"}
    for level, result in results.items():
        std = np.sqrt(np.asarray(result.variance, np.float64))
        for k, delta in enumerate(deltas):
            ax.plot(eps, std[k], styles[level], color=f"C{k}", marker=".", label=f"{LEVEL_NAMES[level][0].upper()}{LEVEL_NAMES[level][1:]}, δ = {delta:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel(f"noise standard deviation ({noise})")
    ax.set_title("Privacy–utility: the noise each level calibrates")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as err:
        raise CLIError(f"cannot write {path}: {err.strerror or err}") from None
    finally:
        plt.close(fig)


def cmd_sweep(args) -> str:
    """The privacy–utility table: one batched :func:`calibrate` call per level over the (ε, δ) grid."""
    labels, pairs, about = _load_pairs(args.pairs)
    eps, deltas = _grid(args.eps, "--eps"), _grid(args.delta, "--delta")
    kernel = kernels.resolve(args.noise)
    levels = [v for v in args.levels.split(",") if v]
    for level in levels:
        if level not in LEVELS:
            raise CLIError(f"--levels takes names from {', '.join(LEVELS)}; got {level!r}")
        if level not in kernel.levels:
            raise CLIError(f"--levels {level}: not a level of {args.noise} noise (it has {', '.join(kernel.levels)})")
    results = {
        level: calibrate(pairs, eps, deltas[:, None], noise=args.noise, level=level, solver=args.solver, progress=args.progress)
        for level in levels
    }
    rows = []
    for level, result in results.items():
        std = np.sqrt(np.asarray(result.variance, np.float64))
        for k, delta in enumerate(deltas):
            for m, e in enumerate(eps):
                rows.append({
                    "level": level, "eps": float(e), "delta": float(delta), "scale": float(result.scale[k, m]),
                    "noise_std": float(std[k, m]), "delta_achieved": float(result.delta_achieved[k, m]), "certificate": result.certificate,
                })
    if args.plot:
        _sweep_plot(args.plot, eps, deltas, results, args.noise)
    if args.format == "json":
        text = json.dumps({"noise": args.noise, "num_pairs": len(labels), "rows": rows}, indent=2)
    elif args.format == "csv":
        text = _csv(rows)
    else:
        sym = kernel.symbol
        lines = [about] if about else []
        lines += [f"{len(labels)} pairs, {args.noise} noise; the scale is the largest over the pairs.", ""]
        lines.append(f"  {'level':<9} {'ε':>9} {'δ':>9} {sym:>11} {'noise std':>11} {'δ at ' + sym:>11}  certificate")
        for r in rows:
            lines.append(
                f"  {r['level']:<9} {r['eps']:9.4g} {r['delta']:9.3g} {r['scale']:11.5g} {r['noise_std']:11.5g} "
                f"{r['delta_achieved']:11.3g}  {r['certificate']}"
            )
        text = "\n".join(lines)
    if args.out:
        _write_text(args.out, text + "\n")
        text = f"wrote {len(rows)} rows ({len(levels)} levels × {len(deltas)} δ × {len(eps)} ε) to {args.out}"
    if args.plot:
        text += f"\nplot: {args.plot}"
    return text


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
    if args.std < 0:
        raise CLIError(f"--std must be >= 0; got {args.std:g}")
    # All users identical: one representative presence pair, K users vs K − 1 (eq. (11)).
    K, mean, std = args.K, args.mean, args.std
    pairs = PairSet(Gaussian(K * mean, math.sqrt(K) * std), Gaussian((K - 1) * mean, math.sqrt(K - 1) * std))
    about = f"Sum query over K = {K} identical users N({mean:g}, {std:g}²): any user present vs absent (eq. (11))."
    return _run([f"any of {K} users in/out"], pairs, args, about)


EXAMPLES = """examples:
  jaxpuffer calibrate                         built-in example: every level, and the noise the exact level saves
  jaxpuffer calibrate --level theorem         Theorem 1's closed form only
  jaxpuffer calibrate --noise gaussian        Gaussian noise (exact and coupling levels)
  jaxpuffer calibrate --pairs pairs.csv --eps 0.5 --delta 1e-6 --format json
  jaxpuffer calibrate --pairs examples/data/mixtures.json     Gaussian-mixture priors
  jaxpuffer calibrate --pairs examples/data/discrete.json     discrete priors
  jaxpuffer fit --data examples/data/salaries.csv --value salary --secret dept --out pairs.json
  jaxpuffer sum-query --K 1000 --mean 1 --std 2 --eps 1 --delta 0.3
  jaxpuffer sweep --eps 0.1:10:9 --delta 1e-3,1e-6 --plot sweep.png    privacy-utility table and plot
"""


def cmd_fit(args) -> str:
    """Fit one Gaussian mixture per secret value (EM, :func:`jaxpuffer.priors_from_table`) and
    write every ordered pair of them as a JSON pair file."""
    from .fitting import priors_from_table
    from .pairs import all_pairs, all_pairs_index

    if args.components < 1:
        raise CLIError(f"--components must be >= 1; got {args.components}")
    _, rows = _read_rows(args.data, "data", (args.value, args.secret))
    values = np.array([_number(row[args.value], f"data file {args.data}, line {line}", args.value) for line, row in rows])
    secrets = np.array([row[args.secret] for _, row in rows])
    if np.unique(secrets).size < 2:
        raise CLIError(f"data file {args.data}: column {args.secret} needs at least 2 distinct secrets")
    import jax

    names, fit = priors_from_table(values, secrets, args.components, key=jax.random.PRNGKey(args.seed), var_floor=args.var_floor,
                                     progress=args.progress)
    prior = fit.prior
    i, j = all_pairs_index(len(names))
    pairs = all_pairs(prior)
    side = lambda p: {f: np.asarray(getattr(p, f)).tolist() for f in PAIR_FILE_FIELDS["mixture"]}  # noqa: E731
    document = {
        "family": "mixture",
        "source": {"data": args.data, "value": args.value, "secret": args.secret, "components": args.components, "seed": args.seed},
        "pairs": [
            {"label": f"{names[a]} vs {names[b]}", "first": side(pairs.first[n]), "second": side(pairs.second[n])}
            for n, (a, b) in enumerate(zip(i, j))
        ],
    }
    _write_text(args.out, json.dumps(document, indent=1))
    counts = {str(name): int(np.sum(secrets == name)) for name in names}
    return (
        f"fitted {args.components}-component mixtures of {args.value} for {len(names)} values of {args.secret} "
        f"({', '.join(f'{k}: {v} rows' for k, v in counts.items())}); converged: {bool(np.all(fit.converged))}\n"
        f"wrote {len(i)} ordered pairs to {args.out}; next: jaxpuffer calibrate --pairs {args.out}"
    )


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="jaxpuffer", description="Calibrate noise for (ε, δ)-pufferfish privacy.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jaxpuffer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{calibrate,sum-query,fit,sweep}")
    cal = sub.add_parser(
        "calibrate", help="calibrate the noise for secret pairs: Gaussian, mixture or discrete priors (built-in example by default)",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cal.add_argument(
        "--pairs", metavar="FILE",
        help="Gaussian pairs: a CSV with columns mean_i,std_i,mean_j,std_j (optional label); any family: a JSON "
        'pair file {"family": "gaussian"|"mixture"|"discrete", "pairs": [{"label", "first", "second"}, ...]} '
        "(see examples/data/)",
    )
    _common(cal, 1e-3)
    cal.set_defaults(func=cmd_calibrate)
    sq = sub.add_parser(
        "sum-query", help="calibrate the noise for a sum over independent users",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sq.add_argument("--users", metavar="FILE.csv", help="CSV with columns mean,std (one user a row; optional label)")
    sq.add_argument("--K", type=int, help="number of identical users")
    sq.add_argument("--mean", type=_finite, help="each user's mean")
    sq.add_argument("--std", type=_finite, help="each user's standard deviation")
    _common(sq, 0.3)
    sq.set_defaults(func=cmd_sum_query)
    fit = sub.add_parser(
        "fit", help="fit a Gaussian-mixture prior per secret from a data table and write the pair file",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fit.add_argument("--data", required=True, metavar="FILE.csv", help="CSV with a header row")
    fit.add_argument("--value", required=True, metavar="COLUMN", help="the numeric column published (X)")
    fit.add_argument("--secret", required=True, metavar="COLUMN", help="the column whose value is the secret")
    fit.add_argument("--components", type=int, default=2, help="mixture components per secret (default 2)")
    fit.add_argument("--var-floor", type=_finite, default=1e-6, help="smallest component variance (default 1e-6)")
    fit.add_argument("--seed", type=int, default=0, help="PRNG seed of the EM start (default 0)")
    fit.add_argument("--out", required=True, metavar="FILE.json", help="the pair file to write")
    fit.add_argument("--progress", action="store_true", help="a progress bar (EM iterations, secrets converged) on stderr")
    fit.set_defaults(func=cmd_fit)
    sweep = sub.add_parser(
        "sweep", help="the privacy-utility table: the calibrated noise over a grid of (ε, δ), per level, and its plot",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("--pairs", metavar="FILE", help="a pair file as for calibrate (default: the built-in example)")
    sweep.add_argument("--eps", default="0.1:10:9", help="ε values: a,b,c or lo:hi:n, n log-spaced (default 0.1:10:9)")
    sweep.add_argument("--delta", default="1e-3,1e-6,1e-9", help="δ values, likewise (default 1e-3,1e-6,1e-9)")
    sweep.add_argument("--levels", default="theorem,exact", help="comma-separated levels (default theorem,exact)")
    sweep.add_argument("--noise", default="laplace", choices=NOISES, help="noise distribution (default laplace)")
    sweep.add_argument("--solver", default="optax", choices=SOLVERS, help="search for the numerical levels")
    sweep.add_argument("--format", default="table", choices=("table", "json", "csv"), help="output format")
    sweep.add_argument("--out", metavar="FILE", help="write the table there instead of stdout")
    sweep.add_argument("--plot", metavar="FILE.png", help="plot the noise std against ε (needs matplotlib)")
    sweep.add_argument("--progress", action="store_true", help="a progress bar on stderr")
    sweep.set_defaults(func=cmd_sweep)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        output = args.func(args)
    except ValueError as err:  # CLIError (argparse's errors included) and the API's validation errors
        print(f"jaxpuffer: error: {err}", file=sys.stderr)
        return 2
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
