"""Turning user input into component arrays on one device.

Containers hold plain C-contiguous NumPy arrays (CPU) or CuPy arrays (CUDA).
This module accepts whatever a user passes as a component -- a NumPy or CuPy
array, any DLPack producer (torch, JAX, ...), a list or a scalar -- and
returns arrays of the right module without copying where the layout allows.
"""

from __future__ import annotations

import numpy as np

from gpusparse._device import Device, array_device, as_device, is_cupy_array, to_device_array

__all__ = ["place_components", "to_array"]

_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13


def to_array(obj, argument: str):
    """A NumPy or CuPy array for ``obj``, zero-copy for arrays and DLPack producers.

    Returns ``(array, placed)``: ``placed`` is False for host-only input
    (lists, scalars) that may still be moved to the target device for free.
    """
    if isinstance(obj, np.ndarray) or is_cupy_array(obj):
        return obj, True
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is not None and hasattr(obj, "__dlpack__"):
        kind, _ = dlpack_device()
        if int(kind) == _DLPACK_CPU:
            return np.from_dlpack(obj), True
        if int(kind) in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            import cupy
            return cupy.from_dlpack(obj), True
        raise TypeError(f"{argument} lives on a DLPack device of type {kind}, which gpusparse cannot use")
    if hasattr(obj, "__cuda_array_interface__"):
        import cupy
        return cupy.asarray(obj), True
    try:
        return np.asarray(obj), False
    except Exception as exc:
        raise TypeError(f"{argument} must be array-like, got {type(obj).__name__}: {exc}") from None


def place_components(components: "dict[str, object]", device: "str | Device | None"):
    """Convert every component and put them all on one device.

    With ``device=None`` the components must already agree (host-only input
    such as lists follows the others, or the default device when all are
    host-only); a disagreement raises ``ValueError`` naming both arguments.
    With an explicit ``device`` the components are copied there if needed.

    Returns ``(arrays: dict, device: Device)``.
    """
    arrays, placed = {}, {}
    for name, obj in components.items():
        arrays[name], placed[name] = to_array(obj, name)
    if device is not None:
        target = as_device(device)
    else:
        target = None
        for name, arr in arrays.items():
            if not placed[name]:
                continue
            dev = array_device(arr)
            if target is None:
                target, first = dev, name
            elif dev != target:
                raise ValueError(
                    f"{first} is on {target} but {name} is on {dev}; pass device= to move them"
                )
        if target is None:
            target = as_device(None)
    return {name: to_device_array(arr, target) for name, arr in arrays.items()}, target

