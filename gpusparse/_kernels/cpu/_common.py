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
