"""``merge_rows_values``: the one-pass sum / product of two canonical CSR structures (CPU)."""

import numpy as np
import pytest
import scipy.sparse as sp

from gpusparse._kernels.cpu._merge import merge_rows_values


def _csr(m, n, density, seed, dtype=np.float64):
    a = sp.random(m, n, density, format="csr", random_state=seed, dtype=np.float64)
    a.data = (a.data * 10 - 5).astype(dtype)
    a.sort_indices()
    return a


@pytest.mark.parametrize("op", ["add", "multiply"])
@pytest.mark.parametrize("shape,density", [((0, 5), 0.3), ((7, 1), 0.5), ((40, 60), 0.1), ((300, 5000), 0.01),
                                           ((3000, 2000), 0.01)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_matches_scipy(op, shape, density, dtype):
    a, b = _csr(*shape, density, 1, dtype), _csr(*shape, density * 2, 2, dtype)
    indptr, indices, values = merge_rows_values(a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, op)
    ref = (a + b) if op == "add" else a.multiply(b).tocsr()
    ref = sp.csr_matrix(ref)
    if op == "add":  # the union of the patterns, zero sums kept
        pattern = sp.csr_matrix((np.ones(a.nnz), a.indices, a.indptr), shape=shape) + \
            sp.csr_matrix((np.ones(b.nnz), b.indices, b.indptr), shape=shape)
    else:
        pattern = sp.csr_matrix((np.ones(a.nnz), a.indices, a.indptr), shape=shape).multiply(
            sp.csr_matrix((np.ones(b.nnz), b.indices, b.indptr), shape=shape)).tocsr()
    pattern.sort_indices()
    assert indptr.dtype == np.int64 and values.dtype == dtype
    assert np.array_equal(indptr, pattern.indptr) and np.array_equal(indices, pattern.indices)
    got = sp.csr_matrix((values, indices, indptr), shape=shape)
    assert abs(got - ref).max() <= 1e-5 if max(got.nnz, ref.nnz) else True


def test_values_exact():
    a = sp.csr_matrix(np.array([[1.0, 0, -0.0], [0, 2.0, 3.0]]))
    a.data[:] = [1.0, 2.0, 3.0]
    b = sp.csr_matrix(np.array([[4.0, 5.0, 0], [0, -2.0, 0]]))
    indptr, indices, values = merge_rows_values(a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, "add")
    assert indptr.tolist() == [0, 2, 4] and indices.tolist() == [0, 1, 1, 2] and values.tolist() == [5, 5, 0, 3]
    indptr, indices, values = merge_rows_values(a.indptr, a.indices, a.data, b.indptr, b.indices, b.data,
                                                "multiply")
    assert indptr.tolist() == [0, 1, 2] and indices.tolist() == [0, 1] and values.tolist() == [4, -4]


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_malformed_structure_stays_in_bounds(op):
    # indptr out of order and out of range: rows are clipped, the result is a valid structure
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = int(rng.integers(1, 50))
        a_idx, b_idx = rng.integers(0, 40, 60).astype(np.int32), rng.integers(0, 40, 50).astype(np.int32)
        a_ptr, b_ptr = rng.integers(-10, 80, m + 1), rng.integers(-10, 70, m + 1)
        indptr, indices, values = merge_rows_values(a_ptr, a_idx, rng.random(60), b_ptr, b_idx, rng.random(50), op)
        assert indptr[0] == 0 and indptr[-1] == indices.size == values.size
        assert np.all(np.diff(indptr) >= 0)


def test_bad_op():
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError):
        merge_rows_values(z, z[:0], z[:0], z, z[:0], z[:0], "subtract")
