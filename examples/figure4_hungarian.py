"""Figure 4 of the Gaussian-priors paper on the real Hungarian heart-disease file: X = chol, S = sex.

Pair female vs male, 3-component GMMs, (ε, δ) = (1, 0.5) and (1, 0.3), the same report and six
panels as Figure 3 (see figure3_adult.py). Rows with chol missing are dropped (23 of 294).

    python figure4_hungarian.py --data ../../shared/datasets/processed.hungarian.data
"""
from _common import parser, pyplot, save
from _gmm_experiment import run
from jaxpuffer import data


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="path to processed.hungarian.data")
    args = p.parse_args()
    table = data.load_hungarian(args.data, ["chol", "sex"])
    x, sex = table.columns["chol"], table.columns["sex"]
    print(f"{table.rows} rows ({table.dropped} with chol or sex missing dropped); {int((sex == 0).sum())} female, {int((sex == 1).sum())} male")
    run(x[sex == 0], x[sex == 1], ("female", "male"), xlabel="serum cholesterol chol (mg/dl)", var_floor=1.0, bin_width=20.0, min_count=5, out=args.out, png="figure4_hungarian.png", plt=pyplot(), save=save)


if __name__ == "__main__":
    main()
