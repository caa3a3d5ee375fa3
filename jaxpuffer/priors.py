"""Adversary priors: the distribution of the published value X given one secret.

Priors are immutable JAX pytrees with an arbitrary batch shape, so a whole set of secrets (or of
adversaries) is one object that ``jit``, ``vmap`` and ``grad`` pass through. Construction
validates concrete inputs eagerly (finite values, std ≥ 0, broadcastable shapes, the certified
range of :mod:`jaxpuffer._validate`); JAX's own unflattening bypasses validation, so tracers and
vmap placeholders flow freely, and ``ok()`` answers — traceably, per batch element — whether the
values are valid, so that a transformed calibration can return NaN instead of a number.

MATH.md §2: Gaussian X | s ~ N(μ, σ²), σ = 0 being a point mass (the differential-privacy case);
Discrete, a pmf on a finite sorted alphabet (Kantorovich paper); GaussianMixture Σ_m α_m N(μ_m, σ_m²).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from ._roots import log_or_minus_inf


class _Prior:
    """Shared pytree plumbing for priors: named array fields, immutable, indexable."""

    _fields: tuple[str, ...] = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **fields) -> None:
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def tree_flatten(self):
        return tuple(getattr(self, f) for f in self._fields), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj._set(**dict(zip(cls._fields, children)))
        return obj

    def _map(self, fn):
        return jax.tree_util.tree_map(fn, self)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


@jax.tree_util.register_pytree_node_class
class Gaussian(_Prior):
    """Gaussian prior N(mean, std²) with any batch shape; ``std == 0`` is a point mass.

    Args:
      mean: the prior mean μ (any shape).
      std: the prior standard deviation σ ≥ 0 (any shape broadcastable with ``mean``).

    The two fields are stored broadcast to their common shape, the prior's ``batch_shape``.
    """

    _fields = ("mean", "std")
    mean: jax.Array
    std: jax.Array

    def __init__(self, mean, std):
        mean = _validate.float_array("mean", mean)
        std = _validate.float_array("std", std)
        _validate.nonnegative("std", std)
        _validate.location("mean", mean)
        _validate.scale("std", std)
        shape = _validate.broadcast_shapes(mean=mean.shape, std=std.shape)
        self._set(mean=jnp.broadcast_to(mean, shape), std=jnp.broadcast_to(std, shape))

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.mean.shape)

    @property
    def variance(self) -> jax.Array:
        return self.std**2

    def ok(self) -> jax.Array:
        """Per batch element (traceable): mean and std finite and in the certified range, std ≥ 0."""
        return _validate.location_ok(self.mean) & _validate.scale_ok(self.std)

    def broadcast_to(self, shape) -> "Gaussian":
        return self._map(lambda a: jnp.broadcast_to(a, tuple(shape)))

    def reshape(self, *shape) -> "Gaussian":
        return self._map(lambda a: a.reshape(*shape))

    def __getitem__(self, index) -> "Gaussian":
        return self._map(lambda a: a[index])

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError("len() of a Gaussian prior with an empty batch shape")
        return self.batch_shape[0]


class _TrailingAxisPrior(_Prior):
    """Batch plumbing for priors whose fields carry one trailing axis (atoms or components)."""

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(getattr(self, self._fields[0]).shape[:-1])

    def broadcast_to(self, shape):
        return self._map(lambda a: jnp.broadcast_to(a, tuple(shape) + a.shape[-1:]))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return self._map(lambda a: a.reshape(*shape, a.shape[-1]))

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        return self._map(lambda a: a[index + (Ellipsis,)])

    def _appended(self, name: str, width: int, fills):
        """This prior widened to ``width`` on the trailing axis, each field (in ``_fields`` order)
        with its entry of ``fills`` (broadcast) appended; ``name`` names the width in the error."""
        have = getattr(self, self._fields[0]).shape[-1]
        if width < have:
            raise ValueError(f"{name} must be >= {have}; got {width}")
        if width == have:
            return self
        extra = width - have

        def grow(a, fill):  # (concrete values on the host: no program compiled per shape)
            xp = np if _validate.in_host_memory(a, fill) else jnp
            out = xp.concatenate([a, xp.broadcast_to(fill, a.shape[:-1] + (extra,))], axis=-1)
            return jax.device_put(out) if xp is np else out

        return self.tree_unflatten(None, tuple(grow(getattr(self, f), fill) for f, fill in zip(self._fields, fills)))

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError(f"len() of a {type(self).__name__} with an empty batch shape")
        return self.batch_shape[0]


@jax.tree_util.register_pytree_node_class
class Discrete(_TrailingAxisPrior):
    """A pmf on a finite sorted alphabet (the Kantorovich paper's priors), any batch shape.

    Args:
      support: the alphabet x_1 ≤ … ≤ x_n along the last axis (finite, non-decreasing; a repeated
        point is allowed, which lets pmfs of different sizes be padded to one width).
      probs: P(X = x_k) ≥ 0 along the last axis, summing to 1 within 1e-9 (the sum is then
        renormalised to 1 exactly).

    ``support`` and ``probs`` are broadcast to a common shape ``batch_shape + (n,)``; a 1-D
    ``support`` shared by a batch of ``probs`` is the usual form.
    """

    _fields = ("support", "probs")
    support: jax.Array
    probs: jax.Array

    def __init__(self, support, probs):
        support = _validate.float_array("support", support)
        probs = _validate.float_array("probs", probs)
        if support.ndim == 0 or probs.ndim == 0:
            raise ValueError("support and probs must have an atom axis (last axis); got a scalar")
        shape = _validate.broadcast_shapes(support=support.shape, probs=probs.shape)
        if shape[-1] == 0:
            raise ValueError("support must hold at least one point")
        if _validate.is_concrete(support) and np.any(np.diff(np.asarray(support), axis=-1) < 0):
            raise ValueError("support must be sorted in non-decreasing order along its last axis")
        _validate.location("support", support)
        probs = _validate.probability_vector("probs", probs)
        self._set(support=jnp.broadcast_to(support, shape), probs=jnp.broadcast_to(probs, shape))

    def ok(self) -> jax.Array:
        """Per batch element (traceable): atoms finite, in the certified range and sorted; probs a
        probability vector."""
        sorted_ = jnp.all(jnp.diff(self.support, axis=-1) >= 0, axis=-1)
        return jnp.all(_validate.location_ok(self.support), axis=-1) & sorted_ & _validate.probability_ok(self.probs)

    @property
    def num_atoms(self) -> int:
        return self.probs.shape[-1]

    @property
    def cdf(self) -> jax.Array:
        """F(x_k) = Σ_{l ≤ k} P(X = x_l), the last entry exactly 1."""
        return jnp.cumsum(self.probs, axis=-1).at[..., -1].set(1.0)

    @property
    def mean(self) -> jax.Array:
        return jnp.sum(self.support * self.probs, axis=-1)

    def padded(self, atoms: int) -> "Discrete":
        """The same pmf with atoms of probability 0 appended at its last point (the support stays
        sorted; a zero-width segment and a zero-mass atom change no δ, coupling or mgf here)."""
        support = np.asarray(self.support) if _validate.in_host_memory(self.support) else self.support
        fill = support[..., -1:] if atoms > self.num_atoms else 0.0  # (sliced only where it is used)
        return self._appended("atoms", atoms, (fill, 0.0))

    def bucketed(self) -> "Discrete":
        """:meth:`padded` to the width the evaluators compile for (:func:`atom_bucket`)."""
        return self.padded(atom_bucket(self.num_atoms))

    @classmethod
    def from_values(cls, values, alphabet) -> "Discrete":
        """The empirical pmf of ``values`` on ``alphabet`` (sorted); a value outside it is an error."""
        alphabet = np.asarray(alphabet, dtype=float)
        values = np.asarray(values, dtype=float).ravel()
        if values.size == 0:
            raise ValueError("values must hold at least one observation")
        idx = np.searchsorted(alphabet, values)
        inside = (idx < alphabet.size) & (alphabet[np.minimum(idx, alphabet.size - 1)] == values)
        if not np.all(inside):
            raise ValueError(f"values must lie on the alphabet; got {values[~inside][0]!r}")
        counts = np.bincount(idx, minlength=alphabet.size)
        return cls(alphabet, counts / counts.sum())


@jax.tree_util.register_pytree_node_class
class GaussianMixture(_TrailingAxisPrior):
    """Gaussian mixture Σ_m α_m N(μ_m, σ_m²) (the Gaussian-priors paper, Sections IV–V), any batch
    shape, components on the last axis.

    Args:
      weights: α_m ≥ 0 summing to 1 within 1e-9 along the last axis (then renormalised exactly);
        a zero weight pads a mixture to a common component count.
      means: μ_m. stds: σ_m ≥ 0 (0: a point-mass component).

    A one-component mixture is the :class:`Gaussian` of its component.
    """

    _fields = ("weights", "means", "stds")
    weights: jax.Array
    means: jax.Array
    stds: jax.Array

    def __init__(self, weights, means, stds):
        weights = _validate.float_array("weights", weights)
        means = _validate.float_array("means", means)
        stds = _validate.float_array("stds", stds)
        if min(weights.ndim, means.ndim, stds.ndim) == 0 and max(weights.ndim, means.ndim, stds.ndim) == 0:
            raise ValueError("weights, means and stds need a component axis (last axis)")
        shape = _validate.broadcast_shapes(weights=weights.shape, means=means.shape, stds=stds.shape)
        _validate.nonnegative("stds", stds)
        _validate.location("means", means)
        _validate.scale("stds", stds)
        weights = _validate.probability_vector("weights", jnp.broadcast_to(weights, shape))
        self._set(weights=weights, means=jnp.broadcast_to(means, shape), stds=jnp.broadcast_to(stds, shape))

    @classmethod
    def from_gaussian(cls, prior: Gaussian) -> "GaussianMixture":
        """The one-component mixture of a Gaussian prior."""
        return cls.tree_unflatten(None, (jnp.ones(prior.batch_shape + (1,)), prior.mean[..., None], prior.std[..., None]))

    def ok(self) -> jax.Array:
        """Per batch element (traceable): means and stds in the certified range, stds ≥ 0, weights a
        probability vector."""
        comps = _validate.location_ok(self.means) & _validate.scale_ok(self.stds)
        return jnp.all(comps, axis=-1) & _validate.probability_ok(self.weights)

    @property
    def num_components(self) -> int:
        return self.weights.shape[-1]

    @property
    def mean(self) -> jax.Array:
        return jnp.sum(self.weights * self.means, axis=-1)

    def padded(self, components: int) -> "GaussianMixture":
        """The same mixture with zero-weight components appended (copies of the first)."""
        return self._appended("components", components, (0.0, self.means[..., :1], self.stds[..., :1]))


def atom_bucket(atoms: int) -> int:
    """The width the evaluators pad an alphabet of ``atoms`` points to (:meth:`Discrete.padded`):
    the least of 1, 2, 3, 4, 6, 8, 12, 16, ... (2^k and 3·2^k) that holds it, so that alphabets of
    5 and 6 atoms, 7 and 8, 9 to 12, ... share one compiled program (25–35 s for the exact level's
    search under Gaussian noise on a 2-core CPU) at most 1.5 times the work of their own width.
    Powers of two alone, at up to twice the work, made a warm exact-level call under Gaussian noise
    1.46x slower for 5 atoms (1,024 pairs: 110 → 161 s)."""
    if atoms <= 2:
        return atoms
    power = 1 << (atoms - 1).bit_length()  # the least power of two ≥ atoms
    return 3 * power // 4 if atoms <= 3 * power // 4 else power


def log_mgf(weights, locations, stds, t, centre=0.0):
    """log E[e^{t(X − c)}] for X = Σ_m w_m N(μ_m, σ_m²) (σ = 0: atoms, the Discrete prior's pmf):
    logsumexp over the last axis of log w_m + (μ_m − c) t + σ_m² t²/2, components of weight 0
    dropped (not log 0 · 0). Every argument broadcasts against the component axis (give ``t`` and
    ``centre`` a trailing axis of 1). Under Laplace(b) noise, log M_i(±1/b) − log M_j(±1/b) are the
    limits of the noisy log-ratio (MATH.md §6); the shift c cancels in such differences and keeps
    (μ − c) t small."""
    log_w = log_or_minus_inf(weights)
    return jax.nn.logsumexp(log_w + (locations - centre) * t + 0.5 * (stds * t) ** 2, axis=-1)
