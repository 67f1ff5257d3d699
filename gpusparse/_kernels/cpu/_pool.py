"""A pool of large host buffers for the outputs of the CPU kernels.

Fresh memory is mapped by the operating system page by page on first
write, and on many machines (virtual machines above all) those page faults
cost as much as the kernel that writes the memory. Like CuPy's device
memory pool, this pool keeps large buffers once they are no longer used and
hands them out again.

Every array handed out is made from a *lease*, a small object exposing the
buffer through ``__array_interface__``: the array and every view derived
from it keep the lease alive (NumPy stops collapsing ``base`` chains at an
object that is not an array), and when the last of them is released a
finalizer returns the buffer to the pool. No reference counting heuristics
are involved.

Buffers are grouped by size class (powers of two and 1.5 times powers of
two, at least 1 MiB), so a reused buffer wastes at most a third of itself.
The pool keeps at most ``GPUSPARSE_CPU_POOL_BYTES`` bytes of free buffers
(default 1 GiB; 0 switches the pool off); beyond that, free buffers are
released, oldest first.
"""

from __future__ import annotations

import math
import os
import threading
import weakref

import numpy as np

from gpusparse._memory import add_host_pool

__all__ = ["free_bytes", "lease", "release_free", "size_class"]

_MIN_BYTES = 1 << 20
_DEFAULT_LIMIT = 1 << 30

_lock = threading.RLock()
_free: "dict[int, list[np.ndarray]]" = {}  # size class -> free buffers, oldest first
_free_bytes = 0


def _limit() -> int:
    raw = os.environ.get("GPUSPARSE_CPU_POOL_BYTES", "").strip()
    if not raw:
        return _DEFAULT_LIMIT
    try:
        return max(int(float(raw)), 0)
    except ValueError:
        raise ValueError(f"GPUSPARSE_CPU_POOL_BYTES must be a number of bytes, got {raw!r}") from None


def size_class(nbytes: int) -> int:
    """The smallest pool size (2**k or 3 * 2**(k-1), at least 1 MiB) holding ``nbytes``.

    >>> size_class(1), size_class(3 << 20), size_class((3 << 20) + 1)
    (1048576, 3145728, 4194304)
    """
    size = _MIN_BYTES
    while size < nbytes:
        if size + size // 2 >= nbytes:
            return size + size // 2
        size *= 2
    return size


class _Lease:
    """One hand-out of a pooled buffer, viewed as an array of ``shape`` and ``dtype``."""

    __slots__ = ("__array_interface__", "__weakref__", "buffer")

    def __init__(self, buffer, shape, dtype):
        self.buffer = buffer
        self.__array_interface__ = {
            "shape": shape,
            "typestr": dtype.str,
            "descr": dtype.descr,
            "data": (buffer.ctypes.data, False),
            "version": 3,
        }


def _give_back(buffer) -> None:
    global _free_bytes
    with _lock:
        _free.setdefault(buffer.nbytes, []).append(buffer)
        _free_bytes += buffer.nbytes
        limit = _limit()
        while _free_bytes > limit:  # release the oldest free buffers of the largest class
            # a snapshot: a collection here may run another finaliser, which adds a size class
            cls = max(c for c, bufs in list(_free.items()) if bufs)
            _free[cls].pop(0)
            _free_bytes -= cls


def lease(shape, dtype, prefault) -> "np.ndarray | None":
    """An uninitialised array of ``shape``/``dtype`` over a pooled buffer, or None below 1 MiB.

    A new buffer is passed to ``prefault`` first. The buffer returns to the
    pool when the array and every view of it are gone.
    """
    global _free_bytes
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize * math.prod(int(d) for d in shape)  # Python ints: no wrap, no NumPy call
    if nbytes < _MIN_BYTES or dtype.hasobject or _limit() == 0:
        return None
    cls = size_class(nbytes)
    with _lock:
        bufs = _free.get(cls)
        if bufs:
            buffer = bufs.pop()  # the most recently used: likeliest to be in cache
            _free_bytes -= cls
        else:
            buffer = None
    if buffer is None:
        buffer = np.empty(cls, dtype=np.uint8)
        prefault(buffer)
    holder = _Lease(buffer, tuple(int(d) for d in shape), dtype)
    weakref.finalize(holder, _give_back, buffer)
    return np.asarray(holder)


def release_free() -> int:
    """Release every free buffer of the pool; returns the bytes released.

    >>> release_free() >= 0
    True
    """
    global _free_bytes
    with _lock:
        released = _free_bytes
        _free.clear()
        _free_bytes = 0
        return released


def _after_fork_in_child() -> None:
    # A lock held by a parent's thread at fork time would never be released here.
    global _lock, _free_bytes
    _lock = threading.RLock()
    _free.clear()
    _free_bytes = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

# The memory rule releases the free buffers before it refuses a host allocation.
add_host_pool(release_free)


def free_bytes() -> int:
    """Bytes of the free buffers the pool keeps for reuse."""
    return _free_bytes
