"""One report from a GPU machine: tests, memory checker and benchmarks.

Usage, from the repository root, with the system Python (no virtual
environment, no network needed)::

    PYTHONPATH=. python3 -m benchmarks.gpu_report [--out benchmarks/results]
        [--budget 540] [--stages tests,bench-cuda] [--test-devices cuda] [--emulate]

Records the GPU (``nvidia-smi``, else CuPy), the date, the git commit (or
``GPUSPARSE_COMMIT`` where there is no ``.git``) and library versions, then
runs the chosen stages, each in its own process with its own timeout, so
that a failure or a hang in one is recorded and the next still runs. The
defaults fit one command of at most 540 s (``--budget``): ``tests`` (at
most 250 s) then ``bench-cuda`` (the rest, at least 150 s).

Every stage runs with ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (JAX takes
GPU memory as it needs it instead of 75 % of it in the first process).

``tests``
    ``python3 -m pytest -q -p no:cacheprovider -p benchmarks._outcome_log_plugin
    --junitxml=... -rfE --tb=short -m "gpu and not slow" [-n <cores, at most
    16> --dist=worksteal --max-worker-restart=200] [--timeout=60
    --timeout-method=thread] tests``, with ``GPUSPARSE_TEST_DEVICES=cuda``:
    only the CUDA parametrisations (CI tests the CPU path and the
    device-independent tests on every commit; ``--test-markers``,
    ``--test-devices``, ``--test-paths``) and
    ``GPUSPARSE_HYPOTHESIS_PROFILE=ci`` unless the environment sets it.
    Each test process gets ``cores // workers`` threads (``NUMBA_NUM_THREADS``,
    ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``).
    pytest-xdist, pytest-timeout and ``-p no:benchmark`` are used where they
    are installed. Every outcome is appended to an outcome log
    (:mod:`benchmarks._outcome_log_plugin`) as it happens, with its kind
    (``failed``, ``error``, ``timeout`` with the stack of every thread when
    the time ran out, ``crashed`` with the fatal signal and its stack), and
    the log is copied to ``$OUT`` every :data:`TICK_S` seconds, so a run
    stopped at any moment reports every test that finished. A test that
    hangs is ended by pytest-timeout, or without it by the plugin (after
    ``--test-timeout`` seconds); a pytest process that dies (a crash without
    pytest-xdist) has its test recorded from its stack file and pytest
    resumes with the tests not yet reported (:func:`run_tests`). Tests
    collected but never reported are listed.
``sanitizer``
    ``compute-sanitizer --tool memcheck python3 -m pytest tests/kernels -q -x``
    with CuPy's memory pool off (``benchmarks._sanitizer_plugin``) so that
    memcheck sees each array's bounds; its ``ERROR SUMMARY`` is recorded.
    Skipped when ``compute-sanitizer`` or ``tests/kernels`` is missing.
``bench-cuda``
    ``python3 -m benchmarks.run --device cuda --target-time 0.2 --only
    bench_<module> --size <size>`` once per module, each in its own process,
    most important first (:data:`BENCH_CUDA_PLAN`: linalg, coalesce,
    elementwise, reductions, indexing, manipulation, autograd, io, dask, graph;
    ``--bench-modules``). The stage's time is split in the plan's shares
    (:func:`bench_cuda_plan`); a module may use its share plus what the
    earlier ones left, so one that overruns costs only its own rows. Rows
    are saved as they are measured; the rows of all modules go to ``--out``
    as one ``<date>-cuda-<gpu>.{json,md}``, rewritten (and copied to
    ``$OUT``) after every module. The sizes keep each module's host-side
    set-up to a few seconds; ``--full-size`` runs the modules' own sizes.
``bench-cpu``
    ``python3 -m benchmarks.run --device cpu --quick`` (a smoke test of the
    CPU path on this machine; its rows go into the report).

``--emulate`` runs the whole plan (tests and every benchmark module) on the
emulated CUDA device (``GPUSPARSE_CUDA_EMULATION=1``, :mod:`benchmarks._emulation`)
at tiny sizes (``--size 256 --quick``, one timed call per implementation)
with a small test selection (:data:`EMULATE_TESTS`), within
:data:`EMULATE_BUDGET` seconds, into a temporary folder unless ``--out`` is
given; its exit status is 1 unless the report is complete
(:func:`check_complete`: every collected test has an outcome and passed,
every module gave rows, no row is in error, every skip has a reason).

The report is ``<out>/<YYYY-MM-DD>-<gpu-slug>.json`` and ``.md``, rewritten
after every stage, every benchmark module and every :data:`TICK_S` seconds
while the tests run. A later run of the same commit on the same day keeps
the stages it did not repeat, so a run may be split: ``--stages tests`` then
``--stages sanitizer,bench-cuda``. A stage that reaches its timeout is
interrupted (SIGINT, so that pytest still writes its summary), then
terminated. If ``$OUT`` is set, at most :data:`MAX_OUT_FILES` files are
copied there each time: the report, the outcome log, the JUnit XML, the
CUDA benchmark files and ``stage-logs.txt`` with every stage's output.
Progress is printed as it happens.

Examples
--------
>>> parse_sanitizer("========= ERROR SUMMARY: 0 errors")["errors"]
0
>>> one_line("x = f()\\nE   ValueError: bad\\nE   more detail\\n\\nt.py:3: ValueError")
'ValueError: bad'
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

from benchmarks import run as bench_run

__all__ = ["bench_cuda_plan", "gpu_identity", "main", "one_line", "parse_junit", "parse_outcome_log",
           "parse_sanitizer", "pytest_command", "run_bench_cuda", "run_stage", "summarize_tests"]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ("tests", "sanitizer", "bench-cuda", "bench-cpu")
DEFAULT_STAGES = ("tests", "bench-cuda")
DEFAULT_BUDGET = 540
#: (most seconds a stage may take, least it is guaranteed when earlier stages overrun)
LIMITS = {"tests": (250, 90), "sanitizer": (300, 60), "bench-cuda": (540, 150), "bench-cpu": (120, 45)}
#: seconds a stage is given after SIGINT at its timeout (5 where not listed), then SIGTERM and
#: SIGKILL get STOP_S together; stage timeouts leave this time within the budget
INTERRUPT_S = {"tests": 15, "sanitizer": 15}
STOP_S = 10
#: seconds from a benchmark module's time limit to its end: SIGINT, then 1 s each for SIGTERM and SIGKILL
BENCH_STOP_S = 3
#: bench-cuda modules, most important first: (module, --size in the report, share in seconds of
#: NOMINAL_BENCH_S). The sizes keep each module's host-side set-up to a few seconds (its inputs are
#: built on the device or by construction) and its cases within its share.
BENCH_CUDA_PLAN = (
    ("linalg", 2**19, 60),
    ("coalesce", 2**24, 22),
    ("elementwise", 2**22, 26),
    ("reductions", 2**22, 22),
    ("indexing", 2**22, 18),
    ("manipulation", 2**22, 16),
    ("autograd", 2**17, 22),
    ("io", 2**21, 14),
    ("dask", 2**20, 14),
    ("graph", 2**14, 14),
)
NOMINAL_BENCH_S = 250
#: seconds a module needs besides its cases: the process, the imports, stopping it
MODULE_OVERHEAD_S = 6
#: --emulate: the CUDA path on the CPU harness (GPUSPARSE_CUDA_EMULATION=1), tiny sizes, a small
#: test selection; it must finish within EMULATE_BUDGET on two cores
EMULATE_BUDGET = 170
EMULATE_TESTS = ("tests/kernels/test_primitives.py::test_linearize_delinearize",)
EMULATE_SIZE = 256
TEST_TIMEOUT_S = 60
MAX_WORKERS = 16
MAX_WORKER_RESTART = 200
MAX_OUT_FILES = 12
MAX_FAILURES = 300
TICK_S = 15
TAIL_CHARS = 6000
LOG_KEEP_CHARS = 2_000_000
_LOGS = None  # this run's temporary log folder, hidden from the report


def say(message: str) -> None:
    print(f"[gpu_report {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --------------------------------------------------------------------------
# running one stage
# --------------------------------------------------------------------------

def run_stage(name: str, cmd: list[str], timeout: float, log_path: str, env=None, *,
              interrupt_s: float = 5, tick=None, label: str | None = None, stop_s: float | None = None) -> dict:
    """Run ``cmd`` in its own process group with a timeout, echoing its output.

    At the timeout the group gets SIGINT, and ``interrupt_s`` seconds later
    SIGTERM, then SIGKILL (:func:`_stop`). ``tick()``, if given, is called
    every :data:`TICK_S` seconds while the command runs. The output is
    appended to ``log_path`` under a header line; ``label`` prefixes the
    echoed lines (``name`` by default).

    Returns ``rc`` (None if it could not start), ``seconds``, ``timed_out``,
    ``tail`` (the last characters of its output) and ``log`` (the log file).
    """
    label = label or name
    say(f"{label}: {' '.join(cmd)} (timeout {timeout:.0f} s)")
    start = time.monotonic()
    result = {"command": " ".join(shlex.quote(bench_run._short_path(_public(c))) for c in cmd),
              "timeout_s": round(timeout),
              "timed_out": False, "log": os.path.basename(log_path)}
    tail = collections.deque(maxlen=4000)
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
    except OSError as exc:
        result.update(rc=None, seconds=0.0, tail=f"could not start: {exc}")
        say(f"{label}: could not start ({exc})")
        return result

    with open(log_path, "a") as log:
        log.write(f"$ {result['command']}\n")

        def pump():
            for line in proc.stdout:
                log.write(line)
                tail.append(line)
                print(f"  {label}| {line}", end="", flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = start + timeout
        while True:
            try:
                proc.wait(timeout=max(0.0, min(TICK_S, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    result["timed_out"] = True
                    say(f"{label}: timed out after {timeout:.0f} s; stopping it")
                    _stop(proc, interrupt_s, STOP_S if stop_s is None else stop_s)
                    break
                if tick is not None:
                    tick()
        reader.join(timeout=5)
    result["rc"] = proc.returncode
    result["seconds"] = round(time.monotonic() - start, 1)
    result["tail"] = _public("".join(tail)[-TAIL_CHARS:])
    say(f"{label}: rc={proc.returncode} in {result['seconds']} s")
    return result


def _stop(proc, interrupt_s: float, stop_s: float = STOP_S) -> None:
    """SIGINT the stage's process group (pytest then writes its summary), then SIGTERM, then SIGKILL."""
    steps = ((signal.SIGINT, interrupt_s), (signal.SIGTERM, stop_s / 2), (signal.SIGKILL, stop_s / 2))
    for sig, grace in steps:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


