"""Bracketed scalar root finders, vectorized over brackets, and the two small numerical rules the
exact evaluators share: the sign floor of r − ε and a log that is −∞ (with a zero derivative) at 0."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NOISE_ULPS = 32  # sign floor of r − ε, in ulps of the terms r is formed from, plus ε
_EPS64 = float(np.finfo(np.float64).eps)


def sign_floor(size, eps):
    """Below this |r − ε| is rounding noise: ``NOISE_ULPS`` ulps of the size of the terms the
    log-ratio r was formed from, plus |ε|. The exact evaluators decide the sign of r − ε on their
    grids against it (Gaussian pairs and mixtures alike)."""
    return NOISE_ULPS * _EPS64 * (size + jnp.abs(eps))


def log_or_minus_inf(u):
    """log u for u ≥ 0, −∞ at 0 with a zero derivative (log's own, ∞ there, made reverse-mode
    derivatives NaN: 0 · ∞ where a minimum or maximum dropped the term)."""
    some = u > 0
    return jnp.where(some, jnp.log(jnp.where(some, u, 1.0)), -jnp.inf)


# Grids on which the exact evaluators look for the crossings of a log-density ratio:
# offsets from each component's mean, in units of its std (21 points) and of the Laplace scale b
# (16 points; beyond 48 b both Laplace-convolved densities are exact exponentials with one rate).
# (numpy constants: importing jaxpuffer must not start a JAX backend, so that
# jax.distributed.initialize can still be called after the import)
_CORE = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5, 7.5, 10.0, 13.0])
GRID_CORE = np.concatenate([-_CORE[:0:-1], _CORE])
_TAIL = np.array([1.0, 2.5, 5.0, 9.0, 15.0, 24.0, 36.0, 48.0])
GRID_TAIL = np.concatenate([-_TAIL[::-1], _TAIL])


def illinois(fun, a, c, fa, fc, steps):
    """Root of fun in each bracket [a, c] (fa, fc of opposite signs); Illinois regula falsi with
    ``steps`` ≥ 1 evaluations of fun.

    Each loop step ends with the evaluation of fun, whose only use in that step is the carried
    state: XLA on CPU then fuses it into one kernel instead of writing out its intermediates
    for several consumers (the same holds for :func:`newton_in_bracket`)."""

    def propose(a, c, fa, fc):
        denom = jnp.where(fc != fa, fc - fa, 1.0)
        x = c - fc * (c - a) / denom
        x = jnp.where((x > jnp.minimum(a, c)) & (x < jnp.maximum(a, c)), x, 0.5 * (a + c))
        return x, fun(x)

    def update(a, c, fa, fc, side, x, fx):
        same = jnp.sign(fx) == jnp.sign(fc)
        fa = jnp.where(same, jnp.where(side == 1, 0.5 * fa, fa), fc)
        a = jnp.where(same, a, c)
        return a, x, fa, fx, jnp.where(same, 1, -1)

    def step(_, state):
        bracket = update(*state)
        return (*bracket, *propose(*bracket[:4]))

    state = (a, c, fa, fc, jnp.zeros(a.shape, int), *propose(a, c, fa, fc))
    a, c, fa, fc, _ = update(*jax.lax.fori_loop(0, steps - 1, step, state))
    return jnp.where(jnp.abs(fa) < jnp.abs(fc), a, c)


def implicit_root(x, residual):
    """``x`` unchanged in value, with the derivative of the implicit function theorem: where a loop
    (a bisection) found x with residual(x; θ) ≈ 0, dx = −(∂r/∂θ · dθ)/(∂r/∂x), θ whatever
    ``residual`` closes over. The loop's own derivative is meaningless (its bracket ends may move
    with θ, its answer is a crossing); run the loop on ``stop_gradient``-ed inputs (as
    :func:`feasible_end` does). Elementwise:
    ``residual`` maps x (any shape) to one value per element, lane by lane. Written as
    x + (r − r̄)·w with r̄ and w = −1/r̄′ held constant (``stop_gradient``), so it runs under jit,
    vmap, jvp and grad without a custom rule, and its value is x exactly; a lane whose residual or
    slope is not finite, or whose slope is 0 (no crossing to differentiate), gets derivative 0."""
    x0 = jax.lax.stop_gradient(x)
    r, slope = jax.jvp(residual, (x0,), (jnp.ones_like(x0),))
    usable = jnp.isfinite(r) & jnp.isfinite(slope) & (slope != 0)
    moved = jnp.where(usable, r, 0.0)
    weight = jax.lax.stop_gradient(jnp.where(usable, -1.0 / jnp.where(usable, slope, 1.0), 0.0))
    return x0 + (moved - jax.lax.stop_gradient(moved)) * weight


def bisect(right_of, lo, hi, steps: int):
    """``steps`` halvings of the brackets [lo, hi] (elementwise): where ``right_of(mid)`` the answer
    lies right of mid (lo moves), else left (hi moves). Returns the final (lo, hi)."""

    def halve(_, state):
        a, c = state
        mid = 0.5 * (a + c)
        go = right_of(mid)
        return jnp.where(go, mid, a), jnp.where(go, c, mid)

    return jax.lax.fori_loop(0, steps, halve, (lo, hi))


def feasible_end(value, args, target, lo, hi, steps: int):
    """The smallest x in [lo, hi], to 2^−steps of the bracket, with value(x, *args) ≤ target, for
    ``value`` non-increasing in x (elementwise): (x, whether value(x) ≤ target there — the same
    arithmetic as the search, so the answer is verified, not inferred). The bisection and its check
    run on constants (``stop_gradient``): differentiated, a loop carrying tangents may round its
    value differently from the check, which then fails. The derivative of x in ``args`` and
    ``target`` is implicit, at value(x) = target (:func:`implicit_root`)."""
    args_, target_, lo, hi = jax.lax.stop_gradient((args, target, lo, hi))
    _, c = bisect(lambda mid: value(mid, *args_) > target_, lo, hi, steps)
    found = value(c, *args_) <= target_
    return implicit_root(c, lambda x: value(x, *args) - target), found


def quadratic_start(a, fa, dfa, c, fc):
    """A first point for Newton in a bracket [a, c] (fa, fc of opposite signs) whose end ``a`` may
    sit at a near-tangent extremum: the zero inside the bracket of the quadratic with value and
    slope of f at ``a`` through (c, fc). With f'(a) = 0 it is the vertex parabola, with no
    curvature a Newton step from ``a``; regula falsi would start next to ``a`` where f' ≈ 0.
    Falls back to regula falsi where the quadratic gives no point inside. For the flank of an
    excursion, ``a`` is the extremum and ``dfa`` = 0: the zero of the parabola with its vertex
    there, exact for a near-tangent peak."""
    span = jnp.abs(c - a)
    d = jnp.sign(c - a)
    g1 = dfa * d  # slope along the bracket, in τ = |x − a|
    span_ = jnp.where(span > 0, span, 1.0)
    k = (fc - fa - g1 * span) / span_**2
    disc = jnp.maximum(g1**2 - 4.0 * k * fa, 0.0)
    q = -0.5 * (g1 + jnp.where(g1 >= 0, 1.0, -1.0) * jnp.sqrt(disc))
    t1 = q / jnp.where(k != 0, k, 1.0)
    t2 = fa / jnp.where(q != 0, q, 1.0)
    inside = lambda t: jnp.isfinite(t) & (t > 0) & (t < span)  # noqa: E731
    t = jnp.where(inside(t2), t2, jnp.where(inside(t1) & (k != 0), t1, jnp.nan))
    secant = a - fa * (c - a) / jnp.where(fc != fa, fc - fa, 1.0)
    return jnp.where(jnp.isfinite(t), a + d * t, secant)


def crossing_start(a, fa, dfa, c, fc, dfc):
    """:func:`quadratic_start` from the end of [a, c] nearer 0 (the one that may sit on a peak)."""
    return jnp.where(jnp.abs(fa) <= jnp.abs(fc), quadratic_start(a, fa, dfa, c, fc), quadratic_start(c, fc, dfc, a, fa))


def newton_bracket(fun_and_slope, a, c, fa, fc, steps, start, bisections: int = 0, noise=None):
    """The bracket [lo, hi] of a zero of f left after ``steps`` ≥ 1 Newton steps from ``start``
    inside [a, c] (sign change, f(a) = fa, f(c) = fc), as (lo, hi, f(lo), f(hi)): f(lo) and f(hi)
    have the signs of fa and fc, so the zero lies in [lo, hi] whether or not the steps converged
    (a caller can bound what lies between). Newton closes in from one side, so the last estimate
    x̂ is then bracketed by two more evaluations at x̂ ± h, h = 1e-11 (hi − lo) + 8 ulps of x̂, and
    at least 2 ``noise`` / |f′| where the caller gives f's rounding noise (on a flat stretch f(x̂ ± h)
    otherwise rounds to 0 and the bracket stays wide). A point where f is exactly 0 is a zero, and
    Newton stays there (a step to the bracket's middle would leave up to half of it to the caller's
    bound). ``bisections`` more steps then halve the bracket (where Newton stalled on a flat
    stretch). The evaluation's only use in each step is the carried state (one fused kernel on CPU)."""
    pos_left = fa > 0

    def update(lo, hi, f_lo, f_hi, x, f_df):
        f, df = jnp.real(f_df), jnp.imag(f_df)
        right_of_root = (f > 0) != pos_left
        lo, f_lo = jnp.where(right_of_root, lo, x), jnp.where(right_of_root, f_lo, f)
        hi, f_hi = jnp.where(right_of_root, x, hi), jnp.where(right_of_root, f, f_hi)
        x_new = x - f / jnp.where(df != 0, df, 1.0)
        ok = (df != 0) & (x_new > jnp.minimum(lo, hi)) & (x_new < jnp.maximum(lo, hi))
        # f(x) = 0 exactly: x is a zero to working precision (Newton lands there often: r − ε
        # rounds to 0 within an ulp or so of a root); stay, and let the probes below bracket it
        return lo, hi, f_lo, f_hi, jnp.where(f == 0, x, jnp.where(ok, x_new, 0.5 * (lo + hi)))

    def step(_, state):
        bracket = update(*state)
        return (*bracket, jax.lax.complex(*fun_and_slope(bracket[-1])))

    x0 = jnp.clip(start, jnp.minimum(a, c), jnp.maximum(a, c))
    last = jax.lax.fori_loop(0, steps - 1, step, (a, c, fa, fc, x0, jax.lax.complex(*fun_and_slope(x0))))
    lo, hi, f_lo, f_hi, x = update(*last)
    h = 1e-11 * jnp.abs(hi - lo) + 8.0 * jnp.finfo(jnp.float64).eps * jnp.abs(x)
    # f′ of the last evaluated point (within the bracket's width of x)
    slope = jnp.abs(jnp.imag(last[-1]))
    h = h if noise is None else jnp.maximum(h, 2.0 * noise / jnp.where(slope > 0, slope, jnp.inf))
    x_l, x_r = jnp.clip(x - h, jnp.minimum(lo, hi), jnp.maximum(lo, hi)), jnp.clip(x + h, jnp.minimum(lo, hi), jnp.maximum(lo, hi))
    # both probes through one call site of fun (a loop of two): compile time grows with the sites
    f_l, f_r = jax.lax.map(lambda x_: fun_and_slope(x_)[0], jnp.stack([x_l, x_r]))
    left_ok, right_ok = (f_l > 0) == pos_left, (f_r > 0) != pos_left
    # x_l on the lo side and x_r on the hi side: [x_l, x_r]; else the zero is beyond one of them
    new_lo = jnp.where(left_ok, jnp.where(right_ok, x_l, x_r), lo)
    new_f_lo = jnp.where(left_ok, jnp.where(right_ok, f_l, f_r), f_lo)
    new_hi = jnp.where(left_ok, jnp.where(right_ok, x_r, hi), x_l)
    new_f_hi = jnp.where(left_ok, jnp.where(right_ok, f_r, f_hi), f_l)
    bracket = new_lo, new_hi, new_f_lo, new_f_hi
    if not bisections:
        return bracket
    return bisect_widest(lambda x, _: fun_and_slope(x)[0], *bracket, bisections, new_lo.shape[-1], True)


