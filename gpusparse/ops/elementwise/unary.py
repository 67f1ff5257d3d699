"""Named unary maps: ``abs``, ``isnan``, ``isfinite``, ``conj``, ``real``, ``imag``, ``round``, ``nan_to_num``."""

from __future__ import annotations

import numpy as np

from gpusparse.ops.elementwise.dispatch import elemwise

__all__ = ["abs", "conj", "imag", "isfinite", "isnan", "nan_to_num", "real", "round"]

_builtin_round = round


def _unary(func, x, **kwargs):
    return elemwise(func, x, **kwargs)


def abs(x):
    """Absolute value, elementwise (``np.absolute``); fill value ``abs(fill)``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.abs(gs.COO([[1]], [-2.0], shape=(3,), device="cpu")).todense()
    array([0., 2., 0.])
    """
    return _unary(np.absolute, x)


def isnan(x):
    """True where ``x`` is NaN (``np.isnan``); a bool sparse array.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.isnan(gs.COO([[1]], [np.nan], shape=(3,), device="cpu")).todense()
    array([False,  True, False])
    """
    return _unary(np.isnan, x)


def isfinite(x):
    """True where ``x`` is finite (``np.isfinite``); fill value ``isfinite(fill)``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> y = gs.isfinite(gs.COO([[1]], [np.inf], shape=(3,), device="cpu"))
    >>> y.fill_value, y.todense()
    (np.True_, array([ True, False,  True]))
    """
    return _unary(np.isfinite, x)


def conj(x):
    """Complex conjugate (``np.conjugate``); linear, so duplicates stay as they are.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.conj(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([1.-2.j, 0.-0.j])
    """
    return _unary(np.conjugate, x)


def real(x):
    """The real part (``np.real``); a real array for complex ``x``, ``x`` itself otherwise.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.real(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([1., 0.])
    """
    if x.dtype.kind != "c":
        return x
    return _unary(np.real, x)


def imag(x):
    """The imaginary part (``np.imag``); zeros of ``x``'s dtype for real ``x``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.imag(gs.COO([[0]], [1 + 2j], shape=(2,), device="cpu")).todense()
    array([2., 0.])
    """
    return _unary(np.imag, x)


def round(x, decimals: int = 0):
    """Round to ``decimals`` decimals (``np.round``: halves to even).

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.round(gs.COO([[0, 1]], [1.25, 2.5], shape=(3,), device="cpu"), 1).todense()
    array([1.2, 2.5, 0. ])
    """
    return _unary(np.round, x, decimals=_builtin_round(decimals))


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities (``np.nan_to_num``), in the fill value too.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, np.inf], shape=(3,), device="cpu")
    >>> gs.nan_to_num(x, posinf=9.0).todense()
    array([0., 9., 0.])
    """
    return _unary(np.nan_to_num, x, nan=nan, posinf=posinf, neginf=neginf)
