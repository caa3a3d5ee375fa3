"""Exact δ of a discrete prior under any log-concave noise kernel, by certified cell enclosure
(issue 12: generalized Gaussian noise GG(p), p ≥ 1, at the exact level; MATH.md §8–9).

A discrete prior on atoms x_k with pmf w_k released with noise of density g_b (symmetric,
log-concave: GG(p) with p ≥ 1, Laplace, Gaussian) has density Σ_k w_k g_b(y − x_k), so with
ℓ_k(y) = log w_k + log g_b(y − x_k),

    log p(y) = LSE_k ℓ^p_k(y),   log q(y) = LSE_k ℓ^q_k(y),   δ = ∫ [p − e^ε q]_+ dy.

No closed form is needed: the line is cut into cells [a, c] whose ends include every atom (so no
ℓ_k has its kink inside a cell and each is concave on it), placed around each atom where log g
has fallen by 1, 2, …, 8 and then by 15 % more each time (``_LEVELS``) out to ``_REACH`` = 80; beyond the outer
atoms' reach P's mass, ≤ 2 P(N > reach), is added to δ.

**The enclosure of r = log p − log q − ε on a cell** (second order in the cell width h). A concave
ℓ_k lies below its tangent at the midpoint m and above its chord, so

    log p(y) ≤ V_p(y) = LSE_k [ℓ_k(m) + ℓ_k'(m)(y − m)]  (convex, hence ≤ its chord over [a, c]),
    log q(y) ≥ W_q(y) = LSE_k [chord_k(y)]              (convex, hence ≥ its tangent at m),

and r ≤ chord(V_p)(y) − tangent_m(W_q)(y) − ε, an affine function: its larger end value r̄
bounds r on the cell; r̲ likewise with p and q exchanged. These bound log p and log q separately,
each to about 1/8 of its change over the cell: wider than a small ε where the atoms are close on
the noise's scale (b ≫ their spread), where log p − log q itself barely moves. So r is also
enclosed to first order in the ratio: with D_k = ℓ_k − ℓ_ref (ref the cell's nearest atom),
r = LSE_k(log w^p_k + D_k) − LSE_k(log w^q_k + D_k), and each D_k is **monotone on the cell** —
on one side of both atoms D_k' = (G'(t_ref) − G'(t_k))/b with G = −log g convex and t_k − t_ref
fixed; between them G'(t_k) and G'(t_ref) have opposite signs (g symmetric) — so its end values
bound it, and r ≤ LSE(log w^p + D̄) − LSE(log w^q + D̲) − ε (r̲ likewise). The tighter of the two
enclosures is kept at each end. (Harness, GG(2.8), ε = 0.0023: at b = 1000 the gap between upper
and lower bound fell from 29 % to 4e-7 of δ; at b ≥ 1e6 the upper bound fell from a floor of
1.2e-20, which left δ = 1.3e-23 unreachable, to the tail term 4e-37.) Each ℓ_k, its slope and
the chord are evaluated exactly up to rounding, which widens [r̲, r̄] by η (below). Then on the cell
f = p − e^ε q = p(1 − e^{−r}), so

    ∫_cell f_+ ≤ min( P(cell)·(1 − e^{−r̄})_+ ,  P(cell) − e^ε Q(cell) + P(cell)·(e^{−r̲} − 1)_+ )
    ∫_cell f_+ ≥ max( P(cell)·(1 − e^{−r̲})_+ ,  P(cell) − e^ε Q(cell), 0 )

(the second upper form: ∫f_+ = ∫f + ∫f_−). **The cell masses** P(cell) = Σ_k w_k m_k, each atom's
m_k enclosed twice and the tighter ends kept: by the kernel's log tails, S(t₁) − S(t₂) =
S(t₁)(1 − e^{log S(t₂) − log S(t₁)}) (t₁ ≤ t₂ the ends' distances to x_k, S(t) = P(N > t)), exact to
rounding but losing accuracy as a cell narrows; and by ∫ e^chord ≤ ∫ e^ℓ ≤ ∫ e^tangent(m) in closed
form, second order in h, accurate on narrow cells. A cell proven positive (r̲ ≥ 0) gives
P − e^ε Q to rounding, one proven negative (r̄ ≤ 0) gives 0; a cell whose enclosure straddles 0
(it holds a root, or is within the enclosure's width of one) gives its upper bound.

**Refinement.** ``_ROUNDS`` = 10 times, the ``_REFINE`` = 8 cells with the largest gap between upper
and lower bound are cut into ``_SPLIT`` = 4 equal parts and enclosed again (a part's enclosure is
16 times narrower, and a cell holding a simple root leaves a gap about 1/64 of its own); a cut
that does not narrow the gap (one held by the masses' rounding) is undone and the cell is not
picked again. (Gaussian and mixture priors, :mod:`jaxpuffer.losses_convolved`, refine only the
orders that can still decide the result, :func:`refined_deciding`.) The result is an upper bound
of δ whatever the priors: a crossing, a narrow sliver or a tangency inside a cell cannot escape
its enclosure; the lower bound reports its looseness.
Measured on 256 random 4-atom pairs (b ∈ [0.05, 5], ε ∈ [0.1, 2], both orders; before the
first-order enclosure above was added, which can only narrow a cell's gap): upper − lower ≤
3e-11 relative for GG(1) (and within 1.5e-11 of the Laplace closed form), ≤ 1e-8 for GG(2) (within
4.9e-9 of the Gaussian-noise evaluator), ≤ 3e-9 for GG(3), 1.4e-9 for GG(8), 6.3e-10 for GG(1.5)
where δ ≥ 1e-6; at most 6e-12 absolute; the lower bound never above the references.

**Rounding.** Each ℓ_k is moved outward by its own bound, 32 ε_mach (1 + |ℓ_k|) + max|ℓ_k'| ·
4 ε_mach (|a| + |c| + 2|x_k|) (its value, and the rounding of y − x_k), inside the log-sum-exps, so
that a negligible far atom's large |ℓ| does not widen the cell's enclosure; the log-sum-exps add
16 ε_mach (1 + their size). The kernel's log tails are taken to be within ``_TAIL_ULPS`` ulps of
1 + |log S| (GG: ``log_gammaincc`` measured at ≤ 59 against mpmath,
:mod:`jaxpuffer.noise.kernels`), widened by the hazard times the rounding of y − x_k. The rounding
bounds carry no derivative (the search's slope is that of the enclosure itself).

The kernel supplies ``log_density``, ``log_sf``, ``log_density_decay(t, b)`` (−d/dt log g_b at
t ≥ 0, the right limit at 0) and ``decay_offsets(levels)`` (the standardised t where log g has
fallen by ``levels``: where the grid goes).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.nn import logsumexp, softmax

from ._roots import log_or_minus_inf

_EPS64 = 2.0**-52
# log g falls by these levels from one grid point to the next around each atom: 1 apart up to 8,
# then 15 % further each, to _REACH (where P(N > reach) ≤ 1.1e-35 for GG); 28 levels a side
_LEVELS = tuple(sorted({float(v) for v in range(9)} | {round(8.0 * 1.15**k, 6) for k in range(1, 17)} | {80.0}))
_REACH = 80.0
_REFINE = 8  # cells re-enclosed per round
_SPLIT = 4  # parts per re-enclosed cell
_ROUNDS = 10
# the ends of a cell's parts (:func:`_split`) that are the cell's own ends and midpoint
KNOWN_ENDS = (0, _SPLIT // 2, _SPLIT)
_TAIL_ULPS = 128.0


def _log_phi(d):
    """log((e^d − 1)/d), 0 at d = 0, without overflow: max(d, 0) + log((1 − e^{−|d|})/|d|)."""
    a = jnp.abs(d)
    safe = jnp.where(a > 0, a, 1.0)
    return jnp.where(a > 0, jnp.maximum(d, 0.0) + jnp.log(-jnp.expm1(-safe) / safe), 0.0)


def _lse(v):
    """logsumexp over the last axis, −inf (with a zero derivative) where every entry is −inf (a
    mass bound of 0)."""
    top = jnp.max(v, axis=-1, keepdims=True)
    some = jnp.isfinite(top)
    return jnp.where(some[..., 0], logsumexp(jnp.where(some, v, 0.0), axis=-1), -jnp.inf)


def _grid(kernel, x, b):
    """Sorted cell ends: the atoms and, around each, the points where log g has fallen by _LEVELS."""
    t = kernel.decay_offsets(jnp.asarray(_LEVELS, jnp.float64))  # t[0] = 0
    offsets = jnp.concatenate([-t[:0:-1], t]) * b
    return jnp.sort((x[:, None] + offsets[None, :]).reshape(-1))


def quad_masses(h, la, lc, lm, slope, err):
    """Bounds of log ∫_cell e^ℓ for ℓ concave on each cell (last axis: atoms) from its values at the
    ends and the line ℓ(m) + ℓ'(m)(y − m) above it, each off by at most ``err``: between the
    integrals of e^chord and e^line, h e^{ℓ(a)} φ(ℓ(c) − ℓ(a)) ≤ mass ≤ h e^{ℓ(m)} φ(−2|u|) e^{|u|},
    φ(d) = (e^d − 1)/d, u = ℓ'(m) h/2 (second order in h)."""
    log_h = jnp.log(jnp.where(h > 0, h, 1.0))[..., None]  # (an empty cell is masked in cell_bounds)
    u = jnp.abs(slope) * 0.5 * h[..., None]
    return log_h + lm + u + _log_phi(-2.0 * u) + err, log_h + la + _log_phi(lc - la) - err


