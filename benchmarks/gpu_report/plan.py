"""The GPU report's plan: its stages, their time limits, the CUDA benchmark modules, sizes and shares.

Everything here is data or arithmetic on it (no process is started): the
stages and the order they run in, how the budget of one command is split
between them, how long each is given to stop, which benchmark modules run
at which size in which share of the ``bench-cuda`` stage, and the smaller
plan of ``--emulate``. The package's docstring (:mod:`benchmarks.gpu_report`)
describes what each stage runs.
"""

from __future__ import annotations

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ("host-profile", "tests", "sanitizer", "bench-cuda", "bench-cpu")
DEFAULT_STAGES = ("host-profile", "tests", "bench-cuda")
DEFAULT_BUDGET = 540
#: (most seconds a stage may take, least it is guaranteed when earlier stages overrun)
LIMITS = {"host-profile": (60, 20), "tests": (250, 90), "sanitizer": (300, 60), "bench-cuda": (540, 150),
          "bench-cpu": (120, 45)}
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
    ("elementwise", 2**24, 30),
    ("reductions", 2**24, 26),
    ("indexing", 2**22, 18),
    ("manipulation", 2**22, 16),
    ("autograd", 2**17, 22),
    ("io", 2**21, 14),
    ("dask", 2**20, 14),
    ("graph", 2**16, 24),
)
NOMINAL_BENCH_S = 268
#: seconds a module needs besides its cases: the process, the imports, stopping it
MODULE_OVERHEAD_S = 6
#: --emulate: the CUDA path on the CPU harness (GPUSPARSE_CUDA_EMULATION=1), tiny sizes, a small
#: test selection; it must finish within EMULATE_BUDGET on two cores
EMULATE_BUDGET = 170
EMULATE_TESTS = ("tests/kernels/test_primitives.py::test_linearize_delinearize",)
EMULATE_SIZE = 256
#: seconds one test may take: a test that is first to need a family of kernels on a fresh machine
#: waits for NVRTC to compile them (two hypothesis-driven tests took over 55 s there)
TEST_TIMEOUT_S = 120
MAX_WORKERS = 16
MAX_WORKER_RESTART = 200
MAX_OUT_FILES = 12
MAX_FAILURES = 300
TICK_S = 15
TAIL_CHARS = 6000
LOG_KEEP_CHARS = 2_000_000


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
