"""Property-based soundness (issue 17, item 7): hypothesis draws Gaussian and discrete pairs with
extreme std ratios, point masses, far means, ε ∈ [1e-3, 20] and δ from the exact level's floor
to 0.99, calibrates one pair at the exact level, and checks the answer with the independent
reference of ``tests/adversarial/reference.py`` (scipy/mpmath, no jaxpuffer code). A failure is
shrunk by hypothesis to a minimal case, which then becomes a regression test in
``test_soundness.py``. ``derandomize`` keeps CI reproducible; the open-ended search is
``python -m tests.adversarial``."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxpuffer as jp
from adversarial.reference import exact_delta

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
log_uniform = lambda lo, hi: st.floats(np.log(lo), np.log(hi)).map(np.exp)  # noqa: E731
eps_st, delta_st = log_uniform(1e-3, 20.0), log_uniform(1e-30, 0.99)
noise_st = st.sampled_from(["laplace", "gaussian"])
std_st = st.one_of(st.just(0.0), log_uniform(1e-3, 1e3))


def _sound(first, second, b, eps, delta, noise):
    return exact_delta(first, second, b, eps, noise) <= delta * (1 + 1e-9)


@SETTINGS
@given(st.floats(-1e4, 1e4), std_st, st.floats(-1e4, 1e4), std_st, eps_st, delta_st, noise_st)
def test_gaussian_pair_is_sound(m1, s1, m2, s2, eps, delta, noise):
    res = jp.calibrate(jp.PairSet(jp.Gaussian(m1, s1), jp.Gaussian(m2, s2)), eps, delta, level="exact", noise=noise)
    b = float(res.scale)
    assert res.converged and _sound(([1.0], [m1], [s1]), ([1.0], [m2], [s2]), b, eps, delta, noise), b


atoms_st = st.lists(st.floats(1e-2, 10.0), min_size=4, max_size=4).map(lambda gaps: np.cumsum(gaps))
pmf_st = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=4, max_size=4).filter(lambda p: sum(p) > 0)


@SETTINGS
@given(atoms_st, pmf_st, pmf_st, eps_st, delta_st, noise_st)
def test_discrete_pair_is_sound(x, p, q, eps, delta, noise):
    p, q = np.array(p) / sum(p), np.array(q) / sum(q)
    res = jp.calibrate(jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q)), eps, delta, level="exact", noise=noise)
    b, zeros = float(res.scale), np.zeros(4)
    assert res.converged and _sound((p, x, zeros), (q, x, zeros), b, eps, delta, noise), b