def _tables(kernel, x, b, ends):
    """What the bounds need of the kernel for the cells between consecutive ``ends`` (last axis; no
    atom inside a cell), per cell and atom: log g at the ends and the midpoint, its slope at the
    midpoint, and bounds of the atom's log mass on the cell. Each end's values
    are computed once and shared by the two cells it bounds (and by both orders of a pair)."""
    ya, yc = ends[..., :-1], ends[..., 1:]
    m = 0.5 * (ya + yc)
    t_pt, t_m = ends[..., None] - x, m[..., None] - x  # (..., points, atoms), (..., cells, atoms)
    l_pt, lm = kernel.log_density(t_pt, b), kernel.log_density(t_m, b)
    la, lc = l_pt[..., :-1, :], l_pt[..., 1:, :]
    slope = -jnp.sign(t_m) * kernel.log_density_decay(jnp.abs(t_m), b)  # ℓ_k'(m)
    # each ℓ_k's rounding error on the cell: its value's, and |ℓ_k'| (largest at an end, ℓ_k concave)
    # times the rounding of y − x_k
    decay_pt = kernel.log_density_decay(*jax.lax.stop_gradient((jnp.abs(t_pt), b)))  # (rounding bounds carry no derivative)
    steepest = jnp.maximum(decay_pt[..., :-1, :], decay_pt[..., 1:, :])
    size = jnp.maximum(jnp.maximum(jnp.abs(la), jnp.abs(lc)), jnp.abs(lm))
    err = jax.lax.stop_gradient(32.0 * _EPS64 * (1.0 + size) + steepest * 4.0 * _EPS64 * ((jnp.abs(ya) + jnp.abs(yc))[..., None] + 2.0 * jnp.abs(x)))
    h = yc - ya
    # each atom's mass on each cell, two enclosures intersected. (i) The log tails: S(t₁) − S(t₂) =
    # S(t₁)(1 − e^{log S(t₂) − log S(t₁)}) (t₁ ≤ t₂ the ends' distances to the atom), S off by at most
    # the tail's own error bound plus the hazard times the rounding of y − x; it loses accuracy as a
    # cell narrows. (ii) ∫ e^ℓ between the integrals of e^chord and e^tangent(m) (ℓ concave on the
    # cell), second order in h: h e^{ℓ(a)} φ(ℓ(c) − ℓ(a)) ≤ mass ≤ h e^{ℓ(m)} φ(−2|u|) e^{|u|}, with
    # φ(d) = (e^d − 1)/d and u = ℓ'(m) h/2.
    ls = kernel.log_sf(jnp.abs(t_pt), b)
    tail_err = jax.lax.stop_gradient(_TAIL_ULPS * _EPS64 * (1.0 + jnp.abs(ls)) + jnp.exp(l_pt - ls) * 4.0 * _EPS64 * (jnp.abs(ends)[..., None] + jnp.abs(x)))
    near_a = jnp.abs(t_pt[..., :-1, :]) <= jnp.abs(t_pt[..., 1:, :])
    pick = lambda v: (jnp.where(near_a, v[..., :-1, :], v[..., 1:, :]), jnp.where(near_a, v[..., 1:, :], v[..., :-1, :]))  # noqa: E731
    (ls1, ls2), (e1, e2) = pick(ls), pick(tail_err)
    tail_up = ls1 + e1 + log_or_minus_inf(-jnp.expm1(jnp.minimum(ls2 - ls1 - e1 - e2, 0.0)))
    tail_dn = ls1 - e1 + log_or_minus_inf(jnp.maximum(-jnp.expm1(jnp.minimum(ls2 - ls1 + e1 + e2, 0.0)), 0.0))
    quad_up, quad_dn = quad_masses(h, la, lc, lm, slope, err)
    m_up, m_dn = jnp.minimum(tail_up, quad_up), jnp.maximum(tail_dn, quad_dn)
    # each atom's log-density relative to the cell's nearest atom's, D_k = ℓ_k − ℓ_ref: monotone on
    # the cell (no atom inside it, log g concave and symmetric), so its end values bound it
    near = jnp.argmax(lm, axis=-1)[..., None]
    rel = lambda v: v - jnp.take_along_axis(v, near, axis=-1)  # noqa: E731
    d_a, d_c, d_err = rel(la), rel(lc), err + jnp.take_along_axis(err, near, axis=-1)
    d_up, d_dn = jnp.maximum(d_a, d_c) + d_err, jnp.minimum(d_a, d_c) - d_err
    return dict(h=h, la=la, lc=lc, lm=lm, slope=slope, m_up=m_up, m_dn=m_dn, err=err, d_up=d_up, d_dn=d_dn)


