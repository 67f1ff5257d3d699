"""Products against a dense NumPy oracle: the primitives, matmul/@/dot/tensordot/outer/kron, torch and TF names.

Every product is checked on every device the ``device`` fixture yields,
for COO (uncoalesced, unsorted, hybrid), CSR and CSC operands, every value
dtype, N-d operands with broadcast batch axes, and 0-size dimensions.
Floating-point results are compared within a bound scaled by
``|a| @ |b|`` (the summation order differs from NumPy's BLAS); integer and
bool results exactly (both wrap modulo 2**bits).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import check_invariants, dense_oracle, put
from gpusparse._device import cuda_module, kernels_for, to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse._errors import GpuSparseEfficiencyWarning
from gpusparse.containers import COO, SparseArray
from gpusparse.ops import linalg
from strategies import elements

NUMERIC = tuple(d for d in VALUE_DTYPES if d.kind != "b")
INEXACT = tuple(d for d in VALUE_DTYPES if d.kind in "fc")
EXAMPLES = settings(deadline=None)  # max_examples from the profile (conftest.py)

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")


# --------------------------------------------------------------------------
# Oracles and comparisons
# --------------------------------------------------------------------------

def _tol(dtype) -> float:
    dtype = np.dtype(dtype)
    return 2e-5 if dtype in (np.float32, np.complex64) else 1e-12


def _abs64(x):
    x = np.asarray(x)
    return np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))


def assert_product(actual, expected, bound=None):
    """``actual`` (dense, sparse or device array) equals ``expected``: exactly, or within ``tol * (bound + 1)``."""
    if isinstance(actual, SparseArray):
        check_invariants(actual)
        actual = actual.todense()
    actual = to_host(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected)
        return
    bound = np.zeros(expected.shape) if bound is None else np.asarray(bound, dtype=np.float64)
    err = np.abs(actual.astype(np.complex128) - expected.astype(np.complex128))
    both_nan = np.isnan(actual) & np.isnan(expected)
    ok = (err <= _tol(expected.dtype) * (bound + 1.0)) | both_nan | (actual == expected)
    assert ok.all(), f"max error {err[~ok].max()} at {np.argwhere(~ok)[:3].tolist()}"


def matmul_oracle(a, b):
    """``(np.matmul(a, b), np.matmul(|a|, |b|))``, quietly (integer overflow wraps)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.matmul(a, b), np.matmul(_abs64(a), _abs64(b))


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

@st.composite
def sparse_parts(draw, shape, dtype, *, hybrid=True, max_nnz=12):
    """``(coords, data, shape)`` of a COO with ``shape``: duplicates, any order, maybe dense trailing dims."""
    ndim = len(shape)
    sd = draw(st.integers(max(0, ndim - 2), ndim)) if hybrid else ndim
    sparse_shape, dense_shape = shape[:sd], shape[sd:]
    size = math.prod(sparse_shape)
    if size == 0:
        keys = []
    elif sd == 0:
        keys = [0] * draw(st.integers(0, 1))
    else:
        keys = draw(st.lists(st.integers(0, size - 1), max_size=max_nnz))
        if keys and draw(st.booleans()):
            keys += draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3))
        if draw(st.booleans()):
            keys = sorted(keys)
    coords = (np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), sparse_shape), dtype=np.int64)
              .reshape(sd, len(keys)) if sd else np.zeros((0, len(keys)), dtype=np.int64))
    data = draw(hnp.arrays(dtype, (len(keys),) + dense_shape, elements=elements(dtype, nan=False)))
    return np.ascontiguousarray(coords), data, tuple(shape)


def build(parts, device, fmt="coo"):
    coords, data, shape = parts
    x = COO(coords, data, shape, device=device)
    if fmt != "coo" and x.sparse_dim == 2:
        x = x.asformat(fmt)
    return x


def dense_of(parts):
    coords, data, shape = parts
    return dense_oracle(coords, data, shape, 0)


@st.composite
def matmul_cases(draw, kinds=("sd", "ds", "ss"), max_batch=2):
    """Operand shapes that multiply (with broadcasting), dtypes, which operands are sparse, formats."""
    kind = draw(st.sampled_from(kinds))
    dt_a = draw(st.sampled_from(VALUE_DTYPES))
    dt_b = dt_a if draw(st.booleans()) else draw(st.sampled_from(VALUE_DTYPES))
    M, K, N = (draw(st.integers(0, 4)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=max_batch)))

    def operand_batch():
        dims = [1 if draw(st.booleans()) else d for d in batch]
        return tuple(dims[draw(st.integers(0, len(dims))):])

    a_shape = (K,) if draw(st.integers(0, 4)) == 0 else operand_batch() + (M, K)
    b_shape = (K,) if draw(st.integers(0, 4)) == 0 else operand_batch() + (K, N)
    a_sparse, b_sparse = kind[0] == "s", kind[1] == "s"
    a = (draw(sparse_parts(a_shape, dt_a)) if a_sparse
         else draw(hnp.arrays(dt_a, a_shape, elements=elements(dt_a, nan=False))))
    b = (draw(sparse_parts(b_shape, dt_b)) if b_sparse
         else draw(hnp.arrays(dt_b, b_shape, elements=elements(dt_b, nan=False))))
    fmt_a = draw(st.sampled_from(["coo", "csr", "csc"]))
    fmt_b = draw(st.sampled_from(["coo", "csr", "csc"]))
    return kind, a, b, fmt_a, fmt_b


