"""Privacy loss δ(b) for discrete priors (Kantorovich paper; MATH.md §1, §3, §8).

A discrete prior on atoms x_1 ≤ … ≤ x_n released with noise N is a finite mixture of noise
kernels, p(y) = Σ_k p_k k_b(y − x_k). Arrays carry the atoms on their last axis; ``p`` and ``q``
are the pmfs of s_i and s_j on one aligned support ``x``.

**Exact, Laplace noise — closed form.** Between consecutive atoms x_m ≤ y ≤ x_{m+1}, with
t = y − x_m and L = x_{m+1} − x_m,

    2b·p(y) = A_m e^{−t/b} + B_{m+1} e^{−(L − t)/b},
    A_m = Σ_{k ≤ m} p_k e^{−(x_m − x_k)/b},   B_m = Σ_{k ≥ m} p_k e^{−(x_k − x_m)/b},

(A and B by an associative scan of positive terms: no cancellation), and likewise for q. So on
each segment p − e^ε q = (α e^{−t/b} + β e^{−(L−t)/b})/2b with α = A^p − e^ε A^q,
β = B^p − e^ε B^q: positive on the whole segment (α, β ≥ 0), nowhere (α, β ≤ 0), or on one side
of the single root t* = (L + b log(−α/β))/2. Beyond the outer atoms it is an exponential of
constant sign. δ = Σ of [P − e^ε Q] over those pieces, each piece's masses in closed form
(expm1, no cancellation); it is rounded up by ``_ULPS`` ulps of the masses involved and of every
segment whose α or β sign is within rounding of zero (not where both weights are exactly 0: that
zero is exact).

**Exact, Gaussian noise — certified grid.** r(y) = log p(y) − log q(y) − ε is evaluated (log-sum-exp)
on ``_GRID`` points over [x_1 − Tθ, x_n + Tθ], T = 12 (P's mass beyond, < 2·1.8e-33, is added to
δ); each sign change is refined by safeguarded Newton steps (r' = (m_p(y) − m_q(y))/θ², the
posterior means of the atom), and δ = Σ [P − e^ε Q] over the positive pieces, in Φ-differences
(:func:`~jaxpuffer.noise.normal_mass`; rounded up by its error bound, 64 + 2z² ulps of each
atom's mass, and by ``_ULPS`` ulps of the sums).
Certification: f = p − e^ε q = Σ c_k φ_θ(y − x_k) has at most S⁻(c) zeros (the Gaussian kernel is
totally positive; S⁻ = sign changes of c_k = p_k − e^ε q_k). When the grid finds S⁻(c) sign
changes, every root is found, one per cell, and δ is exact. Otherwise every cell [a, c] is proven
by an enclosure of r. Up to constants, log p(y) = L_p(y) − y²/2θ² with
L_p(y) = log Σ p_k e^{(x_k y − x_k²/2)/θ²} convex (a log-sum-exp of affine functions), L_p' =
m_p(y)/θ² (m_p the posterior mean of the atom), and likewise for q; so r = L_p − L_q − ε is a
difference of convex functions. On the cell L_p lies below its chord and above its tangents at a
and c, and L_q too, which gives

    r ≤ min(r(a) + s·g₁, r(c) + (h − s)·g₂),   g₁ = Δlog p/h − (log q)'(a) + h/2θ²,
                                               g₂ = (log q)'(c) − Δlog p/h + h/2θ²,

(s = y − a, h = c − a; the lower bound with p and q exchanged), maximised in closed form (the
minimum of two lines), and r' = L_p' − L_q' ≥ (m_p(a) − m_q(c))/θ² (≤ (m_p(c) − m_q(a))/θ²), so
a cell whose posterior means separate holds one monotone root. The enclosure is exact where the
posteriors do not move across the cell and loose only where they do. A cell it cannot prove to
have the sign pattern of its ends (a peak above 0 between negative ends, a dip between positive
ends, a sign change that may hide three roots) is subdivided — the ``_REFINE_CELLS`` largest such
cells into ``_REFINE_POINTS`` points each — and analysed again; a subcell still unproven adds to
δ, with U ≥ sup r and L ≤ inf r its enclosure's bounds: under a peak P·(1 − e^{−U})_+ (as
∫ [p − e^ε q]_+ = ∫ p (1 − e^{−r})_+), over a dip e^ε Q·(1 − e^{L})_+ (beside its P − e^ε Q, as
∫ f_+ = ∫ f + ∫ f_−), and where three roots may hide the lesser of P + e^ε Q and
P·(1 − e^{−U})_+ + e^ε Q(piece). On the pairs that have such subcells (few: they are gathered,
:func:`jaxpuffer._parallel.on_lanes`), the ``_REFINE_AGAIN`` largest are subdivided once more,
and each of their parts adds P − e^ε Q where L > 0, else P·(1 − e^{−U})_+ (valid on any cell,
whatever its roots; tight where the parts are narrow); the lesser of the two results is kept.
The result is never below the true δ.

The same regions give the *probabilistic* δ of the Kantorovich paper's Theorem 3 (δ-approximation):
P_{Y∼p}(log p(Y)/q(Y) > ε) = P(A), A = {p > e^ε q}, which is ≥ the hockey-stick P(A) − e^ε Q(A).

**Exact, other log-concave kernels (generalized Gaussian GG(p), p ≥ 1).** No closed form and no
variation-diminishing count: the certified cell enclosure of :mod:`jaxpuffer.losses_enclosure`
(second-order bounds of log p − log q on cells cut at every atom, refined where they straddle 0),
whose upper bound is returned.

**Coupling bound (Appendix E of the Gaussian-priors paper).** For any coupling π of the priors,
δ ≤ Σ π(x, x') h(|x − x'|) with h the hockey-stick of the noise against its shift: Laplace
(1 − e^{ε − w/b})_+, Gaussian the analytic Gaussian mechanism. With π = π* (quantile plan).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.nn import logsumexp

from . import losses_enclosure as enclosure
from ._parallel import on_lanes
from .couplings import quantile_masses, vmap_pairs
from ._roots import cell_upper, log_or_minus_inf, newton_bracket
from .noise import kernels, normal_mass, normal_mass_ulps

_ULPS = 64
_EPS64 = float(jnp.finfo(jnp.float64).eps)
_GRID = 1024  # grid points for Gaussian noise
_TAIL_SIGMAS = 12.0
_TAIL_MASS = 1.8e-33  # ≥ Φ(−12)
_NEWTON_STEPS = 24  # safeguarded Newton steps per root (only the cells with a sign change)
_BISECTIONS = 40  # then bisection, where Newton stalled (the root's bracket is held in δ)
_REFINE_CELLS = 8  # unproven grid cells subdivided per pair and order
_REFINE_AGAIN = (2, 129)  # unproven subcells subdivided again (bounded by the enclosure alone), into so many points
_REFINE_POINTS = 33  # points per subdivided cell


# ----------------------------------------------------------------------------- no noise


def atom_hockey(x, p, q, eps):
    """Σ_x [p(x) − e^ε q(x)]_+ of the priors themselves (b = 0), atoms at equal points merged."""
    n = x.shape[-1]
    group = jnp.cumsum(jnp.concatenate([jnp.zeros(x.shape[:-1] + (1,), int), (jnp.diff(x, axis=-1) > 0).astype(int)], axis=-1), axis=-1)
    onehot = group[..., :, None] == jnp.arange(n)
    pg = jnp.sum(jnp.where(onehot, p[..., :, None], 0.0), axis=-2)
    qg = jnp.sum(jnp.where(onehot, q[..., :, None], 0.0), axis=-2)
    e_eps = jnp.exp(eps)[..., None]
    excess, size = pg - e_eps * qg, _ULPS * _EPS64 * (pg + e_eps * qg)
    # rounding slack only where the atom counts or its sign is within rounding of zero
    return jnp.minimum(jnp.sum(jnp.maximum(excess, 0.0) + jnp.where(excess > -size, size, 0.0), axis=-1), 1.0)


# ----------------------------------------------------------------------------- Laplace noise


def _decayed_sums(weights, decay):
    """y_m = w_m + decay_m y_{m−1} along the last axis (decay_0 unused), by an associative scan."""

    def combine(left, right):
        return left[0] * right[0], right[0] * left[1] + right[1]

    return jax.lax.associative_scan(combine, (decay, weights), axis=-1)[1]


def _laplace_hockey(x, p, q, b, eps):
    """∫ [p ⊛ L(b) − e^ε q ⊛ L(b)]_+ dy in closed form, one order; x, p, q (..., n), b, eps (...)."""
    b_, e_eps = b[..., None], jnp.exp(eps)[..., None]
    gap = jnp.diff(x, axis=-1)
    decay = jnp.exp(-gap / b_)
    zero = jnp.zeros(x.shape[:-1] + (1,), x.dtype)
    left = jnp.concatenate([zero, decay], axis=-1)
    right = jnp.flip(jnp.concatenate([decay, zero], axis=-1), axis=-1)
    weights = jnp.stack([p, q])
    A = _decayed_sums(weights, jnp.broadcast_to(left, weights.shape))
    B = jnp.flip(_decayed_sums(jnp.flip(weights, -1), jnp.broadcast_to(right, weights.shape)), -1)
    (Ap, Aq), (Bp, Bq) = A, B
    tol = _ULPS * _EPS64
    # tails: ½ B_1 beyond the first atom, ½ A_n beyond the last
    tails_p = 0.5 * jnp.stack([Bp[..., 0], Ap[..., -1]])
    tails_q = 0.5 * jnp.stack([Bq[..., 0], Aq[..., -1]])
    tails_in = tails_p - e_eps[..., 0] * tails_q > 0
    # a sign within rounding of zero is ambiguous; an exact 0 of two zero weights is not
    within = lambda diff, scale: (jnp.abs(diff) <= tol * scale) & (scale > 0)  # noqa: E731
    tails_amb = within(tails_p - e_eps[..., 0] * tails_q, tails_p + e_eps[..., 0] * tails_q)
    # segments m = 1 … n−1
    ap, aq, bp, bq = Ap[..., :-1], Aq[..., :-1], Bp[..., 1:], Bq[..., 1:]
    alpha, beta = ap - e_eps * aq, bp - e_eps * bq
    both = (alpha >= 0) & (beta >= 0)
    split = (alpha > 0) != (beta > 0)
    split &= (alpha != 0) & (beta != 0)
    ratio = jnp.log(jnp.where(split, jnp.abs(alpha), 1.0)) - jnp.log(jnp.where(split, jnp.abs(beta), 1.0))
    t_star = jnp.clip(0.5 * (gap + b_ * ratio), 0.0, gap)
    t1 = jnp.where(both | ~split | (alpha > 0), 0.0, t_star)
    t2 = jnp.where(both, gap, jnp.where(split, jnp.where(alpha > 0, t_star, gap), 0.0))
    width = -jnp.expm1(-(t2 - t1) / b_)  # 1 − e^{−(t2 − t1)/b}
    from_left, from_right = jnp.exp(-t1 / b_) * width, jnp.exp(-(gap - t2) / b_) * width
    mass_p = 0.5 * (ap * from_left + bp * from_right)
    mass_q = 0.5 * (aq * from_left + bq * from_right)
    seg_total = -0.5 * jnp.expm1(-gap / b_) * (ap + bp + e_eps * (aq + bq))
    ambiguous = within(alpha, ap + e_eps * aq) | within(beta, bp + e_eps * bq)
    value = jnp.sum(jnp.maximum(mass_p - e_eps * mass_q, 0.0), axis=-1)
    value += jnp.sum(jnp.where(tails_in, tails_p - e_eps[..., 0] * tails_q, 0.0), axis=0)
    slack = jnp.sum(mass_p + e_eps * mass_q + jnp.where(ambiguous, seg_total, 0.0), axis=-1)
    slack += jnp.sum(jnp.where(tails_in | tails_amb, tails_p + e_eps[..., 0] * tails_q, 0.0), axis=0)
    return jnp.minimum(value + tol * slack, 1.0)


# ----------------------------------------------------------------------------- Gaussian noise


def _sign_changes(c):
    """S⁻(c): sign changes of the nonzero entries of a 1-D vector."""
    s = jnp.sign(c)
    nonzero = s != 0
    # carry the last nonzero sign forward
    last = jax.lax.associative_scan(lambda a, b: jnp.where(b != 0, b, a), s)
    prev = jnp.concatenate([jnp.zeros(1, s.dtype), last[:-1]])
    return jnp.sum(nonzero & (prev != 0) & (s != prev))


def _root_brackets(fun_and_slope, a, c, fa, fc, change, pool):
    """Brackets [lo, hi] (lo on a's side) of the roots in the cells [a, c] where ``change``, the
    larger of r at their ends (≥ 0), and which cells were in the pool: the first ``pool`` such
    cells (the roots number at most S⁻(c) < atoms, so the pool holds them all but where rounding
    adds sign changes); other cells get lo = hi = a. Safeguarded Newton then bisection: the
    flanks of a near-tangent bump left 8 Newton steps 1% off in δ (harness seed 23)."""
    shape, flat = change.shape, lambda t: t.reshape(-1)  # noqa: E731
    count = jnp.sum(change)
    idx = jnp.nonzero(flat(change), size=pool, fill_value=0)[0]
    idx = jnp.where(jnp.arange(pool) < count, idx, flat(change).size)  # past the end: dropped
    a_k, c_k, fa_k, fc_k = (flat(t)[jnp.minimum(idx, flat(t).size - 1)] for t in (a, c, fa, fc))
    start = a_k - fa_k * (c_k - a_k) / jnp.where(fc_k != fa_k, fc_k - fa_k, 1.0)
    lo_k, hi_k, f_lo, f_hi = newton_bracket(fun_and_slope, a_k, c_k, fa_k, fc_k, _NEWTON_STEPS, start, _BISECTIONS)
    scatter = lambda v, fill: jax.lax.stop_gradient(flat(fill).at[idx].set(v, mode="drop").reshape(shape))  # noqa: E731
    in_pool = jnp.zeros(flat(change).shape, bool).at[idx].set(True, mode="drop").reshape(shape)
    top = jnp.maximum(jnp.maximum(f_lo, f_hi), 0.0)  # f at the bracket's positive end
    return scatter(lo_k, a), scatter(hi_k, a), scatter(top, jnp.zeros_like(a)), in_pool


class _Cells:
    """The analysis of one pair and order under Gaussian noise of std θ > 0, cell by cell
    (module docstring): :meth:`cells` with roots and proofs of sign, :meth:`bounded` by the
    enclosure alone."""

    def __init__(self, x, p, q, theta, eps):
        self.x, self.p, self.q, self.theta, self.eps = x, p, q, theta, eps
        self.e_eps = jnp.exp(eps)
        self.log_w = (log_or_minus_inf(p), log_or_minus_inf(q))

    def evaluate(self, y):
        """log Σ w_k φ_θ(y − x_k) (less the constant log θ√2π) and the posterior mean of the atom,
        for w = p and w = q."""
        out = []
        for log_w in self.log_w:
            a = log_w - 0.5 * ((y[..., None] - self.x) / self.theta) ** 2
            lse = logsumexp(a, axis=-1)
            out += [lse, jnp.sum(jnp.exp(a - lse[..., None]) * self.x, axis=-1)]
        return out

    def r_and_slope(self, y):
        lp, mp, lq, mq = self.evaluate(y)
        return lp - lq - self.eps, (mp - mq) / self.theta**2

    def masses(self, u, v):
        """P and Q masses of (u, v], and a bound on their rounding error in units of 2⁻⁵² (of
        P + e^ε Q; normal_mass_ulps of each atom's mass)."""
        lo, hi = (u[..., None] - self.x) / self.theta, (v[..., None] - self.x) / self.theta
        cell = normal_mass(lo, hi)
        error = jnp.sum((self.p + self.e_eps * self.q) * cell * normal_mass_ulps(lo, hi), axis=-1)
        return jnp.sum(self.p * cell, axis=-1), jnp.sum(self.q * cell, axis=-1), error

    def enclosure(self, y, values):
        """Per cell of the points y, from ``values`` = :meth:`evaluate` there: the upper and lower
        bounds of r on it (the convex-minus-convex enclosure, module docstring) and the margin
        for their rounding."""
        lp, mp, lq, mq = values
        theta = self.theta
        r = lp - lq - self.eps
        h = jax.lax.stop_gradient(y[..., 1:] - y[..., :-1])
        k = h / (2.0 * theta**2)
        dp, dq = (mp - y) / theta**2, (mq - y) / theta**2  # (log p)', (log q)'
        slope_p = (lp[..., 1:] - lp[..., :-1]) / h
        slope_q = (lq[..., 1:] - lq[..., :-1]) / h
        ra, rc = r[..., :-1], r[..., 1:]
        upper = cell_upper(h, ra, rc, slope_p - dq[..., :-1] + k, dq[..., 1:] - slope_p + k)
        lower = -cell_upper(h, -ra, -rc, slope_q - dp[..., :-1] + k, dp[..., 1:] - slope_q + k)
        ends = lambda t: jnp.abs(t[..., :-1]) + jnp.abs(t[..., 1:])  # noqa: E731
        size = ends(lp) + ends(lq) + jnp.abs(self.eps) + h * (ends(dp) + ends(dq) + k)
        return upper, lower, _ULPS * _EPS64 * size

    @staticmethod
    def share(sup, margin):
        """(1 − e^{−s})_+ for s = sup + margin ≥ sup r, rounded up: ∫ p (1 − e^{−r})_+ ≤ P·that."""
        return -jnp.expm1(-jnp.maximum(sup + margin, 0.0)) * (1.0 + _ULPS * _EPS64)

    def bounded(self, y):
        """Per cell of the points y, from the enclosure alone (no roots): bounds of its part of
        the hockey-stick — P − e^ε Q where r > 0 is proven, else P·(1 − e^{−sup r}) — and of
        P(A), P where sup r may be > 0; each rounded up."""
        upper, lower, margin = self.enclosure(y, self.evaluate(y))
        cell_p, cell_q, error = self.masses(y[..., :-1], y[..., 1:])
        rounding = _EPS64 * (error + _ULPS * (cell_p + self.e_eps * cell_q))
        hockey = jnp.where(lower - margin > 0, jnp.maximum(cell_p - self.e_eps * cell_q, 0.0), cell_p * self.share(upper, margin)) + rounding
        return hockey, jnp.where(upper + margin > 0, cell_p + rounding, 0.0)

    def cells(self, y):
        """Per cell of the ascending points y (last axis): P and Q masses of its positive piece,
        the P mass held by its root's bracket, the slack it needs where the enclosure does not
        prove its sign pattern (of P(A), and of the hockey-stick), a bound on the rounding error of
        its piece's masses, whether it needs slack, whether its ends' signs differ, and how much
        its subdivision could recover (the cells picked for it)."""
        values = self.evaluate(y)
        lp, mp, lq, mq = values
        r = lp - lq - self.eps
        pos = r > 0
        ra, rc, a, c = r[..., :-1], r[..., 1:], y[..., :-1], y[..., 1:]
        change = pos[..., :-1] != pos[..., 1:]
        lo, hi, top, in_pool = _root_brackets(self.r_and_slope, a, c, ra, rc, change, self.x.shape[-1] + 2)
        # the positive piece [u, v] of each cell stops at its root's bracket, whose P mass is held
        u = jnp.where(pos[..., :-1], a, hi)
        v = jnp.where(pos[..., 1:], c, lo)
        has_piece = pos[..., :-1] | pos[..., 1:]
        piece_p, piece_q, piece_error = self.masses(u, v)
        cell_p, cell_q, cell_error = self.masses(a, c)
        # on the bracket ∫ [p − e^ε q]_+ ≤ P·(1 − e^{−sup r}), sup r ≤ r(positive end) + |r'|·width,
        # |r'| = |m_p − m_q|/θ² ≤ (x_n − x_1)/θ²
        sup_r = top + (hi - lo) * (self.x[-1] - self.x[0]) / self.theta**2
        held = jnp.where(change, self.masses(lo, hi)[0] * -jnp.expm1(-sup_r), 0.0)
        upper, lower, margin = self.enclosure(y, values)
        mean_margin = _ULPS * _EPS64 * (jnp.abs(mp[..., :-1]) + jnp.abs(mp[..., 1:]) + jnp.abs(mq[..., :-1]) + jnp.abs(mq[..., 1:]))
        rising = mp[..., :-1] - mq[..., 1:] > mean_margin  # r' ≥ (m_p(a) − m_q(c))/θ² > 0
        falling = mq[..., :-1] - mp[..., 1:] > mean_margin  # r' ≤ (m_p(c) − m_q(a))/θ² < 0
        hidden_peak = ~has_piece & ~(upper + margin <= 0)
        hidden_dip = pos[..., :-1] & pos[..., 1:] & ~(lower - margin > 0)
        many_roots = change & ~(jnp.where(pos[..., 1:], rising, falling) & in_pool)
        flagged = hidden_peak | hidden_dip | many_roots
        # the hockey-stick's slack. On any cell ∫ [p − e^ε q]_+ = ∫ p (1 − e^{−r})_+ ≤
        # P (1 − e^{−sup r}), sup r ≤ upper + margin: a hidden peak's slack (it has no piece); a
        # cell that may hide three roots adds the least of that plus e^ε Q(piece) (which cancels
        # its piece's −e^ε Q) and P + e^ε Q; over a hidden dip the piece's P − e^ε Q is counted,
        # and ∫ [e^ε q − p]_+ ≤ e^ε Q (1 − e^{−sup(−r)}) is added. (A whole P, or P + e^ε Q, had
        # been added: up to 1.1e-13 about the scale where a near-tangent bump vanishes, against
        # a δ of 4e-19 and a target of 8e-17)
        p_up, q_up = cell_p + _EPS64 * cell_error, cell_q + _EPS64 * cell_error
        peak = p_up * self.share(upper, margin)
        triple = jnp.minimum(p_up + self.e_eps * q_up, peak + self.e_eps * (piece_q + _EPS64 * piece_error))
        slack_hockey = jnp.where(many_roots, triple, jnp.where(hidden_dip, self.e_eps * q_up * self.share(-lower, margin), jnp.where(hidden_peak, peak, 0.0)))
        need = jnp.where(flagged, cell_p + self.e_eps * jnp.where(hidden_dip | many_roots, cell_q, 0.0), -1.0)
        return (jnp.where(has_piece, piece_p, 0.0), jnp.where(has_piece, piece_q, 0.0), held,
                jnp.where(flagged, cell_p, 0.0), slack_hockey, jnp.where(has_piece, piece_error, 0.0), flagged, change, need)


def _totals(sums, e_eps):
    """(hockey-stick δ, P(A)) of one pair and order from its sums: the P and Q masses of the
    positive pieces, the P mass held by root brackets, the slack of P(A) and of the hockey-stick,
    and the rounding error of the pieces' masses (in units of 2⁻⁵²)."""
    p_a, q_a, held, slack_p, slack_hockey, piece_error = sums
    tail = 2.0 * _TAIL_MASS  # P's mass beyond the grid on either side; its e^ε Q part only lowers δ
    # the masses' own errors (normal_mass_ulps), and their sums'
    rounding = _EPS64 * (piece_error + _ULPS * (p_a + e_eps * q_a))
    hockey = jnp.maximum(p_a - e_eps * q_a, 0.0) + rounding + held + slack_hockey + tail
    prob = p_a + rounding + held + slack_p + tail
    return jnp.minimum(hockey, 1.0), jnp.minimum(prob, 1.0)


def _subdivide(need, left, right, count, points):
    """The ``count`` cells [left, right] of largest ``need`` (any shape; flattened), which cells
    were not picked, and ``points`` equally spaced points across each picked cell."""
    pick = jax.lax.top_k(need.reshape(-1), count)[1]
    kept = jnp.ones(need.size, bool).at[pick].set(False)
    left, right = left.reshape(-1)[pick], right.reshape(-1)[pick]
    fine = left[:, None] + (right - left)[:, None] * jnp.linspace(0.0, 1.0, points)
    return pick, kept, fine.at[:, -1].set(right)


def _gaussian_regions_one(x, p, q, theta, eps):
    """(hockey-stick δ, probabilistic δ, diagnostics, last pass) of one pair, one order, Gaussian
    noise std θ > 0; diagnostics: (grid cells unproven, of them subdivided, subcells still
    unproven, whether the sign-change count proved the grid exact); last pass: (whether it is
    needed, the points of the subcells it subdivides, the sums without them), for
    :func:`_last_pass_one`."""
    pair = _Cells(x, p, q, theta, eps)
    y = jnp.linspace(x[0] - _TAIL_SIGMAS * theta, x[-1] + _TAIL_SIGMAS * theta, _GRID)
    grid = pair.cells(y)
    summed, flagged, change = grid[:6], grid[6], grid[7]
    # the cells that could not be proven (largest slack first) are subdivided and analysed again;
    # each level is summed over the cells not picked, never as the total less the picked ones (a
    # picked cell's large slack less itself can cancel the rest away: the mixture evaluator's
    # harness seed 47)
    pick, kept, fine = _subdivide(grid[8], y[:-1], y[1:], _REFINE_CELLS, _REFINE_POINTS)
    sub = pair.cells(fine)
    outside = [jnp.sum(jnp.where(kept, t, 0.0)) for t in summed]
    refined = [o + t.sum() for o, t in zip(outside, sub[:6])]
    coarse = [t.sum() for t in summed[:3]] + [0.0, 0.0, summed[5].sum()]  # exact: no slack
    # the sign changes of c_k = p_k − e^ε q_k bound the roots (module docstring): when the grid
    # found that many, every cell's pattern is proven and the coarse pass is exact
    exact = jnp.sum(change) == _sign_changes(p - pair.e_eps * q)
    hockey, prob = _totals([jnp.where(exact, t0, t1) for t0, t1 in zip(coarse, refined)], pair.e_eps)
    pick_sub, kept_sub, finer = _subdivide(sub[8], fine[:, :-1], fine[:, 1:], *_REFINE_AGAIN)
    live = sub[6].reshape(-1)[pick_sub]  # a picked subcell that was proven keeps its own value
    kept_sub = kept_sub.at[pick_sub].set(~live)
    without = [o + jnp.sum(jnp.where(kept_sub, t.reshape(-1), 0.0)) for o, t in zip(outside, sub[:6])]
    diagnostics = (jnp.sum(flagged), jnp.sum(flagged[pick]), jnp.sum(sub[6]), exact)
    return hockey, prob, diagnostics, (~exact & jnp.any(live), finer, live, without)


def _last_pass_one(x, p, q, theta, eps, finer, live, without):
    """(hockey-stick δ, probabilistic δ) of one pair and order with the subcells still unproven
    after :func:`_gaussian_regions_one`'s pass (rows of ``finer`` where ``live``) subdivided once
    more and bounded by the enclosure alone (:meth:`_Cells.bounded`), ``without`` the sums over
    every other cell."""
    pair = _Cells(x, p, q, theta, eps)
    hockey, prob = (jnp.sum(jnp.where(live[:, None], t, 0.0)) for t in pair.bounded(finer))
    p_a, q_a, held, slack_p, slack_hockey, piece_error = without
    return _totals((p_a, q_a, held, slack_p + prob, slack_hockey + hockey, piece_error), pair.e_eps)


def _gaussian_regions(x, p, q, theta, eps):
    """Batched :func:`_gaussian_regions_one` (θ > 0 selected; θ = 0 gives the atoms' own δ), and
    :func:`_last_pass_one` on the pairs that need it (gathered: few do), the lesser of the two
    kept (both bound δ from above)."""
    ok = theta > 0
    theta_ok = jnp.where(ok, theta, 1.0)
    hockey, prob, _, (again, finer, live, without) = vmap_pairs(_gaussian_regions_one, x, p, q, theta_ok, eps)
    batch, n = p.shape[:-1], p.shape[-1]
    lanes = [jnp.broadcast_to(a, batch + (n,)).reshape(-1, n) for a in (x, p, q)]
    lanes += [jnp.broadcast_to(a, batch).reshape(-1) for a in (theta_ok, eps)]
    flat = lambda t: t.reshape((-1,) + t.shape[len(batch):])  # noqa: E731
    last = on_lanes(jax.vmap(_last_pass_one), flat(again), (flat(hockey), flat(prob)), *lanes, flat(finer), flat(live), [flat(t) for t in without])
    hockey, prob = (jnp.minimum(t, u.reshape(batch)) for t, u in zip((hockey, prob), last))
    atoms = atom_hockey(x, p, q, eps)
    return jnp.where(ok, hockey, atoms), jnp.where(ok, prob, atoms)


# ----------------------------------------------------------------------------- per level


def _both_orders(fn, x, p, q, b, eps, symmetric):
    forward = fn(x, p, q, b, eps)
    return jnp.where(symmetric, jnp.maximum(forward, fn(x, q, p, b, eps)), forward)


def _laplace_exact(x, p, q, b, eps):
    ok = b > 0
    noisy = _laplace_hockey(x, p, q, jnp.where(ok, b, 1.0), eps)
    return jnp.where(ok, noisy, atom_hockey(x, p, q, eps))


def coupling_bound(x, p, q, b, eps, noise):
    """Σ π*(x, x') h(|x − x'|): the coupling bound of the quantile plan (valid for any plan)."""
    mass = quantile_masses(p, q)
    w = jnp.abs(x[..., :, None] - x[..., None, :])
    b_, eps_ = b[..., None, None], eps[..., None, None]
    b_safe = jnp.where(b_ > 0, b_, 1.0)
    h = jnp.where(b_ > 0, kernels.resolve(noise).coupling_cost(w, b_safe, eps_), (w > 0).astype(w.dtype))
    return jnp.minimum(jnp.sum(mass * h, axis=(-2, -1)) * (1.0 + _ULPS * _EPS64), 1.0)


def discrete_delta(level: str, noise: str, x, p, q, b, eps, symmetric):
    """δ per pair at ``level`` ("exact" or "coupling") for discrete priors; arrays as above,
    ``b`` and ``eps`` broadcast to the batch shape. No validation."""
    batch = p.shape[:-1]
    b, eps = jnp.broadcast_to(b, batch), jnp.broadcast_to(eps, batch)
    if level == "coupling":
        return coupling_bound(x, p, q, b, eps, noise)
    kernel = kernels.resolve(noise)
    if kernel.name == "laplace":
        return _both_orders(_laplace_exact, x, p, q, b, eps, symmetric)
    if kernel.name == "gaussian":
        return _both_orders(lambda *a: _gaussian_regions(*a)[0], x, p, q, b, eps, symmetric)
    ok = b > 0  # b = 0: the atoms' own hockey-stick
    noisy = vmap_pairs(lambda *a: enclosure.hockey(kernel, *a)[0], x, p, q, jnp.where(ok, b, 1.0), eps, jnp.broadcast_to(symmetric, batch))
    return jnp.where(ok, noisy, _both_orders(lambda x, p, q, b, eps: atom_hockey(x, p, q, eps), x, p, q, b, eps, symmetric))


def discrete_probabilistic(x, p, q, theta, eps, symmetric):
    """max over orders of P_{Y∼p}(log p(Y)/q(Y) > ε), Gaussian noise (certified upper bound)."""
    batch = p.shape[:-1]
    theta, eps = jnp.broadcast_to(theta, batch), jnp.broadcast_to(eps, batch)
    return _both_orders(lambda *a: _gaussian_regions(*a)[1], x, p, q, theta, eps, symmetric)
