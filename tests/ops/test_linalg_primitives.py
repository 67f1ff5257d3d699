"""The product primitives (spmv, spmm, spgemm, sddmm, spmm_reduce) of each device's kernels against dense NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import gpusparse as gs
from _helpers import put
from _products import NUMERIC, _abs64, _values, assert_product, matmul_oracle
from gpusparse._device import kernels_for, to_host

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")



# --------------------------------------------------------------------------
# The primitives
# --------------------------------------------------------------------------

def _random_csr(rng, m, n, density, dtype, index_dtype=np.int32, duplicates=False):
    mask = rng.random((m, n)) < density
    rows, cols = np.nonzero(mask)
    if duplicates and rows.size:
        extra = rng.integers(0, rows.size, size=rows.size // 3 + 1)
        rows, cols = np.concatenate([rows, rows[extra]]), np.concatenate([cols, cols[extra]])
        order = np.lexsort((rng.random(rows.size), rows))  # rows grouped, columns shuffled
        rows, cols = rows[order], cols[order]
    data = _values(rng, rows.size, dtype)
    indptr = np.zeros(m + 1, dtype=index_dtype)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    dense = np.zeros((m, n), dtype=dtype)
    with np.errstate(all="ignore"):
        np.add.at(dense, (rows, cols), data)
    return indptr, cols.astype(index_dtype), data, dense


def _op(dense, trans):
    return {"N": dense, "T": dense.T, "H": dense.conj().T}[trans]


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
@pytest.mark.parametrize("trans", ["N", "T", "H"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_spmv_primitive(device, dtype, trans, index_dtype, rng):
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 37, 23, 0.2, dtype, index_dtype, duplicates=True)
    op = _op(dense, trans)
    x = _values(rng, op.shape[1], dtype)
    y0 = _values(rng, op.shape[0], dtype)
    for alpha, beta in ((1, 0), (2, 0), (3, 2)):
        y = put(y0.copy(), device)
        if beta == 0:
            y[...] = np.nan if dtype.kind in "fc" else 0  # not read when beta == 0
        k.spmv(put(indptr, device), put(indices, device), put(data, device), (37, 23),
               put(x, device), y, alpha, beta, trans)
        with np.errstate(all="ignore"):
            expected = (dtype.type(alpha) * (op @ x) + dtype.type(beta) * y0).astype(dtype)
            bound = abs(alpha) * (_abs64(op) @ _abs64(x)) + abs(beta) * _abs64(y0)
        assert_product(y, expected, bound)


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
@pytest.mark.parametrize("trans", ["N", "T", "H"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [1, 3, 17])
def test_spmm_primitive(device, dtype, trans, order, n, rng):
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 29, 31, 0.15, dtype, duplicates=True)
    op = _op(dense, trans)
    b = np.asarray(_values(rng, op.shape[1], dtype, (n,)), order=order)
    c0 = np.asarray(_values(rng, op.shape[0], dtype, (n,)), order=order)
    for alpha, beta in ((1, 0), (2, 3)):
        out = put(c0.copy(order=order), device)
        k.spmm(put(indptr, device), put(indices, device), put(data, device), (29, 31),
               put(b, device) if order == "C" else put(b, device), out, alpha, beta, trans)
        with np.errstate(all="ignore"):
            expected = (dtype.type(alpha) * (op @ b) + dtype.type(beta) * c0).astype(dtype)
            bound = abs(alpha) * (_abs64(op) @ _abs64(b)) + abs(beta) * _abs64(c0)
        assert_product(out, expected, bound)


@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.complex64), np.dtype(np.int32)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("n", [8, 16, 32])
def test_spmm_primitive_random_rows_in_column_tiles(device, dtype, n, rng):
    # Random columns and 8, 16 or 32 dense columns: the CPU takes the 8-column tiles.
    from gpusparse._kernels.cpu._linalg import _TILED_N, _streaming
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 200, 500, 0.02, dtype)
    assert n in _TILED_N and not _streaming(indptr, indices)
    b = _values(rng, 500, dtype, (n,))
    c0 = _values(rng, 200, dtype, (n,))
    for alpha, beta in ((1, 0), (2, 3)):
        out = put(c0.copy(), device)
        k.spmm(put(indptr, device), put(indices, device), put(data, device), (200, 500), put(b, device), out,
               alpha, beta)
        with np.errstate(all="ignore"):
            expected = (dtype.type(alpha) * (dense @ b) + dtype.type(beta) * c0).astype(dtype)
            bound = abs(alpha) * (_abs64(dense) @ _abs64(b)) + abs(beta) * _abs64(c0)
        assert_product(out, expected, bound)


def test_spmm_primitive_column_major_views(device, rng):
    """b and out given as transposed (F-ordered) views are read and written in place."""
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 12, 9, 0.3, np.float64)
    d = rng.standard_normal((5, 12))
    out = put(np.zeros((5, 9)), device)
    k.spmm(put(indptr, device), put(indices, device), put(data, device), (12, 9),
           put(d, device).T, out.T, 1, 0, "T")  # out.T = dense.T @ d.T
    assert_product(out, d @ dense, _abs64(d) @ _abs64(dense))


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
def test_spgemm_primitive(device, dtype, rng):
    k = kernels_for(device)
    ia, xa, va, da = _random_csr(rng, 20, 15, 0.2, dtype, np.int32, duplicates=True)
    ib, xb, vb, db = _random_csr(rng, 15, 18, 0.2, dtype, np.int64)
    ip, ix, dd = k.spgemm(put(ia, device), put(xa, device), put(va, device),
                          put(ib, device), put(xb, device), put(vb, device), (20, 15, 18))
    ip, ix, dd = to_host(ip), to_host(ix), to_host(dd)
    assert ip.dtype == ix.dtype and ix.dtype in (np.int32, np.int64)
    rows = np.repeat(np.arange(20), np.diff(ip))
    assert (np.diff(ix.astype(np.int64))[rows[1:] == rows[:-1]] > 0).all(), "not canonical"
    got = np.zeros((20, 18), dtype=dtype)
    got[rows, ix] = dd
    expected, bound = matmul_oracle(da, db)
    assert_product(got, expected, bound)
    # stored: exactly the positions some product term reaches (structural zeros kept)
    reach = (_pattern(ia, xa, (20, 15)).astype(int) @ _pattern(ib, xb, (15, 18)).astype(int)) > 0
    np.testing.assert_array_equal(_pattern(ip, ix, (20, 18)), reach)


@pytest.mark.parametrize("n_cols", [400, 70000])
def test_spgemm_primitive_long_rows(device, n_cols, rng):
    """Output rows far longer than 32 entries (the CPU twin's radix-sorted rows), odd and even pass counts."""
    k = kernels_for(device)
    ia, xa, va, da = _random_csr(rng, 6, 50, 0.5, np.float64)
    cols = rng.choice(n_cols, size=300, replace=False)
    b_dense = np.zeros((50, n_cols))
    b_dense[:, cols] = rng.standard_normal((50, 300)) * (rng.random((50, 300)) < 0.5)
    rows, cc = np.nonzero(b_dense)
    ib = np.zeros(51, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=50), out=ib[1:])
    ip, ix, dd = k.spgemm(put(ia, device), put(xa, device), put(va, device), put(ib, device),
                          put(cc.astype(np.int64), device), put(b_dense[rows, cc], device), (6, 50, n_cols))
    ip, ix, dd = to_host(ip), to_host(ix), to_host(dd)
    r = np.repeat(np.arange(6), np.diff(ip))
    assert (np.diff(ix.astype(np.int64))[r[1:] == r[:-1]] > 0).all(), "not canonical"
    got = np.zeros((6, n_cols))
    got[r, ix] = dd
    expected, bound = matmul_oracle(da, b_dense)
    assert_product(got, expected, bound)


