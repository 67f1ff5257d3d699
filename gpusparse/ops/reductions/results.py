"""The results of reductions: sparse COO results without fill-valued entries, dense ones, keepdims.

Reducing every sparse dimension gives a dense array (:func:`dense_result`),
otherwise a COO array over the kept dimensions (:func:`sparse_result`);
``keepdims=True`` re-inserts the reduced axes as size-1 dimensions
(:func:`keepdims_sparse`, :func:`keepdims_dense`).
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import _fill

__all__ = ["dense_result", "keepdims_dense", "keepdims_sparse", "sparse_result"]


def sparse_result(coords, data, shape, fill, dev, xp, *, drop=True, flags=(True, True)):
    """A COO result of ``shape``, without the entries equal to ``fill`` unless ``drop`` is False."""
    from gpusparse.containers import COO
    data = xp.ascontiguousarray(data)
    fill = np.asarray(fill).astype(data.dtype)[()]
    if drop:
        coords, data = _fill.drop(coords, data, fill, xp)
    return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(data), tuple(shape), fill, dev,
                           sorted=flags[0], unique=flags[1])


def keepdims_sparse(out, x_shape, axes, sparse_dim, *, be=None):
    """Re-insert the reduced axes of a sparse result as size-1 dimensions (on backend ``be`` when given)."""
    from gpusparse.containers import COO
    xp = (be or backend(out.device)).xp
    shape = tuple(1 if a in axes else s for a, s in enumerate(x_shape))
    rows, it = [], iter(range(out.sparse_dim))
    n = out.nnz
    for a in range(sparse_dim):
        rows.append(xp.zeros(n, dtype=np.int64) if a in axes else out.coords[next(it)])
    coords = xp.stack(rows) if rows else xp.zeros((0, n), dtype=np.int64)
    dense_axes = [a - sparse_dim + 1 for a in axes if a >= sparse_dim]
    data = xp.expand_dims(out.data, tuple(dense_axes)) if dense_axes else out.data
    return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(data), shape, out.fill_value,
                           out.device, sorted=out.sorted, unique=out.unique)


def keepdims_dense(arr, x_shape, axes, xp):
    """Re-insert the reduced axes of a dense result as size-1 dimensions."""
    return arr.reshape(tuple(1 if a in axes else s for a, s in enumerate(x_shape)))


def dense_result(result, dtype, shape, xp):
    """A C-contiguous array of ``shape`` (0-d included: ``ascontiguousarray`` would make it 1-d)."""
    out = xp.asarray(result).astype(dtype, copy=False).reshape(shape)
    return out if out.flags.c_contiguous else out.copy()
