"""pytest plugin: one JSON line per test outcome, written as the run goes.

Load it with ``-p benchmarks._outcome_log_plugin``; it appends to the file
named by ``GPUSPARSE_OUTCOME_LOG`` and does nothing when that variable is
unset. Every line is flushed at once, so the file holds each outcome up to
the moment the run stops, even when the run is killed before pytest writes
its summary or its JUnit XML. ``benchmarks.gpu_report`` reads it.

A test's line is ``{"nodeid", "outcome", "when", "duration", "message"}``:

``outcome``
    pytest's own category (``pytest_report_teststatus``): ``passed``,
    ``failed``, ``error`` (setup or teardown failed), ``skipped``,
    ``xfailed`` or ``xpassed``.
``when``
    The phase reported: ``call``, or ``setup`` / ``teardown`` when that
    phase did not pass (a skip in setup, an error in teardown). A test that
    passes and then errors in teardown has two lines, as pytest counts it;
    pytest-xdist reports a test whose worker died with ``"???"``.
``duration``
    Seconds of that phase.
``message``
    For a failure or an error, the end of the report's text (the last
    :data:`MESSAGE_LINES` lines, at most :data:`MESSAGE_CHARS` characters:
    the exception and where it was raised); the reason of a skip or an
    xfail; ``""`` otherwise.

One further line, ``{"collected": n}``, gives the number of tests collected.
Under pytest-xdist only the controller writes: it receives every worker's
reports, and the workers (which have ``config.workerinput``) write nothing.
"""

from __future__ import annotations

import json
import os

import pytest

ENV = "GPUSPARSE_OUTCOME_LOG"
MESSAGE_LINES = 40
MESSAGE_CHARS = 3000


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


class OutcomeLog:
    """The hooks that write the log, registered only in the process that writes it.

    Parameters
    ----------
    config : pytest.Config
        The run's configuration, which classifies reports.
    path : str
        The log file, opened for appending.
    """

    def __init__(self, config, path: str):
        self.config = config
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in pytest_unconfigure)
        self.collected = False

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()

    def pytest_collection_finish(self, session):
        """Without pytest-xdist: the number of tests collected."""
        self.write({"collected": len(session.items)})
        self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """Under pytest-xdist: the first worker's collection (every worker collects the same)."""
        if not self.collected:
            self.write({"collected": len(ids)})
            self.collected = True

    def pytest_runtest_logreport(self, report):
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        if category:  # empty for a setup or teardown that passed
            self.write({"nodeid": report.nodeid, "outcome": category, "when": report.when,
                        "duration": round(report.duration or 0.0, 4), "message": message(report, category)})

    def pytest_unconfigure(self, config):
        self.file.close()


def pytest_configure(config):
    path = os.environ.get(ENV)
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(OutcomeLog(config, path), "gpusparse-outcome-log")
