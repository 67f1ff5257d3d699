"""Layout primitives on the CPU: linear keys, CSR pointers, scatter and gather."""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import PARALLEL_MIN, empty


# --------------------------------------------------------------------------
# linearize / delinearize
# --------------------------------------------------------------------------

@jit(parallel=True)
def _linearize(coords, strides, out):
    d, n = coords.shape
    for i in prange(n):
        key = np.int64(0)
        for k in range(d):
            key += coords[k, i] * strides[k]
        out[i] = key


def linearize(coords, strides):
    """coords (d, n) int64 in bounds, sum(coords[k]*strides[k]) < 2**63; not validated."""
    out = empty(coords.shape[1], dtype=np.int64)
    _linearize(coords, np.asarray(strides, dtype=np.int64), out)
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
def _compress(rows, out):
    n = rows.size
    n_rows = out.size - 1
    for i in prange(n):
        previous = rows[i - 1] if i > 0 else -1
        for r in range(previous + 1, rows[i] + 1):
            out[r] = i
    last = rows[n - 1] if n > 0 else -1
    for r in range(last + 1, n_rows + 1):
        out[r] = n


def compress(rows, n_rows, index_dtype):
    """rows (n,) int64 sorted, in [0, n_rows); not validated."""
    out = empty(int(n_rows) + 1, dtype=index_dtype)
    _compress(rows, out)
    return out


@jit(parallel=True)
def _expand(indptr, out):
    for r in prange(indptr.size - 1):
        for p in range(indptr[r], indptr[r + 1]):
            out[p] = r


def expand(indptr, nnz, out=None):
    """indptr (n_rows + 1,) non-decreasing from 0 to nnz; not validated."""
    if out is None:
        out = empty(int(nnz), dtype=np.int64)
    _expand(indptr, out)
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
    w = values.shape[1]
    for i in prange(keys.size):
        r = keys[i]
        for c in range(w):
            out[r, c] = values[i, c]


def _move_kind(arr):
    # Numba has no arithmetic on bool/complex rows that we need here, but a
    # byte-identical view keeps one compiled kernel per item size.
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if arr.dtype.kind == "c":
        return arr.view(np.float32 if arr.dtype == np.complex64 else np.float64)
    return arr


def scatter_dense(keys, values, out):
    """keys (n,) int64 unique, in [0, len(out)); values (n, w); out (size, w) C-contiguous."""
    _scatter_rows(keys, _move_kind(values), _move_kind(out))


@jit(parallel=True)
def _gather_rows(values, index, out):
    w = values.shape[1]
    for i in prange(index.size):
        r = index[i]
        for c in range(w):
            out[i, c] = values[r, c]


@jit(parallel=True)
def _gather_rows_or_fill(values, index, fill, out):
    w = values.shape[1]
    for i in prange(index.size):
        r = index[i]
        if r >= 0:
            for c in range(w):
                out[i, c] = values[r, c]
        else:
            for c in range(w):
                out[i, c] = fill[c]


def gather(values, index, fill=None):
    """values (m, w); index (n,) int64 in [0, m), or -1 where ``fill`` is given; not validated."""
    out = empty((index.size, values.shape[1]), dtype=values.dtype)
    if fill is None:
        _gather_rows(_move_kind(values), index, _move_kind(out))
    else:
        row = np.full(values.shape[1], fill, dtype=values.dtype)
        _gather_rows_or_fill(_move_kind(values), index, _move_kind(row), _move_kind(out))
    return out


@jit(parallel=True)
def _take_columns(values, index, out):
    g = values.shape[0]
    for i in prange(index.size):
        c = index[i]
        for r in range(g):
            out[r, i] = values[r, c]


def take_columns(values, index):
    """values (g, m); index (n,) int64 in [0, m); not validated.

    One parallel pass (``numpy.take(values, index, axis=1)`` runs on one
    thread, element by element along the rows).
    """
    out = empty((values.shape[0], index.size), dtype=values.dtype)
    _take_columns(_move_kind(values), index, _move_kind(out))
    return out
