"""Indices of extremes: ``argmax``, ``argmin``, ``nanargmax`` and ``nanargmin``.

The first extreme over an axis is the best stored element or, where the
fill value beats or ties it earlier, the first unstored position of the
group (NumPy's order: NaN counts as the extreme; complex values compare
real part first).
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical
from gpusparse.ops._broadcast import _sparsify_dense_dims, as_coo
from gpusparse.ops.reductions.arguments import check_unsupported, normalize_axes
from gpusparse.ops.reductions.nan_aware import nan_to
from gpusparse.ops.reductions.results import keepdims_dense, keepdims_sparse, sparse_result
from gpusparse.ops.reductions.segments import group_by_kept
from gpusparse.ops.reductions.truth import all, any

__all__ = ["argmax", "argmin", "nanargmax", "nanargmin"]


def _dtype_of(v) -> np.dtype:
    """The dtype of an array (of either device) or of a host scalar."""
    return np.dtype(v.dtype) if hasattr(v, "dtype") else np.asarray(v).dtype


def _lex_cmp(a, b, xp, greater):
    """a > b (or a < b) with NumPy's complex ordering (real part first)."""
    # (getattr's default would be evaluated first: np.asarray of a CuPy array raises)
    if _dtype_of(a).kind == "c" or _dtype_of(b).kind == "c":
        ar, ai, br, bi = xp.real(a), xp.imag(a), xp.real(b), xp.imag(b)
        return (ar > br) | ((ar == br) & (ai > bi)) if greater else (ar < br) | ((ar == br) & (ai < bi))
    return a > b if greater else a < b


def _arg_axis_checked(x, axis, name):
    """``axis`` (None or one axis) normalised; ``ValueError`` for an empty selection, as NumPy."""
    if axis is not None:
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"{name}: axis must be None or an integer, got {axis!r}")
        (axis,) = normalize_axes(axis, x.ndim)
    if (x.size if axis is None else x.shape[axis]) == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    return axis


def _arg(x, axis, keepdims, name):
    from gpusparse.containers import SparseArray
    is_max = name == "argmax"
    axis = _arg_axis_checked(x, axis, name)
    be = backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    with be.scope():
        coo = canonical.coalesce(as_coo(x, be=be), be=be)
        if coo.dense_dim:
            coo = _sparsify_dense_dims(coo, coo.dense_dim, coo.shape[coo.sparse_dim:], be=be)
        fill = coo.fill_value
        fill_nan = bool(np.isnan(fill)) if coo.dtype.kind in "fc" else False
        if axis is None:
            result = _arg_all(coo, fill, fill_nan, is_max, k, xp)
            return result.reshape((1,) * x.ndim) if keepdims else result
        result = _arg_axis(coo, axis, fill, fill_nan, is_max, k, xp)
        if isinstance(result, SparseArray) and (x.sparse_dim == 0 or x.sparse_dim == 1 and axis == 0):
            result = result.todense()  # every sparse axis of x reduced: dense, as other reductions
        if keepdims:
            result = (keepdims_sparse(result, x.shape, (axis,), coo.sparse_dim, be=be) if isinstance(result, SparseArray)
                      else keepdims_dense(result, x.shape, (axis,), xp))
        return result


def _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp):
    """Index of the first extreme: the best stored element or the first unstored one (``gap``)."""
    best_nan = xp.isnan(best_val) if best_val.dtype.kind in "fc" else xp.zeros(best_val.shape, bool)
    beats = _lex_cmp(xp.asarray(fill), best_val, xp, is_max)
    ties = best_val == fill
    if fill_nan:
        take_gap = ~best_nan | (gap < best_idx)
    else:
        take_gap = ~best_nan & (beats | (ties & (gap < best_idx)))
    return xp.where(has_gap & (take_gap | (best_idx < 0)), gap, best_idx)


def _arg_all(coo, fill, fill_nan, is_max, k, xp):
    size = coo.size
    keys = k.linearize(coo.coords, coo.shape) if coo.nnz else xp.zeros(0, np.int64)
    if coo.nnz == 0:
        return xp.asarray(0, dtype=np.int64)
    pos = (xp.argmax if is_max else xp.argmin)(coo.data)
    best_idx = xp.take(keys, pos).reshape(1)
    best_val = xp.take(coo.data, pos).reshape(1)
    mismatch = keys != xp.arange(coo.nnz, dtype=np.int64)
    gap = xp.where(mismatch.any(), xp.argmax(mismatch), coo.nnz).reshape(1).astype(np.int64)
    has_gap = xp.asarray([coo.nnz < size])
    return _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp).reshape(())


