"""The GPU cost model: its counters count what they should, its check catches regressions.

The counters are those of the emulated CUDA device
(:mod:`gpusparse._kernels.cuda_emulation._counting`); a known sequence of
``cupy`` calls, conversions and kernel launches gives known counts. The
budget check of :mod:`benchmarks.gpu_cost` is tested on made-up rows, and
once end to end in a fresh interpreter (the emulated device is chosen at
import) with a planted budget that a syncing operation breaks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpusparse._kernels.cuda_emulation import _counting
from gpusparse._kernels.cuda_emulation._array import cupy

ROOT = Path(__file__).resolve().parents[1]
needs_compiler = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                    reason="the CUDA emulation needs a host C++ compiler")


# --------------------------------------------------------------------------
# Counters
# --------------------------------------------------------------------------

def test_elementwise_call_is_one_launch_and_one_allocation():
    x = cupy.arange(8, dtype=np.int64)
    with _counting.counting() as c:
        y = x + 1
    assert (c.launches, c.raw_launches, c.syncs, c.allocations, c.alloc_bytes) == (1, 0, 0, 1, 64)
    assert c.arg_bytes == 128  # the operand and the result
    assert c.launch_names == {"__add__": 1}
    del y


def test_views_and_empty_launch_nothing():
    x = cupy.arange(12, dtype=np.float64)
    with _counting.counting() as c:
        v = x[2:8]
        r = x.reshape(3, 4)
        t = r.T
        s = x[3]  # basic indexing: a 0-d view, no kernel
        e = cupy.empty(5)
    assert c.launches == 0
    assert c.syncs == 0
    assert (c.allocations, c.alloc_bytes) == (1, 40)  # only empty()
    del v, r, t, s, e


def test_host_reads_are_syncs():
    x = cupy.arange(4, dtype=np.int64)
    with _counting.counting() as c:
        host = x.get()
        first = int(x[0])
        flag = bool(x[1])
        total = x.sum().item()
        back = cupy.asnumpy(x)
        cupy.cuda.Device().synchronize()
    assert c.syncs == 6
    assert c.sync_names == {"get": 2, "int": 1, "bool": 1, "item": 1, "synchronize": 1}
    assert c.launches == 1  # the sum
    assert c.d2h_bytes == 32 + 8 + 8 + 8 + 32
    assert (host.tolist(), first, flag, total, back.tolist()) == ([0, 1, 2, 3], 0, True, 6, [0, 1, 2, 3])


def test_output_sizes_read_back_are_syncs():
    x = cupy.arange(10, dtype=np.int64)
    with _counting.counting() as c:
        mask = x > 4                       # launch
        idx = cupy.nonzero(mask)           # launch + sync
        picked = x[mask]                   # launch + sync (boolean mask)
        gathered = x[idx[0]]               # launch (integer gather), no sync
        u = cupy.unique(x % 3)             # 2 launches + sync
        w = cupy.where(mask, x, 0)         # launch, no sync (three arguments)
    assert c.syncs == 3
    assert c.sync_names == {"nonzero": 1, "getitem": 1, "unique": 1}
    assert c.launches == 7
    assert picked.get().tolist() == gathered.get().tolist() == [5, 6, 7, 8, 9]
    del u, w


def test_fills_and_in_place_writes_are_launches():
    with _counting.counting() as c:
        z = cupy.zeros(4)                  # allocation + fill launch
        z += 1.0                           # in place: launch, no allocation
        z[1:3] = 5.0                       # setitem: launch
        z.fill(2.0)                        # launch
        cupy.add.at(z, cupy.asarray(np.array([0, 0])), 1.0)  # h2d of the index, then a launch
    assert c.launches == 5
    assert c.allocations == 2
    assert (c.h2d, c.h2d_bytes) == (1, 16)
    assert c.syncs == 0
    assert z.get().tolist() == [4.0, 2.0, 2.0, 2.0]


def test_peak_counts_temporaries_above_what_is_left():
    with _counting.counting() as c:
        big = cupy.ones(1000)              # 8000 bytes, freed before the end
        small = big[:10].copy()            # 80 bytes, kept
        del big
    assert c.peak == 8080
    assert c.end_live == 80
    assert c.peak_above_end == 8000
    del small


def test_nothing_is_counted_outside_a_block_and_blocks_nest():
    x = cupy.arange(4)
    with _counting.counting() as outer:
        y = x * 2
        with _counting.counting() as inner:
            int(y[0])
        y.get()
    x + 1
    assert (outer.launches, outer.syncs) == (1, 2)
    assert (inner.launches, inner.syncs) == (0, 1)
    assert not _counting.active()


@needs_compiler
def test_raw_kernel_launch_counts_its_array_arguments():
    from gpusparse._kernels.cuda_emulation import _launch
    # The kernel is built directly: the loader's package needs CuPy or the emulation switched on at import.
    kernel = _launch._kernel(ROOT / "cuda_kernels", "compress", "gs_compress<long long, long long>", False)
    rows = cupy.asarray(np.array([0, 0, 1, 3], dtype=np.int64))
    indptr = cupy.empty(5, dtype=np.int64)
    with _counting.counting() as c:
        kernel((1,), (256,), (rows, np.int64(4), np.int64(4), indptr))
        out = indptr.get()
    assert (c.launches, c.raw_launches, c.syncs, c.allocations) == (1, 1, 1, 0)
    assert c.arg_bytes == 32 + 40
    assert c.launch_names == {"gs_compress<long long, long long>": 1}
    assert out.tolist() == [0, 2, 3, 3, 4]


# --------------------------------------------------------------------------
# The budget check
# --------------------------------------------------------------------------

def _rows(op, launches, syncs, peak=0, min_bytes=1000, sync_names=None):
    return [
        {"op": op, "n": n, "launches": l, "syncs": s, "peak_bytes": p, "min_bytes": min_bytes,
         "sync_names": sync_names or ({"get": s} if s else {})}
        for n, l, s, p in zip((1024, 8192), launches, syncs, (peak, peak))
    ]


BUDGETS = {"peak_slack_bytes": 0, "ops": {"op": {"launches": 5, "syncs": 0, "peak_factor": 2.0}}}


def test_check_passes_within_budget():
    from benchmarks.gpu_cost import check
    assert check(_rows("op", (5, 5), (0, 0), peak=2000), BUDGETS) == []


def test_check_names_a_sync_in_an_op_whose_budget_has_none():
    from benchmarks.gpu_cost import check
    failures = check(_rows("op", (5, 5), (1, 1), sync_names={"nonzero": 1}), BUDGETS)
    assert any("op: 1 sync(s) at n=1024 (nonzero x1)" in f and "budget has none" in f for f in failures)


def test_check_catches_launches_growing_with_n():
    from benchmarks.gpu_cost import check
    failures = check(_rows("op", (3, 5), (0, 0)), BUDGETS)
    assert failures == ["op: launches grow with n: 3 at n=1024 -> 5 at n=8192 (+2, accepted growth 0)"]
    accepted = {"ops": {"op": dict(BUDGETS["ops"]["op"], launch_growth=2)}}
    assert check(_rows("op", (3, 5), (0, 0)), accepted) == []


def test_check_catches_too_many_launches_and_too_much_memory():
    from benchmarks.gpu_cost import check
    failures = check(_rows("op", (6, 6), (0, 0), peak=2001), BUDGETS)
    assert "op: 6 launches at n=1024, budget 5" in failures
    assert any(f.startswith("op: peak device memory 2001 bytes at n=8192 above its bound 2000") for f in failures)


def test_check_wants_a_budget_for_every_op_and_an_op_for_every_budget():
    from benchmarks.gpu_cost import check
    failures = check(_rows("new op", (1, 1), (0, 0)), BUDGETS)
    assert any(f.startswith("new op: no budget") for f in failures)
    assert "op: budgeted but not measured (stale budget)" in failures
    assert not any("stale" in f for f in check(_rows("new op", (1, 1), (0, 0)), BUDGETS, complete=False))


def test_budgets_file_covers_the_cases_and_explains_growth():
    from benchmarks.gpu_cost import BUDGETS as path
    from benchmarks.gpu_cost import cases
    budgets = json.loads(path.read_text(encoding="utf-8"))
    assert {c.op for c in cases()} == set(budgets["ops"])
    for op, budget in budgets["ops"].items():
        if budget.get("launch_growth") or budget.get("sync_growth"):
            assert budget.get("note"), f"{op}: accepted growth needs a note"


def _run_check(*args, timeout=300):
    env = dict(os.environ, GPUSPARSE_CUDA_EMULATION="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "benchmarks.gpu_cost", "--check", "--quiet", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@needs_compiler
def test_check_mode_fails_on_a_planted_regression(tmp_path):
    op = "multiply COO*scalar"  # reads one flag back to the host
    budgets = json.loads((ROOT / "benchmarks" / "gpu_cost_budgets.json").read_text(encoding="utf-8"))
    assert budgets["ops"][op]["syncs"] >= 1
    passed = _run_check("--only", op)
    assert passed.returncode == 0, passed.stderr
    budgets["ops"][op]["syncs"] = 0
    planted = tmp_path / "budgets.json"
    planted.write_text(json.dumps(budgets), encoding="utf-8")
    failed = _run_check("--only", op, "--budgets", str(planted))
    assert failed.returncode == 1
    assert f"{op}: 1 sync(s) at n=1024" in failed.stderr
    assert "whose budget has none" in failed.stderr
