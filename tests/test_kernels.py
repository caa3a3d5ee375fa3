"""The numerical kernels under the exact evaluator against independent references (mpmath, numpy,
scipy): the Gaussian ⊛ Laplace log-density ratio, log(1 − t), and the vectorized root finders."""
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import scipy.optimize
from _reference import _mp_parts

from jaxpuffer import _roots, noise

EPS64 = np.finfo(np.float64).eps


def test_log1m_matches_mpmath_to_a_few_ulps():
    # XLA's log1p errs by up to ~120 ulps on [−0.5, −0.3]; _log1m must not (MATH.md §6 terms)
    t = np.concatenate([np.linspace(0.0, 0.5, 4001), np.geomspace(1e-300, 0.5, 2000)])
    got = np.asarray(noise._log1m(jnp.asarray(t)))
    with mp.workdps(40):
        ref = np.array([float(mp.log1p(-mp.mpf(x))) for x in t])
    assert got[0] == 0.0 and ref[0] == 0.0
    assert np.max(np.abs(got[1:] - ref[1:]) / np.abs(ref[1:])) <= 4 * EPS64


def test_log_ratio_matches_mpmath_and_its_separate_form():
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(40):
        m1, m2 = rng.normal(0, 2, 2)
        s1, s2 = rng.uniform(0.05, 3, 2) * (rng.random(2) > 0.1)  # some point masses
        b = rng.uniform(0.2, 4)
        y = np.concatenate([rng.normal(0, 3, 6), m1 + b * rng.uniform(-40, 40, 2)])
        rows.append((y, m1, s1, m2, s2, b))
    for y, m1, s1, m2, s2, b in rows:
        r, dr, size = (np.asarray(v) for v in noise.laplace_log_ratio(jnp.asarray(y), m1, s1, m2, s2, b))
        r_sep, dr_sep, size_sep = (np.asarray(v) for v in noise.laplace_log_ratio(jnp.asarray(y), m1, s1, m2, s2, b, separate=True))
        # the two forms run the same arithmetic; only fusion (fma) rounding may differ
        assert np.all(np.abs(r_sep - r) <= 8 * EPS64 * size)
        assert np.all(np.abs(dr_sep - dr) <= 8 * EPS64 * (np.abs(dr) + 2.0 / b))
        assert np.allclose(size_sep, size, rtol=1e-14)
        with mp.workdps(40):
            ref = [float(mp.log(_mp_parts(x, m1, s1, b)[0]) - mp.log(_mp_parts(x, m2, s2, b)[0])) for x in y]
            h = mp.mpf(2) ** -30
            slope = [float((mp.log(_mp_parts(mp.mpf(x) + h, m1, s1, b)[0] / _mp_parts(mp.mpf(x) + h, m2, s2, b)[0])
                            - mp.log(_mp_parts(mp.mpf(x) - h, m1, s1, b)[0] / _mp_parts(mp.mpf(x) - h, m2, s2, b)[0])) / (2 * h)) for x in y]
        # r to a few ulps of the terms it is formed from (the premise of the sign floor)
        assert np.all(np.abs(r - ref) <= 8 * EPS64 * size), (y, m1, s1, m2, s2, b)
        assert np.allclose(dr, slope, rtol=1e-9, atol=1e-9 / b)


def test_first_true_matches_nonzero():
    rng = np.random.default_rng(4)
    for density in (0.02, 0.2, 0.7):
        mask = rng.random((50, 2, 73)) < density
        for count in (1, 4):
            idx, ok = (np.asarray(v) for v in _roots.first_true(jnp.asarray(mask), count))
            for row in np.ndindex(mask.shape[:-1]):
                true = np.nonzero(mask[row])[0][:count]
                assert np.array_equal(ok[row], np.arange(count) < true.size)
                assert np.array_equal(idx[row][: true.size], true) and np.all(idx[row][true.size :] == 0)


