"""calibrate(): Theorem 1 level, safe side, binding pair, batching, jit behaviour, bad input."""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpuffer as jp
from jaxpuffer import bounds, calibration, kantorovich


def test_theorem_level_scale_binding_and_certificate():
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 2.0], 1.0), jp.Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    result = jp.calibrate(pairs, 1.0, 0.05, level="theorem")
    ref = [(1 + scipy.stats.norm.isf(0.025)), 2 * scipy.stats.norm.isf(0.025), 2.0]
    np.testing.assert_allclose(result.per_pair, ref, rtol=1e-14)
    assert result.binding == (1,)
    assert float(result.scale) == pytest.approx(max(ref), rel=1e-14)
    assert float(result.scale) >= max(ref)  # rounded to the safe side
    # the theorem level certifies with its own closed form (issue 15): Theorem 1 inverted at the
    # scale, 2Q((εb − |Δμ|)/|Δσ|), independently by scipy; it sits on the target, never above
    b = result.scale
    by_scipy = max(2 * scipy.stats.norm.sf((b - 1.0) / 1.0), 2 * scipy.stats.norm.sf(b / 2.0))
    assert result.certificate == "theorem" and result.delta_achieved == pytest.approx(by_scipy, rel=1e-12)
    assert result.delta_achieved <= 0.05 and result.delta_achieved == pytest.approx(0.05, rel=1e-10)
    # certify="exact": the exact δ at the scale, far below δ, as Theorem 1 is a loose bound
    exact = jp.calibrate(pairs, 1.0, 0.05, certify="exact", level="theorem")
    assert exact.certificate == "exact" and exact.scale == result.scale
    assert exact.delta_achieved == pytest.approx(float(jp.delta_exact(pairs, result.scale, 1.0).max()), rel=1e-12)
    assert exact.delta_achieved < 0.01 * result.delta_achieved
    assert result.converged and result.level == "theorem" and result.noise == "laplace"
    assert isinstance(result.scale, float) and isinstance(result.delta_achieved, float)
    assert result.variance == pytest.approx(2 * result.scale**2)


def test_default_level_is_the_exact_level():
    """Issue 15: calibrate's default is the level a user should use, the exact one (the smallest
    scale, certified by the exact δ); Theorem 1 is one argument away and needs more noise."""
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0], [1.0, 1.0]), jp.Gaussian([1.0, 0.0], [2.0, 3.0]))
    default, exact = jp.calibrate(pairs, 1.0, 1e-3), jp.calibrate(pairs, 1.0, 1e-3, level="exact")
    assert default.level == "exact" and default.certificate == "exact"
    assert default.scale == exact.scale and default.delta_achieved == exact.delta_achieved <= 1e-3
    assert default.scale < jp.calibrate(pairs, 1.0, 1e-3, level="theorem").scale / 3
    assert jp.calibrate(pairs, 1.0, 0.0).scale == pytest.approx(2.0, rel=1e-9)  # pure ε by default: b_pure = √(2·8)/2


