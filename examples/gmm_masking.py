"""The GMM-masking paper (Wu; ``../shared/papers/002``) on the real Adult file: how much a masked
Gaussian-mixture release leaks, by every estimator, and the noise a leakage target needs.

1. X = education-num of the "White" rows, a 3-component mixture P (EM, variance floor 1/12 for the
   integer values); masked by Algorithm 1 at noise levels η (η_w = η_μ = η_Σ = η), ``--masks`` masks
   per level. KL(P‖masked) per mask by 1-D quadrature (the reference), the Taylor series at N = 30
   (corrected, and as Theorem 4.2 prints it: the sign reversed), and the certified bracket of
   :mod:`jaxpuffer.leakage.bounds`.
2. The same in d = 2, (education-num, hours-per-week), by Monte Carlo with its 99.9% interval.
3. Calibration: the Gaussian noise σ added to a released education-num so that the leakage between
   the "Black" and "Asian-Pac-Islander" mixtures (the Gaussian-priors paper's Figure 3 pair) is ≤ a
   target, for KL, Rényi (α = 2) and the secret's mutual information (prior: the two groups'
   shares), exact (quadrature) and certified by the bound.
4. With ``--hungarian PATH``: 2-D mixtures of (chol, trestbps) per sex in the Hungarian heart-disease
   file; KL(female ‖ male) by Monte Carlo and its bracket; at several noise levels σ the mutual
   information I(X; X + N) of a female record's release (certified bracket) and the secret's
   (sex) I(S; Y) by Monte Carlo beside its certified upper bound; the σ each target needs.

Writes gmm_masking.png (KL against η, each estimator) and prints the numbers.

    python gmm_masking.py --data ../../shared/datasets/adult.data \
        --hungarian ../../shared/datasets/processed.hungarian.data
"""
import jaxpuffer as jp  # before jax: it switches JAX to float64 (README, "float64")
import jax
import numpy as np

from _common import parser, pyplot, save
from jaxpuffer import data
from jaxpuffer.leakage import MultivariateGaussianMixture as MGM
from jaxpuffer.leakage import bounds, information, masking, references, series
from jaxpuffer.leakage.calibration import KL, Renyi, SecretInformation, noise_for_leakage

LEVELS = (0.01, 0.03, 0.1, 0.3)
KEY = jax.random.PRNGKey(0)


def one_dim(x, masks):
    fit = jp.fit_gmm(x, 3, key=KEY, var_floor=1 / 12)
    p = MGM.from_1d(fit.prior)
    print(f"1-D: education-num, 'White' rows ({x.size}); P: w = {np.round(np.asarray(p.weights), 3)}, "
          f"μ = {np.round(np.asarray(p.means[:, 0]), 3)}, σ = {np.round(np.sqrt(np.asarray(p.covs[:, 0, 0])), 3)}")
    print("   η     KL quadrature (mean)   Taylor N=30 corrected   as printed   bracket [lower, upper] (means)")
    rows = []
    for level in LEVELS:
        masked = masking.mask(jax.random.fold_in(KEY, int(level * 1e4)), p, level, level, level, draws=masks)
        one = lambda k: jax.tree_util.tree_map(lambda a: a[k], masked)  # noqa: E731
        quad = np.array([references.kl_quadrature_1d(p, one(k))[0] for k in range(masks)])
        taylor = np.asarray(jax.vmap(lambda m: series.kl(p, m, 30)[0])(masked))  # every mask in one call
        lower = np.asarray(jax.vmap(bounds.kl_lower, in_axes=(None, 0))(p, masked))
        upper = np.asarray(jax.vmap(bounds.kl_upper, in_axes=(None, 0))(p, masked))
        rows.append((level, quad.mean(), np.nanmean(taylor), lower.mean(), upper.mean()))
        print(f"  {level:<5} {quad.mean():>14.6f}        {np.nanmean(taylor):>14.6f}      {-np.nanmean(taylor):>11.6f}   "
              f"[{lower.mean():.6f}, {upper.mean():.6f}]")
        assert np.all(lower <= quad + 1e-9) and np.all(quad <= upper + 1e-9)
    return np.array(rows)


def two_dim(xy, masks):
    fit = jp.fit_gmm_nd(xy, 3, key=KEY, reg_covar=1 / 12)
    p = fit.mixture
    print(f"\n2-D: (education-num, hours-per-week), 'White' rows; EM converged: {bool(fit.converged)}, "
          f"mean log-likelihood {float(fit.log_likelihood):.4f}")
    print("   η     KL Monte Carlo (first mask) ± 99.9%   bracket [lower, upper] (first mask)")
    for level in LEVELS:
        masked = masking.mask(jax.random.fold_in(KEY, 7 + int(level * 1e4)), p, level, level, level, draws=masks)
        first = jax.tree_util.tree_map(lambda a: a[0], masked)
        mean, se = references.kl_monte_carlo(KEY, p, first, 200_000)
        print(f"  {level:<5} {float(mean):>12.6f} ± {3.29 * float(se):.6f}          "
              f"[{float(bounds.kl_lower(p, first)):.6f}, {float(bounds.kl_upper(p, first)):.6f}]")


