import contextlib
import os
import pathlib
import shutil
import sys
import tempfile

os.environ["JAXPUFFER_CACHE"] = "0"  # the user's on-disk compile cache stays off in tests (see pytest_configure)

import jax

jax.config.update("jax_enable_x64", True)  # explicit, as README "float64" advises when jax comes first

import jaxpuffer._cache  # noqa: E402
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # tests/_reference.py, tests/adversarial
from adversarial.memory import bound_memory_maps  # noqa: E402
import _compile_report  # noqa: E402

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


def pytest_addoption(parser):
    _compile_report.addoption(parser)  # --compile-report


def pytest_configure(config):
    """One fresh on-disk compile cache per test session, shared by its xdist workers: a program that
    both workers need (or one worker again, after the memory-map guard below cleared JAX's caches)
    is compiled once per session. Nothing is read from an earlier session or from the user's cache,
    so every program the tests use is compiled (and its compile time paid) in every session."""
    if hasattr(config, "workerinput"):
        folder = config.workerinput["jaxpuffer_cache"]
    else:
        folder = config._jaxpuffer_cache = tempfile.mkdtemp(prefix="jaxpuffer-tests-")
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # every program, as the library does
    jaxpuffer._cache.set_export_folder(os.path.join(folder, "exported"))  # the traced search programs too, as the library does
    _compile_report.configure(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # pytest-xdist: the controller hands its folder to each worker
    node.workerinput["jaxpuffer_cache"] = node.config._jaxpuffer_cache


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        shutil.rmtree(config._jaxpuffer_cache, ignore_errors=True)


@pytest.fixture(scope="session")
def datasets_dir():
    path = SHARED / "datasets"
    if not path.is_dir():
        pytest.fail(f"the shared datasets folder {path} is missing (it sits beside the checkout)")
    return path


@pytest.fixture(autouse=True)
def _bounded_memory_maps():
    """After each test, JAX's caches are cleared if the worker holds more than half the memory
    mappings Linux allows a process (:func:`adversarial.memory.bound_memory_maps`)."""
    yield
    bound_memory_maps()


@contextlib.contextmanager
def _recording_compiles():
    """The XLA backend compiles made inside the block, as a list of event names (empty: nothing compiled)."""
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield compiles
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@pytest.fixture
def recording_compiles():
    """``with recording_compiles() as compiles:`` lists the XLA backend compiles made in the block."""
    return _recording_compiles
