"""NumPy's dtype and memory queries on sparse arrays: ``result_type``, ``can_cast``, ``shares_memory``, ..."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import array_device
from gpusparse.ops.numpy.arguments import _is_sparse

__all__ = []


def _as_dtype(x):
    """A sparse or device array stands for its dtype (NEP 50 treats arrays by dtype alone)."""
    if _is_sparse(x) or (hasattr(x, "dtype") and hasattr(x, "shape")
                         and not isinstance(x, (type, np.dtype, np.generic))):
        return x.dtype
    return x


def _result_type(*arrays_and_dtypes):
    return np.result_type(*(_as_dtype(x) for x in arrays_and_dtypes))


def _can_cast(from_, to, casting="safe"):
    return np.can_cast(_as_dtype(from_), to, casting=casting)


def _buffers(x):
    if _is_sparse(x):
        from gpusparse.ops.convert import components
        return components(x)
    return (x,) if hasattr(x, "shape") and not isinstance(x, np.generic) else ()


def _shares(a, b, test) -> bool:
    """Whether a buffer of ``a`` and one of ``b`` overlap, by ``test`` on their array module."""
    backends = {}  # one resolution per device the buffers live on
    for p in _buffers(a):
        for q in _buffers(b):
            dev = array_device(p)
            if array_device(q) != dev:
                continue
            be = backends[dev] if dev in backends else backends.setdefault(dev, backend(dev))
            with be.scope():
                if bool(getattr(be.xp, test.__name__)(p, q)):
                    return True
    return False


def _may_share_memory(a, b, /, max_work=0):
    return _shares(a, b, np.may_share_memory)


def _shares_memory(a, b, /, max_work=-1):
    return _shares(a, b, np.shares_memory)
