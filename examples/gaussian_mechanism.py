"""Gaussian noise: jaxpuffer's exact calibration against the classical and Liu's bounds.

Point-mass priors (differential privacy, sensitivity Δ = 1): the exact level is the analytic
Gaussian mechanism (Balle & Wang 2018); it is compared with dp_accounting's calibration (when
installed), the classical σ = √(2 ln(1.25/δ)) Δ/ε, and Liu's Lemma 10 (generalized-Gaussian
paper, (ε, δ)-pDP) σ = Δ(√(z² + 2ε) − z)/(2ε), z = Φ⁻¹(δ/2). Then Gaussian priors: the exact θ
for N(0,1) vs N(1,2²) beside the exact Laplace b, as noise variances. Writes
gaussian_mechanism.png: σ against ε for each δ, jaxpuffer's exact σ beside the classical and
Liu's bounds (dp_accounting's points where it is installed).
"""
import math

import numpy as np
from scipy.stats import norm

import jaxpuffer as jp
from _common import parser, pyplot, save


def dp_accounting_sigma(eps, delta):
    try:
        from dp_accounting.pld import accountant, common
    except ImportError:
        return float("nan")
    return accountant.get_smallest_gaussian_noise(common.DifferentialPrivacyParameters(eps, delta))


def plot(rows, out):
    """σ against ε, one colour per δ: exact (solid), classical (dashed), Liu's Lemma 10 (dotted)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    rows = np.array(rows)  # eps, delta, exact, dp_accounting, classical, liu
    for colour, delta in zip(("C0", "C1", "C2"), sorted(set(rows[:, 1]), reverse=True)):
        r = rows[rows[:, 1] == delta]
        ax.plot(r[:, 0], r[:, 2], "-o", color=colour, label=f"exact (jaxpuffer), δ = {delta:g}")
        ax.plot(r[:, 0], r[:, 4], "--", color=colour, label=f"classical √(2 ln(1.25/δ))/ε, δ = {delta:g}")
        ax.plot(r[:, 0], r[:, 5], ":", color=colour, label=f"Liu Lemma 10 (pDP), δ = {delta:g}")
        if np.all(np.isfinite(r[:, 3])):
            ax.plot(r[:, 0], r[:, 3], "x", color="k", ms=7, label="dp_accounting" if colour == "C0" else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("Gaussian noise std σ (sensitivity Δ = 1)")
    ax.set_title("Point masses (differential privacy): the exact σ against the bounds")
    ax.legend(fontsize=6.5, ncol=1)
    return save(fig, out, "gaussian_mechanism.png")


def main():
    args = parser(__doc__).parse_args()
    rows = []
    point_masses = jp.PairSet(jp.Gaussian(0.0, 0.0), jp.Gaussian(1.0, 0.0))
    print("Point masses (DP), Δ = 1: Gaussian noise std σ")
    print(f"{'ε':>5} {'δ':>8} {'jaxpuffer exact':>16} {'dp_accounting':>14} {'classical':>10} {'Liu Lemma 10':>13} {'exact/classical':>16}")
    for eps in (0.1, 0.5, 1.0, 2.0):
        for delta in (1e-3, 1e-5, 1e-8):
            ours = float(jp.calibrate(point_masses, eps, delta, noise="gaussian", level="exact").scale)
            classical = math.sqrt(2 * math.log(1.25 / delta)) / eps
            z = norm.ppf(delta / 2)
            liu = (math.sqrt(z * z + 2 * eps) - z) / (2 * eps)
            reference = dp_accounting_sigma(eps, delta)
            rows.append((eps, delta, ours, reference, classical, liu))
            print(f"{eps:5.1f} {delta:8.0e} {ours:16.6f} {reference:14.6f} {classical:10.4f} {liu:13.4f} {ours / classical:16.4f}")

    print("\nGaussian priors N(0,1) vs N(1,2²): noise variance, exact level")
    pair = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0))
    print(f"{'ε':>5} {'δ':>8} {'Gaussian θ²':>12} {'Laplace 2b²':>12}")
    for eps, delta in [(1.0, 1e-2), (1.0, 1e-5), (0.5, 1e-3), (2.0, 1e-6)]:
        theta = float(jp.calibrate(pair, eps, delta, noise="gaussian", level="exact").scale)
        b = float(jp.calibrate(pair, eps, delta, level="exact").scale)
        print(f"{eps:5.1f} {delta:8.0e} {theta**2:12.4f} {2 * b**2:12.4f}")
    print("(Laplace tails make pure ε reachable at a finite b for these priors; Gaussian noise never is.)")
    plot(rows, args.out)


if __name__ == "__main__":
    np.set_printoptions(precision=5)
    main()
