"""The arguments every reduction shares: ``axis``, ``out``/``where``, the result dtype.

:func:`normalize_axes` turns NumPy's ``axis`` (None, an int or a sequence)
into sorted non-negative axes; :func:`check_unsupported` rejects the
``out=`` and ``where=`` that sparse results cannot honour;
:func:`value_dtype` checks a requested result dtype; :data:`NO_VALUE`
marks an ``initial`` that was not given.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._dtypes import VALUE_DTYPES, dtype_text, native_dtype

__all__ = ["NO_VALUE", "check_unsupported", "normalize_axes", "value_dtype"]

#: The default of ``initial=``: no initial value given (None is not NumPy's default).
NO_VALUE = object()


def normalize_axes(axis, ndim: int, name: str = "axis") -> tuple:
    """``axis`` (None, an int or a sequence of ints) as a sorted tuple of non-negative axes.

    Raises ``numpy.exceptions.AxisError`` (a ``ValueError``) for an axis out
    of range and ``ValueError`` for a repeated one, ``TypeError`` for
    non-integers.
    """
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, (int, np.integer)) else axis
    try:
        items = tuple(operator.index(a) for a in items)
    except TypeError:
        raise TypeError(f"{name} must be None, an integer or a tuple of integers, got {axis!r}") from None
    out = []
    for a in items:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"{name} {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {name}={axis!r}")
    return tuple(sorted(out))


def check_unsupported(out=None, where=None, name="reduction"):
    """``TypeError`` for an ``out=`` or a ``where=`` other than True (sparse results honour neither)."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported for sparse arrays")
    if where is not None and where is not True:
        raise TypeError(f"{name}: where= is not supported for sparse arrays")


def value_dtype(dt, name):
    """The result dtype ``dt`` in native byte order; ``TypeError`` where sparse arrays cannot hold it."""
    given = np.dtype(dt)
    dt = native_dtype(given)  # ">f8" asks for float64 values: results are native
    if dt not in VALUE_DTYPES:
        raise TypeError(f"{name}: result dtype {dtype_text(given)} is not supported by sparse arrays")
    return dt
