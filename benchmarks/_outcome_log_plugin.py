"""pytest plugin: one JSON line per test outcome, written as the run goes.

Load it with ``-p benchmarks._outcome_log_plugin``; it appends to the file
named by ``GPUSPARSE_OUTCOME_LOG`` and does nothing when that variable is
unset. Every line is flushed at once, so the file holds each outcome up to
the moment the run stops, even when the run is killed before pytest writes
its summary or its JUnit XML. ``benchmarks.gpu_report`` reads it.

A test's line is ``{"nodeid", "outcome", "kind", "when", "duration", "message"}``:

``outcome``
    pytest's own category (``pytest_report_teststatus``): ``passed``,
    ``failed``, ``error`` (setup or teardown failed), ``skipped``,
    ``xfailed`` or ``xpassed``.
``kind``
    For a test that did not pass, what happened: ``failed`` (an assertion or
    exception in the test), ``error`` (in its setup or teardown),
    ``timeout`` (it ran past its time: ``message`` holds the stack of every
    thread when the time ran out) or ``crashed`` (its process died:
    ``message`` names the fatal signal and holds the stack where
    :mod:`faulthandler` could write one, else says that none was written).
``when``
    The phase reported: ``call``, or ``setup`` / ``teardown`` when that
    phase did not pass (a skip in setup, an error in teardown). A test that
    passes and then errors in teardown has two lines, as pytest counts it;
    a test whose process died has ``"???"`` (pytest-xdist's own mark).
``duration``
    Seconds of that phase.
``message``
    For a failure or an error, the end of the report's text (the last
    :data:`MESSAGE_LINES` lines, at most :data:`MESSAGE_CHARS` characters:
    the exception and where it was raised); the reason of a skip or an
    xfail; ``""`` otherwise.

One further line, ``{"collected": n, "ids": [...]}``, gives the tests
collected (after ``-m`` and ``-k``), so that a reader can name the ones that
never reported.

Timeouts and crashes
--------------------
Every process that runs tests (each pytest-xdist worker, or pytest itself)
keeps a *stack file* ``<log>.stacks/<worker>.txt``: before each test it is
emptied and given the line ``test <nodeid>``; :mod:`faulthandler` writes
into it the stack of a fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGFPE,
SIGILL) and, shortly before the test's time is up, the stack of every
thread (``dump_traceback_later``, which needs no GIL, so it works while the
test hangs inside a C call). The time is pytest-timeout's (``--timeout`` or
the test's ``timeout`` marker: the dump comes :func:`dump_at` seconds in,
before pytest-timeout ends the test or its worker); without pytest-timeout
it is ``GPUSPARSE_TEST_TIMEOUT`` seconds, and then the process exits after
the dump (under pytest-xdist a new worker takes over).

Whoever learns of the end of a test reads that file: the process itself
for a test that pytest-timeout failed in place (the signal method), the
pytest-xdist controller for a worker that died (its report names the
worker), and :func:`postmortem` -- called by ``benchmarks.gpu_report`` once
pytest has exited -- for a pytest process that died itself. Under
pytest-xdist only the controller writes test outcomes: it receives every
worker's reports.

``GPUSPARSE_OUTCOME_RESUME=1`` deselects the tests that the log already
holds an outcome for, so that a run stopped by a crash can go on with the
rest.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import signal

import pytest

ENV = "GPUSPARSE_OUTCOME_LOG"
TIMEOUT_ENV = "GPUSPARSE_TEST_TIMEOUT"
RESUME_ENV = "GPUSPARSE_OUTCOME_RESUME"
MESSAGE_LINES = 40
MESSAGE_CHARS = 3000
STACK_CHARS = 6000


def message(report, outcome: str) -> str:
    """What a report says about its outcome: the end of a failure, the reason of a skip.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> message(SimpleNamespace(longrepr=("t.py", 3, "Skipped: no GPU")), "skipped")
    'no GPU'
    >>> failed = SimpleNamespace(longreprtext="\\n".join(f"line {i}" for i in range(100)))
    >>> message(failed, "failed").splitlines()[0]
    'line 60'
    """
    if outcome in ("skipped", "xfailed", "xpassed"):
        reason = getattr(report, "wasxfail", None)
        if reason is None and isinstance(report.longrepr, tuple):
            reason = report.longrepr[-1]
        return str(reason or "").removeprefix("Skipped: ")
    if outcome in ("failed", "error"):
        lines = report.longreprtext.rstrip().splitlines()
        return "\n".join(lines[-MESSAGE_LINES:])[-MESSAGE_CHARS:]
    return ""


def dump_at(timeout: float) -> float:
    """When, ``timeout`` seconds being allowed, the stacks are written: a little before the end.

    Examples
    --------
    >>> dump_at(5), dump_at(120)
    (4.5, 115)
    """
    return max(timeout - 5, timeout * 0.9)


def stacks_dir(log_path: str) -> str:
    return log_path + ".stacks"


def stack_file(log_path: str, worker: str | None) -> str:
    return os.path.join(stacks_dir(log_path), f"{worker or 'main'}.txt")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def explain(stack_text: str, exitcode: int | None = None) -> tuple[str, str]:
    """``(kind, message)`` for a test whose process ended it, from its stack file's text.

    Examples
    --------
    >>> explain("test t.py::a\\nTimeout (0:00:04)!\\nThread 0x1 (most recent call first):\\n  File ...")[0]
    'timeout'
    >>> explain("test t.py::a\\nFatal Python error: Segmentation fault\\n\\nCurrent thread ...")[1].splitlines()[0]
    'crashed: Fatal Python error: Segmentation fault'
    >>> explain("test t.py::a\\n", -9)[1]
    'crashed: the process was killed by SIGKILL (no Python stack: an uncatchable signal, e.g. out of memory)'
    """
    body = stack_text.split("\n", 1)[1] if stack_text.startswith("test ") else stack_text
    body = body.strip("\n\x00")
    found = re.search(r"^Timeout \((\d+):(\d\d):(\d\d)(?:\.\d+)?\)!", body, re.M)
    if found:
        h, m, s = (int(g) for g in found.groups())
        return "timeout", (f"timeout: still running after {h * 3600 + m * 60 + s} s; the stack of every "
                           f"thread then:\n" + body[found.start():])[:STACK_CHARS]
    fatal = re.search(r"^Fatal Python error: (.*)$", body, re.M)
    if fatal:
        return "crashed", f"crashed: Fatal Python error: {fatal.group(1).strip()}\n{body[fatal.end():]}"[:STACK_CHARS]
    if exitcode is not None and exitcode < 0:
        return "crashed", (f"crashed: the process was killed by {_signal_name(-exitcode)} (no Python stack: "
                           "an uncatchable signal, e.g. out of memory)")
    how = f" with status {exitcode}" if exitcode is not None else ""
    return "crashed", (f"crashed: the process exited{how} during the test without a Python stack "
                       "(an exit after a sticky CUDA error, os._exit, or SIGKILL, e.g. out of memory)")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _append(path: str, record: dict) -> None:
    """One line in one ``write`` on an O_APPEND descriptor: lines of several processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def reported(log_path: str) -> set:
    """The node ids that ``log_path`` holds a final outcome for."""
    done = set()
    for line in _read(log_path).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "nodeid" in record:
            done.add(record["nodeid"])
    return done