def _operand(x, sparse, fmt, device):
    return build(x, device, fmt) if sparse else put(x, device)


def _dense(x, sparse):
    return dense_of(x) if sparse else x


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


def _values(rng, n, dtype, shape=()):
    dtype = np.dtype(dtype)
    size = (n,) + tuple(shape)
    if dtype.kind == "c":
        return (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(size).astype(dtype)
    if dtype.kind == "b":
        return rng.random(size) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)


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


# --------------------------------------------------------------------------
# matmul, @, np.matmul: every kind of operand
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=matmul_cases())
def test_matmul_matches_numpy(device, case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A, B = _operand(a, sa, fmt_a, device), _operand(b, sb, fmt_b, device)
    result = linalg.matmul(A, B)
    assert isinstance(result, SparseArray) == (sa and sb and np.ndim(expected) > 0)
    assert_product(result, expected, bound)
    assert_product(A @ B, expected, bound)


@EXAMPLES
@given(case=matmul_cases(kinds=("sd", "ds")))
def test_numpy_protocols_on_cpu(case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A, B = _operand(a, sa, fmt_a, gs.Device("cpu")), _operand(b, sb, fmt_b, gs.Device("cpu"))
    assert_product(np.matmul(A, B), expected, bound)
    assert_product(A @ B, expected, bound)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_dense_array_at_sparse_uses_rmatmul(device, fmt, rng):
    x = gs.random((6, 5), density=0.4, format=fmt, seed=1, device=device)
    d = rng.standard_normal((3, 6))
    expected = d @ to_host(x.todense())
    assert_product(put(d, device) @ x, expected, np.abs(d) @ np.abs(to_host(x.todense())))
    assert_product(d.tolist() @ x, expected, np.abs(d) @ np.abs(to_host(x.todense())))


def test_matmul_formats_of_sparse_results(device):
    x = gs.random((5, 5), density=0.4, seed=2, device=device)
    for fa, fb, expected in [("csr", "csr", "csr"), ("csc", "csc", "csc"), ("coo", "csr", "coo"),
                             ("csr", "coo", "csr"), ("csc", "csr", "csc")]:
        out = x.asformat(fa) @ x.asformat(fb)
        assert out.format == expected
        check_invariants(out)
    vec = gs.COO([[1, 3]], [1.0, 2.0], shape=(5,), device=device)
    assert (x @ vec).format == "coo" and (x @ vec).shape == (5,)
    assert (vec @ vec).shape == () and float(to_host(vec @ vec)) == 5.0


def test_batched_broadcasting_both_ways(device, rng):
    """Batch axes only the left, only the right, and both operands have, in every order."""
    for a_shape, b_shape in [((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 1, 4, 2)), ((3, 2, 4), (4, 6)),
                             ((4,), (2, 3, 4, 2)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (1, 3, 4, 2))]:
        a = rng.standard_normal(a_shape) * (rng.random(a_shape) < 0.4)
        b = rng.standard_normal(b_shape) * (rng.random(b_shape) < 0.4)
        expected, bound = matmul_oracle(a, b)
        A = gs.fromdense(a, device=device)
        B = gs.fromdense(b, device=device)
        assert_product(A @ put(b, device), expected, bound)
        assert_product(put(a, device) @ B, expected, bound)
        assert_product(A @ B, expected, bound)


def test_hybrid_operands(device, rng):
    """Dense trailing dimensions: contraction inside the blocks, and across sparse/dense axes."""
    dense = rng.standard_normal((3, 4, 5)) * (rng.random((3, 4, 1)) < 0.6)
    for sparse_dim in (1, 2):
        x = gs.fromdense(dense, sparse_dim=sparse_dim, device=device)
        assert x.dense_dim == 3 - sparse_dim
        for other in (rng.standard_normal(5), rng.standard_normal((5, 2))):
            expected, bound = matmul_oracle(dense, other)
            with warnings.catch_warnings():  # the blocks are multiplied as they are
                warnings.simplefilter("error", GpuSparseEfficiencyWarning)
                assert_product(x @ put(other, device), expected, bound)
        other = rng.standard_normal((3, 5, 2))
        expected, bound = matmul_oracle(dense, other)
        with pytest.warns(GpuSparseEfficiencyWarning, match="dense dimensions of a"):
            got = x @ put(other, device)
        assert_product(got, expected, bound)
        left = rng.standard_normal((2, 4))
        expected, bound = matmul_oracle(left, dense)
        assert_product(put(left, device) @ x, expected, bound)
        expected, bound = matmul_oracle(dense, dense.swapaxes(1, 2))
        assert_product(x @ gs.fromdense(dense.swapaxes(1, 2), device=device), expected, bound)


def test_matmul_zero_size_and_empty(device):
    for a_shape, b_shape in [((0, 3), (3, 2)), ((2, 0), (0, 4)), ((2, 3), (3, 0)), ((0, 2, 3), (3, 1))]:
        a = gs.zeros(a_shape, device=device)
        b = np.ones(b_shape)
        expected = np.matmul(np.zeros(a_shape), b)
        assert_product(a @ put(b, device), expected)
        assert_product(a @ gs.zeros(b_shape, device=device), expected)


@EXAMPLES
@given(case=matmul_cases(kinds=("sd",), max_batch=0), trans_a=st.booleans(), trans_b=st.booleans())
def test_sparse_dense_matmul_adjoints(device, case, trans_a, trans_b):
    kind, a, b, fmt_a, _ = case
    a_dense = dense_of(a)
    if a_dense.ndim != 2 or np.ndim(b) != 2 or COO(*a[:2], a[2]).dense_dim:
        return
    b = np.asarray(b)
    # adjoint operands must still line up: build shapes that do
    A_op = a_dense.conj().T if trans_a else a_dense
    B = b.conj().T if trans_b else b
    if A_op.shape[1] != B.shape[0]:
        B = (np.ones((A_op.shape[1], 2), dtype=b.dtype))
        b = B.conj().T if trans_b else B
    expected, bound = matmul_oracle(A_op, B)
    got = linalg.sparse_dense_matmul(build(a, device, fmt_a), put(b, device), adjoint_a=trans_a, adjoint_b=trans_b)
    assert_product(got, expected, bound)


def test_sparse_dense_matmul_complex_conjugates(device):
    a = np.array([[1 + 2j, 0], [3j, 4 - 1j]])
    b = np.array([[1 - 1j, 2], [0.5j, 1]])
    for fmt in ("coo", "csr", "csc"):
        A = gs.fromdense(a, format=fmt, device=device)
        for ta in (False, True):
            for tb in (False, True):
                expected = (a.conj().T if ta else a) @ (b.conj().T if tb else b)
                got = linalg.sparse_dense_matmul(A, put(b, device), adjoint_a=ta, adjoint_b=tb)
                assert_product(got, expected, np.full(expected.shape, 10.0))
                got = linalg.sparse_dense_matmul(put(b, device), A, adjoint_a=tb, adjoint_b=ta)
                expected = (b.conj().T if tb else b) @ (a.conj().T if ta else a)
                assert_product(got, expected, np.full(expected.shape, 10.0))


# --------------------------------------------------------------------------
# dot, tensordot, inner, outer, kron
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_tensordot_any_axes(device, data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    a_shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4)))
    n = data.draw(st.integers(0, len(a_shape)))
    axes_a = data.draw(st.permutations(range(len(a_shape))))[:n]
    free_b = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    b_axes_order = data.draw(st.permutations(range(n + len(free_b))))
    b_shape = [0] * (n + len(free_b))
    contracted_positions = b_axes_order[:n]
    for j, pos in enumerate(contracted_positions):
        b_shape[pos] = a_shape[axes_a[j]]
    free_positions = [p for p in range(len(b_shape)) if p not in contracted_positions]
    for p, size in zip(free_positions, free_b):
        b_shape[p] = size
    a = data.draw(sparse_parts(a_shape, dtype))
    kind = data.draw(st.sampled_from(["sd", "ds", "ss"]))
    b_dense = data.draw(hnp.arrays(dtype, tuple(b_shape), elements=elements(dtype, nan=False)))
    b = data.draw(sparse_parts(tuple(b_shape), dtype)) if kind == "ss" else b_dense
    b_full = dense_of(b) if kind == "ss" else b_dense
    axes = (list(axes_a), list(contracted_positions))
    with np.errstate(all="ignore"):
        expected = np.tensordot(dense_of(a), b_full, axes=axes)
        bound = np.tensordot(_abs64(dense_of(a)), _abs64(b_full), axes=axes)
    if kind == "ds":
        got = linalg.tensordot(put(b_full, device), build(a, device), axes=axes[::-1])
        with np.errstate(all="ignore"):
            expected = np.tensordot(b_full, dense_of(a), axes=axes[::-1])
            bound = np.tensordot(_abs64(b_full), _abs64(dense_of(a)), axes=axes[::-1])
    else:
        other = build(b, device) if kind == "ss" else put(b_dense, device)
        got = linalg.tensordot(build(a, device), other, axes=axes)
    assert_product(got, expected.astype(dtype), bound)


