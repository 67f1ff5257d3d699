"""The folds: ``reduce`` with any associative ufunc, ``sum``, ``prod``, ``max`` and ``min``.

Unstored elements take part as the fill value, folded in closed form (see
:mod:`~gpusparse.ops.reductions.monoid`); NaN propagates as in NumPy.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops.reductions.arguments import NO_VALUE, check_unsupported
from gpusparse.ops.reductions.engine import reduce_with
from gpusparse.ops.reductions.monoid import Monoid

__all__ = ["max", "min", "prod", "reduce", "sum"]


def reduce(x, ufunc, axis=None, keepdims=False, dtype=None, initial=NO_VALUE):
    """Reduce ``x`` with any associative binary ufunc (``np.add``, ``np.bitwise_xor``, ...).

    Parameters
    ----------
    ufunc : numpy.ufunc
        Binary, one output, associative and commutative. ``add``,
        ``multiply``, ``maximum``, ``minimum``, ``logical_or`` and
        ``logical_and`` run the segmented-reduction primitive; any other
        ufunc its own ``reduceat``.
    axis : None, int or tuple of ints
        The axes to reduce; None reduces all (unlike ``ufunc.reduce``,
        whose default is 0).
    keepdims : bool
    dtype : dtype, optional
    initial : scalar, optional
        Folded into every result, as in NumPy.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 1, 1]], [1, 6, 3], shape=(2, 3), device="cpu")
    >>> gs.reduce(x, np.bitwise_or, axis=1).todense()
    array([7, 3])
    """
    return reduce_with(x, Monoid(ufunc), axis, keepdims, dtype, f"reduce({ufunc.__name__})", initial)


def sum(x, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Sum over ``axis`` (NumPy's ``sum``; torch's ``sparse.sum``; TF's ``sparse.reduce_sum``).

    Unstored elements count as the fill value. Reducing every sparse
    dimension gives a dense array, otherwise a sparse one. Duplicates of an
    uncoalesced array with fill value 0 are summed directly, without
    coalescing.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 1.0], shape=(2, 3), device="cpu")
    >>> gs.sum(x)
    array(3.)
    >>> gs.sum(x, axis=1).todense()
    array([2., 1.])
    >>> gs.sum(x, axis=0, keepdims=True).shape
    (1, 3)
    """
    check_unsupported(out, where, "sum")
    return reduce_with(x, Monoid(np.add), axis, keepdims, dtype, "sum", initial)


def prod(x, axis=None, dtype=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Product over ``axis`` (NumPy's ``prod``); unstored elements count as the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2.0, 3.0], shape=(3,), fill_value=1.0, device="cpu")
    >>> gs.prod(x)
    array(6.)
    """
    check_unsupported(out, where, "prod")
    return reduce_with(x, Monoid(np.multiply), axis, keepdims, dtype, "prod", initial)


def max(x, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Maximum over ``axis`` (NumPy's ``max``): NaN propagates; unstored elements are the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [-1.0, 4.0], shape=(2, 3), device="cpu")
    >>> gs.max(x, axis=1).todense()
    array([0., 4.])
    """
    check_unsupported(out, where, "max")
    return reduce_with(x, Monoid(np.maximum), axis, keepdims, None, "max", initial)


def min(x, axis=None, out=None, keepdims=False, initial=NO_VALUE, where=None):
    """Minimum over ``axis`` (NumPy's ``min``): NaN propagates; unstored elements are the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [-1.0, 4.0], shape=(2, 3), device="cpu")
    >>> gs.min(x, axis=1).todense()
    array([-1.,  0.])
    """
    check_unsupported(out, where, "min")
    return reduce_with(x, Monoid(np.minimum), axis, keepdims, None, "min", initial)
