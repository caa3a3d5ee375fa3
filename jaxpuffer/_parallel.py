"""Where a calibration runs: the pair axis sharded over devices, and over processes (issue 16).

**Devices.** The per-pair search, its evaluators and the certificate's δ are lanewise: lane k of
every output depends on lane k of the inputs only. :func:`over_lanes` runs such a function under
``jax.shard_map`` over a mesh of this process's devices, each device on its own block of lanes with
its own ``while_loop`` (a device whose pairs are done stops; nothing is communicated). Batches are
padded to a multiple of :func:`granule` = 64 lanes per device, the vector width the one-device
batches already use, so a device sees the same kind of batch as the one-device run.

**Processes.** Under JAX's multi-controller runtime (``jax.distributed.initialize``, one process
per host), every process calls :func:`jaxpuffer.calibrate` with *its part* of the pair set (the
global set is the processes' parts concatenated along the first batch axis, in process order) and
searches it on its own devices; the results meet in JAX's collectives (:func:`gather_rows`,
:func:`gather_tree`: ``process_allgather``, gloo on CPU, NCCL on GPU), so every process returns the
Calibration of the whole set. The search itself runs no collective: a global SPMD program would
synchronise every iteration of the search loop across hosts, for pairs that never interact.
:func:`agreement` makes an error on one process an error on every process instead of a hang,
and checks that every process was given the same arguments.
"""

from __future__ import annotations

import zlib
from contextlib import contextmanager
from functools import partial, wraps

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec

from ._validate import in_host_memory

LANE_AXIS = "pairs"
VECTOR_LANES = 64  # lanes per device that every padded batch is a multiple of


def resolve_mesh(devices) -> Mesh | None:
    """The mesh whose devices share the pair axis, or None for one device.

    ``devices``: None (every device of this process, ``jax.local_devices()``), a sequence of
    devices, or a ``jax.sharding.Mesh`` (the lanes are split over all its axes). Devices must
    belong to this process: across processes the per-pair results meet through collectives."""
    if devices is None:
        devices = jax.local_devices()
    if isinstance(devices, Mesh):
        mesh = devices
    else:
        try:
            flat = list(devices)
        except TypeError:
            raise ValueError(f"devices must be None, a sequence of jax devices or a jax.sharding.Mesh; got {devices!r}") from None
        if not flat or not all(isinstance(d, jax.Device) for d in flat):
            raise ValueError(f"devices must be None, a non-empty sequence of jax devices or a jax.sharding.Mesh; got {devices!r}")
        if len(set(flat)) != len(flat):
            raise ValueError(f"devices lists a device twice: {flat!r}")
        mesh = Mesh(np.array(flat, dtype=object), (LANE_AXIS,))
    here = jax.process_index()
    if any(d.process_index != here for d in mesh.devices.flat):
        raise ValueError(
            "devices must be this process's own devices (jax.local_devices()): across processes, calibrate runs each "
            "process's part of the pairs on its devices and gathers the results"
        )
    return None if mesh.size == 1 else mesh


def granule(mesh: Mesh | None) -> int:
    """Padded batch sizes are multiples of this: 64 lanes per device."""
    return VECTOR_LANES * (1 if mesh is None else mesh.size)


