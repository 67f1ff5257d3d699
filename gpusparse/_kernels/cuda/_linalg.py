"""CUDA products: SpMV, SpMM, SpGEMM through cuSPARSE where it applies, hand-written kernels elsewhere.

Dispatch, per call, on what cuSPARSE takes (``_cusparse.SUPPORT``):

* ``spmv`` / ``spmm``: float and complex values go to cuSPARSE's generic
  SpMV / SpMM, with the dense operands in the order they have (row-major
  or column-major, no copy). Integer values run ``gs_csr_spmm``
  (``cuda_kernels/spmm.cu``); a transposed integer product first transposes
  the CSR matrix on the device (a radix sort of the entries), so no atomics
  are needed for 8- and 16-bit integers.
* ``spgemm``: cuSPARSE's SpGEMM for float and complex values with int32
  indices (int64 from CUDA 13); otherwise an expand-sort-compress product
  built from the sort and segment primitives, with a
  :class:`~gpusparse.GpuSparseEfficiencyWarning` saying what to change.
* ``sddmm`` and ``spmm_reduce``: always the hand-written kernels
  (``sddmm.cu``, ``spmm.cu``): CuPy binds no cusparseSDDMM, and cuSPARSE has
  no reduced SpMM. ``spmm_reduce`` is load-balanced: rows are cut into
  chunks of at most :data:`SPMM_REDUCE_CHUNK` entries, so a long row is
  folded by many threads.

Memory safety whatever the values of ``indptr`` and ``indices`` holds for
the hand-written kernels and the expand-sort-compress product (pointers
clipped into ``[0, nnz]``, indices clipped into range, see
``gpusparse._kernels``). cuSPARSE does not check its operands: a pointer
past ``nnz`` or a column out of range makes it read outside the buffers, an
illegal address that ends every later CUDA call of the process. So a
structure goes to cuSPARSE only after :func:`_checked_structure` has checked
it on the device (``gs_csr_check``: one read of ``indptr`` and ``indices``,
about a third of the traffic of a float64 SpMV, and one synchronisation for
the answer), and cuSPARSE is handed the very arrays that were checked; a
malformed or non-canonical one (built with ``check=False``, or whose
buffers the caller changed) takes the hand-written kernels. A *trusted*
structure skips that check (:func:`_structure_for_cusparse`): the very
``indptr`` and ``indices`` objects recorded by
:func:`gpusparse._trusted.trust_structure` for the stored shape
-- buffers only the library holds, validated or produced by its kernels
(see :attr:`gpusparse.CSR.structure_trusted`). Then ``spmv`` and ``spmm``
synchronise nothing; otherwise the check is their only synchronisation.
``spgemm`` also reads its output size on the host (documented in the
primitive's specification), and records its output as trusted: the
expand-sort-compress product clips every key into the shape, and cuSPARSE
only sees checked or trusted operands, so either output is canonical and
inside its shape.
"""

from __future__ import annotations

import numpy as np

import gpusparse._memory as _memory
from gpusparse._placement import Device
from gpusparse._errors import warn_efficiency
from gpusparse._trusted import is_trusted_structure, trust_structure
import gpusparse._kernels.cuda._cusparse as _cusparse
import gpusparse._kernels.cuda._grid as _grid
from gpusparse._kernels.cuda._backend import cupy, get_function

__all__ = ["sddmm", "spgemm", "spmm", "spmm_reduce", "spmv"]

_THREADS = 256
_I64 = np.dtype(np.int64)
_REDUCE_CODES = {"sum": 0, "mean": 1, "max": 2, "min": 3}
#: Blocks of gs_csr_check (grid-stride; enough to saturate the memory system).
_CHECK_MAX_BLOCKS = 4096


def _blocks(n: int, per_block: int = _THREADS) -> int:
    # Clamped to the gridDim.x limit: every product kernel is grid-stride.
    return _grid.blocks(n, per_block)


