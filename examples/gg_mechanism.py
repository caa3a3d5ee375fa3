"""The generalized Gaussian mechanism paper (Liu; ``../shared/papers/003``), its six figures redrawn
with the errata corrected and the exact (ε, δ)-DP answer beside each of its conditions.

Writes gg_figure1.png … gg_figure6.png and prints the numbers behind them:

1. GG densities for several p: equal scale b = √2 (left), equal variance 1 (right).
2. Lemma 5's Monte Carlo lower bound on b against p, Δ = (1, 0.1, 0.05) with Lemma 2: the corrected
   threshold ε b^p − Δ_p^p (solid), the printed b^p − Δ_p^p ε (dashed), and the exact (ε, δ)-DP b
   (pessimistic PLD, dots) for the (ε, δ) = (1, 0.01) curve.
3. Eq. (18) (Lemma 10, pDP) over eq. (19) (classical) for ε in (0, 1), and the exact (analytic
   Gaussian mechanism) σ over eq. (19).
4. Truncated Laplace vs truncated Gaussian noise at eq. (8)'s ε-DP scale, four (Δ, ε, box) settings,
   with the tight thresholding scale's Gaussian for comparison.
5. The (ε, δ)-pDP Gaussian (Lemma 10) vs the ε-DP Laplace (b = Δ/ε), with the exact (ε, δ)-DP Gaussian.
6. The same after thresholding to a box (histograms: the point masses at the bounds show).

The figures' exact settings are not printed in the paper; the ones used are stated on each panel.
"""
import math

import jaxpuffer  # noqa: F401  (before jax: it switches JAX to float64, README "float64")
import jax
import jax.numpy as jnp
import numpy as np

from _common import parser, pyplot, save
from jaxpuffer.mechanisms import gg_exact, gg_probabilistic, gg_pure
from jaxpuffer.noise import GeneralizedGaussian

SENS = [1.0, 0.1, 0.05]
KEY = jax.random.PRNGKey(3)


def density(x, p, b):
    return np.exp(np.asarray(GeneralizedGaussian(p).log_density(jnp.asarray(x), b)))


def figure1(out):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.linspace(-4, 4, 801)
    for p in (1.0, 1.5, 2.0, 3.0, 5.0):
        axes[0].plot(x, density(x, p, math.sqrt(2.0)), label=f"p = {p:g}")
        b_unit = 1.0 / math.sqrt(float(GeneralizedGaussian(p).variance(1.0)))  # variance 1
        axes[1].plot(x, density(x, p, b_unit), label=f"p = {p:g} (b = {b_unit:.3f})")
    axes[0].set_title("GG(0, b = √2, p)")
    axes[1].set_title("GG(0, b, p) with variance 1")
    for ax in axes:
        ax.set_xlabel("x")
        ax.set_ylabel("density")
        ax.legend(fontsize=8)
    save(fig, out, "gg_figure1.png")


def figure2(out, draws):
    settings = [(0.5, 0.01), (1.0, 0.01), (1.0, 0.001), (2.0, 0.01)]
    eps = jnp.asarray([e for e, _ in settings])
    delta = jnp.asarray([d for _, d in settings])
    orders = [2, 3, 4, 5, 6]
    corrected = np.asarray(gg_probabilistic.lemma5_scale(KEY, eps, delta, SENS, orders, draws=draws)[0])  # (p, setting)
    printed = np.asarray(gg_probabilistic.lemma5_scale(KEY, eps, delta, SENS, orders, draws=draws, threshold="printed")[0])
    exact = [float(gg_exact.calibrate_shift(1.0, 0.01, float(np.linalg.norm(SENS)), 2.0))]
    exact += [gg_exact.calibrate_vector(1.0, 0.01, SENS, float(p), rtol=1e-3) for p in (3, 4)]
    print(f"Figure 2 — Lemma 5 (Monte Carlo, {draws} draws), Δ = {SENS}, Lemma 2 for Δ_p:")
    print("   p  " + "  ".join(f"ε={e:g},δ={d:g}: corrected / printed" for e, d in settings))
    for p, row_c, row_p in zip(orders, corrected, printed):
        print(f"  {p:>2}  " + "  ".join(f"{c:>14.3f} / {q:<8.3f}" for c, q in zip(row_c, row_p)))
    print("  exact (ε, δ)-DP b at ε = 1, δ = 0.01 for p = 2, 3, 4: " + ", ".join(f"{b:.3f}" for b in exact))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    for i, (e, d) in enumerate(settings):
        ax.plot(orders, corrected[:, i], "-o", color=f"C{i}", label=f"ε = {e:g}, δ = {d:g}: corrected")
        ax.plot(orders, printed[:, i], "--", color=f"C{i}", alpha=0.7, label="printed threshold" if i == 0 else None)
    ax.plot([2, 3, 4], exact, "k*", ms=10, label="exact (ε, δ)-DP b, ε = 1, δ = 0.01")
    ax.set_xlabel("GG order p")
    ax.set_ylabel("lower bound on b")
    ax.set_yscale("log")
    ax.set_title("Lemma 5: corrected vs printed threshold")
    ax.legend(fontsize=7)
    save(fig, out, "gg_figure2.png")
    return corrected, printed


