"""Semiring products on the CPU: SpMM / SpMV and masked SpGEMM over (add monoid, multiply op).

The monoid and the operator are compile-time constants: the kernel
factories (:func:`_spmm_kernel`, :func:`_spgemm_fill_kernel`) build one
kernel per ``(add, mul)`` pair with the two integer codes frozen in as
closure constants, so LLVM folds the branches of :func:`_combine` and
:func:`_times` away. Each kernel compiles lazily, once per value and
index dtype, and is cached on disk like every other kernel
(``gpusparse._kernels._numba.jit``; a closure over integers only keeps a
stable cache key).

Semantics shared with the CUDA twin (``cuda_kernels/semiring.cu``):

* a product term exists for every stored ``a_ij`` and every stored
  ``b_jc`` (every element of a dense ``b``); an output exists where at
  least one term exists, and holds the monoid's identity otherwise;
* each term is rounded to the value dtype before it is combined
  (integers wrap like NumPy's), so ``min``/``max`` compare what NumPy
  would;
* a reduction starts from its first term; ``min``/``max`` combine like
  C's ``fmin`` / ``fmax`` (a NaN loses to any number), as
  SuiteSparse:GraphBLAS does; ``any`` keeps some term (here the last).

Rows are split into ranges of equal work and run on Numba's threads
(:func:`gpusparse._kernels.cpu._common.row_bounds`).
"""

from __future__ import annotations

import functools

import numpy as np

from gpusparse._kernels import SEMIRING_ADD, SEMIRING_MUL, semiring_identity
from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import (
    PARALLEL_MIN,
    _column,
    _row_bounds,
    _run,
    _structure,
    empty,
    row_bounds,
    row_range,
)
from gpusparse._kernels.cpu._linalg import _sort_columns
from gpusparse._kernels.cpu._select import copy_segments

__all__ = ["spgemm_semiring", "spmm_semiring"]

_ADD = {name: code for code, name in enumerate(SEMIRING_ADD)}
_MUL = {name: code for code, name in enumerate(SEMIRING_MUL)}


@jit()
def _combine(add, acc, v):
    """The add monoid ``add`` (a code of SEMIRING_ADD): ``acc`` holds the earlier terms."""
    if add == 0:  # plus
        return acc + v
    if add == 1:  # min: C's fmin (a NaN loses to any number)
        return v if (v < acc or acc != acc) else acc
    if add == 2:  # max: C's fmax
        return v if (v > acc or acc != acc) else acc
    if add == 3:  # lor
        return acc or v
    return v  # any: some term (the last)


@jit()
def _times(mul, a, b):
    """The multiply operator ``mul`` (a code of SEMIRING_MUL)."""
    if mul == 0:
        return a * b
    if mul == 1:
        return a + b
    if mul == 2:
        return min(a, b)
    if mul == 3:
        return max(a, b)
    if mul == 4:
        return a and b
    if mul == 5:  # pair: 1
        return a == a or a != a
    if mul == 6:  # first
        return a
    return b  # second


@functools.cache
def _spmm_kernel(add, mul):
    @jit()
    def kernel(indptr, indices, data, b, allowed, use_mask, out, identity, part, lo, hi):
        n = b.shape[1]
        nnz = data.shape[0]
        last = np.uintp(max(b.shape[0] - 1, 0))
        term = np.empty(1, dtype=out.dtype)
        for r in range(lo, hi):
            start, end = row_range(indptr, r, nnz)
            ur = np.uintp(r)
            for c in range(n):
                if start == end or (use_mask and not allowed[ur, c]):
                    out[ur, c] = identity
                    continue
                # the reduction starts from the first term (as SuiteSparse's);
                # each term is rounded to the value dtype (integers wrap) before it is combined
                term[0] = _times(mul, data[start], b[_column(indices, start, last), c])
                acc = term[0]
                for p in range(start + 1, end):
                    term[0] = _times(mul, data[p], b[_column(indices, p, last), c])
                    term[0] = _combine(add, acc, term[0])
                    acc = term[0]
                out[ur, c] = acc

    return kernel


