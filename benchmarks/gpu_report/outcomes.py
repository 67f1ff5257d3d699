"""Reading the stages' results: test outcomes with their kind and one-line message, memcheck's summary.

The tests stage's counts and failures come from the outcome log of
:mod:`benchmarks._outcome_log_plugin` (:func:`parse_outcome_log`), else
from pytest's JUnit XML (:func:`parse_junit`), else from pytest's summary
line (:func:`parse_pytest_summary`): :func:`summarize_tests` takes the
first there is. :func:`one_line` gives each failure the line that says
what went wrong, so that the report can group failures by cause.
:func:`parse_sanitizer` reads compute-sanitizer's output.
"""

from __future__ import annotations

import collections
import json
import re
import xml.etree.ElementTree as ET

from .plan import MAX_FAILURES
from .publish import _public


def one_line(message: str, nodeid: str | None = None) -> str:
    """The line of a pytest failure text that says what went wrong.

    The first line of the last block of ``E`` lines (the exception raised),
    else the last non-empty line; ``nodeid`` becomes ``<this test>`` and a
    crashed pytest-xdist worker is named as such, so that one cause gives
    one message.

    Examples
    --------
    >>> one_line("[gw3] linux -- Python 3.12\\nworker 'gw3' crashed while running 't.py::a'", "t.py::a")
    'worker crashed (it exited: a poisoned CUDA context, a timeout or a fatal error)'
    """
    lines = [line.rstrip() for line in (message or "").splitlines()]
    if lines and re.match(r"(timeout|crashed): ", lines[0]):  # a death's first line says it all
        return _public(re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", lines[0]))[:300]
    errors = [i for i, line in enumerate(lines) if line.startswith("E ")]
    if errors:
        first = errors[-1]
        while first - 1 in errors:
            first -= 1
        text = lines[first][1:].strip()
    else:
        text = next((line.strip() for line in reversed(lines) if line.strip()), "")
    if re.match(r"worker '[^']*' crashed while running ", text):
        return "worker crashed (it exited: a poisoned CUDA context, a timeout or a fatal error)"
    if nodeid:
        text = text.replace(nodeid, "<this test>")
    return _public(re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", text))[:300]


def _junit_name(nodeid: str) -> str:
    """The ``classname::name`` that pytest's JUnit XML gives a test id.

    Examples
    --------
    >>> _junit_name("tests/kernels/test_a.py::TestB::test_c[cuda:0-x::y]")
    'tests.kernels.test_a.TestB::test_c[cuda:0-x::y]'
    """
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]) + "::" + names[-1] + bracket + params


def parse_junit(path: str) -> dict | None:
    """Counts, failing tests and top skip reasons from a pytest JUnit XML file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = collections.Counter()
    for suite in suites:
        for key in ("tests", "failures", "errors", "skipped"):
            counts[key] += int(suite.get(key, 0) or 0)
    failures, skips = [], collections.Counter()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        for child in case:
            if child.tag in ("failure", "error"):
                text = (child.get("message") or child.text or "").strip().splitlines()
                failures.append({"test": name, "kind": "failed" if child.tag == "failure" else "error",
                                 "message": _public(text[0] if text else "")[:300]})
            elif child.tag == "skipped":
                skips[_public((child.get("message") or "").strip())[:200]] += 1
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {"source": "junit", "tests": counts["tests"], "passed": passed, "failed": counts["failures"],
            "errors": counts["errors"], "skipped": counts["skipped"], "failures": failures,
            "skip_reasons": [{"reason": r, "count": n} for r, n in skips.most_common(15)]}


def parse_outcome_log(path: str) -> dict | None:
    """Counts, failures with their kind and message, skip reasons and the slowest tests from an outcome log.

    The log is written by :mod:`benchmarks._outcome_log_plugin`; a line cut
    short by a killed run is ignored. ``kinds`` counts the failing tests by
    kind (``failed``, ``error``, ``timeout``, ``crashed``); ``not_run`` lists
    the collected tests that never reported (the run stopped first).
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    records, collected, ids = [], None, []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "collected" in record:  # a resumed run collects the rest again: the first is the whole
            if collected is None:
                collected, ids = record["collected"], record.get("ids") or []
        elif "nodeid" in record:
            records.append(record)
    failures = _failures(records)
    final: dict = {}
    for r in records:  # a test's category: its worst line (a pass, then a teardown error: an error)
        rank = {"passed": 0, "xpassed": 0, "xfailed": 0, "skipped": 1, "error": 2, "failed": 3}
        if rank.get(r["outcome"], 3) >= rank.get(final.get(r["nodeid"], "passed"), 3):
            final[r["nodeid"]] = r["outcome"]
    for f in failures:
        if f["kind"] in ("timeout", "crashed"):
            final[f["test"]] = "failed"
    counts = collections.Counter(final.values())
    plural = {"error": "errors"}
    skips = collections.Counter(_public(r.get("message") or "")[:200] for r in records
                                if r["outcome"] == "skipped")
    calls = sorted((r for r in records if r.get("when") == "call"), key=lambda r: -(r.get("duration") or 0))
    seen = set(final)
    not_run = [i for i in ids if i not in seen]
    out = {"source": "outcome log", "tests": len(final), "collected": collected,
           **{plural.get(k, k): n for k, n in sorted(counts.items())},
           "kinds": dict(collections.Counter(f["kind"] for f in failures)),
           "failures": failures, "not_run": not_run,
           "skip_reasons": [{"reason": r, "count": n} for r, n in skips.most_common(15)],
           "slowest": [{"test": r["nodeid"], "seconds": r.get("duration") or 0} for r in calls[:10]]}
    for key in ("passed", "failed", "errors", "skipped"):
        out.setdefault(key, 0)
    return out


