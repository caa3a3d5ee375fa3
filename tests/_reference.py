"""Independent reference computations for the tests (scipy and mpmath; no jaxpuffer code).

``exact_delta_laplace`` evaluates ∫ [p_i − e^ε p_j]_+ for Gaussian priors and Laplace noise:
crossings of log p_i − log p_j = ε located on a dense uniform scan (20,001 points, scipy
float64), refined with mpmath.findroot, and the interval masses summed with mpmath CDFs at 40
significant digits (closed form of MATH.md §6, written out here in mpmath).
"""
import mpmath as mp
import numpy as np
from scipy import special

mp.mp.dps = 40


def _mp_parts(y, mu, s, b):
    y, mu, s, b = mp.mpf(y), mp.mpf(mu), mp.mpf(s), mp.mpf(b)
    z = y - mu
    if s == 0:
        p = mp.exp(-abs(z) / b) / (2 * b)
        F = mp.exp(z / b) / 2 if z < 0 else 1 - mp.exp(-z / b) / 2
        S = 1 - mp.exp(z / b) / 2 if z < 0 else mp.exp(-z / b) / 2
        return p, F, S
    u, v, e = z / s, s / b, s**2 / (2 * b**2)
    A = mp.exp(e - z / b) * mp.ncdf(u - v)
    B = mp.exp(e + z / b) * mp.ncdf(-u - v)
    return (A + B) / (2 * b), mp.ncdf(u) - A / 2 + B / 2, mp.ncdf(-u) + A / 2 - B / 2


def _logpdf_np(y, mu, s, b):
    z = y - mu
    if s == 0:
        return -np.abs(z) / b - np.log(2 * b)
    u, v = z / s, s / b
    return np.logaddexp(v * v / 2 - z / b + special.log_ndtr(u - v), v * v / 2 + z / b + special.log_ndtr(-u - v)) - np.log(2 * b)


def _one_order(mu1, s1, mu2, s2, b, eps):
    width = 16 * max(s1, s2) + 60 * b
    grid = np.linspace(min(mu1, mu2) - width, max(mu1, mu2) + width, 20001)
    grid = np.unique(np.concatenate([grid, [mu1, mu2]]))
    r = _logpdf_np(grid, mu1, s1, b) - _logpdf_np(grid, mu2, s2, b) - eps

    def rf(x):
        p1 = _mp_parts(x, mu1, s1, b)[0]
        p2 = _mp_parts(x, mu2, s2, b)[0]
        return mp.log(p1) - mp.log(p2) - eps

    pos = r > 0
    cuts = []
    for k in np.nonzero(pos[:-1] != pos[1:])[0]:
        try:
            cuts.append(mp.findroot(rf, (mp.mpf(grid[k]), mp.mpf(grid[k + 1])), solver="anderson"))
        except (ValueError, ZeroDivisionError):
            cuts.append(mp.mpf((grid[k] + grid[k + 1]) / 2))
    edges = [mp.ninf] + cuts + [mp.inf]
    inside = [bool(pos[0])]
    for _ in cuts:
        inside.append(not inside[-1])
    total = mp.mpf(0)
    e_eps = mp.exp(eps)

    def mass(a, c, mu, s):
        if a == mp.ninf and c == mp.inf:
            return mp.mpf(1)
        if a == mp.ninf:
            return _mp_parts(c, mu, s, b)[1]
        if c == mp.inf:
            return _mp_parts(a, mu, s, b)[2]
        return _mp_parts(a, mu, s, b)[2] - _mp_parts(c, mu, s, b)[2]

    for (a, c), keep in zip(zip(edges[:-1], edges[1:]), inside):
        if keep:
            total += mass(a, c, mu1, s1) - e_eps * mass(a, c, mu2, s2)
    return max(float(total), 0.0)


def exact_delta_laplace(mu1, s1, mu2, s2, b, eps, symmetric=True):
    d = _one_order(mu1, s1, mu2, s2, b, eps)
    return max(d, _one_order(mu2, s2, mu1, s1, b, eps)) if symmetric else d