def spmm_semiring(indptr, indices, data, shape, b, add, mul, allowed=None):
    """Canonical CSR of ``shape`` (m, k); b (k, n) C-contiguous of data's dtype; allowed None or (m, n) bool C-contiguous; not validated.

    Returns out (m, n) of data's dtype with ``out[i, c]`` the ``add``
    reduction over the stored ``(i, j)`` of ``mul(a_ij, b[j, c])``; the
    identity of ``add`` where row ``i`` is empty or ``allowed[i, c]`` is
    False (those outputs are never computed).

    >>> import numpy as np
    >>> indptr, indices = np.array([0, 2, 2]), np.array([0, 1])
    >>> spmm_semiring(indptr, indices, np.array([1., 5.]), (2, 2), np.array([[3.], [1.]]), "min", "plus")
    array([[ 4.],
           [inf]])
    """
    dtype = data.dtype
    m, n = int(shape[0]), int(b.shape[1])
    out = empty((m, n), dtype=dtype)
    if out.size == 0:
        return out
    use_mask = allowed is not None
    if allowed is None:
        allowed = np.ones((1, 1), dtype=np.bool_)
    indptr = _structure(indptr, indices, b.shape[0])
    bounds = row_bounds(indptr, (int(indptr[-1]) + indptr.size) * max(n, 1))
    kernel = _spmm_kernel(_ADD[add], _MUL[mul])
    _run(kernel, bounds, indptr, indices, data, np.ascontiguousarray(b), allowed, use_mask, out,
         semiring_identity(add, dtype))
    return out


@jit()
def _mark_mask_row(mask_indptr, mask_indices, r, n_cols, stamp):
    m_nnz = mask_indices.shape[0]
    lo, hi = row_range(mask_indptr, r, m_nnz)
    last = np.uintp(n_cols - 1)
    for p in range(lo, hi):
        stamp[_column(mask_indices, p, last)] = r


@jit()
def _spgemm_semiring_count(a_indptr, a_indices, b_indptr, b_indices, n_cols, mask_indptr, mask_indices,
                           mask_mode, counts, part, lo, hi):
    # mask_mode: 0 no mask, 1 structure selects, 2 complement of the structure selects
    seen = np.full(n_cols, -1, dtype=np.int64)
    stamp = np.full(n_cols if mask_mode else 1, -1, dtype=np.int64)
    a_nnz, b_nnz = a_indices.shape[0], b_indices.shape[0]
    k_last, j_last = np.uintp(b_indptr.shape[0] - 2), np.uintp(n_cols - 1)
    for r in range(lo, hi):
        if mask_mode:
            _mark_mask_row(mask_indptr, mask_indices, r, n_cols, stamp)
        c = 0
        a_start, a_end = row_range(a_indptr, r, a_nnz)
        for p in range(a_start, a_end):
            k = _column(a_indices, p, k_last)
            b_start, b_end = row_range(b_indptr, k, b_nnz)
            for q in range(b_start, b_end):
                j = _column(b_indices, q, j_last)
                if mask_mode and (stamp[j] == r) != (mask_mode == 1):
                    continue
                if seen[j] != r:
                    seen[j] = r
                    c += 1
        counts[r + 1] = c


@functools.cache
def _spgemm_fill_kernel(add, mul):
    @jit()
    def kernel(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, c_indptr, c_indices, c_data, n_cols,
               key_bits, mask_indptr, mask_indices, mask_mode, part, lo, hi):
        acc = np.empty(n_cols, dtype=c_data.dtype)
        mark = np.full(n_cols, -1, dtype=np.int64)
        stamp = np.full(n_cols if mask_mode else 1, -1, dtype=np.int64)
        longest = 0
        for r in range(lo, hi):
            longest = max(longest, c_indptr[r + 1] - c_indptr[r])
        tmp = np.empty(longest, dtype=c_indices.dtype)
        counts = np.empty(256, dtype=np.int64)
        term = np.empty(1, dtype=c_data.dtype)
        a_nnz, b_nnz = a_indices.shape[0], b_indices.shape[0]
        k_last, j_last = np.uintp(b_indptr.shape[0] - 2), np.uintp(n_cols - 1)
        for r in range(lo, hi):
            if mask_mode:
                _mark_mask_row(mask_indptr, mask_indices, r, n_cols, stamp)
            start = c_indptr[r]
            stop = c_indptr[r + 1]
            used = start
            a_start, a_end = row_range(a_indptr, r, a_nnz)
            for p in range(a_start, a_end):
                k = _column(a_indices, p, k_last)
                v = a_data[p]
                b_start, b_end = row_range(b_indptr, k, b_nnz)
                for q in range(b_start, b_end):
                    j = _column(b_indices, q, j_last)
                    if mask_mode and (stamp[j] == r) != (mask_mode == 1):
                        continue
                    term[0] = _times(mul, v, b_data[q])
                    if mark[j] != r:
                        if used == stop:  # only if an operand changed since the counting pass
                            continue
                        mark[j] = r
                        c_indices[used] = j
                        acc[j] = term[0]
                        used += 1
                    else:
                        term[0] = _combine(add, acc[j], term[0])
                        acc[j] = term[0]
            _sort_columns(c_indices, start, used, tmp, counts, key_bits)
            for t in range(start, used):
                c_data[t] = acc[np.uintp(c_indices[t])]

    return kernel


