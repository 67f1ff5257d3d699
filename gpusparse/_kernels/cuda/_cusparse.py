"""Every cuSPARSE touch point: generic-API SpMV, SpMM and SpGEMM on CSR, through CuPy's bindings.

Only the generic API is used (``cusparseSpMV``, ``cusparseSpMM``,
``cusparseSpGEMM_*``), with dense operands described in the order they
already have: a C-contiguous matrix is ``CUSPARSE_ORDER_ROW`` with
``ld = n_cols``, an F-contiguous one ``CUSPARSE_ORDER_COL`` with
``ld = n_rows``. Nothing is copied to Fortran order (CuPy's own
``cupyx.cusparse.spmm`` does copy). The bindings are CuPy's
(``cupy_backends.cuda.libs.cusparse``), imported on first use, so importing
this module needs no cuSPARSE library.

What each routine takes (:data:`SUPPORT`; everything else goes to the
hand-written kernels of ``cuda_kernels/spmm.cu`` / ``sddmm.cu`` or, for
SpGEMM, an expand-sort-compress path):

=========  ==========================  ================  ======================  =========================
routine    values                      indices           ops on the sparse A     dense operands
=========  ==========================  ================  ======================  =========================
SpMV       float32/64, complex64/128   int32 or int64    N, T, H                 contiguous vectors
SpMM       float32/64, complex64/128   int32 or int64    N, T, H                 C or F order (same for B, C)
SpGEMM     float32/64, complex64/128   int32 (int64 from CUDA 13)  N only         --
SDDMM      not bound by CuPy's cusparse module: the hand-written ``gs_sddmm`` runs instead
=========  ==========================  ================  ======================  =========================

More than 2**31 - 1 stored entries: the CSR descriptor then takes int64
``indptr`` and indices (``CUSPARSE_INDEX_64I``; int32 pointers cannot hold
such an nnz, and :func:`supports` refuses them), and SpMV / SpMM go to
cuSPARSE only from the cuSPARSE of CUDA 12.8 (library version 12.5.7,
``cusparseGetVersion`` 12507, :data:`LARGE_NNZ_MIN_VERSION`): earlier
releases fail there, so the hand-written kernels (64-bit throughout) run
instead. SpGEMM's operands and output are int64 whenever an nnz or a
dimension passes int32 (``_linalg``), which needs CUDA 13 as above.

Integer and bool values have no uniform-precision cuSPARSE routine (only
int8 inputs with int32 outputs, which is not NumPy's int8 product). When
``beta == 0`` the output is zeroed before the call, so that uninitialised
memory (NaN bit patterns) can never leak into ``0 * y``. Index pointer and
indices must share one index type (cuSPARSE's CSR descriptor takes one
each, but mixed types are not documented as supported): callers pass
matching types.

Every function synchronises nothing except :func:`spgemm`, whose workflow
reads the output size on the host (``cusparseSpMatGetSize``).
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["ALIGNMENT", "LARGE_NNZ", "LARGE_NNZ_MIN_VERSION", "SUPPORT", "aligned", "available", "large_nnz_supported",
           "library_error", "spgemm", "spmm", "spmv", "supports", "version"]

_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
_INT32 = np.dtype(np.int32)
_INT64 = np.dtype(np.int64)

#: ``routine -> (value dtypes, index dtypes, sparse ops)``; SpGEMM's int64 indices need CUDA 13.
SUPPORT = {
    "spmv": (_FLOATS, frozenset((_INT32, _INT64)), frozenset("NTH")),
    "spmm": (_FLOATS, frozenset((_INT32, _INT64)), frozenset("NTH")),
    "spgemm": (_FLOATS, frozenset((_INT32,)), frozenset("N")),
}
_SPGEMM_INT64_RUNTIME = 13000

#: The first nnz past int32 (2**31): only CUSPARSE_INDEX_64I describes such a matrix.
LARGE_NNZ = 2**31
#: The first cuSPARSE (``cusparseGetVersion``: major * 1000 + minor * 100 + patch) whose SpMV and SpMM
#: are taken with ``nnz >= LARGE_NNZ``: 12.5.7, the cuSPARSE of CUDA 12.8. Earlier ones fail there.
LARGE_NNZ_MIN_VERSION = 12507
_LARGE_NNZ_ROUTINES = frozenset(("spmv", "spmm"))


@functools.cache
def _lib():
    from cupy_backends.cuda.libs import cusparse
    return cusparse


#: The address alignment cuSPARSE's generic API asks of every array it reads or writes.
ALIGNMENT = 16


def aligned(*arrays) -> bool:
    """Whether every (non-empty) device array starts on an ``ALIGNMENT``-byte boundary.

    Views (a CSR row slice, a column of a matrix) need not: cudaMalloc's
    allocations are 256-byte aligned, their interiors are not.
    """
    return all(a.size == 0 or int(a.data.ptr) % ALIGNMENT == 0 for a in arrays)


def _aligned_inputs(*arrays):
    """Each array, or an aligned copy of it (inputs only: a copy of an output would be lost)."""
    return [a if aligned(a) else a.copy() for a in arrays]


@functools.cache
def available() -> bool:
    """Whether CuPy's cuSPARSE bindings load; never on the emulated CUDA device.

    Where they do not, every product takes gpusparse's own kernels.
    """
    from gpusparse._kernels.cuda._backend import EMULATED
    if EMULATED:
        return False
    try:
        _lib()
    except Exception:  # ImportError, or OSError from a missing libcusparse
        return False
    return True


@functools.cache
def _runtime_version() -> int:
    import cupy
    return int(cupy.cuda.runtime.runtimeGetVersion())


@functools.cache
def version() -> int:
    """The cuSPARSE library's version (``cusparseGetVersion``: 12507 for 12.5.7); 0 where unknown."""
    try:
        return int(_lib().getVersion(_handle()))
    except Exception:  # no binding or no handle: treated as the oldest release
        return 0