def _index_pair(indptr, indices):
    """indptr and indices with one index dtype (int32 or int64), C-contiguous."""
    dtype = np.dtype(np.int32) if indptr.dtype == indices.dtype == np.int32 else _I64
    return (cupy.ascontiguousarray(indptr, dtype=dtype), cupy.ascontiguousarray(indices, dtype=dtype))


def _scalar(value, dtype):
    return np.array(value).astype(dtype)[()]


def _refused(routine, exc):
    warn_efficiency(f"cuSPARSE {routine} refused these operands ({exc}); gpusparse's own kernel "
                    "runs instead (C-contiguous operands and int32 indices are the safest for cuSPARSE)")


def _checked_structure(indptr, indices, n_rows, n_cols):
    """The CSR structure ``(indptr, indices)`` as cuSPARSE may be handed it, or None where it may not.

    Returns the very arrays that ``gs_csr_check`` read -- C-contiguous and
    ``_cusparse.ALIGNMENT``-aligned (a copy where the given ones are not) --
    so that the caller hands cuSPARSE exactly what was checked: ``indptr``
    of ``n_rows + 1`` entries from 0 to ``nnz``, never decreasing, every
    index in ``[0, n_cols)``, the indices strictly increasing within each
    row (canonical, as SpGEMM assumes), both of one index dtype. None for
    anything else. One pass of ``gs_csr_check`` and one synchronisation.
    """
    n_rows, n_cols, nnz = int(n_rows), int(n_cols), int(indices.shape[0])
    if indptr.shape != (n_rows + 1,) or indptr.dtype != indices.dtype:
        return None
    indptr, indices = (a if a.flags.c_contiguous and _cusparse.aligned(a) else a.copy(order="C")
                       for a in (indptr, indices))
    invalid = cupy.zeros(1, dtype=np.int32)
    items = max(n_rows + 1, nnz)
    kernel = get_function("compress", "gs_csr_check", (indptr.dtype,))
    kernel((min(_blocks(items), _CHECK_MAX_BLOCKS),), (_THREADS,),
           (indptr, np.int64(n_rows), indices, np.int64(nnz), np.int64(n_cols), invalid))
    if int(invalid.get()[0]):  # sync: cuSPARSE or the bounds-safe kernel?
        return None
    return indptr, indices


def _trusted(indptr, indices, n_rows, n_cols) -> bool:
    """Whether ``(indptr, indices)`` are a trusted CSR structure of ``(n_rows, n_cols)`` (no device work)."""
    return is_trusted_structure(indptr, indices, (n_rows, n_cols))


def _structure_for_cusparse(indptr, indices, n_rows, n_cols, trusted=None):
    """The CSR structure to hand cuSPARSE, or None where the bounds-safe kernels must run.

    A trusted structure (``trusted``, by default looked up for these very
    arrays) is returned without a check: no launch and no synchronisation
    (C-contiguous, aligned copies where the arrays are not; its index
    dtypes must match, as cuSPARSE's descriptor wants). Anything else goes
    through :func:`_checked_structure`.
    """
    if trusted is None:
        trusted = _trusted(indptr, indices, n_rows, n_cols)
    if trusted and indptr.dtype == indices.dtype and indptr.shape == (int(n_rows) + 1,):
        return tuple(a if a.flags.c_contiguous and _cusparse.aligned(a) else a.copy(order="C")
                     for a in (indptr, indices))
    return _checked_structure(indptr, indices, n_rows, n_cols)


def _trusted_output(indptr, indices, data, n_rows, n_cols):
    """Record a product's output structure (allocated here, canonical, in its shape) as trusted."""
    trust_structure(indptr, indices, (n_rows, n_cols))
    return indptr, indices, data