def test_bracketed_root_finders_match_brentq():
    # f(x) = x³ − c on brackets around the root; the slope's root of g(x) = −(x − c)² + x/10
    c = np.array([0.3, 2.0, 7.5, 11.0])
    a, hi = np.zeros(4), np.full(4, 3.0)
    roots = np.asarray(_roots.newton_in_bracket(lambda x: (x**3 - c, 3 * x**2), jnp.asarray(a), jnp.asarray(hi), -c, 27.0 - c, 8))
    ref = [scipy.optimize.brentq(lambda x, ci=ci: x**3 - ci, 0.0, 3.0, xtol=1e-15) for ci in c]
    assert np.allclose(roots, ref, rtol=1e-13)
    centre = jnp.asarray(c)
    peak = np.asarray(_roots.illinois(lambda x: -2 * (x - centre) + 0.1, centre - 1.0, centre + 2.0, jnp.full(4, 2.1), jnp.full(4, -3.9), 16))
    assert np.allclose(peak, c + 0.05, rtol=1e-13)


def test_bisect_widest_halves_only_the_widest_live_brackets():
    # f(x) = x³ − c with brackets of widths 3, 1, 2, 0.5; lane 0 is not live. The two widest live
    # lanes (2 and 1) are bisected 10 times; the rest come back as given. Every bracket still
    # holds brentq's root, with f of the signs it had at its ends.
    c = jnp.array([8.0, 0.3, 2.0, 7.5])
    lo, hi = jnp.array([0.0, 0.0, 0.5, 1.75]), jnp.array([3.0, 1.0, 2.5, 2.25])
    fun = lambda x, idx: x**3 - c[idx]  # noqa: E731
    live = jnp.array([False, True, True, True])
    out = [np.asarray(v) for v in _roots.bisect_widest(fun, lo, hi, lo**3 - c, hi**3 - c, 10, 2, live)]
    widths = out[1] - out[0]
    assert np.allclose(widths, [3.0, 1.0 / 2**10, 2.0 / 2**10, 0.5], rtol=1e-12)
    ref = [scipy.optimize.brentq(lambda x, ci=ci: x**3 - ci, 0.0, 3.0, xtol=1e-15) for ci in np.asarray(c)]
    assert np.all((out[0] <= ref) & (ref <= out[1]))
    assert np.all(out[2] < 0) and np.all(out[3] > 0)


def test_newton_bracket_closes_on_an_exact_zero_and_on_a_flat_stretch():
    # f(x) = x − 1: the first Newton step from 0.5 lands on 1.0, where f is exactly 0. The bracket
    # must close there (the zero is found), not halve towards the far end for the remaining steps
    # (before: [1, 1.0078], f(lo) = 0 — 2⁻⁷ of the bracket left to a bound).
    f_line = lambda x: (x - 1.0, jnp.ones_like(x))  # noqa: E731
    a, c = jnp.array([0.0]), jnp.array([2.0])
    lo, hi, f_lo, f_hi = (np.asarray(v) for v in _roots.newton_bracket(f_line, a, c, a - 1.0, c - 1.0, 8, jnp.array([0.5])))
    assert lo[0] <= 1.0 <= hi[0] and hi[0] - lo[0] <= 1e-10
    assert f_lo[0] <= 0 < f_hi[0]
    # a flat stretch: g(x) = (1 + 1e-14 (x − 1)) − 1 rounds to 0 for |x − 1| ≲ 0.01, so probes
    # 1e-11 apart both see 0 and the bracket stays as wide as Newton left it; told g's rounding
    # noise (1 ulp of 1), the probes step 2 noise / |g'| ≈ 0.044 out and bracket the zero there
    slope = 1e-14
    g = lambda x: ((1.0 + slope * (x - 1.0)) - 1.0, jnp.full_like(x, slope))  # noqa: E731
    ga, gc = g(a)[0], g(c)[0]
    plain = [np.asarray(v) for v in _roots.newton_bracket(g, a, c, ga, gc, 8, jnp.array([0.5]))]
    told = [np.asarray(v) for v in _roots.newton_bracket(g, a, c, ga, gc, 8, jnp.array([0.5]), noise=EPS64)]
    assert plain[1][0] - plain[0][0] > 0.5  # Newton's zero is in the flat stretch; the probes are lost in it
    width = told[1][0] - told[0][0]
    assert told[0][0] <= 1.0 <= told[1][0] and width <= 4.0 * 2.0 * EPS64 / slope
    assert told[2][0] <= 0 < told[3][0]
