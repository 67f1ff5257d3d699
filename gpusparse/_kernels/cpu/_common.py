"""Constants and allocation helpers shared by the CPU kernels."""

from __future__ import annotations

import numpy as np

#: Work below this many elements runs serially: thread start-up costs more.
PARALLEL_MIN = 1 << 15

#: Outputs of at least this many bytes have their pages faulted in up front.
PREFAULT_MIN_BYTES = 1 << 20

_PAGE = 4096


def empty(shape, dtype) -> np.ndarray:
    """``np.empty`` whose memory is already mapped, for outputs parallel kernels write.

    A fresh large allocation is mapped lazily, page by page, on first
    write. When the writes come from several worker threads at once the
    page faults contend in the kernel and can cost ten times the kernel
    itself; touching one byte per page from the calling thread first costs
    about as much as a ``memset`` of the pages and keeps the kernel at its
    streaming speed.
    """
    out = np.empty(shape, dtype=dtype)
    if out.nbytes >= PREFAULT_MIN_BYTES:
        out.reshape(-1).view(np.uint8)[::_PAGE] = 0
    return out


def empty_like(a) -> np.ndarray:
    """:func:`empty` shaped and typed like ``a``."""
    return empty(a.shape, a.dtype)