def test_theorem_certificate_is_between_the_exact_delta_and_the_target():
    """The closed-form certificate of each family bounds the exact δ and stays ≤ the target. For
    discrete priors it is Theorem 1's own bound, the coupling bound of π* (jp.delta_coupling, the
    public evaluator, is the independent value), which also counts the cells below the support
    tolerance that Δ_π* leaves out."""
    rng = np.random.default_rng(15)
    n, k = 24, 3
    w = rng.dirichlet(np.ones(k), size=(2, n))
    mixtures = jp.PairSet(
        jp.GaussianMixture(w[0], rng.normal(0, 2, (n, k)), rng.uniform(0.2, 2, (n, k))),
        jp.GaussianMixture(w[1], rng.normal(0, 2, (n, k)), rng.uniform(0.2, 2, (n, k))),
    )
    x = np.sort(rng.normal(0, 2, (n, 5)), axis=-1)
    p, q = rng.dirichlet(np.ones(5), size=(2, n))
    p[:4, 1] = 1e-13  # cells of π* below the support tolerance (1e-12) on some pairs
    discrete = jp.PairSet(jp.Discrete(x, p / p.sum(-1, keepdims=True)), jp.Discrete(x, q))
    for pairs in (mixtures, discrete):
        for delta in (1e-2, 1e-6):
            cheap = jp.calibrate(pairs, 1.0, delta, level="theorem")
            exact = jp.calibrate(pairs, 1.0, delta, certify="exact", level="theorem")
            assert cheap.certificate == "theorem" and exact.certificate == "exact" and cheap.scale == exact.scale
            assert exact.delta_achieved <= cheap.delta_achieved <= delta
            if pairs is discrete:
                coupling = np.max(np.asarray(jp.delta_coupling(pairs, cheap.scale, 1.0)))
                assert cheap.delta_achieved == pytest.approx(coupling, rel=1e-12, abs=1e-300)
    # Δ_π* = 0 where the only moved mass is a 1e-13 cell: b = 0, and the certificate says δ = 1e-13 there
    tolerance = jp.PairSet(jp.Discrete([0.0, 1.0, 100.0], [0.5, 0.5 - 1e-13, 1e-13]), jp.Discrete([0.0, 1.0, 100.0], [0.5, 0.5, 0.0]))
    cheap = jp.calibrate(tolerance, 1.0, 1e-3, level="theorem")
    exact = jp.calibrate(tolerance, 1.0, 1e-3, certify="exact", level="theorem")
    assert cheap.scale == exact.scale == 0.0 and exact.delta_achieved <= cheap.delta_achieved
    assert cheap.delta_achieved == pytest.approx(1e-13, rel=1e-9)
    coupling = jp.calibrate(jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0)), 1.0, 1e-3, level="coupling", certify="level")
    assert coupling.certificate == "coupling"
    assert coupling.delta_achieved == pytest.approx(float(jp.delta_coupling(jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0)), coupling.scale, 1.0)), rel=1e-9)
    with pytest.raises(ValueError, match="certify"):
        jp.calibrate(discrete, 1.0, 1e-3, certify="loose", level="theorem")


def test_adversary_axis_is_maximised_over():
    # 4 adversaries × 3 pairs; the binding index is a 2-D index
    rng = np.random.default_rng(3)
    pairs = jp.PairSet(jp.Gaussian(rng.normal(size=(4, 3)), rng.uniform(0, 2, (4, 3))), jp.Gaussian(0.0, 1.0))
    result = jp.calibrate(pairs, 0.5, 1e-3, level="theorem")
    assert result.per_pair.shape == (4, 3) and len(result.binding) == 2
    assert float(result.per_pair[result.binding]) == float(np.max(result.per_pair))


def test_one_batched_call_over_1e6_pairs_equals_loop_on_a_sample():
    rng = np.random.default_rng(4)
    n = 1_000_000
    mi, si, mj, sj = rng.normal(0, 2, n), rng.uniform(0, 3, n), rng.normal(0, 2, n), rng.uniform(0, 3, n)
    pairs = jp.PairSet(jp.Gaussian(mi, si), jp.Gaussian(mj, sj))
    batched = np.asarray(jp.calibrate(pairs, 1.0, 1e-6, level="theorem").per_pair)
    tau = scipy.stats.norm.isf(0.5e-6)
    for k in rng.choice(n, 200, replace=False):
        assert batched[k] == pytest.approx(abs(mi[k] - mj[k]) + abs(si[k] - sj[k]) * tau, rel=1e-13)


def test_second_call_with_new_values_does_not_recompile():
    rng = np.random.default_rng(5)

    def make():
        return jp.PairSet(jp.Gaussian(rng.normal(size=1000), rng.uniform(size=1000)), jp.Gaussian(rng.normal(size=1000), 1.0))

    jp.calibrate(make(), 1.0, 0.01, level="theorem")
    size = calibration._theorem_level._cache_size()
    jp.calibrate(make(), 2.0, 0.2, level="theorem")
    assert calibration._theorem_level._cache_size() == size