def _failures(records) -> list[dict]:
    """One entry per failing test, in the order they came, with its ``kind``.

    A test with several lines (a failure, then a teardown error; or its
    process's death after a teardown error) keeps the first message, unless
    that was only the process's death; the kind of a death (``timeout``,
    ``crashed``) wins over ``failed`` or ``error``, and its stack is kept
    in ``detail``. Logs of older plugins (no ``kind``) get one from
    ``outcome`` and ``when``.
    """
    by_test: dict = {}
    for r in records:
        if r["outcome"] not in ("failed", "error"):
            continue
        death = r.get("when") == "???"
        kind = r.get("kind") or ("crashed" if death else "failed" if r["outcome"] == "failed" and
                                 r.get("when") == "call" else "error")
        entry = by_test.get(r["nodeid"])
        message = one_line(r.get("message") or "", r["nodeid"])
        if entry is None:
            entry = by_test[r["nodeid"]] = {"test": r["nodeid"], "kind": kind, "when": r.get("when"),
                                            "message": message, "detail": _public(r.get("message") or "")}
        elif death:
            if entry.get("when") == "???":
                continue
            entry["kind"] = kind if kind == "timeout" else "crashed"
            entry["detail"] = (entry["detail"] + "\n\n" + _public(r.get("message") or "")).strip()
            if kind == "timeout":
                entry["message"] = message
        if death:
            entry["worker_crashed"] = True
    return list(by_test.values())


def summarize_tests(junit_path: str, outcome_path: str, output: str = "") -> dict:
    """The tests stage's counts and failures: the outcome log first, then JUnit XML, then pytest's output.

    The outcome log is complete even when pytest was stopped or resumed
    after a crash (the JUnit XML then covers only the last run). The first
    :data:`MAX_FAILURES` failures are kept, ``n_failures`` counts them all.
    """
    counts = parse_outcome_log(outcome_path)
    if counts is not None:
        counts["reported"] = counts["tests"]
    else:
        counts = parse_junit(junit_path)
    if counts is None:
        counts = parse_pytest_summary(output)
        return dict(counts, source="pytest output") if counts else {}
    counts["n_failures"] = len(counts["failures"])
    counts["failures"] = counts["failures"][:MAX_FAILURES]
    return counts


def parse_pytest_summary(text: str) -> dict:
    """Counts from pytest's last summary line (used when there is neither JUnit XML nor outcome log).

    Examples
    --------
    >>> parse_pytest_summary("== 3 failed, 10 passed, 2 skipped in 1.0s ==")["failed"]
    3
    """
    counts = {}
    for line in reversed(text.splitlines()):
        found = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", line)
        if found:
            for n, what in found:
                counts["errors" if what.startswith("error") else what] = int(n)
            break
    return counts


def parse_sanitizer(text: str) -> dict:
    """The ``ERROR SUMMARY`` of compute-sanitizer output and its first error lines."""
    summaries = [int(n) for n in re.findall(r"ERROR SUMMARY:\s*(\d+) error", text)]
    reports = [_public(line.strip()) for line in text.splitlines()
               if line.startswith("=========") and "ERROR SUMMARY" not in line
               and not line.strip("= \n").startswith("COMPUTE-SANITIZER")]
    return {"errors": sum(summaries) if summaries else None,
            "summary": (f"ERROR SUMMARY: {sum(summaries)} errors" if summaries
                        else "no ERROR SUMMARY line found"),
            "first_reports": reports[:40]}
