"""The operands of an elementwise operation: sparse, dense or scalar, and the device's functions.

:func:`classify` sorts the arguments into :class:`Operand` objects (sparse
arrays of other libraries converted; foreign objects give None, so that an
operator can return ``NotImplemented``); :func:`device_function` replaces a
NumPy function by its twin of the device's array module;
:func:`result_dtype` checks that sparse arrays can hold a result dtype.
"""

from __future__ import annotations

import numbers

import numpy as np

from gpusparse._device import array_device
from gpusparse._dtypes import VALUE_DTYPES, native_dtype

__all__ = ["Operand", "as_tuple", "classify", "device_function", "result_dtype"]


class Operand:
    """One argument of :func:`elemwise`: ``kind`` is "sparse", "dense" or "scalar"."""

    __slots__ = ("kind", "value", "name")

    def __init__(self, kind, value, name):
        self.kind, self.value, self.name = kind, value, name

    @property
    def shape(self):
        return tuple(self.value.shape)


def _is_device_array(obj) -> bool:
    """A dense array of some device (NumPy on the CPU, the GPU array module's otherwise)."""
    if isinstance(obj, np.ndarray):
        return True
    try:
        array_device(obj)
    except TypeError:
        return False
    return True


def _is_scalar(obj) -> bool:
    return obj is None or isinstance(obj, (numbers.Number, np.generic))


def classify(args, names=None):
    """Sort ``args`` into sparse, dense and scalar operands, or return None for foreign types.

    Sparse arrays of other libraries (SciPy and its GPU twin, torch, pydata, JAX)
    are converted; 0-d NumPy arrays become NumPy scalars; any other object
    gives None (so that an operator can return ``NotImplemented``).
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops import interop
    out = []
    for i, arg in enumerate(args):
        name = names[i] if names else f"operand {i}"
        if isinstance(arg, SparseArray):
            out.append(Operand("sparse", arg, name))
        elif isinstance(arg, np.ndarray) and arg.ndim == 0:
            out.append(Operand("scalar", arg[()], name))
        elif _is_device_array(arg):
            out.append(Operand("dense", arg, name))
        elif _is_scalar(arg):
            out.append(Operand("scalar", arg, name))
        else:
            foreign = interop.from_foreign(arg)
            if foreign is None:
                return None
            out.append(Operand("sparse", foreign, name))
    return out


def device_function(func, xp):
    """``func`` for arrays of ``xp``: ``xp``'s twin of a NumPy ufunc or function."""
    if xp is np:
        return func
    name = getattr(func, "__name__", None)
    if isinstance(func, np.ufunc) or getattr(func, "__module__", "") .startswith("numpy"):
        twin = getattr(xp, name, None) if name else None
        if twin is not None:
            return twin
    return func


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def result_dtype(dt, name):
    dt = native_dtype(dt)
    if dt == np.float16:
        return np.dtype(np.float32)
    if dt not in VALUE_DTYPES:
        raise TypeError(
            f"{name} gives values of dtype {dt}, which sparse arrays cannot hold; "
            f"supported: {', '.join(d.name for d in VALUE_DTYPES)}"
        )
    return dt