def test_tensordot_integer_axes_and_np_tensordot(device, rng):
    a = rng.standard_normal((2, 3, 4)) * (rng.random((2, 3, 4)) < 0.5)
    b = rng.standard_normal((3, 4, 5))
    x = gs.fromdense(a, device=device)
    for axes in (0, 1, 2):
        bb = b if axes != 1 else rng.standard_normal((4, 2))
        expected = np.tensordot(a, bb, axes)
        assert_product(linalg.tensordot(x, put(bb, device), axes), expected,
                       np.tensordot(np.abs(a), np.abs(bb), axes))
    if device.kind == "cpu":
        assert_product(np.tensordot(x, b, 2), np.tensordot(a, b, 2), np.tensordot(np.abs(a), np.abs(b), 2))


def test_dot_inner_outer_kron(device, rng):
    a = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    v = rng.standard_normal(4) * (rng.random(4) < 0.6)
    t = rng.standard_normal((2, 4, 3))
    x, sv = gs.fromdense(a, device=device), gs.fromdense(v, device=device)
    bound = np.abs(a) @ np.abs(v)
    assert_product(linalg.dot(x, put(v, device)), a @ v, bound)
    assert_product(x.dot(put(v, device)), a @ v, bound)
    assert_product(linalg.dot(x, put(t, device)), np.dot(a, t), np.dot(np.abs(a), np.abs(t)))
    assert_product(linalg.dot(x, 2.0), a * 2.0)
    assert_product(linalg.dot(sv, sv), np.dot(v, v), np.dot(np.abs(v), np.abs(v)))
    assert_product(linalg.inner(x, put(a, device)), np.inner(a, a), np.inner(np.abs(a), np.abs(a)))
    assert_product(linalg.outer(x, put(v, device)), np.outer(a, v))
    assert_product(linalg.outer(sv, x), np.outer(v, a))
    for other in (a, v, t, np.eye(2)):
        assert_product(linalg.kron(x, gs.fromdense(other, device=device)), np.kron(a, other))
        assert_product(linalg.kron(put(other, device), x), np.kron(other, a))
    if device.kind == "cpu":
        assert_product(np.dot(x, v), a @ v, bound)
        assert_product(np.dot(v, x.T), v @ a.T, np.abs(v) @ np.abs(a.T))
        assert_product(np.outer(x, v), np.outer(a, v))
        assert_product(np.kron(x, v), np.kron(a, v))
        assert_product(np.inner(x, a), np.inner(a, a), np.inner(np.abs(a), np.abs(a)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.bool_, np.complex64], ids=lambda d: np.dtype(d).name)