def bisect_widest(fun, lo, hi, f_lo, f_hi, steps: int, lanes: int, live):
    """``steps`` bisection steps on the ``lanes`` widest of the brackets [lo, hi] (1-D, as
    :func:`newton_bracket` leaves them: f(lo), f(hi) of opposite signs) among those marked ``live``;
    the others are returned as given, still valid brackets. ``fun(x, idx)`` is f at the points x
    (lanes,) of the brackets ``idx``. Bisecting only where Newton stalled (a zero on a flat
    stretch; most brackets are already 1e-11 wide) keeps the cost of the loop to ``lanes``
    evaluations per step."""
    every = lanes >= lo.shape[-1]
    idx = Ellipsis if every else jax.lax.top_k(jnp.where(live, jnp.abs(hi - lo), -1.0), lanes)[1]
    pos_left = f_lo[idx] > 0  # the lo end is the positive one (newton_bracket's sides)

    def keep(lo_, hi_, f_lo_, f_hi_, mid, f_mid):  # the half holding the sign change
        on_lo_side = (f_mid > 0) == pos_left
        return jnp.where(on_lo_side, mid, lo_), jnp.where(on_lo_side, hi_, mid), jnp.where(on_lo_side, f_mid, f_lo_), jnp.where(on_lo_side, f_hi_, f_mid)

    # each step ends with the evaluation, whose only use in the step is the carried state: XLA on
    # CPU then fuses it into one kernel (as in illinois) instead of writing its intermediates out
    # for the four selections of an update (Gaussian pairs, Laplace noise: 64 → 37 ms of a 255 ms
    # evaluation of 10⁴ pairs)
    def halve(_, state):
        bracket = keep(*state)
        mid = 0.5 * (bracket[0] + bracket[1])
        return (*bracket, mid, fun(mid, idx))

    out = (lo[idx], hi[idx], f_lo[idx], f_hi[idx])
    if steps > 0:
        mid = 0.5 * (out[0] + out[1])
        out = keep(*jax.lax.fori_loop(0, steps - 1, halve, (*out, mid, fun(mid, idx))))
    return out if every else tuple(full.at[idx].set(part) for full, part in zip((lo, hi, f_lo, f_hi), out))


