"""Dask arrays of sparse chunks on a dask.distributed cluster of 1 and 2 worker processes.

Two cases, each on ``LocalCluster(n_workers=w, threads_per_worker=1)`` for
``w`` in (1, 2), the same task graph (4 row blocks) for both, the chunks
persisted on the workers before timing:

``spmv``
    ``da.tensordot(A, x, axes=1).compute()`` for a square matrix with ``size`` stored entries
    (16 per row at uniformly random columns, float64), cut into 4 row
    blocks, and a dense ``(n, 1)`` vector in one chunk: Dask's ``tensordot`` on each
    block (no sum over column blocks).
``coalesce_sum``
    A 2-D COO with ``size`` entries, a quarter of them duplicates, unsorted,
    in 4 row blocks; each block is coalesced and summed over its rows, and
    Dask adds the 4 partial column sums: ``X.map_blocks(coalesce, colsum)
    .sum(axis=0).compute()``.

Implementations (the chunk types): ``gpusparse`` (CSR for SpMV, COO for
coalesce), ``sparse`` (pydata sparse ``COO``, the type Dask registers) and
``scipy`` (``csr_array`` / ``coo_array``). Every result is checked against
SciPy's on the whole matrix. Each worker runs Numba on one thread
(``NUMBA_NUM_THREADS=1``), so the two-worker rows measure Dask's
distribution, not Numba's threads. Rows carry ``workers``, entries per
second, ``speedup`` (peer time / gpusparse time) and, on two-worker rows,
``scaling`` (the one-worker median over the two-worker median).

With ``--device cuda`` every row is skipped with its reason: a GPU cluster
needs dask_cuda (see ``tests/dask``), and where it is installed the GPU
cases are still to be written.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run)  # doctest: +SKIP
'gpusparse ok in 4 of 4 cases'
"""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks import _report
from benchmarks._report import Skip, need

__all__ = ["run", "summarize"]

NAME = "dask"
IMPLS = ("gpusparse", "sparse", "scipy")
WORKERS = (1, 2)
BLOCKS = 4
PER_ROW = 16
SEED = 20261123
SIZES = {False: 2**24, True: 2**14}


