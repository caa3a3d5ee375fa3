"""The Kantorovich paper's toy examples (its Appendix C, Tables 1–6) and their noise scales.

For both examples: the two pmfs, the joint CMF min{F_i(x), F_j(x')} and the plan π* as fractions,
the sensitivity of π* (1 and 2), and the Laplace θ from Theorem 1 (Δ/ε) and Theorem 2 (relaxed)
beside the exact level (δ = 1e-12 and 1e-6) for ε ∈ {0.5, 0.8, 1, 2}, with δ_exact at the
Theorem 2 scale (pure ε: ≤ 1e-12). Plots θ against ε for both examples.
"""
from fractions import Fraction

import numpy as np

import jaxpuffer as jp
from _common import parser, pyplot, save
from jaxpuffer import kantorovich

EXAMPLES = {
    "Table 1": ([1, 2, 3, 4], [1 / 3, 1 / 6, 1 / 3, 1 / 6], [1 / 4, 1 / 4, 1 / 6, 1 / 3]),
    "Table 4": ([1, 2, 3, 4, 5], [0.2, 0.225, 0.5, 0.075, 0.0], [0.0, 0.075, 0.5, 0.225, 0.2]),
}
EPS = (0.5, 0.8, 1.0, 2.0)


def fraction_table(title, matrix, labels):
    print(f"  {title}")
    print("    " + "".join(f"{'x′=' + str(v):>9}" for v in labels))
    for v, row in zip(labels, np.asarray(matrix)):
        print(f"    x={v:<3}" + "".join(f"{str(Fraction(float(m)).limit_denominator(1000)):>9}" for m in row))


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    curves = {}
    for name, (x, p, q) in EXAMPLES.items():
        pairs = jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q))
        print(f"\n{name}: P(x|s_i) = {p}, P(x|s_j) = {q} on {x}")
        fraction_table("joint CMF min{F_i(x), F_j(x')}", jp.quantile_cmf(pairs), x)
        fraction_table("plan π*(x, x')", jp.quantile_plan(pairs).mass, x)
        print(f"  sensitivity of π*: {float(jp.plan_sensitivity(jp.quantile_plan(pairs))):g}")
        print(f"  {'eps':>5} {'Thm 1 θ':>9} {'Thm 2 θ':>9} {'exact 1e-12':>12} {'exact 1e-6':>11} {'δ_exact(Thm 2)':>15}")
        for eps in EPS:
            t1, t2 = float(kantorovich.theorem1(pairs, eps)), float(kantorovich.theorem2(pairs, eps))
            e12 = float(jp.calibrate(pairs, eps, 1e-12, level="exact").scale)
            e6 = float(jp.calibrate(pairs, eps, 1e-6, level="exact").scale)
            print(f"  {eps:5.2f} {t1:9.6f} {t2:9.6f} {e12:12.6f} {e6:11.6f} {float(jp.delta_exact(pairs, t2, eps)):15.3g}")
        if name == "Table 1":
            print(f"  check: Theorem 2 at ε = 1 is 1/ln(2e − 1) = {1 / np.log(2 * np.e - 1):.6f}")
        grid = np.linspace(0.3, 3.0, 28)
        curves[name] = (grid, [[float(f(pairs, e)) for e in grid] for f in (kantorovich.theorem1, kantorovich.theorem2)]
                        + [[float(jp.calibrate(pairs, e, 1e-12, level="exact").scale) for e in grid]])

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for ax, (name, (grid, (t1, t2, ex))) in zip(axes, curves.items()):
        ax.plot(grid, t1, label="Theorem 1 (Δ/ε)")
        ax.plot(grid, t2, label="Theorem 2 (relaxed)")
        ax.plot(grid, ex, label="exact level, δ = 1e-12")
        ax.set_xlabel("ε")
        ax.set_ylabel("Laplace scale θ")
        ax.set_title(f"{name} priors")
        ax.legend()
    save(fig, args.out, "kantorovich_tables.png")


if __name__ == "__main__":
    main()