_ROOTS = r"(?:root|home|tmp|usr|opt|work|mnt|var|srv|scratch)"
_SITE = re.compile(r"(?:\.\./)*/?" + _ROOTS + r"/[^\s:'\"]*?/(?:site|dist)-packages/")
_ABS = re.compile(r"(?<![\w.])/" + _ROOTS + r"/[^\s:'\"]*/([^\s:'\"/]+)")


def _public(text: str) -> str:
    """``text`` without this machine's absolute paths.

    The repository root becomes relative, the interpreter ``python3``, this
    run's log folder ``<logs>``, installed packages ``<site-packages>/`` and
    any other absolute path ``<path>/name``.

    Examples
    --------
    >>> _public("at /usr/lib/python3/dist-packages/cupy/x.py:3 and /tmp/a/b.log")
    'at <site-packages>/cupy/x.py:3 and <path>/b.log'
    """
    if _LOGS:
        text = text.replace(_LOGS, "<logs>")
    if sys.executable:
        text = re.sub(re.escape(sys.executable) + r"\b", "python3", text)
    text = text.replace(REPO + os.sep, "").replace(REPO, ".")
    text = _SITE.sub("<site-packages>/", text)
    return _ABS.sub(r"<path>/\1", text)


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# the machine
# --------------------------------------------------------------------------