def postmortem(log_path: str, exitcode: int | None = None) -> list[dict]:
    """Records for the tests that a dead process was running, appended to ``log_path``; returns them.

    Each stack file that names a test the log holds no outcome for belongs
    to a process that died during that test (a worker or pytest itself):
    its test is recorded as ``timeout`` or ``crashed`` (:func:`explain`;
    ``exitcode`` is pytest's, used for the file of pytest itself).
    """
    folder = stacks_dir(log_path)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    done, out = reported(log_path), []
    for name in names:
        text = _read(os.path.join(folder, name))
        if not text.startswith("test "):
            continue
        nodeid = text.split("\n", 1)[0][5:].strip()
        if not nodeid or nodeid in done:
            continue
        kind, text = explain(text, exitcode if name == "main.txt" else None)
        record = {"nodeid": nodeid, "outcome": "failed", "kind": kind, "when": "???", "duration": None,
                  "message": text}
        _append(log_path, record)
        done.add(nodeid)
        out.append(record)
    return out


def _kind(outcome: str, when: str) -> str | None:
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    return "error" if outcome == "error" else None


class StackWatch:
    """In a process that runs tests: the stack file and the per-test stack dump."""

    def __init__(self, config, log_path: str):
        self.config = config
        self.path = stack_file(log_path, os.environ.get("PYTEST_XDIST_WORKER"))
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.file = open(self.path, "w+b", buffering=0)  # noqa: SIM115 (lives as long as the process)
        self.enabled = False
        self.pytest_timeout = float(config.getoption("timeout", None) or 0) if config.pluginmanager.hasplugin(
            "timeout") else 0.0
        self.own_timeout = float(os.environ.get(TIMEOUT_ENV) or 0)

    def _limit(self, item) -> tuple[float, bool]:
        """(seconds until the dump, whether the process exits after it); (0, False) for none."""
        if self.pytest_timeout or item.get_closest_marker("timeout"):
            marker = item.get_closest_marker("timeout")
            limit = float(marker.args[0]) if marker and marker.args else self.pytest_timeout
            if self.config.pluginmanager.hasplugin("timeout") and limit > 0:
                return dump_at(limit), False
        return (self.own_timeout, True) if self.own_timeout > 0 else (0.0, False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.enabled:  # after pytest's own faulthandler plugin, which enables it for stderr
            faulthandler.enable(file=self.file, all_threads=True)
            self.enabled = True
        self.file.seek(0)
        self.file.truncate(0)
        self.file.write(f"test {item.nodeid}\n".encode())
        seconds, exit_after = self._limit(item)
        if seconds > 0:
            faulthandler.dump_traceback_later(seconds, exit=exit_after, file=self.file)
        try:
            return (yield)
        finally:
            if seconds > 0:
                faulthandler.cancel_dump_traceback_later()

    def timeout_stack(self) -> str | None:
        """The stack dumped for the current test's timeout, if its time ran out."""
        self.file.seek(0)
        text = self.file.read().decode(errors="replace")
        self.file.seek(0, os.SEEK_END)
        return text if re.search(r"^Timeout \(", text, re.M) else None


class OutcomeLog:
    """The hooks that write the log, registered only in the process that writes it.

    Parameters
    ----------
    config : pytest.Config
        The run's configuration, which classifies reports.
    path : str
        The log file, appended to.
    watch : StackWatch, optional
        This process's stack file, where it runs the tests itself.
    """

    def __init__(self, config, path: str, watch: StackWatch | None = None):
        self.config = config
        self.path = path
        self.watch = watch
        self.collected = False

    def write(self, record: dict) -> None:
        _append(self.path, record)

    def pytest_collection_finish(self, session):
        """Without pytest-xdist: the tests collected."""
        self.write({"collected": len(session.items), "ids": [item.nodeid for item in session.items]})
        self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """Under pytest-xdist: the first worker's collection (every worker collects the same)."""
        if not self.collected:
            self.write({"collected": len(ids), "ids": list(ids)})
            self.collected = True

    def pytest_runtest_logreport(self, report):
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        if not category:  # empty for a setup or teardown that passed
            return
        record = {"nodeid": report.nodeid, "outcome": category, "kind": _kind(category, report.when),
                  "when": report.when, "duration": round(report.duration or 0.0, 4),
                  "message": message(report, category)}
        if report.when == "???":  # pytest-xdist: the worker died while running this test
            worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
            text = _read(stack_file(self.path, worker)) if worker else ""
            record["kind"], record["message"] = explain(text)
        elif self.watch is not None and record["kind"] is not None:
            stack = self.watch.timeout_stack()
            if stack:  # pytest-timeout failed the test in place
                record["kind"] = "timeout"
                record["message"] = (record["message"] + "\n" + explain(stack)[1])[-STACK_CHARS:]
        self.write(record)


class Resume:
    """Deselect the tests that the log already holds an outcome for (``GPUSPARSE_OUTCOME_RESUME=1``)."""

    def __init__(self, path: str):
        self.done = reported(path)

    def pytest_collection_modifyitems(self, session, config, items):
        keep = [item for item in items if item.nodeid not in self.done]
        gone = [item for item in items if item.nodeid in self.done]
        if gone:
            config.hook.pytest_deselected(items=gone)
            items[:] = keep


def pytest_configure(config):
    path = os.environ.get(ENV)
    if not path:
        return
    worker = hasattr(config, "workerinput")
    controller = not worker and (getattr(config.option, "numprocesses", None) or 0) > 0 \
        and config.pluginmanager.hasplugin("xdist")
    watch = None
    if not controller:  # this process runs the tests
        watch = StackWatch(config, path)
        config.pluginmanager.register(watch, "gpusparse-stack-watch")
    if os.environ.get(RESUME_ENV, "").strip() in ("1", "true", "yes"):
        config.pluginmanager.register(Resume(path), "gpusparse-outcome-resume")
    if not worker:
        config.pluginmanager.register(OutcomeLog(config, path, watch), "gpusparse-outcome-log")
