"""Triangles and diagonals of the last axes: ``tril``, ``triu``, ``diagonal``, ``diag``.

``tril``, ``triu`` and ``diag`` (building a matrix) need a zero fill value.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import convert
from gpusparse.ops._validate import check_axis
from gpusparse.ops.shape._common import _coo, _keep_format, _new_coo, _zero_fill, sparsify
from gpusparse.ops.shape.permutation import permute_dims_on

__all__ = ["diag", "diagonal", "tril", "triu"]


def _triangle(x, k, lower):
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dimensions, got {x.ndim}")
    _zero_fill(x, "tril" if lower else "triu")
    k = operator.index(k)
    be = backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    n = coo.ndim
    xp = be.xp
    with be.scope():
        if S == n:  # both axes sparse: drop entries
            diff = coo.coords[n - 1] - coo.coords[n - 2]
            return _keep_format(x, convert.keep_entries(coo, diff <= k if lower else diff >= k, be=be), be)
        rows, cols = coo.shape[n - 2], coo.shape[n - 1]
        if S == n - 1:  # row sparse, column dense
            j = xp.arange(cols, dtype=np.int64).reshape(1, cols)
            diff = j - coo.coords[n - 2].reshape(-1, 1)
        else:
            diff = (xp.arange(cols, dtype=np.int64).reshape(1, cols)
                    - xp.arange(rows, dtype=np.int64).reshape(rows, 1))
        mask = diff <= k if lower else diff >= k
        data = xp.where(mask, coo.data, xp.zeros((), dtype=coo.dtype))
    out = _new_coo(coo.coords, data, coo.shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)
    return _keep_format(x, out, be)


def tril(x, k=0):
    """Lower triangle of the last two axes: elements above the ``k``-th diagonal become 0.

    Needs a zero fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> tril(gs.fromdense(np.ones((2, 2)), device="cpu")).todense()
    array([[1., 0.],
           [1., 1.]])
    """
    return _triangle(x, k, lower=True)


def triu(x, k=0):
    """Upper triangle of the last two axes: elements below the ``k``-th diagonal become 0.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> triu(gs.fromdense(np.ones((2, 2)), device="cpu")).todense()
    array([[1., 1.],
           [0., 1.]])
    """
    return _triangle(x, k, lower=False)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal over ``axis1`` and ``axis2``, appended as the last axis (NumPy's ``diagonal``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> diagonal(gs.fromdense(np.arange(6).reshape(2, 3), device="cpu"), 1).todense()
    array([1, 5])
    """
    return _diagonal(x, offset, axis1, axis2, backend(x.device))


def _diagonal(x, offset, axis1, axis2, be):
    """:func:`diagonal` of ``x`` on its device's backend ``be``."""
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dimensions, got {x.ndim}")
    a1, a2 = check_axis(axis1, x.ndim, "axis1"), check_axis(axis2, x.ndim, "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator.index(offset)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    y = permute_dims_on(x, rest + [a1, a2], be)
    n = y.ndim
    n1, n2 = y.shape[n - 2], y.shape[n - 1]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    shape = y.shape[: n - 2] + (length,)
    xp = be.xp
    if y.sparse_dim <= n - 2:
        coo = _coo(y, be)
        with be.scope():
            data = xp.diagonal(coo.data, offset, axis1=n - 1 - coo.sparse_dim,
                               axis2=n - coo.sparse_dim).copy()
        return _new_coo(coo.coords, data, shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)
    coo = sparsify(y, n, be=be)
    with be.scope():
        r, c = coo.coords[n - 2], coo.coords[n - 1]
        keep = xp.nonzero(c - r == offset)[0]  # sync: entries on the diagonal
        coords = xp.take(coo.coords[: n - 1], keep, axis=1)
        if offset < 0:
            coords[n - 2] = xp.take(c, keep)
        data = xp.take(coo.data, keep, axis=0)
    return _new_coo(coords, data, shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)


def diag(x, k=0):
    """NumPy's ``diag``: the ``k``-th diagonal of a 2-D array, or a 2-D array with ``x`` on it.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> diag(gs.fromdense(np.array([1, 2]), device="cpu"), 1).todense()
    array([[0, 1, 0],
           [0, 0, 2],
           [0, 0, 0]])
    """
    k = operator.index(k)
    be = backend(x.device)
    if x.ndim == 2:
        return _diagonal(x, k, 0, 1, be)
    if x.ndim != 1:
        raise ValueError(f"diag needs a 1-D or 2-D array, got {x.ndim}-d")
    _zero_fill(x, "diag")
    coo = sparsify(x, 1, be=be)
    n = x.shape[0] + abs(k)
    xp = be.xp
    with be.scope():
        c = coo.coords[0]
        coords = xp.stack([c + max(-k, 0), c + max(k, 0)])
    return _new_coo(coords, coo.data, (n, n), coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)
