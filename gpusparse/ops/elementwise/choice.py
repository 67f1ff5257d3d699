"""Choosing between values elementwise: ``where``, ``clip``, ``maximum``, ``minimum``."""

from __future__ import annotations

import numpy as np

from gpusparse.ops.elementwise.dispatch import elemwise

__all__ = ["clip", "maximum", "minimum", "where"]


def clip(x, a_min=None, a_max=None):
    """Limit the values to ``[a_min, a_max]`` (``np.clip``); bounds may be arrays.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.clip(gs.COO([[0, 1]], [-5.0, 5.0], shape=(3,), device="cpu"), -1, 2).todense()
    array([-1.,  2.,  0.])
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    dtype = getattr(x, "dtype", None)
    return elemwise(np.clip, x, _no_op_bound(a_min, dtype, "min"), _no_op_bound(a_max, dtype, "max"))


def _no_op_bound(bound, dtype, end):
    """A Python int bound that clips nothing, as the end ``"min"``/``"max"`` of an integer dtype's range.

    NumPy takes a lower bound below the range (or an upper bound above it)
    as no bound; CuPy raises ``OverflowError`` for any bound outside the
    range, so such a one is moved to the range's end first. A bound past
    the other end stays, and both raise ``OverflowError``, as NumPy does.
    """
    if type(bound) is not int or dtype is None or np.dtype(dtype).kind not in "iu":
        return bound
    info = np.iinfo(dtype)
    return max(bound, int(info.min)) if end == "min" else min(bound, int(info.max))


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y`` (``np.where``), any of them sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> c = gs.COO([[1]], [True], shape=(3,), device="cpu")
    >>> gs.where(c, 5.0, gs.COO([[2]], [7.0], shape=(3,), device="cpu")).todense()
    array([0., 5., 7.])
    """
    return elemwise(np.where, condition, x, y)


def maximum(x, y):
    """Elementwise maximum, NaN propagating (``np.maximum``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> a = gs.COO([[0, 1]], [-1.0, 3.0], shape=(3,), device="cpu")
    >>> gs.maximum(a, 0).todense()
    array([0., 3., 0.])
    """
    return elemwise(np.maximum, x, y)


def minimum(x, y):
    """Elementwise minimum, NaN propagating (``np.minimum``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> a = gs.COO([[0, 1]], [-1.0, 3.0], shape=(3,), device="cpu")
    >>> gs.minimum(a, 0).todense()
    array([-1.,  0.,  0.])
    """
    return elemwise(np.minimum, x, y)
