"""Truth reductions: ``any``, ``all`` and ``count_nonzero`` (over ``x != 0``)."""

from __future__ import annotations

import numpy as np

from gpusparse.ops.reductions.arguments import check_unsupported
from gpusparse.ops.reductions.engine import reduce_with
from gpusparse.ops.reductions.monoid import Monoid

__all__ = ["all", "any", "count_nonzero"]


def any(x, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element over ``axis`` is nonzero (NumPy's ``any``; NaN counts as True).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [2.0], shape=(3,), device="cpu")
    >>> gs.any(x)
    array(True)
    """
    check_unsupported(out, where, "any")
    return reduce_with(_truthy(x), Monoid(np.logical_or), axis, keepdims, None, "any")


def all(x, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element over ``axis`` is nonzero (NumPy's ``all``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [2.0], shape=(3,), device="cpu")
    >>> gs.all(x), gs.all(x, axis=0, keepdims=True).shape
    (array(False), (1,))
    """
    check_unsupported(out, where, "all")
    return reduce_with(_truthy(x), Monoid(np.logical_and), axis, keepdims, None, "all")


def _truthy(x):
    """``x != 0`` as a bool sparse array (coalesced first: duplicates may cancel)."""
    if x.dtype == np.bool_:
        return x
    from gpusparse.ops.elementwise.dispatch import elemwise
    return elemwise(np.not_equal, x, x.dtype.type(0))


def count_nonzero(x, axis=None, *, keepdims=False):
    """How many elements over ``axis`` are nonzero, unstored ones included (int64).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 0.0, 5.0], shape=(2, 3), device="cpu")
    >>> gs.count_nonzero(x)
    array(2)
    >>> gs.count_nonzero(x, axis=1).todense()
    array([1, 1])
    """
    return reduce_with(_truthy(x), Monoid(np.add), axis, keepdims, np.int64, "count_nonzero")
