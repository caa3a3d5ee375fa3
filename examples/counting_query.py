"""The Kantorovich paper's counting query (its §3.4.1, Figures 1, 2 and 5, Lemma 2).

V independent users, S_i ~ Bernoulli(p_i), X = Σ_i S_i. For V = 25, p = 0.7: the pmfs of X given
S_i = 0, 1, ⊥ (Figure 5), the plans π* of the pairs (0, 1) and (0, ⊥) (Figure 1) and the
sensitivity of all three pair types (Lemma 2: 1, whatever the prior; the support test uses a
tolerance, without which round-off widens it). For V = 10 users with heterogeneous p_i (Figure 2)
the same. Then, per pair type, the Laplace θ of Theorem 1 (= Lemma 2's 1/ε), Theorem 2 and the
exact level at ε = 1, maximised over users.
"""
import numpy as np

import jaxpuffer as jp
from _common import parser, pyplot, save
from jaxpuffer import kantorovich

PAIR_TYPES = ("0-1", "0-bot", "1-bot")


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-9, help="δ for the exact level")
    args = p.parse_args()
    homogeneous = np.full(25, 0.7)
    heterogeneous = np.random.default_rng(2).uniform(0.1, 0.9, 10)
    print(f"heterogeneous p_i (V = 10, seed 2): {np.round(heterogeneous, 3).tolist()}")
    print(f"Lemma 2 (counting query, Δ_f = 1): θ = {float(kantorovich.lemma2(np.array([[0.0, 1.0]]), args.eps)[0]):.6f}")
    plans = {}
    print(f"\n{'users':>14} {'pair':>6} {'Δ_π* (atol 1e-12)':>18} {'Δ_π* (atol 0)':>14} {'Thm 1 θ':>9} {'Thm 2 θ':>9} {'exact θ':>9}")
    for label, probs in (("V=25, p=0.7", homogeneous), ("V=10, hetero", heterogeneous)):
        for kind in PAIR_TYPES:
            pairs = jp.counting_query(probs, kind)
            plan = jp.quantile_plan(pairs)
            plans[label, kind] = np.asarray(plan.mass[0])
            sens = float(np.max(np.asarray(jp.plan_sensitivity(plan))))
            raw = float(np.max(np.asarray(jp.plan_sensitivity(jp.quantile_plan(pairs, atol=0.0)))))
            t1 = float(np.max(np.asarray(kantorovich.theorem1(pairs, args.eps))))
            t2 = float(np.max(np.asarray(kantorovich.theorem2(pairs, args.eps))))
            exact = float(jp.calibrate(pairs, args.eps, args.delta, level="exact").scale)
            print(f"{label:>14} {kind:>6} {sens:18g} {raw:14g} {t1:9.6f} {t2:9.6f} {exact:9.6f}")

    zero, one, unknown = (np.asarray(a[0]) for a in jp.counting_query_pmfs(homogeneous))
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 9.5), layout="constrained")
    support = np.arange(26)
    for pmf, name in ((zero, "S_i = 0"), (one, "S_i = 1"), (unknown, "S_i = ⊥")):
        axes[0, 0].plot(support, pmf, marker="o", ms=3, label=f"P(X = x | {name})")
    axes[0, 0].set(xlabel="count x", ylabel="probability", title="Figure 5: pmf of X = Σ S_i, V = 25, p = 0.7")
    axes[0, 0].legend()
    panels = ((("V=25, p=0.7", "0-1"), "Figure 1(a): π* for (S_i = 0, S_i = 1), V = 25"),
              (("V=25, p=0.7", "0-bot"), "Figure 1(b): π* for (S_i = 0, S_i = ⊥), V = 25"),
              (("V=10, hetero", "0-1"), "Figure 2: π* for (S_1 = 0, S_1 = 1), V = 10, heterogeneous p_i"))
    for ax, (key, title) in zip(axes.ravel()[1:], panels):
        mass = plans[key]
        im = ax.imshow(np.where(mass > 1e-12, mass, np.nan), origin="lower", cmap="viridis")
        ax.set(xlabel="x': count under the second secret", ylabel="x: count under the first secret")
        ax.set_title(title, fontsize=10)
        fig.colorbar(im, ax=ax, label="mass π*(x, x') (blank: 0)")
    save(fig, args.out, "counting_query.png")


if __name__ == "__main__":
    main()
