"""gpusparse on a dask.distributed cluster of two worker processes: the same answers as one process.

One ``LocalCluster`` per module (two worker processes under nannies, one
thread each); the GPU variant uses ``dask_cuda.LocalCUDACluster`` and skips
where dask_cuda or a GPU is absent.
"""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import gpusparse as gs  # noqa: E402
from _helpers import assert_dense_equal, assert_same_components, assert_sparse_equal, cuda_devices  # noqa: E402
from gpusparse._device import cuda_status, to_host  # noqa: E402
from gpusparse.dask import RowBlockMatrix, cg, from_array  # noqa: E402


def laplacian_2d(n, device="cpu"):
    """The 5-point Laplacian on an ``n`` x ``n`` grid (symmetric positive definite), as CSR."""
    import scipy.sparse as sp
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    a = sp.kronsum(one, one).tocsr()
    return gs.from_scipy(a).to(device), a


def uncoalesced(device, seed=0):
    """A 3-D COO with many duplicate coordinates, unsorted."""
    rng = np.random.default_rng(seed)
    shape = (40, 30, 6)
    nnz = 3000
    coords = np.stack([rng.integers(0, s, nnz) for s in shape])
    data = rng.standard_normal(nnz)
    x = gs.COO(coords, data, shape, device=device)
    dense = np.zeros(shape)
    np.add.at(dense, tuple(coords), data)
    return x, dense


def coalesce_reduce(X):
    """The pipeline: coalesce every chunk, then sum over axes 0 and 2, and a full max."""
    C = X.map_blocks(lambda b: b.coalesce(), dtype=X.dtype, meta=X._meta)
    return C.sum(axis=(0, 2), split_every=2), C.max(), C.sum(axis=1)


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def test_two_worker_processes(client):
    info = client.scheduler_info()["workers"]
    assert len(info) == 2
    pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2
    # each worker registered gpusparse with Dask by itself
    registered = client.run(lambda: __import__("gpusparse.dask._serialize", fromlist=["_done"])._done)
    assert all(registered.values()), registered


def test_arrays_travel_between_processes(client):
    x = gs.random((50, 40), density=0.1, device="cpu", seed=1)
    arrays = [x, x.tocsr(), x.tocsc(), gs.COO(x.coords, x.data, x.shape, fill_value=np.nan),
              gs.COO([[2, 0, 2]], [1, 2, 3], shape=(4,))]  # uncoalesced: flags must stay False
    workers = list(client.scheduler_info()["workers"])
    for a in arrays:
        future = client.scatter(a, workers=[workers[0]])
        moved = client.submit(lambda y: y, future, workers=[workers[1]], pure=False)  # worker to worker
        back = moved.result()
        assert type(back) is type(a)
        assert_same_components(back, a)
        summary = client.submit(lambda y: (y.format, y.shape, str(y.fill_value), y.is_coalesced(), str(y.device)),
                                moved).result()
        assert summary == (a.format, a.shape, str(a.fill_value), a.is_coalesced(), str(a.device))


def test_operations_on_the_cluster(client):
    x = gs.random((60, 50), density=0.1, device="cpu", seed=4)
    X = from_array(x, (20, 25))
    dense = x.todense()
    assert_sparse_equal(X.sum(axis=0).compute(), dense.sum(axis=0))
    assert_sparse_equal((X.T @ X).compute(), dense.T @ dense)
    assert_sparse_equal(da.concatenate([X, X[:5]], axis=0).rechunk((30, 50)).compute(),
                        np.concatenate([dense, dense[:5]]))
    assert_dense_equal(X.max(axis=1).compute().todense(), dense.max(axis=1))


def test_cg_matches_one_process(client):
    a, a_scipy = laplacian_2d(24)
    n = a.shape[0]
    rng = np.random.default_rng(0)
    b_host = rng.standard_normal(n)
    b = da.from_array(b_host, chunks=n // 4)
    A = RowBlockMatrix(a, b.chunks[0])
    assert A.spans == [(0, 2), (0, 3), (1, 4), (2, 4)]  # each row block reads its neighbours' chunks only
    A.persist()
    x, info = cg(A, b, rtol=1e-10)
    assert info == 0
    x_cluster = x.compute()
    with dask.config.set(scheduler="sync"):
        x_local, info_local = cg(RowBlockMatrix(a, b.chunks[0]), b, rtol=1e-10)
        x_local = x_local.compute()
    assert info_local == 0
    np.testing.assert_allclose(x_cluster, x_local, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a_scipy @ x_cluster, b_host, atol=1e-8)


def test_spmm_matches_scipy(client):
    a, a_scipy = laplacian_2d(10)
    n = a.shape[0]
    v = np.random.default_rng(1).standard_normal((n, 3))
    A = RowBlockMatrix(a, 25).persist()
    V = da.from_array(v, chunks=(30, 3))  # rechunked to the matrix's vector chunks
    np.testing.assert_allclose((A @ V).compute(), a_scipy @ v, rtol=1e-12)
    np.testing.assert_allclose((A @ V[:, 0]).compute(), a_scipy @ v[:, 0], rtol=1e-12)


def test_coalesce_reduce_pipeline_matches_one_process(client):
    x, dense = uncoalesced("cpu")
    X = from_array(x, (10, 15, 6))
    on_cluster = dask.compute(*coalesce_reduce(X))
    with dask.config.set(scheduler="sync"):
        in_process = dask.compute(*coalesce_reduce(X))
    for got, want in zip(on_cluster, in_process):
        if isinstance(want, gs.SparseArray):
            assert_sparse_equal(got, to_host(want.todense()))
        else:
            assert_dense_equal(np.asarray(got), np.asarray(want))
    assert_sparse_equal(on_cluster[0], dense.sum(axis=(0, 2)))
    assert_dense_equal(np.asarray(on_cluster[1]), dense.max(), check_dtype=False)
    assert_sparse_equal(on_cluster[2], dense.sum(axis=1))


@pytest.mark.gpu
def test_local_cuda_cluster():
    """The CG solve and the pipeline on ``dask_cuda.LocalCUDACluster``: one worker per GPU."""
    from gpusparse._kernels import cuda_emulation
    if cuda_emulation.enabled():
        pytest.skip("worker processes cannot reach the emulated CUDA device")
    if not cuda_devices():
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    dask_cuda = pytest.importorskip("dask_cuda", reason="dask_cuda is not installed")
    import cupy
    from distributed import Client
    with dask_cuda.LocalCUDACluster(dashboard_address=None) as cluster, Client(cluster):
        a, a_scipy = laplacian_2d(24, "cuda:0")
        n = a.shape[0]
        b_host = np.random.default_rng(0).standard_normal(n)
        b = da.from_array(cupy.asarray(b_host), chunks=n // 4)
        x, info = cg(RowBlockMatrix(a, b.chunks[0]).persist(), b, rtol=1e-10)
        assert info == 0
        np.testing.assert_allclose(a_scipy @ cupy.asnumpy(x.compute()), b_host, atol=1e-8)
        x, dense = uncoalesced("cuda:0")
        got = dask.compute(*coalesce_reduce(from_array(x, (10, 15, 6))))
        assert_sparse_equal(got[0], dense.sum(axis=(0, 2)))
        assert_sparse_equal(got[2], dense.sum(axis=1))
