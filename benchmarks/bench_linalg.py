"""Products against peers: SpMV and SpMM (N = 1, 8, 64, 256), ``mm(reduce=)``, SpGEMM ``A @ A`` and SDDMM.

Matrices (float64 values, int32 indices, canonical CSR, built offline from a
seed; the classic SuiteSparse names cannot be downloaded here):

``stencil``
    The 2-D 5-point Laplacian on a ``side x side`` grid (FEM-like, 5 per row).
``uniform``
    16 entries per row at uniformly random columns (gather-latency bound).
``rmat``
    Graph500 R-MAT / Kronecker, (A, B, C) = (0.57, 0.19, 0.19), edge factor
    16, labels permuted, duplicates summed (power-law rows and columns).
``skew``
    8 uniform entries per row plus 16 rows holding 10 % of the entries
    together (load imbalance, circuit5M-like).

CPU rows (full size): 2**21 rows for SpMV (2**22 for the stencil, a
2048 x 2048 grid); SpMM keeps the dense operands
near 256 MiB each, so larger ``N`` runs on fewer rows; SpGEMM on 2**17 to
2**18 rows; SDDMM with ``K = 32`` on 2**20 rows. GPU rows are 4 to 8 times
larger. ``--quick`` shrinks everything to a smoke test.

Implementations, timed in this process on the same arrays after a check of
their result against SciPy's:

* ``gpusparse``: ``A @ X`` on a :class:`gpusparse.CSR` (SpMV/SpMM),
  ``gpusparse.mm(A, X, reduce=)`` (row-reduced SpMM, ``N = 8``, sum and max, on the
  ``rmat`` and ``skew`` matrices at the SpGEMM sizes, against ``torch.sparse.mm(...,
  reduce=)`` on the CPU and against gpusparse's own plain ``A @ X`` -- cuSPARSE SpMM on a
  GPU -- as ``gpusparse-spmm``, the yardstick of the sum),
  ``A @ A`` (SpGEMM), ``gpusparse.sampled_addmm`` (SDDMM), the matrix built
  from host arrays, so its structure is trusted; on a GPU also
  ``gpusparse-shared``: SpMV/SpMM on a CSR that keeps the caller's device
  buffers (``check=False``), which the structure check guards before every
  cuSPARSE call (its ``speedup`` is the cost of that check).
* CPU peers: ``scipy`` (single-threaded), ``mkl`` (``sparse_dot_mkl``,
  MKL's sparse BLAS, as many threads as Numba uses; skipped where it does
  not load; for SpGEMM ``mkl`` leaves the columns of each output row
  unsorted, as SciPy does, and ``mkl-sorted`` asks MKL for sorted rows
  (``reorder_output=True``), the canonical CSR gpusparse returns),
  ``torch`` (CPU CSR tensors, same thread count) and
  ``graphblas`` (SuiteSparse:GraphBLAS through ``python-graphblas``,
  ``mxv`` / ``mxm`` with the ``plus_times`` semiring on a full dense
  operand, same thread count; see :mod:`benchmarks._graphblas`). SDDMM also
  against ``numpy`` (a vectorised gather: ``einsum`` over ``a[rows]``,
  ``bt[cols]``; skipped where those would exceed ``GATHER_BUDGET``).
* GPU peers: ``cupyx`` (cuSPARSE through CuPy), ``torch`` (CUDA CSR),
  ``jax`` (``BCOO`` products under ``jit``).

Rows carry the median, GFLOP/s (``2 nnz N`` for SpMV/SpMM, ``2 x`` product
terms for SpGEMM, ``2 nnz K`` for SDDMM), bandwidth against the compulsory
traffic model (SpMV/SpMM
``Z(V+I) + (m+1)I + nNV + mNV``; SDDMM ``Z(2I+V) + (m+n)KV``) and as a
percentage of the copy bandwidth measured in the same run, and ``speedup``
(peer time / gpusparse time: above 1, gpusparse is faster).

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run)
'gpusparse ok in 26 of 26 cases'
"""

from __future__ import annotations

import functools
import glob
import math
import os
import sys

import numpy as np

from benchmarks import _graphblas, _report
from benchmarks._report import Skip, need

__all__ = ["run", "summarize"]

