"""Named selections: ``index_select``, ``narrow``, ``take``, ``nonzero``, ``argwhere``."""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_axis
from gpusparse.ops.indexing.keys import _index_array
from gpusparse.ops.indexing.subscript import getitem

__all__ = ["argwhere", "index_select", "narrow", "nonzero", "take"]


def index_select(x, axis, index):
    """The slices ``index`` (a 1-D integer array) along ``axis`` (torch's ``index_select``).

    Same as ``x[(slice(None),) * axis + (index,)]``; CSR rows and CSC columns
    take a gather fast path and keep the format.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[1, 0], [0, 2], [3, 0]]), format="csr", device="cpu")
    >>> y = index_select(x, 0, [2, 0, 2])
    >>> y.format, y.todense().tolist()
    ('csr', [[3, 0], [1, 0], [3, 0]])
    """
    axis = check_axis(axis, x.ndim)
    index = _index_array(index, x.device)
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise IndexError(
            f"index must be a 1-D integer array, got a {index.ndim}-d array of {index.dtype.name}"
        )
    return getitem(x, (slice(None),) * axis + (index,), be=backend(x.device))


def narrow(x, axis, start, length):
    """``length`` consecutive slices from ``start`` along ``axis`` (torch's ``narrow``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6).reshape(2, 3), device="cpu")
    >>> narrow(x, 1, -2, 2).todense()
    array([[1, 2],
           [4, 5]])
    """
    axis = check_axis(axis, x.ndim)
    n = x.shape[axis]
    start, length = operator.index(start), operator.index(length)
    if not -n <= start <= n:
        raise IndexError(f"start {start} is out of range for axis {axis} of size {n}")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise IndexError(
            f"start ({start}) + length ({length}) exceeds dimension size ({n}) of axis {axis}"
        )
    return getitem(x, (slice(None),) * axis + (slice(start, start + length),), be=backend(x.device))


def take(x, indices, axis=None):
    """NumPy's ``take``: ``x[..., indices, ...]`` along ``axis``, of the flattened array if None.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0, 5], [7, 0]]), device="cpu")
    >>> take(x, [1, 2]).todense()
    array([5, 7])
    >>> take(x, [[1]], axis=1).todense()
    array([[[5]],
    <BLANKLINE>
           [[0]]])
    """
    return take_on(x, indices, axis, backend(x.device))


def take_on(x, indices, axis, be):
    """:func:`take` of ``x`` on the backend ``be`` of its device."""
    if axis is None:
        from gpusparse.ops.shape.reshaping import reshape_on
        return getitem(reshape_on(x, (-1,), be), _take_index(indices, x.device), be=be)
    axis = check_axis(axis, x.ndim)
    return getitem(x, (slice(None),) * axis + (_take_index(indices, x.device),), be=be)


def _take_index(indices, dev):
    from gpusparse.containers import SparseArray
    if isinstance(indices, (int, np.integer)):
        return int(indices)
    if isinstance(indices, SparseArray):  # an index list is dense in nature: its elements, on its device
        indices = indices.todense()
    arr = _index_array(indices, dev)
    if arr.dtype.kind not in "iu":
        raise IndexError("indices must be integers")
    return arr


def nonzero(x):
    """Indices of the non-zero elements, one array per dimension, in row-major order.

    Needs a zero fill value (the result would be dense otherwise), as pydata
    sparse does. Explicitly stored zeros are not reported.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[1, 0, 1]], [2, 3, 0], shape=(3,), device="cpu")
    >>> nonzero(x)
    (array([0, 1]),)
    """
    return _nonzero(x, backend(x.device))


def _nonzero(x, be):
    """:func:`nonzero` of ``x`` on its device's backend ``be``."""
    fill = x.fill_value
    if fill != 0 or fill != fill:
        raise ValueError(f"nonzero needs a zero fill value, got {fill!r}")
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not defined (NumPy raises too); use argwhere")
    coo = canonical.coalesce(x if x.format == "coo" else convert.compressed_to_coo(x, be=be), be=be)
    xp = be.xp
    with be.scope():
        hit = coo.data != 0
        where = xp.nonzero(hit)  # sync: number of non-zero elements
        entry = where[0]
        out = tuple(xp.take(row, entry) for row in coo.coords) + tuple(w.astype(np.int64) for w in where[1:])
    return tuple(xp.ascontiguousarray(a, dtype=np.int64) for a in out)


def argwhere(x):
    """Indices of the non-zero elements as an ``(N, ndim)`` array (NumPy's ``argwhere``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> argwhere(gs.fromdense(np.array([[0, 1], [2, 0]]), device="cpu"))
    array([[0, 1],
           [1, 0]])
    """
    be = backend(x.device)
    xp = be.xp
    if x.ndim == 0:
        value = to_host(convert.to_dense(x, be=be)).item()  # sync: one element
        with be.scope():
            return xp.zeros((int(value != 0), 0), dtype=np.int64)
    parts = _nonzero(x, be)
    with be.scope():
        return xp.ascontiguousarray(xp.stack(parts, axis=1))
