"""``pytest --compile-report``: where the suite's time goes, per test module (issue 15).

Each test's XLA work is summed from JAX's own monitoring events — backend compile requests (count
and seconds; a request that the persistent cache answers counts too, as a hit, in milliseconds),
tracing and lowering (seconds) — and the summary prints, per module, the tests' time (setup + call
+ teardown, from pytest's reports) beside those figures, largest first. Under pytest-xdist every worker sums its own tests and hands the totals to the
controller (``workeroutput``), which prints one table.

A request that is not a hit compiles a program that neither this process nor the session's shared
cache (conftest) held: the table tells how much of a module's time fewer distinct programs could
save.
"""

from __future__ import annotations

import collections

import jax
import pytest

_EVENTS = {
    "/jax/core/compile/backend_compile_duration": "compile_s",
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
}
_HITS = "/jax/compilation_cache/cache_hits"
_COLUMNS = ("tests_s", "compile_s", "requests", "cache_hits", "trace_s", "lower_s")


def addoption(parser):
    """The ``--compile-report`` option (conftest's ``pytest_addoption`` calls this)."""
    parser.addoption("--compile-report", action="store_true",
                     help="print, per test module, the tests' seconds beside JAX's compile, trace and lowering seconds")


def _module(nodeid: str) -> str:
    return nodeid.split("::")[0]


class _Recorder:
    """Sums the monitoring events of the running test into its module's row."""

    def __init__(self):
        self.rows = collections.defaultdict(lambda: dict.fromkeys(_COLUMNS, 0.0))
        self.current = None
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)

    def _duration(self, event, duration, **kwargs):
        column = _EVENTS.get(event)
        if column and self.current:
            row = self.rows[self.current]
            row[column] += duration
            row["requests"] += column == "compile_s"

    def _event(self, event, **kwargs):
        if event == _HITS and self.current:
            self.rows[self.current]["cache_hits"] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current = _module(item.nodeid)
        yield
        self.current = None

    def pytest_sessionfinish(self, session):
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller prints
            workeroutput["jaxpuffer_compile_report"] = {m: dict(r) for m, r in self.rows.items()}


class _Summary:
    """The controller's table: tests' seconds from the reports, XLA figures from the workers."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.tests = collections.defaultdict(float)
        self.workers = []

    def pytest_runtest_logreport(self, report):
        self.tests[_module(report.nodeid)] += report.duration

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        self.workers.append(getattr(node, "workeroutput", {}).get("jaxpuffer_compile_report", {}))

    def pytest_terminal_summary(self, terminalreporter):
        rows = collections.defaultdict(lambda: dict.fromkeys(_COLUMNS, 0.0))
        for part in [self.recorder.rows, *self.workers]:
            for module, row in part.items():
                for column in _COLUMNS[1:]:
                    rows[module][column] += row[column]
        for module, seconds in self.tests.items():
            rows[module]["tests_s"] = seconds
        total = dict.fromkeys(_COLUMNS, 0.0)
        write = terminalreporter.write_line
        terminalreporter.section("compile report (seconds summed over workers)")
        write(f"{'module':44s}" + "".join(f"{c:>11s}" for c in _COLUMNS))
        for module, row in sorted(rows.items(), key=lambda kv: -kv[1]["tests_s"]):
            write(f"{module:44s}" + "".join(f"{row[c]:11.2f}" for c in _COLUMNS))
            for c in _COLUMNS:
                total[c] += row[c]
        write(f"{'total':44s}" + "".join(f"{total[c]:11.2f}" for c in _COLUMNS))


def configure(config):
    """Registers the recorder (and, on the controller, the summary) when ``--compile-report`` is given."""
    if config.getoption("--compile-report"):
        recorder = _Recorder()
        config.pluginmanager.register(recorder, "jaxpuffer-compile-recorder")
        if not hasattr(config, "workerinput"):
            config.pluginmanager.register(_Summary(recorder), "jaxpuffer-compile-summary")
