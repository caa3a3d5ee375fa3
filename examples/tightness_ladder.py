"""The tightness ladder (MATH.md §6): how much noise each level of the ladder asks for.

For a grid of Gaussian secret pairs and (ε, δ): the scale at every level — Theorem 1 with the
Lambert-W τ* (23), Theorem 1 (5), the indicator bound (18), the Monge-coupling bound (35), and the
exact hockey-stick divergence — for Laplace noise, and the coupling and exact levels for Gaussian
noise; then the ratio exact / Theorem 1 and the noise-variance saving. The plot shows the Laplace
ladder against δ for N(0, 1) vs N(1, 2²) at ε = 1.
"""
import numpy as np

import jaxpuffer as jp
from _common import parser, pyplot, save

PAIRS = [  # (μ_i, σ_i, μ_j, σ_j, label)
    (0.0, 1.0, 1.0, 2.0, "N(0,1) vs N(1,2²)"),
    (0.0, 1.0, 0.0, 3.0, "N(0,1) vs N(0,3²)"),
    (2.0, 1.0, 0.0, 1.0, "N(2,1) vs N(0,1)"),
    (0.0, 0.1, 0.0, 10.0, "N(0,0.1²) vs N(0,10²)"),
    (0.0, 0.0, 1.0, 0.0, "δ_0 vs δ_1 (DP)"),
]
TARGETS = [(1.0, 1e-2), (1.0, 1e-6), (0.5, 1e-3)]
LADDER = [("Thm1 (23)", dict(level="theorem", tau="lambert")), ("Thm1 (5)", dict(level="theorem")),
          ("indicator", dict(level="indicator")), ("coupling", dict(level="coupling")), ("exact", dict(level="exact"))]


def ladder(pairs, eps, delta):
    """Per-pair scales at every Laplace level, then Gaussian-noise coupling and exact."""
    out = {name: np.asarray(jp.calibrate(pairs, eps, delta, **kw).per_pair) for name, kw in LADDER}
    for level in ("coupling", "exact"):
        out[f"gauss {level}"] = np.asarray(jp.calibrate(pairs, eps, delta, noise="gaussian", level=level).per_pair)
    return out


def main():
    args = parser(__doc__).parse_args()
    pairs = jp.PairSet(jp.Gaussian([p[0] for p in PAIRS], [p[1] for p in PAIRS]), jp.Gaussian([p[2] for p in PAIRS], [p[3] for p in PAIRS]))
    names = [name for name, _ in LADDER] + ["gauss coupling", "gauss exact"]
    for eps, delta in TARGETS:
        scales = ladder(pairs, eps, delta)
        print(f"\n(ε, δ) = ({eps:g}, {delta:g})   Laplace b per level; Gaussian θ; exact/Thm1 and Laplace variance saving")
        print(f"{'pair':<24}" + "".join(f"{n:>15}" for n in names) + f"{'exact/Thm1':>12}{'var. saving':>13}")
        for k, (*_, label) in enumerate(PAIRS):
            thm, exact = scales["Thm1 (5)"][k], scales["exact"][k]
            ratio = exact / thm if thm > 0 else float("nan")
            saving = (1 - ratio**2) * 100 if thm > 0 else float("nan")
            print(f"{label:<24}" + "".join(f"{scales[n][k]:15.5f}" for n in names) + f"{ratio:12.4f}{saving:12.1f}%")

    # the Laplace ladder against δ for one pair
    deltas = np.logspace(-12, -1, 23)
    pair = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0))
    curves = {name: np.asarray(jp.calibrate(pair, 1.0, deltas, **kw).scale) for name, kw in LADDER}  # one sweep call each
    for level in ("coupling", "exact"):
        curves[f"Gaussian θ ({level})"] = np.asarray(jp.calibrate(pair, 1.0, deltas, noise="gaussian", level=level).scale)
    print("\nN(0,1) vs N(1,2²), ε = 1: b against δ")
    print(f"{'δ':>10}" + "".join(f"{n:>26}" for n in curves))
    for k, d in enumerate(deltas[::2]):
        print(f"{d:10.1e}" + "".join(f"{curves[n][2 * k]:26.5f}" for n in curves))

    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    for name, _ in LADDER:
        ax.plot(deltas, curves[name], marker="o", ms=3, label=name)
    ax.set(xscale="log", xlabel="δ", ylabel="Laplace scale b", title="(a) Laplace noise: b at each level of the ladder")
    ax.legend(fontsize=8)
    # (b) the two kernels compared on one footing: the noise's standard deviation (Laplace √2·b, Gaussian θ)
    for name, style in (("Thm1 (5)", "C1-"), ("coupling", "C3-"), ("exact", "C4-")):
        ax2.plot(deltas, np.sqrt(2) * curves[name], style, marker="o", ms=3, label=f"Laplace, {name}: √2·b")
    for name, style in (("Gaussian θ (coupling)", "C3--"), ("Gaussian θ (exact)", "C4--")):
        ax2.plot(deltas, curves[name], style, marker="s", ms=3, label=name)
    ax2.set(xscale="log", xlabel="δ", ylabel="noise standard deviation",
            title="(b) Laplace vs Gaussian noise, as noise std")
    ax2.legend(fontsize=8)
    fig.suptitle("Tightness ladder, N(0,1) vs N(1,2²), ε = 1")
    save(fig, args.out, "tightness_ladder.png")


if __name__ == "__main__":
    main()
