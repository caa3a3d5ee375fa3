"""Figure 2 of the Gaussian-priors paper: eq. (11) for K identical users, and the exact level.

Sum query over K independent users N(μ, σ²), pairs "a user present vs absent". The sufficient
Laplace scale b = (|μ| + (√K − √(K−1)) σ τ*(δ))/ε for (ε, δ) = (1, 0.3), μ = 1, σ² = 1..25,
K = 1..1000; b → |μ|/ε = 1 as K grows. The second panel recomputes σ² ∈ {1, 9, 25} at the coupling
and exact levels: the pair is N(Kμ, Kσ²) vs N((K−1)μ, (K−1)σ²).
"""
import numpy as np

import jaxpuffer as jp
from _common import parser, pyplot, save

EPS, DELTA, MU = 1.0, 0.3, 1.0
K = np.arange(1, 1001)
VARIANCES = np.arange(1, 26)


def main():
    args = parser(__doc__).parse_args()
    b = np.asarray(jp.bounds.identical_users(MU, np.sqrt(VARIANCES)[:, None], K[None, :], EPS, DELTA))
    shown_k = [1, 2, 5, 10, 100, 1000]
    print(f"eq. (11), (ε, δ) = ({EPS}, {DELTA}), μ = {MU}; b for σ² (rows) and K (columns)")
    print("σ² \\ K " + "".join(f"{k:>10d}" for k in shown_k))
    for v, row in zip(VARIANCES, b):
        print(f"{v:7d} " + "".join(f"{row[k - 1]:10.4f}" for k in shown_k))
    print(f"limit |μ|/ε = {MU / EPS}")

    shown_var = np.array([1, 9, 25])
    kk, vv = np.meshgrid(K, shown_var)
    pairs = jp.PairSet(jp.Gaussian(MU * kk, np.sqrt(kk * vv)), jp.Gaussian(MU * (kk - 1), np.sqrt((kk - 1) * vv)))
    levels = {lvl: np.asarray(jp.calibrate(pairs, EPS, DELTA, level=lvl).per_pair) for lvl in ("coupling", "exact")}
    print("\nσ² ∈ {1, 9, 25} at every level: b for K = " + ", ".join(map(str, shown_k)))
    for row, v in enumerate(shown_var):
        for name, table in (("eq. (11)", b[v - 1]), ("coupling", levels["coupling"][row]), ("exact", levels["exact"][row])):
            print(f"σ²={v:2d} {name:>9} " + "".join(f"{table[k - 1]:10.4f}" for k in shown_k))

    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    colors = plt.cm.viridis(np.linspace(0, 1, len(VARIANCES)))
    for v, row, c in zip(VARIANCES, b, colors):
        ax.plot(K, row, color=c, lw=1.2, label=f"σ²={v}" if v in (1, 5, 10, 15, 20, 25) else None)
    ax.axhline(MU / EPS, color="k", ls="--", lw=1, label="|μ|/ε")
    ax.set(xscale="log", xlabel="number of users K", ylabel="Laplace scale b",
           title=f"Eq. (11): ({EPS:g}, {DELTA:g})-pufferfish, μ = {MU:g}, σ² = 1..25")
    ax.legend(fontsize=8)
    marks = np.unique(np.round(np.logspace(0, 3, 13)).astype(int)) - 1  # marker positions, evenly spaced in log K
    for row, (v, c, m) in enumerate(zip(shown_var, plt.cm.viridis([0.0, 0.33, 1.0]), "os^")):
        ax2.plot(K, b[v - 1], color=c, lw=1.2, label=f"σ²={v}: eq. (11)")
        ax2.plot(K, levels["coupling"][row], color=c, lw=1.2, ls="--", label=f"σ²={v}: coupling")
        # the three exact curves coincide at b = 0: distinct hollow markers, drawn in decreasing size, keep each visible
        ax2.plot(K, levels["exact"][row], color=c, lw=1.8, ls=":", marker=m, ms=9 - 2.5 * row, mfc="none",
                 markevery=list(marks), label=f"σ²={v}: exact")
    zero_from = [int(K[np.argmax(row == 0)]) for row in levels["exact"] if np.any(row == 0)]
    if zero_from:
        ax2.annotate(f"exact level: b = 0 (no noise needed) for K ≥ {max(zero_from)}", xy=(30, 0), xytext=(4, 0.3),
                     fontsize=8, arrowprops=dict(arrowstyle="->", lw=0.8))
    ax2.axhline(MU / EPS, color="k", ls="--", lw=1)
    ax2.set(xscale="log", xlabel="number of users K", ylabel="Laplace scale b", title="Theorem vs coupling vs exact level")
    ax2.legend(fontsize=7, ncol=3)
    save(fig, args.out, "figure2_sum_query.png")


if __name__ == "__main__":
    main()