def _pattern(indptr, indices, shape):
    out = np.zeros(shape, dtype=bool)
    out[np.repeat(np.arange(shape[0]), np.diff(indptr)), indices] = True
    return out


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.name)
def test_sddmm_primitive(device, dtype, rng):
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 14, 11, 0.3, dtype)
    a = _values(rng, 14, dtype, (6,))
    bt = _values(rng, 11, dtype, (6,))
    vals = to_host(k.sddmm(put(indptr, device), put(indices, device), put(a, device), put(bt, device), 3))
    rows = np.repeat(np.arange(14), np.diff(indptr))
    full, bound = matmul_oracle(a, bt.T)
    with np.errstate(all="ignore"):
        expected = (full * dtype.type(3)).astype(dtype)[rows, indices]
    assert_product(vals, expected, 3 * bound[rows, indices])


def _reduce_oracle(dense, mask, b, op):
    m, n = dense.shape[0], b.shape[1]
    out = np.zeros((m, n), dtype=dense.dtype)
    for i in range(m):
        cols = np.nonzero(mask[i])[0]
        if cols.size == 0:
            continue
        terms = dense[i, cols][:, None] * b[cols]
        out[i] = {"sum": terms.sum(0), "mean": terms.mean(0), "max": terms.max(0), "min": terms.min(0)}[op]
    return out


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int32, np.int64, np.uint8, np.float32, np.float64)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_spmm_reduce_primitive(device, dtype, op, rng):
    if op == "mean" and dtype.kind != "f":
        pytest.skip("mean needs an inexact dtype (the op casts integers to float64)")
    k = kernels_for(device)
    indptr, indices, data, dense = _random_csr(rng, 16, 12, 0.3, dtype)
    b = _values(rng, 12, dtype, (5,))
    out = k.spmm_reduce(put(indptr, device), put(indices, device), put(data, device), (16, 12),
                        put(b, device), op)
    with np.errstate(all="ignore"):
        expected = _reduce_oracle(dense, _pattern(indptr, indices, (16, 12)), b, op)
    bound = _abs64(dense) @ _abs64(b)
    assert_product(out, expected, bound)


