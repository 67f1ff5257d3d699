"""Emulated device memory: garbage-filled allocations between guard bytes, and the check of the guards.

``cupy.empty`` is not zeroed on a GPU, so emulated allocations are filled
with :data:`GARBAGE_BYTE`; each is surrounded by guard bytes that
:func:`check_guards` verifies after a kernel launch, so an out-of-bounds
write is reported even without AddressSanitizer (under which allocations
are exact and its redzones border them instead).
"""

from __future__ import annotations

import weakref

import numpy as np

from gpusparse._kernels import cuda_emulation

__all__ = ["GARBAGE_BYTE", "GuardError", "check_guards"]

#: Byte pattern of freshly allocated "device" memory (cupy.empty is not zeroed).
GARBAGE_BYTE = 0xA5
#: Guard bytes on each side of every allocation, and their pattern.
_GUARD = 256
_GUARD_BYTE = 0x5B

# id(root buffer) -> (offset, nbytes) of the allocation inside it.
_guarded: "dict[int, tuple[int, int]]" = {}
# Under AddressSanitizer every allocation is exact, so that its redzones,
# not our guard bytes, border it.
_EXACT = cuda_emulation.mode() == "asan"


class GuardError(RuntimeError):
    """A kernel wrote into the guard bytes around an allocation."""


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _allocate(shape, dtype) -> np.ndarray:
    """Garbage-filled memory for ``shape`` and ``dtype``, between guard bytes."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if _EXACT:
        exact = np.empty(shape, dtype=dtype)
        exact.reshape(-1).view(np.uint8)[...] = GARBAGE_BYTE
        return exact
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + 3 * _GUARD, dtype=np.uint8)
    offset = _GUARD + (-raw.ctypes.data) % _GUARD  # 256-byte aligned, as cudaMalloc
    raw[:offset] = _GUARD_BYTE
    raw[offset + nbytes:] = _GUARD_BYTE
    body = raw[offset:offset + nbytes]
    body[...] = GARBAGE_BYTE
    key = id(raw)
    _guarded[key] = (offset, nbytes)
    weakref.finalize(raw, _guarded.pop, key, None)
    return body.view(dtype).reshape(shape)


def _allocation_size(root: np.ndarray) -> "int | None":
    """The bytes of the allocation made here whose buffer is ``root``; None for other buffers."""
    where = _guarded.get(id(root))
    return None if where is None else where[1]


def check_guards(arrays) -> None:
    """Raise :class:`GuardError` if the guard bytes of any allocation behind ``arrays`` changed."""
    for arr in arrays:
        root = _root(arr)
        where = _guarded.get(id(root))
        if where is None:
            continue
        offset, nbytes = where
        hit_before = np.flatnonzero(root[:offset] != _GUARD_BYTE)
        hit_after = np.flatnonzero(root[offset + nbytes:] != _GUARD_BYTE)
        if hit_before.size or hit_after.size:
            low = offset - int(hit_before[0]) if hit_before.size else 0
            high = int(hit_after[-1]) + 1 if hit_after.size else 0
            # Restore the guards so that one defect is reported once.
            root[:offset] = _GUARD_BYTE
            root[offset + nbytes:] = _GUARD_BYTE
            raise GuardError(
                f"out-of-bounds write around a {nbytes}-byte allocation: up to {low} byte(s) before "
                f"its start and up to {high} byte(s) past its end were overwritten"
            )