def test_compaction_covers_the_open_pairs_in_the_compiled_sizes_with_little_padding():
    # the search re-batches its unfinished pairs (calibration._solve_concrete) in pieces of the
    # batch size n or 64·4^k only (no new compiled shapes), padding at most a quarter of the pairs
    # left for the last piece, or less than the smallest piece
    for n in (64, 2048, 10240, 16384):
        allowed = {n, *(64 * 4**k for k in range(8) if 64 * 4**k < n)}
        for m in range(1, n + 1, 7):
            pieces = calibration._pieces(m, n)
            assert set(pieces) <= allowed
            assert m <= sum(pieces) <= max(m + m / 4, m + 63), (n, m, pieces)
    assert calibration._pieces(1600, 2048) == [1024, 256, 256, 64]
    assert calibration._pieces(1900, 2048) == [2048]
    assert calibration._pieces(1600, 2048, pad=1.0) == [2048]  # closed-form δ: fewer sizes, fewer compiles


def test_differentiable_in_parameters():
    def scale(mu, sigma, eps, delta):
        pairs = jp.PairSet(jp.Gaussian(mu, sigma), jp.Gaussian(0.0, 2.0))
        return jp.calibrate(pairs, eps, delta, level="theorem").scale

    g_mu, g_sigma, g_eps, g_delta = jax.grad(scale, argnums=(0, 1, 2, 3))(1.0, 0.5, 2.0, 0.1)
    tau = scipy.stats.norm.isf(0.05)
    assert float(g_mu) == pytest.approx(0.5, rel=1e-12)
    assert float(g_sigma) == pytest.approx(-tau / 2, rel=1e-12)
    assert float(g_eps) == pytest.approx(-(1 + 1.5 * tau) / 4, rel=1e-12)
    # d/dδ of 1.5 τ*(δ)/2 with dτ/dδ = −1/(2φ(τ))
    assert float(g_delta) == pytest.approx(0.75 * -1 / (2 * scipy.stats.norm.pdf(tau)), rel=1e-9)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(eps=0.0), "eps"), (dict(eps=-2.0), "eps"), (dict(eps=float("nan")), "eps"),
        (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"), (dict(delta=-0.5), "delta"),
        (dict(level="magic"), "level"), (dict(noise="cauchy"), "noise"), (dict(tau="x"), "tau"),
        (dict(eps=[1.0, 2.0], delta=[0.1, 0.2, 0.3]), "eps \\(2,\\), delta \\(3,\\)"), (dict(eps=[1.0, 0.0]), "eps"),
        (dict(delta=[[0.1], [1.5]]), "delta"),
    ],
)
def test_bad_input_raises(kwargs, name):
    pairs = jp.PairSet(jp.Gaussian(0.0, 1.0), jp.Gaussian(1.0, 2.0))
    args = dict(eps=1.0, delta=0.1, level="theorem") | kwargs  # δ = 0 is refused at the theorem level only
    with pytest.raises(ValueError, match=name):
        jp.calibrate(pairs, args.pop("eps"), args.pop("delta"), **args)