def test_integer_bool_complex_products_exact(device, dtype, rng):
    dtype = np.dtype(dtype)
    a = _values(rng, 7, dtype, (6,)) * (rng.random((7, 6)) < 0.5).astype(dtype)
    b = _values(rng, 6, dtype, (5,))
    x = gs.fromdense(a, device=device)
    for fmt in ("coo", "csr", "csc"):
        y = x.asformat(fmt)
        expected, bound = matmul_oracle(a, b)
        assert_product(y @ put(b, device), expected, bound)
        assert_product(put(b.T, device) @ y.T, expected.T, bound.T)
        assert_product(y @ gs.fromdense(b, format=fmt, device=device), expected, bound)


# --------------------------------------------------------------------------
# torch names
# --------------------------------------------------------------------------

def test_mm_mv_bmm(device, rng):
    a = rng.standard_normal((4, 5)) * (rng.random((4, 5)) < 0.5)
    b = rng.standard_normal((5, 3))
    x = gs.fromdense(a, format="csr", device=device)
    assert_product(linalg.mm(x, put(b, device)), a @ b, np.abs(a) @ np.abs(b))
    assert_product(linalg.mm(x, put(b, device), reduce="sum"), a @ b, np.abs(a) @ np.abs(b))
    assert_product(linalg.mv(x, put(b[:, 0], device)), a @ b[:, 0], np.abs(a) @ np.abs(b[:, 0]))
    s3 = rng.standard_normal((2, 4, 5)) * (rng.random((2, 4, 5)) < 0.5)
    d3 = rng.standard_normal((2, 5, 3))
    assert_product(linalg.bmm(gs.fromdense(s3, device=device), put(d3, device)), s3 @ d3, np.abs(s3) @ np.abs(d3))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_mm_reduce_matches_torch(device, reduce, fmt, rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < 0.4)
    a[2] = 0  # an empty row
    b = rng.standard_normal((5, 3))
    expected = torch.sparse.mm(torch.from_numpy(a).to_sparse_csr(), torch.from_numpy(b),
                               {"max": "amax", "min": "amin"}.get(reduce, reduce)).numpy()
    got = linalg.mm(gs.fromdense(a, format=fmt, device=device), put(b, device), reduce=reduce)
    assert_product(got, expected, np.abs(a) @ np.abs(b))


def test_mm_reduce_integers(device):
    a = np.array([[2, 0, -1], [0, 0, 0], [1, 3, 0]], dtype=np.int32)
    b = np.array([[1, -2], [4, 5], [3, 3]], dtype=np.int32)
    x = gs.fromdense(a, format="csr", device=device)
    assert_product(linalg.mm(x, put(b, device), reduce="max"), np.array([[2, -3], [0, 0], [12, 15]], np.int32))
    mean = linalg.mm(x, put(b, device), reduce="mean")
    assert_product(mean, np.array([[-0.5, -3.5], [0, 0], [6.5, 6.5]]))
    with pytest.raises(TypeError, match="complex"):
        linalg.mm(x.astype(np.complex64), put(b, device), reduce="max")