def _as_index(arr, dtype):
    """``arr`` as a C-contiguous array of the index ``dtype``; a narrowing cast saturates, never wraps.

    An int64 index past int32 becomes the int32 extreme on its side: still
    out of range, so the structure check refuses it instead of reading a
    wrapped, valid-looking index.
    """
    dtype = np.dtype(dtype)
    if arr.dtype != dtype and not np.can_cast(arr.dtype, dtype, casting="safe"):
        info = np.iinfo(dtype)
        arr = cupy.clip(arr, arr.dtype.type(max(info.min, np.iinfo(arr.dtype).min)),
                        arr.dtype.type(min(info.max, np.iinfo(arr.dtype).max)))
    return cupy.ascontiguousarray(arr, dtype=dtype)


def _scale_in_place(out, beta):
    if beta == 0:
        out.fill(0)
    else:
        out *= _scalar(beta, out.dtype)


# --------------------------------------------------------------------------
# transposing a CSR matrix (the integer fallback of op(A) = A.T)
# --------------------------------------------------------------------------

def _transpose_csr(indptr, indices, data, shape):
    """The CSR arrays of ``A.T`` for the CSR ``A`` of ``shape``: a stable radix sort by column.

    Keys of indices out of range are clipped into ``[0, m * n)`` by the sort,
    so the transposed structure is always inside its shape.
    """
    import gpusparse._kernels.cuda._primitives as k
    m, n = (int(s) for s in shape)
    nnz = int(indices.shape[0])
    rows = k.expand(indptr, nnz)
    keys = indices.astype(_I64) * m + rows
    bits = max(m * n - 1, 0).bit_length()
    sorted_keys, perm = k._sort_pairs(keys, None, bits, m * n - 1)
    t_rows = sorted_keys // m  # the columns of A: the rows of A.T
    t_cols = sorted_keys - t_rows * m
    # int32 pointers cannot hold an nnz past 2**31 - 1 (nor int32 indices a dimension past it).
    index_dtype = indices.dtype if max(nnz, m, n) <= np.iinfo(np.int32).max else _I64
    t_indptr = k.compress(t_rows, n, index_dtype)
    return t_indptr, t_cols.astype(index_dtype), cupy.take(data, perm)


# --------------------------------------------------------------------------
# SpMV, SpMM
# --------------------------------------------------------------------------

def _spmm_kernel(indptr, indices, data, shape, b, out, alpha, beta, trans):
    """The hand-written path: op(A) @ b with C-ordered b and out (copies if needed)."""
    if trans != "N":
        if trans == "H" and data.dtype.kind == "c":
            data = cupy.conj(data)
        indptr, indices, data = _transpose_csr(indptr, indices, data, shape)
    indptr, indices = _index_pair(indptr, indices)
    b = cupy.ascontiguousarray(b)
    target = out if out.flags.c_contiguous else cupy.ascontiguousarray(out)
    m, n = target.shape
    dtype = data.dtype
    kernel = get_function("spmm", "gs_csr_spmm", (dtype, indptr.dtype))
    kernel((_blocks(m * n),), (_THREADS,),
           (indptr, indices, cupy.ascontiguousarray(data), np.int64(indices.size), b, np.int64(b.shape[0]),
            target, np.int64(m), np.int64(n), _scalar(alpha, dtype), _scalar(beta, dtype), np.int32(beta != 0)))
    if target is not out:
        out[...] = target


def spmv(indptr, indices, data, shape, x, y, alpha=1, beta=0, trans="N"):
    """CSR (indptr, indices, data) of ``shape``; x, y 1-D contiguous of data's dtype; not validated."""
    if y.size == 0:
        return
    if indices.shape[0] == 0 or x.size == 0:
        _scale_in_place(y, beta)
        return
    # cuSPARSE writes y in place: an unaligned y (a view) takes our kernel.
    checked = None
    # nnz >= 2**31: cuSPARSE only with int64 indices and a release that takes it (else our kernel).
    if (_cusparse.supports("spmv", data.dtype, indptr.dtype, indices.dtype, trans=trans, nnz=indices.shape[0])
            and _cusparse.aligned(y)):
        checked = _structure_for_cusparse(indptr, indices, shape[0], shape[1])
    if checked is not None:
        try:
            _cusparse.spmv(*checked, data, shape, x, y, alpha, beta, trans)
            return
        except _cusparse.library_error() as exc:  # refused before computing: run our kernel
            _refused("SpMV", exc)
    _spmm_kernel(indptr, indices, data, shape, x.reshape(-1, 1), y.reshape(-1, 1), alpha, beta, trans)


