"""A bound on the memory mappings of a process that compiles many XLA programs (the test suite's
workers, the harness's main process)."""
from __future__ import annotations

import functools
import gc


@functools.cache
def _map_limit() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as file:
            return int(file.read())
    except (OSError, ValueError):
        return None  # not Linux: no such per-process limit to keep below


def bound_memory_maps() -> None:
    """Every program XLA compiles for the CPU keeps ~30 memory mappings until JAX drops it, and Linux
    allows a process vm.max_map_count of them (65,530 here). A test worker that had compiled a few
    thousand programs segfaulted in its next compile (CI, issue 17; its core file held 65,021), and
    a 30-minute harness run stopped after 10,752 checks with "LLVM ERROR: Unable to allocate section
    memory". Past half the limit, JAX's caches are cleared."""
    limit = _map_limit()
    if limit is None:
        return
    with open("/proc/self/maps", "rb") as file:
        count = sum(1 for _ in file)
    if count > limit // 2:
        import jax

        jax.clear_caches()
        gc.collect()
