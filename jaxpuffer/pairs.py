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
from .priors import Gaussian


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
        object.__setattr__(self, "first", first.broadcast_to(shape))
        object.__setattr__(self, "second", second.broadcast_to(shape))
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


def concatenate(*pair_sets: PairSet) -> PairSet:
    """Join pair sets of the same prior type and symmetry into one flat (1-D) batch."""
    if not pair_sets:
        raise ValueError("pair_sets must name at least one PairSet")
    kinds = {(type(p.first), p.symmetric) for p in pair_sets}
    if len(kinds) != 1:
        raise ValueError("pair_sets must share one prior type and one symmetric flag")
    flat = [p.reshape(-1) for p in pair_sets]
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *flat)
