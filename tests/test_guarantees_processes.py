"""Guarantees of the CPU path towards processes, threads and memory.

Numba's parallel kernels run on a *threading layer*; gpusparse picks TBB,
which is safe with threads and with ``fork()`` (see
``gpusparse/_kernels/cpu/_threading.py``), and falls back to ``workqueue``
with its parallel kernels run one at a time where TBB does not load. A wrong
layer kills or hangs processes rather than failing an assertion, so every
case here runs in a fresh interpreter: a child killed by a signal, a
non-zero exit or a timeout (a hang) fails the test with the child's output.

The operations work on 200,000-entry operands (far above the 32k entries
from which the kernels run in parallel) and are compared exactly with the
same operations run serially in the parent, and with a dense NumPy oracle.
Each scenario runs under three layer settings: gpusparse's own choice (TBB
where the ``tbb`` package is installed), ``NUMBA_THREADING_LAYER=workqueue``
set by the user, and the fallback where TBB cannot be loaded.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The operations every scenario runs, importable by the children (spawned
# processes and pool workers need functions they can import by name).
_CASES_MODULE = '''
"""Operations on shared CPU operands, their exact results and dense NumPy oracles."""

import numpy as np

import gpusparse as gs

SHAPE = (1200, 900)
NNZ = 200_000  # far above the kernels' parallel threshold (32k entries)


def _coo(rng, nnz):
    coords = np.stack([rng.integers(0, SHAPE[0], nnz), rng.integers(0, SHAPE[1], nnz)])
    return gs.COO(coords, rng.standard_normal(nnz), shape=SHAPE, device="cpu")


def _dense(a):
    out = np.zeros(a.shape)
    np.add.at(out, tuple(a.indices()), a.values())
    return out


class Operands:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.x, self.y = _coo(rng, NNZ), _coo(rng, NNZ)  # unsorted, ~8 % duplicates
        self.xc, self.yc = self.x.coalesce(), self.y.coalesce()
        self.b = rng.standard_normal((SHAPE[1], 8))
        self.rows = rng.integers(0, SHAPE[0], 500)
        self.X, self.Y = _dense(self.x), _dense(self.y)


_OPERANDS = []


def operands():
    if not _OPERANDS:
        _OPERANDS.append(Operands())
    return _OPERANDS[0]


#: name -> (operation, dense oracle)
CASES = {
    "coalesce": (lambda o: o.x.coalesce(), lambda o: o.X),
    "sum_axis0": (lambda o: o.x.sum(axis=0), lambda o: o.X.sum(axis=0)),
    "sum_axis1": (lambda o: o.xc.sum(axis=1), lambda o: o.X.sum(axis=1)),
    "sum": (lambda o: o.x.sum(), lambda o: o.X.sum()),
    "add": (lambda o: o.xc + o.yc, lambda o: o.X + o.Y),
    "add_unsorted": (lambda o: o.x + o.y, lambda o: o.X + o.Y),
    "multiply": (lambda o: o.xc * o.yc, lambda o: o.X * o.Y),
    "tocsr": (lambda o: o.x.tocsr(), lambda o: o.X),
    "tocsc": (lambda o: o.xc.tocsc(), lambda o: o.X),
    "matmul": (lambda o: o.xc.tocsr() @ o.b, lambda o: o.X @ o.b),
    "index": (lambda o: o.xc[o.rows], lambda o: o.X[o.rows]),
    "slice_csr": (lambda o: o.xc.tocsr()[100:700], lambda o: o.X[100:700]),
    "todense": (lambda o: o.x.todense(), lambda o: o.X),
}
NAMES = list(CASES)


def parts(result):
    """The arrays that make up a result, for exact comparisons."""
    if isinstance(result, np.ndarray):
        return (result,)
    if result.format == "coo":
        return (result.indices(), result.values())
    if result.format == "csr":
        return (result.crow_indices(), result.col_indices(), result.values())
    return (result.ccol_indices(), result.row_indices(), result.values())


def run(name):
    """The parts of one case's result, computed in this process."""
    return parts(CASES[name][0](operands()))


def run_all():
    return {name: run(name) for name in NAMES}


def assert_same(name, got, expected):
    """``got`` equals ``expected`` exactly: dtypes, shapes and every bit of every value."""
    got = tuple(np.asarray(g) for g in got)
    assert len(got) == len(expected), name
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (name, g.dtype, g.shape, e.dtype, e.shape)
        assert np.array_equal(g, e), f"{name}: differs from the serial result"