@functools.cache
def _spgemm_masked_kernel(add, mul):
    @jit()
    def kernel(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, mask_indptr, mask_indices, n_cols,
               c_indices, c_data, counts, part, lo, hi):
        # One pass per row: the mask row's columns are stamped "selected" (2r),
        # a term reaching a stamped column marks it "reached" (2r + 1) and
        # starts or extends its reduction, then the mask row is walked in its
        # own (sorted) order and the reached columns are written at the mask
        # row's offsets. No counting pass, no sort; the caller closes up the gaps.
        state = np.full(n_cols, -1, dtype=np.int64)
        acc = np.empty(n_cols, dtype=c_data.dtype)
        term = np.empty(1, dtype=c_data.dtype)
        a_nnz, b_nnz, m_nnz = a_indices.shape[0], b_indices.shape[0], mask_indices.shape[0]
        k_last, j_last = np.uintp(b_indptr.shape[0] - 2), np.uintp(n_cols - 1)
        for r in range(lo, hi):
            m_lo, m_hi = row_range(mask_indptr, r, m_nnz)
            counts[np.uintp(r) + 1] = 0
            if m_lo == m_hi:
                continue
            selected = 2 * np.int64(r)
            reached = selected + 1
            for t in range(m_lo, m_hi):
                state[_column(mask_indices, t, j_last)] = selected
            a_start, a_end = row_range(a_indptr, r, a_nnz)
            for p in range(a_start, a_end):
                k = _column(a_indices, p, k_last)
                v = a_data[p]
                b_start, b_end = row_range(b_indptr, k, b_nnz)
                for q in range(b_start, b_end):
                    j = _column(b_indices, q, j_last)
                    s = state[j]
                    if s == reached:
                        term[0] = _times(mul, v, b_data[q])
                        term[0] = _combine(add, acc[j], term[0])
                        acc[j] = term[0]
                    elif s == selected:
                        state[j] = reached
                        term[0] = _times(mul, v, b_data[q])
                        acc[j] = term[0]
            used = m_lo
            for t in range(m_lo, m_hi):
                j = _column(mask_indices, t, j_last)
                if state[j] == reached:
                    state[j] = -1  # a repeated mask column (a malformed mask) is written once
                    c_indices[used] = j
                    c_data[used] = acc[j]
                    used += 1
            counts[np.uintp(r) + 1] = used - m_lo

    return kernel


@jit()
def _masked_row_work(a_indptr, a_indices, b_indptr, b_indices, mask_indptr, mask_indices, work, part, lo, hi):
    # work[r + 1]: the terms of row r (none where the mask's row is empty) plus the mask's row length
    a_nnz, b_nnz, m_nnz = a_indices.shape[0], b_indices.shape[0], mask_indices.shape[0]
    k_last = np.uintp(b_indptr.shape[0] - 2)
    for r in range(lo, hi):
        w = 0
        m_lo, m_hi = row_range(mask_indptr, r, m_nnz)
        if m_hi > m_lo:
            w = m_hi - m_lo
            a_start, a_end = row_range(a_indptr, r, a_nnz)
            for p in range(a_start, a_end):
                k = _column(a_indices, p, k_last)
                b_start, b_end = row_range(b_indptr, k, b_nnz)
                w += b_end - b_start
        work[np.uintp(r) + 1] = w


#: Ranges per thread of the masked product: each range initialises an
#: ``n``-long stamp array, so fewer than the gather kernels' four
#: (2 measured best at 2**16 vertices, R-MAT and grid, 2 threads).
_PER_THREAD = 2


