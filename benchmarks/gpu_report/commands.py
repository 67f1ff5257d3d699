"""The stages' command lines and environments, from what this interpreter has installed.

:func:`pytest_command` builds the tests stage's pytest command with the
plugins that are importable here (pytest-xdist, pytest-timeout,
pytest-benchmark), :func:`worker_env` and :func:`clean_env` the
environments of the stages' processes, and :func:`_sanitizer_path` finds
``compute-sanitizer``. Nothing here starts a stage.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil

from .plan import MAX_WORKER_RESTART


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
    """``env`` for any stage: JAX allocates GPU memory as it needs it, a fatal signal prints Python's stack.

    Several processes share the GPU (test workers, a fuzz child, CuPy and
    torch beside JAX in one benchmark process), so none may take most of it
    (JAX would take 75 % at its first use). ``PYTHONFAULTHANDLER`` makes a
    process that dies of a signal (SIGSEGV, SIGFPE, SIGABRT) print the
    stack of every thread into the stage's log first.
    """
    env = dict(env)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    env.setdefault("PYTHONFAULTHANDLER", "1")
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