def test_release_shapes_and_distribution():
    key = jax.random.PRNGKey(0)
    y = jp.privatize(key, np.zeros(200_000), 2.0)
    assert y.shape == (200_000,) and y.dtype == np.float64
    # Laplace(b=2): mean |N| = b; Kolmogorov–Smirnov against scipy's Laplace
    assert scipy.stats.kstest(np.asarray(y), scipy.stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    g = jp.privatize(key, np.ones((3, 4)), np.array([1.0, 2.0, 3.0, 0.0]), noise="gaussian")
    assert g.shape == (3, 4)
    np.testing.assert_array_equal(g[:, 3], 1.0)  # zero scale: no noise
    assert jax.jit(lambda k: jp.privatize(k, 1.0, 1.0))(key).shape == ()
    with pytest.raises(ValueError, match="scale"):
        jp.privatize(key, 1.0, -1.0)
    with pytest.raises(ValueError, match="noise"):
        jp.privatize(key, 1.0, 1.0, noise="uniform")


def test_second_calls_with_new_values_compile_nothing(recording_compiles):
    """Public calls that ran op by op outside jit recompiled their loops on every call (a refused
    pure-ε mixture calibration: 4 programs, 2.7 s each time; gg_exact.shift_delta: 5, 0.33 s); each
    is one compiled program now, and a second call with new values of the same shapes compiles
    nothing (counted by JAX's backend-compile events)."""
    from jaxpuffer.mechanisms import gg_exact

    mixture = lambda shift: jp.GaussianMixture([[0.5, 0.5]], [[0.0, shift]], [[1.0, 1.0]])  # noqa: E731
    gaussians = lambda s: jp.PairSet(jp.Gaussian([0.0, 1.0], [1.0, s]), jp.Gaussian([0.5, 0.0], [2.0, 1.0]))  # noqa: E731
    calls = [
        lambda v: jp.calibrate(jp.PairSet(mixture(1.0), mixture(1.0 + v)), 1.0, 0.0, noise="gaussian"),
        lambda v: gg_exact.shift_delta(1.0 + v, 1.0, 2.0, 1.5),
        lambda v: jp.delta_coupling(gaussians(1.0 + v), 1.5, 1.0),
        lambda v: jp.delta_coupling(gaussians(1.0 + v), 1.5, 1.0, noise="gaussian", method="quadrature"),
    ]
    for call in calls:
        for value, count in ((0.5, False), (0.25, True)):
            with recording_compiles() as compiles:
                try:
                    call(value)
                except ValueError as refused:  # the mixture pair needs noise: pure ε under Gaussian noise is refused
                    assert "unbounded" in str(refused)
            if count:
                assert compiles == [], call


def test_a_theorem_level_call_compiles_one_program_per_step(recording_compiles):
    """A theorem-level calibrate of a new shape compiled one XLA program per JAX operation run
    eagerly (validation, the families' parameters, τ*'s ndtri, the reductions, the binding pair:
    3 Gaussian pairs 27 programs, 3 mixture pairs 61, 3 discrete pairs 42 with the exact
    certificate's search); now the mixture plan, the closed form with its validity mask and the
    certificate are one program each, and the rest runs on the host. 11 pairs and a (2, 1) sweep:
    shapes no other test uses, so each program is compiled here (or read from the session's cache:
    fewer). The answers are the public closed forms' to the ulps that compiling them as one program
    may change (a fused multiply-add, 1–2 ulps of the Theorem 1 and 2 scales; each is rounded up by
    8 ulps and its certificate is checked)."""
    rng = np.random.default_rng(11)
    n = 11
    w = rng.dirichlet(np.ones(2), size=(2, n))
    x = np.sort(rng.normal(0, 2, (n, 3)), axis=-1)
    p, q = rng.dirichlet(np.ones(3), size=(2, n))
    sets = {
        "gaussian": (jp.PairSet(jp.Gaussian(rng.normal(0, 2, n), rng.uniform(0.1, 2, n)), jp.Gaussian(rng.normal(0, 2, n), rng.uniform(0.1, 2, n))), 2),
        "mixture": (jp.PairSet(jp.GaussianMixture(w[0], rng.normal(0, 2, (n, 2)), rng.uniform(0.2, 2, (n, 2))),
                               jp.GaussianMixture(w[1], rng.normal(0, 2, (n, 2)), rng.uniform(0.2, 2, (n, 2)))), 3),
        "discrete": (jp.PairSet(jp.Discrete(x, p), jp.Discrete(x, q)), 2),
    }
    eps, delta = np.array([[0.5], [2.0]]), 1e-6
    for name, (pairs, most) in sets.items():
        with recording_compiles() as compiles:
            result = jp.calibrate(pairs, eps, delta, level="theorem")
        assert len(compiles) <= most, (name, len(compiles))
        assert np.all(result.delta_achieved <= delta) and result.per_pair.shape == (2, 1, n)
        closed = {
            "gaussian": lambda e: bounds.theorem1(pairs, e, delta) * (1.0 + 2.0**-49),
            "mixture": lambda e: bounds.theorem2(pairs, e, delta, coupling="bound", form="max"),
            "discrete": lambda e: kantorovich.theorem1(pairs, e),
        }[name]
        for k, e in enumerate(eps.ravel()):
            np.testing.assert_allclose(result.per_pair[k, 0], closed(e), rtol=4 * 2.0**-52, atol=0)


@pytest.mark.parametrize("level", ["coupling", "exact"])
def test_a_gradient_after_a_call_reuses_its_search_program(level):
    """Eager ``jax.grad`` runs its search (``calibration._root``) on the program the plain call
    before it compiled. Its search state was a committed device array, while the plain call's is
    on the host: that lowered to a second program (23 s of compile for the GG(3) exact level; a
    calibrate and then a jax.grad of 3 Gaussian pairs at the exact level: 60 → 44 CPU-s). Counted
    as the search program's compiled variants, in the plain jit and in every loaded export. At the
    exact level under Laplace noise the implicit derivative's slopes come from the search's own
    program as well (``calibration._slopes_by_search``: δ's gradient in closed form), so no JVP
    program (``calibration._slopes``) is compiled: 3 Gaussian pairs, cold, jax.grad alone 76.8 →
    33.5 s on a loaded 2-core machine."""
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0], [1.0, 1.0]), jp.Gaussian([1.0, 0.5], [2.0, 3.0]))
    scale = lambda eps: jp.calibrate(pairs, eps, 1e-6, level=level).scale  # noqa: E731
    program = calibration._search_run_jit
    variants = program.compiled_variants
    plain = float(scale(1.0))
    before, jvps = variants(), calibration._slopes._cache_size()
    slope = float(jax.grad(scale)(1.0))
    assert variants() == before
    if level == "exact":
        assert calibration._slopes._cache_size() == jvps
    assert slope < 0 and slope == pytest.approx((float(scale(1.0 + 1e-5)) - float(scale(1.0 - 1e-5))) / 2e-5, rel=1e-4), plain