@pytest.mark.gpu
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 128])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_spmm_reduce_chunks_of_long_rows(device, chunk, op, rng, monkeypatch):
    """The CUDA kernels cut rows into chunks: rows of 0, 1, exactly ``chunk`` and many chunks, skewed."""
    if not device.is_cuda:
        pytest.skip("the CPU kernels split rows by threads, not chunks")
    from gpusparse._kernels.cuda import _linalg as cuda_linalg
    monkeypatch.setattr(cuda_linalg, "SPMM_REDUCE_CHUNK", chunk)
    k = kernels_for(device)
    lengths = np.array([0, 1, chunk, chunk + 1, 2 * chunk, 0, 5 * chunk + 3, 300, 2, 0])  # a power-law-like mix
    m, k_dim, n = lengths.size, 40, 3
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, k_dim, size=int(indptr[-1])).astype(np.int64)
    dtype = np.dtype(np.float64) if op == "mean" else np.dtype(np.int64)
    data = _values(rng, indices.size, dtype)
    b = _values(rng, k_dim, dtype, (n,))
    out = to_host(k.spmm_reduce(put(indptr, device), put(indices, device), put(data, device), (m, k_dim),
                                put(b, device), op))
    expected = np.zeros((m, n), dtype=dtype)
    for r in range(m):
        terms = data[indptr[r]:indptr[r + 1], None] * b[indices[indptr[r]:indptr[r + 1]]]
        if terms.size:
            expected[r] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[op](terms, axis=0)
    if dtype.kind == "f":
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    else:  # integer sums wrap identically in any order
        np.testing.assert_array_equal(out, expected)


def test_cpu_primitives_split_across_threads(monkeypatch, rng):
    """The multi-range (threaded) path of every CPU primitive, forced on small inputs."""
    import numba
    from gpusparse._kernels.cpu import _common as cpu_common
    from gpusparse._kernels.cpu import _linalg as cpu_linalg
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba has a single thread")
    monkeypatch.setattr(cpu_common, "PARALLEL_MIN", 1)  # row_bounds and even_bounds read it
    previous = numba.get_num_threads()
    numba.set_num_threads(min(3, numba.config.NUMBA_NUM_THREADS))
    try:
        assert cpu_linalg.row_bounds(np.arange(0, 40, 2)).size > 2
        cpu = gs.Device("cpu")
        for dtype in (np.dtype(np.float64), np.dtype(np.int16), np.dtype(np.complex64)):
            for trans in ("N", "T", "H"):
                test_spmv_primitive(cpu, dtype, trans, np.int32, rng)
                for order in ("C", "F"):
                    test_spmm_primitive(cpu, dtype, trans, order, 5, rng)
            test_spgemm_primitive(cpu, dtype, rng)
            test_sddmm_primitive(cpu, dtype, rng)
        for op in ("sum", "mean", "max", "min"):
            test_spmm_reduce_primitive(cpu, np.dtype(np.float32), op, rng)
        indptr, indices, data, dense = _random_csr(rng, 40, 30, 0.6, np.float64)  # long rows
        x = rng.standard_normal(30)
        y = np.empty(40)
        cpu_linalg.spmv(indptr, indices, data, (40, 30), x, y)
        assert_product(y, dense @ x, np.abs(dense) @ np.abs(x))
    finally:
        numba.set_num_threads(previous)
