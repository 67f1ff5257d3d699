"""The command line of ``python3 -m benchmarks.gpu_report``: its options, their defaults, ``--emulate``'s set-up.

:func:`main` checks the options, resolves the defaults that depend on
``--emulate`` (the budget, the repeat time, the test selection, the stage
limits), installs the emulated CUDA device where asked, and hands the run
to :func:`benchmarks.gpu_report.runner.run_report`. Nothing here needs a GPU
or any package beyond the standard library at import time.
"""

from __future__ import annotations

import argparse
import importlib
import os

from .plan import (BENCH_CUDA_PLAN, DEFAULT_BUDGET, DEFAULT_STAGES, EMULATE_BUDGET, EMULATE_TESTS, LIMITS,
                   MAX_WORKERS, STAGES, TEST_TIMEOUT_S)
from .runner import run_report


def parser() -> argparse.ArgumentParser:
    """The options of ``python3 -m benchmarks.gpu_report`` (described by the package's docstring)."""
    doc = importlib.import_module(__package__).__doc__ or ""
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.gpu_report", description=doc.split("\n\n")[0])
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
    return p


def main(argv=None) -> int:
    """Run the report with the options in ``argv`` (``sys.argv[1:]`` by default); its exit status."""
    p = parser()
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
    return run_report(args, argv, stages=stages, budget=budget, target_time=target_time, test_paths=test_paths,
                      limits=limits)