def test_addmm_sspaddmm_hspmm_smm_match_torch(device, rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.4)
    a[1] = 0
    a[1, 2] = 1.5
    a[3] = 0
    m2 = rng.standard_normal((4, 3))
    inp = rng.standard_normal((5, 3))
    ta, tm2, tin = torch.from_numpy(a).to_sparse(), torch.from_numpy(m2), torch.from_numpy(inp)
    x = gs.fromdense(a, device=device)
    assert_product(linalg.addmm(put(inp, device), x, put(m2, device), beta=0.5, alpha=2.0),
                   torch.addmm(tin, ta, tm2, beta=0.5, alpha=2.0).numpy(), 4 * np.abs(a) @ np.abs(m2) + 1)
    assert_product(linalg.addmm(put(inp[0], device), x.tocsc(), put(m2, device)),
                   torch.addmm(tin[0], ta, tm2).numpy(), np.abs(a) @ np.abs(m2) + 1)
    nan_input = np.full((5, 3), np.nan)
    assert_product(linalg.addmm(put(nan_input, device), x, put(m2, device), beta=0), a @ m2, np.abs(a) @ np.abs(m2))
    h = linalg.hspmm(x, put(m2, device))
    th = torch.hspmm(ta, tm2).coalesce()
    assert h.sparse_dim == 1 and h.dense_dim == 1
    np.testing.assert_array_equal(to_host(h.coords), th.indices().numpy())
    assert_product(h, th.to_dense().numpy(), np.abs(a) @ np.abs(m2))
    s = linalg.smm(x, put(m2, device))
    assert s.sparse_dim == 2 and s.nnz == torch.smm(ta, tm2).coalesce()._nnz()
    assert_product(s, torch.smm(ta, tm2).to_dense().numpy(), np.abs(a) @ np.abs(m2))
    sp_in = gs.fromdense(inp * (rng.random((5, 3)) < 0.3), device=device)
    expected = torch.sspaddmm(torch.from_numpy(to_host(sp_in.todense())).to_sparse(), ta, tm2,
                              beta=0.5, alpha=2.0).to_dense().numpy()
    got = linalg.sspaddmm(sp_in, x, put(m2, device), beta=0.5, alpha=2.0)
    assert isinstance(got, SparseArray)
    assert_product(got, expected, 4 * np.abs(a) @ np.abs(m2) + 1)
    sp_b = gs.fromdense(m2 * (rng.random((4, 3)) < 0.5), device=device)
    got = linalg.addmm(sp_in, x, sp_b, beta=2.0, alpha=-1.0)
    expected = 2.0 * to_host(sp_in.todense()) - a @ to_host(sp_b.todense())
    assert isinstance(got, SparseArray)
    assert_product(got, expected, 4 * np.abs(a) @ np.abs(m2) + 4)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_sampled_addmm_matches_torch(device, fmt, rng):
    torch = pytest.importorskip("torch")
    mask = rng.random((6, 7)) < 0.4
    inp = rng.standard_normal((6, 7)) * mask
    m1, m2 = rng.standard_normal((6, 3)), rng.standard_normal((3, 7))
    expected = torch.sparse.sampled_addmm(torch.from_numpy(inp).to_sparse_csr(), torch.from_numpy(m1),
                                          torch.from_numpy(m2), beta=0.5, alpha=2.0).to_dense().numpy()
    x = gs.fromdense(inp, format=fmt, device=device)
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=0.5, alpha=2.0)
    assert got.format == fmt and got.nnz == x.nnz
    assert_product(got, expected, 2 * np.abs(m1) @ np.abs(m2) + 1)


def test_sampled_addmm_batched_and_uncoalesced(device, rng):
    coords = np.array([[0, 0, 1, 1, 1], [0, 2, 1, 1, 3], [1, 0, 2, 2, 0]])  # (1, 1, 2) twice
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    x = gs.COO(coords, data, shape=(2, 4, 3), device=device)
    m1, m2 = rng.standard_normal((2, 4, 5)), rng.standard_normal((5, 3))
    dense = dense_oracle(coords, data, (2, 4, 3))
    expected = 2.0 * (m1 @ m2) * (dense != 0) - 1.0 * dense
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=-1.0, alpha=2.0)
    assert_product(got, expected, 2 * np.abs(m1) @ np.abs(m2) + 10)
    assert got.nnz == 4



@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("shape", [(2, 3), (0, 3), (2, 0), (0, 0)])
def test_sampled_addmm_with_empty_inner_dimension(device, fmt, shape, rng):
    """k = 0: the product term is 0, so the result is beta * input (also for 0-size inputs)."""
    inp = rng.standard_normal(shape) * (rng.random(shape) < 0.5)
    x = gs.fromdense(inp, format=fmt, device=device)
    m1, m2 = np.ones((shape[0], 0)), np.ones((0, shape[1]))
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=3.0, alpha=2.0)
    assert got.format == fmt and got.nnz == x.nnz
    assert_product(got, 3.0 * inp, np.abs(inp) + 1)

