import os
import pathlib
import sys

os.environ.setdefault("JAXPUFFER_CACHE_DIR", "")  # the CLI's on-disk compile cache stays off in tests

import jaxpuffer  # noqa: F401  (enables float64 before any test builds arrays)
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # tests/_reference.py
SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def datasets_dir():
    path = SHARED / "datasets"
    if not path.is_dir():
        pytest.fail(f"the shared datasets folder {path} is missing (it sits beside the checkout)")
    return path
