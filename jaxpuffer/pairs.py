"""Discriminative pair sets 𝕊: batches of (prior given s_i, prior given s_j).

A :class:`PairSet` holds two priors of the same type broadcast to one batch shape. Every leading
axis is just "more pairs": an axis may index secret pairs, another the adversaries' priors ρ;
calibration takes the maximum over all of them (MATH.md §1). ``symmetric=True`` protects both
orders (s_i, s_j) and (s_j, s_i), the usual case.

Builders:
  * :func:`all_pairs` — every ordered pair i ≠ j of S priors;
  * :func:`sum_query_presence` — 𝕊_⊥ of Corollary 1(a), user k present vs absent, O(K);
  * :func:`sum_query_value` — 𝕊_a of Corollary 1(b), user k reports a vs a';
  * :func:`concatenate` — several pair sets of the same kind as one flat batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate
from .priors import Discrete, Gaussian, GaussianMixture


@jax.tree_util.register_pytree_node_class
class PairSet:
    """A batch of ordered prior pairs (first = X | s_i, second = X | s_j).

    Args:
      first: prior of X given s_i (any batch shape).
      second: prior of X given s_j, same type, batch shape broadcastable with ``first``.
      symmetric: if True (default) both orders of every pair are protected.
    """

    def __init__(self, first, second, symmetric: bool = True):
        if type(first) is not type(second):
            raise ValueError(
                f"second must be a prior of the same type as first; got {type(first).__name__} "
                f"and {type(second).__name__}"
            )
        if not hasattr(first, "batch_shape"):
            raise ValueError(f"first must be a jaxpuffer prior; got {type(first).__name__}")
        shape = _validate.broadcast_shapes(first=first.batch_shape, second=second.batch_shape)
        if int(np.prod(shape)) == 0:
            raise ValueError(f"pairs must contain at least one pair; got batch shape {shape}")
        first, second = first.broadcast_to(shape), second.broadcast_to(shape)
        if isinstance(first, Discrete):
            first, second = align_discrete(first, second)
        elif isinstance(first, GaussianMixture) and first.num_components != second.num_components:
            width = max(first.num_components, second.num_components)
            first, second = first.padded(width), second.padded(width)
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)
        object.__setattr__(self, "symmetric", bool(symmetric))

    def __setattr__(self, name, value):
        raise AttributeError("PairSet is immutable")

    def tree_flatten(self):
        return (self.first, self.second), self.symmetric

    @classmethod
    def tree_unflatten(cls, symmetric, children):
        obj = object.__new__(cls)
        object.__setattr__(obj, "first", children[0])
        object.__setattr__(obj, "second", children[1])
        object.__setattr__(obj, "symmetric", symmetric)
        return obj

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.first.batch_shape

    @property
    def size(self) -> int:
        return int(np.prod(self.batch_shape))

    def swapped(self) -> "PairSet":
        """The reversed pairs (s_j, s_i)."""
        return PairSet.tree_unflatten(self.symmetric, (self.second, self.first))

    def reshape(self, *shape) -> "PairSet":
        return PairSet.tree_unflatten(
            self.symmetric, (self.first.reshape(*shape), self.second.reshape(*shape))
        )

    def __getitem__(self, index) -> "PairSet":
        return PairSet.tree_unflatten(self.symmetric, (self.first[index], self.second[index]))

    def __len__(self) -> int:
        return len(self.first)

    def __repr__(self) -> str:
        return (
            f"PairSet({type(self.first).__name__} pairs, batch_shape={self.batch_shape}, "
            f"symmetric={self.symmetric})"
        )


def require_pairs(pairs, prior_type: type, caller: str) -> PairSet:
    """``pairs`` if it is a PairSet of ``prior_type`` priors, else a ValueError naming ``caller``."""
    if not isinstance(pairs, PairSet):
        raise ValueError(f"pairs must be a PairSet; got {type(pairs).__name__}")
    if not isinstance(pairs.first, prior_type):
        raise ValueError(f"pairs must hold {prior_type.__name__} priors for {caller}; got {type(pairs.first).__name__}")
    return pairs


def _uniform_rows(support) -> np.ndarray | None:
    """The one alphabet shared by every prior of a concrete batch, else None."""
    if not _validate.is_concrete(support):
        return None
    rows = np.asarray(support).reshape(-1, support.shape[-1])
    return rows[0] if np.all(rows == rows[0]) else None


def align_discrete(first: Discrete, second: Discrete) -> tuple[Discrete, Discrete]:
    """Put two batches of discrete priors (same batch shape) on a common support per pair.

    Equal alphabets (pair by pair: one array, traced or not, or equal concrete values) are kept as
    they are. Alphabets shared across the batch are merged into their sorted union (exact, each
    point once). Otherwise each pair's two alphabets are concatenated and sorted, each pmf padded
    with zeros on the other's points (a point in both alphabets then appears twice, harmless for
    every computation here: a zero-width segment or a zero-mass atom).
    """
    s1, s2 = first.support, second.support
    # one array (also a support traced by jax.grad: the same atoms as its concrete values), or equal values
    if s1 is s2 or (s1.shape == s2.shape and _validate.is_concrete(s1) and _validate.is_concrete(s2) and np.array_equal(s1, s2)):
        return first, second
    r1, r2 = _uniform_rows(s1), _uniform_rows(s2)
    if r1 is not None and r2 is not None:
        if r1.shape == r2.shape and np.array_equal(r1, r2):
            return first, second
        union = np.union1d(r1, r2)
        shape = first.batch_shape + (union.size,)

        def lift(prior, row):
            probs = jnp.zeros(shape, prior.probs.dtype).at[..., np.searchsorted(union, row)].add(prior.probs)
            return Discrete.tree_unflatten(None, (jnp.broadcast_to(jnp.asarray(union), shape), probs))

        return lift(first, r1), lift(second, r2)
    support = jnp.concatenate([s1, s2], axis=-1)
    order = jnp.argsort(support, axis=-1, stable=True)
    zeros1, zeros2 = jnp.zeros_like(second.probs), jnp.zeros_like(first.probs)
    p1 = jnp.concatenate([first.probs, zeros1], axis=-1)
    p2 = jnp.concatenate([zeros2, second.probs], axis=-1)
    take = lambda a: jnp.take_along_axis(a, order, axis=-1)  # noqa: E731
    return (
        Discrete.tree_unflatten(None, (take(support), take(p1))),
        Discrete.tree_unflatten(None, (take(support), take(p2))),
    )


def discrete_arrays(pairs: PairSet) -> tuple:
    """(x, p_i, p_j) of a PairSet of Discrete priors (batch shape, then atoms): the aligned alphabet
    padded to the width the evaluators compile for (:meth:`jaxpuffer.priors.Discrete.bucketed`)."""
    first, second = pairs.first.bucketed(), pairs.second.bucketed()
    return first.support, first.probs, second.probs


def all_pairs(priors) -> PairSet:
    """Every ordered pair (i, j), i ≠ j, of a 1-D batch of S priors: S(S−1) pairs.

    Pairs are in row-major order of (i, j) with the diagonal removed; :func:`all_pairs_index`
    gives the (i, j) of each. Both orders are listed, so the pair set is not marked symmetric.
    """
    if len(priors.batch_shape) != 1 or priors.batch_shape[0] < 2:
        raise ValueError(f"priors must be a 1-D batch of at least 2 priors; got batch shape {priors.batch_shape}")
    i, j = all_pairs_index(priors.batch_shape[0])
    return PairSet(priors[i], priors[j], symmetric=False)


def all_pairs_index(num_priors: int) -> tuple[np.ndarray, np.ndarray]:
    """The (i, j) indices of the pairs made by :func:`all_pairs` for ``num_priors`` priors."""
    i, j = np.nonzero(~np.eye(num_priors, dtype=bool))
    return i, j


def _users(user_means, user_stds):
    means = _validate.float_array("user_means", user_means)
    stds = _validate.float_array("user_stds", user_stds)
    _validate.nonnegative("user_stds", stds)
    if means.ndim != 1 or means.shape[0] == 0:
        raise ValueError(f"user_means must be a non-empty 1-D array; got shape {means.shape}")
    if stds.shape not in ((), means.shape):
        raise ValueError(f"user_stds must be a scalar or match user_means {means.shape}; got shape {stds.shape}")
    return means, jnp.broadcast_to(stds, means.shape)


def presence_totals(means: jax.Array, stds: jax.Array):
    """Totals of Corollary 1(a) in O(K): sum mean M, total variance V, and per user the
    variance of the others V − σ_k² (clamped at 0 against round-off)."""
    variances = stds**2
    total_var = jnp.sum(variances)
    return jnp.sum(means), total_var, jnp.maximum(total_var - variances, 0.0)


def sum_query_presence(user_means, user_stds) -> PairSet:
    """𝕊_⊥ of Corollary 1(a): X = Σ_k Z_k over K independent users, pair k = (k present, k absent).

    Present: N(Σ_k' μ_k', Σ_k' σ_k'²); absent: N(Σ_{k'≠k} μ_k', Σ_{k'≠k} σ_k'²) (MATH.md §2).
    Built from the totals in O(K) time and memory. Symmetric.
    """
    means, stds = _users(user_means, user_stds)
    total_mean, total_var, others_var = presence_totals(means, stds)
    present = Gaussian(jnp.full_like(means, total_mean), jnp.full_like(means, jnp.sqrt(total_var)))
    absent = Gaussian(total_mean - means, jnp.sqrt(others_var))
    return PairSet(present, absent, symmetric=True)


def sum_query_value(user_means, user_stds, a, a_prime) -> PairSet:
    """𝕊_a of Corollary 1(b): pair k = (user k reports a, user k reports a').

    Both priors are N(Σ_{k'≠k} μ_k' + value, Σ_{k'≠k} σ_k'²); ``a`` and ``a_prime`` are scalars
    or per-user arrays. Symmetric.
    """
    means, stds = _users(user_means, user_stds)
    a = _validate.float_array("a", a)
    a_prime = _validate.float_array("a_prime", a_prime)
    total_mean, _, others_var = presence_totals(means, stds)
    others_mean = total_mean - means
    others_std = jnp.sqrt(others_var)
    return PairSet(Gaussian(others_mean + a, others_std), Gaussian(others_mean + a_prime, others_std))


COUNTING_PAIRS = ("0-1", "0-bot", "1-bot")


def _poisson_binomial(probs):
    """pmf on {0, …, V} of a sum of independent Bernoulli(p_k) bits (sequential convolution)."""

    def add_bit(pmf, p):
        return (1.0 - p) * pmf + p * jnp.concatenate([jnp.zeros(1, pmf.dtype), pmf[:-1]]), None

    start = jnp.zeros(probs.shape[0] + 1, probs.dtype).at[0].set(1.0)
    return jax.lax.scan(add_bit, start, probs)[0]


def counting_query_pmfs(user_probs):
    """The Kantorovich paper's V independent-user counting query X = Σ_k S_k, S_k ~ Bernoulli(p_k).

    Returns, per user i (shape (V, V + 1), on the support {0, …, V}), the pmfs of X given
    S_i = 0 (Poisson-binomial of the others), S_i = 1 (the same shifted by one) and S_i = ⊥
    (user i's bit unknown: p_i·[S_i = 1] + (1 − p_i)·[S_i = 0], the Poisson-binomial of all V;
    Appendix F). Each user's "others" pmf is its own sequential convolution with p_i set to 0:
    O(V²) per user, vmapped.
    """
    probs = _validate.float_array("user_probs", user_probs)
    if probs.ndim != 1 or probs.shape[0] == 0:
        raise ValueError(f"user_probs must be a non-empty 1-D array; got shape {probs.shape}")
    _check_unit_closed("user_probs", probs)
    num = probs.shape[0]
    others = jax.vmap(lambda i: _poisson_binomial(jnp.where(jnp.arange(num) == i, 0.0, probs)))(jnp.arange(num))
    others = jnp.maximum(others, 0.0)
    given_one = jnp.concatenate([jnp.zeros((num, 1), others.dtype), others[:, :-1]], axis=1)
    unknown = probs[:, None] * given_one + (1.0 - probs[:, None]) * others
    return others, given_one, unknown


def _check_unit_closed(name, arr):
    if _validate.is_concrete(arr) and not np.all((np.asarray(arr) >= 0) & (np.asarray(arr) <= 1)):
        raise ValueError(f"{name} must lie in [0, 1]")


def counting_query(user_probs, pair: str = "0-1") -> PairSet:
    """Pair set of the counting query (Kantorovich paper §3.4, Figures 1, 2 and 5), one pair per user.

    ``pair``: ``"0-1"`` — (S_i = 0, S_i = 1), the set 𝕊_i; ``"0-bot"`` — (S_i = 0, S_i = ⊥);
    ``"1-bot"`` — (S_i = 1, S_i = ⊥), the set 𝕊_⊥i. Discrete priors on {0, …, V}, symmetric.
    """
    _validate.choice("pair", pair, COUNTING_PAIRS)
    zero, one, unknown = counting_query_pmfs(user_probs)
    support = jnp.arange(zero.shape[1], dtype=jnp.float64)
    prior = {"0": zero, "1": one, "bot": unknown}
    first, second = pair.split("-")
    make = lambda pmf: Discrete.tree_unflatten(None, (jnp.broadcast_to(support, pmf.shape), pmf))  # noqa: E731
    return PairSet(make(prior[first]), make(prior[second]), symmetric=True)


def concatenate(*pair_sets: PairSet) -> PairSet:
    """Join pair sets of the same prior type and symmetry into one flat (1-D) batch."""
    if not pair_sets:
        raise ValueError("pair_sets must name at least one PairSet")
    kinds = {(type(p.first), p.symmetric) for p in pair_sets}
    if len(kinds) != 1:
        raise ValueError("pair_sets must share one prior type and one symmetric flag")
    flat = [p.reshape(-1) for p in pair_sets]
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *flat)