def gpu_identity() -> dict:
    """GPU name, memory and driver from ``nvidia-smi``, else from CuPy."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version",
                                  "--format=csv,noheader"], check=False, capture_output=True, text=True,
                                 timeout=30).stdout.strip().splitlines()
            if out:
                parts = [p.strip() for p in out[0].split(",")]
                return {"name": parts[0], "memory": parts[1] if len(parts) > 1 else None,
                        "driver": parts[2] if len(parts) > 2 else None, "count": len(out),
                        "source": "nvidia-smi"}
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        info = bench_run._gpu_info()
        return {"name": info["gpu_name"], "memory": f"{info['gpu_memory_gib']} GiB",
                "driver": str(info["cuda_driver"]), "count": info["gpu_count"], "source": "cupy"}
    except Exception as exc:  # noqa: BLE001 (no usable GPU, recorded)
        return {"name": None, "error": f"{type(exc).__name__}: {exc}", "source": None}


def _show_config() -> str:
    try:
        import io

        import gpusparse
        buf = io.StringIO()
        gpusparse.show_config(file=buf)
        return buf.getvalue()
    except Exception as exc:  # noqa: BLE001 (recorded in the report)
        return f"gpusparse.show_config failed: {type(exc).__name__}: {exc}"


def _sanitizer_path() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "compute-sanitizer")):
            return os.path.join(root, "bin", "compute-sanitizer")
    return None


def _have(module: str) -> bool:
    """Whether ``module`` is importable here (so in the stage's interpreter, which is this one)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _version(dist: str) -> tuple:
    """The leading numbers of an installed distribution's version, ``()`` if unknown.

    Examples
    --------
    >>> _version("no-such-distribution")
    ()
    """
    try:
        text = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(n) for n in re.findall(r"\d+", text.split("+")[0])[:3])


# --------------------------------------------------------------------------
# the stages' commands
# --------------------------------------------------------------------------

def pytest_command(py: str, junit: str, *, workers: int, markers: str, test_timeout: float,
                   paths=("tests",)) -> list[str]:
    """The tests stage's pytest command line, using the plugins that are installed.

    pytest-xdist runs ``workers`` processes (``--dist=worksteal`` from
    xdist 3.2 on, so that idle workers take over a long tail) and may
    replace up to :data:`MAX_WORKER_RESTART` workers that exit;
    pytest-timeout's thread method then ends a worker whose test hangs, even
    inside a CUDA call (without xdist the signal method fails just the test).
    Without pytest-timeout the outcome log's plugin ends a process whose test
    runs past ``GPUSPARSE_TEST_TIMEOUT`` (set by :func:`worker_env`).
    """
    cmd = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "benchmarks._outcome_log_plugin",
           f"--junitxml={junit}", "-rfE", "--tb=short"]
    if markers:
        cmd += ["-m", markers]
    xdist = workers > 1 and _have("xdist")
    if xdist:
        cmd += ["-n", str(workers), f"--max-worker-restart={MAX_WORKER_RESTART}"]
        if _version("pytest-xdist") >= (3, 2):
            cmd.append("--dist=worksteal")
    if test_timeout and _have("pytest_timeout"):
        cmd += [f"--timeout={test_timeout:g}"] + (["--timeout-method=thread"] if xdist else [])
    if _have("pytest_benchmark"):
        cmd += ["-p", "no:benchmark"]
    return cmd + list(paths)


