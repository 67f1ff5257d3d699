"""NumPy's creation functions on sparse prototypes: ``np.zeros_like``, ``np.full_like``, ``np.copy``, ``np.asarray``, ..."""

from __future__ import annotations

import numpy as np

from gpusparse.ops import creation, elementwise
from gpusparse.ops.numpy.arguments import _check_order, _is_sparse

__all__ = []


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("full_like", order)
    return creation.full_like(a, fill_value, dtype=dtype, shape=shape, device=device)


def _zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("zeros_like", order)
    return creation.zeros_like(a, dtype=dtype, shape=shape, device=device)


def _ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("ones_like", order)
    return creation.full_like(a, 1, dtype=dtype, shape=shape, device=device)


def _empty_like(prototype, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("empty_like", order)  # any content will do: keep the fill value, store nothing
    return creation.empty_like(prototype, dtype=dtype, shape=shape, device=device)


def _copy(a, order="K", subok=False):
    _check_order("copy", order)
    return creation.copy(a)


def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """``np.asarray(a, like=x)`` (also ``np.asanyarray``): ``a`` as a gpusparse array.

    NumPy does not pass ``like`` on, so host data goes to the default device.
    """
    _check_order("asarray", "K" if order is None else order)
    if not _is_sparse(a):
        a = np.asarray(a, dtype=dtype)
    out = creation.asarray(a, copy=copy)
    return out if dtype is None else elementwise.astype(out, dtype, copy=False)


def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None):  # noqa: A002
    """``np.array(object, like=x)``: :func:`_asarray`, copying by default."""
    if ndmin or ndmax:
        raise TypeError("numpy.array: ndmin and ndmax are not supported for gpusparse arrays; "
                        "use expand_dims or reshape")
    return _asarray(object, dtype, order, copy=copy)