def supports(routine: str, value_dtype, *index_dtypes, trans: str = "N", nnz: int = 0) -> bool:
    """Whether cuSPARSE's ``routine`` takes these value and index dtypes and sparse op, with ``nnz`` stored entries.

    ``nnz >= LARGE_NNZ`` needs int64 indices, and for SpMV / SpMM a cuSPARSE
    of at least :data:`LARGE_NNZ_MIN_VERSION`.
    """
    values, indices, ops = SUPPORT[routine]
    if not available():
        return False
    index_dtypes = [np.dtype(d) for d in index_dtypes]
    if np.dtype(value_dtype) not in values or trans not in ops:
        return False
    if len(set(index_dtypes)) > 1:
        return False
    if not large_nnz_supported(routine, nnz, *index_dtypes):
        return False
    if routine == "spgemm" and index_dtypes and index_dtypes[0] == _INT64:
        return _runtime_version() >= _SPGEMM_INT64_RUNTIME
    return all(d in indices for d in index_dtypes)


def large_nnz_supported(routine: str, nnz: int, *index_dtypes, cusparse_version: "int | None" = None) -> bool:
    """Whether ``nnz`` stored entries with these index dtypes may go to cuSPARSE's ``routine`` (no device query
    below :data:`LARGE_NNZ`; ``cusparse_version`` overrides :func:`version`)."""
    if int(nnz) < LARGE_NNZ:
        return True
    if any(np.dtype(d) != _INT64 for d in index_dtypes):  # int32 pointers cannot hold this nnz
        return False
    if routine in _LARGE_NNZ_ROUTINES:
        return (version() if cusparse_version is None else int(cusparse_version)) >= LARGE_NNZ_MIN_VERSION
    return True


# --------------------------------------------------------------------------
# handle, types, descriptors
# --------------------------------------------------------------------------

class _Unavailable(Exception):
    """Never raised: what ``library_error`` names where cuSPARSE does not load."""


def library_error():
    """The exception class CuPy's cuSPARSE bindings raise (``CuSparseError``).

    Safe in an ``except`` clause whether or not the bindings load.
    """
    return _lib().CuSparseError if available() else _Unavailable


def _handle():
    """CuPy's cuSPARSE handle of the current device, bound to the current stream."""
    import cupy
    handle = cupy.cuda.device.get_cusparse_handle()
    _lib().setStream(handle, cupy.cuda.get_current_stream().ptr)
    return handle


def _cuda_dtype(dtype) -> int:
    from cupy._core import _dtype
    return _dtype.to_cuda_dtype(np.dtype(dtype))


def _index_type(dtype) -> int:
    lib = _lib()
    return lib.CUSPARSE_INDEX_32I if np.dtype(dtype) == _INT32 else lib.CUSPARSE_INDEX_64I


def _op(trans: str) -> int:
    lib = _lib()
    return {"N": lib.CUSPARSE_OPERATION_NON_TRANSPOSE, "T": lib.CUSPARSE_OPERATION_TRANSPOSE,
            "H": lib.CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE}[trans]


