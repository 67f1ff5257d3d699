"""Turning user input into component arrays on one device.

Containers hold plain C-contiguous NumPy arrays (CPU) or CuPy arrays (CUDA).
This module accepts whatever a user passes as a component -- a NumPy or CuPy
array, any DLPack producer (torch, JAX, ...), a list or a scalar -- and
returns arrays of the right module without copying where the layout allows.

NumPy arrays in non-native byte order (``'>f8'`` read from a file on a
little-endian host) are converted to native order: one copy. Input that
cannot be shared -- a torch tensor that requires grad or carries a lazy
conjugation/negation bit, anything a DLPack producer refuses to export --
raises an error naming the argument and saying what to pass instead.
"""

from __future__ import annotations

import sys

import numpy as np

from gpusparse._device import Device, array_device, as_device, is_cupy_array, to_device_array
from gpusparse._dtypes import VALUE_DTYPES

__all__ = ["place_components", "to_array"]

_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13


def to_array(obj, argument: str):
    """A NumPy or CuPy array for ``obj``, zero-copy for arrays and DLPack producers.

    Returns ``(array, placed)``: ``placed`` is False for host-only input
    (lists, scalars) that may still be moved to the target device for free.
    NumPy arrays come back in native byte order (a copy where ``obj`` is
    not). Raises ``ValueError`` naming ``argument`` for input DLPack cannot
    share as is (a torch tensor that requires grad, ...) and ``TypeError``
    for a dtype it cannot carry.
    """
    if isinstance(obj, np.ndarray):
        return _native(_not_objects(obj, argument)), True
    if is_cupy_array(obj):
        return obj, True
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        _check_torch_tensor(obj, argument, torch)
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is not None and hasattr(obj, "__dlpack__"):
        kind, _ = dlpack_device()
        if int(kind) == _DLPACK_CPU:
            return _from_dlpack(np, obj, argument), True
        if int(kind) in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            import cupy
            return _from_dlpack(cupy, obj, argument), True
        raise TypeError(f"{argument} lives on a DLPack device of type {kind}, which gpusparse cannot use")
    if hasattr(obj, "__cuda_array_interface__"):
        import cupy
        return cupy.asarray(obj), True
    try:
        arr = np.asarray(obj)
    except Exception as exc:
        raise TypeError(f"{argument} must be array-like, got {type(obj).__name__}: {exc}") from None
    return _native(_not_objects(arr, argument)), False


def _not_objects(arr: np.ndarray, argument: str) -> np.ndarray:
    """``arr``, or ``TypeError`` naming ``argument`` for an array no device can hold.

    Python objects, text, raw bytes and dates are refused here, on the host,
    before a copy to a GPU would fail with CuPy's own ``ValueError``.
    """
    kind = _NOT_NUMBERS.get(arr.dtype.kind)
    if kind is not None:
        raise TypeError(f"{argument} has unsupported dtype {arr.dtype} ({kind}); pass numbers")
    return arr


#: The NumPy dtype kinds no device holds: what each one is, for the message.
_NOT_NUMBERS = {"O": "an array of Python objects", "S": "bytes", "U": "text", "V": "raw records", "M": "dates",
                "m": "time spans"}


def _native(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself, or a native-byte-order copy of it (``>f8`` on a little-endian host)."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def _check_torch_tensor(t, argument: str, torch) -> None:
    """Refuse what DLPack cannot share faithfully, saying which call fixes it."""
    if t.requires_grad:
        raise ValueError(
            f"{argument} requires grad; pass {argument}.detach(): gpusparse's arrays do not track gradients"
        )
    if t.layout != torch.strided:
        raise ValueError(
            f"{argument} is a torch tensor with layout {t.layout}; pass a dense (strided) tensor, "
            f"or convert a sparse tensor with gpusparse.from_torch"
        )
    if t.is_conj():
        raise ValueError(
            f"{argument} carries torch's lazy conjugation bit, which DLPack cannot share; "
            f"pass {argument}.resolve_conj()"
        )
    if t.is_neg():  # DLPack would drop the bit: the values would come out negated
        raise ValueError(
            f"{argument} carries torch's lazy negation bit, which DLPack cannot share; "
            f"pass {argument}.resolve_neg()"
        )


def _from_dlpack(xp, obj, argument: str):
    """``xp.from_dlpack(obj)`` with errors that name ``argument``."""
    try:
        return xp.from_dlpack(obj)
    except BufferError as exc:
        raise ValueError(f"{argument} cannot be shared through DLPack: {exc}") from None
    except (RuntimeError, TypeError) as exc:
        if "dtype" not in str(exc).lower():
            raise
        names = ", ".join(d.name for d in VALUE_DTYPES)
        raise TypeError(
            f"{argument} has unsupported dtype {getattr(obj, 'dtype', '?')} (DLPack: {exc}); supported: {names}"
        ) from None


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

