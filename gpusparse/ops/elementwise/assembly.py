"""The result arrays of elementwise operations: COO, CSR or CSC without fill-valued entries.

:func:`finish` and :func:`finish_csc` assemble a result from coordinates
and values; :func:`prune` drops the stored entries equal to the fill value
of any array.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse._dtypes import index_dtype_for
from gpusparse.ops import canonical, convert
from gpusparse.ops._fill import drop, kept
from gpusparse.ops.elementwise.evaluation import prepare_values

__all__ = ["eliminate_zeros", "finish", "finish_csc", "prune", "prune_on"]


def finish(coords, values, fill, dt, shape, prefix, dense_shape, flags, fmt, be, keep_fill_entries):
    """The result in ``fmt`` on backend ``be`` from its coordinates and values (fill entries dropped unless kept)."""
    from gpusparse.containers import COO
    dev, xp = be.device, be.xp
    values = prepare_values(values, dt, coords.shape[1], dense_shape, xp)
    if not keep_fill_entries:
        coords, values = drop(coords, values, fill, xp)
    coords = xp.ascontiguousarray(coords)
    coo = COO._from_parts(coords, values, shape, np.asarray(fill).astype(dt)[()], dev,
                          sorted=flags[0], unique=flags[1])
    if fmt == "coo":
        return coo
    if fmt == "csr" and coo.is_coalesced():
        k = be.kernels
        from gpusparse.containers import CSR
        index_dtype = index_dtype_for(shape[0], shape[1], coo.nnz)
        indptr = k.compress(coords[0], shape[0], index_dtype)
        return CSR._from_parts(indptr, coords[1].astype(index_dtype), values, shape, coo.fill_value, dev)
    return convert.asformat(coo, fmt, be=be)


def finish_csc(coords_cm, values, fill, dt, shape, dense_shape, be, keep_fill_entries):
    """A CSC result on backend ``be`` from column-major sorted, unique coordinates ``(col, row)``."""
    from gpusparse.containers import CSC
    k, xp = be.kernels, be.xp
    values = prepare_values(values, dt, coords_cm.shape[1], dense_shape, xp)
    if not keep_fill_entries:
        coords_cm, values = drop(coords_cm, values, fill, xp)
    index_dtype = index_dtype_for(shape[0], shape[1], values.shape[0])
    indptr = k.compress(xp.ascontiguousarray(coords_cm[0]), shape[1], index_dtype)
    indices = coords_cm[1].astype(index_dtype)
    return CSC._from_parts(indptr, xp.ascontiguousarray(indices), values, shape,
                           np.asarray(fill).astype(dt)[()], be.device)


def prune(x):
    """``x`` without the stored entries equal to its fill value (blocks: all elements equal).

    NaN entries are dropped when the fill value is NaN. Duplicates are
    summed first unless the fill value is 0 (a stored 0 then adds
    nothing). SciPy calls this ``eliminate_zeros`` for fill value 0.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1, 2]], [1.0, 0.0, 2.0], shape=(4,), device="cpu")
    >>> gs.prune(x).nnz
    2
    """
    return prune_on(x, backend(x.device))


def prune_on(x, be):
    """:func:`prune` of ``x`` on its device's backend ``be``."""
    from gpusparse.containers import COO
    dev, xp = be.device, be.xp
    with be.scope():
        if x.format != "coo":
            keep = kept(x.data, x.fill_value, xp)
            if keep is None:
                return x
            return convert.keep_entries(x, keep, be=be)
        coo = x
        if not coo.unique and not (x.fill_value == 0):
            coo = canonical.coalesce(coo, be=be)
        coords, values = drop(coo.coords, coo.data, x.fill_value, xp)
        if values.shape[0] == x.nnz:
            return x
        return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(values), x.shape,
                               x.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


eliminate_zeros = prune