def _spmv_matrix(size, rng):
    import scipy.sparse as sp
    n = max(BLOCKS, size // PER_ROW)
    rows = np.repeat(np.arange(n, dtype=np.int64), PER_ROW)
    m = sp.csr_array((rng.random(rows.size) + 0.5, (rows, rng.integers(0, n, rows.size))), shape=(n, n))
    m.sum_duplicates()
    m.indices = m.indices.astype(np.int32)
    m.indptr = m.indptr.astype(np.int32)
    return m


def _coalesce_input(size, rng):
    side = 1 << max(4, (size.bit_length() + 1) // 2)  # about size elements: density near one quarter
    unique = size - size // 4
    coords = np.stack([rng.integers(0, side, unique), rng.integers(0, side, unique)])
    dup = rng.integers(0, unique, size - unique)
    coords = np.concatenate([coords, coords[:, dup]], axis=1)
    perm = rng.permutation(coords.shape[1])
    coords = np.ascontiguousarray(coords[:, perm])
    return coords, rng.random(coords.shape[1]), (side, side)


def _bounds(n):
    step = -(-n // BLOCKS)
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _dask_array(blocks, shape, meta):
    """A Dask array of row blocks (one column chunk), built from the blocks themselves."""
    import uuid

    import dask.array as da
    name = f"bench-dask-{uuid.uuid4().hex}"
    chunks = (tuple(b.shape[0] for b in blocks), (shape[1],))
    return da.Array({(name, i, 0): b for i, b in enumerate(blocks)}, name, chunks, meta=meta)


def _spmv_blocks(impl, m):
    bounds = _bounds(m.shape[0])
    if impl == "gpusparse":
        import gpusparse as gs
        a = gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device="cpu", check=False)
        return [a[r0:r1] for r0, r1 in bounds], gs.zeros((0, 0), format="csr", device="cpu")
    if impl == "sparse":
        sparse = need("sparse", "pydata sparse")
        blocks = [sparse.COO.from_scipy_sparse(m[r0:r1]) for r0, r1 in bounds]  # the type Dask registers
        return blocks, blocks[0][:0, :0]
    import scipy.sparse as sp
    m = sp.csr_matrix(m)  # Dask's tensordot for SciPy chunks multiplies with *
    return [m[r0:r1] for r0, r1 in bounds], m[:0, :0]


def _coalesce_blocks(impl, coords, data, shape):
    order = np.argsort(coords[0], kind="stable")  # rows into blocks; inside a block still unsorted
    coords, data = coords[:, order], data[order]
    cuts = np.searchsorted(coords[0], [r0 for r0, _ in _bounds(shape[0])] + [shape[0]])
    parts = []
    for (r0, r1), lo, hi in zip(_bounds(shape[0]), cuts[:-1], cuts[1:]):
        local = np.ascontiguousarray(coords[:, lo:hi])
        local[0] -= r0
        parts.append((local, np.ascontiguousarray(data[lo:hi]), (r1 - r0, shape[1])))
    if impl == "gpusparse":
        import gpusparse as gs
        return [gs.COO(c, d, s, device="cpu", check=False) for c, d, s in parts], gs.zeros((0, 0), device="cpu")
    if impl == "sparse":
        sparse = need("sparse", "pydata sparse")
        # flags claim canonical order so that the constructor keeps the duplicates: the task coalesces
        blocks = [sparse.COO(c, d, shape=s, sorted=True, has_duplicates=False) for c, d, s in parts]
        return blocks, sparse.COO(np.zeros((2, 0), np.int64), np.zeros(0), shape=(0, 0))
    import scipy.sparse as sp
    return [sp.coo_array((d, (c[0], c[1])), shape=s) for c, d, s in parts], sp.coo_array((0, 0))


def _colsum(impl):
    """The per-block work of ``coalesce_sum``: coalesce, then sum the rows (a dense 1 x n row)."""
    if impl == "gpusparse":
        return lambda b: b.coalesce().sum(axis=0).todense()[None]
    if impl == "sparse":
        import sparse

        def colsum(b):
            c = sparse.COO(b.coords, b.data, shape=b.shape, sorted=False, has_duplicates=True)
            return c.sum(axis=0).todense()[None]
        return colsum

    def scipy_colsum(b):
        c = b.tocsr()  # sums the duplicates
        return np.asarray(c.sum(axis=0)).reshape(1, -1)
    return scipy_colsum


def _cluster(workers):
    """A cluster of ``workers`` processes whose Numba runs on one thread.

    ``numba.set_num_threads`` is per thread, and Dask runs tasks on its
    executor's threads, so the limit goes through the environment the
    worker processes start with.
    """
    import os
    distributed = need("distributed", "dask.distributed")
    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, worker_dashboard_address=None)
    finally:
        if saved is None:
            del os.environ["NUMBA_NUM_THREADS"]
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved
    client = distributed.Client(cluster)
    threads = client.run(lambda: __import__("numba").config.NUMBA_NUM_THREADS)
    assert set(threads.values()) == {1}, threads
    return cluster, client


def _skipped(reason):
    for case, workers, impl in itertools.product(("spmv", "coalesce_sum"), (1,), IMPLS):
        yield {"bench": NAME, "case": f"{case}-{workers}w", "impl": impl, "status": "skipped", "error": reason}


def run(ctx):
    if ctx.is_cuda:
        try:
            need("dask_cuda")
        except Skip as exc:
            yield from _skipped(f"Dask on the GPU: {exc}")
            return
        yield from _skipped("Dask on the GPU: dask_cuda is installed, but the GPU cases are not written yet")
        return
    need("dask", "dask")
    size = ctx.size or SIZES[ctx.quick]
    rng = np.random.default_rng(SEED)
    m = _spmv_matrix(size, rng)
    x = rng.random(m.shape[0])
    spmv_expected = m @ x
    coords, data, shape = _coalesce_input(size, rng)
    import scipy.sparse as sp
    whole = sp.coo_array((data, (coords[0], coords[1])), shape=shape).tocsr()
    colsum_expected = np.asarray(whole.sum(axis=0)).ravel()
    ctx.log(f"dask: SpMV matrix {m.shape[0]} x {m.shape[1]}, {m.nnz} entries; coalesce input {coords.shape[1]} "
            f"entries in {shape}")
    medians = {}
    for workers in WORKERS:
        try:
            cluster, client = _cluster(workers)
        except Skip as exc:
            for case in ("spmv", "coalesce_sum"):
                for impl in IMPLS:
                    yield {"bench": NAME, "case": f"{case}-{workers}w", "impl": impl, "status": "skipped",
                           "error": str(exc)}
            return
        try:
            yield from _run_cases(ctx, client, workers, m, x, spmv_expected, coords, data, shape,
                                  colsum_expected, size, medians)
        finally:
            client.close()
            cluster.close()


def _run_cases(ctx, client, workers, m, x, spmv_expected, coords, data, shape, colsum_expected, size, medians):
    import dask.array as da
    X = da.from_array(x[:, None], chunks=-1).persist()  # (n, 1): Dask's SciPy tensordot needs 2-D
    for case in ("spmv", "coalesce_sum"):
        rows = {}
        for impl in IMPLS:
            row = {"bench": NAME, "case": f"{case}-{workers}w", "impl": impl, "status": "ok",
                   "workers": workers, "entries": size}

            def make(impl=impl, case=case):
                if case == "spmv":
                    blocks, meta = _spmv_blocks(impl, m)
                    A = _dask_array(blocks, m.shape, meta).persist()
                    return (lambda: da.tensordot(A, X, axes=1).compute()[:, 0]), None
                blocks, meta = _coalesce_blocks(impl, coords, data, shape)
                C = _dask_array(blocks, shape, meta).persist()
                work = _colsum(impl)
                lazy = C.map_blocks(work, chunks=((1,) * len(blocks), (shape[1],)), dtype=np.float64,
                                    meta=np.empty((0, 0))).sum(axis=0)
                return (lambda: lazy.compute()), None

            expected = spmv_expected if case == "spmv" else colsum_expected

            def check(got, row, expected=expected):
                got = np.asarray(got)
                if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-9, atol=1e-9):
                    return "result differs from SciPy's on the whole matrix"
                return None
            _report.measure(row, make, check, ctx)
            rows[impl] = row
        ours = rows["gpusparse"].get("median_s")
        for impl, row in rows.items():
            if "median_s" in row:
                medians[(case, workers, impl)] = row["median_s"]
                one = medians.get((case, 1, impl))
                if workers > 1 and one:
                    row["scaling"] = one / row["median_s"]
            yield _report.finish(row, ctx, _describe, _rates, ours)


def _rates(row, seconds):
    row["entries_per_s"] = row["entries"] / seconds


def _describe(row):
    return _report.progress(row, entries=True)


def summarize(rows):
    """Median per case and chunk type, ``speedup`` over pydata sparse and SciPy, and 1 -> 2 worker scaling."""
    cells = {(r["case"], r["impl"]): r for r in rows if r.get("status") == "ok"}
    cases = sorted({r["case"] for r in rows})
    body = []
    for case in cases:
        ours = cells.get((case, "gpusparse"))
        if ours is None:
            continue
        line = [case, _report.ms(ours["median_s"])]
        for peer in ("sparse", "scipy"):
            other = cells.get((case, peer))
            line.append(f"{_report.ms(other['median_s'])} ({other['median_s'] / ours['median_s']:.1f}x)"
                        if other else "-")
        line.append(f"{ours['scaling']:.2f}x" if "scaling" in ours else "-")
        body.append(line)
    head = ["case (workers)", "gpusparse", "pydata sparse (speedup)", "SciPy (speedup)", "gpusparse 1->2 workers"]
    return _report.table(head, body) + "\n\nSpeedup: peer time / gpusparse time on the same Dask graph.\n"