def spmm(indptr, indices, data, shape, b, out, alpha=1, beta=0, trans="N"):
    """CSR of ``shape``; b (k, n) and out (m, n) C- or F-contiguous, data's dtype; not validated."""
    if out.size == 0:
        return
    if indices.shape[0] == 0 or b.shape[0] == 0:
        _scale_in_place(out, beta)
        return
    checked = None
    if (_cusparse.supports("spmm", data.dtype, indptr.dtype, indices.dtype, trans=trans, nnz=indices.shape[0])
            and _cusparse.aligned(out)):
        checked = _structure_for_cusparse(indptr, indices, shape[0], shape[1])
    if checked is not None:
        order = "C" if out.flags.c_contiguous else "F"
        if not (b.flags.c_contiguous if order == "C" else b.flags.f_contiguous):
            b = cupy.asarray(b, order=order)  # cuSPARSE wants B and C in one order
        try:
            _cusparse.spmm(*checked, data, shape, b, out, alpha, beta, trans)
            return
        except _cusparse.library_error() as exc:  # refused before computing: run our kernel
            _refused("SpMM", exc)
    _spmm_kernel(indptr, indices, data, shape, b, out, alpha, beta, trans)


# --------------------------------------------------------------------------
# SpMM with a reduction, SDDMM
# --------------------------------------------------------------------------

#: Row entries per chunk of the load-balanced ``spmm_reduce``: a row of more entries is
#: folded by several threads per output column, then its partial results by one.
SPMM_REDUCE_CHUNK = 128


def spmm_reduce(indptr, indices, data, shape, b, op):
    """Canonical CSR of ``shape``; b (k, n) C-contiguous of data's dtype; op in sum/mean/max/min; not validated."""
    import gpusparse._kernels.cuda._primitives as k
    m, n = int(shape[0]), int(b.shape[1])
    if b.shape[0] == 0 or indices.shape[0] == 0:  # no term to read: every row is empty
        return cupy.zeros((m, n), dtype=data.dtype)
    out = cupy.empty((m, n), dtype=data.dtype)
    if out.size == 0:
        return out
    indptr, indices = _index_pair(indptr, indices)
    nnz, chunk = int(indices.size), SPMM_REDUCE_CHUNK
    # Chunks per row, and slots of partial results for the rows of several chunks (no sync: the
    # grid and the partials are sized by bounds the host knows -- at most m + nnz / chunk chunks,
    # and rows of several chunks have more than ``chunk`` entries, so at most 2 nnz / chunk slots).
    chunks, spilled = cupy.empty(m, dtype=_I64), cupy.empty(m, dtype=_I64)
    counts = get_function("spmm", "gs_csr_chunk_counts", (indptr.dtype,))
    counts((_blocks(m),), (_THREADS,), (indptr, np.int64(nnz), np.int64(m), np.int64(chunk), chunks, spilled))
    chunk_ptr, slot_ptr = k.offsets(chunks), k.offsets(spilled)
    chunk_bound, slot_bound = m + nnz // chunk + 1, 2 * (nnz // chunk) + 2
    partial = cupy.empty((slot_bound, n), dtype=data.dtype)
    key = (data.dtype, indptr.dtype, _REDUCE_CODES[op])
    data, b = cupy.ascontiguousarray(data), cupy.ascontiguousarray(b)
    fold_chunks = get_function("spmm", "gs_csr_spmm_reduce_chunks", key)
    fold_chunks((_blocks(chunk_bound * n),), (_THREADS,),
                (indptr, indices, data, np.int64(nnz), b, np.int64(b.shape[0]), chunk_ptr, slot_ptr,
                 np.int64(chunk), np.int64(chunk_bound), np.int64(slot_bound), partial, out, np.int64(m),
                 np.int64(n)))
    fold_rows = get_function("spmm", "gs_csr_spmm_reduce_rows", key)
    fold_rows((_blocks(m * n),), (_THREADS,),
              (indptr, indices, data, np.int64(nnz), b, np.int64(b.shape[0]), chunk_ptr, slot_ptr,
               np.int64(chunk_bound), np.int64(slot_bound), partial, out, np.int64(m), np.int64(n)))
    return out