NAME = "linalg"
MATRICES = ("stencil", "uniform", "rmat", "skew")
SPMM_N = (1, 8, 64, 256)
SDDMM_K = 32
SEED = 20240611
INDEX_BYTES = 4
VALUE_BYTES = 8
# rows of the SpMV matrices, the SpMM dense-operand budget (bytes per operand),
# SpGEMM rows and SDDMM rows, per (cuda, quick). The stencil gets twice the
# rows (a 2048 x 2048 grid, against random matrices of 2**21 rows).
STENCIL_SCALE = 2
#: Bytes the vectorised-gather SDDMM peer (numpy / cupy) may materialise, per (cuda,).
GATHER_BUDGET = {False: 4 * 2**30, True: 32 * 2**30}
SIZES = {
    (False, False): {"spmv": 2**21, "dense_budget": 2**28, "spgemm": 2**17, "sddmm": 2**20},
    (False, True): {"spmv": 2**12, "dense_budget": 2**18, "spgemm": 2**10, "sddmm": 2**10},
    (True, False): {"spmv": 2**24, "dense_budget": 2**31, "spgemm": 2**20, "sddmm": 2**22},
    (True, True): {"spmv": 2**14, "dense_budget": 2**22, "spgemm": 2**12, "sddmm": 2**12},
}


# --------------------------------------------------------------------------
# matrices (SciPy CSR on the host, int32 indices, canonical)
# --------------------------------------------------------------------------

def _canonical(m):
    import scipy.sparse as sp
    m = sp.csr_matrix(m)
    m.sum_duplicates()
    m.sort_indices()
    m.indices = m.indices.astype(np.int32)
    m.indptr = m.indptr.astype(np.int32)
    return m


def _stencil(rows, rng):
    import scipy.sparse as sp
    side = max(2, round(math.sqrt(rows)))
    t = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(side, side), dtype=np.float64)
    off = sp.diags([-1.0, -1.0], [-1, 1], shape=(side, side), dtype=np.float64)
    eye = sp.identity(side, dtype=np.float64)
    return _canonical(sp.kron(eye, t) + sp.kron(off, eye))


def _from_coo(rows, cols, n, rng):
    import scipy.sparse as sp
    data = rng.random(rows.size) + 0.5
    return _canonical(sp.coo_matrix((data, (rows, cols)), shape=(n, n)))


def _uniform(n, rng, per_row=16):
    rows = np.repeat(np.arange(n, dtype=np.int64), per_row)
    return _from_coo(rows, rng.integers(0, n, rows.size), n, rng)


def _rmat(n, rng, edge_factor=16):
    scale = max(1, round(math.log2(n)))
    n = 2**scale
    m = edge_factor * n
    a, b, c = 0.57, 0.19, 0.19
    # One float32 draw per edge and bit picks the quadrant: [0, a) top left, [a, a+b) top right,
    # [a+b, a+b+c) bottom left, the rest bottom right.
    ii = np.zeros(m, dtype=np.int64)
    jj = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        q = rng.random(m, dtype=np.float32)
        ii_bit = q >= a + b
        jj_bit = ((q >= a) & ~ii_bit) | (q >= a + b + c)
        ii |= ii_bit.astype(np.int64) << bit
        jj |= jj_bit.astype(np.int64) << bit
    perm = rng.permutation(n)
    return _from_coo(perm[ii], perm[jj], n, rng)