def bucket(m: int, cap: int, step: int = VECTOR_LANES) -> int:
    """Padded batch size for m pairs, at most ``cap`` rounded up to a multiple of ``step``: a
    power of two times ``step`` up to 32·step, then a multiple of 32·step (few compiled shapes, at
    most 32·step − 1 padded pairs of wasted work). ``step`` is 64 lanes per device
    (:func:`granule`), so that every pair runs in a full vector lane group:
    XLA's remainder lanes may round differently by an ulp, and the answer must not depend on how
    the pairs were batched."""
    size = step << max(0, (-(-m // step) - 1).bit_length()) if m <= 32 * step else -(-m // (32 * step)) * 32 * step
    return min(-(-cap // step) * step, size)


def pad_index(idx: np.ndarray, size: int) -> np.ndarray:
    """``idx`` padded to ``size`` by repeating its first entry."""
    return idx if idx.size >= size else np.concatenate([idx, np.full(size - idx.size, idx[0])])


def pad_take(arrays, idx: np.ndarray, size: int):
    """Gather ``idx`` from each array, padded to ``size`` by repeating the first index (scalars,
    such as one ε for every pair, are shared as they are)."""
    padded = pad_index(idx, size)
    return tuple(a if jnp.ndim(a) == 0 else take_lanes(a, padded) for a in arrays)


def take_lanes(a, index: np.ndarray):
    """``a[index]``: on the host where ``a`` is a concrete array in this process's CPU memory (no
    gather compiled for each new shape: a cold call's chunks compiled nine small programs each),
    else by JAX (traced, or on an accelerator, where a copy to the host would cost more)."""
    return jax.device_put(np.asarray(a)[index]) if in_host_memory(a) else a[index]


def over_lanes(fn):
    """``fn(cfg, *args)``, lanewise in every array argument and output (leading axis the lanes;
    0-d arguments are shared by every lane), run over ``cfg.mesh``: one device where it is None,
    else one block of lanes per device under ``jax.shard_map``. ``cfg`` is static."""

    @wraps(fn)
    def run(cfg, *args):
        if cfg.mesh is None:
            return fn(cfg, *args)
        lanes = PartitionSpec(cfg.mesh.axis_names)
        specs = jax.tree_util.tree_map(lambda a: lanes if jnp.ndim(a) else PartitionSpec(), args)
        return _shard_map(partial(fn, cfg), mesh=cfg.mesh, in_specs=specs, out_specs=lanes)(*args)

    return run


def _shard_map(fn, **kwargs):
    """``jax.shard_map`` (JAX ≥ 0.6), else its experimental predecessor; no replication checks
    (every output is lanewise)."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(fn, check_vma=False, **kwargs)
    from jax.experimental.shard_map import shard_map  # older JAX (not tested here: 0.10.2 is)

    return shard_map(fn, check_rep=False, **kwargs)


def processes() -> int:
    return jax.process_count()


class Ballot:
    """What a process reports when it leaves an :func:`agreement` block: ``fingerprint``, bytes
    that must be the same on every process (its arguments, say)."""

    fingerprint: bytes = b""


@contextmanager
def agreement(what: str, mismatch: str):
    """Every process leaves the block the same way, through one collective at its end (the block
    itself must run none, so that no process waits in a collective that another never reaches):
    where the block raised on one process, the others raise a RuntimeError; where the ballots'
    fingerprints differ, every process raises ValueError(``mismatch``)."""
    ballot = Ballot()
    if processes() == 1:
        yield ballot
        return
    try:
        yield ballot
    except BaseException:
        _vote(False, b"")
        raise
    votes = _vote(True, ballot.fingerprint)  # (processes, 2): ok, crc32 of the fingerprint
    failed = np.flatnonzero(votes[:, 0] == 0)
    if failed.size:
        raise RuntimeError(f"{what} failed on process {', '.join(str(int(p)) for p in failed)} (its own error says why)")
    differs = np.flatnonzero(votes[:, 1] != votes[0, 1])
    if differs.size:
        raise ValueError(f"{mismatch} (process {int(differs[0])} differs from process 0)")


def _vote(ok: bool, fingerprint: bytes) -> np.ndarray:
    return np.asarray(multihost_utils.process_allgather(np.array([int(ok), zlib.crc32(fingerprint)], np.int64)))


def gather_rows(local: np.ndarray) -> np.ndarray:
    """The processes' (rows, n_p) arrays side by side: (rows, Σ n_p), in process order (the
    parts may differ in length: each is padded to the longest for the collective)."""
    sizes = multihost_utils.process_allgather(np.int64(local.shape[1]))
    padded = np.zeros(local.shape[:1] + (int(sizes.max()),), local.dtype)
    padded[:, : local.shape[1]] = local
    every = multihost_utils.process_allgather(padded)  # (processes, rows, longest)
    return np.concatenate([every[p, :, : sizes[p]] for p in range(sizes.size)], axis=1)


def gather_tree(tree):
    """Every process's ``tree`` (same structure and shapes everywhere), stacked on a new leading axis."""
    return jax.tree_util.tree_map(np.asarray, multihost_utils.process_allgather(tree))



def on_lanes(fun, need, default, *args, rounds: int = 8):
    """``fun`` (a function of per-lane ``args``, arrays whose leading axis is the lanes) on the
    lanes where ``need``, ``default`` elsewhere (pytrees of per-lane arrays): the lanes that need
    it are gathered ⌈n/``rounds``⌉ at a time, in as many rounds as they fill (at most ``rounds``;
    a round with none left is skipped), so the cost follows the number of such lanes and ``fun``
    is traced and compiled once (the mixture evaluator's subdivision pass and coupling fallback;
    the Newton brackets of Gaussian pairs under Laplace noise). Differentiable in both modes (a
    ``lax.scan`` of ``lax.cond``s); under an outer ``vmap`` the conds become selects and every
    round runs."""
    n = need.shape[0]
    cap = max(1, -(-n // rounds))
    order = jnp.nonzero(need, size=n, fill_value=n)[0]  # the lanes that need it first; n: none
    count = jnp.sum(need)

    def one_round(acc, start):
        def compute(acc):
            idx = jax.lax.dynamic_slice(order, (start,), (cap,))
            out = fun(*jax.tree.map(lambda a: a[jnp.minimum(idx, n - 1)], args))
            return jax.tree.map(lambda d, o: d.at[idx].set(o, mode="drop"), acc, out)

        return jax.lax.cond(start < count, compute, lambda acc: acc, acc), None

    return jax.lax.scan(one_round, default, jnp.arange(0, n, cap))[0]
