"""Layout primitives on the CPU: linear keys, CSR pointers, scatter and gather.

Every kernel here stays inside its buffers whatever the values of its
integer inputs (the memory-safety contract in :mod:`gpusparse._kernels`):
indices are clipped into range before they address memory, writes to a
destination outside the output are dropped, and loops whose bounds come
from data are bounded by the buffers they walk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from gpusparse._kernels import c_strides
from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import PARALLEL_MIN, as_words, empty, read_only


# --------------------------------------------------------------------------
# linearize / delinearize
# --------------------------------------------------------------------------

@jit(parallel=True)
def _linearize(coords, strides, last, out):
    # Coordinates are clipped into [0, shape[k]) (last = shape - 1, at
    # least 0), so every key lies in [0, prod(shape)) whatever coords hold.
    d, n = coords.shape
    for i in prange(n):
        key = np.int64(0)
        for k in range(d):
            key += min(max(coords[k, i], 0), last[k]) * strides[k]
        out[i] = key


def linearize(coords, shape):
    """coords (d, n) int64 in ``shape[:d]``, prod(shape) < 2**63; coordinates out of range are clipped.

    Returns keys (n,) int64 with C-order strides of ``shape``.
    """
    out = empty(coords.shape[1], dtype=np.int64)
    last = np.maximum(np.asarray(shape, dtype=np.int64) - 1, 0)
    _linearize(read_only(coords), np.asarray(c_strides(shape), dtype=np.int64).reshape(-1), last.reshape(-1), out)
    return out


@jit()
def _divmod_exact(key, divisor, reciprocal):
    # key // divisor and key % divisor for 0 <= key < 2**52 through a
    # floating-point reciprocal (an int64 division costs tens of cycles and
    # does not vectorise); the estimate is off by at most one, then fixed.
    q = np.int64(np.float64(key) * reciprocal)
    r = key - q * divisor
    if r < 0:
        q -= 1
        r += divisor
    elif r >= divisor:
        q += 1
        r -= divisor
    return q, r


@jit(parallel=True)
def _delinearize(keys, shape, exact_float, out):
    d = shape.size
    reciprocal = np.empty(d, dtype=np.float64)
    for k in range(d):
        reciprocal[k] = 1.0 / max(shape[k], 1)
    for i in prange(keys.size):
        key = keys[i]
        for k in range(d - 1, 0, -1):
            if exact_float:
                q, r = _divmod_exact(key, shape[k], reciprocal[k])
            else:
                q = key // shape[k]
                r = key - q * shape[k]
            out[k, i] = r
            key = q
        if d > 0:
            out[0, i] = key


def delinearize(keys, shape):
    """keys (n,) int64 in [0, prod(shape)); not validated."""
    out = empty((len(shape), keys.size), dtype=np.int64)
    if keys.size:
        exact_float = math.prod(shape) <= 1 << 52
        _delinearize(keys, np.asarray(shape, dtype=np.int64), exact_float, out)
    return out


# --------------------------------------------------------------------------
# compress / expand
# --------------------------------------------------------------------------

@jit(parallel=True)
def _compress(rows, n_chunks, out):
    # Entry i writes out[r] = i for the rows r it is the first to reach.
    # Rows are clipped into [0, n_rows) and each chunk walks up from the
    # row before it through its running maximum: for sorted rows that is
    # the row itself; for unsorted ones every out[r] is still written (the
    # walk from -1 to n_rows passes every level) and the work stays below
    # n_chunks * n_rows.
    n = rows.size
    n_rows = out.size - 1
    top = n_rows - 1
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        reached = min(max(rows[lo - 1], -1), top) if lo > 0 else -1
        for i in range(lo, min(n, lo + chunk)):
            row = min(max(rows[i], 0), top)
            for r in range(reached + 1, row + 1):
                out[r] = i
            reached = max(reached, row)
    last = min(max(rows[n - 1], -1), top) if n > 0 else -1
    for r in range(last + 1, n_rows + 1):
        out[r] = n


def compress(rows, n_rows, index_dtype):
    """rows (n,) int64 sorted, in [0, n_rows); not validated.

    Rows out of range are clipped; unsorted rows give some pointers in [0, n].
    """
    out = empty(int(n_rows) + 1, dtype=index_dtype)
    _compress(rows, n_threads() if rows.size >= PARALLEL_MIN else 1, out)
    return out


@jit(parallel=True)
def _expand(indptr, n_chunks, out):
    # Row r writes its positions [indptr[r], indptr[r + 1]). Pointers are
    # clipped into [0, nnz], the first row starts at 0 and the last ends at
    # nnz, and each chunk starts every row at its running maximum: for a
    # valid indptr that changes nothing; for any other every position is
    # still written once per chunk at most (a walk from 0 to nnz passes
    # every position), so the work stays below n_chunks * nnz.
    nnz = out.size
    n_rows = indptr.size - 1
    chunk = (n_rows + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        reached = min(max(indptr[lo], 0), nnz) if lo > 0 else 0
        for r in range(lo, min(n_rows, lo + chunk)):
            end = nnz if r == n_rows - 1 else min(max(indptr[r + 1], 0), nnz)
            for p in range(reached, end):
                out[p] = r
            reached = max(reached, end)


def expand(indptr, nnz, out=None):
    """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated.

    Any other pointers give every position some row in ``[0, n_rows)``.
    """
    if out is None:
        out = empty(int(nnz), dtype=np.int64)
    if out.size and indptr.size < 2:
        out[:] = 0
    elif out.size:
        parallel = indptr.size + out.size >= PARALLEL_MIN
        _expand(indptr, max(1, min(n_threads(), indptr.size - 1)) if parallel else 1, out)
    return out


# --------------------------------------------------------------------------
# offsets (an exclusive running total): chunk totals, then each chunk's scan
# --------------------------------------------------------------------------

@jit(parallel=True)
def _chunk_totals(counts, n_chunks, totals):
    n = counts.size
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        total = np.int64(0)
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            total += np.int64(counts[i])
        totals[c + 1] = total


@jit(parallel=True)
def _chunk_scans(counts, n_chunks, totals, out):
    n = counts.size
    chunk = (n + n_chunks - 1) // n_chunks
    out[0] = 0
    for c in prange(n_chunks):
        running = totals[c]
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            running += np.int64(counts[i])
            out[i + 1] = running


def offsets(counts):
    """counts (n,) bool or integer, non-negative; not validated."""
    if counts.dtype == np.bool_:
        counts = counts.view(np.uint8)
    n_chunks = n_threads() if counts.size >= PARALLEL_MIN else 1
    totals = np.zeros(n_chunks + 1, dtype=np.int64)
    if n_chunks > 1:
        _chunk_totals(counts, n_chunks, totals)
        np.cumsum(totals, out=totals)
    out = empty(counts.size + 1, dtype=np.int64)
    _chunk_scans(counts, n_chunks, totals, out)
    return out


# --------------------------------------------------------------------------
# scatter / gather
# --------------------------------------------------------------------------

@jit(parallel=True)
def _scatter_rows(keys, values, out):
    # A destination outside out is dropped.
    w = values.shape[1]
    size = out.shape[0]
    for i in prange(keys.size):
        r = keys[i]
        if 0 <= r < size:
            for c in range(w):
                out[r, c] = values[i, c]


def scatter_dense(keys, values, out):
    """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous.

    Keys outside ``[0, len(out))`` are dropped.
    """
    _scatter_rows(read_only(keys), read_only(as_words(values)), as_words(out))


@jit(parallel=True)
def _gather_rows(values, index, out):
    w = values.shape[1]
    last = values.shape[0] - 1
    for i in prange(index.size):
        r = min(max(index[i], 0), last)
        for c in range(w):
            out[i, c] = values[r, c]


@jit(parallel=True)
def _gather_rows_or_fill(values, index, fill, out):
    w = values.shape[1]
    last = values.shape[0] - 1
    for i in prange(index.size):
        r = min(index[i], last)
        if r >= 0:
            for c in range(w):
                out[i, c] = values[r, c]
        else:
            for c in range(w):
                out[i, c] = fill[c]


def gather(values, index, fill=None):
    """values (m, w); index (n,) int64 in [0, m), or -1 where ``fill`` is given; not validated.

    Indices past the end read the last row, negative ones the first (or
    ``fill`` when given); with ``m == 0`` every row is ``fill`` (or 0).
    """
    out = empty((index.size, values.shape[1]), dtype=values.dtype)
    if values.shape[0] == 0:
        out[...] = 0 if fill is None else fill
    elif fill is None:
        _gather_rows(read_only(as_words(values)), read_only(index), as_words(out))
    else:
        row = np.full(values.shape[1], fill, dtype=values.dtype)
        _gather_rows_or_fill(read_only(as_words(values)), read_only(index), read_only(as_words(row)),
                             as_words(out))
    return out


@jit(parallel=True)
def _take_columns(values, index, out):
    g = values.shape[0]
    last = values.shape[1] - 1
    for i in prange(index.size):
        c = min(max(index[i], 0), last)
        for r in range(g):
            out[r, i] = values[r, c]


def take_columns(values, index):
    """values (g, m); index (n,) int64 in [0, m); not validated.

    Indices out of range are clipped. Values move as words of their item
    size (:func:`~gpusparse._kernels.cpu._common.as_words`).

    One parallel pass (``numpy.take(values, index, axis=1)`` runs on one
    thread, element by element along the rows).
    """
    out = empty((values.shape[0], index.size), dtype=values.dtype)
    if values.shape[1] == 0:
        out[...] = 0
        return out
    if values.dtype.itemsize > 8:  # two words per item: take both words of each column
        last = values.shape[1] - 1
        pairs = np.clip(index, 0, last) * 2
        index = np.stack([pairs, pairs + 1], axis=1).reshape(-1)
    _take_columns(read_only(as_words(values)), read_only(index), as_words(out))
    return out