def _skew(n, rng, per_row=8, heavy_rows=16, heavy_share=0.1):
    base_rows = np.repeat(np.arange(n, dtype=np.int64), per_row)
    heavy_total = int(heavy_share * n * per_row / (1 - heavy_share))
    heavy = rng.choice(n, size=min(heavy_rows, n), replace=False)
    extra_rows = np.repeat(heavy, max(1, heavy_total // heavy.size))
    rows = np.concatenate([base_rows, extra_rows])
    return _from_coo(rows, rng.integers(0, n, rows.size), n, rng)


_MAKERS = {"stencil": _stencil, "uniform": _uniform, "rmat": _rmat, "skew": _skew}
_CACHE: dict = {}


def matrix(kind, rows):
    """The SciPy CSR test matrix ``kind`` with about ``rows`` rows (cached)."""
    key = (kind, rows)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _MAKERS[kind](rows, np.random.default_rng([SEED, MATRICES.index(kind), rows]))
    return _CACHE[key]


# --------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------

def spmm_bytes(m, n, nnz, N, index_bytes=INDEX_BYTES, value_bytes=VALUE_BYTES):
    """Compulsory SpMV/SpMM traffic: ``Z(V+I) + (m+1)I + nNV + mNV``.

    Examples
    --------
    >>> spmm_bytes(m=10, n=10, nnz=50, N=1)
    804
    """
    return nnz * (value_bytes + index_bytes) + (m + 1) * index_bytes + (n + m) * N * value_bytes


def sddmm_bytes(m, n, nnz, K, index_bytes=INDEX_BYTES, value_bytes=VALUE_BYTES):
    """Compulsory SDDMM traffic: the pattern, both dense factors once, the values written."""
    return nnz * (index_bytes + value_bytes) + (m + 1) * index_bytes + (m + n) * K * value_bytes


def product_terms(a, b):
    """The number of scalar products of the SpGEMM ``a @ b`` (SciPy CSR)."""
    lengths = np.diff(b.indptr).astype(np.int64)
    return int(lengths[a.indices].sum())


# --------------------------------------------------------------------------
# peers
# --------------------------------------------------------------------------

def _threads():
    return _graphblas.threads()


def _mkl():
    if "MKL_RT" not in os.environ:
        found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))
        if found:
            os.environ["MKL_RT"] = found[-1]
    try:
        import sparse_dot_mkl
    except Exception as exc:  # noqa: BLE001 (MKL's library fails to load in many ways)
        raise Skip(f"sparse_dot_mkl does not load ({type(exc).__name__}: {str(exc)[:80]})") from None
    sparse_dot_mkl.mkl_set_num_threads(_threads())
    return sparse_dot_mkl


def _torch(ctx):
    torch = need("torch")
    if ctx.is_cuda and not torch.cuda.is_available():
        raise Skip("torch has no CUDA")
    if not ctx.is_cuda:
        _graphblas.hold_torch(torch)
    return torch


def _to_torch_csr(torch, a, ctx, xp_arrays=None):
    if ctx.is_cuda:
        ip, ix, d = xp_arrays
        return torch.sparse_csr_tensor(torch.from_dlpack(ip), torch.from_dlpack(ix), torch.from_dlpack(d),
                                       a.shape, check_invariants=False)
    return torch.sparse_csr_tensor(torch.from_numpy(a.indptr), torch.from_numpy(a.indices),
                                   torch.from_numpy(a.data), a.shape, check_invariants=False)


def _torch_dense(torch, x):
    return torch.from_dlpack(x) if not isinstance(x, np.ndarray) else torch.from_numpy(x)


class _Operands:
    """One matrix and its dense operands on the benchmark's device."""

    def __init__(self, a, ctx):
        import gpusparse as gs
        self.host, self.ctx = a, ctx
        xp = ctx.xp
        self.arrays = tuple(xp.asarray(v) for v in (a.indptr, a.indices, a.data))
        # The library's own copy of the structure, checked once: trusted, so the
        # products hand it to cuSPARSE without the per-product structure check.
        self.gs = gs.CSR(a.indptr, a.indices, a.data, shape=a.shape, device=ctx.device)
        # The caller's device buffers kept without a copy: untrusted, checked before every product.
        self.shared = gs.CSR(*self.arrays, shape=a.shape, check=False)


