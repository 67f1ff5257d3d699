"""Beyond 2**31 stored entries: 64-bit offsets and grid arithmetic in every CUDA kernel.

Four layers, from cheapest to the one only a large GPU can run:

1. A source audit of ``cuda_kernels/``: no 32-bit global-index idiom (a
   product of two built-ins such as ``blockIdx.x * blockDim.x``, or of a
   built-in and a constant, not cast to 64 bits first), no ``int`` loop
   counter over a 64-bit size, no 32-bit copy of the global thread index,
   and no single-shot ``i = gs_global_thread(); if (i >= n) return;`` kernel
   (every kernel loops, so a clamped grid still covers its items).
2. Launch shapes for n = 2**31 + 5 and 2**33 items from the launchers'
   sizing helpers: grids within ``gridDim.x <= 2**31 - 1``, and the 64-bit
   loop indices of the kernels never overflow.
3. The kernels under the emulated device (or a GPU) with the grid limit
   shrunk to two blocks, so every launcher's kernels run their grid-stride
   and tile loops; every launch is recorded and checked against the limit.
   Then index and offset values past 2**32 into small buffers: a value
   truncated to 32 bits would land on a valid-looking row instead of being
   clipped or dropped.
4. Coalesce-style sort + segmented sum and SpMV at 2**31 + 2**20 float32
   entries on a real GPU with enough free memory (skipped elsewhere).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "cuda_kernels"
SOURCES = sorted([*KERNELS.glob("*.cu"), KERNELS / "common.cuh"])

# --------------------------------------------------------------------------
# 1. source audit
# --------------------------------------------------------------------------

_BUILTIN = r"(?:blockIdx|blockDim|gridDim|threadIdx)\.[xyz]"
_CAST_BEFORE = re.compile(
    r"(?:static_cast<\s*(?:long long|unsigned long long|size_t|int64_t|uint64_t)\s*>\(\s*"
    r"|\(\s*(?:long long|unsigned long long|size_t|int64_t|uint64_t)\s*\)\s*)$")
# A built-in multiplied by a built-in or an integer literal / macro constant: 32-bit unsigned.
_PRODUCT = re.compile(rf"\b{_BUILTIN}\s*\*\s*(?:{_BUILTIN}|[A-Z_][A-Z0-9_]*\b|\d+\b)")
_PRODUCT_REVERSED = re.compile(rf"(?:\b[A-Z_][A-Z0-9_]*|\b\d+)\s*\*\s*{_BUILTIN}")
_SIZES = r"(?:n|nnz|m|k|width|n_rows|n_tiles|n_segments|n_pos|total|n_out|n_terms|capacity|n_items|nnz_a|nnz_b|n_keys)"
_INT_LOOP = re.compile(rf"for\s*\(\s*(?:int|unsigned|unsigned int)\s+(\w+)\s*=[^;]*;\s*\1\s*<=?\s*{_SIZES}\s*;")
_NARROW_INDEX = re.compile(r"\b(?:int|unsigned|unsigned int)\s+\w+\s*=\s*(?:gs_global_thread|gs_grid_stride)\s*\(")
# One item per thread and no loop: allowed only from a 64-bit base offset (``p_base + gs_global_thread()``),
# which the launcher advances over several launches.
_SINGLE_SHOT = re.compile(r"=\s*gs_global_thread\(\)[^;]*;\s*\n\s*if\s*\([^)]*\)\s*return\s*;")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def audit(text: str) -> "list[str]":
    """The 32-bit index idioms in CUDA source ``text`` (comments ignored), as ``line: snippet``."""
    code = _strip_comments(text)
    found = []

    def report(match, what):
        line = code.count("\n", 0, match.start()) + 1
        found.append(f"{line}: {what}: {match.group(0).strip()}")

    for match in _PRODUCT.finditer(code):
        if not _CAST_BEFORE.search(code[max(0, match.start() - 60):match.start()]):
            report(match, "32-bit product of a built-in")
    for match in _PRODUCT_REVERSED.finditer(code):
        report(match, "32-bit product of a built-in")
    for match in _INT_LOOP.finditer(code):
        report(match, "32-bit loop counter over a 64-bit size")
    for match in _NARROW_INDEX.finditer(code):
        report(match, "global index narrowed to 32 bits")
    for match in _SINGLE_SHOT.finditer(code):
        report(match, "one item per thread without a grid-stride loop")
    return found


BAD_SNIPPETS = [
    "const long long i = blockIdx.x * blockDim.x + threadIdx.x;",
    "long long i = threadIdx.x + blockIdx.x * blockDim.x;",
    "const long long stride = gridDim.x * blockDim.x;",
    "const long long base = blockIdx.x * GS_SORT_TILE;",
    "const long long base = 2048 * blockIdx.x;",
    "for (int i = threadIdx.x; i < nnz; i += 256) {}",
    "for (unsigned p = 0; p <= n_rows; ++p) {}",
    "const int i = gs_global_thread();",
    "const long long i = gs_global_thread();\n    if (i >= n) return;",
]
GOOD_SNIPPETS = [
    "const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;",
    "const long long stride = (long long)gridDim.x * blockDim.x;",
    "for (long long i = gs_global_thread(); i < n; i += gs_grid_stride()) {}",
    "for (int j = 0; j < GS_SORT_ITEMS; ++j) {}",
    "for (int x = threadIdx.x; x < tile_n; x += GS_SORT_THREADS) {}",
    "// blockIdx.x * blockDim.x in a comment",
    "const int warp = threadIdx.x / GS_WARP;",
    "const long long p = p_base + gs_global_thread() / GS_WARP;\n    if (p >= nnz) return;",
    "const long long tile_id = tile_base + blockIdx.x;",
]


@pytest.mark.parametrize("snippet", BAD_SNIPPETS)
def test_audit_flags_the_32_bit_idioms(snippet):
    assert audit(snippet), snippet


@pytest.mark.parametrize("snippet", GOOD_SNIPPETS)
def test_audit_passes_64_bit_code(snippet):
    assert audit(snippet) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_kernels_have_no_32_bit_index_idiom(path):
    assert audit(path.read_text()) == [], f"{path.name}: 32-bit index arithmetic"


def test_every_kernel_source_is_audited():
    assert {p.name for p in SOURCES} >= {"common.cuh", "sort.cu", "segment.cu", "spmm.cu", "semiring.cu",
                                         "compress.cu", "merge.cu", "scatter.cu", "select.cu", "sddmm.cu",
                                         "linearize.cu"}


# --------------------------------------------------------------------------
# 2. launch shapes (no launch: the sizing helpers)
# --------------------------------------------------------------------------

def _load_grid():
    # By path: importing the package gpusparse._kernels.cuda needs CuPy or the emulated device.
    import importlib.util
    import sys
    name = "gpusparse._kernels.cuda._grid"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "gpusparse" / "_kernels" / "cuda" / "_grid.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_grid = _load_grid()

BIG = [2**31 + 5, 2**33, 2**40, 2**45]
INT64_MAX = 2**63 - 1


@pytest.mark.parametrize("n", BIG)
@pytest.mark.parametrize("per_block", [1, 8, 32, 256, 2048, 4096, 256 * 32])
def test_grids_within_the_limit_cover_every_item(n, per_block):
    grid = _grid.blocks(n, per_block)
    assert 1 <= grid <= 2**31 - 1
    tiles = _grid.tiles(n, per_block)
    assert tiles * per_block >= n > (tiles - 1) * per_block
    if grid < tiles:  # clamped: the kernels loop, tile t in block t % grid
        assert grid == _grid.MAX_GRID_X
    # The largest 64-bit index a grid-stride loop forms (last item + one stride) does not overflow.
    assert (n - 1) + grid * 256 * 32 <= INT64_MAX
    assert tiles + grid <= INT64_MAX


@pytest.mark.parametrize("n", [2**31 + 5, 2**33])
def test_launcher_sizing_helpers(n):
    """What the launchers compute for their grids, at n past int32."""
    for grid in (_grid.blocks(n), _grid.blocks(32 * n), _grid.blocks(n, 4096), _grid.blocks(n, 2048),
                 _grid.blocks(_grid.tiles(n, 2048), 1), _grid.blocks(_grid.tiles(n, 2048), 8)):
        assert 1 <= grid <= 2**31 - 1
    assert _grid.blocks(2**40, 1, _grid.MAX_GRID_Y) == _grid.MAX_GRID_Y
    assert _grid.blocks(2**31 * 256 * 4, 256) == 2**31 - 1  # 2**41 items: clamped, the threads loop
    for per_block in (1, 8):  # the base-offset kernels: launches that together cover every item once
        parts = _grid.launches(n, per_block)
        assert all(1 <= count <= 2**31 - 1 for _, count in parts)
        assert [first for first, _ in parts] == list(np.cumsum([0] + [c for _, c in parts])[:-1])
        assert sum(c for _, c in parts) * per_block >= n > (sum(c for _, c in parts) - 1) * per_block
    if _backend_loads():  # the launchers' own helpers (CuPy or the emulated device)
        import gpusparse._kernels.cuda as k
        from gpusparse._kernels.cuda import _linalg, _semiring
        for grid in (k._blocks(n), k._blocks(n, 4096), _linalg._blocks(n), _linalg._blocks(32 * n),
                     _semiring._blocks(n)):
            assert 1 <= grid <= 2**31 - 1
        for width in (1, 3, 32, 1000):
            (grid,), lpr_log2 = k._row_launch(n, width)
            assert 1 <= grid <= 2**31 - 1 and 0 <= lpr_log2 <= 5


def _backend_loads() -> bool:
    try:
        import gpusparse._kernels.cuda  # noqa: F401  (CuPy or the emulated device)
    except Exception:
        return False
    return True


# --------------------------------------------------------------------------
# 3. kernels run with clamped grids, and index values past 2**32
# --------------------------------------------------------------------------

def _cuda_or_skip():
    if not _backend_loads():
        pytest.skip("no CUDA backend (CuPy or GPUSPARSE_CUDA_EMULATION=1)")
    import gpusparse._kernels.cuda as k
    return k


@pytest.fixture
def k():
    return _cuda_or_skip()


@pytest.fixture
def recorded(monkeypatch):
    """Grid limit 2 blocks; every launch's grid recorded (the kernels still run)."""
    import gpusparse._kernels.cuda as kmod
    from gpusparse._kernels.cuda import _grid as grid_module, _linalg, _merge, _primitives, _select, _semiring
    monkeypatch.setattr(grid_module, "MAX_GRID_X", 2)
    grids = []
    for module in (kmod, _primitives, _linalg, _merge, _select, _semiring):
        original = module.get_function

        def wrapped(*a, _original=original, **kw):
            kernel = _original(*a, **kw)

            def launch(grid, block, args, **opts):
                grids.append((a[1], tuple(grid) if isinstance(grid, tuple) else (grid,)))
                return kernel(grid, block, args, **opts)
            return launch
        monkeypatch.setattr(module, "get_function", wrapped)
    return grids


