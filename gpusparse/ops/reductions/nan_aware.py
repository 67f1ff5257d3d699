"""NaN-ignoring reductions: ``nansum``, ``nanprod``, ``nanmax``, ``nanmin``, ``nanmean``, ``nanvar``, ``nanstd``.

Each is its plain reduction over ``x`` with NaN replaced by a neutral value
(:func:`nan_to`), or, for the moments, over the non-NaN elements only;
integer and bool arrays have no NaN and run the plain reduction.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops.reductions.arguments import NO_VALUE, check_unsupported, normalize_axes
from gpusparse.ops.reductions.engine import check_identity, reduce_with
from gpusparse.ops.reductions.folds import max, min, prod, sum
from gpusparse.ops.reductions.moments import mean, mean_dtype, moment
from gpusparse.ops.reductions.monoid import Monoid
from gpusparse.ops.reductions.results import dense_result

__all__ = ["nan_to", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar"]


class _ReplaceNan:
    """``v`` with NaN replaced by ``value`` (the whole complex number, as NumPy's nan* do)."""

    __name__ = "replace_nan"

    def __init__(self, value):
        self.value = value

    def __call__(self, v):
        return np.where(np.isnan(v), self.value, v)


def nan_to(x, value, *, be=None):
    """``x`` with NaN (in the values and the fill value) replaced by ``value``.

    ``be`` is the backend of ``x``'s device, when the caller has it already.
    """
    if x.dtype.kind not in "fc":
        return x
    return _ew(_ReplaceNan(value), x, be=be)


def _ew(func, *args, be):
    """``elemwise(func, *args)`` on the backend ``be`` (None: the operands' own)."""
    from gpusparse.ops.elementwise.dispatch import apply, elemwise
    from gpusparse.ops.elementwise.operands import classify
    if be is None:
        return elemwise(func, *args)
    return apply(func, classify(args), {}, be=be)


def _not_nan(x, be):
    """Bool sparse ``~isnan(x)``, on ``be``."""
    return _ew(np.logical_not, _ew(np.isnan, x, be=be), be=be)


def nansum(x, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Sum treating NaN as 0 (NumPy's ``nansum``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nansum(gs.COO([[0, 1]], [np.nan, 2.0], shape=(3,), device="cpu"))
    array(2.)
    """
    check_unsupported(out, where, "nansum")
    if x.dtype.kind not in "fc":
        return sum(x, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
    be = backend(x.device)
    return reduce_with(nan_to(x, 0.0, be=be), Monoid(np.add), axis, keepdims, dtype, "sum", initial, be=be)


def nanprod(x, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Product treating NaN as 1 (NumPy's ``nanprod``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanprod(gs.COO([[0, 1]], [np.nan, 2.0], shape=(2,), device="cpu"))
    array(2.)
    """
    check_unsupported(out, where, "nanprod")
    if x.dtype.kind not in "fc":
        return prod(x, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
    be = backend(x.device)
    return reduce_with(nan_to(x, 1.0, be=be), Monoid(np.multiply), axis, keepdims, dtype, "prod", initial, be=be)


def _nan_extreme(x, axis, keepdims, name, initial):
    from gpusparse.containers import SparseArray
    if x.dtype.kind not in "fc":
        return (max if name == "nanmax" else min)(x, axis=axis, keepdims=keepdims, initial=initial)
    axes = normalize_axes(axis, x.ndim)
    if initial is NO_VALUE:
        check_identity(name, False, x.shape, axes, name)
    guard = -np.inf if name == "nanmax" else np.inf
    if x.dtype.kind == "c":
        guard = complex(guard, guard)
    be = backend(x.device)
    ufunc, fold = (np.maximum, "max") if name == "nanmax" else (np.minimum, "min")
    extreme = reduce_with(nan_to(x, guard, be=be), Monoid(ufunc), axes, keepdims, None, fold, initial, be=be)
    if initial is not NO_VALUE:
        return extreme
    seen = reduce_with(_not_nan(x, be), Monoid(np.logical_or), axes, keepdims, None, "any", be=be)
    nan = x.dtype.type(np.nan)
    if isinstance(extreme, SparseArray):
        return _ew(np.where, seen, extreme, nan, be=be)
    xp = be.xp
    return dense_result(xp.where(seen, extreme, nan), x.dtype, extreme.shape, xp)


def nanmax(x, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Maximum ignoring NaN (NumPy's ``nanmax``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmax(gs.COO([[0, 1]], [np.nan, -2.0], shape=(2,), device="cpu"))
    array(-2.)
    """
    check_unsupported(out, where, "nanmax")
    return _nan_extreme(x, axis, keepdims, "nanmax", initial)


def nanmin(x, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Minimum ignoring NaN (NumPy's ``nanmin``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmin(gs.COO([[0, 1]], [np.nan, 2.0], shape=(2,), device="cpu"))
    array(2.)
    """
    check_unsupported(out, where, "nanmin")
    return _nan_extreme(x, axis, keepdims, "nanmin", initial)


def nanmean(x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaN (NumPy's ``nanmean``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmean(gs.COO([[0, 1]], [np.nan, 3.0], shape=(3,), device="cpu"))
    array(1.5)
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops import convert
    check_unsupported(out, where, "nanmean")
    if x.dtype.kind not in "fc":
        return mean(x, axis=axis, dtype=dtype, keepdims=keepdims)
    dt = mean_dtype(x.dtype, dtype)
    be = backend(x.device)
    axes = normalize_axes(axis, x.ndim)
    total = reduce_with(nan_to(x, 0.0, be=be), Monoid(np.add), axes, keepdims, dt, "sum", be=be)
    count = reduce_with(_not_nan(x, be), Monoid(np.add), axes, keepdims, np.int64, "sum", be=be)
    if isinstance(total, SparseArray):
        with np.errstate(divide="ignore", invalid="ignore"):
            return convert.astype(_ew(np.true_divide, total, count, be=be), dt, be=be)
    xp = be.xp
    with np.errstate(divide="ignore", invalid="ignore"):
        return dense_result(total / count, dt, total.shape, xp)


def _nan_moment(x, axis, dtype, out, ddof, keepdims, where, name):
    check_unsupported(out, where, name)
    if x.dtype.kind not in "fc":  # nothing to ignore: NumPy's nanvar is var here
        return moment(x, axis, dtype, ddof, keepdims, name[3:])
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TypeError(f"{name}: dtype must be inexact for {x.dtype.name} input, got {np.dtype(dtype).name}")
    return moment(x, axis, dtype, ddof, keepdims, name, skip_nan=True)


def nanvar(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance ignoring NaN (NumPy's ``nanvar``); NaN where ``ddof`` leaves no degree of freedom.

    Over each selection, only the ``c`` elements that are not NaN take part
    (unstored elements are the fill value, so they count unless it is NaN):
    the sum of their squared deviations from their mean, divided by
    ``c - ddof``. A selection with ``c - ddof <= 0`` (all NaN, for one)
    gives NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, 4.0], shape=(3,), device="cpu")
    >>> gs.nanvar(x)
    array(4.)
    >>> gs.nanvar(x, ddof=1)
    array(8.)
    """
    return _nan_moment(x, axis, dtype, out, ddof, keepdims, where, "nanvar")


def nanstd(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation ignoring NaN (NumPy's ``nanstd``), the square root of :func:`nanvar`.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, 4.0], shape=(3,), device="cpu")
    >>> gs.nanstd(x)
    array(2.)
    """
    return _nan_moment(x, axis, dtype, out, ddof, keepdims, where, "nanstd")