def _spmm_impls(ctx):
    """``{name: factory(op, X) -> fn}`` for SpMV/SpMM on this device."""

    def ours(op, x):
        a = op.gs
        return lambda: a @ x

    def ours_shared(op, x):
        a = op.shared
        return lambda: a @ x

    def scipy_impl(op, x):
        a = op.host
        return lambda: a @ x

    def mkl_impl(op, x):
        mkl = _mkl()
        a = op.host
        return lambda: mkl.dot_product_mkl(a, x)

    def torch_impl(op, x):
        torch = _torch(ctx)
        a, xt = _to_torch_csr(torch, op.host, ctx, op.arrays), _torch_dense(torch, x)
        return lambda: a @ xt

    def graphblas_impl(op, x):
        gb = _graphblas.module()
        a, xg = _graphblas.from_csr(op.host), _graphblas.dense(x)
        plus_times = gb.semiring.plus_times
        if x.ndim == 1:
            return lambda: _graphblas.wait(a.mxv(xg, plus_times).new())
        return lambda: _graphblas.wait(a.mxm(xg, plus_times).new())

    def cupyx_impl(op, x):
        csp = need("cupyx.scipy.sparse", "cupyx")
        a = csp.csr_matrix((op.arrays[2], op.arrays[1], op.arrays[0]), shape=op.host.shape)
        a.has_canonical_format = True
        return lambda: a @ x

    def jax_impl(op, x):
        jax = need("jax")
        jsparse = need("jax.experimental.sparse", "jax")
        jax.config.update("jax_enable_x64", True)  # float64 as the others; JAX computes in float32 otherwise
        if not any(d.platform == "gpu" for d in jax.devices()):
            raise Skip("jax sees no GPU")
        a = jsparse.BCOO.from_scipy_sparse(op.host)
        xj = jax.device_put(np.asarray(x.get()))
        f = jax.jit(lambda m, v: m @ v)
        return lambda: f(a, xj).block_until_ready()

    if ctx.is_cuda:
        # gpusparse-shared: the same product on caller-owned buffers, which the
        # structure check guards on every call (the cost of an untrusted structure).
        return {"gpusparse": ours, "gpusparse-shared": ours_shared, "cupyx": cupyx_impl, "torch": torch_impl,
                "jax": jax_impl}
    return {"gpusparse": ours, "scipy": scipy_impl, "mkl": mkl_impl, "torch": torch_impl,
            "graphblas": graphblas_impl}


def _spgemm_impls(ctx):
    def ours(op):
        a = op.gs
        return lambda: a @ a

    def scipy_impl(op):
        a = op.host
        return lambda: a @ a

    def mkl_impl(op):
        mkl = _mkl()
        a = op.host
        return lambda: mkl.dot_product_mkl(a, a)

    def mkl_sorted_impl(op):
        mkl = _mkl()
        a = op.host
        return lambda: mkl.dot_product_mkl(a, a, reorder_output=True)

    def torch_impl(op):
        torch = _torch(ctx)
        a = _to_torch_csr(torch, op.host, ctx, op.arrays)
        return lambda: a @ a

    def graphblas_impl(op):
        gb = _graphblas.module()
        a = _graphblas.from_csr(op.host)
        plus_times = gb.semiring.plus_times
        return lambda: _graphblas.wait(a.mxm(a, plus_times).new())

    def cupyx_impl(op):
        csp = need("cupyx.scipy.sparse", "cupyx")
        a = csp.csr_matrix((op.arrays[2], op.arrays[1], op.arrays[0]), shape=op.host.shape)
        a.has_canonical_format = True
        return lambda: a @ a

    if ctx.is_cuda:
        return {"gpusparse": ours, "cupyx": cupyx_impl, "torch": torch_impl}
    return {"gpusparse": ours, "scipy": scipy_impl, "mkl": mkl_impl, "mkl-sorted": mkl_sorted_impl,
            "torch": torch_impl, "graphblas": graphblas_impl}


def _sddmm_impls(ctx):
    def ours(op, a, b):
        from gpusparse.ops.linalg import sampled_addmm
        x = op.gs
        return lambda: sampled_addmm(x, a, b, beta=0.0)

    def numpy_impl(op, a, b):
        xp = ctx.xp
        gathered = 2 * op.host.nnz * a.shape[1] * a.dtype.itemsize
        budget = GATHER_BUDGET[ctx.is_cuda]
        if gathered > budget:  # (with the einsum's operands in memory at once: the host ran out at 2**20 uniform rows)
            raise Skip(f"a[rows] and bt[cols] would take {gathered / 2**30:.1f} GiB, over the "
                       f"{budget / 2**30:.0f} GiB allowed to this peer")
        rows = xp.asarray(np.repeat(np.arange(op.host.shape[0]), np.diff(op.host.indptr)))
        cols = op.arrays[1]
        bt = xp.ascontiguousarray(b.T)
        return lambda: xp.einsum("ij,ij->i", a[rows], bt[cols])

    def torch_impl(op, a, b):
        torch = _torch(ctx)
        x = _to_torch_csr(torch, op.host, ctx, op.arrays)
        ta, tb = _torch_dense(torch, a), _torch_dense(torch, b)
        return lambda: torch.sparse.sampled_addmm(x, ta, tb, beta=0.0)

    return {"gpusparse": ours, ("cupy" if ctx.is_cuda else "numpy"): numpy_impl, "torch": torch_impl}