def sddmm(indptr, indices, a, bt, alpha=1):
    """CSR pattern (indptr, indices) of an (m, n) matrix; a (m, k), bt (n, k) C-contiguous, one dtype; not validated."""
    import gpusparse._kernels.cuda._primitives as k
    nnz = int(indices.shape[0])
    dtype = a.dtype
    if a.shape[0] == 0 or bt.shape[0] == 0:  # no row to read: every product is empty
        return cupy.zeros(nnz, dtype=dtype)
    out = cupy.empty(nnz, dtype=dtype)
    if nnz == 0:
        return out
    rows = k.expand(indptr, nnz)
    indices = cupy.ascontiguousarray(indices)
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(_I64)
    kernel = get_function("sddmm", "gs_sddmm", (dtype, indices.dtype))
    a, bt = cupy.ascontiguousarray(a), cupy.ascontiguousarray(bt)
    per_block = _THREADS // 32  # one warp per entry
    for first, count in _grid.launches(nnz, per_block):  # several launches past 2**31 - 1 blocks
        kernel((count,), (_THREADS,),
               (rows, indices, a, np.int64(a.shape[0]), bt, np.int64(bt.shape[0]), np.int64(nnz),
                np.int64(a.shape[1]), _scalar(alpha, dtype), np.int64(first * per_block), out))
    return out


# --------------------------------------------------------------------------
# SpGEMM
# --------------------------------------------------------------------------

def _empty_product(m, dtype):
    return cupy.zeros(m + 1, dtype=np.int32), cupy.empty(0, dtype=np.int32), cupy.empty(0, dtype=dtype)