def test_a_mixture_gradient_takes_its_slopes_from_the_search_program():
    """Mixture pairs at the exact level under Laplace noise: the search's evaluator gives δ's whole
    gradient in closed form (``losses_mixture.mixture_delta_and_slope``, 2 + 3k² + 6k columns), so
    an eager ``jax.grad`` after a plain call compiles neither the implicit tangent's JVP
    (``calibration._implicit_tangent``, taken before: a pair has more than ``_MAX_SLOPES`` inputs)
    nor a variant of the search program (3 pairs of 2-component mixtures in a fresh process, grad
    after a call: 44.6 -> 3.8 CPU-s). The gradients in ε, a mean, a std and a weight agree with
    central differences of the calibrated scales. Reverse mode in a weight goes through the GMM
    plan's transportation simplex (``couplings._transport_one``: its ``while_loop`` had no
    transpose, and ``jax.grad`` in a weight raised at every level): at the coupling level, where
    δ is Σ w U1 and the plan's slope counts, it agrees with central differences too."""
    def scale(eps, m, s, w, level="exact"):
        first = jp.GaussianMixture(jnp.stack([jnp.array([0.5, 0.5]), jnp.array([0.3, 0.7]), jnp.stack([w, 1.0 - w])]),
                                   jnp.array([[-1.0, 1.0], [0.0, 2.0], [0.0, 3.0]]).at[0, 1].set(m), jnp.array([[0.5, 1.0], [1.0, 0.7], [0.7, 0.7]]))
        second = jp.GaussianMixture(jnp.array([[0.4, 0.6], [0.5, 0.5], [0.6, 0.4]]), jnp.array([[0.0, 2.5], [-1.0, 0.0], [1.0, 3.0]]),
                                    jnp.array([[1.0, 1.0], [1.0, 1.0], [0.7, 1.5]]).at[1, 0].set(s))
        return jnp.sum(jp.calibrate(jp.PairSet(first, second), eps, 1e-6, level=level).per_pair)  # (each pair's, not the max's)

    def central(f, at, k):
        up, down = (float(f(*(v + h if i == k else v for i, v in enumerate(at)))) for h in (1e-5, -1e-5))
        return (up - down) / 2e-5

    at = (1.0, 1.0, 1.0, 0.65)  # (at 0.6 the third pair's weights are equal, a degenerate plan, and its coupling-level scale has a kink)
    plain = float(scale(*at))
    variants, tangents = calibration._search_run_jit.compiled_variants(), calibration._implicit_tangent._cache_size()
    grads = [float(g) for g in jax.grad(scale, argnums=(0, 1, 2, 3))(*at)]
    assert calibration._search_run_jit.compiled_variants() == variants and calibration._implicit_tangent._cache_size() == tangents
    for k, g in enumerate(grads):
        assert g != 0.0 and g == pytest.approx(central(scale, at, k), rel=1e-4), (k, g, plain)
    coupling = partial(scale, 1.0, 1.0, 1.0, level="coupling")
    assert float(jax.grad(coupling)(0.65)) == pytest.approx(central(coupling, (0.65,), 0), rel=1e-4)