# --------------------------------------------------------------------------
# checks and measurement
# --------------------------------------------------------------------------

def _host(x):
    if type(x).__module__.startswith("graphblas"):
        return _graphblas.to_numpy(x)
    if hasattr(x, "todense") and hasattr(x, "format") and not hasattr(x, "get"):
        x = x.todense()
    if hasattr(x, "to_dense") and hasattr(x, "layout"):  # torch
        x = x.to_dense()
    if hasattr(x, "cpu") and hasattr(x, "numpy"):
        return x.cpu().numpy()
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)


def _close(got, ref, bound):
    got = np.asarray(got).reshape(ref.shape)
    return bool(np.all(np.abs(got - ref) <= 1e-9 * (bound + 1.0)))


def _sparse_values(result):
    """``(indptr, indices, data)`` of a sparse result of any library, on the host, canonical."""
    import scipy.sparse as sp
    if type(result).__module__.startswith("graphblas"):
        result = _graphblas.to_csr(result)
    if hasattr(result, "crow_indices") and hasattr(result, "layout"):  # torch
        parts = (result.crow_indices(), result.col_indices(), result.values())
        ip, ix, d = (p.cpu().numpy() for p in parts)
        m = sp.csr_matrix((d, ix, ip), shape=tuple(result.shape))
    elif hasattr(result, "indptr") and hasattr(result, "get"):  # cupyx
        m = result.get()
    elif hasattr(result, "indptr") and hasattr(result, "device"):  # gpusparse
        arrays = [_host(v) for v in (result.indptr, result.indices, result.data)]
        m = sp.csr_matrix((arrays[2], arrays[1], arrays[0]), shape=result.shape)
    else:
        m = sp.csr_matrix(result)
    m.sum_duplicates()
    return m


def _progress(row) -> str:
    if row["status"] != "ok":
        return f"  {row['case']:<26} {row['impl']:<10} {row['status']}: {row.get('error', '')}"
    extra = f"{row['gflop_s']:7.2f} GF/s" + (f" {row['gb_s']:6.2f} GB/s" if "gb_s" in row else "")
    speed = f"  x{row['speedup']:.2f}" if "speedup" in row else ""
    return f"  {row['case']:<26} {row['impl']:<10} {row['median_s'] * 1e3:9.3f} ms {extra}{speed}"


def _add_rates(row, t):
    row["gflop_s"] = row["flops"] / t / 1e9
    if row.get("model_bytes"):
        _report.add_bandwidth(row, row["model_bytes"], t, suffix="")


def _unchecked(factory, *args):
    return factory(*args), None


def _run(ctx, base, impls, args, check):
    """Yield the rows of one case: ``factory(*args)`` of every implementation measured, gpusparse's first."""
    rows = ((dict(base, impl=name, status="ok"), functools.partial(_unchecked, factory, *args))
            for name, factory in impls.items())
    yield from _report.run_sequential(ctx, rows, check, _progress, _add_rates)


# --------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------