def exact_delta_gaussian_quad(mu1, s1, mu2, s2, theta, eps):
    """Gaussian noise: ∫ [g1 − e^ε g2]_+ by mpmath.quad between the crossings (both orders).

    Crossings of log g1 − log g2 = ε: a dense float64 scan, refined by mpmath.findroot; the
    integrand is smooth between them, so quad converges to many digits."""
    v1 = mp.sqrt(mp.mpf(s1) ** 2 + mp.mpf(theta) ** 2)
    v2 = mp.sqrt(mp.mpf(s2) ** 2 + mp.mpf(theta) ** 2)
    out = []
    for (ma, va), (mb, vb) in (((mu1, v1), (mu2, v2)), ((mu2, v2), (mu1, v1))):
        ma, mb = mp.mpf(ma), mp.mpf(mb)
        r = lambda y: mp.log(mp.npdf(y, ma, va)) - mp.log(mp.npdf(y, mb, vb)) - eps  # noqa: E731
        span = float(40 * max(va, vb))
        grid = np.linspace(float(min(ma, mb)) - span, float(max(ma, mb)) + span, 4001)
        vals = np.array([float(r(mp.mpf(g))) for g in grid])
        pos = vals > 0
        cuts = [mp.findroot(r, (mp.mpf(grid[k]), mp.mpf(grid[k + 1])), solver="anderson") for k in np.nonzero(pos[:-1] != pos[1:])[0]]
        edges = [mp.ninf] + cuts + [mp.inf]
        f = lambda y: mp.npdf(y, ma, va) - mp.exp(eps) * mp.npdf(y, mb, vb)  # noqa: E731
        total = mp.mpf(0)
        inside = bool(pos[0])
        for a, c in zip(edges[:-1], edges[1:]):
            if inside:
                total += mp.quad(f, [a, c])
            inside = not inside
        out.append(max(float(total), 0.0))
    return max(out)


# --------------------------------------------------------------------------- scipy float64 references
from scipy import integrate, optimize, stats  # noqa: E402


def _parts_np(y, mu, s, b):
    """log p, F, S of N(mu, s²) ⊛ Laplace(b) with scipy (the direct form of MATH.md §6)."""
    z = np.asarray(y, dtype=float) - mu
    if s == 0:
        half = 0.5 * np.exp(-np.abs(z) / b)
        return -np.abs(z) / b - np.log(2 * b), np.where(z < 0, half, 1 - half), np.where(z < 0, 1 - half, half)
    u, v = z / s, s / b
    la = v * v / 2 - z / b + special.log_ndtr(u - v)
    lb = v * v / 2 + z / b + special.log_ndtr(-u - v)
    logp = np.logaddexp(la, lb) - np.log(2 * b)
    F = special.ndtr(u) - 0.5 * np.exp(la) + 0.5 * np.exp(lb)
    S = special.ndtr(-u) + 0.5 * np.exp(la) - 0.5 * np.exp(lb)
    return logp, F, S


def _one_order_scipy(mu1, s1, mu2, s2, b, eps, points=8001):
    width = 16 * max(s1, s2) + 60 * b
    grid = np.linspace(min(mu1, mu2) - width, max(mu1, mu2) + width, points)
    grid = np.unique(np.concatenate([grid, [mu1, mu2], mu1 + s1 * np.linspace(-3, 3, 61), mu2 + s2 * np.linspace(-3, 3, 61)]))

    def r(x):
        return _parts_np(x, mu1, s1, b)[0] - _parts_np(x, mu2, s2, b)[0] - eps

    f = r(grid)
    pos = f > 0
    cuts = [optimize.brentq(r, grid[k], grid[k + 1], xtol=1e-15, rtol=1e-15) for k in np.nonzero(pos[:-1] != pos[1:])[0]]
    edges = [-np.inf] + cuts + [np.inf]
    inside = [bool(pos[0])]
    for _ in cuts:
        inside.append(not inside[-1])
    total = 0.0
    for (a, c), keep in zip(zip(edges[:-1], edges[1:]), inside):
        if not keep:
            continue
        for mu, s, w in ((mu1, s1, 1.0), (mu2, s2, -np.exp(eps))):
            if a == -np.inf and c == np.inf:
                m = 1.0
            elif a == -np.inf:
                m = _parts_np(c, mu, s, b)[1]
            elif c == np.inf:
                m = _parts_np(a, mu, s, b)[2]
            elif c <= mu:
                m = _parts_np(c, mu, s, b)[1] - _parts_np(a, mu, s, b)[1]
            else:
                m = _parts_np(a, mu, s, b)[2] - _parts_np(c, mu, s, b)[2]
            total += w * float(m)
    return max(total, 0.0)


