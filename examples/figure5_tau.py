"""Figure 5 of the Gaussian-priors paper: τ*(δ) for δ ∈ [0.001, 0.999].

The paper plots (22), the Lambert-W solution of the tail bound (21); the exact Q⁻¹(δ/2) of (20) is
drawn beside it, and (23) coincides with (22).
"""
import numpy as np

import jaxpuffer as jp
from _common import parser, pyplot, save

DELTAS = np.linspace(0.001, 0.999, 999)


def main():
    args = parser(__doc__).parse_args()
    implicit = np.asarray(jp.tau_star(DELTAS, "lambert_implicit"))
    closed = np.asarray(jp.tau_star(DELTAS, "lambert"))
    exact = np.asarray(jp.tau_star(DELTAS, "exact"))
    print(f"{'δ':>7} {'(22) implicit':>14} {'(23) Lambert':>13} {'(20) exact':>11}")
    for d in (0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999):
        k = int(np.argmin(np.abs(DELTAS - d)))
        print(f"{DELTAS[k]:7.3f} {implicit[k]:14.6f} {closed[k]:13.6f} {exact[k]:11.6f}")
    print(f"max |(22) − (23)| = {np.max(np.abs(implicit - closed)):.2e}")

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(DELTAS, implicit, label="τ*(δ), Lambert W (22) = (23)")
    ax.plot(DELTAS, exact, ls="--", label="τ*(δ) = Q⁻¹(δ/2) (20)")
    ax.set(xlabel="δ", ylabel="τ*(δ)", title="Figure 5: τ*(δ)")
    ax.legend()
    save(fig, args.out, "figure5_tau.png")


if __name__ == "__main__":
    main()