def test_delta_exact_at_a_calibrations_scales_runs_its_search_program(monkeypatch, recording_compiles):
    """Checking a calibration with ``jp.delta_exact`` at its scales runs the program the calibration
    searched and certified with, where it is at hand (``calibration.exact_delta_by_search``): no program of the
    evaluators' own is called (they are replaced by a failing stand-in here), no variant of the
    search program is added (a second call compiles nothing at all), and the max over pairs is the
    calibration's certificate bit for bit. Before, the first such check of 3 Gaussian pairs (Laplace noise)
    compiled 10.3 s in a program of its own. Scale-0 lanes, which the search never evaluates, take
    the evaluator's own program, beside search lanes in the same call."""
    from jaxpuffer import losses

    gaussians = jp.PairSet(jp.Gaussian([0.0, 0.0, 0.0], [1.0, 1.0, 0.3]), jp.Gaussian([1.0, 0.0, 1.0], [2.0, 3.0, 0.5]))
    atoms = jp.PairSet(jp.Discrete([[0.0, 1.0, 2.0]] * 2, [[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]]), jp.Discrete([[0.0, 1.0, 2.0]] * 2, [[0.3, 0.3, 0.4], [0.1, 0.1, 0.8]]))
    mixtures = jp.PairSet(jp.GaussianMixture([0.5, 0.5], [-1.0, 1.0], [0.5, 1.0]), jp.GaussianMixture([0.3, 0.7], [0.0, 2.0], [1.0, 0.7]))
    program = calibration._search_run_jit
    variants = program.compiled_variants

    def refuse(*args, **kwargs):
        raise AssertionError("the evaluator's own program ran")

    for pairs, noise in ((gaussians, "laplace"), (gaussians, "gaussian"), (atoms, "laplace"), (mixtures, "laplace")):
        result = jp.calibrate(pairs, 1.0, 1e-3, noise=noise)
        assert result.level == "exact" and result.certificate == "exact"
        before = variants()
        with monkeypatch.context() as patched:
            for name in ("_pair_delta_jit", "_discrete_delta_jit", "_mixture_delta_jit"):
                patched.setattr(losses, name, refuse)
            per_pair = np.asarray(jp.delta_exact(pairs, result.scale, 1.0, noise=noise))
            assert variants() == before, noise
            with recording_compiles() as compiles:  # (the first call compiled a few one-op programs of array handling, ~0.03 s each)
                jp.delta_exact(pairs, 1.1 * result.scale, 1.0, noise=noise)
        assert compiles == [], (noise, compiles)
        assert per_pair.shape == pairs.batch_shape and per_pair.max() == result.delta_achieved, (noise, per_pair, result.delta_achieved)
        if noise == "gaussian" and pairs is gaussians:
            by_search = per_pair
    # where the search program is not at hand (no calibration ran it), the δ program alone, which
    # compiles in less time: no search variant is added, and the values agree with the search's
    # to rounding (measured up to 1.1e-14 relative between the two programs)
    with monkeypatch.context() as patched:
        patched.setattr(calibration._search_run_jit, "holds", lambda *args: False)
        before = variants()
        alone = np.asarray(jp.delta_exact(gaussians, jp.calibrate(gaussians, 1.0, 1e-3, noise="gaussian").scale, 1.0, noise="gaussian"))
        assert variants() == before
    np.testing.assert_allclose(alone, by_search, rtol=1e-13)
    # scale 0 beside positive scales: the priors' own δ (Gaussian noise: N(0, 1) vs N(1, 4) overlap, δ < 1)
    both = np.asarray(jp.delta_exact(gaussians, np.array([0.0, 2.0, 0.0]), 1.0, noise="gaussian"))
    alone = [float(jp.delta_exact(gaussians[k], s, 1.0, noise="gaussian")) for k, s in ((0, 0.0), (1, 2.0), (2, 0.0))]
    np.testing.assert_array_equal(both, alone)
    assert 0.0 < both[0] < 1.0 and both[1] > 0.0


