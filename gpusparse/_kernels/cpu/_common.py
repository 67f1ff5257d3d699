"""What the CPU kernels share: constants, allocation, reading CSR structure, running ranges on threads.

How the work is split and run (:func:`row_bounds`, :func:`_run`,
:func:`run_chunks`) is described in :mod:`gpusparse._kernels.cpu._linalg`.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import threading

import numpy as np

from gpusparse._kernels._numba import jit, n_threads
import gpusparse._kernels.cpu._pool as _pool
from gpusparse._memory import check_output

#: Work below this many elements runs serially: thread start-up costs more.
PARALLEL_MIN = 1 << 15

#: Branch-free compactions write skipped items to spare slots past their
#: outputs; the spare slots of neighbouring chunks lie this many 8-byte
#: entries (a cache line) apart, so threads do not stall on one line.
SPARE_STRIDE = 8

#: Outputs of at least this many bytes have their pages faulted in up front.
PREFAULT_MIN_BYTES = 1 << 20

_PAGE = 4096


def _prefault(buffer) -> None:
    buffer.reshape(-1).view(np.uint8)[::_PAGE] = 0


def _check_size(shape, dtype) -> None:
    """Refuse an output that cannot fit in host memory with a MemoryError (:mod:`gpusparse._memory`)."""
    check_output(shape, dtype)


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array on the device, for a kernel's output.

    A fresh large allocation is mapped lazily, page by page, on first
    write. When the writes come from several worker threads at once the
    page faults contend in the kernel and can cost ten times the kernel
    itself. Large outputs therefore come from the host buffer pool
    (:mod:`gpusparse._kernels.cpu._pool`), whose new buffers are touched
    once per page from the calling thread.
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    _check_size(shape, dtype)
    out = _pool.lease(shape, dtype, _prefault)
    if out is not None:
        return out
    out = np.empty(shape, dtype=dtype)
    if out.nbytes >= PREFAULT_MIN_BYTES:
        _prefault(out)
    return out


def read_only(arr):
    """``arr`` itself if it is read-only, else a read-only view of it (no copy).

    Numba compiles a kernel separately for writable and read-only arrays
    (user data, broadcasts and cached buffers are often read-only); passing
    every operand a kernel only reads through this gives one specialisation
    for both. ``None`` passes through.
    """
    if arr is None or not arr.flags.writeable:
        return arr
    view = arr.view()
    view.flags.writeable = False
    return view


#: The unsigned integer of each item size: what kernels that only move values see.
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def as_words(arr) -> np.ndarray:
    """``arr`` viewed as unsigned integers of its item size, for kernels that only move values.

    Such kernels (gathers, scatters, copies of runs) then compile once per
    item size instead of once per dtype: bool, int8 and uint8 share one
    specialisation, float32 and int32 another, float64, int64, complex64
    and complex128 (as pairs of words) a third, and the bits move unchanged (no float register touches a NaN's
    payload). A 16-byte item (complex128) becomes two uint64 words along
    the last axis, which doubles: ``(n, w)`` becomes ``(n, 2 * w)``; that
    needs the last axis contiguous (or at most one long), which the kernels'
    (n, w) C-contiguous operands are. No copy is made; a read-only array
    gives a read-only view. Outputs are allocated in their own dtype and
    written through such a view, so nothing needs viewing back.

    >>> as_words(np.array([[1 + 2j]])).shape, as_words(np.array([True])).dtype
    ((1, 2), dtype('uint8'))
    """
    word = _WORDS.get(arr.dtype.itemsize)
    if word is not None:
        return arr if arr.dtype == word else arr.view(word)
    if arr.dtype.itemsize % 8 or arr.ndim == 0:
        raise TypeError(f"no word view of {arr.dtype} arrays of {arr.ndim} dimensions")
    if arr.shape[-1] == 0:  # older NumPy refuses to view a 0-long axis with another item size
        return np.empty(arr.shape[:-1] + (0,), dtype=np.uint64)
    return arr.view(np.uint64)


def empty_like(a) -> np.ndarray:
    """:func:`empty` shaped and typed like ``a``."""
    return empty(a.shape, a.dtype)


@jit()
def row_range(indptr, r, nnz):
    """Positions [lo, hi) of row r: both pointers clipped into [0, nnz], never a negative length.

    For a valid ``indptr`` this is ``[indptr[r], indptr[r + 1])``; for any
    other it is what the memory-safety contract of the primitives defines.
    """
    u = np.uintp(r)  # r is a row of the range being walked (0 <= r < rows); unsigned: no negative-index wrap
    lo = min(max(np.int64(indptr[u]), 0), nnz)
    return lo, max(lo, min(max(np.int64(indptr[u + 1]), 0), nnz))


# --------------------------------------------------------------------------
# reading CSR structure whatever it holds
# --------------------------------------------------------------------------
#
# The product kernels walk rows through ``row_range`` and read columns
# through ``_column``: for a valid CSR structure they are plain reads; for
# any other (``check=False``, buffers changed after construction) pointers
# are clipped into [0, nnz], a row is [lo, max(lo, hi)), and a column index
# out of range reads the nearest row of the dense operand (the CUDA kernels
# do the same).

@jit()
def _clip_pointer(indptr, r, nnz):
    return min(max(np.int64(indptr[r]), 0), nnz)


@jit()
def _column(indices, p, last):
    """indices[p] as an unsigned row of a dense operand whose last row is ``last`` (clipped)."""
    return min(np.uintp(max(np.int64(indices[p]), 0)), last)


def _structure(indptr, indices, n_gathered):
    """``indptr``, or pointers to no entries where the operand the columns address has no rows.

    A column index cannot be clipped into an empty range; a valid structure
    has no entries then.
    """
    if n_gathered == 0 and indices.shape[0]:
        return np.zeros_like(indptr)
    return indptr


# --------------------------------------------------------------------------
# splitting the rows and running the ranges
# --------------------------------------------------------------------------

@jit()
def _row_bounds(indptr, n_parts):
    # Merge-path split: part t starts at the first row r with
    # indptr[r] + r >= t * (nnz + m) / n_parts.
    m = indptr.size - 1
    total = np.int64(indptr[m]) + m
    out = np.empty(n_parts + 1, dtype=np.int64)
    out[0] = 0
    out[n_parts] = m
    for t in range(1, n_parts):
        target = (total * t) // n_parts
        lo = out[t - 1]  # non-decreasing bounds even for a non-monotone indptr
        hi = m
        while lo < hi:
            mid = (lo + hi) >> 1
            if np.int64(indptr[mid]) + mid < target:
                lo = mid + 1
            else:
                hi = mid
        out[t] = lo
    return out


#: Ranges per thread for the gather kernels: threads take ranges as they
#: finish, so a thread slowed by another process does not hold up the rest.
_RANGES_PER_THREAD = 4


def row_bounds(indptr, work=None, per_thread=_RANGES_PER_THREAD):
    """``(ranges + 1,)`` int64 row boundaries that split ``indptr``'s rows into equal work.

    ``per_thread`` ranges per thread; one range when the work (``work``, by
    default ``nnz + rows``) is below ``PARALLEL_MIN``: starting threads would
    cost more than it saves.
    """
    m = indptr.size - 1
    if work is None:
        work = int(indptr[-1]) + m if m >= 0 else 0
    parts = n_threads() * per_thread if work >= PARALLEL_MIN and n_threads() > 1 else 1
    return _row_bounds(indptr, max(1, min(parts, max(m, 1))))


def even_bounds(n, work=None):
    """``(parts + 1,)`` boundaries splitting ``range(n)`` evenly (one part below ``PARALLEL_MIN``)."""
    parts = n_threads() if (n if work is None else work) >= PARALLEL_MIN else 1
    parts = max(1, min(parts, max(n, 1)))
    return np.linspace(0, n, parts + 1).astype(np.int64)


_POOL = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _thread_pool(workers):
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                          thread_name_prefix="gpusparse-cpu")
            _POOL_SIZE = workers
        return _POOL


def _forget_pool():  # a forked child has none of the parent's threads
    global _POOL, _POOL_SIZE
    _POOL, _POOL_SIZE = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _run(kernel, bounds, *args):
    """``kernel(*args, part, lo, hi)`` for every range of ``bounds``, on up to ``n_threads()`` threads.

    The calling thread works too; threads take the next range when they
    finish one (``next`` on a shared counter is atomic under the GIL).
    """
    parts = bounds.size - 1
    if parts <= 1:
        kernel(*args, 0, bounds[0], bounds[-1])
        return
    counter = itertools.count()

    def work():
        while True:
            t = next(counter)
            if t >= parts:
                return
            kernel(*args, t, bounds[t], bounds[t + 1])

    helpers = min(n_threads(), parts) - 1
    futures = [_thread_pool(helpers).submit(work) for _ in range(helpers)] if helpers > 0 else []
    try:
        work()
    finally:
        for f in futures:
            f.result()


def run_chunks(kernel, n_chunks, *args):
    """``kernel(*args, c, c + 1)`` for every chunk ``c`` of ``n_chunks``, on the threads of :func:`_run`.

    For serial kernels over a range of chunks ``[c_lo, c_hi)``: a
    ``prange`` over the chunks would compile a second, parallel kernel per
    dtype around the serial one (seconds each, the slowest compilations of
    the reductions), and the chunks are as large as the threads are few.
    """
    _run(_chunk_call, np.arange(n_chunks + 1, dtype=np.int64), kernel, args)


def _chunk_call(kernel, args, part, lo, hi):
    kernel(*args, lo, hi)