def assert_oracle(name):
    """The case's result, made dense, equals the dense NumPy computation."""
    result = CASES[name][0](operands())
    dense = result if isinstance(result, np.ndarray) else result.todense()
    np.testing.assert_allclose(dense, CASES[name][1](operands()), rtol=1e-12, atol=1e-9, err_msg=name)


def assert_all(got_by_name, expected_by_name):
    for name, got in got_by_name:
        assert_same(name, got, expected_by_name[name])
'''

# Opens every script: runs all cases in this process (parallel kernels) and
# checks the threading layer in use.
_PARENT = """
import numba
import numpy as np
import gpusparse as gs
import gs_guarantee_cases as cases
from gpusparse._kernels.cpu import _threading

expected = cases.run_all()
for name in cases.NAMES:
    cases.assert_oracle(name)
layer = numba.threading_layer()
print("threading layer:", _threading.describe())
assert layer == {layer!r}, _threading.describe()
"""


def _tbb_installed() -> bool:
    try:
        importlib.metadata.distribution("tbb")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


#: (prelude run before anything else, environment, the layer expected)
LAYERS = {
    "gpusparse-choice": ("", {}, "tbb" if _tbb_installed() else "workqueue"),
    "user-workqueue": ("", {"NUMBA_THREADING_LAYER": "workqueue"}, "workqueue"),
    # Numba's TBB layer made unimportable: the fallback.
    "without-tbb": ("import sys; sys.modules['numba.np.ufunc.tbbpool'] = None\n", {}, "workqueue"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("guarantees")
    (path / "gs_guarantee_cases.py").write_text(_CASES_MODULE)
    return path


def _text(out) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def _run(workdir, script, *, layer="gpusparse-choice", timeout=300, env=None, parent=True) -> str:
    """Run ``_PARENT`` (unless ``parent`` is false) and ``script`` in a fresh interpreter.

    Fails the test on a signal, a non-zero exit or a hang.
    """
    prelude, layer_env, expected_layer = LAYERS[layer]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("NUMBA_THREADING_LAYER") and k != "PYTHONPATH"}
    environ.update(PYTHONPATH=os.pathsep.join([str(workdir), str(ROOT)]),
                   NUMBA_NUM_THREADS="4",  # several threads even on a small machine
                   GPUSPARSE_DEVICE="cpu", **layer_env, **(env or {}))
    code = prelude + (_PARENT.format(layer=expected_layer) if parent else "") + textwrap.dedent(script)
    try:
        result = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=environ,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"no answer after {timeout} s (a hang)\n--- stdout\n{_text(exc.stdout)}"
                    f"\n--- stderr\n{_text(exc.stderr)}")
    if result.returncode != 0:
        how = (f"killed by signal {-result.returncode}" if result.returncode < 0
               else f"exit status {result.returncode}")
        pytest.fail(f"{how}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result.stdout


layers = pytest.mark.parametrize("layer", list(LAYERS))
needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="this platform has no fork start method")


# ---------------------------------------------------------------------------
# fork
# ---------------------------------------------------------------------------

@needs_fork
@layers
def test_forked_child_runs_the_kernels_after_the_parent_did(workdir, layer):
    out = _run(workdir, """
        import multiprocessing

        def child():
            for name in cases.NAMES:
                cases.assert_same(name, cases.run(name), expected[name])
                cases.assert_oracle(name)
            print("child ok", flush=True)

        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join(240)
        assert process.exitcode == 0, f"forked child: exit code {process.exitcode}"
        # and the parent's kernels still work after the fork
        cases.assert_all(cases.run_all().items(), expected)
    """, layer=layer)
    assert "child ok" in out


@needs_fork
@layers
def test_fork_pool_map_returns_the_parents_results(workdir, layer):
    _run(workdir, """
        import multiprocessing

        tasks = cases.NAMES * 2
        with multiprocessing.get_context("fork").Pool(2) as pool:
            results = pool.map_async(cases.run, tasks).get(timeout=240)  # a hang raises TimeoutError
        cases.assert_all(zip(tasks, results), expected)
        print("pool ok")
    """, layer=layer)


def test_spawn_pool_returns_the_parents_results(workdir):
    _run(workdir, """
        import multiprocessing

        tasks = ["coalesce", "sum_axis0", "matmul", "add"]
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            results = pool.map_async(cases.run, tasks).get(timeout=240)
        cases.assert_all(zip(tasks, results), expected)
    """)


@needs_fork
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_dataloader_fork_workers_run_the_kernels(workdir):
    out = _run(workdir, """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Cases(Dataset):
            def __len__(self):
                return 2 * len(cases.NAMES)

            def __getitem__(self, i):
                return cases.run(cases.NAMES[i % len(cases.NAMES)])

        loader = DataLoader(Cases(), batch_size=None, num_workers=2,
                            multiprocessing_context="fork", timeout=240)
        seen = 0
        for i, item in enumerate(loader):
            name = cases.NAMES[i % len(cases.NAMES)]
            cases.assert_same(name, [t.numpy() for t in item], expected[name])
            seen += 1
        assert seen == 2 * len(cases.NAMES), seen
        print("dataloader ok", seen)
    """)
    assert "dataloader ok" in out


# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------

@layers
def test_eight_threads_on_shared_operands_give_the_serial_results(workdir, layer):
    out = _run(workdir, """
        import concurrent.futures
        import random
        import threading

        tasks = cases.NAMES * 6
        random.Random(0).shuffle(tasks)
        start = threading.Barrier(8)

        def task(i):
            if i < 8:
                start.wait(timeout=60)  # the first eight start together
            return cases.run(tasks[i])

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(task, range(len(tasks))))
        cases.assert_all(zip(tasks, results), expected)
        print("threads ok", len(tasks))
    """, layer=layer)
    assert "threads ok" in out


# ---------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------

#: 10,000 operations (one in 20 on a medium array); resident memory is read
#: after the first 500 and at the end.
_MEMORY_LOOP = """
import gc
import os
import time

import numpy as np
import gpusparse as gs
from gpusparse._kernels.cpu import _pool

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

rng = np.random.default_rng(1)

def inputs(shape, nnz, k=3):
    return [(np.stack([rng.integers(0, s, nnz) for s in shape]), rng.standard_normal(nnz))
            for _ in range(k)]

SMALL = ((60, 50), inputs((60, 50), 300))
MEDIUM = ((2000, 1500), inputs((2000, 1500), 80_000))  # parallel kernels, pooled outputs

def op(i):
    medium = i % 20 == 0
    shape, sets = MEDIUM if medium else SMALL
    coords, data = sets[i % len(sets)]
    other_coords, other_data = sets[(i + 1) % len(sets)]
    x = gs.COO(coords, data, shape=shape, device="cpu")
    y = gs.COO(other_coords, other_data, shape=shape, device="cpu")
    kind = (i // 20) % 10 if medium else i % 10
    if kind == 0:
        return x.coalesce()
    if kind == 1:
        return x.coalesce() + y.coalesce()
    if kind == 2:
        return x.coalesce() * y.coalesce()
    if kind == 3:
        return (x.sum(axis=0), x.sum(axis=1), x.sum())
    if kind == 4:
        return x.coalesce()[np.arange(0, shape[0], 3)]
    if kind == 5:
        return x.tocsr()
    if kind == 6:
        return x.tocsr() @ np.ones((shape[1], 4))
    if kind == 7:
        return x.todense()
    if kind == 8:
        return x.coalesce().tocsc()
    if not medium:
        return x.tocsr() @ y.tocsr().T
    return x.coalesce().T.tocsr()

started = time.perf_counter()
for i in range(WARMUP):
    op(i)
gc.collect()
before = rss()
for i in range(WARMUP, TOTAL):
    op(i)
gc.collect()
after = rss()
MiB = 1 << 20
print(f"RSS after {WARMUP} operations: {before / MiB:.1f} MiB; after {TOTAL}: {after / MiB:.1f} MiB; "
      f"growth {(after - before) / MiB:+.1f} MiB; free pool buffers {_pool.free_bytes() / MiB:.1f} MiB; "
      f"{time.perf_counter() - started:.1f} s")
assert after - before < BOUND, "resident memory grew"
"""

#: Allowed growth of resident memory between operation 500 and 10,000. Every
#: operation allocates afresh and the loop keeps nothing, so the live set is
#: flat; what may still move is allocator fragmentation and the host buffer
#: pool (whose free buffers are bounded and whose size classes are all used
#: within the warm-up). A leak of one small result per small operation
#: (300 entries: 7 KiB, 9,025 times) or of one medium result per medium
#: operation (80,000 entries: 1.8 MiB, 475 times) exceeds it.
_MEMORY_BOUND = 32 << 20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc/self/statm (Linux)")
def test_resident_memory_stays_flat_over_10000_operations(workdir):
    script = _MEMORY_LOOP.replace("WARMUP", "500").replace("TOTAL", "10_000").replace("BOUND", str(_MEMORY_BOUND))
    out = _run(workdir, script, timeout=600, parent=False)
    print(out)  # the figures, shown with -s or -rP
