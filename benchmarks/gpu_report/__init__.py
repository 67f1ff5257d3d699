"""One report from a GPU machine: tests, memory checker and benchmarks.

Usage, from the repository root, with the system Python (no virtual
environment, no network needed)::

    PYTHONPATH=. python3 -m benchmarks.gpu_report [--out benchmarks/results]
        [--budget 540] [--stages tests,bench-cuda] [--test-devices cuda] [--emulate]

Records the GPU (``nvidia-smi``, else CuPy), the date, the git commit (or
``GPUSPARSE_COMMIT`` where there is no ``.git``) and library versions, then
runs the chosen stages, each in its own process with its own timeout, so
that a failure or a hang in one is recorded and the next still runs. The
defaults fit one command of at most 540 s (``--budget``): ``host-profile``
(at most 60 s), ``tests`` (at most 250 s), then ``bench-cuda`` (the rest,
at least 150 s).

Every stage runs with ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (JAX takes
GPU memory as it needs it instead of 75 % of it in the first process).

``host-profile``
    ``python3 -m benchmarks.host_profile --device cuda``, first, on the
    fresh machine's empty kernel cache: each small operation's first call
    (NVRTC's compile time), its median call against cupyx and torch, and
    gpusparse's Python time by function (:mod:`benchmarks.host_profile`);
    the report shows it whole.
``tests``
    ``python3 -m pytest -q -p no:cacheprovider -p benchmarks._outcome_log_plugin
    --junitxml=... -rfE --tb=short -m "gpu and not slow" [-n <cores, at most
    16> --dist=worksteal --max-worker-restart=200] [--timeout=120
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

The package's modules, each with one job: :mod:`~benchmarks.gpu_report.plan`
(the stages, their limits, the benchmark modules' sizes and shares),
:mod:`~benchmarks.gpu_report.commands` (the stages' command lines and
environments), :mod:`~benchmarks.gpu_report.stages` (running them:
processes, timeouts, time shares), :mod:`~benchmarks.gpu_report.outcomes`
(reading their results), :mod:`~benchmarks.gpu_report.writer` (the
report's Markdown and JSON), :mod:`~benchmarks.gpu_report.publish`
(progress lines, private paths, copies to ``$OUT``),
:mod:`~benchmarks.gpu_report.runner` (one run, stage after stage) and
:mod:`~benchmarks.gpu_report.cli` (the options). Every name is importable
from ``benchmarks.gpu_report`` itself.

Examples
--------
>>> parse_sanitizer("========= ERROR SUMMARY: 0 errors")["errors"]
0
>>> one_line("x = f()\\nE   ValueError: bad\\nE   more detail\\n\\nt.py:3: ValueError")
'ValueError: bad'
"""

from __future__ import annotations

from .cli import main, parser
from .commands import THREAD_VARS, _have, _sanitizer_path, _version, clean_env, pytest_command, worker_env
from .outcomes import (_failures, _junit_name, one_line, parse_junit, parse_outcome_log, parse_pytest_summary,
                       parse_sanitizer, summarize_tests)
from .plan import (BENCH_CUDA_PLAN, BENCH_STOP_S, DEFAULT_BUDGET, DEFAULT_STAGES, EMULATE_BUDGET, EMULATE_SIZE,
                   EMULATE_TESTS, INTERRUPT_S, LIMITS, LOG_KEEP_CHARS, MAX_FAILURES, MAX_OUT_FILES, MAX_WORKER_RESTART,
                   MAX_WORKERS, MODULE_OVERHEAD_S, NOMINAL_BENCH_S, REPO, STAGES, STOP_S, TAIL_CHARS, TEST_TIMEOUT_S,
                   TICK_S, bench_cuda_plan)
from .publish import _copy_out, _join_logs, _public, _read_json, _read_text, say
from .runner import run_report
from .stages import _bench_part_status, _merge_bench, _stage_status, _stop, run_bench_cuda, run_stage, run_tests
from .writer import (_bench_overview, _save, _show_config, _summary_block, _tests_markdown, check_complete,
                     gpu_identity, markdown)

__all__ = ["bench_cuda_plan", "gpu_identity", "main", "one_line", "parse_junit", "parse_outcome_log",
           "parse_sanitizer", "pytest_command", "run_bench_cuda", "run_stage", "summarize_tests"]