def newton_in_bracket(fun_and_slope, a, c, fa, fc, steps, start=None):
    """Root of f in [a, c] (sign change, f(a) = fa, f(c) = fc) by Newton steps kept inside the
    bracket, starting from ``start`` (default: the regula-falsi point); ``steps`` ≥ 1
    evaluations of f.

    The loop carries f and f' of the current point packed as one complex array: XLA on CPU
    fuses a computation into a single kernel only where it has one output, and otherwise
    writes out every shared intermediate (here the erfcx and log terms) — about twice as slow.
    """
    pos_left = fa > 0
    denom = jnp.where(fc != fa, fc - fa, 1.0)
    start = a - fa * (c - a) / denom if start is None else start
    start = jnp.clip(start, jnp.minimum(a, c), jnp.maximum(a, c))

    def evaluate(x):
        return jax.lax.complex(*fun_and_slope(x))

    def update(lo, hi, x, f_df):
        f, df = jnp.real(f_df), jnp.imag(f_df)
        right_of_root = (f > 0) != pos_left  # f has the sign of the right end
        lo, hi = jnp.where(right_of_root, lo, x), jnp.where(right_of_root, x, hi)
        x_new = x - f / jnp.where(df != 0, df, 1.0)
        ok = (df != 0) & (x_new >= lo) & (x_new <= hi)  # a converged step sits on an end
        return lo, hi, jnp.where(ok, x_new, 0.5 * (lo + hi))

    def step(_, state):
        lo, hi, x = update(*state)
        return lo, hi, x, evaluate(x)

    state = jax.lax.fori_loop(0, steps - 1, step, (a, c, start, evaluate(start)))
    return update(*state)[2]


