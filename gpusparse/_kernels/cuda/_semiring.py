"""Launches of ``cuda_kernels/semiring.cu``: products over a semiring, with a mask.

Sparse x dense is one thread per output (``gs_semiring_spmm``). Sparse x
sparse is expand-sort-reduce: a counting pass over A's entries (masked
terms excluded), their running total sizes the term buffers (the one
synchronisation), the terms are written, radix-sorted by ``row * n +
column`` (stable) and each run is reduced in term order. The index
arrays are passed as int64 (one instantiation per value dtype and
semiring instead of two).
"""

from __future__ import annotations

import numpy as np

from gpusparse._kernels import SEMIRING_ADD, SEMIRING_MUL, semiring_identity
import gpusparse._kernels.cuda._grid as _grid
from gpusparse._kernels.cuda._backend import cupy, get_function

__all__ = ["semiring_codes", "spgemm_semiring", "spmm_semiring"]

_I64 = np.dtype(np.int64)
_THREADS = 256
#: A null pointer kernel argument (an 8-byte zero).
_NULL = np.uint64(0)


def _blocks(n: int) -> int:
    # Clamped to the gridDim.x limit: every semiring kernel is grid-stride.
    return _grid.blocks(n, _THREADS)


def semiring_codes(add, mul):
    """The template codes of ``add`` and ``mul`` (positions in SEMIRING_ADD / SEMIRING_MUL)."""
    return SEMIRING_ADD.index(add), SEMIRING_MUL.index(mul)


def _i64(arr):
    return cupy.ascontiguousarray(cupy.asarray(arr), dtype=_I64)


def spmm_semiring(indptr, indices, data, shape, b, add, mul, allowed=None):
    """Canonical CSR of ``shape`` (m, k); b (k, n) C-contiguous of data's dtype; allowed None or (m, n) bool C-contiguous; not validated."""
    dtype = data.dtype
    m, n = int(shape[0]), int(b.shape[1])
    if m * n == 0:
        return cupy.empty((m, n), dtype=dtype)
    if b.shape[0] == 0 or indices.shape[0] == 0:  # no term anywhere
        return cupy.full((m, n), semiring_identity(add, dtype), dtype=dtype)
    out = cupy.empty((m, n), dtype=dtype)
    add_code, mul_code = semiring_codes(add, mul)
    kernel = get_function("semiring", "gs_semiring_spmm", (dtype, _I64, add_code, mul_code))
    use_mask = allowed is not None
    kernel((_blocks(m * n),), (_THREADS,),
           (_i64(indptr), _i64(indices), cupy.ascontiguousarray(data), np.int64(indices.shape[0]),
            cupy.ascontiguousarray(b), np.int64(b.shape[0]),
            cupy.ascontiguousarray(allowed, dtype=np.bool_) if use_mask else _NULL, np.int32(use_mask),
            out, np.int64(m), np.int64(n)))
    return out


def _empty_product(m, dtype):
    return cupy.zeros(m + 1, dtype=np.int32), cupy.empty(0, dtype=np.int32), cupy.empty(0, dtype=dtype)


def spgemm_semiring(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape, add, mul,
                    mask_indptr=None, mask_indices=None, complement=False):
    """Two canonical CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; mask a canonical CSR structure of (m, n) or None; not validated.

    Needs ``m * n < 2**63`` (the term keys). Synchronises once to size the
    terms and once to read the number of outputs.
    """
    import gpusparse._kernels.cuda._primitives as k
    m, k_dim, n = (int(s) for s in shape)
    dtype = a_data.dtype
    nnz_a, nnz_b = int(a_indices.shape[0]), int(b_indices.shape[0])
    if m == 0 or n == 0 or k_dim == 0 or nnz_a == 0 or nnz_b == 0 or b_indptr.shape[0] < 2:
        return _empty_product(m, dtype)
    k_rows = min(k_dim, int(b_indptr.shape[0]) - 1)
    add_code, mul_code = semiring_codes(add, mul)
    use_mask = mask_indptr is not None
    if use_mask:
        m_ptr, m_idx = _i64(mask_indptr), _i64(mask_indices)
        m_nnz = int(m_idx.shape[0])
    else:
        m_ptr, m_idx, m_nnz = _NULL, _NULL, 0
    a_ptr, a_idx, b_ptr, b_idx = _i64(a_indptr), _i64(a_indices), _i64(b_indptr), _i64(b_indices)
    a_data, b_data = cupy.ascontiguousarray(a_data), cupy.ascontiguousarray(b_data)
    rows = k.expand(a_ptr, nnz_a)
    counts = cupy.empty(nnz_a, dtype=_I64)
    mask_args = (m_ptr, m_idx, np.int64(m_nnz), np.int32(use_mask), np.int32(bool(complement)))
    count = get_function("semiring", "gs_semiring_count", (_I64,))
    count((_blocks(nnz_a),), (_THREADS,),
          (rows, a_idx, np.int64(nnz_a), b_ptr, b_idx, np.int64(nnz_b), np.int64(k_rows), np.int64(n),
           *mask_args, counts))
    offsets = k.offsets(counts)
    total = int(offsets[-1])  # sync: the number of terms sizes the buffers
    if total == 0:
        return _empty_product(m, dtype)
    keys = cupy.empty(total, dtype=_I64)
    values = cupy.empty(total, dtype=dtype)
    expand = get_function("semiring", "gs_semiring_expand", (dtype, _I64, mul_code))
    expand((_blocks(nnz_a),), (_THREADS,),
           (rows, a_idx, a_data, np.int64(nnz_a), b_ptr, b_idx, b_data, np.int64(nnz_b), np.int64(k_rows),
            np.int64(n), *mask_args, offsets, np.int64(total), keys, values))
    sorted_keys, perm = k._sort_pairs(keys, None, max(m * n - 1, 0).bit_length(), m * n - 1)
    ids = k.segment_ids(sorted_keys)
    n_out = min(int(ids[-1]) + 1, total)  # sync: the number of outputs
    starts = k.segment_starts(ids, n_out)
    out_values = cupy.empty(n_out, dtype=dtype)
    reduce = get_function("semiring", "gs_semiring_reduce", (dtype, add_code))
    reduce((_blocks(n_out),), (_THREADS,),
           (values, perm, np.int64(total), starts, np.int64(n_out), out_values))
    out_keys = cupy.take(sorted_keys, starts[:-1])
    out_rows = out_keys // n
    index_dtype = np.int32 if max(m, n, n_out) <= np.iinfo(np.int32).max else _I64
    indptr = k.compress(out_rows, m, index_dtype)
    return indptr, (out_keys - out_rows * n).astype(index_dtype), out_values