def _arg_axis(coo, axis, fill, fill_nan, is_max, k, xp):
    kept = [a for a in range(coo.ndim) if a != axis]
    n_red = coo.shape[axis]
    out_shape = tuple(coo.shape[a] for a in kept)
    if coo.nnz == 0:
        if not kept:
            return xp.asarray(0, dtype=np.int64)
        return sparse_result(xp.zeros((len(kept), 0), np.int64), xp.zeros(0, np.int64), out_shape, 0,
                             coo.device, xp, drop=False)
    if kept:
        perm, starts, ids, group_coords = group_by_kept(coo, kept, k, xp)
    else:
        perm, starts = None, xp.asarray([0, coo.nnz], dtype=np.int64)
        ids = xp.zeros(coo.nnz, dtype=np.int64)
        group_coords = xp.zeros((0, 1), np.int64)
    values = coo.data.reshape(-1, 1)
    rows = k.segment_reduce(values, starts, "argmax" if is_max else "argmin", perm)[:, 0]
    along = coo.coords[axis]
    best_idx = xp.take(along, rows)
    best_val = xp.take(coo.data, rows)
    ordered_along = along if perm is None else xp.take(along, perm)
    rank = xp.arange(coo.nnz, dtype=np.int64) - xp.take(starts, ids)
    counts = starts[1:] - starts[:-1]
    candidate = xp.where(ordered_along != rank, rank, xp.take(counts, ids))
    gap = k.segment_reduce(xp.ascontiguousarray(candidate.reshape(-1, 1)), starts, "min")[:, 0]
    has_gap = counts < n_red
    result = _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp).astype(np.int64)
    if not kept:
        return result.reshape(())
    return sparse_result(group_coords, result, out_shape, 0, coo.device, xp)


def argmax(x, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum over ``axis`` (NumPy's ``argmax``; NaN counts as the maximum).

    ``axis=None`` gives the flat index (a dense 0-d array); over one axis the
    result is sparse over the other axes (fill value 0), or dense for a 1-d
    array.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [2, 0]], [5.0, -1.0], shape=(2, 3), device="cpu")
    >>> gs.argmax(x)
    array(2)
    >>> gs.argmax(x, axis=1).todense()
    array([2, 1])
    """
    check_unsupported(out, None, "argmax")
    return _arg(x, axis, keepdims, "argmax")


def argmin(x, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum over ``axis`` (NumPy's ``argmin``; NaN counts as the minimum).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [2, 0]], [5.0, -1.0], shape=(2, 3), device="cpu")
    >>> gs.argmin(x)
    array(3)
    >>> gs.argmin(x, axis=0).todense()
    array([1, 0, 1])
    """
    check_unsupported(out, None, "argmin")
    return _arg(x, axis, keepdims, "argmin")


def _nan_arg(x, axis, keepdims, name):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise.dispatch import elemwise
    plain = name[3:]
    if x.dtype.kind not in "fc":
        return _arg(x, axis, keepdims, plain)
    axis = _arg_axis_checked(x, axis, name)
    all_nan = all(elemwise(np.isnan, x), axis=axis)
    found = any(all_nan) if isinstance(all_nan, SparseArray) else backend(x.device).xp.any(all_nan)
    if bool(to_host(found)):  # sync: NumPy raises for an all-NaN selection
        raise ValueError(f"{name}: All-NaN slice encountered")
    # NaN becomes the worst value, as NumPy's nanargmax/nanargmin do (-inf+0j for complex).
    return _arg(nan_to(x, -np.inf if name == "nanargmax" else np.inf), axis, keepdims, plain)


def nanargmax(x, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum ignoring NaN (NumPy's ``nanargmax``).

    Raises ``ValueError`` ("All-NaN slice encountered") if any selection
    holds only NaN; unstored elements take part as the fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [np.nan, -1.0], shape=(2, 3), device="cpu")
    >>> gs.nanargmax(x)
    array(1)
    >>> gs.nanargmax(x, axis=1).todense()
    array([1, 0])
    """
    check_unsupported(out, None, "nanargmax")
    return _nan_arg(x, axis, keepdims, "nanargmax")


def nanargmin(x, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum ignoring NaN (NumPy's ``nanargmin``).

    Raises ``ValueError`` ("All-NaN slice encountered") if any selection
    holds only NaN; unstored elements take part as the fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [np.nan, -1.0], shape=(2, 3), device="cpu")
    >>> gs.nanargmin(x)
    array(5)
    >>> gs.nanargmin(x, axis=1).todense()
    array([1, 2])
    """
    check_unsupported(out, None, "nanargmin")
    return _nan_arg(x, axis, keepdims, "nanargmin")