def _host_scalar(value, dtype):
    """A host array holding ``value`` as ``dtype`` (kept alive by the caller: cuSPARSE reads its address)."""
    return np.array(value, dtype=dtype)


class _Descriptors:
    """Creates cuSPARSE descriptors and destroys every one of them on exit."""

    def __init__(self):
        self._made = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for destroy, desc in reversed(self._made):
            destroy(desc)
        self._made.clear()
        return False

    def csr(self, indptr, indices, data, shape, nnz=None):
        lib = _lib()
        n_rows, n_cols = (int(s) for s in shape)
        nnz = int(indices.shape[0]) if nnz is None else nnz
        desc = lib.createCsr(
            n_rows, n_cols, nnz, indptr.data.ptr, indices.data.ptr if nnz else 0,
            data.data.ptr if nnz else 0, _index_type(indptr.dtype), _index_type(indices.dtype),
            lib.CUSPARSE_INDEX_BASE_ZERO, _cuda_dtype(data.dtype),
        )
        self._made.append((lib.destroySpMat, desc))
        return desc

    def vector(self, arr):
        lib = _lib()
        desc = lib.createDnVec(int(arr.size), arr.data.ptr, _cuda_dtype(arr.dtype))
        self._made.append((lib.destroyDnVec, desc))
        return desc

    def matrix(self, arr, order: str):
        """A dense descriptor of ``arr`` read in ``order`` ("C": row-major, "F": column-major).

        The order is the caller's: an array that is both C- and F-contiguous
        (one row or one column) must be described in the order of the other
        dense operand, which cuSPARSE requires to match.
        """
        lib = _lib()
        rows, cols = (int(s) for s in arr.shape)
        if order == "C" and arr.flags.c_contiguous:
            order, ld = lib.CUSPARSE_ORDER_ROW, max(cols, 1)
        elif order == "F" and arr.flags.f_contiguous:
            order, ld = lib.CUSPARSE_ORDER_COL, max(rows, 1)
        else:
            raise ValueError(f"cuSPARSE dense operand is not {order}-contiguous")
        desc = lib.createDnMat(rows, cols, ld, arr.data.ptr, _cuda_dtype(arr.dtype), order)
        self._made.append((lib.destroyDnMat, desc))
        return desc


def _workspace(size: int):
    import cupy
    return cupy.empty(max(int(size), 1), dtype=np.int8)


def _alg(*names) -> int:
    lib = _lib()
    for name in names:
        if hasattr(lib, name):
            return getattr(lib, name)
    return 0


# --------------------------------------------------------------------------
# SpMV, SpMM
# --------------------------------------------------------------------------

def spmv(indptr, indices, data, shape, x, y, alpha, beta, trans):
    """``y = alpha * op(A) @ x + beta * y`` with cuSPARSE (preconditions of the ``spmv`` primitive, nnz > 0)."""
    lib = _lib()
    handle = _handle()
    dtype = data.dtype
    indptr, indices, data, x = _aligned_inputs(indptr, indices, data, x)
    if beta == 0:
        y.fill(0)
    a_h, b_h = _host_scalar(alpha, dtype), _host_scalar(beta, dtype)
    alg = _alg("CUSPARSE_SPMV_ALG_DEFAULT", "CUSPARSE_MV_ALG_DEFAULT")
    cdt = _cuda_dtype(dtype)
    with _Descriptors() as d:
        mat, vx, vy = d.csr(indptr, indices, data, shape), d.vector(x), d.vector(y)
        size = lib.spMV_bufferSize(handle, _op(trans), a_h.ctypes.data, mat, vx, b_h.ctypes.data, vy, cdt, alg)
        work = _workspace(size)
        lib.spMV(handle, _op(trans), a_h.ctypes.data, mat, vx, b_h.ctypes.data, vy, cdt, alg, work.data.ptr)


def spmm(indptr, indices, data, shape, b, out, alpha, beta, trans):
    """``out = alpha * op(A) @ b + beta * out`` with cuSPARSE; ``b`` and ``out`` in one order (C or F), nnz > 0."""
    lib = _lib()
    handle = _handle()
    dtype = data.dtype
    indptr, indices, data, b = _aligned_inputs(indptr, indices, data, b)
    if beta == 0:
        out.fill(0)
    a_h, b_h = _host_scalar(alpha, dtype), _host_scalar(beta, dtype)
    alg = _alg("CUSPARSE_SPMM_ALG_DEFAULT", "CUSPARSE_MM_ALG_DEFAULT")
    cdt = _cuda_dtype(dtype)
    op_b = lib.CUSPARSE_OPERATION_NON_TRANSPOSE
    with _Descriptors() as d:
        order = "C" if out.flags.c_contiguous else "F"  # b is in this order too (see the caller)
        mat, mb, mc = d.csr(indptr, indices, data, shape), d.matrix(b, order), d.matrix(out, order)
        size = lib.spMM_bufferSize(handle, _op(trans), op_b, a_h.ctypes.data, mat, mb, b_h.ctypes.data,
                                   mc, cdt, alg)
        work = _workspace(size)
        lib.spMM(handle, _op(trans), op_b, a_h.ctypes.data, mat, mb, b_h.ctypes.data, mc, cdt, alg,
                 work.data.ptr)


