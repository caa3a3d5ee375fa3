"""Which p is best? The generalized Gaussian paper (``../shared/papers/003``, end of its §5) leaves
open "whether the GGM of a higher order … injects more perturbation". Here, for one (ε, δ) and five
prior pairs, the calibrated GG(p) scale b(p) and what the release pays for it, for p from 1
(Laplace) to 8: the noise's standard deviation b √(Γ(3/p)/Γ(1/p)) and its mean absolute error
b Γ(2/p)/Γ(1/p) (GG paper eq. (2); MATH.md §9).

The pairs (secret in vs out) and the level each is calibrated at:
  * point masses 0 vs 1 (the DP case, sensitivity 1): the coupling level, which is exact here (two
    point masses have one coupling);
  * Gaussian priors N(0, 1) vs N(1, 1), and N(0, 1) vs N(1, 2²): the coupling level, an upper bound of
    the exact δ (the exact level is opt-in for Gaussian priors under GG noise: ~0.3 s per pair and
    evaluation);
  * a two-component mixture pair: the coupling level, likewise;
  * a three-atom discrete pair: the exact level (the certified cell enclosure; for p = 1 and 2 the
    Laplace and Gaussian-noise evaluators, the same noise).

p is a value of the compiled search, not a key of it: after the first p, every p reuses the same
compiled program per family (p = 1 and 2 at the exact level take Laplace's and Gaussian noise's). Writes gg_shape.png (b, std and MAE against p, one line per pair) and
prints the table and, per pair, the p with the least noise std.

Usage: python gg_shape.py [--eps 1] [--delta 1e-5] [--ps 1,1.5,2,3,4,6,8] [--out DIR]
"""
import math
import time

import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import numpy as np
from scipy.special import gammaln

from _common import parser, pyplot, save
from jaxpuffer.noise import GeneralizedGaussian

PS = "1,1.25,1.5,1.75,2,2.5,3,4,5,6,8"
GAUSSIAN = jp.PairSet(jp.Gaussian([0.0, 0.0, 0.0], [0.0, 1.0, 1.0]), jp.Gaussian([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]))
MIXTURE = jp.PairSet(jp.GaussianMixture([0.5, 0.5], [-1.0, 1.0], [0.5, 1.0]), jp.GaussianMixture([0.3, 0.7], [0.0, 2.0], [1.0, 0.7]))
DISCRETE = jp.PairSet(jp.Discrete([0.0, 1.0, 2.0], [0.6, 0.3, 0.1]), jp.Discrete([0.0, 1.0, 2.0], [0.1, 0.3, 0.6]))
LABELS = [
    "point masses 0 vs 1 (DP)",
    "N(0, 1) vs N(1, 1)",
    "N(0, 1) vs N(1, 2²)",
    "mixture pair",
    "discrete pair (exact)",
]


def spread(p):
    """(std, mean absolute error) of GG(0, 1, p): √(Γ(3/p)/Γ(1/p)) and Γ(2/p)/Γ(1/p)."""
    return math.exp(0.5 * (gammaln(3.0 / p) - gammaln(1.0 / p))), math.exp(gammaln(2.0 / p) - gammaln(1.0 / p))


def calibrated_scales(ps, eps, delta):
    """b(p) per pair, shape (len(ps), 5), and the largest certified δ of each p's calibrations."""
    scales, certified = [], []
    for p in ps:
        kernel = GeneralizedGaussian(p)
        results = [
            jp.calibrate(GAUSSIAN, eps, delta, level="coupling", noise=kernel),
            jp.calibrate(MIXTURE, eps, delta, level="coupling", noise=kernel),
            jp.calibrate(DISCRETE, eps, delta, level="exact", noise=kernel),
        ]
        scales.append([*np.asarray(results[0].per_pair), results[1].scale, results[2].scale])
        certified.append(max(r.delta_achieved for r in results))
    return np.array(scales), np.array(certified)


def main():
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--ps", default=PS, help=f"comma-separated shapes p ≥ 1 (default {PS})")
    args = ap.parse_args()
    ps = [float(v) for v in args.ps.split(",")]
    start = time.perf_counter()
    b, certified = calibrated_scales(ps, args.eps, args.delta)
    print(f"GG(p) noise calibrated at (ε, δ) = ({args.eps:g}, {args.delta:g}); {len(ps)} shapes × 3 calls in {time.perf_counter() - start:.1f} s")
    print(f"largest certified δ over all calibrations: {certified.max():.6e} (target {args.delta:g})")
    std_unit, mae_unit = np.array([spread(p) for p in ps]).T
    std, mae = b * std_unit[:, None], b * mae_unit[:, None]
    header = f"{'p':>5} " + " ".join(f"{'b':>9} {'std':>9} {'MAE':>9} |" for _ in LABELS)
    print("columns per pair: " + " | ".join(f"{i + 1}. {label}" for i, label in enumerate(LABELS)))
    print(header)
    for k, p in enumerate(ps):
        print(f"{p:5.2f} " + " ".join(f"{b[k, j]:9.4f} {std[k, j]:9.4f} {mae[k, j]:9.4f} |" for j in range(len(LABELS))))
    print("least noise std, per pair:")
    laplace = ps.index(1.0) if 1.0 in ps else None
    for j, label in enumerate(LABELS):
        k = int(np.argmin(std[:, j]))
        versus = "" if laplace is None else f" ({std[k, j] / std[laplace, j]:.3f}× Laplace's {std[laplace, j]:.4f})"
        print(f"  {label:28s} p = {ps[k]:g}: std {std[k, j]:.4f}{versus}")

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for j, label in enumerate(LABELS):
        for ax, values in zip(axes, (b, std, mae)):
            ax.plot(ps, values[:, j], marker="o", ms=3, label=label)
        k = int(np.argmin(std[:, j]))
        axes[1].plot([ps[k]], [std[k, j]], "k*", ms=9)
    for ax, name in zip(axes, ("calibrated scale b", "noise std  b·√(Γ(3/p)/Γ(1/p))", "mean |noise|  b·Γ(2/p)/Γ(1/p)")):
        ax.set_xlabel("GG shape p (1 = Laplace, 2 = Gaussian)")
        ax.set_title(name)
    axes[1].legend(fontsize=7, title="★ least std", title_fontsize=7)
    fig.suptitle(f"GG(p) noise at (ε, δ) = ({args.eps:g}, {args.delta:g}): coupling level (exact for point masses); discrete pair at the exact level", fontsize=9)
    save(fig, args.out, "gg_shape.png")


if __name__ == "__main__":
    main()
