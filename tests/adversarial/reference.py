"""An independent reference for the exact δ of any prior family (numpy, scipy and mpmath only;
no jaxpuffer code), written for the adversarial harness.

Every family is a mixture Σ_m w_m N(μ_m, σ_m²) with σ_m ≥ 0 (a Gaussian is one component, a
discrete prior is point-mass components), released with Laplace(b), N(0, θ²) or generalized
Gaussian GG(p) noise of scale b (``noise="gg:P"``, density p/(2bΓ(1/p)) e^{−(|z|/b)^p}, written
here from the formula; a Gaussian component under it by quadrature, :func:`gg_convolved_logpdf`).
For one ordered pair the reference computes δ = ∫ [p_i − e^ε p_j]_+ dy as follows:

1. **Scan.** f(y) = log p_i(y) − log p_j(y) − ε (log-sum-exp over components, each component's
   log-density in closed form with scipy's log_ndtr) on a sinh-spaced scan around every
   component of both releases (the Laplace one as −u²/2 + log(erfcx(·)/2) where the direct form
   would cancel terms of size (σ/b)²/2) — y = μ + s sinh(t), t uniform, s the component's std, the noise
   scale and their combination — reaching 150 scales into the tails, 1201 points per scale and component.
2. **Hidden excursions.** At every local maximum of f on the scan that is ≤ 0 and every local
   minimum that is > 0, within its neighbours' variation of 0, the extremum is refined by bounded scalar optimisation (scipy) between
   its neighbours; an excursion across 0 adds its two zeros.
3. **Zeros** by brentq (xtol 1e-15 relative) in every bracket of a sign change.
4. **Masses.** ∫ p_i (1 − e^{−f})_+ dy (the integrand written from log densities: no
   cancellation) by 24-node Gauss–Legendre (8 for Gaussian components under GG noise) on every
   piece between consecutive scan points and zeros where f > 0 (the scan is dense where the
   densities vary, so each piece is smooth). Mass beyond 150 scales of every component
   (< e^{−150}) is left out.

δ(0) (no noise) for point masses: Σ over atoms [P(x) − e^ε Q(x)]_+ plus the continuous parts.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

_T = np.sinh(np.linspace(-math.asinh(150.0), math.asinh(150.0), 1201))


def _gg_shape(noise):
    """The shape p of a generalized Gaussian noise named ``"gg:P"``, else None."""
    return float(noise[3:]) if noise.startswith("gg:") else None


# the convolution N(0, s²) ⊛ GG(p): panel ends t* + w sinh(U u) for u on this grid (scaled per
# point), graded towards the kernel's kink at 0 by these fractions of b, 8 Gauss–Legendre nodes a panel
_CONV_U = np.linspace(-1.0, 1.0, 161)
_CONV_KINK = np.array([10.0**-k for k in range(1, 13)])
_CONV_X, _CONV_W = np.polynomial.legendre.leggauss(8)


def gg_convolved_logpdf(z, s, p, b, block=2048):
    """log ∫ g_b(t) φ_s(z − t) dt for an array z: a N(0, s²) component (s > 0) under GG(p) noise,
    g_b(t) = p/(2bΓ(1/p)) e^{−(|t|/b)^p}. The integrand's peak t* (between 0 and z) by bisection
    on its slope; panel ends t* + w sinh(U u) and b sinh(U' u), u uniform on [−1, 1] (161 points
    each: around the peak, w its width (1/s² + κ)^{-1/2} with κ the kernel's curvature at
    max(|t*|, b/20), and around the kernel's centre, where its edges lie when s ≫ b; U, U' reach
    where the kernel has fallen by 10³ and the component by 800), plus 0 ± b·10^{−k}, k = 1…12
    (the kernel's kink: |t|^p is not smooth at 0); 8 Gauss–Legendre nodes a panel, summed in log
    space. Against 40-digit mpmath quadrature (``tests/test_gg_calibration.py``): |error in log p|
    ≤ 2.1e-12 max(1, |log p|) from the centre into the far tails (p ∈ {1, 1.5, 2, 3, 8}, s/b
    from 1e-3 to 1e3; the worst where s ≫ b); ~0.1 ms a point. Not validated for s/b < 1e-3: at
    s/b = 3.3e-7 the error is ~5e-11, at 2.6e-11 it is 6e-6. δ's relative error is that divided by
    the log-ratio's excess over ε where δ's mass lies: 1.2e-6 for near-identical priors at
    ε = 0.0019 (harness seed 127: 1.0000012 of the target, where the same pair with s = 0 gives
    0.99999993, and adding N(0, s²) to both can only lower δ)."""
    z = np.asarray(z, float)
    const = math.log(p / (2.0 * b)) - special.gammaln(1.0 / p) - math.log(s) - 0.5 * math.log(2.0 * math.pi)
    kink = np.concatenate([[0.0], b * _CONV_KINK, -b * _CONV_KINK])
    out = np.empty(z.size)
    flat = z.ravel()
    for start in range(0, flat.size, block):
        zc = flat[start:start + block]
        lo, hi = np.minimum(zc, 0.0), np.maximum(zc, 0.0)
        for _ in range(110):
            mid = 0.5 * (lo + hi)
            slope = -np.sign(mid) * p * (np.abs(mid) / b) ** (p - 1.0) / b + (zc - mid) / s**2
            lo, hi = np.where(slope > 0, mid, lo), np.where(slope > 0, hi, mid)
        peak = 0.5 * (lo + hi)
        kappa = p * (p - 1.0) * (np.maximum(np.abs(peak), b / 20.0) / b) ** (p - 2.0) / b**2
        w = 1.0 / np.sqrt(1.0 / s**2 + kappa)
        span = np.abs(peak) + np.abs(zc - peak) + 40.0 * s + b * 1000.0 ** (1.0 / p)
        around_peak = peak[:, None] + w[:, None] * np.sinh(np.arcsinh(span / w)[:, None] * _CONV_U)
        around_zero = b * np.sinh(np.arcsinh(span / b)[:, None] * _CONV_U)
        ends = np.sort(np.concatenate([around_peak, around_zero, np.broadcast_to(kink, (zc.size, kink.size))], axis=1), axis=1)
        a, c = ends[:, :-1], ends[:, 1:]
        half = 0.5 * (c - a)
        t = (0.5 * (a + c))[..., None] + half[..., None] * _CONV_X
        with np.errstate(divide="ignore"):
            log_w = np.log(half)[..., None] + np.log(_CONV_W)
        terms = log_w - (np.abs(t) / b) ** p - (zc[:, None, None] - t) ** 2 / (2.0 * s**2)
        out[start:start + zc.size] = const + special.logsumexp(terms.reshape(zc.size, -1), axis=1)
    return out.reshape(z.shape)


def _component_logpdf(y, mu, s, noise, b):
    z = y - mu
    p = _gg_shape(noise)
    if p is not None:  # GG(p) noise, density p/(2bΓ(1/p)) e^{−(|z|/b)^p}, convolved with N(0, s²) for s > 0
        if s > 0:
            return gg_convolved_logpdf(z, s, p, b)
        return math.log(p / (2 * b)) - special.gammaln(1 / p) - (np.abs(z) / b) ** p
    if noise == "gaussian":
        v = math.hypot(s, b)
        return -0.5 * (z / v) ** 2 - math.log(v) - 0.5 * math.log(2 * math.pi)
    if s == 0:
        return -np.abs(z) / b - math.log(2 * b)
    u, v = z / s, s / b

    def term(x, sign):  # v²/2 ∓ z/b + log Φ(x), x = ±u − v; for x < 0 as −u²/2 + log(erfcx(−x/√2)/2)
        with np.errstate(all="ignore"):
            big = 0.5 * v * v - sign * z / b + special.log_ndtr(x)
            small = -0.5 * u * u + np.log(0.5 * special.erfcx(-x / math.sqrt(2)))
        return np.where(x < 0, small, big)

    return np.logaddexp(term(u - v, 1.0), term(-u - v, -1.0)) - math.log(2 * b)


def mixture_logpdf(y, w, m, s, noise, b):
    """log of Σ w_k (N(m_k, s_k²) ⊛ noise)(y) for an array y."""
    y = np.asarray(y, float)
    terms = [math.log(wk) + _component_logpdf(y, mk, sk, noise, b) for wk, mk, sk in zip(w, m, s) if wk > 0]
    return special.logsumexp(np.stack(terms), axis=0)


def _scan(first, second, noise, b):
    pts = []
    for w, m, s in (first, second):
        for wk, mk, sk in zip(w, m, s):
            if wk <= 0:
                continue
            kinked = noise == "laplace" or (noise.startswith("gg:") and sk > 0)  # a kernel's and a component's scales apart
            scales = {sk, b, math.hypot(sk, b)} if kinked else {math.hypot(sk, b)}  # (GG with s = 0: b)
            for sc in scales:
                if sc > 0:
                    pts.append(mk + sc * _T)
    y = np.unique(np.concatenate(pts))
    return y[np.isfinite(y)]


_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)
# a Gaussian component under GG noise: 8 nodes (its density is smooth on the scan's pieces, ~1 % of
# a scale wide; each value is itself a quadrature)
_GL_CONVOLVED = np.polynomial.legendre.leggauss(8)


def _scanned(first, second, noise, b):
    """(y, log p_i(y), log p_j(y)) on :func:`_scan`'s points, which are the same for either order:
    both orders' scans from one evaluation of each density."""
    y = _scan(first, second, noise, b)
    return y, mixture_logpdf(y, *first, noise, b), mixture_logpdf(y, *second, noise, b)


def _one_order(first, second, noise, b, eps, scanned=None):
    """∫ [p_i − e^ε p_j]_+ (``first`` = p_i); ``scanned``: :func:`_scanned` of (first, second),
    evaluated here when not given."""
    logp = lambda y: mixture_logpdf(y, *first, noise, b)  # noqa: E731
    f = lambda y: logp(y) - mixture_logpdf(y, *second, noise, b) - eps  # noqa: E731
    f1 = lambda x: float(f(np.array([x]))[0])  # noqa: E731
    y, log_p, log_q = scanned if scanned is not None else _scanned(first, second, noise, b)
    v = log_p - log_q - eps  # f(y)
    # hidden excursions: local extrema of f on the scan on the wrong side of 0 whose neighbours
    # leave room to cross it (within their own variation of 0; flat tails have many spurious ones)
    inner = np.arange(1, y.size - 1)
    room = np.abs(v[inner] - v[inner - 1]) + np.abs(v[inner + 1] - v[inner])
    extra = []
    for sign, cand in [(-1.0, inner[(v[inner] > v[inner - 1]) & (v[inner] >= v[inner + 1]) & (v[inner] <= 0) & (v[inner] > -room)]),
                       (1.0, inner[(v[inner] < v[inner - 1]) & (v[inner] <= v[inner + 1]) & (v[inner] > 0) & (v[inner] < room)])]:
        for k in cand[np.argsort(np.abs(v[cand]))[:400]]:
            res = optimize.minimize_scalar(lambda x: sign * f1(x), bounds=(y[k - 1], y[k + 1]), method="bounded",
                                           options={"xatol": 1e-15 * max(1.0, abs(y[k]))})
            if (f1(res.x) > 0) == (sign < 0):
                extra.append(res.x)
    if extra:
        y = np.unique(np.concatenate([y, extra]))
        v = f(y)
    pos = v > 0
    cuts = [optimize.brentq(f1, y[k], y[k + 1], xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
            for k in np.nonzero(pos[:-1] != pos[1:])[0]]
    # integrate p_i (1 − e^{−f}) over the positive pieces: Gauss–Legendre (24 nodes) on every
    # sub-interval between consecutive scan points and zeros (dense where the densities vary)
    knots = np.unique(np.concatenate([y, cuts]))
    # a piece whose midpoint is positive with an end ≤ 0 holds an excursion that the scan and the
    # extremum search missed (harness seed 61: a sliver 0.003 wide inside one scan cell, whose
    # kinked positive part Gauss–Legendre overestimated by 0.15 %): split it at its midpoint and
    # at the zeros on either side, so that no piece straddles a zero of f
    lo, hi = knots[:-1], knots[1:]
    mid = 0.5 * (lo + hi)
    mid_v, lo_v, hi_v = f(mid), f(lo), f(hi)
    split = []
    for k in np.nonzero((mid_v > 0) & ((lo_v <= 0) | (hi_v <= 0)))[0]:
        split.append(mid[k])
        for a, c, fa in ((lo[k], mid[k], lo_v[k]), (mid[k], hi[k], hi_v[k])):
            if fa < 0:
                split.append(optimize.brentq(f1, a, c, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))
    knots = np.unique(np.concatenate([knots, split]))
    lo, hi = knots[:-1], knots[1:]
    mid_v = f(0.5 * (lo + hi))
    keep = mid_v > 0
    lo, hi = lo[keep], hi[keep]
    convolved = _gg_shape(noise) is not None and any(np.any(np.asarray(s) > 0) for _, _, s in (first, second))
    gl_x, gl_w = _GL_CONVOLVED if convolved else (_GL_X, _GL_W)
    x = (0.5 * (lo + hi)[:, None] + 0.5 * (hi - lo)[:, None] * gl_x).ravel()
    log_p = logp(x)
    vals = np.exp(log_p) * -np.expm1(-np.maximum(log_p - mixture_logpdf(x, *second, noise, b) - eps, 0.0))
    total = float(np.sum(0.5 * (hi - lo) * (vals.reshape(-1, gl_x.size) @ gl_w)))
    return max(total, 0.0)


def _atoms_at_zero(first, second, eps):
    """δ with no noise between priors made of point masses and continuous components."""
    (w1, m1, s1), (w2, m2, s2) = first, second
    atoms = 0.0
    for x in {mk for wk, mk, sk in zip(w1, m1, s1) if sk == 0 and wk > 0}:
        p = sum(wk for wk, mk, sk in zip(w1, m1, s1) if sk == 0 and mk == x)
        q = sum(wk for wk, mk, sk in zip(w2, m2, s2) if sk == 0 and mk == x)
        atoms += max(p - math.exp(eps) * q, 0.0)
    c1 = [(wk, mk, sk) for wk, mk, sk in zip(w1, m1, s1) if sk > 0 and wk > 0]
    c2 = [(wk, mk, sk) for wk, mk, sk in zip(w2, m2, s2) if sk > 0 and wk > 0]
    if not c1:
        return atoms
    if not c2:
        return atoms + sum(wk for wk, _, _ in c1)
    return atoms + _one_order(tuple(map(np.array, zip(*c1))), tuple(map(np.array, zip(*c2))), "gaussian", 0.0, eps)


def sup_log_ratio(first, second, scale, noise="laplace", symmetric=True):
    """(sup, rounding): the max over orders (when symmetric) of sup_y log p_i(y) − log p_j(y) at a
    scale > 0 — δ = 0 exactly when it is ≤ ε — and a bound on its rounding error. The scan of
    :func:`_one_order` (150 scales into every tail), the three largest scan maxima refined by
    bounded scalar optimisation between their neighbours, and for Laplace noise the log-ratio's
    limits as y → ±∞ (the log-MGF ratio at ±1/b). The rounding bound is 16 ulps of the largest
    term that cancels inside a log-density at the maximiser (σ²/2b² + |y − μ|/b for Laplace noise,
    ((y − μ)/s)²/2 for Gaussian): with σ/b = 1e6 those terms are 5e11 and the log-ratio is known
    to ~1e-4 only, in any formula that takes the two log-densities separately."""
    first, second = _centred(first, second)

    def size(y, p, q):  # the largest cancelling term at y
        w, m, s = (np.concatenate(a) for a in zip(p, q))
        m, s = m[w > 0], s[w > 0]
        if noise == "laplace":
            return float(np.max(0.5 * (s / scale) ** 2 + np.abs(y - m) / scale))
        return float(np.max(0.5 * (y - m) ** 2 / (s**2 + scale**2)))

    def one(p, q, scanned):
        f = lambda y: mixture_logpdf(y, *p, noise, scale) - mixture_logpdf(y, *q, noise, scale)  # noqa: E731
        y, log_p, log_q = scanned
        v = log_p - log_q  # f(y)
        best = (float(np.max(v)), y[np.argmax(v)])
        for k in np.argsort(v[1:-1])[-3:] + 1:
            res = optimize.minimize_scalar(lambda x: -float(f(np.array([x]))[0]), bounds=(y[k - 1], y[k + 1]), method="bounded",
                                           options={"xatol": 1e-15 * max(1.0, abs(y[k]))})
            best = max(best, (-float(res.fun), res.x))
        value, where = best[0], size(best[1], p, q)
        if noise == "laplace":  # the limits as y → ±∞: log E_p[e^{±X/b}] − log E_q[e^{±X/b}] (the scan
            # may stop short of them: σ = 0.49, b = 8e-6 reaches them only beyond y ≈ σ²/b = 3e4)
            for t in (1.0 / scale, -1.0 / scale):
                lim = [special.logsumexp(np.log(w[w > 0]) + m[w > 0] * t + 0.5 * (s[w > 0] * t) ** 2) for w, m, s in (p, q)]
                if lim[0] - lim[1] > value:
                    value, where = lim[0] - lim[1], size(0.0, p, q)
        return value, 16 * np.finfo(float).eps * where

    y, log_first, log_second = _scanned(first, second, noise, scale)
    if not symmetric:
        return one(first, second, (y, log_first, log_second))
    return max(one(first, second, (y, log_first, log_second)), one(second, first, (y, log_second, log_first)))


def _centred(first, second):
    """Both priors as float arrays, shifted so that their means' median is 0: δ is translation
    invariant, and the scan's y − μ near |μ| = 1e8 carries errors of ulp(1e8) = 1.5e-8 that move δ
    by ~1e-9 relative (harness seed 23)."""
    first = tuple(np.asarray(a, float) for a in first)
    second = tuple(np.asarray(a, float) for a in second)
    centre = np.median(np.concatenate([first[1][first[0] > 0], second[1][second[0] > 0]]))
    return (first[0], first[1] - centre, first[2]), (second[0], second[1] - centre, second[2])


def exact_delta(first, second, scale, eps, noise="laplace", symmetric=True):
    """max over orders (when symmetric) of the exact δ; ``first``/``second`` = (w, μ, σ) arrays."""
    first, second = _centred(first, second)
    if scale == 0:
        d = _atoms_at_zero(first, second, eps)
        return max(d, _atoms_at_zero(second, first, eps)) if symmetric else d
    y, log_first, log_second = _scanned(first, second, noise, scale)
    d = _one_order(first, second, noise, scale, eps, (y, log_first, log_second))
    return max(d, _one_order(second, first, noise, scale, eps, (y, log_second, log_first))) if symmetric else d


def check(job):
    """(δ(b)/target, tight) for one harness job (first, second, b, ε, target, noise); tight is
    whether δ(b·(1 − 1e-4)) > target, None where b = 0."""
    first, second, b, eps, target, noise = job
    d = exact_delta(first, second, b, eps, noise)
    tight = None if b == 0 else exact_delta(first, second, b * (1 - 1e-4), eps, noise) > target
    return d / target, tight


def check_pure(job):
    """The same for a target of 0 (pure ε): (1 + sup_y log p_i/p_j − ε beyond the reference's
    rounding, tight), so that a "ratio" above 1 + 1e-9 is a violation; tight is whether that supremum exceeds ε at
    b·(1 − 1e-6). b = 0: (1, None) if the priors' own δ is 0, else (inf, None)."""
    first, second, b, eps, target, noise = job
    if b == 0:
        return (1.0 if exact_delta(first, second, 0.0, eps, noise) == 0 else math.inf), None
    sup, rounding = sup_log_ratio(first, second, b, noise)
    return 1.0 + max(sup - eps - rounding, 0.0), sup_log_ratio(first, second, b * (1 - 1e-6), noise)[0] > eps