def _spgemm_masked(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, m, n, add, mul,
                   mask_indptr, mask_indices):
    """The masked product (the mask's structure selects) in one pass: outputs at the mask's positions, closed up.

    Rows are split by their terms (a power-law row costs what its terms
    cost), :data:`_PER_THREAD` ranges per thread.
    """
    m_nnz = mask_indices.shape[0]
    work = np.zeros(m + 1, dtype=np.int64)
    _run(_masked_row_work, row_bounds(a_indptr, per_thread=1), a_indptr, a_indices, b_indptr, b_indices,
         mask_indptr, mask_indices, work)
    np.cumsum(work, out=work)
    total = int(work[-1])
    parts = n_threads() * _PER_THREAD if total >= PARALLEL_MIN and n_threads() > 1 else 1
    bounds = _row_bounds(work, max(1, min(parts, max(m, 1))))
    int32_max = np.iinfo(np.int32).max
    wide_dtype = np.int32 if max(m, n, m_nnz) <= int32_max else np.int64  # the outputs fit in the mask's room
    wide_indices = empty(m_nnz, dtype=wide_dtype)
    wide_data = empty(m_nnz, dtype=a_data.dtype)
    counts = np.zeros(m + 1, dtype=np.int64)
    _run(_spgemm_masked_kernel(_ADD[add], _MUL[mul]), bounds, a_indptr, a_indices, a_data, b_indptr,
         b_indices, b_data, mask_indptr, mask_indices, n, wide_indices, wide_data, counts)
    # close up the gaps: row r was written from its mask row's (clipped) start
    indptr64 = np.cumsum(counts)
    nnz = int(indptr64[-1])
    index_dtype = np.int32 if max(m, n, nnz) <= int32_max else np.int64
    indices = empty((nnz, 1), dtype=wide_dtype)
    data = empty((nnz, 1), dtype=a_data.dtype)
    starts = np.clip(mask_indptr[:m].astype(np.int64), 0, m_nnz)
    copy_segments(wide_indices.reshape(-1, 1), starts, indptr64[:m], counts[1:], indices,
                  wide_data.reshape(-1, 1), data)
    return indptr64.astype(index_dtype), indices.reshape(nnz).astype(index_dtype, copy=False), data.reshape(nnz)


def spgemm_semiring(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, shape, add, mul,
                    mask_indptr=None, mask_indices=None, complement=False):
    """Two canonical CSR matrices, (m, k) and (k, n) for ``shape = (m, k, n)``, one value dtype; mask a canonical CSR structure of (m, n) or None; not validated.

    Returns the canonical CSR ``(indptr, indices, data)`` of ``A (add.mul) B``:
    an entry wherever at least one term ``mul(a_ik, b_kj)`` exists, holding
    the ``add`` reduction of the terms. With a mask only the positions in
    its structure (``complement=True``: outside it) are computed. Index
    dtype int32 when the sizes allow, else int64. Gustavson's row-wise
    product with a dense accumulator: a counting pass sizes the output,
    a numeric pass fills it.

    >>> import numpy as np
    >>> ip, ix, d = spgemm_semiring(np.array([0, 2]), np.array([0, 1]), np.array([1, 2]),
    ...                             np.array([0, 1, 2]), np.array([0, 0]), np.array([5, 1]), (1, 2, 1), "min", "plus")
    >>> ip, ix, d
    (array([0, 1], dtype=int32), array([0], dtype=int32), array([3]))
    """
    m, _, n = (int(s) for s in shape)
    a_indptr = _structure(a_indptr, a_indices, min(b_indptr.shape[0] - 1, n))
    if mask_indptr is not None and not complement:
        if n == 0:
            return np.zeros(m + 1, dtype=np.int32), empty(0, dtype=np.int32), empty(0, dtype=a_data.dtype)
        return _spgemm_masked(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, m, n, add, mul,
                              mask_indptr, mask_indices)
    mask_mode = 0 if mask_indptr is None else (2 if complement else 1)
    if mask_indptr is None:
        mask_indptr = np.zeros(m + 1, dtype=np.int64)
        mask_indices = np.zeros(0, dtype=np.int64)
    counts = np.zeros(m + 1, dtype=np.int64)
    work = int(a_indptr[-1]) + int(b_indptr[-1]) + m
    bounds = row_bounds(a_indptr, work)
    _run(_spgemm_semiring_count, bounds, a_indptr, a_indices, b_indptr, b_indices, n, mask_indptr,
         mask_indices, mask_mode, counts)
    indptr64 = np.cumsum(counts)
    nnz = int(indptr64[-1])
    index_dtype = np.int32 if max(m, n, nnz) <= np.iinfo(np.int32).max else np.int64
    indices = empty(nnz, dtype=index_dtype)
    data = empty(nnz, dtype=a_data.dtype)
    kernel = _spgemm_fill_kernel(_ADD[add], _MUL[mul])
    _run(kernel, bounds, a_indptr, a_indices, a_data, b_indptr, b_indices, b_data,
         indptr64, indices, data, n, max(n - 1, 0).bit_length(), mask_indptr, mask_indices, mask_mode)
    return indptr64.astype(index_dtype), indices, data