# --------------------------------------------------------------------------
# SpGEMM
# --------------------------------------------------------------------------

def spgemm(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
    """``A @ B`` with cuSPARSE's SpGEMM workflow; both operands canonical CSR, one index and value dtype, nnz > 0.

    Returns ``(indptr, indices, data)`` (sorted column indices, as cuSPARSE
    writes them). Synchronises once (``cusparseSpMatGetSize``). Only the
    default algorithm runs: ``CUSPARSE_SPGEMM_ALG2``/``ALG3`` need
    ``cusparseSpGEMM_getNumProducts`` and ``cusparseSpGEMM_estimateMemory``
    in their workflow, so when the default one is refused (for lack of
    memory, say) the ``CuSparseError`` reaches the caller, which runs
    gpusparse's own product instead.
    """
    import cupy
    lib = _lib()
    handle = _handle()
    a_indptr, a_indices, a_data, b_indptr, b_indices, b_data = _aligned_inputs(
        a_indptr, a_indices, a_data, b_indptr, b_indices, b_data)
    m, k, n = (int(s) for s in shape)
    dtype = a_data.dtype
    idx = a_indices.dtype
    cdt = _cuda_dtype(dtype)
    op = lib.CUSPARSE_OPERATION_NON_TRANSPOSE
    a_h, b_h = _host_scalar(1, dtype), _host_scalar(0, dtype)
    c_indptr = cupy.zeros(m + 1, dtype=idx)
    c_empty_idx = cupy.empty(0, dtype=idx)
    c_empty_val = cupy.empty(0, dtype=dtype)
    spgemm_desc = lib.spGEMM_createDescr()
    try:
        with _Descriptors() as d:
            mat_a = d.csr(a_indptr, a_indices, a_data, (m, k))
            mat_b = d.csr(b_indptr, b_indices, b_data, (k, n))
            mat_c = d.csr(c_indptr, c_empty_idx, c_empty_val, (m, n), nnz=0)

            def estimate(alg):
                size = lib.spGEMM_workEstimation(handle, op, op, a_h.ctypes.data, mat_a, mat_b, b_h.ctypes.data,
                                                 mat_c, cdt, alg, spgemm_desc, 0, 0)
                buf = _workspace(size)
                lib.spGEMM_workEstimation(handle, op, op, a_h.ctypes.data, mat_a, mat_b, b_h.ctypes.data,
                                          mat_c, cdt, alg, spgemm_desc, size, buf.data.ptr)
                return buf

            alg = lib.CUSPARSE_SPGEMM_DEFAULT
            buf1 = estimate(alg)
            size2 = lib.spGEMM_compute(handle, op, op, a_h.ctypes.data, mat_a, mat_b, b_h.ctypes.data,
                                       mat_c, cdt, alg, spgemm_desc, 0, 0)
            buf2 = _workspace(size2)
            lib.spGEMM_compute(handle, op, op, a_h.ctypes.data, mat_a, mat_b, b_h.ctypes.data,
                               mat_c, cdt, alg, spgemm_desc, size2, buf2.data.ptr)
            sizes = np.zeros(3, dtype=np.int64)
            lib.spMatGetSize(mat_c, sizes[0:].ctypes.data, sizes[1:].ctypes.data, sizes[2:].ctypes.data)
            nnz = int(sizes[2])
            c_indices = cupy.empty(nnz, dtype=idx)
            c_data = cupy.empty(nnz, dtype=dtype)
            lib.csrSetPointers(mat_c, c_indptr.data.ptr, c_indices.data.ptr, c_data.data.ptr)
            lib.spGEMM_copy(handle, op, op, a_h.ctypes.data, mat_a, mat_b, b_h.ctypes.data,
                            mat_c, cdt, alg, spgemm_desc)
            del buf1, buf2
    finally:
        lib.spGEMM_destroyDescr(spgemm_desc)
    return c_indptr, c_indices, c_data
