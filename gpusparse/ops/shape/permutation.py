"""Axis permutations: ``permute_dims`` (``transpose``), ``swapaxes``, ``moveaxis``, ``matrix_transpose``.

Permutations permute the coordinate rows (and transpose ``data`` for dense
dimensions); the result is flagged unsorted unless the sparse dimensions
keep their order, or one axis moved to the front, which a stable sort on
that axis alone puts back in order. Transposing CSR gives CSC over the same
arrays, and back. Where a dense dimension has to move in front of a sparse
one, it becomes sparse first (:func:`~gpusparse.ops.shape.sparsify`).
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops._validate import check_axis
from gpusparse.ops.shape._common import _axes, _coo, _new_coo, sparsify

__all__ = ["matrix_transpose", "moveaxis", "permute_dims", "permute_dims_on", "swapaxes", "transpose"]


def permute_dims(x, axes=None):
    """Permute the axes (NumPy's ``transpose`` / array API ``permute_dims``; torch's ``permute``).

    ``axes=None`` reverses them. Transposing a 2-D CSR gives a CSC over the
    same arrays (and back); other permutations of sparse dimensions give an
    unsorted COO.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6).reshape(1, 2, 3), device="cpu")
    >>> permute_dims(x, (2, 0, 1)).shape
    (3, 1, 2)
    >>> gs.fromdense(np.eye(2), format="csr", device="cpu").T.format
    'csc'
    """
    return permute_dims_on(x, axes, backend(x.device))


def permute_dims_on(x, axes, be):
    """:func:`permute_dims` of ``x`` on its device's backend ``be``."""
    ndim = x.ndim
    if axes is None:
        axes = tuple(range(ndim - 1, -1, -1))
    else:
        axes = tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,)
        if len(axes) != ndim:
            raise ValueError(f"axes don't match array: got {len(axes)} axes for a {ndim}-d array")
        axes = _axes(axes, ndim, "axes")
    if axes == tuple(range(ndim)):
        return x
    xp = be.xp
    if x.format != "coo" and axes[:2] in ((0, 1), (1, 0)) and sorted(axes[2:]) == list(axes[2:]) == list(range(2, ndim)):
        return _swap_compressed(x)
    if x.format != "coo" and axes[:2] == (0, 1):
        with be.scope():
            data = xp.ascontiguousarray(xp.transpose(x.data, (0,) + tuple(a - 1 for a in axes[2:])))
        shape = x.shape[:2] + tuple(x.shape[a] for a in axes[2:])
        return type(x)._from_parts(x.indptr, x.indices, data, shape, x.fill_value, be.device)
    S = x.sparse_dim
    last = max((p for p, a in enumerate(axes) if a < S), default=-1)
    width = last + 1
    while width and max(axes[:width]) + 1 > width:
        width = max(axes[:width]) + 1
    coo = sparsify(x, max(width, S), be=be) if width > S else _coo(x, be)
    S = coo.sparse_dim
    with be.scope():
        data = xp.transpose(coo.data, (0,) + tuple(a - S + 1 for a in axes[S:]))
    shape = tuple(coo.shape[a] for a in axes)
    keeps_order = axes[:S] == tuple(range(S))
    moved = axes[0]
    if (coo.sorted and not keeps_order and coo.nnz > 1
            and axes[:S] == (moved,) + tuple(d for d in range(S) if d != moved)):
        # one axis moved to the front (a 2-D transpose): a stable sort on that
        # axis alone restores row-major order, since the rest is ordered already
        coords, data = _stable_by_axis(coo.coords, data, list(axes[:S]), shape[0], be)
        keeps_order = True
    else:
        with be.scope():
            coords = coo.coords[list(axes[:S])] if S else coo.coords
    return _new_coo(coords, data, shape, coo.fill_value, be,
                    sorted=coo.sorted and keeps_order, unique=coo.unique)


def _stable_by_axis(coords, data, rows, n_first, be):
    """``coords[rows]`` and ``data`` stably sorted by ``coords[rows[0]]`` (``n_first`` values), on backend ``be``."""
    k, xp = be.kernels, be.xp
    n, S = int(coords.shape[1]), len(rows)
    with be.scope():
        if n_first <= 4 * n + (1 << 16):  # one counting pass, then scatters
            dest, starts = k.bucket_order(coords[rows[0]], n_first)
            width = math.prod(data.shape[1:])
            out = k.empty((S, n), np.int64)
            k.expand(starts, n, out=out[0])
            for d in range(1, S):
                k.scatter_dense(dest, coords[rows[d]].reshape(n, 1), out[d].reshape(n, 1))
            flat = k.empty((n, width), data.dtype)
            k.scatter_dense(dest, xp.ascontiguousarray(data).reshape(n, width), flat)
            return out, flat.reshape(data.shape)
        first, order = k.sort_pairs(coords[rows[0]], None, max(n_first - 1, 0).bit_length())
        out = xp.concatenate([first.reshape(1, -1), xp.take(coords[rows[1:]], order, axis=1)])
        return out, xp.take(data, order, axis=0)


transpose = permute_dims


def _swap_compressed(x):
    from gpusparse.containers import CSC, CSR
    cls = CSC if x.format == "csr" else CSR
    shape = (x.shape[1], x.shape[0]) + x.shape[2:]
    return cls._from_parts(x.indptr, x.indices, x.data, shape, x.fill_value, x.device)


def swapaxes(x, axis1, axis2):
    """Interchange two axes (NumPy's ``swapaxes``; torch's ``transpose(dim0, dim1)``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> swapaxes(gs.fromdense(np.zeros((2, 3, 4)), device="cpu"), 0, 2).shape
    (4, 3, 2)
    """
    a, b = check_axis(axis1, x.ndim, "axis1"), check_axis(axis2, x.ndim, "axis2")
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, axes)


def moveaxis(x, source, destination):
    """Move axes to new positions, the others keeping their order (NumPy's ``moveaxis``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> moveaxis(gs.fromdense(np.zeros((2, 3, 4)), device="cpu"), 0, -1).shape
    (3, 4, 2)
    """
    src = _axes(source, x.ndim, "source")
    dst = _axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("source and destination arguments must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def matrix_transpose(x):
    """Swap the last two axes (the array API's ``matrix_transpose``, ``x.mT``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> matrix_transpose(gs.fromdense(np.zeros((2, 3, 4)), device="cpu")).shape
    (2, 4, 3)
    """
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got a {x.ndim}-d array")
    return swapaxes(x, -1, -2)
