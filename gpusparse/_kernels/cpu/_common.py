"""Constants and allocation helpers shared by the CPU kernels."""

from __future__ import annotations

import numpy as np

from gpusparse._kernels._numba import jit
from gpusparse._kernels.cpu import _pool
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
    lo = min(max(np.int64(indptr[r]), 0), nnz)
    return lo, max(lo, min(max(np.int64(indptr[r + 1]), 0), nnz))