def cell_bounds(tab, lw_p, lw_q, eps):
    """(upper, lower) bounds of ∫_cell [p − e^ε q]_+ per cell, flattened (see the module docstring).
    ``tab`` (:func:`_tables`) may leave out the first-order enclosure (``d_up``, ``d_dn``): its
    monotone-D argument is for atoms."""
    h, la, lc, lm, slope, err = tab["h"], tab["la"], tab["lc"], tab["lm"], tab["slope"], tab["err"]
    half = 0.5 * h[..., None]
    chord_mid = 0.5 * (la + lc)
    chord_slope = (lc - la) / jnp.where(half > 0, 2.0 * half, 1.0)

    def enclose(lw):
        # each ℓ_k moved up (tangents) or down (chords) by its rounding bound
        v_a = logsumexp(lw + lm + err - slope * half, axis=-1)  # the tangents' LSE at a and c
        v_c = logsumexp(lw + lm + err + slope * half, axis=-1)
        w_m = logsumexp(lw + chord_mid - err, axis=-1)  # the chords' LSE at m, and its slope
        weight = softmax(lw + chord_mid - err, axis=-1)
        w_s = jnp.sum(weight * chord_slope, axis=-1)
        # the slope's rounding (a weighted sum of n terms) moves the tangent's ends by at most
        # (n + 2) ε_mach Σ weight |chord slope| h/2: taken off, so the tangent stays below W
        slack = (lw.shape[-1] + 2) * _EPS64 * jnp.sum(weight * jnp.abs(chord_slope), axis=-1) * h * 0.5
        return v_a, v_c, w_m - w_s * h * 0.5 - slack, w_m + w_s * h * 0.5 - slack

    vpa, vpc, wpa, wpc = enclose(lw_p)
    vqa, vqc, wqa, wqc = enclose(lw_q)
    big = lambda *v: functools.reduce(jnp.maximum, [jnp.abs(u) for u in v])  # noqa: E731
    eta = 16.0 * _EPS64 * (1.0 + big(vpa, vpc, wqa, wqc, wpa, wpc, vqa, vqc))  # the log-sum-exps' own rounding
    # second order: tangents and chords of log p and log q taken separately
    r_hi = jnp.maximum(vpa - wqa, vpc - wqc) - eps + eta
    r_lo = jnp.minimum(wpa - vqa, wpc - vqc) - eps - eta
    if "d_up" in tab:
        # first order in the log-ratio itself: r = LSE(lw_p + D) − LSE(lw_q + D) with D_k = ℓ_k − ℓ_ref
        # in [d_dn, d_up] on the cell; tight where the atoms are close on the noise's scale (b ≫
        # their spread, small ε), where the separate second-order bounds are each wider than ε
        d_up, d_dn = tab["d_up"], tab["d_dn"]
        lse_pu, lse_pd, lse_qu, lse_qd = (logsumexp(lw + d, axis=-1) for lw, d in ((lw_p, d_up), (lw_p, d_dn), (lw_q, d_up), (lw_q, d_dn)))
        eta_d = 16.0 * _EPS64 * (1.0 + big(lse_pu, lse_pd, lse_qu, lse_qd))
        r_hi = jnp.minimum(r_hi, lse_pu - lse_qd - eps + eta_d)
        r_lo = jnp.maximum(r_lo, lse_pd - lse_qu - eps - eta_d)
    m_up, m_dn = tab["m_up"], tab["m_dn"]  # log cell masses per atom, rounded outward
    grow, shrink = 1.0 + 16.0 * _EPS64, 1.0 - 16.0 * _EPS64  # the log-sum-exp of the masses
    mass = lambda lw, m: jnp.exp(_lse(lw + m))  # noqa: E731
    p_up, p_dn = grow * mass(lw_p, m_up), shrink * mass(lw_p, m_dn)
    q_up, q_dn = grow * mass(lw_q, m_up), shrink * mass(lw_q, m_dn)
    e_eps = jnp.exp(eps)
    upper = jnp.minimum(
        p_up * -jnp.expm1(-jnp.maximum(r_hi, 0.0)),
        p_up - e_eps * q_dn + p_up * jnp.maximum(jnp.expm1(jnp.minimum(-r_lo, 700.0)), 0.0),
    )
    lower = jnp.maximum(jnp.maximum(p_dn * -jnp.expm1(-jnp.maximum(r_lo, 0.0)), p_dn - e_eps * q_up), 0.0)
    upper = jnp.where(h > 0, grow * jnp.maximum(upper, lower), 0.0)
    return upper.reshape(-1), jnp.where(h > 0, lower, 0.0).reshape(-1)


