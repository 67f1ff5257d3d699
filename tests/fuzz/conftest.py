"""Counting what the fuzzers tried: statistics per test and a summary line.

Every Hypothesis run in ``tests/fuzz`` -- the stateful machines, and the
drawing of malformed inputs in fixtures -- reports its statistics here.
They join Hypothesis' own report (``--hypothesis-show-statistics``, which by
itself covers only ``@given`` tests), and at the end of the session one line
gives the examples tried, how many were invalid, the failing examples and
the distinct failures found.
"""

from __future__ import annotations

import collections

import pytest

_TOTALS: collections.Counter = collections.Counter()
_PHASES = ("explicit", "reuse", "generate", "target", "shrink", "explain")


def _count(stats) -> None:
    distinct = 0
    for phase in _PHASES:
        d = stats.get(f"{phase}-phase") or {}
        for case in d.get("test-cases", []):
            _TOTALS[case["status"]] += 1
        distinct = max(distinct, d.get("distinct-failures", 0))
    _TOTALS["runs"] += 1
    _TOTALS["distinct failures"] += distinct


def _collector(item):
    from hypothesis.statistics import describe_statistics

    def note(stats):
        _count(stats)
        text = describe_statistics({**stats, "nodeid": item.nodeid})
        previous = getattr(item, "hypothesis_statistics", None)
        item.hypothesis_statistics = text if previous is None else previous + "\n\n" + text

    note.fuzz_collector = True
    return note


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Collect the statistics of every Hypothesis run during setup, call and teardown."""
    from hypothesis.statistics import collector

    with collector.with_value(_collector(item)):
        yield


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item):
    """Inside Hypothesis' own collector (``@given`` tests): count, then hand on to it."""
    from hypothesis.statistics import collector

    outer = collector.value
    if outer is None or getattr(outer, "fuzz_collector", False):
        yield
        return

    def note(stats):
        _count(stats)
        outer(stats)

    with collector.with_value(note):
        yield


def pytest_terminal_summary(terminalreporter):
    if not _TOTALS["runs"]:
        return
    invalid = _TOTALS["invalid"] + _TOTALS["overrun"]
    tried = _TOTALS["valid"] + invalid + _TOTALS["interesting"]
    failed = len(terminalreporter.stats.get("failed", [])) + len(terminalreporter.stats.get("error", []))
    terminalreporter.write_sep(
        "-", f"fuzz: {tried} examples tried in {_TOTALS['runs']} Hypothesis runs ({invalid} invalid), "
             f"{_TOTALS['interesting']} failing examples, {_TOTALS['distinct failures']} distinct failures, "
             f"{failed} failed tests")
