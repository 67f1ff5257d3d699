"""``gpusparse.dask.from_array``, ``RowBlockMatrix`` and ``cg`` on Dask's threaded scheduler."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import gpusparse as gs  # noqa: E402
from _helpers import assert_dense_equal, assert_same_components, put  # noqa: E402
from gpusparse._device import to_host  # noqa: E402
from gpusparse.dask import RowBlockMatrix, cg, from_array  # noqa: E402


@pytest.fixture(autouse=True)
def _scheduler(device):
    from gpusparse._kernels import cuda_emulation
    # one thread on the emulated device: its __shared__ memory is per kernel, not per block
    workers = 1 if device.is_cuda and cuda_emulation.enabled() else 2
    with dask.config.set(scheduler="threads", num_workers=workers):
        yield


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("chunks", [(3, 5), (2, 2), (7, 1), -1, {0: 4}])
def test_from_array_blocks(device, fmt, chunks):
    x = gs.random((7, 5), density=0.5, format=fmt, device=device, seed=5)
    X = from_array(x, chunks)
    for index in np.ndindex(*X.numblocks):
        block = X.blocks[index].compute()
        key = tuple(slice(sum(c[:i]), sum(c[:i + 1])) for c, i in zip(X.chunks, index))
        assert_same_components(block, x[key])
    assert_same_components(X.compute(), x) if fmt == "csr" or X.numblocks == (1, 1) else None
    np.testing.assert_array_equal(to_host(X.compute().todense()), to_host(x.todense()))


def test_from_array_row_blocks_are_views():
    x = gs.random((8, 6), density=0.5, format="csr", device="cpu", seed=1)
    X = from_array(x, (3, 6))
    for block in dask.compute(*X.to_delayed().ravel()):
        assert np.shares_memory(block.data, x.data) or block.nnz == 0
        assert np.shares_memory(block.indices, x.indices) or block.nnz == 0


def test_from_array_rejects_bad_input():
    with pytest.raises(TypeError, match="x must be a gpusparse array"):
        from_array(np.eye(3), 2)
    x = gs.random((4, 4), density=0.5, device="cpu")
    with pytest.raises(ValueError, match="chunks"):
        from_array(x, (3, 3, 3))
    with pytest.raises(ValueError, match="at least one dimension"):
        from_array(gs.zeros((), device="cpu"), 1)


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_from_array_zero_length_chunks(device, fmt):
    """Chunks of length 0 hold nothing and are left out: max/min/sum agree with the whole array and NumPy."""
    dense = np.arange(35.0).reshape(7, 5) * (np.arange(35).reshape(7, 5) % 3 == 0) - 3.0
    x = gs.fromdense(put(dense, device), format=fmt)
    X = from_array(x, ((3, 0, 4), (2, 0, 3, 0)))
    assert X.chunks == ((3, 4), (2, 3))
    for name in ("max", "min", "sum"):
        whole = getattr(x, name)()
        got = getattr(X, name)().compute()
        assert float(to_host(got)) == float(to_host(whole)) == getattr(dense, name)(), name
    got = X.max(axis=0).compute()
    assert_dense_equal(to_host(got.todense() if isinstance(got, gs.SparseArray) else got), dense.max(axis=0))
    empty = from_array(gs.zeros((0, 5), format=fmt, device=device), ((0,), 5))
    assert empty.chunks == ((0,), (5,)) and empty.compute().shape == (0, 5)


def test_from_array_rejects_chunks_that_do_not_cover(device):
    x = gs.random((4, 5), density=0.5, device=device, seed=2)
    with pytest.raises(ValueError, match=r"from_array: chunks \(0, 5\).*chunk size of 0"):
        from_array(x, (0, 5))  # Dask's normalize_chunks divides by zero
    with pytest.raises(ValueError, match=r"from_array: chunks .*non-negative and add up to 4"):
        from_array(x, ((-1, 5), 5))


def _banded(n, device, k=2):
    rng = np.random.default_rng(n)
    dense = np.zeros((n, n))
    for d in range(-k, k + 1):
        idx = np.arange(max(0, -d), min(n, n - d))
        dense[idx, idx + d] = rng.random(idx.size) + (4 * k if d == 0 else 0)
    dense = (dense + dense.T) / 2
    return gs.fromdense(put(dense, device), format="csr"), dense


def test_row_block_matrix_products(device):
    a, dense = _banded(40, device)
    A = RowBlockMatrix(a, 10)
    assert A.spans == [(0, 2), (0, 3), (1, 4), (2, 4)]
    v = np.random.default_rng(2).random((40, 3))
    for operand in (v[:, 0], v):
        V = da.from_array(put(operand, device), chunks=(7,) + operand.shape[1:])  # rechunked inside
        Y = A @ V
        assert Y.chunks[0] == (10, 10, 10, 10)
        assert_dense_equal(to_host(Y.compute()), dense @ operand)


def test_row_block_matrix_rectangular_and_empty_blocks(device):
    dense = np.zeros((9, 6))
    dense[0, 5] = 1.0
    dense[8, 0] = 2.0  # rows 1..7 empty: the middle block stores nothing
    a = gs.fromdense(put(dense, device))
    A = RowBlockMatrix(a, 3, col_chunks=2)
    assert A.spans == [(2, 3), (0, 1), (0, 1)]
    v = np.arange(6.0)
    assert_dense_equal(to_host(A.dot(da.from_array(put(v, device), chunks=2)).compute()), dense @ v)


def test_row_block_matrix_rejects_bad_input(device):
    a, _ = _banded(8, device)
    with pytest.raises(TypeError, match="gpusparse array"):
        RowBlockMatrix(np.eye(3), 2)
    with pytest.raises(ValueError, match="2-D"):
        RowBlockMatrix(gs.random((2, 2, 2), density=0.5, device=device), 1)
    with pytest.raises(ValueError, match="fill value"):
        RowBlockMatrix(gs.full((4, 4), 1.0, device=device), 2)
    with pytest.raises(ValueError, match="row_chunks"):
        RowBlockMatrix(a, (3, 3))
    with pytest.raises(ValueError, match=r"row_chunks \(-1, 9\).*non-negative"):
        RowBlockMatrix(a, (-1, 9))  # adds up to 8, but a block of -1 rows
    with pytest.raises(ValueError, match=r"col_chunks \(9, -1\).*non-negative"):
        RowBlockMatrix(a, 4, col_chunks=(9, -1))
    with pytest.raises(ValueError, match="row_chunks 0 .*chunk size of 0"):
        RowBlockMatrix(a, 0)
    A = RowBlockMatrix(a, 4)
    with pytest.raises(TypeError, match="dask array"):
        A @ np.ones(8)
    with pytest.raises(ValueError, match="shape"):
        A @ da.ones(5, chunks=5)


def test_row_block_matrix_zero_length_row_chunks(device):
    a, dense = _banded(8, device)
    A = RowBlockMatrix(a, (4, 0, 4))
    assert A.row_chunks == (4, 4)
    v = np.arange(8.0)
    assert_dense_equal(to_host((A @ da.from_array(put(v, device), chunks=4)).compute()), dense @ v)


def test_cg(device):
    a, dense = _banded(60, device)
    b_host = np.random.default_rng(3).random(60)
    b = da.from_array(put(b_host, device), chunks=15)
    x, info = cg(a, b, rtol=1e-12)
    assert info == 0
    assert_dense_equal(to_host(x.compute()), np.linalg.solve(dense, b_host), rtol=1e-8)
    seen = []
    x2, info2 = cg(RowBlockMatrix(a, 15), b, x0=x, rtol=1e-12, callback=seen.append)
    assert info2 == 0 and seen == []  # already converged at x0
    _, info3 = cg(a, b, rtol=1e-14, maxiter=2, callback=seen.append)
    assert info3 == 2 and len(seen) == 2
    with pytest.raises(TypeError, match="1-D dask array"):
        cg(a, b_host)
    with pytest.raises(ValueError, match="square"):
        cg(gs.random((60, 30), density=0.1, device=device), b)