def _host(a):
    from gpusparse._kernels.cuda._backend import cupy
    return cupy.asnumpy(a) if hasattr(cupy, "asnumpy") else np.asarray(a.get())


def _dev(a):
    from gpusparse._kernels.cuda._backend import cupy
    return cupy.asarray(np.asarray(a))


@pytest.mark.gpu
def test_clamped_grids_cover_every_item(k, recorded):
    rng = np.random.default_rng(7)
    n = 20_000  # 5 sort tiles, 10 segment tiles, 79 blocks of 256: far more than 2 blocks
    keys = rng.integers(0, 3000, n).astype(np.int64)
    sk, perm = k.sort_pairs(_dev(keys), None, 12)
    order = np.argsort(keys, kind="stable")
    assert np.array_equal(_host(sk), keys[order]) and np.array_equal(_host(perm), order)
    ids = k.segment_ids(sk)
    uniq, first, counts = np.unique(keys[order], return_index=True, return_counts=True)
    assert np.array_equal(_host(ids), np.repeat(np.arange(uniq.size), counts))
    starts = k.segment_starts(ids, uniq.size)
    assert np.array_equal(_host(starts), np.append(first, n))
    values = rng.standard_normal((n, 3))
    for op, ref in (("sum", np.add), ("max", np.maximum)):
        out = _host(k.segment_reduce(_dev(values), starts, op, perm))
        expect = ref.reduceat(values[order], first, axis=0)
        np.testing.assert_allclose(out, expect, rtol=1e-12)
    assert int(_host(k.sortedness(sk))) >= 1
    indptr = k.compress(sk, 3000, np.int64)
    assert np.array_equal(_host(indptr), np.searchsorted(keys[order], np.arange(3001)))
    assert np.array_equal(_host(k.expand(indptr, n)), keys[order])
    coords = np.stack([keys // 60, keys % 60])
    lin = k.linearize(_dev(coords), (50, 60))
    assert np.array_equal(_host(lin), keys)
    assert np.array_equal(_host(k.delinearize(lin, (50, 60))), coords)
    g = _host(k.gather(_dev(values), perm))
    assert np.array_equal(g, values[order])
    cols = _host(k.take_columns(_dev(values.T.copy()), perm))
    assert np.array_equal(cols, values[order].T)
    a = np.unique(rng.integers(0, 10**6, 9000))
    b = np.unique(rng.integers(0, 10**6, 9000))
    merged, ai, bi, count = k.merge_sorted(_dev(a), _dev(b), "union")
    union = np.union1d(a, b)
    assert int(_host(count)) == union.size and np.array_equal(_host(merged)[:union.size], union)
    found = _host(k.segment_search(_dev(keys[order]), _dev(np.zeros(300, np.int64)),
                                   _dev(np.full(300, n, np.int64)), _dev(np.arange(300) * 10)))
    assert np.array_equal(found, np.searchsorted(keys[order], np.arange(300) * 10))
    # Products: integer values take the hand-written kernels on every device.
    m_rows, n_cols = 700, 50
    dense = (rng.random((m_rows, n_cols)) < 0.1) * rng.integers(1, 5, (m_rows, n_cols))
    r, c = np.nonzero(dense)
    ip = np.searchsorted(r, np.arange(m_rows + 1)).astype(np.int64)
    data = dense[r, c].astype(np.int64)
    bmat = rng.integers(-3, 4, (n_cols, 40)).astype(np.int64)
    out = _dev(np.zeros((m_rows, 40), np.int64))
    k.spmm(_dev(ip), _dev(c.astype(np.int64)), _dev(data), (m_rows, n_cols), _dev(bmat), out)
    assert np.array_equal(_host(out), dense @ bmat)
    y = _dev(np.zeros(m_rows, np.int64))
    k.spmv(_dev(ip), _dev(c.astype(np.int64)), _dev(data), (m_rows, n_cols), _dev(bmat[:, 0].copy()), y)
    assert np.array_equal(_host(y), dense @ bmat[:, 0])
    red = k.spmm_reduce(_dev(ip), _dev(c.astype(np.int64)), _dev(data), (m_rows, n_cols), _dev(bmat), "sum")
    assert np.array_equal(_host(red), dense @ bmat)
    at = rng.integers(-2, 3, (m_rows, 8)).astype(np.int64)
    bt = rng.integers(-2, 3, (n_cols, 8)).astype(np.int64)
    sd = _host(k.sddmm(_dev(ip), _dev(c.astype(np.int64)), _dev(at), _dev(bt)))
    assert np.array_equal(sd, (at @ bt.T)[r, c])
    sr = k.spmm_semiring(_dev(ip), _dev(c.astype(np.int64)), _dev(data), (m_rows, n_cols), _dev(bmat),
                         "plus", "times")
    assert np.array_equal(_host(sr), dense @ bmat)
    # Every launch respected the (shrunk) grid limit, and the loops did the rest; gs_segment_reduce
    # alone launches a block per tile (no loop: it would spill), bounded by the device limit instead.
    assert recorded and all(grid[0] <= 2 for name, grid in recorded if name != "gs_segment_reduce"), recorded
    assert any(name == "gs_segment_reduce" for name, _ in recorded)


BEYOND = 2**32 + 3  # truncated to 32 bits: 3, a valid row of every buffer below


@pytest.mark.gpu
def test_index_values_past_2_32_clip_not_wrap(k):
    values = np.arange(40, dtype=np.float64).reshape(10, 4)
    index = np.array([BEYOND, 2, -BEYOND, 2**40], dtype=np.int64)
    # gather: past the end reads the last row, negative the first (a wrap would read row 3).
    assert np.array_equal(_host(k.gather(_dev(values), _dev(index))), values[[9, 2, 0, 9]])
    assert np.array_equal(_host(k.take_columns(_dev(values.T.copy()), _dev(index))), values[[9, 2, 0, 9]].T)
    # scatter: a key past the output is dropped (a wrap would write row 3).
    out = _dev(np.zeros((10, 4)))
    k.scatter_dense(_dev(np.array([BEYOND, 1], np.int64)), _dev(values[:2]), out)
    expect = np.zeros((10, 4))
    expect[1] = values[1]
    assert np.array_equal(_host(out), expect)
    # copy_segments: a destination run starting past the output is dropped; a source past the input clips.
    out = _dev(np.zeros((10, 4)))
    k.copy_segments(_dev(values), _dev(np.array([0, BEYOND], np.int64)), _dev(np.array([BEYOND, 5], np.int64)),
                    _dev(np.array([2, 1], np.int64)), out)
    expect = np.zeros((10, 4))
    expect[5] = values[9]
    assert np.array_equal(_host(out), expect)
    # segment_search: bounds past the keys clip to their end.
    keys = np.arange(10, dtype=np.int64)
    got = _host(k.segment_search(_dev(keys), _dev(np.array([BEYOND, 0], np.int64)),
                                 _dev(np.array([BEYOND + 5, BEYOND], np.int64)), _dev(np.array([0, 4], np.int64))))
    assert np.array_equal(got, [10, 4])
    # compress: rows past the last count in it; expand: pointers past nnz clip to it.
    indptr = _host(k.compress(_dev(np.array([0, 1, 1, BEYOND], np.int64)), 4, np.int64))
    assert np.array_equal(indptr, [0, 1, 3, 3, 4])
    rows = _host(k.expand(_dev(np.array([0, 2, BEYOND, BEYOND], np.int64)), 5))
    assert np.array_equal(rows, [0, 0, 1, 1, 1])
    # segment_reduce: starts past the positions clip to their end; perm entries past m clip to m - 1.
    starts = np.array([0, 2, BEYOND], np.int64)
    perm = np.array([BEYOND, 0, 1, 2, 3, 4, 5, 6, 7, 8], np.int64)
    out = _host(k.segment_reduce(_dev(values), _dev(starts), "sum", _dev(perm)))
    assert np.array_equal(out, np.stack([values[9] + values[0], values[1:9].sum(axis=0)]))
    # linearize / delinearize: keys past 2**32 (a (2**20, 2**20, 2**10) shape).
    shape = (2**20, 2**20, 2**10)
    coords = np.array([[5, 2**20 - 1], [7, 2**20 - 1], [9, 2**10 - 1]], dtype=np.int64)
    lin = _host(k.linearize(_dev(coords), shape))
    assert lin.tolist() == [5 * 2**30 + 7 * 2**10 + 9, 2**50 - 1]
    assert np.array_equal(_host(k.delinearize(_dev(lin), shape)), coords)
    # sort: keys past 2**32 sort on all their bits.
    sk, perm = k.sort_pairs(_dev(np.array([2**40 + 1, 3, 2**33, BEYOND], np.int64)), None, 41)
    assert _host(sk).tolist() == [3, BEYOND, 2**33, 2**40 + 1] and _host(perm).tolist() == [1, 3, 2, 0]
    # products: a column index past 2**32 reads the last column of b (clipped), not column 3.
    ip = np.array([0, 2], np.int64)
    idx = np.array([0, BEYOND], np.int64)
    b = np.arange(50, dtype=np.int64).reshape(10, 5)
    out = _dev(np.zeros((1, 5), np.int64))
    k.spmm(_dev(ip), _dev(idx), _dev(np.array([1, 1], np.int64)), (1, 10), _dev(b), out)
    assert np.array_equal(_host(out)[0], b[0] + b[9])
    sd = _host(k.sddmm(_dev(ip), _dev(idx), _dev(np.ones((1, 5), np.int64)), _dev(b)))
    assert sd.tolist() == [b[0].sum(), b[9].sum()]


# --------------------------------------------------------------------------
# 4. a real GPU at 2**31 + 2**20 entries
# --------------------------------------------------------------------------

N_LARGE = 2**31 + 2**20


def _real_gpu_with(need_bytes: int):
    from gpusparse._kernels import cuda_emulation
    if cuda_emulation.enabled():
        pytest.skip("needs a real GPU (the emulated device cannot run 2**31 threads)")
    cupy = pytest.importorskip("cupy")
    try:
        free, _ = cupy.cuda.runtime.memGetInfo()
    except Exception as exc:  # no driver, no device
        pytest.skip(f"no usable GPU: {exc}")
    if free < need_bytes:
        pytest.skip(f"needs {need_bytes / 2**30:.0f} GiB of free GPU memory, {free / 2**30:.0f} GiB free")
    cupy.get_default_memory_pool().free_all_blocks()
    import gpusparse._kernels.cuda as k
    return cupy, k


@pytest.mark.gpu
@pytest.mark.slow
def test_coalesce_past_2_31_entries_on_gpu():
    """Sort 2**31 + 2**20 keys (each twice), sum the duplicates: what coalesce runs."""
    n = N_LARGE
    cupy, k = _real_gpu_with(56 * n)  # keys, the sort's 4 buffers, ids, starts, values, sums
    half = n // 2
    keys = cupy.arange(n, dtype=np.int64)
    keys %= half
    keys *= 7
    sorted_keys, perm = k.sort_pairs(keys, None, int(7 * half).bit_length())
    del keys
    ids = k.segment_ids(sorted_keys)
    assert int(ids[-1]) == half - 1
    starts = k.segment_starts(ids, half)
    del ids
    values = cupy.ones((n, 1), dtype=np.float32)
    sums = k.segment_reduce(values, starts, "sum", perm)
    assert int(starts[-1]) == n and bool((sums == 2).all())
    assert bool((sorted_keys[1::2] == sorted_keys[0::2]).all())
    assert int(sorted_keys[-1]) == 7 * (half - 1)


@pytest.mark.gpu
@pytest.mark.slow
def test_spmv_past_2_31_entries_on_gpu():
    """A (2**20, 4096) CSR with 2049 entries a row: nnz = 2**31 + 2**20, int64 indices, float32."""
    n_rows, per_row, n_cols = 2**20, 2**11 + 1, 4096
    nnz = n_rows * per_row
    assert nnz == N_LARGE
    cupy, k = _real_gpu_with(14 * nnz)
    from gpusparse._kernels.cuda import _linalg
    indptr = cupy.arange(n_rows + 1, dtype=np.int64) * per_row
    indices = cupy.arange(nnz, dtype=np.int64)
    indices %= per_row
    data = cupy.ones(nnz, dtype=np.float32)
    x = (cupy.arange(n_cols) % 7).astype(np.float32)
    expect = float(sum(c % 7 for c in range(per_row)))
    y = cupy.zeros(n_rows, dtype=np.float32)
    k.spmv(indptr, indices, data, (n_rows, n_cols), x, y)  # cuSPARSE where its version takes it
    assert bool((y == expect).all())
    y2 = cupy.zeros((n_rows, 1), dtype=np.float32)
    _linalg._spmm_kernel(indptr, indices, data, (n_rows, n_cols), x.reshape(-1, 1), y2, 1, 0, "N")
    assert bool((y2 == expect).all())


# --------------------------------------------------------------------------
# the cuSPARSE gate past int32 (no device query)
# --------------------------------------------------------------------------

def _load_cusparse():
    import importlib.util
    import sys
    name = "gpusparse._kernels.cuda._cusparse"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "gpusparse" / "_kernels" / "cuda" / "_cusparse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("routine", ["spmv", "spmm"])
def test_cusparse_gate_past_int32(routine):
    cs = _load_cusparse()
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    big = cs.LARGE_NNZ
    assert cs.large_nnz_supported(routine, big - 1, i32, i32, cusparse_version=11000)  # below: never queried
    assert not cs.large_nnz_supported(routine, big, i32, i32, cusparse_version=99999)  # int32 cannot hold nnz
    assert not cs.large_nnz_supported(routine, big, i64, i64, cusparse_version=cs.LARGE_NNZ_MIN_VERSION - 1)
    assert cs.large_nnz_supported(routine, big, i64, i64, cusparse_version=cs.LARGE_NNZ_MIN_VERSION)
    assert cs.large_nnz_supported("spgemm", big, i64, i64, cusparse_version=0)  # its own gate: CUDA 13
    assert not cs.large_nnz_supported("spgemm", big, i32, i32, cusparse_version=99999)