def merge_sorted(a, c):
    """The ascending union of two ascending arrays along the last axis, by Batcher's bitonic
    merge: log₂ of the padded length min/max stages of elementwise work, several times faster
    under ``vmap`` than ``jnp.sort`` of the concatenation (a comparison sort per row on CPU)."""
    la, lc = a.shape[-1], c.shape[-1]
    half = 1 << (max(la, lc) - 1).bit_length()

    def pad(x):
        return jnp.concatenate([x, jnp.full(x.shape[:-1] + (half - x.shape[-1],), jnp.inf, x.dtype)], axis=-1)

    x = jnp.concatenate([pad(a), pad(c)[..., ::-1]], axis=-1)  # ascending then descending: bitonic
    stride = half
    while stride >= 1:
        x = x.reshape(x.shape[:-1] + (-1, 2, stride))
        lo, hi = x[..., 0, :], x[..., 1, :]
        x = jnp.stack([jnp.minimum(lo, hi), jnp.maximum(lo, hi)], axis=-2).reshape(x.shape[:-3] + (-1,))
        stride //= 2
    return x[..., : la + lc]


def first_true(mask, count):
    """Indices of the first ``count`` True entries along the last axis of a mask, and which of
    them exist (0 where not). The (k+1)-th True sits where the running count first exceeds k,
    i.e. at the number of positions whose running count is ≤ k: one cumulative sum and ``count``
    elementwise reductions, no scatter (``jnp.nonzero`` under ``vmap`` is several times slower)."""
    rank = jnp.cumsum(mask, axis=-1, dtype=jnp.int32)
    idx = jnp.sum(rank[..., None, :] <= jnp.arange(count, dtype=jnp.int32)[:, None], axis=-1, dtype=jnp.int32)
    ok = idx < mask.shape[-1]
    return jnp.where(ok, idx, 0), ok