def exact_delta_laplace_scipy(mu1, s1, mu2, s2, b, eps, symmetric=True):
    """Exact δ with scipy in float64: dense scan (8,001 points), brentq crossings, CDF masses."""
    if b == 0:
        raise ValueError("b must be > 0 here")
    d = _one_order_scipy(mu1, s1, mu2, s2, b, eps)
    return max(d, _one_order_scipy(mu2, s2, mu1, s1, b, eps)) if symmetric else d


def exact_delta_laplace_quad(mu1, s1, mu2, s2, b, eps):
    """Exact δ by scipy.integrate.quad of [p1 − e^ε p2]_+ (one order), split at the scan crossings."""
    width = 16 * max(s1, s2) + 60 * b
    grid = np.linspace(min(mu1, mu2) - width, max(mu1, mu2) + width, 4001)

    def g(x):
        return max(np.exp(_parts_np(x, mu1, s1, b)[0]) - np.exp(eps) * np.exp(_parts_np(x, mu2, s2, b)[0]), 0.0)

    pts = np.concatenate([[-np.inf], grid[::200], [np.inf]])
    return sum(integrate.quad(g, a, c, limit=200, epsabs=1e-15, epsrel=1e-12)[0] for a, c in zip(pts[:-1], pts[1:]))


def coupling_laplace_quad(d_mu, d_sigma, b, eps):
    """(35) by scipy quad: E[(1 − e^{ε − |W|/b})_+] for W ~ N(Δμ, Δσ²)."""
    s = abs(d_sigma)
    if s == 0:
        return max(0.0, 1 - np.exp(eps - abs(d_mu) / b))
    h = lambda w: (1 - np.exp(eps - abs(w) / b)) * stats.norm.pdf(w, d_mu, s)  # noqa: E731
    c = eps * b
    return integrate.quad(h, c, np.inf, epsabs=1e-15, epsrel=1e-12)[0] + integrate.quad(h, -np.inf, -c, epsabs=1e-15, epsrel=1e-12)[0]


def exact_delta_gaussian_scipy(mu1, s1, mu2, s2, theta, eps):
    """Gaussian noise, scipy: crossings of log g1 − log g2 = ε by brentq on a scan, quad between."""
    v1, v2 = np.hypot(s1, theta), np.hypot(s2, theta)
    out = []
    for (ma, va), (mb, vb) in (((mu1, v1), (mu2, v2)), ((mu2, v2), (mu1, v1))):
        r = lambda y: stats.norm.logpdf(y, ma, va) - stats.norm.logpdf(y, mb, vb) - eps  # noqa: E731
        span = 40 * max(va, vb)
        grid = np.linspace(min(ma, mb) - span, max(ma, mb) + span, 8001)
        vals = r(grid)
        pos = vals > 0
        cuts = [optimize.brentq(r, grid[k], grid[k + 1], xtol=1e-15, rtol=1e-15) for k in np.nonzero(pos[:-1] != pos[1:])[0]]
        edges = [-np.inf] + cuts + [np.inf]
        total, inside = 0.0, bool(pos[0])
        for a, c in zip(edges[:-1], edges[1:]):
            if inside:  # masses from the CDFs on the side away from cancellation
                for m, v, w in ((ma, va, 1.0), (mb, vb, -np.exp(eps))):
                    lo, hi = (a - m) / v, (c - m) / v
                    total += w * (stats.norm.sf(lo) - stats.norm.sf(hi) if lo >= 0 else stats.norm.cdf(hi) - stats.norm.cdf(lo))
            inside = not inside
        out.append(max(total, 0.0))
    return max(out)


# ----------------------------------------------------------------------------- discrete priors


def _mixture_density(y, x, w, b, noise):
    z = y[:, None] - x[None, :]
    if noise == "laplace":
        return np.exp(-np.abs(z) / b) @ w / (2 * b)
    return np.exp(-0.5 * (z / b) ** 2) @ w / (np.sqrt(2 * np.pi) * b)