# --------------------------------------------------------------------------
# Bad input: clear errors naming the argument
# --------------------------------------------------------------------------

def test_errors_name_the_argument(device):
    x = gs.random((3, 4), density=0.5, format="csr", seed=0, device=device)
    with pytest.raises(ValueError, match=r"inner dimensions differ: a has shape \(3, 4\)"):
        linalg.matmul(x, put(np.ones((3, 2)), device))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        x @ x
    with pytest.raises(ValueError, match="a is 0-d"):
        linalg.matmul(gs.zeros((), device=device), put(np.ones(2), device))
    with pytest.raises(ValueError, match="b is 0-d"):
        linalg.matmul(x, put(np.float64(2.0), device))
    with pytest.raises(ValueError, match="batch dimensions of a .* and b .* cannot be broadcast"):
        linalg.matmul(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((3, 4, 2)), device))
    with pytest.raises(TypeError, match="b has unsupported dtype"):
        linalg.matmul(x, np.array([["a"] * 2] * 4))
    with pytest.raises(TypeError, match="b must be array-like|b has unsupported dtype"):
        linalg.matmul(x, object())
    with pytest.raises(ValueError, match="reduce must be one of"):
        linalg.mm(x, put(np.ones((4, 2)), device), reduce="median")
    with pytest.raises(ValueError, match="mm: a must be 2-D"):
        linalg.mm(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((4, 2)), device))
    with pytest.raises(ValueError, match="bmm: batch sizes differ"):
        linalg.bmm(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((3, 4, 2)), device))
    with pytest.raises(ValueError, match="mv: v must be 1-D"):
        linalg.mv(x, put(np.ones((4, 1)), device))
    filled = gs.COO([[0]], [1.0], shape=(3,), fill_value=2.0, device=device)
    with pytest.raises(ValueError, match="a has fill value 2.0"):
        linalg.matmul(filled, put(np.ones(3), device))
    with pytest.raises(ValueError, match="tensordot: shape mismatch"):
        linalg.tensordot(x, put(np.ones((3, 4)), device), axes=([0], [1]))
    with pytest.raises(ValueError, match="axes: a lists 2 axes but b lists 1"):
        linalg.tensordot(x, put(np.ones((3, 4)), device), axes=([0, 1], [0]))
    with pytest.raises(ValueError, match="sparse_dense_matmul: sp_a must be 2-D"):
        linalg.sparse_dense_matmul(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((4, 2)), device))
    with pytest.raises(TypeError, match="hspmm: mat2 must be dense"):
        linalg.hspmm(x, x.T)
    with pytest.raises(ValueError, match="sampled_addmm: shapes do not line up"):
        linalg.sampled_addmm(x, put(np.ones((3, 2)), device), put(np.ones((2, 5)), device))


def test_operands_on_different_devices_are_refused():
    from _helpers import cuda_devices
    if not cuda_devices():
        pytest.skip("needs a CUDA device")
    x = gs.random((3, 3), density=0.5, seed=0, device="cpu")
    y = gs.random((3, 3), density=0.5, seed=0, device="cuda")
    with pytest.raises(ValueError, match="different devices: a is on cpu and b is on cuda:0"):
        linalg.matmul(x, y)
    with pytest.raises(ValueError, match="different devices"):
        linalg.matmul(x, cuda_module().ones((3, 2)))


def test_unsorted_coo_operand_warns(device):
    x = gs.COO([[1, 0], [0, 1]], [1.0, 2.0], shape=(2, 2), device=device)
    with pytest.warns(GpuSparseEfficiencyWarning, match=r"\.tocsr\(\)"):
        x @ put(np.ones(2), device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuSparseEfficiencyWarning)
        x.tocsr() @ put(np.ones(2), device)
        x.coalesce() @ put(np.ones(2), device)


def test_exported_names_are_the_ops():
    """Where gpusparse exports a product, it is the function tested here."""
    for name in linalg.__all__:
        exported = getattr(gs, name, None)
        assert exported is None or exported is getattr(linalg, name), name


def test_cusparse_support_table():
    """What the CUDA twin sends to cuSPARSE (the table needs no GPU to read)."""
    pytest.importorskip("cupy")
    from gpusparse._kernels.cuda import _cusparse
    assert _cusparse.supports("spmm", np.float32, np.int32, np.int32, trans="T")
    assert _cusparse.supports("spmv", np.complex128, np.int64, np.int64, trans="H")
    assert not _cusparse.supports("spmm", np.int32, np.int32, np.int32)
    assert not _cusparse.supports("spmv", np.float64, np.int32, np.int64)  # mixed index types
    assert _cusparse.supports("spgemm", np.complex64, np.int32)
    assert not _cusparse.supports("spgemm", np.float64, np.int32, trans="T")
    assert not _cusparse.supports("spgemm", np.int64, np.int32)