def test_gradients_in_different_inputs_share_one_implicit_tangent_program():
    """A pair with more than ``_MAX_SLOPES`` per-pair inputs (two 2-component mixtures) takes the
    implicit tangent by one JVP (``calibration._implicit_tangent``). ``jax.grad`` in a mean and then
    in a standard deviation run the same compiled program: JAX's partial evaluation split it
    differently for each pattern of known-zero tangents (4.5 s of compile again here, before
    ``calibration._entangled``): the second grad compiles no ``_implicit_tangent`` program (the
    names of JAX's backend-compile events). The gradient in σ agrees with central differences."""
    def scale(m, s):
        first = jp.GaussianMixture(jnp.array([0.5, 0.5]), jnp.stack([jnp.asarray(-1.0), m]), jnp.array([0.5, 1.0]))
        second = jp.GaussianMixture(jnp.array([0.3, 0.7]), jnp.array([0.0, 2.0]), jnp.stack([jnp.asarray(1.0), s]))
        return jp.calibrate(jp.PairSet(first, second), 1.0, 1e-5, level="coupling", noise="gaussian").scale

    assert np.isfinite(float(jax.grad(scale, 0)(1.0, 0.7)))
    compiled = []
    listener = lambda event, duration, **kw: compiled.append(str(kw.get("fun_name"))) if event.endswith("backend_compile_duration") else None  # noqa: E731
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        by_s = float(jax.grad(scale, 1)(1.0, 0.7))
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled and not [name for name in compiled if "_implicit_tangent" in name], compiled  # its small helpers do compile
    assert by_s == pytest.approx((float(scale(1.0, 0.7 + 1e-5)) - float(scale(1.0, 0.7 - 1e-5))) / 2e-5, rel=1e-4)


def test_small_calls_of_cheap_evaluators_compile_for_latency(monkeypatch):
    """A search of at most 64 lanes on the CPU whose family runs cheaply unoptimised compiles with
    LLVM unoptimised (``calibration._compile_for_latency``; 3 Gaussian pairs, exact level, Laplace:
    a fresh process 18.8 -> 13.1 CPU-s), any other with XLA's defaults: a larger call, GG noise on
    Gaussian priors (its quadrature ran 5x slower so), Gaussian noise (atoms: 3x slower; Gaussian
    pairs: its small closed-form program gained less than its warm call lost). Both programs
    certify their own scales: the same 3 pairs searched with XLA's defaults (``_QUICK_LANES`` 0)
    give scales within the search's rtol, each δ(b) ≤ target by the other program's evaluation too."""
    from jaxpuffer import families
    from jaxpuffer.noise import GeneralizedGaussian, kernels

    gaussian, discrete, mixture = (families.get(name) for name in ("gaussian", "discrete", "mixture"))
    laplace, normal = kernels.resolve("laplace"), kernels.resolve("gaussian")
    rule = calibration._compile_for_latency
    assert rule(gaussian, laplace, "exact", 64, None) and rule(gaussian, laplace, "coupling", 3, None)
    assert rule(discrete, laplace, "exact", 3, None) and rule(mixture, laplace, "exact", 3, None)
    assert not rule(gaussian, laplace, "exact", 65, None)
    assert not rule(gaussian, GeneralizedGaussian(3.0), "exact", 3, None)
    assert not rule(discrete, normal, "exact", 3, None) and not rule(mixture, normal, "exact", 3, None) and not rule(gaussian, normal, "exact", 3, None)
    assert calibration._compile_options(calibration._Config("exact", "laplace", "optax", 1e-10, quick=True)) == {"xla_backend_optimization_level": 0}
    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 2.0], [1.0, 1.0, 1.0]), jp.Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    quick = jp.calibrate(pairs, 1.0, 1e-6, level="exact")
    monkeypatch.setattr(calibration, "_QUICK_LANES", 0)
    program = calibration._search_run_jit
    before = program.compiled_variants()
    full = jp.calibrate(pairs, 1.0, 1e-6, level="exact")
    assert program.compiled_variants() > before  # a program of its own
    a, b = np.asarray(quick.per_pair), np.asarray(full.per_pair)
    assert np.all(np.abs(a - b) <= 1e-10 * b), a / b - 1  # the search's rtol (measured: 8e-16)
    for result in (quick, full):
        assert result.converged and result.delta_achieved <= 1e-6
    assert float(jnp.max(jp.delta_exact(pairs, quick.per_pair, 1.0))) <= 1e-6  # (by the defaults' program, as _QUICK_LANES is 0)