# slopes summing to, and curvatures, below this are treated as 0 or raised to it: its square is a
# normal float64, so no division by a subnormal (flushed to 0 in compiled CPU code) and no 1/x² of
# one in a derivative
_TINY = 1e-150


def cell_upper(h, ra, rc, g1, g2):
    """max over s ∈ [0, h] of min(ra + s·g1, rc + (h − s)·g2) (a concave function; g1 + g2 ≥ 0).

    The upper bound on a cell [a, a + h] of a function through (a, ra) and (a + h, rc) whose slope
    is at most g1 after a and at least −g2 before a + h (the exact evaluators' cell proofs)."""
    ends = jnp.maximum(jnp.minimum(ra, rc + h * g2), jnp.minimum(ra + h * g1, rc))
    total = g1 + g2
    # the lines cross inside only if 0 < g1 < total; for total below _TINY (a subnormal divisor is
    # 0 in compiled code: s = NaN, and a NaN derivative in reverse mode) that crossing is at most
    # h·total above the ends, added as h·_TINY
    steep = total >= _TINY
    s = (rc - ra + h * g2) / jnp.where(steep, total, 1.0)
    inside = steep & (s > 0) & (s < h)
    ends = jnp.where(steep | (total <= 0), ends, ends + h * _TINY)
    return jnp.maximum(ends, jnp.where(inside, ra + jnp.where(inside, s, 0.0) * g1, -jnp.inf))


def parabola_upper(h, ra, rc, curvature):
    """max over s ∈ [0, h] of the chord through (0, ra), (h, rc) plus curvature·s(h − s)/2: the
    upper bound on a cell of a function g with these end values and g'' ≥ −curvature there
    (g − chord − curvature·s(h − s)/2 is then convex and 0 at both ends; the chord alone where
    curvature ≤ 0, g convex).

    A positive curvature below ``_TINY`` is raised to it (a larger curvature is a weaker, still
    valid bound): compiled XLA code on CPU flushes subnormal operands to 0, so chord / 3e-308 was
    0/0 = NaN under ``jit`` (a mixture's far tail, where the pieces' curvature bound underflows),
    and a NaN bound read as a proven sign."""
    chord = (rc - ra) / jnp.where(h > 0, h, 1.0)
    bend = jnp.maximum(curvature, 0.0)
    bend = jnp.where(bend > 0, jnp.maximum(bend, _TINY), 0.0)
    s = jnp.clip(0.5 * h + chord / jnp.where(bend > 0, bend, 1.0), 0.0, h)
    inner = ra + chord * s + 0.5 * bend * s * (h - s)
    return jnp.where(bend > 0, jnp.maximum(inner, jnp.maximum(ra, rc)), jnp.maximum(ra, rc))