def _spgemm_esc(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
    """Expand every product term, radix-sort the terms by (row, column), sum the runs.

    Safe whatever the structures hold: A's rows come from ``expand`` (in
    range), its columns are clipped into ``[0, k)``, B's pointers into
    ``[0, nnz_b]`` with empty rows where an end precedes its start (so at
    most ``nnz_a * nnz_b`` terms, never a negative count), and the sort
    clips the product keys into ``[0, m * n)``.
    """
    import gpusparse._kernels.cuda._primitives as k
    m, k_dim, n = (int(s) for s in shape)
    nnz_a, nnz_b = int(a_indices.shape[0]), int(b_indices.shape[0])
    if m == 0 or n == 0 or k_dim == 0 or b_indptr.size < 2:  # no product term can exist
        return _empty_product(m, a_data.dtype)
    a_rows = k.expand(a_indptr, nnz_a)
    a_cols = cupy.clip(a_indices.astype(_I64), 0, min(k_dim, b_indptr.size - 1) - 1)
    b_ptr = cupy.clip(b_indptr.astype(_I64), 0, nnz_b)
    starts = cupy.take(b_ptr, a_cols)
    counts = cupy.maximum(cupy.take(b_ptr, a_cols + 1) - starts, 0)
    ptr = cupy.zeros(nnz_a + 1, dtype=_I64)
    cupy.cumsum(counts, out=ptr[1:])
    total = int(ptr[-1])  # the number of product terms (spgemm may synchronise)
    if total == 0:
        return _empty_product(m, a_data.dtype)
    # every term: sources, keys, the sort's keys and permutation, segment ids (int64), two values
    _memory.require(total * (8 * 8 + 2 * a_data.dtype.itemsize), Device("cuda", cupy.cuda.runtime.getDevice()),
                    f"the product terms ({total:.3g}) of a ({m}, {k_dim}) by ({k_dim}, {n}) product")
    src_a = k.expand(ptr, total)
    src_b = cupy.take(starts, src_a) + (cupy.arange(total, dtype=_I64) - cupy.take(ptr, src_a))
    keys = cupy.take(a_rows, src_a) * n + cupy.take(b_indices, src_b).astype(_I64)
    values = cupy.take(a_data, src_a) * cupy.take(b_data, src_b)
    sorted_keys, perm = k._sort_pairs(keys, None, max(m * n - 1, 0).bit_length(), m * n - 1)
    ids = k.segment_ids(sorted_keys)
    n_out = min(int(ids[-1]) + 1, total)  # the output size (run heads: at most the terms)
    seg = k.segment_starts(ids, n_out)
    out_values = k.segment_reduce(values.reshape(-1, 1), seg, "sum", perm).reshape(-1)
    out_keys = cupy.take(sorted_keys, seg[:-1])
    rows = out_keys // n
    index_dtype = np.int32 if max(m, n, n_out) <= np.iinfo(np.int32).max else _I64
    indptr = k.compress(rows, m, index_dtype)
    return indptr, (out_keys - rows * n).astype(index_dtype), out_values


def spgemm(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
    """Two CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; not validated.

    The output structure is recorded as trusted (see the module notes).
    """
    m, k_dim, n = (int(s) for s in shape)
    return _trusted_output(*_spgemm(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape), m, n)


def _spgemm(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape):
    m = int(shape[0])
    dtype = a_data.dtype
    if a_indices.shape[0] == 0 or b_indices.shape[0] == 0:
        return _empty_product(m, dtype)
    index_dtype = np.dtype(np.int32) if max(int(s) for s in shape) <= np.iinfo(np.int32).max else _I64
    if index_dtype == np.int32 and (a_indices.dtype == _I64 or b_indices.dtype == _I64):
        nnz_fits = max(int(a_indices.shape[0]), int(b_indices.shape[0])) <= np.iinfo(np.int32).max
        index_dtype = np.dtype(np.int32) if nnz_fits else _I64
    if _cusparse.supports("spgemm", dtype, index_dtype,
                          nnz=max(int(a_indices.shape[0]), int(b_indices.shape[0]))):
        m, k_dim, n = (int(s) for s in shape)
        # Trust is of the arrays given; a cast of a trusted structure keeps its values (index_dtype holds
        # every dimension and nnz), so it is trusted too.
        a_trusted = _trusted(a_indptr, a_indices, m, k_dim)
        b_trusted = _trusted(b_indptr, b_indices, k_dim, n)
        args = [_as_index(x, index_dtype) for x in (a_indptr, a_indices, b_indptr, b_indices)]
        # Checked after the (saturating) cast, and cuSPARSE gets the checked arrays.
        a_checked = _structure_for_cusparse(args[0], args[1], m, k_dim, trusted=a_trusted)
        b_checked = (_structure_for_cusparse(args[2], args[3], k_dim, n, trusted=b_trusted)
                     if a_checked is not None else None)
        if b_checked is None:
            return _spgemm_esc(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape)
        try:
            return _cusparse.spgemm(*a_checked, a_data, *b_checked, b_data, shape)
        except _cusparse.library_error() as exc:  # e.g. not enough memory for its work estimation
            _refused("SpGEMM", exc)
            return _spgemm_esc(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape)
    if dtype.kind in "fc":
        warn_efficiency(
            "sparse @ sparse with int64 indices has no cuSPARSE SpGEMM before CUDA 13; gpusparse "
            "expands and sorts every product term instead (slower, more memory)"
        )
    else:
        warn_efficiency(
            f"sparse @ sparse of {dtype.name} values has no cuSPARSE SpGEMM; gpusparse expands "
            "and sorts every product term instead (cast to float64 for cuSPARSE where the values allow)"
        )
    return _spgemm_esc(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape)