def calibration(x, race):
    names = ("Black", "Asian-Pac-Islander")
    fits = [jp.fit_gmm(x[race == n], 3, key=KEY, var_floor=1 / 12) for n in names]
    p, q = (MGM.from_1d(f.prior) for f in fits)
    share = float(np.mean(race[np.isin(race, names)] == names[0]))
    print(f"\nNoise for a leakage target, {names[0]} vs {names[1]} (education-num), KL without noise "
          f"{references.kl_quadrature_1d(p, q)[0]:.4f}:")
    print("   measure                      target    σ exact (quadrature)   σ certified by the bound   ratio")
    for label, measure in (("KL", KL()), ("Rényi, α = 2", Renyi(2.0)), (f"I(S; Y), π = {share:.3f}", SecretInformation(share))):
        for target in (0.01, 0.001):
            exact = noise_for_leakage(p, q, target, measure, method="quadrature")
            bound = float(noise_for_leakage(p, q, target, measure))
            print(f"   {label:<28} {target:<8g}  {exact:>12.4f}           {bound:>12.4f}              {bound / exact:.2f}")


def hungarian(path):
    table = data.load_hungarian(path, ["chol", "trestbps", "sex"])
    chol, bp, sex = (table.columns[c] for c in ("chol", "trestbps", "sex"))
    female, male = (jp.fit_gmm_nd(np.stack([chol[sex == s], bp[sex == s]], axis=1), 2, key=KEY, reg_covar=1.0).mixture for s in (0.0, 1.0))
    prior = float(np.mean(sex == 0.0))
    mean, se = references.kl_monte_carlo(KEY, female, male, 400_000)
    print(f"\nHungarian (chol, trestbps), 2-component mixtures per sex ({int(np.sum(sex == 0))} female, "
          f"{int(np.sum(sex == 1))} male): KL(female ‖ male) = {float(mean):.5f} ± {3.29 * float(se):.5f} (Monte Carlo, 99.9%), "
          f"bracket [{float(bounds.kl_lower(female, male)):.5f}, {float(bounds.kl_upper(female, male)):.5f}]")
    print("   σ      I(X; X+N), female record [lower, upper]   I(sex; Y) Monte Carlo ± 99.9%   certified upper")
    for sigma in (1.0, 10.0, 30.0, 100.0):
        lower, upper = information.release_information_bounds(female, sigma)
        r_f, r_m = female.convolved(sigma), male.convolved(sigma)
        mi, mi_se = information.secret_information_monte_carlo(KEY, r_f, r_m, prior, 200_000)
        print(f"   {sigma:<6g} [{float(lower):.5f}, {float(upper):.5f}]                    "
              f"{float(mi):.6f} ± {3.29 * float(mi_se):.6f}             {float(information.secret_information_upper(r_f, r_m, prior)):.6f}")
    for target in (0.01, 0.001):
        print(f"   target {target:g}: σ certified for KL {float(noise_for_leakage(female, male, target)):.3f}, "
              f"for I(sex; Y) {float(noise_for_leakage(female, male, target, SecretInformation(prior))):.3f}")


def plot(rows, out):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(rows[:, 0], rows[:, 1], "k-o", label="KL by quadrature (reference)")
    ax.plot(rows[:, 0], rows[:, 2], "C0--s", label="Taylor series, N = 30 (corrected; as printed: its negative)")
    ax.fill_between(rows[:, 0], rows[:, 3], rows[:, 4], color="C2", alpha=0.25, label="certified bracket (means)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("masking noise η (η_w = η_μ = η_Σ)")
    ax.set_ylabel("KL(P ‖ masked P), mean over masks")
    ax.set_title("Adult education-num ('White'): leakage of a masked GMM")
    ax.legend(fontsize=8)
    save(fig, out, "gmm_masking.png")


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="path to the UCI adult.data file")
    p.add_argument("--masks", type=int, default=40, help="masks per noise level (default 40)")
    p.add_argument("--hungarian", help="path to the UCI processed.hungarian.data file (section 4)")
    args = p.parse_args()
    table = data.load_adult(args.data, ["education-num", "hours-per-week", "race"])
    x, hours, race = (table.columns[c] for c in ("education-num", "hours-per-week", "race"))
    white = race == "White"
    rows = one_dim(x[white], args.masks)
    two_dim(np.stack([x[white], hours[white]], axis=1).astype(float), args.masks)
    calibration(x, race)
    if args.hungarian:
        hungarian(args.hungarian)
    plot(rows, args.out)


if __name__ == "__main__":
    main()