def _split(a, c):
    """The ends of the cells [a, c] (picked,) cut into _SPLIT (even) equal parts, (picked, _SPLIT + 1):
    the first, middle and last are the cell's ends and midpoint exactly as the tables formed them
    (``0.5 * (a + c)``), so that a table may reuse its values there (:data:`KNOWN_ENDS`)."""
    frac = jnp.arange(_SPLIT + 1, dtype=jnp.float64) / _SPLIT
    return (a[:, None] + (c - a)[:, None] * frac).at[:, -1].set(c).at[:, _SPLIT // 2].set(0.5 * (a + c))


def refined(tables, eps, ends, coarse, lw_p, lw_q, reuse=None):
    """(upper, lower) bounds of δ for one order after _ROUNDS rounds of re-enclosing the loosest
    cells, from the coarse grid's bounds ``coarse``; ``tables(ends)`` gives the cells' tables.
    ``reuse``: the coarse tables' ``"reuse"`` entry, where ``tables`` keeps, per cell, what its
    parts can take over (values at the cell's ends and midpoint, which :func:`_split` keeps as the
    parts' ends :data:`KNOWN_ENDS`): a picked cell's entry is passed as ``tables(parts, parent)``,
    which then evaluates only the new points (the other ends of its parts, and their midpoints)."""
    room = _ROUNDS * _REFINE * _SPLIT  # every round's parts; a slot not yet used is an empty cell
    pad = lambda v: jnp.concatenate([v, jnp.zeros((room, *v.shape[1:]), v.dtype)])  # noqa: E731
    first = ends.size - 1

    def refine(i, state):
        ya, yc, upper, lower, open_gap, kept_values = state
        pick = jax.lax.top_k(open_gap, _REFINE)[1]  # the loosest cells still worth cutting
        parts = _split(ya[pick], yc[pick])
        if reuse is None:
            tab = tables(parts)
        else:
            tab = tables(parts, jax.tree.map(lambda v: v[pick], kept_values))
        su, sl = cell_bounds(tab, lw_p, lw_q, eps)
        # a cut that does not narrow a cell's gap (one held by the masses' rounding, which cutting
        # does not shrink) is dropped, and the cell is not picked again
        helps = jnp.sum((su - sl).reshape(_REFINE, _SPLIT), axis=1) < (upper - lower)[pick]
        kept = jnp.repeat(helps, _SPLIT)
        at = (first + i * _REFINE * _SPLIT,)

        def put(v, new):
            v = v.at[pick].set(jnp.where(helps, 0.0, v[pick]))
            return jax.lax.dynamic_update_slice(v, jnp.where(kept, new, 0.0), at)

        if reuse is not None:  # (a dropped cell's parts are never picked: their entries need no mask)
            kept_values = jax.tree.map(lambda v, new: jax.lax.dynamic_update_slice(v, new.reshape(-1, *v.shape[1:]), at + (0,) * (v.ndim - 1)), kept_values, tab["reuse"])
        new = (put(ya, parts[:, :-1].reshape(-1)), put(yc, parts[:, 1:].reshape(-1)), put(upper, su), put(lower, sl))
        return (*new, put(open_gap.at[pick].set(0.0), su - sl), kept_values)

    kept_values = None if reuse is None else jax.tree.map(pad, reuse)
    state = (pad(ends[:-1]), pad(ends[1:]), pad(coarse[0]), pad(coarse[1]), pad(coarse[0] - coarse[1]), kept_values)
    _, _, upper, lower, _, _ = jax.lax.fori_loop(0, _ROUNDS, refine, state)
    return jnp.sum(upper) * (1.0 + upper.size * _EPS64), jnp.sum(lower) * (1.0 - upper.size * _EPS64)


def refined_deciding(tables, eps, ends, coarse, orders, symmetric, reuse=None):
    """(upper, lower) bounds of δ for both orders (2,) after re-enclosing the loosest cells of the
    orders that can still decide the result, ``_REFINE`` cells a round for each such order or 2 ×
    ``_REFINE`` for the one that alone does, until each has had the ``_ROUNDS`` × ``_REFINE`` cells
    that :func:`refined` gives an order; then the rounds left are skipped (``lax.cond``: a saving
    for a pair evaluated alone, as :mod:`jaxpuffer.losses_convolved` evaluates them; under ``vmap``
    both branches run, and the discrete evaluator, vmapped, keeps :func:`refined`: there this
    form ran 1.8x slower, and its rounds of 2 × ``_REFINE`` cells, cut fewer levels deep, left
    its scales 2e-9 looser). From the coarse grid's bounds ``coarse`` (upper, lower), each
    (2, cells); ``orders`` (2, 2, atoms) the log weights (p, q) of each order; ``tables``,
    ``reuse``: as :func:`refined`.

    An order stops deciding where symmetric and its upper bound is below the other's lower bound
    (it cannot be the maximum), or where the pair is not symmetric and it is order j→i. Each order
    keeps its own cells (row), so each row's bounds cover the line once whichever cells were cut:
    the choice of cells moves the bounds' tightness, never their validity."""
    picks = 2 * _REFINE  # cells cut a round: _REFINE of each order, or all of the one that decides
    budget = _ROUNDS * _REFINE  # cells cut for an order that decides, as many as it had alone
    room = (budget + picks) * _SPLIT  # each order's parts, in turn; a slot not yet used is an empty cell
    pad = lambda v: jnp.concatenate([v, jnp.zeros((2, room, *v.shape[2:]), v.dtype)], axis=1)  # noqa: E731
    per_order = lambda v: jnp.broadcast_to(v, (2, *v.shape))  # noqa: E731
    first = ends.size - 1
    alone = jnp.array([True, False])

    def refine(i, state):
        ya, yc, upper, lower, open_gap, kept_values, done = state
        top, bottom = jnp.sum(upper, axis=1), jnp.sum(lower, axis=1)
        # the orders that may be the result (and have cells left in their budget)
        wanting = jnp.where(symmetric, top >= jnp.max(bottom), alone) & (done < budget)

        def cut(state):
            ya, yc, upper, lower, open_gap, kept_values, done = state
            best = jax.lax.top_k(open_gap, picks)[1]  # the loosest cells still worth cutting, per order
            both = wanting[0] & wanting[1]
            only = jnp.argmax(wanting)
            row = jnp.where(both, jnp.repeat(jnp.arange(2), _REFINE), only)
            cell = jnp.where(both, jnp.concatenate([best[0, :_REFINE], best[1, :_REFINE]]), best[only])
            parts = _split(ya[row, cell], yc[row, cell])
            tab = tables(parts) if reuse is None else tables(parts, jax.tree.map(lambda v: v[row, cell], kept_values))
            lw = orders[row][:, :, None, :]  # (picked, p/q, part, atoms)
            su, sl = cell_bounds(tab, lw[:, 0], lw[:, 1], eps)
            # a cut that does not narrow a cell's gap (one held by the masses' rounding, which
            # cutting does not shrink) is dropped, and the cell is not picked again
            helps = jnp.sum((su - sl).reshape(picks, _SPLIT), axis=1) < (upper - lower)[row, cell]
            kept = jnp.repeat(helps, _SPLIT)
            rank = jnp.where(both, jnp.arange(picks) % _REFINE, jnp.arange(picks))  # each order's parts follow its last
            at = (row[:, None], (first + (done[row] + rank) * _SPLIT)[:, None] + jnp.arange(_SPLIT))

            def put(v, new):
                v = v.at[row, cell].set(jnp.where(helps, 0.0, v[row, cell]))
                return v.at[at].set(jnp.where(kept, new, 0.0).reshape(picks, _SPLIT))

            if reuse is not None:  # (a dropped cell's parts are never picked: their entries need no mask)
                kept_values = jax.tree.map(lambda v, new: v.at[at].set(new.reshape(picks, _SPLIT, *v.shape[2:])), kept_values, tab["reuse"])
            new = (put(ya, parts[:, :-1].reshape(-1)), put(yc, parts[:, 1:].reshape(-1)), put(upper, su), put(lower, sl))
            return (*new, put(open_gap.at[row, cell].set(0.0), su - sl), kept_values, done.at[row].add(1))

        # (a pair evaluated alone, as losses_convolved's are, skips the rounds it does not need)
        return jax.lax.cond(jnp.any(wanting), cut, lambda state: state, state)

    kept_values = None if reuse is None else jax.tree.map(lambda v: pad(per_order(v)), reuse)
    state = (pad(per_order(ends[:-1])), pad(per_order(ends[1:])), pad(coarse[0]), pad(coarse[1]), pad(coarse[0] - coarse[1]),
             kept_values, jnp.zeros(2, jnp.int32))
    _, _, upper, lower, _, _, _ = jax.lax.fori_loop(0, _ROUNDS, refine, state)
    n = upper.shape[1]
    return jnp.sum(upper, axis=1) * (1.0 + n * _EPS64), jnp.sum(lower, axis=1) * (1.0 - n * _EPS64)


def hockey(kernel, x, p, q, b, eps, symmetric):
    """(upper bound, lower bound) of ∫ [p ⊛ g_b − e^ε q ⊛ g_b]_+ dy for one pair, the max over both
    orders where ``symmetric``: x, p, q (n,) atoms and pmfs, b > 0, ε scalars (see the module
    docstring). The coarse grid's kernel values serve both orders."""
    lw_p, lw_q = log_or_minus_inf(p), log_or_minus_inf(q)  # (atoms of mass 0: −∞)
    ends = _grid(kernel, x, b)
    tab = _tables(kernel, x, b, ends)
    orders = jnp.stack([jnp.stack([lw_p, lw_q]), jnp.stack([lw_q, lw_p])])
    coarse = jax.vmap(lambda lw: cell_bounds(tab, lw[0], lw[1], eps))(orders)
    tables = functools.partial(_tables, kernel, x, b)
    up, dn = jax.vmap(lambda c, lw: refined(tables, eps, ends, c, lw[0], lw[1]))(coarse, orders)
    # P's mass beyond the grid: ≤ P(N > reach) on each side
    reach = kernel.decay_offsets(jnp.asarray(_REACH, jnp.float64))
    up = up + 2.0 * jnp.exp(kernel.log_sf(reach * b, b)) * (1.0 + 1e-6)
    up = jnp.minimum(up, 1.0)
    return jnp.where(symmetric, jnp.max(up), up[0]), jnp.where(symmetric, jnp.max(dn), dn[0])