#: thread pools capped per test process: Numba, OpenMP (torch's intra-op threads), MKL, OpenBLAS
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def clean_env(env: dict) -> dict:
    """``env`` for any stage: JAX allocates GPU memory as it needs it instead of 75 % at its first use.

    Several processes share the GPU (test workers, a fuzz child, CuPy and
    torch beside JAX in one benchmark process), so none may take most of it.
    """
    env = dict(env)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def worker_env(env: dict, *, workers: int, cores: int, test_timeout: float) -> dict:
    """``env`` for the test processes: each of ``workers`` gets ``cores // workers`` threads (at least 1).

    Examples
    --------
    >>> e = worker_env({}, workers=16, cores=16, test_timeout=60)
    >>> e["NUMBA_NUM_THREADS"], e["OMP_NUM_THREADS"], e["XLA_PYTHON_CLIENT_PREALLOCATE"]
    ('1', '1', 'false')
    >>> worker_env({}, workers=3, cores=16, test_timeout=0)["MKL_NUM_THREADS"]
    '5'
    """
    env = clean_env(env)
    threads = str(max(1, cores // max(1, workers)))
    for var in THREAD_VARS:
        env[var] = threads
    if test_timeout:
        env["GPUSPARSE_TEST_TIMEOUT"] = f"{test_timeout:g}"
    return env


def bench_cuda_plan(modules: str, full_size: bool, budget: float = NOMINAL_BENCH_S, *,
                    size: int | None = None) -> list[tuple]:
    """``(module, size, share_s)`` for the comma-separated ``modules``, in that order.

    The shares split ``budget`` seconds in proportion to the modules' shares
    in :data:`BENCH_CUDA_PLAN` (an unknown module weighs 15), so they add up
    to ``budget``. ``full_size`` runs every module at its own size,
    ``size`` (``--emulate``) every module at that one.

    Examples
    --------
    >>> bench_cuda_plan("coalesce,linalg", False, 82)
    [('coalesce', 16777216, 22.0), ('linalg', 524288, 60.0)]
    >>> bench_cuda_plan("io", True, 30)
    [('io', None, 30.0)]
    """
    known = {name: (sz, share) for name, sz, share in BENCH_CUDA_PLAN}
    names = [m.strip() for m in modules.split(",") if m.strip()]
    weights = [known.get(name, (None, 15))[1] for name in names]
    total = sum(weights) or 1
    return [(name, size or (None if full_size else known.get(name, (None, 15))[0]),
             round(budget * w / total, 1)) for name, w in zip(names, weights)]


def _bench_part_status(res: dict) -> str:
    if res.get("rc") == 1 and not res.get("timed_out"):
        return "ok, with error rows"
    if res.get("rc") == 2 and not res.get("timed_out"):
        return "CUDA not usable"
    return _stage_status(res)


def run_bench_cuda(plan, timeout: float, logs: str, log_path: str, env, py: str, target_time: float,
                   out_stem: str, *, quick: bool = False, on_module=None) -> dict:
    """Run ``benchmarks.run --device cuda`` once per module of ``plan``, most important first.

    The modules' shares (``share_s`` of :func:`bench_cuda_plan`) are scaled
    to ``timeout``; a module may use its share plus what the earlier ones
    left unused, so a module that overruns costs only its own rows and every
    later one keeps its share. Each limit includes the time to stop the
    module (SIGINT, SIGTERM, SIGKILL: :data:`BENCH_STOP_S`), so the stage
    ends within ``timeout``. Rows are saved by the module as they are
    measured; the rows of all modules are merged into ``out_stem.json`` and
    ``.md`` after each module, and ``on_module()`` is called then.
    """
    start = time.monotonic()
    deadline = start + timeout
    total = sum(share for _, _, share in plan) or 1
    parts, docs, modules = [], {}, {}
    spare = 0.0
    for module, size, share in plan:
        began = time.monotonic()
        allowed = min(share * timeout / total + spare, deadline - began)
        limit = allowed - BENCH_STOP_S
        if any(p["status"] == "CUDA not usable" for p in parts):
            parts.append({"module": module, "size": size, "status": "not run (CUDA not usable)", "rows": 0})
            continue
        if limit < 2:
            parts.append({"module": module, "size": size, "status": "not run (no time left)", "rows": 0})
            spare = max(0.0, allowed)
            continue
        name = f"bench-cuda-{module}"
        cmd = [py, "-m", "benchmarks.run", "--device", "cuda", "--out", logs, "--name", name,
               "--only", f"bench_{module}", "--target-time", f"{target_time:g}"]
        cmd += ["--size", str(size)] if size else []
        cmd += ["--quick"] if quick else []
        res = run_stage("bench-cuda", cmd, limit, log_path, env, interrupt_s=1, stop_s=2,
                        label=f"bench-cuda {module}")
        spare = max(0.0, allowed - (time.monotonic() - began))
        doc = _read_json(os.path.join(logs, name + ".json"))
        rows = [r for v in (doc or {}).get("results", {}).values() for r in v]
        status = collections.Counter(r.get("status") for r in rows)
        parts.append({"module": module, "size": size, "rows": len(rows), "row_status": dict(status),
                      "status": _bench_part_status(res), "share_s": round(allowed, 1),
                      **{k: res.get(k) for k in ("command", "seconds", "timeout_s", "timed_out", "rc")}})
        if doc:
            docs[module] = doc
            try:
                mod = importlib.import_module(f"benchmarks.bench_{module}")
                modules[bench_run._title(mod)] = mod
            except Exception:  # noqa: BLE001 (the generic tables will do)
                pass
            merged = _merge_bench(docs, plan, target_time)
            bench_run.save(merged, modules, out_stem)
        if on_module is not None:
            on_module(parts)
    bad = [f"{p['module']}: {p['status']}" for p in parts if p["status"] != "ok"]
    return {"parts": parts, "status": "ok" if not bad else "; ".join(bad),
            "seconds": round(time.monotonic() - start, 1), "timeout_s": round(timeout),
            "rc": max((p["rc"] for p in parts if p.get("rc") is not None), default=None),
            "timed_out": any(p.get("timed_out") for p in parts), "log": os.path.basename(log_path)}


def _merge_bench(docs: dict, plan, target_time: float) -> dict:
    """One results document from the per-module ones (in plan order), as ``benchmarks.run`` writes it."""
    first, last = next(iter(docs.values())), list(docs.values())[-1]
    doc = {k: first[k] for k in ("schema", "date", "started", "device", "device_name", "quick", "target_s",
                                 "machine", "versions", "git") if k in first}
    runs = "; ".join(f"--only bench_{m}" + (f" --size {sz}" if sz else "") for m, sz, _ in plan if m in docs)
    doc["command"] = (f"python -m benchmarks.run --device cuda --target-time {target_time:g}, "
                      f"one process per module: {runs}")
    doc["results"] = {}
    for d in docs.values():
        doc["results"].update(d.get("results", {}))
    for key in ("finished", "load_avg_end"):
        if key in last:
            doc[key] = last[key]
    return doc


# --------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------

def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _read_text(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _summary_block(md_path: str) -> str:
    try:
        with open(md_path) as f:
            text = f.read()
    except OSError:
        return ""
    start, end = text.find(bench_run.SUMMARY_START), text.find(bench_run.SUMMARY_END)
    return text[start + len(bench_run.SUMMARY_START):end].strip() if 0 <= start < end else ""


def _bench_overview(doc: dict | None) -> dict:
    if not doc:
        return {"rows": 0}
    rows = [r for rs in doc.get("results", {}).values() for r in rs]
    status = collections.Counter(r.get("status") for r in rows)
    bad = [f"{r.get('bench')} {r.get('case')} {r.get('impl')}: {r.get('status')} {r.get('error', '')}"[:300]
           for r in rows if r.get("status") in ("error", "mismatch")]
    return {"rows": len(rows), "status": dict(status), "problems": bad[:50]}


def _tests_markdown(t: dict) -> list[str]:
    c = t.get("counts") or {}
    lines = ["## Tests", ""]
    reported = (f"{c.get('reported', '?')} of {c.get('collected') or '?'} collected tests had reported"
                if "reported" in c else "no outcome log")
    if t.get("status") == "running":
        lines += [f"Still running after {t.get('seconds', '?')} s: {reported}.", ""]
    elif t.get("timed_out"):
        lines += [f"**The stage timed out after {t.get('seconds')} s**: {reported} by then; "
                  f"the rest did not run or did not finish.", ""]
    keys = ("tests", "passed", "failed", "errors", "skipped", "xfailed", "xpassed")
    counted = ", ".join(f"{k} {c[k]}" for k in keys if k in c)
    lines.append(f"{counted} (from the {c.get('source')})" if counted else f"no counts ({t.get('status')})")
    if t.get("command"):
        lines += ["", f"Command: `{t['command']}`" + "".join(f", {k}={v}" for k, v in t.get("env", {}).items())]
    failures = c.get("failures") or []
    if failures:
        groups: dict = {}
        for f in failures:
            groups.setdefault(f.get("message") or "(no message)", []).append(f)
        listed = f", the first {len(failures)} listed" if c.get("n_failures", 0) > len(failures) else ""
        lines += ["", f"Failures and errors by message ({c.get('n_failures', len(failures))} tests{listed}, "
                  f"{len(groups)} messages):"]
        for message, group in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:30]:
            more = f" and {len(group) - 1} more" if len(group) > 1 else ""
            lines.append(f"- {len(group)} × {message.replace('|', '/')}: `{group[0]['test']}`{more}")
        if c.get("kinds"):
            lines += ["", "By kind: " + ", ".join(f"{k} {n}" for k, n in sorted(c["kinds"].items()))]
        lines += ["", "Failing tests (first 100):"]
        for f in failures[:100]:
            how = f.get("kind", "failed") + (f" in {f['when']}" if f.get("when") not in (None, "call", "???") else "")
            lines.append(f"- `{f['test']}` ({how}): {(f.get('message') or '').replace('|', '/')}")
        deaths = [f for f in failures if f.get("kind") in ("timeout", "crashed")][:20]
        if deaths:
            lines += ["", "Stacks of the tests that timed out or crashed (first 20):"]
            for f in deaths:
                lines += ["", f"`{f['test']}` ({f['kind']}):", "", "```", (f.get("detail") or "")[-3000:], "```"]
    if c.get("not_run"):
        lines += ["", f"Collected but without an outcome ({len(c['not_run'])}; the stage ended first):"]
        lines += [f"- `{t}`" for t in c["not_run"][:50]]
    if c.get("slowest"):
        lines += ["", "Slowest tests:"]
        lines += [f"- {s['seconds']:.1f} s `{s['test']}`" for s in c["slowest"]]
    if c.get("skip_reasons"):
        lines += ["", "Skip reasons:"]
        lines += [f"- {s['count']} × {s['reason']}" for s in c["skip_reasons"]]
    return lines + [""]


def markdown(report: dict) -> str:
    gpu = report["gpu"]
    git = report["git"]
    commit = (git.get("commit") or "unknown")[:12]
    if git.get("dirty"):
        commit += " (with uncommitted changes)"
    lines = [f"# GPU report: {gpu.get('name')}, {report['date']}", "",
             (f"- GPU: {gpu.get('name')} ({gpu.get('memory')}, driver {gpu.get('driver')}, "
              f"{gpu.get('count')} visible; from {gpu.get('source')})"),
             f"- Commit: {commit} (from {git.get('source')})",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
             f"- Command: `{report['command']}`; total {report.get('total_s', '?')} s", "",
             "| stage | status | seconds | timeout | rc |", "|---|---|---|---|---|"]
    for name in STAGES:
        st = report["stages"].get(name)
        if st:
            lines.append(f"| {name} | {st.get('status')} | {st.get('seconds', '')} | "
                         f"{st.get('timeout_s', '')} | {st.get('rc', '')} |")
    lines += ["", "```", report.get("show_config", "").rstrip(), "```", ""]

    if report["stages"].get("tests"):
        lines += _tests_markdown(report["stages"]["tests"])
    s = report["stages"].get("sanitizer")
    if s:
        lines += ["## compute-sanitizer memcheck (tests/kernels)", "",
                  s.get("summary") or s.get("status", "")]
        lines += [f"    {r}" for r in s.get("first_reports", [])[:20]]
        lines.append("")
    titles = (("bench-cuda", "Benchmarks on the GPU"), ("bench-cpu", "CPU benchmarks (quick sizes)"))
    for name, title in titles:
        b = report["stages"].get(name)
        if not b:
            continue
        overview = b.get("overview", {})
        files = ", ".join(b.get("files", [])) or "none"
        lines += [f"## {title}", "",
                  f"Files: {files}; rows {overview.get('rows', 0)} {overview.get('status', '')}", ""]
        if b.get("parts"):
            lines += ["| module | size | status | rows | seconds | timeout |", "|---|---|---|---|---|---|"]
            lines += [f"| {p['module']} | {p.get('size') or 'full'} | {p['status']} | {p.get('rows', '')} | "
                      f"{p.get('seconds', '')} | {p.get('timeout_s', '')} |" for p in b["parts"]]
            lines.append("")
        lines += [f"- {p}" for p in overview.get("problems", [])]
        if b.get("summary_md"):
            lines += ["", b["summary_md"]]
        lines.append("")
    return "\n".join(lines)


def _save(report: dict, stem: str) -> None:
    texts = ((".json", json.dumps(report, indent=1, default=str) + "\n"), (".md", markdown(report)))
    for suffix, text in texts:
        tmp = stem + suffix + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, stem + suffix)


def _stage_status(res: dict) -> str:
    if res.get("rc") is None:
        return "not started"
    if res.get("timed_out"):
        return "timed out"
    return "ok" if res["rc"] == 0 else f"exit {res['rc']}"


def _join_logs(logs: str, path: str) -> str:
    """Every stage's log in one file (each cut to its start and end past :data:`LOG_KEEP_CHARS`)."""
    with open(path, "w") as out:
        for name in STAGES:
            text = _read_text(os.path.join(logs, f"{name}.log"))
            if not text:
                continue
            if len(text) > LOG_KEEP_CHARS:
                head = LOG_KEEP_CHARS // 10
                text = (text[:head] + f"\n[... {len(text) - LOG_KEEP_CHARS} characters left out ...]\n"
                        + text[-(LOG_KEEP_CHARS - head):])
            out.write(f"===== {name}.log =====\n{text}\n")
    return path


def run_tests(cmd, timeout: float, log_path: str, env: dict, outcomes: str, tick=None) -> dict:
    """The tests stage: pytest, resumed with the tests not yet reported each time its process dies.

    A pytest process that dies (a crash, or the outcome plugin's own timeout
    without pytest-xdist and pytest-timeout) leaves the test it ran in its
    stack file: :func:`benchmarks._outcome_log_plugin.postmortem` records it
    as ``crashed`` or ``timeout``, and pytest starts again on the rest
    (``GPUSPARSE_OUTCOME_RESUME``) while time is left.
    """
    from benchmarks import _outcome_log_plugin as plugin

    deadline = time.monotonic() + timeout
    runs, res = [], {}
    while True:
        left = deadline - time.monotonic()
        if runs and left < 10:
            break
        run_env = dict(env, GPUSPARSE_OUTCOME_RESUME="1") if runs else env
        res = run_stage("tests", cmd, left, log_path, run_env, interrupt_s=INTERRUPT_S["tests"], tick=tick,
                        label="tests" if not runs else f"tests (resumed {len(runs)})")
        runs.append({k: res.get(k) for k in ("rc", "seconds", "timed_out")})
        if res.get("rc") is None or res.get("timed_out"):
            break
        dead = plugin.postmortem(outcomes, res["rc"])
        for record in dead:
            say(f"tests: {record['kind']} in {record['nodeid']}: {record['message'].splitlines()[0]}")
        if not dead:
            break
    res = dict(res, seconds=round(sum(r["seconds"] or 0 for r in runs), 1), timeout_s=round(timeout),
               timed_out=any(r["timed_out"] for r in runs), runs=runs)
    return res


def check_complete(report: dict, stem: str, plan, *, failures_count: bool) -> list[str]:
    """What the report lacks: a stage not run, a test without an outcome, a module without rows, ...

    ``failures_count``: failing tests and benchmark rows in error count as
    problems too (``--emulate``, where the CUDA path must pass).
    """
    problems = []
    for suffix in (".json", ".md"):
        if not os.path.exists(stem + suffix):
            problems.append(f"report file {os.path.basename(stem + suffix)} missing")
    stages = report.get("stages", {})
    t = stages.get("tests")
    if t is not None:
        c = t.get("counts") or {}
        if not c.get("collected"):
            problems.append(f"tests: nothing collected ({t.get('status')})")
        if c.get("not_run"):
            problems.append(f"tests: {len(c['not_run'])} tests without an outcome, e.g. {c['not_run'][0]}")
        if failures_count and c.get("n_failures"):
            f = c["failures"][0]
            problems.append(f"tests: {c['n_failures']} failing, e.g. {f['test']} ({f['kind']}): {f['message']}")
    b = stages.get("bench-cuda")
    if b is not None:
        parts = {p["module"]: p for p in b.get("parts", [])}
        for module, _, _ in plan:
            p = parts.get(module)
            if p is None or not p.get("rows"):
                problems.append(f"bench-cuda {module}: no rows ({p.get('status') if p else 'not run'})")
                continue
            if p.get("timed_out"):
                problems.append(f"bench-cuda {module}: stopped at its time limit after {p.get('rows')} rows")
        doc = _read_json(os.path.join(os.path.dirname(stem), b.get("files", [""])[0])) if b.get("files") else None
        for rows in (doc or {}).get("results", {}).values():
            for r in rows:
                if r.get("status") == "skipped" and not r.get("error"):
                    problems.append(f"bench-cuda {r.get('bench')} {r.get('case')} {r.get('impl')}: skipped "
                                    "without a reason")
                if failures_count and r.get("status") in ("error", "mismatch"):
                    problems.append(f"bench-cuda {r.get('bench')} {r.get('case')} {r.get('impl')}: "
                                    f"{r.get('status')} {str(r.get('error', ''))[:200]}")
    for name, st in stages.items():
        if st.get("status") in ("not started", "error", "running"):
            problems.append(f"stage {name}: {st.get('status')} {st.get('error', '')}".rstrip())
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.gpu_report", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="report folder (default benchmarks/results; a temporary "
                   "folder with --emulate)")
    p.add_argument("--budget", type=float, default=None,
                   help=f"seconds for all stages together, stopping included (default {DEFAULT_BUDGET}; "
                   f"{EMULATE_BUDGET} with --emulate)")
    p.add_argument("--stages", default=",".join(DEFAULT_STAGES),
                   help="comma-separated subset of " + ",".join(STAGES) + " (default: %(default)s)")
    p.add_argument("--test-devices", default="cuda",
                   help="GPUSPARSE_TEST_DEVICES for the tests ('all': every device; default: %(default)s)")
    p.add_argument("--test-markers", default="gpu and not slow",
                   help="pytest -m expression ('' for every test; default: %(default)s)")
    p.add_argument("--test-paths", default=None,
                   help="comma-separated test paths (default tests; " + ",".join(EMULATE_TESTS)
                   + " with --emulate)")
    p.add_argument("--test-timeout", type=float, default=TEST_TIMEOUT_S,
                   help="seconds one test may take (pytest-timeout, else the outcome plugin; 0: no limit; "
                   "default: %(default)s)")
    p.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, MAX_WORKERS),
                   help="pytest-xdist processes (1: none; default: %(default)s)")
    p.add_argument("--target-time", type=float, default=None,
                   help="seconds of timed repeats per CUDA measurement (default 0.2; 0.01 with --emulate)")
    p.add_argument("--bench-modules", default=",".join(m for m, _, _ in BENCH_CUDA_PLAN),
                   help="CUDA benchmark modules, most important first (default: %(default)s)")
    p.add_argument("--full-size", action="store_true", help="CUDA benchmarks at the modules' own sizes")
    p.add_argument("--emulate", action="store_true",
                   help="the whole plan on the emulated CUDA device (GPUSPARSE_CUDA_EMULATION=1) at tiny "
                   "sizes with a small test selection; exit status 1 unless the report is complete")
    args = p.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        p.error(f"--stages: unknown {unknown}; choose from {STAGES}")
    budget = args.budget or (EMULATE_BUDGET if args.emulate else DEFAULT_BUDGET)
    target_time = args.target_time or (0.01 if args.emulate else 0.2)
    test_paths = ([t for t in args.test_paths.split(",") if t] if args.test_paths
                  else list(EMULATE_TESTS) if args.emulate else ["tests"])
    limits = dict(LIMITS)
    if args.emulate:
        os.environ["GPUSPARSE_CUDA_EMULATION"] = "1"
        os.environ["GPUSPARSE_BENCH_MIN_REPEATS"] = "1"
        from benchmarks import _emulation
        _emulation.install()
        limits.update({"tests": (round(budget * 0.3), 20), "bench-cuda": (budget, round(budget * 0.5))})
        stages = [s for s in stages if s != "sanitizer"]

    began = time.monotonic()
    deadline = began + budget
    out_arg = args.out or (tempfile.mkdtemp(prefix="gpusparse-emulated-report-") if args.emulate
                           else os.path.join("benchmarks", "results"))
    out_dir = os.path.join(REPO, out_arg) if not os.path.isabs(out_arg) else out_arg
    os.makedirs(out_dir, exist_ok=True)
    remote_out = os.environ.get("OUT")
    global _LOGS
    logs = _LOGS = tempfile.mkdtemp(prefix="gpusparse-report-")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    gpu = gpu_identity()
    gpu_slug = bench_run.slug(gpu.get("name") or "no-gpu")
    stem = os.path.join(out_dir, f"{date}-{gpu_slug}")
    env = clean_env(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    py = sys.executable or "python3"
    report = {
        "schema": 1, "date": date,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python3 -m benchmarks.gpu_report " + " ".join(
            bench_run._short_path(a) for a in (argv if argv is not None else sys.argv[1:])),
        "emulated": bool(args.emulate),
        "gpu": gpu, "git": bench_run.git_info(REPO), "versions": bench_run.versions(),
        "machine": {k: v for k, v in bench_run.machine_info("cpu").items() if k != "kind"},
        "show_config": _show_config(),
        "env": {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GPUSPARSE_DEVICE", "GPUSPARSE_COMMIT",
                                           "GPUSPARSE_CUDA_EMULATION") if k in os.environ},
        "stages": {},
    }
    earlier = _read_json(stem + ".json")
    if earlier and earlier.get("git", {}).get("commit") == report["git"].get("commit"):
        # A run split over several calls (--stages) keeps the other stages' results.
        report["stages"] = {k: v for k, v in earlier.get("stages", {}).items() if k not in stages}
    say(f"GPU {gpu.get('name')} ({gpu.get('source')}); commit {report['git'].get('commit')}; "
        f"report -> {stem}.md; logs in {logs}")
    copies = []  # files for $OUT besides the report, most useful first

    def publish():
        _save(report, stem)
        if remote_out:
            joined = _join_logs(logs, os.path.join(logs, "stage-logs.txt"))
            _copy_out([stem + ".json", stem + ".md"] + copies + [joined], remote_out)

    publish()

    def stop_s(name):  # bench-cuda keeps its modules' stopping time within its own timeout
        return 0 if name == "bench-cuda" else INTERRUPT_S.get(name, 5) + STOP_S

    def timeout_for(name):
        reserve = sum(limits[s][1] + stop_s(s) for s in stages[stages.index(name) + 1:])
        return max(20.0, min(limits[name][0], deadline - time.monotonic() - reserve - stop_s(name)))

    plan = bench_cuda_plan(args.bench_modules, args.full_size, size=EMULATE_SIZE if args.emulate else None)
    for name in stages:
        log_path = os.path.join(logs, f"{name}.log")
        res = {}
        try:
            if name == "tests":
                junit, outcomes = os.path.join(logs, "junit.xml"), os.path.join(logs, "outcomes.jsonl")
                workers = args.workers if _have("xdist") else 1
                stage_env = worker_env(env, workers=workers, cores=os.cpu_count() or 1,
                                     test_timeout=args.test_timeout)
                stage_env["GPUSPARSE_OUTCOME_LOG"] = outcomes
                stage_env.setdefault("GPUSPARSE_HYPOTHESIS_PROFILE", "ci")
                if args.test_devices.strip().lower() == "all":
                    stage_env.pop("GPUSPARSE_TEST_DEVICES", None)
                else:
                    stage_env["GPUSPARSE_TEST_DEVICES"] = args.test_devices
                cmd = pytest_command(py, junit, workers=workers, markers=args.test_markers,
                                     test_timeout=args.test_timeout, paths=test_paths)
                copies += [outcomes, junit]
                shown = {k: stage_env[k] for k in ("GPUSPARSE_TEST_DEVICES", "GPUSPARSE_HYPOTHESIS_PROFILE",
                                                   "NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
                                                   "XLA_PYTHON_CLIENT_PREALLOCATE", "GPUSPARSE_TEST_TIMEOUT",
                                                   "GPUSPARSE_CUDA_EMULATION") if k in stage_env}
                started = time.monotonic()

                def tick():
                    report["stages"]["tests"] = {"status": "running", "env": shown,
                                                 "seconds": round(time.monotonic() - started),
                                                 "counts": summarize_tests(junit, outcomes)}
                    report["total_s"] = round(time.monotonic() - began, 1)
                    publish()

                res = run_tests(cmd, timeout_for(name), log_path, stage_env, outcomes, tick=tick)
                res["env"] = shown
                res["counts"] = summarize_tests(junit, outcomes, res.get("tail", ""))
            elif name == "sanitizer":
                tool = _sanitizer_path()
                if tool is None:
                    res = {"status": "skipped", "summary": "compute-sanitizer not found"}
                elif not os.path.isdir(os.path.join(REPO, "tests", "kernels")):
                    res = {"status": "skipped", "summary": "tests/kernels not found"}
                else:
                    res = run_stage(name, [tool, "--tool", "memcheck", py, "-m", "pytest", "tests/kernels",
                                           "-q", "-x", "-p", "no:cacheprovider",
                                           "-p", "benchmarks._sanitizer_plugin"],
                                    timeout_for(name), log_path, env, interrupt_s=INTERRUPT_S["sanitizer"])
                    res.update(parse_sanitizer(_read_text(log_path) or res.get("tail", "")))
                    if res.get("errors"):
                        res["status"] = f"{res['errors']} memcheck errors"
            elif name == "bench-cuda":
                bench_stem = os.path.join(out_dir, f"{date}-cuda-{gpu_slug}")
                copies += [bench_stem + ".json", bench_stem + ".md"]
                bench_env = dict(env, GPUSPARSE_BENCH_MIN_REPEATS="1") if args.emulate else env

                def on_module(parts):
                    report["stages"]["bench-cuda"] = {"status": "running", "parts": list(parts)}
                    report["total_s"] = round(time.monotonic() - began, 1)
                    publish()

                res = run_bench_cuda(plan, timeout_for(name), logs, log_path, bench_env, py, target_time,
                                     bench_stem, quick=args.emulate, on_module=on_module)
                res["files"] = [os.path.basename(bench_stem + s) for s in (".json", ".md")
                                if os.path.exists(bench_stem + s)]
                res["overview"] = _bench_overview(_read_json(bench_stem + ".json") if res["files"] else None)
                res["summary_md"] = _summary_block(bench_stem + ".md")
            else:
                bench_stem = f"{date}-{gpu_slug}-host-cpu-quick"
                cmd = [py, "-m", "benchmarks.run", "--out", logs, "--name", bench_stem,
                       "--device", "cpu", "--quick"]
                res = run_stage(name, cmd, timeout_for(name), log_path, env)
                doc = _read_json(os.path.join(logs, bench_stem + ".json"))
                res["overview"] = _bench_overview(doc)
                res["summary_md"] = _summary_block(os.path.join(logs, bench_stem + ".md"))
                if doc:
                    res["results"] = doc.get("results")  # in the report; the files stay in the log folder
        except Exception as exc:  # noqa: BLE001 (a stage's failure is recorded, never fatal)
            res.setdefault("error", f"{type(exc).__name__}: {exc}")
            say(f"{name}: failed in the report itself: {res['error']}")
        res.setdefault("status", _stage_status(res) if "rc" in res else "error")
        report["stages"][name] = res
        report["total_s"] = round(time.monotonic() - began, 1)
        publish()

    report["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    report["total_s"] = round(time.monotonic() - began, 1)
    problems = check_complete(report, stem, plan if "bench-cuda" in stages else [], failures_count=args.emulate)
    report["incomplete"] = problems
    publish()
    say(f"wrote {stem}.json and {stem}.md in {report['total_s']} s"
        + ("; copied them, the test and benchmark files and the logs to $OUT" if remote_out else ""))
    for problem in problems:
        say(f"incomplete: {problem}")
    if args.emulate:
        say("emulated run " + ("complete" if not problems else f"INCOMPLETE ({len(problems)} problems)"))
        return 1 if problems else 0
    return 0


def _copy_out(paths, folder: str) -> None:
    """Copy the first :data:`MAX_OUT_FILES` of ``paths`` that exist to ``folder`` (fetched from ``$OUT``)."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        say(f"cannot create $OUT: {exc}")
        return
    present = [path for path in dict.fromkeys(paths) if path and os.path.exists(path)]
    for path in present[MAX_OUT_FILES:]:
        say(f"not copied to $OUT (at most {MAX_OUT_FILES} files): {os.path.basename(path)}")
    for path in present[:MAX_OUT_FILES]:
        try:
            shutil.copy2(path, os.path.join(folder, os.path.basename(path)))
        except OSError as exc:
            say(f"could not copy {os.path.basename(path)} to $OUT: {exc}")


if __name__ == "__main__":
    sys.exit(main())