def test_search_programs_are_loaded_from_disk_by_a_later_process(tmp_path, monkeypatch):
    """The search, certificate and public δ programs are exported (jax.export) to the cache folder
    on their first call and loaded, not traced, when a later process (here: the in-process tables
    emptied) calls them: answers bit-identical to the plain jit's; an unreadable file is exported
    again; nothing is exported where jaxpuffer's sources cannot be read or for a call on another
    backend than JAX's default; a search whose
    family or kernel is code outside jaxpuffer, or that spans devices, is never exported (a digest
    of jaxpuffer's sources could not tell its versions apart)."""
    from jaxpuffer import _cache, losses

    pairs = jp.PairSet(jp.Gaussian([0.0, 0.0, 2.0], [1.0, 1.0, 1.0]), jp.Gaussian([1.0, 0.0, 0.0], [2.0, 3.0, 1.0]))
    programs = [v for module in (calibration, losses) for v in vars(module).values() if isinstance(v, _cache.ExportedJit)]
    assert len(programs) == 9  # the search's two programs and its floor of δ(0), the certificate's three, the public δ's three
    traced = []
    listener = lambda event, duration, **kw: traced.append(kw.get("fun_name")) if event.endswith("jaxpr_trace_duration") else None  # noqa: E731

    def run(folder):
        for program in programs:
            program._calls.clear()  # a new process: nothing traced or loaded yet
        _cache.set_export_folder(None if folder is None else str(folder))
        traced.clear()
        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            result = jp.calibrate(pairs, 1.0, 1e-6, level="exact")
            delta = jp.delta_exact(pairs, 2.0, 1.0)
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)
        return np.asarray(result.per_pair), float(result.delta_achieved), np.asarray(delta)

    before = _cache._export_folder
    try:
        plain = run(None)
        first = run(tmp_path)
        files = sorted(tmp_path.glob("*.jaxexport"))
        assert len(files) >= 2 and traced.count("flat") == len(files)  # each program traced once, for export
        later = run(tmp_path)
        assert not {"flat", "_search_run", "_search_init", "_delta", "_prune_bound", "_pair_delta_program"} & set(traced), traced
        assert sorted(tmp_path.glob("*.jaxexport")) == files
        files[0].write_bytes(b"not an exported program")
        again = run(tmp_path)
        for got in (first, later, again):
            np.testing.assert_array_equal(got[0], plain[0])
            assert got[1] == plain[1]
            np.testing.assert_array_equal(got[2], plain[2])
        assert files[0].read_bytes() != b"not an exported program"  # written again
        # sources that cannot be read (a zipped install): nothing is exported, nothing goes stale
        monkeypatch.setattr(_cache, "_PACKAGE", str(tmp_path / "no sources"))
        _cache._environment.cache_clear()
        unread = run(tmp_path / "unread")
        np.testing.assert_array_equal(unread[0], plain[0])
        assert not (tmp_path / "unread").exists()
        # a call on another backend than the default (a GPU process checking on its CPU): the plain
        # jit, never the default backend's program (here the default backend claims to be a GPU)
        monkeypatch.undo()
        _cache._environment.cache_clear()
        assert _cache._on_default_backend([np.ones(2), jax.device_put(np.ones(2), jax.devices("cpu")[0])])
        monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
        assert not _cache._on_default_backend([np.ones(2), jax.device_put(np.ones(2), jax.devices("cpu")[0])])
        with jax.default_device(jax.devices("cpu")[0]):
            assert not _cache._on_default_backend([np.ones(2)])
            elsewhere = run(tmp_path / "elsewhere")
        np.testing.assert_array_equal(elsewhere[0], plain[0])
        assert not (tmp_path / "elsewhere").exists()
    finally:
        monkeypatch.undo()
        _cache._environment.cache_clear()
        _cache.set_export_folder(before)
        for program in programs:
            program._calls.clear()

    class Outside(jp.noise.Laplace):  # a kernel defined outside jaxpuffer
        pass

    cfg = calibration._Config("exact", "laplace", "optax", 1e-6, "gaussian")
    assert calibration._ours(cfg)
    assert not calibration._ours(cfg._replace(noise=Outside()))
    assert not calibration._ours(cfg._replace(mesh=object()))  # any mesh: a search over several devices
