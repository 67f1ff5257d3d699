"""The arguments NumPy's functions pass to gpusparse: sparse operands, ``out=``, ``order=``, casts.

Shared by the adapters of :mod:`gpusparse.ops.numpy`, which take NumPy's
signatures: ``out=`` is refused with ``TypeError``, ``order=`` checked,
sequences of arrays made sparse (dense members stored where they differ
from the fill value) and cast as ``dtype=``/``casting=`` ask.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops import comparison, elementwise

__all__ = []


_ORDERS = ("K", "A", "C", "F")


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"numpy.{name}: out= is not supported for gpusparse arrays; "
                        f"use the returned array")


def _check_order(name, order, allowed=_ORDERS):
    if order not in allowed:
        raise ValueError(f"numpy.{name}: order must be one of {allowed}, got {order!r}")


def _sparse_list(arrays, name):
    """The members of a sequence as sparse arrays: dense members stored where they differ
    from the fill value of the first sparse member (never densifying a sparse one)."""
    arrays = list(arrays)
    ref = next((a for a in arrays if _is_sparse(a)), None)
    if ref is None:
        raise TypeError(f"numpy.{name}: no gpusparse array among the inputs")
    return [a if _is_sparse(a) else comparison.dense_as_sparse(a, ref) for a in arrays]


def _cast_all(arrays, dtype, casting, name):
    """The arrays cast to ``dtype``; without one, checked against the dtype they promote to."""
    target = np.result_type(*(a.dtype for a in arrays)) if dtype is None else np.dtype(dtype)
    for a in arrays:
        if not np.can_cast(a.dtype, target, casting=casting):
            raise TypeError(f"numpy.{name}: cannot cast array data from {a.dtype} to {target} "
                            f"according to the rule {casting!r}")
    return arrays if dtype is None else [elementwise.astype(a, target) for a in arrays]
