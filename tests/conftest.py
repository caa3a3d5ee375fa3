import os
import pathlib
import shutil
import sys
import tempfile

# One on-disk compile cache (JAX's persistent cache) per test session, shared by the xdist workers
# and the CLI/example subprocesses, so a program that several tests compile is compiled once. It
# is a fresh temporary folder (never the user's cache, never in the project tree), removed at the
# end: every session still starts cold.
_OWNS_CACHE = "PYTEST_XDIST_WORKER" not in os.environ and "JAXPUFFER_TEST_CACHE" not in os.environ
if _OWNS_CACHE:
    os.environ["JAXPUFFER_TEST_CACHE"] = tempfile.mkdtemp(prefix="jaxpuffer-test-cache-")
os.environ["JAXPUFFER_CACHE_DIR"] = os.environ["JAXPUFFER_TEST_CACHE"]

import jax  # noqa: E402
import jaxpuffer  # noqa: F401, E402  (enables float64 before any test builds arrays)
import pytest  # noqa: E402

jax.config.update("jax_compilation_cache_dir", os.environ["JAXPUFFER_TEST_CACHE"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


def pytest_unconfigure(config):
    if _OWNS_CACHE:
        shutil.rmtree(os.environ["JAXPUFFER_TEST_CACHE"], ignore_errors=True)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # tests/_reference.py
SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def datasets_dir():
    path = SHARED / "datasets"
    if not path.is_dir():
        pytest.fail(f"the shared datasets folder {path} is missing (it sits beside the checkout)")
    return path
