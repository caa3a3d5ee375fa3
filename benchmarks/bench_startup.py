"""First contact: wall and CPU seconds of a fresh process, cold and warm (issue 15).

Each scenario runs twice in a new Python process with its own compile-cache folder
(``JAXPUFFER_CACHE_DIR``): *cold* — the folder is empty, every program is compiled; *warm* — the
same folder again, so JAX's persistent cache serves what the cold run compiled. CPU seconds are
the child's user + system time (``resource.RUSAGE_CHILDREN``); on this 2-core machine XLA
compiles on more than one thread, so CPU can exceed wall.

    python benchmarks/bench_startup.py                 # every scenario
    python benchmarks/bench_startup.py --only exact,import    # names containing 'exact' or 'import'

Baseline in the same run: ``python -c "import numpy, scipy.stats"`` (a process that only imports
the scientific stack), so the table can be read as a ratio on a shared machine.

``--tree DIR`` times another checkout's jaxpuffer (before/after a change: a ``git worktree`` of the
old commit), with the same interpreter and packages. The children run in that folder: ``python -c``
and ``python -m`` put their working folder first on ``sys.path``, ahead of ``PYTHONPATH`` and the
installed package, so setting ``PYTHONPATH`` alone from this checkout times this checkout again.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

_GAUSS = "import jaxpuffer as jp; P = jp.PairSet(jp.Gaussian([0., 0., 2.], [1., 1., 1.]), jp.Gaussian([1., 0., 0.], [2., 3., 1.]))"
_MIX = (
    "import jaxpuffer as jp; P = jp.PairSet("
    "jp.GaussianMixture([[.5, .5], [.3, .7], [.6, .4]], [[0., 2.], [-1., 1.], [0., 3.]], [[1., .5], [1., 2.], [.7, .7]]),"
    "jp.GaussianMixture([[.4, .6], [.5, .5], [.6, .4]], [[0., 2.5], [-1., 0.], [1., 3.]], [[1., 1.], [1., 1.], [.7, 1.5]]))"
)
_DISC = (
    "import jaxpuffer as jp; P = jp.PairSet("
    "jp.Discrete([[0., 1., 2.]] * 3, [[.2, .5, .3], [.6, .2, .2], [.1, .1, .8]]),"
    "jp.Discrete([[0., 1., 2.]] * 3, [[.3, .4, .3], [.2, .2, .6], [.3, .3, .4]]))"
)


def _cal(setup: str, level: str, noise: str = "laplace") -> str:
    return f"{setup}; r = jp.calibrate(P, 1.0, 1e-6, level={level!r}, noise={noise!r}); print(float(r.scale), r.delta_achieved)"


SCENARIOS: dict[str, list[str]] = {
    "baseline: import numpy, scipy.stats": [sys.executable, "-c", "import numpy, scipy.stats"],
    "import jaxpuffer": [sys.executable, "-c", "import jaxpuffer"],
    "README command 1 (jaxpuffer calibrate)": [sys.executable, "-m", "jaxpuffer.cli", "calibrate"],
}
for _level in ("theorem", "indicator", "coupling", "exact"):
    SCENARIOS[f"gaussian pairs x3, {_level}, laplace"] = [sys.executable, "-c", _cal(_GAUSS, _level)]
for _level in ("coupling", "exact"):
    SCENARIOS[f"gaussian pairs x3, {_level}, gaussian noise"] = [sys.executable, "-c", _cal(_GAUSS, _level, "gaussian")]
for _level in ("theorem", "coupling", "exact"):
    SCENARIOS[f"mixture pairs x3, {_level}, laplace"] = [sys.executable, "-c", _cal(_MIX, _level)]
    SCENARIOS[f"discrete pairs x3, {_level}, laplace"] = [sys.executable, "-c", _cal(_DISC, _level)]
SCENARIOS["mixture pairs x3, exact, gaussian noise"] = [sys.executable, "-c", _cal(_MIX, "exact", "gaussian")]
SCENARIOS["jax.grad of an exact calibration (d b / d eps)"] = [
    sys.executable, "-c",
    f"{_GAUSS}; import jax; print(jax.grad(lambda e: jp.calibrate(P, e, 1e-6, level='exact').scale)(1.0))",
]
SCENARIOS["mixture pairs x3: exact calibration, then its jax.grad (d b / d eps)"] = [
    sys.executable, "-c",
    f"{_MIX}; import jax; f = lambda e: jp.calibrate(P, e, 1e-6, level='exact').scale; print(float(f(1.0)), jax.grad(f)(1.0))",
]


def run(cmd: list[str], cache_dir: str, tree: str) -> tuple[float, float]:
    """Wall and CPU seconds of one child process run in ``tree`` (raises if it fails)."""
    env = {**os.environ, "JAXPUFFER_CACHE_DIR": cache_dir, "JAXPUFFER_CACHE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the scenarios whose name contains one of these comma-separated texts")
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the checkout whose jaxpuffer the children import (default: this one)")
    args = parser.parse_args()
    if not os.path.isfile(os.path.join(args.tree, "jaxpuffer", "__init__.py")):
        parser.error(f"--tree {args.tree!r} holds no jaxpuffer package")
    wanted = args.only.split(",")
    chosen = {k: v for k, v in SCENARIOS.items() if any(w in k for w in wanted) or k.startswith("baseline")}
    print(f"{'scenario':<50} {'cold wall':>9} {'cold CPU':>9} {'warm wall':>9} {'warm CPU':>9}   (seconds)")
    for name, cmd in chosen.items():
        with tempfile.TemporaryDirectory(prefix="jaxpuffer-cache-") as folder:
            cold = run(cmd, folder, args.tree)
            warm = run(cmd, folder, args.tree)
        print(f"{name:<50} {cold[0]:9.2f} {cold[1]:9.2f} {warm[0]:9.2f} {warm[1]:9.2f}", flush=True)


if __name__ == "__main__":
    main()
