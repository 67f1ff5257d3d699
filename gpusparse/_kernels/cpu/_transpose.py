"""The transpose of a compressed matrix on the CPU: CSR <-> CSC without a sort.

SciPy's ``csr_tocsc``: a histogram of the minor indices, an exclusive scan
of it into the new ``indptr``, and a scatter of every entry, walked in the
old major order, to the next free slot of its minor index. The walk keeps
the old major order inside each new major slice (a stable counting sort),
so a canonical input gives a canonical output.

The parallel version splits the old major slices into one chunk per
thread (balanced by entries), counts each chunk in its own histogram, and
gives chunk ``t`` the slots of minor index ``c`` after those of chunks
``0 .. t-1``: the same slots as the serial walk, so the result is the same
bit for bit. It runs from :data:`PARALLEL_TRANSPOSE_MIN` entries on
:data:`PARALLEL_TRANSPOSE_THREADS` threads or more, when the histograms
(threads x minor size) stay no larger than the entries.

Bounds: whatever ``indptr`` and ``indices`` hold, the kernels stay inside
their buffers (the contract in :mod:`gpusparse._kernels`): ``indptr``
entries are clipped into ``[0, nnz]``, a slice whose end lies before its
start is empty, minor indices are clipped into ``[0, n_minor)`` and a
write past the last slot is dropped. Values are moved as unsigned words of
their item size (one compilation per item size, bits unchanged).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from gpusparse._kernels._numba import jit, n_threads
from gpusparse._kernels.cpu._common import empty

__all__ = ["transpose_compressed"]

#: From this many entries, and with at least :data:`PARALLEL_TRANSPOSE_THREADS`
#: threads, the transpose runs on every thread. On two cores the parallel
#: version lost to the serial one at 2**22 and 2**24 entries (the second pass
#: over the indices and the per-thread histograms cost more than one more
#: core saves), so it waits for four.
PARALLEL_TRANSPOSE_MIN = 1 << 22
PARALLEL_TRANSPOSE_THREADS = 4

_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _words(values):
    """``values`` ((n, w) C-contiguous) viewed as unsigned words of its item size (16-byte items: two uint64)."""
    word = _WORD.get(values.dtype.itemsize)
    if word is None:
        if values.shape[1] == 0:
            return np.empty((values.shape[0], 0), dtype=np.uint64)
        word = np.uint64
    return values if values.dtype == word else values.view(word)


@jit()
def _clip(v, lo, hi):
    return min(max(v, lo), hi)


@jit()
def _transpose_serial(indptr, indices, values, n_minor, t_indptr, t_indices, t_values):
    # t_indptr (n_minor + 1,) of the output index dtype serves as the cursors:
    # no count exceeds nnz, and a cursor only advances past a slot it wrote.
    nnz = indices.size
    n_major = indptr.size - 1
    width = values.shape[1]
    t_indptr[:] = 0
    if n_minor == 0:
        return
    last = n_minor - 1
    for p in range(nnz):  # histogram, shifted by one
        t_indptr[_clip(indices[p], 0, last) + 1] += 1
    for c in range(n_minor):  # exclusive scan: t_indptr[c] is the first slot of c
        t_indptr[c + 1] += t_indptr[c]
    for r in range(n_major):
        start, end = _clip(indptr[r], 0, nnz), _clip(indptr[r + 1], 0, nnz)
        for p in range(start, end):
            c = _clip(indices[p], 0, last)
            d = t_indptr[c]
            if d < nnz:
                t_indices[d] = r
                if width == 1:
                    t_values[d, 0] = values[p, 0]
                else:
                    for w in range(width):
                        t_values[d, w] = values[p, w]
                t_indptr[c] = d + 1
    # Each cursor stopped at the end of its minor index, the start of the next: shift back.
    for c in range(n_minor, 0, -1):
        t_indptr[c] = t_indptr[c - 1]
    t_indptr[0] = 0


@jit(parallel=True)
def _transpose_parallel(indptr, indices, values, n_minor, chunk_rows, hist, t_indptr, t_indices, t_values):
    # chunk_rows (T + 1,): chunk t walks the major slices [chunk_rows[t], chunk_rows[t + 1]).
    # hist (T, n_minor): each chunk's counts, then the first slot of each of its minor indices.
    nnz = indices.size
    width = values.shape[1]
    n_chunks = hist.shape[0]
    last = n_minor - 1
    for t in prange(n_chunks):
        h = hist[t]
        h[:] = 0
        for r in range(chunk_rows[t], chunk_rows[t + 1]):
            start, end = _clip(indptr[r], 0, nnz), _clip(indptr[r + 1], 0, nnz)
            for p in range(start, end):
                h[_clip(indices[p], 0, last)] += 1
    # Column totals into t_indptr (parallel over minor indices), then one scan.
    for c in prange(n_minor):
        total = 0
        for t in range(n_chunks):
            total += hist[t, c]
        t_indptr[c + 1] = total
    t_indptr[0] = 0
    for c in range(n_minor):
        t_indptr[c + 1] += t_indptr[c]
    # Chunk t's first slot for c: after the slots of the chunks before it.
    for c in prange(n_minor):
        slot = t_indptr[c]
        for t in range(n_chunks):
            h = hist[t, c]
            hist[t, c] = slot
            slot += h
    for t in prange(n_chunks):
        h = hist[t]
        for r in range(chunk_rows[t], chunk_rows[t + 1]):
            start, end = _clip(indptr[r], 0, nnz), _clip(indptr[r + 1], 0, nnz)
            for p in range(start, end):
                c = _clip(indices[p], 0, last)
                d = h[c]
                if 0 <= d < nnz:  # overlapping slices (invalid indptr) may overflow the counts
                    t_indices[d] = r
                    for w in range(width):
                        t_values[d, w] = values[p, w]
                h[c] = d + 1


def _chunk_rows(indptr, nnz, n_chunks):
    """Major-slice bounds of ``n_chunks`` chunks of about equal entries (clipped, non-decreasing)."""
    ends = np.clip(indptr.astype(np.int64, copy=False), 0, nnz)
    ends = np.maximum.accumulate(ends)
    targets = (np.arange(n_chunks + 1, dtype=np.int64) * nnz) // n_chunks
    rows = np.searchsorted(ends, targets, side="left").astype(np.int64)
    rows[0], rows[-1] = 0, indptr.size - 1
    return np.minimum(np.maximum.accumulate(rows), indptr.size - 1)


def transpose_compressed(indptr, indices, values, n_minor, index_dtype):
    """indptr (n_major + 1,), indices (nnz,) int32/int64 of a canonical compressed matrix; values (nnz, w) C-contiguous; not validated.

    The matrix has ``n_major`` slices (rows of a CSR) over ``n_minor``
    minor indices (its columns). Returns ``(t_indptr, t_indices,
    t_values)``, the same matrix compressed along the other axis (a CSR's
    CSC): ``t_indptr`` (n_minor + 1,) and ``t_indices`` (nnz,) of
    ``index_dtype``, ``t_values`` (nnz, w) of values' dtype. Inside each new
    slice the entries keep their old major order (a stable counting sort),
    so the result is canonical and equals a stable sort by minor index.
    """
    nnz = indices.shape[0]
    n_major = indptr.shape[0] - 1
    t_indptr = empty(n_minor + 1, index_dtype)
    t_indices = empty(nnz, index_dtype)
    t_values = empty(values.shape, values.dtype)
    words, t_words = _words(values), _words(t_values)
    threads = n_threads()
    if threads >= PARALLEL_TRANSPOSE_THREADS and nnz >= PARALLEL_TRANSPOSE_MIN and n_minor > 0 and threads * n_minor <= nnz:
        n_chunks = min(threads, max(n_major, 1))
        hist = np.empty((n_chunks, n_minor), dtype=np.int64)
        chunk_rows = _chunk_rows(indptr, nnz, n_chunks)
        _transpose_parallel(indptr, indices, words, np.int64(n_minor), chunk_rows, hist,
                            t_indptr, t_indices, t_words)
    else:
        _transpose_serial(indptr, indices, words, np.int64(n_minor), t_indptr, t_indices, t_words)
    return t_indptr, t_indices, t_values