def discrete_delta_reference(x, p, q, b, eps, noise="laplace", points=4001):
    """∫ [p ⊛ N − e^ε q ⊛ N]_+ for discrete priors on atoms x (numpy/scipy, one pair, one order):
    sign changes of the density difference on a uniform scan plus the atoms, refined by 100 bisection steps,
    masses from the closed-form kernel CDFs in mpmath (40 digits). b = 0: Σ [p − e^ε q]_+ over distinct points."""
    x, p, q = (np.asarray(a, float) for a in (x, p, q))
    e = np.exp(eps)
    if b == 0:
        pts = np.unique(x)
        pp = np.array([p[x == v].sum() for v in pts])
        qq = np.array([q[x == v].sum() for v in pts])
        return float(np.maximum(pp - e * qq, 0).sum())
    reach = 45 * b if noise == "laplace" else 12 * b
    # the atoms join the scan: with Laplace noise the density ratio has its kinks there, and near
    # the pure-ε threshold the positive set shrinks to a sliver beside an atom
    y = np.unique(np.concatenate([np.linspace(x.min() - reach, x.max() + reach, points), x]))
    f = lambda t: _mixture_density(t, x, p, b, noise) - e * _mixture_density(t, x, q, b, noise)  # noqa: E731
    fy = f(y)
    idx = np.nonzero(np.sign(fy[:-1]) != np.sign(fy[1:]))[0]
    a, c = y[idx], y[idx + 1]
    fa = fy[idx]
    for _ in range(100):
        m = 0.5 * (a + c)
        fm = f(m)
        left = np.sign(fm) == np.sign(fa)
        a, c, fa = np.where(left, m, a), np.where(left, c, m), np.where(left, fm, fa)
    edges = np.concatenate([[-np.inf], 0.5 * (a + c), [np.inf]])
    total = mp.mpf(0)
    for lo, hi in zip(edges[:-1], edges[1:]):
        probe = y[(y > lo) & (y < hi)]
        if probe.size == 0 or f(probe[probe.size // 2 : probe.size // 2 + 1])[0] <= 0:
            continue
        piece = _mp_mixture_mass(lo, hi, x, p, b, noise) - mp.exp(eps) * _mp_mixture_mass(lo, hi, x, q, b, noise)
        total += max(piece, 0)
    return float(total)


def _mp_mass_one(lo, hi, x, b, noise):
    """P(lo < x + N ≤ hi) for one atom, at mpmath precision (lo may be −inf, hi +inf)."""
    b = mp.mpf(b)

    def cdf(t):
        if np.isinf(t):
            return mp.mpf(0 if t < 0 else 1)
        z = mp.mpf(t) - mp.mpf(x)
        if noise == "laplace":
            return mp.exp(z / b) / 2 if z < 0 else 1 - mp.exp(-z / b) / 2
        return mp.ncdf(z / b)

    return cdf(hi) - cdf(lo)  # 40 digits: no cancellation worth the name


def _mp_mixture_mass(lo, hi, x, w, b, noise):
    return sum((mp.mpf(float(wk)) * _mp_mass_one(lo, hi, float(xk), b, noise) for xk, wk in zip(x, w) if wk > 0), mp.mpf(0))


def north_west_corner(p, q):
    """The north-west-corner (greedy monotone) coupling of two pmfs, in pure Python fractions
    or floats: walk both pmfs left to right moving min(remaining) each step."""
    p, q = list(p), list(q)
    plan = [[0 * p[0] for _ in q] for _ in p]
    i = j = 0
    while i < len(p) and j < len(q):
        m = min(p[i], q[j])
        plan[i][j] += m
        p[i] -= m
        q[j] -= m
        if p[i] == 0:
            i += 1
        else:
            j += 1
    return plan


# ----------------------------------------------------------------------------- Gaussian mixtures


def mixture_delta_reference(first, second, b, eps, noise="laplace", masses="quad"):
    """max over both orders of ∫ [p_i − e^ε p_j]_+ for Gaussian mixtures (weights, means, stds)
    released with Laplace(b) or N(0, b²) noise (b = 0: none; point masses then split off), computed independently of jaxpuffer: the zeros of
    log p_i − log p_j − ε by a 40,001-point scan and scipy's brentq, then, over every positive
    panel between zeros and component means, ``masses="quad"``: scipy.integrate.quad of
    p_i − e^ε p_j (smooth there); ``masses="cdf"`` (faster): component CDFs written here with
    scipy.special (CDF left of a component's median, survival function right of it)."""
    from scipy import integrate, optimize
    from scipy.special import logsumexp

    noise = "gaussian" if b == 0 else noise  # no noise: N(0, 0²)

    def logpdf(y, w, m, s):
        y = np.atleast_1d(np.asarray(y, float))
        if noise == "laplace":
            comps = [_logpdf_np(y, mk, sk, b) for mk, sk in zip(m, s)]
        else:
            comps = [stats.norm.logpdf(y, mk, np.hypot(sk, b)) for mk, sk in zip(m, s)]
        return logsumexp(np.array([np.log(wk) + c for wk, c in zip(w, comps) if wk > 0]), axis=0)

    means = np.concatenate([first[1], second[1]])
    spread = float(np.max(np.concatenate([first[2], second[2]]))) + b
    lo, hi = means.min() - 40 * spread, means.max() + 40 * spread
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 40001), means]))
    on_grid = {}  # each prior's log density on the scan, computed once for both orders

    def grid_logpdf(d):
        key = tuple(np.asarray(v, float).tobytes() for v in d)
        if key not in on_grid:
            on_grid[key] = logpdf(grid, *d)
        return on_grid[key]

    def one(p, q):
        if b == 0 and (np.any(p[2] == 0) or np.any(q[2] == 0)):  # no noise, point masses: split off
            atoms = sum(max(sum(w for w, m, s in zip(*p) if s == 0 and m == x) - np.exp(eps) * sum(w for w, m, s in zip(*q) if s == 0 and m == x), 0.0)
                        for x in {m for w, m, s in zip(*p) if s == 0 and w > 0})
            p, q = ([np.where(d[2] > 0, d[0], 0.0), d[1], np.where(d[2] > 0, d[2], 1.0)] for d in (p, q))
            if not np.any(p[0] > 0) or not np.any(q[0] > 0):
                return atoms + (float(np.sum(p[0])) if not np.any(q[0] > 0) else 0.0)
            return atoms + one(p, q)
        r = lambda y: logpdf(y, *p) - logpdf(y, *q) - eps  # noqa: E731
        values = grid_logpdf(p) - grid_logpdf(q) - eps  # r on the scan
        pos = values > 0
        roots = [optimize.brentq(lambda x: r(x)[0], grid[k], grid[k + 1], xtol=1e-14, rtol=1e-15) for k in np.nonzero(pos[:-1] != pos[1:])[0]]
        cuts = np.unique(np.concatenate([[-np.inf, np.inf], roots, means]))
        diff = lambda y: np.exp(logpdf(y, *p))[0] - np.exp(eps) * np.exp(logpdf(y, *q))[0]  # noqa: E731
        total = 0.0
        for a, c in zip(cuts[:-1], cuts[1:]):
            mid = (a + c) / 2 if np.isfinite(a) and np.isfinite(c) else (c - 1.0 if np.isfinite(c) else a + 1.0)
            if r(mid)[0] > 0:
                if masses == "quad":
                    total += integrate.quad(diff, a, c, epsabs=1e-17, epsrel=1e-12, limit=400)[0]
                else:
                    total += mixture_mass(a, c, *p) - np.exp(eps) * mixture_mass(a, c, *q)
        return max(total, 0.0)

    def mixture_mass(a, c, w, m, s):
        return sum(wk * component_mass(a - mk, c - mk, sk) for wk, mk, sk in zip(w, m, s) if wk > 0)

    def component_mass(za, zc, s):  # P(za < Z ≤ zc) for Z = N(0, s²) ⊛ noise (median 0)
        def tails(z):  # (F(z), S(z))
            if not np.isfinite(z):
                return (0.0, 1.0) if z < 0 else (1.0, 0.0)
            if noise == "gaussian":
                v = np.hypot(s, b)
                return special.ndtr(z / v), special.ndtr(-z / v)
            if s == 0:
                half = 0.5 * np.exp(-abs(z) / b)
                return (half, 1 - half) if z < 0 else (1 - half, half)
            u, v = z / s, s / b
            ea = 0.5 * np.exp(v * v / 2 - z / b + special.log_ndtr(u - v))
            eb = 0.5 * np.exp(v * v / 2 + z / b + special.log_ndtr(-u - v))
            return special.ndtr(u) - ea + eb, special.ndtr(-u) + ea - eb

        (fa, sa), (fc, sc) = tails(za), tails(zc)
        return fc - fa if zc <= 0 else (sa - sc if za >= 0 else 1.0 - fa - sc)

    return max(one(first, second), one(second, first))