def test_integer_spgemm_on_cuda_warns_and_is_exact(device):
    if not device.is_cuda:
        pytest.skip("the cuSPARSE dispatch exists on CUDA only")
    dense = (np.arange(400, dtype=np.int32).reshape(20, 20) % 7) * (np.eye(20, k=3, dtype=np.int32) + 1)
    x = gs.fromdense(dense, format="csr", device=device)
    with pytest.warns(GpuSparseEfficiencyWarning, match="no cuSPARSE SpGEMM"):
        y = x @ x
    assert_product(y, dense @ dense)


# --------------------------------------------------------------------------
# Foreign operands: the result has the operand's kind
# --------------------------------------------------------------------------

def _torch_on(arr, device):
    """``arr`` as a torch tensor on ``device`` (skips where torch cannot reach that device)."""
    torch = pytest.importorskip("torch")
    if not device.is_cuda:
        return torch.from_numpy(np.ascontiguousarray(arr))
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no GPU")
    return torch.from_numpy(np.ascontiguousarray(arr)).to(f"cuda:{device.index}")


def _assert_torch_result(result, expected, device, bound=None):
    torch = pytest.importorskip("torch")
    assert isinstance(result, torch.Tensor), type(result)
    assert result.device.type == ("cuda" if device.is_cuda else "cpu")
    if device.is_cuda:
        assert result.device.index == device.index
    assert_product(result.cpu().numpy(), expected, bound)


_PRODUCTS = {  # name: (call with sparse x and dense d, dense oracle)
    "@": (lambda x, d: x @ d, lambda a, b: a @ b),
    "rmatmul": (lambda x, d: d.T @ x.T, lambda a, b: b.T @ a.T),
    "np.matmul": (lambda x, d: np.matmul(x, d), lambda a, b: a @ b),
    "np.dot": (lambda x, d: np.dot(x, d), lambda a, b: a @ b),
    "gs.matmul": (lambda x, d: gs.matmul(x, d), lambda a, b: a @ b),
    "gs.dot": (lambda x, d: gs.dot(x, d), lambda a, b: a @ b),
    "x.dot": (lambda x, d: x.dot(d), lambda a, b: a @ b),
    "gs.mm": (lambda x, d: gs.mm(x, d), lambda a, b: a @ b),
    "gs.mm(reduce)": (lambda x, d: gs.mm(x, d, reduce="sum"), lambda a, b: a @ b),
    "gs.tensordot": (lambda x, d: gs.tensordot(x, d, axes=1), lambda a, b: a @ b),
    "gs.inner": (lambda x, d: gs.inner(x, d.T), lambda a, b: a @ b),
    "gs.sparse_dense_matmul": (lambda x, d: gs.sparse_dense_matmul(x, d), lambda a, b: a @ b),
    "gs.addmm": (lambda x, d: gs.addmm(d[:1] * 0, x, d), lambda a, b: a @ b),
}


_TORCH_DLPACK = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                             np.float32, np.float64, np.complex64, np.complex128))


@EXAMPLES
@given(case=matmul_cases(kinds=("sd", "ds")))
def test_matmul_with_torch_dense_operands(device, case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    dense = b if sa else a
    if dense.dtype not in _TORCH_DLPACK:
        dense = dense.astype(np.int64)
    a, b = (a, dense) if sa else (dense, b)
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A = build(a, device, fmt_a) if sa else _torch_on(a, device)
    B = build(b, device, fmt_b) if sb else _torch_on(b, device)
    _assert_torch_result(linalg.matmul(A, B), expected, device, bound)
    _assert_torch_result(A @ B, expected, device, bound)


@pytest.mark.parametrize("name", list(_PRODUCTS))
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_torch_operands_give_torch_results(device, name, fmt, rng):
    call, oracle = _PRODUCTS[name]
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    b = rng.standard_normal((4, 3))
    x = gs.fromdense(put(a, device)).asformat(fmt)
    if name in ("np.matmul", "np.dot") and device.is_cuda:
        pytest.skip("NumPy's protocols dispatch CPU operands")
    result = call(x, _torch_on(b, device))
    _assert_torch_result(result, oracle(a, b), device, oracle(np.abs(a), np.abs(b)))


def test_torch_results_share_memory_and_keep_dtypes(device, rng):
    torch = pytest.importorskip("torch")
    x = gs.fromdense(put(np.eye(3, dtype=np.float32), device))
    for dtype, np_dtype in ((torch.float32, np.float32), (torch.int64, np.float64), (torch.complex128, np.complex128),
                            (torch.bool, np.float32)):
        d = _torch_on(np.ones((3, 2)), device).to(dtype)
        out = x @ d
        assert isinstance(out, torch.Tensor) and out.dtype == getattr(torch, np.dtype(np_dtype).name)
        _assert_torch_result(out, np.ones((3, 2), np_dtype), device)
    vector = gs.fromdense(put(np.array([1.0, 0.0, 2.0]), device))
    out = vector @ _torch_on(np.array([1.0, 5.0, 3.0]), device)
    assert isinstance(out, torch.Tensor) and out.shape == () and float(out) == 7.0


def test_device_arrays_and_lists_give_device_arrays(device):
    x = gs.fromdense(put(np.eye(3, dtype=np.float32), device))
    array_type = type(put(np.ones(1), device))
    assert type(x @ put(np.ones((3, 2), np.float32), device)) is array_type
    assert type(put(np.ones((2, 3)), device) @ x) is array_type
    assert type(x @ np.ones((3, 2)).tolist()) is array_type
    assert type(gs.tensordot(x, np.ones(3).tolist(), axes=1)) is array_type


def test_torch_operand_on_another_device_is_refused(device):
    torch = pytest.importorskip("torch")
    if not device.is_cuda:
        pytest.skip("needs a CUDA device")
    x = gs.eye(2, device=device)
    with pytest.raises(ValueError, match="b"):
        gs.matmul(x, torch.ones(2, 2, dtype=torch.float64))


def test_first_dense_operand_decides(rng):
    torch = pytest.importorskip("torch")
    x = gs.fromdense(np.eye(2), device="cpu")
    d = np.ones((2, 2))
    assert isinstance(gs.addmm(torch.from_numpy(d), x, d), torch.Tensor)
    assert isinstance(gs.addmm(d, x, torch.from_numpy(d)), np.ndarray)
    assert isinstance(gs.addmm(d.tolist(), x, torch.from_numpy(d)), torch.Tensor)
    sparse = gs.addmm(x, x, x)  # sparse results stay gpusparse arrays
    assert isinstance(sparse, SparseArray)


def test_jax_operands_give_jax_results():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    x = gs.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32), device="cpu")
    out = x @ jnp.ones((2, 3), jnp.float32)
    assert isinstance(out, jax.Array) and out.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(out), [[1, 1, 1], [2, 2, 2]])
    x64 = x.astype(np.float64)
    out = x64 @ jnp.ones((2, 3), jnp.float32)  # float64: JAX keeps it only with x64 enabled
    wide = jax.dtypes.canonicalize_dtype(np.float64) == np.float64
    assert isinstance(out, jax.Array) == wide
    assert np.asarray(out).dtype == np.float64