def figure3(out):
    eps = jnp.linspace(0.02, 0.98, 49)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    print("Figure 3 — σ(eq. 18) / σ(eq. 19) and σ(exact) / σ(eq. 19) at ε = 0.5:")
    for i, delta in enumerate((1e-4, 1e-3, 0.01, 0.05, 0.1)):
        classical = gg_probabilistic.classical_gaussian_std(eps, delta, 1.0)
        lemma10 = gg_probabilistic.lemma10_scale(eps, delta, 1.0) / math.sqrt(2.0)
        exact = gg_exact.calibrate_shift(eps, delta, 1.0, 2.0) / math.sqrt(2.0)
        ax.plot(eps, lemma10 / classical, color=f"C{i}", label=f"eq. 18 / eq. 19, δ = {delta:g}")
        ax.plot(eps, exact / classical, ":", color=f"C{i}")
        j = 24
        print(f"  δ = {delta:<6g} {float(lemma10[j] / classical[j]):.4f}   {float(exact[j] / classical[j]):.4f}")
    ax.plot([], [], "k:", label="exact (ε, δ)-DP / eq. 19")
    ax.set_xlabel("ε")
    ax.set_ylabel("ratio of σ")
    ax.set_title("Gaussian mechanism: Lemma 10 and the exact σ, over the classical σ")
    ax.legend(fontsize=7)
    save(fig, out, "gg_figure3.png")


def figure4(out):
    settings = [(1.0, 1.0, (0.0, 5.0)), (1.0, 0.5, (0.0, 5.0)), (1.0, 1.0, (0.0, 10.0)), (2.0, 1.0, (0.0, 10.0))]
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.6))
    print("Figure 4 — truncated mechanisms at eq. (8) (s at the box centre): b Laplace, b Gaussian, b Gaussian thresholding-tight")
    for ax, (sens, eps, (lo, hi)) in zip(axes.ravel(), settings):
        s = 0.5 * (lo + hi)
        x = jnp.linspace(lo, hi, 601)
        b1 = float(gg_pure.truncated_scale(eps, [sens], lo, hi, 1))
        b2 = float(gg_pure.truncated_scale(eps, [sens], lo, hi, 2))
        bt = float(gg_pure.thresholding_scale(eps, [sens], lo, hi, 2))
        for b, p, label in ((b1, 1, f"truncated Laplace, b = {b1:.2f}"), (b2, 2, f"truncated Gaussian, b = {b2:.2f}")):
            ax.plot(x - s, np.exp(np.asarray(gg_pure.truncated_log_density(x[:, None], s, b, p, lo, hi))), label=label)
        print(f"  Δ = {sens:g}, ε = {eps:g}, box [{lo:g}, {hi:g}]: {b1:.3f}  {b2:.3f}  {bt:.3f}")
        ax.set_title(f"Δ = {sens:g}, ε = {eps:g}, [c0, c1] = [{lo:g}, {hi:g}]", fontsize=9)
        ax.set_xlabel("noise s* − s")
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
    save(fig, out, "gg_figure4.png")


def figure5_6(out):
    deltas = (0.2, 0.1, 0.01, 0.001)
    plt = pyplot()
    fig5, axes5 = plt.subplots(1, 2, figsize=(10, 3.8))
    fig6, axes6 = plt.subplots(1, 2, figsize=(10, 3.8))
    lo, hi = -5.0, 5.0
    print("Figure 5 — std of the noise: Laplace ε-DP, Gaussian pDP (Lemma 10), Gaussian exact (ε, δ)-DP:")
    for ax5, ax6, eps in zip(axes5, axes6, (0.5, 1.0)):
        x = np.linspace(-12, 12, 801)
        ax5.plot(x, density(x, 1.0, 1.0 / eps), "k", lw=2, label=f"Laplace ε-DP (b = {1 / eps:g})")
        draws_l = np.clip(np.asarray(jax.random.laplace(KEY, (100_000,))) / eps, lo, hi)
        ax6.hist(draws_l, bins=101, density=True, histtype="step", color="k", lw=2, label="Laplace ε-DP")
        for i, delta in enumerate(deltas):
            b_pdp = float(gg_probabilistic.lemma10_scale(eps, delta, 1.0))
            b_exact = float(gg_exact.calibrate_shift(eps, delta, 1.0, 2.0))
            ax5.plot(x, density(x, 2.0, b_pdp), color=f"C{i}", label=f"Gaussian pDP, δ = {delta:g}")
            ax5.plot(x, density(x, 2.0, b_exact), ":", color=f"C{i}")
            draws = np.clip(np.asarray(jax.random.normal(jax.random.fold_in(KEY, i), (100_000,))) * b_pdp / math.sqrt(2), lo, hi)
            ax6.hist(draws, bins=101, density=True, histtype="step", color=f"C{i}", label=f"Gaussian pDP, δ = {delta:g}")
            print(f"  ε = {eps:g}, δ = {delta:<5g}: {math.sqrt(2) / eps:.3f}  {b_pdp / math.sqrt(2):.3f}  {b_exact / math.sqrt(2):.3f}")
        ax5.plot([], [], "k:", label="exact (ε, δ)-DP Gaussian (dotted)")
        for ax, title in ((ax5, "unbounded"), (ax6, f"thresholded to [{lo:g}, {hi:g}]")):
            ax.set_title(f"ε = {eps:g}, Δ = 1, {title}", fontsize=9)
            ax.set_xlabel("noise")
            ax.set_ylabel("density")
            ax.legend(fontsize=7)
    save(fig5, out, "gg_figure5.png")
    save(fig6, out, "gg_figure6.png")


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=200_000, help="Monte Carlo draws for Lemma 5 (default 200,000)")
    args = p.parse_args()
    figure1(args.out)
    figure2(args.out, args.draws)
    figure3(args.out)
    figure4(args.out)
    figure5_6(args.out)
    print(f"Lemma 11 threshold: 2Φ(−√2) = {gg_probabilistic.LEMMA11_DELTA:.6f} (the paper prints 2Φ(√2) = {gg_probabilistic.LEMMA11_DELTA_PRINTED:.4f})")


if __name__ == "__main__":
    main()