def _spmm_cases(ctx, sizes):
    xp = ctx.xp
    impls = _spmm_impls(ctx)
    for kind in MATRICES:
        for N in SPMM_N:
            rows = sizes["spmv"] * (STENCIL_SCALE if kind == "stencil" else 1)
            if N > 1:
                rows = min(rows, max(64, sizes["dense_budget"] // (N * VALUE_BYTES)))
            a = matrix(kind, rows)
            m, n = a.shape
            op = _Operands(a, ctx)
            rng = np.random.default_rng([SEED, N])
            x_host = rng.random(n) if N == 1 else rng.random((n, N))
            ref = a @ x_host
            bound = abs(a) @ np.abs(x_host)
            x = xp.asarray(x_host)
            case = f"{'spmv' if N == 1 else 'spmm'}-{kind}-N{N}"
            base = {"bench": NAME, "case": case, "op": "spmv" if N == 1 else "spmm", "matrix": kind,
                    "N": N, "rows": m, "cols": n, "nnz": int(a.nnz),
                    "flops": 2 * int(a.nnz) * N, "model_bytes": spmm_bytes(m, n, int(a.nnz), N)}
            base["copy_gb_s"] = _report.copy_gb_s(ctx, base["model_bytes"] // 2)

            def check(out, row, ref=ref, bound=bound):
                return None if _close(_host(out), ref, bound) else "result differs from SciPy's"

            yield from _run(ctx, base, impls, (op, x), check)
            del op, x


#: Dense columns and reductions of the row-reduced SpMM cases (torch's ``sparse.mm(..., reduce=)``).
REDUCE_N = 8
REDUCES = ("sum", "max")


def _reduce_reference(a, x, reduce):
    """``reduce`` over each row's terms ``a[i, k] * x[k, :]`` (0 for an empty row), one column at a time."""
    out = np.zeros((a.shape[0], x.shape[1]))
    lengths = np.diff(a.indptr)
    rows = np.flatnonzero(lengths)
    ufunc = np.add if reduce == "sum" else np.maximum
    for c in range(x.shape[1]):
        terms = a.data * x[a.indices, c]
        out[rows, c] = ufunc.reduceat(terms, a.indptr[rows])
    return out


def _spmm_reduce_impls(ctx):
    """``{name: factory(op, x, reduce) -> fn}`` for ``mm(a, x, reduce=)``."""

    def ours(op, x, reduce):
        import gpusparse as gs
        a = op.gs
        return lambda: gs.mm(a, x, reduce=reduce)

    def ours_spmm(op, x, reduce):  # the plain product (cuSPARSE SpMM on a GPU): the target's yardstick
        if reduce != "sum":
            raise Skip("a plain product computes sums only")
        a = op.gs
        return lambda: a @ x

    def torch_impl(op, x, reduce):
        torch = _torch(ctx)
        if ctx.is_cuda:
            raise Skip("torch has no CUDA kernel for sparse.mm(reduce=)")
        a, xt = _to_torch_csr(torch, op.host, ctx, op.arrays), _torch_dense(torch, x)
        name = {"sum": "sum", "max": "amax"}[reduce]
        return lambda: torch.sparse.mm(a, xt, name)

    return {"gpusparse": ours, "gpusparse-spmm": ours_spmm, "torch": torch_impl}


def _spmm_reduce_cases(ctx, sizes):
    """mm(reduce=) on power-law and skewed rows: the load balance of the row-reduced kernels."""
    xp = ctx.xp
    impls = _spmm_reduce_impls(ctx)
    for kind in ("rmat", "skew"):
        a = matrix(kind, sizes["spgemm"])
        m, n = a.shape
        op = _Operands(a, ctx)
        x_host = np.random.default_rng([SEED, 11]).random((n, REDUCE_N))
        x = xp.asarray(x_host)
        for reduce in REDUCES:
            ref = _reduce_reference(a, x_host, reduce)
            base = {"bench": NAME, "case": f"spmm-reduce-{reduce}-{kind}-N{REDUCE_N}", "op": "spmm_reduce",
                    "matrix": kind, "N": REDUCE_N, "reduce": reduce, "rows": m, "cols": n, "nnz": int(a.nnz),
                    "flops": 2 * int(a.nnz) * REDUCE_N, "model_bytes": spmm_bytes(m, n, int(a.nnz), REDUCE_N)}
            base["copy_gb_s"] = _report.copy_gb_s(ctx, base["model_bytes"] // 2)

            def check(out, row, ref=ref):
                got = out.to_dense() if hasattr(out, "to_dense") else out
                got = got.cpu().numpy() if hasattr(got, "cpu") else _host(got)
                return None if np.allclose(got, ref, rtol=1e-10, atol=1e-12) else "result differs from NumPy's"

            yield from _run(ctx, base, impls, (op, x, reduce), check)
        del op, x


def _spgemm_cases(ctx, sizes):
    impls = _spgemm_impls(ctx)
    for kind in MATRICES:
        rows = sizes["spgemm"] // (4 if kind in ("rmat", "skew") else 1)
        a = matrix(kind, rows)
        op = _Operands(a, ctx)
        ref = a @ a
        ref.sort_indices()
        terms = product_terms(a, a)
        base = {"bench": NAME, "case": f"spgemm-{kind}", "op": "spgemm", "matrix": kind,
                "rows": a.shape[0], "cols": a.shape[1], "nnz": int(a.nnz), "nnz_out": int(ref.nnz),
                "products": terms, "flops": 2 * terms}

        def check(out, row, ref=ref):
            got = _sparse_values(out)
            if got.nnz < ref.nnz:
                return f"{got.nnz} stored entries, SciPy has {ref.nnz}"
            diff = abs(got - ref)
            return None if diff.max() <= 1e-9 * (abs(ref).max() + 1) else "values differ from SciPy's"

        yield from _run(ctx, base, impls, (op,), check)


def _sddmm_cases(ctx, sizes):
    xp = ctx.xp
    impls = _sddmm_impls(ctx)
    for kind in ("stencil", "uniform"):
        a = matrix(kind, sizes["sddmm"])
        m, n = a.shape
        op = _Operands(a, ctx)
        rng = np.random.default_rng([SEED, 7])
        left, right = rng.random((m, SDDMM_K)), rng.random((SDDMM_K, n))
        rows = np.repeat(np.arange(m), np.diff(a.indptr))
        ref = np.einsum("ij,ij->i", left[rows], right.T[a.indices])
        base = {"bench": NAME, "case": f"sddmm-{kind}-K{SDDMM_K}", "op": "sddmm", "matrix": kind, "K": SDDMM_K,
                "rows": m, "cols": n, "nnz": int(a.nnz), "flops": 2 * int(a.nnz) * SDDMM_K,
                "model_bytes": sddmm_bytes(m, n, int(a.nnz), SDDMM_K)}
        base["copy_gb_s"] = _report.copy_gb_s(ctx, base["model_bytes"] // 2)
        la, rb = xp.asarray(left), xp.asarray(right)

        def check(out, row, ref=ref):
            if hasattr(out, "values") and callable(out.values) and hasattr(out, "layout"):
                got = out.values().cpu().numpy()
            elif hasattr(out, "data") and hasattr(out, "indptr"):
                got = _host(out.data)
            else:
                got = _host(out)
            return None if np.allclose(got, ref, rtol=1e-10) else "values differ from NumPy's"

        yield from _run(ctx, base, impls, (op, la, rb), check)


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring.

    ``ctx.size`` (when set) overrides the SpMV rows (the other sizes scale with it).
    """
    sizes = dict(SIZES[(ctx.is_cuda, ctx.quick)])
    size = getattr(ctx, "size", None)
    if size:
        scale = size / sizes["spmv"]
        sizes = {k: max(16, int(v * scale)) for k, v in sizes.items()}
    yield from _spmm_cases(ctx, sizes)
    yield from _spmm_reduce_cases(ctx, sizes)
    yield from _spgemm_cases(ctx, sizes)
    yield from _sddmm_cases(ctx, sizes)


# --------------------------------------------------------------------------
# reports
# --------------------------------------------------------------------------

def summarize(rows) -> str:
    """One line per case: gpusparse's time and GFLOP/s, and every peer's speedup."""
    cases, peers = _report.by_case(rows)
    head = ["case", "rows", "nnz", "gpusparse ms", "GF/s", "GB/s", "% copy"] + [f"vs {p}" for p in peers]
    body = []
    for case, by_impl in cases.items():
        ours = by_impl.get("gpusparse", {})
        if ours.get("status") != "ok":
            cells = [case, "", "", ours.get("status", "-"), "", "", ""]
        else:
            cells = [case, str(ours["rows"]), str(ours["nnz"]), f"{ours['median_s'] * 1e3:.3g}",
                     f"{ours['gflop_s']:.3g}", f"{ours['gb_s']:.3g}" if "gb_s" in ours else "",
                     f"{ours['pct_copy']:.0f}" if "pct_copy" in ours else ""]
        for p in peers:
            r = by_impl.get(p)
            if r is None:
                cells.append("")
            elif "speedup" in r:
                cells.append(f"{r['speedup']:.2f}x")
            else:
                cells.append(r.get("status", ""))
        body.append(cells)
    return _report.table(head, body) + "\n\n*vs peer*: the peer's time / gpusparse's time (above 1: gpusparse is faster)."
