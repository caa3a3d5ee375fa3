"""``--compile-report`` (tests/_compile_report.py): run on a two-test module in a fresh pytest
session, it prints one row per test module with the tests' seconds and JAX's compile requests
and seconds, and a total; without the option it prints nothing."""

import pathlib

pytest_plugins = ["pytester"]
HERE = pathlib.Path(__file__).resolve().parent

_MODULE = '''
import jax, jax.numpy as jnp

def test_compiles_a_program():
    assert float(jax.jit(lambda x: jnp.sin(x) * 3.0)(1.0)) > 0

def test_compiles_nothing():
    assert 1 + 1 == 2
'''


def _run(pytester, *options):
    pytester.makeconftest(f"import sys; sys.path.insert(0, {str(HERE)!r}); import _compile_report\n"
                          "def pytest_addoption(parser):\n    _compile_report.addoption(parser)\n"
                          "def pytest_configure(config):\n    _compile_report.configure(config)\n")
    pytester.makepyfile(test_tiny=_MODULE)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *options)


def test_report_lists_the_module_its_compiles_and_a_total(pytester):
    result = _run(pytester, "--compile-report")
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    header = next(i for i, line in enumerate(lines) if line.startswith("module") and "compile_s" in line)
    columns = lines[header].split()[1:]
    assert columns == ["tests_s", "compile_s", "requests", "cache_hits", "trace_s", "lower_s"]
    row = dict(zip(columns, map(float, lines[header + 1].split()[1:])))
    assert lines[header + 1].split()[0] == "test_tiny.py"
    assert row["requests"] >= 1 and row["compile_s"] > 0 and row["tests_s"] >= row["compile_s"]
    assert lines[header + 2].split()[0] == "total"


def test_no_report_without_the_option(pytester):
    result = _run(pytester)
    result.assert_outcomes(passed=2)
    assert not any("compile report" in line for line in result.stdout.lines)