_SCIPY_FORMATS = ["csr_array", "csc_array", "coo_array", "csr_matrix", "coo_matrix"]


@pytest.mark.parametrize("kind", _SCIPY_FORMATS)
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_scipy_operands_both_orders(kind, fmt, rng):
    sps = pytest.importorskip("scipy.sparse")
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
    b = rng.standard_normal((4, 3)) * (rng.random((4, 3)) < 0.5)
    m = getattr(sps, kind)(b)
    ma = getattr(sps, kind)(a)
    x = gs.fromdense(a, device="cpu").asformat(fmt)
    for name, result in [("x @ m", x @ m), ("np.matmul", np.matmul(x, m)), ("gs.matmul", gs.matmul(x, m)),
                         ("gs.dot", gs.dot(x, m)), ("gs.mm", gs.mm(x, m)),
                         ("gs.tensordot", gs.tensordot(x, m, axes=1)),
                         ("gs.sparse_dense_matmul", gs.sparse_dense_matmul(x, m))]:
        assert isinstance(result, SparseArray), name
        assert_product(result, a @ m.toarray(), np.abs(a) @ np.abs(b))
    expected = ma.toarray() @ b
    y = gs.fromdense(b, device="cpu").asformat(fmt)
    for name, result in [("np.matmul", np.matmul(ma, y)), ("np.dot", np.dot(ma, y)),
                         ("gs.matmul", gs.matmul(ma, y)), ("gs.dot", gs.dot(ma, y)),
                         ("gs.sparse_dense_matmul", gs.sparse_dense_matmul(ma, y))]:
        assert isinstance(result, SparseArray), name
        assert_product(result, expected, np.abs(a) @ np.abs(b))
    # ``ma @ y``: SciPy's ``__matmul__`` converts y with np.asanyarray, which gpusparse refuses
    # (no implicit densification) instead of returning NotImplemented; gs.matmul is the way
    with pytest.raises(RuntimeError, match="densify"):
        ma @ y


def test_torch_sparse_operand_gives_a_sparse_result(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    b = rng.standard_normal((4, 2)) * (rng.random((4, 2)) < 0.5)
    x = gs.fromdense(a, device="cpu")
    for t in (torch.from_numpy(b).to_sparse(), torch.from_numpy(b).to_sparse_csr()):
        result = x @ t
        assert isinstance(result, SparseArray)
        assert_product(result, a @ b, np.abs(a) @ np.abs(b))


def test_scipy_csr_operand_is_not_copied():
    sps = pytest.importorskip("scipy.sparse")
    from gpusparse.ops.linalg.operands import prepare
    from gpusparse.ops.interop._common import pointer
    m = sps.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    (_, y), _ = prepare((gs.eye(2, device="cpu"), m), ("a", "b"))
    assert pointer(y.data) == pointer(m.data) and pointer(y.indices) == pointer(m.indices)


def test_scipy_operand_on_another_device_is_refused(device):
    sps = pytest.importorskip("scipy.sparse")
    if not device.is_cuda:
        pytest.skip("needs a CUDA device")
    x = gs.eye(2, device=device)
    with pytest.raises(ValueError, match="b"):
        x @ sps.csr_array(np.eye(2))
