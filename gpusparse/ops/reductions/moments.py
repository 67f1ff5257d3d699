"""Moments: ``mean``, ``var`` and ``std`` (with ``ddof``), and the NaN-skipping core of ``nanvar``.

The mean is a sum divided by the number of elements. Deviations are not
decomposable, so the variance takes two passes over coalesced segments: the
group means, then the squared deviations of the stored values plus ``n - c``
times that of the fill value.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse._dtypes import native_dtype
from gpusparse.ops import canonical
from gpusparse.ops._broadcast import _sparsify_dense_dims, as_coo
from gpusparse.ops.reductions.arguments import check_unsupported, normalize_axes
from gpusparse.ops.reductions.engine import reduce_with
from gpusparse.ops.reductions.monoid import Monoid
from gpusparse.ops.reductions.results import dense_result, keepdims_dense, keepdims_sparse, sparse_result
from gpusparse.ops.reductions.segments import group_by_kept

__all__ = ["mean", "mean_dtype", "moment", "std", "var"]


def mean_dtype(dtype, requested):
    """The dtype of a mean: ``requested``, or NumPy's (float64 for integers)."""
    if requested is not None:
        return native_dtype(requested)
    return np.mean(np.ones(1, dtype=dtype)).dtype


def _divide(result, n, be):
    """``result / n`` for a sparse or dense result, on backend ``be``."""
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise.dispatch import apply
    from gpusparse.ops.elementwise.operands import classify
    xp = be.xp
    if isinstance(result, SparseArray):
        return apply(np.true_divide, classify([result, n]), {}, be=be)
    with np.errstate(divide="ignore", invalid="ignore"):
        return dense_result(xp.true_divide(result, n), result.dtype, result.shape, xp)


def mean(x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (NumPy's ``mean``: integers give float64).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2, 4], shape=(4,), device="cpu")
    >>> gs.mean(x)
    array(1.5)
    """
    check_unsupported(out, where, "mean")
    axes = normalize_axes(axis, x.ndim)
    dt = mean_dtype(x.dtype, dtype)
    be = backend(x.device)
    total = reduce_with(x, Monoid(np.add), axes, keepdims, dt, "sum", be=be)
    n = math.prod(x.shape[a] for a in axes)
    with be.scope():
        return _divide(total, n, be)


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance over ``axis`` (NumPy's ``var``: mean of ``|x - x.mean()|**2``, ``ddof``).

    Two passes: the group means, then the squared deviations of the stored
    values plus ``n - c`` times that of the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2.0, 4.0], shape=(4,), device="cpu")
    >>> gs.var(x)
    array(2.75)
    """
    check_unsupported(out, where, "var")
    return moment(x, axis, dtype, ddof, keepdims, "var")


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation over ``axis`` (NumPy's ``std``), the square root of :func:`var`.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [1.0, 3.0], shape=(4,), fill_value=2.0, device="cpu")
    >>> gs.std(x)
    array(0.70710678)
    """
    check_unsupported(out, where, "std")
    return moment(x, axis, dtype, ddof, keepdims, "std")


def moment(x, axis, dtype, ddof, keepdims, name, skip_nan=False):
    """The variance (``name`` ending in ``var``) or standard deviation over ``axis``; NaN skipped if ``skip_nan``."""
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise.dispatch import elemwise
    axes = normalize_axes(axis, x.ndim)
    dt = mean_dtype(x.dtype, dtype)
    real_dt = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    real_dt = {np.dtype("f"): np.dtype(np.float32), np.dtype("d"): np.dtype(np.float64)}.get(real_dt, real_dt)
    n = math.prod(x.shape[a] for a in axes)
    be = backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    with be.scope():
        coo = as_coo(x, be=be)
        sd = coo.sparse_dim
        red_dense = [a for a in axes if a >= sd]
        if red_dense:  # deviations are not decomposable: make the reduced dense axes sparse
            last = max(red_dense)
            coo = _sparsify_dense_dims(canonical.coalesce(coo, be=be), last - sd + 1, coo.shape[sd:last + 1],
                                       be=be)
        coo = canonical.coalesce(coo, be=be)
        if coo.dtype != dt:
            coo = coo.astype(dt)
        core = _nan_moment_core if skip_nan else _moment_core
        result = core(coo, axes, n, ddof, real_dt, k, xp)
        if isinstance(result, SparseArray) and all(a in axes for a in range(x.sparse_dim)):
            result = result.todense()  # every sparse axis of x reduced: dense, as other reductions
        if name.endswith("std"):
            result = elemwise(np.sqrt, result) if isinstance(result, SparseArray) else \
                dense_result(xp.sqrt(result), result.dtype, result.shape, xp)
        if keepdims:
            result = (keepdims_sparse(result, x.shape, axes, coo.sparse_dim, be=be) if isinstance(result, SparseArray)
                      else keepdims_dense(result, x.shape, axes, xp))
    return result


def _sq_dev(values, mean, xp):
    d = values - mean
    return (d.real * d.real + d.imag * d.imag) if d.dtype.kind == "c" else d * d


def _moment_core(x, axes, n, ddof, real_dt, k, xp):
    sd = x.sparse_dim
    kept_sparse = [a for a in range(sd) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= sd and a not in axes)
    fill = x.fill_value
    divisor = max(n - ddof, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if not kept_sparse:
            missing = n - x.nnz
            fill_total = fill * missing if missing else 0
            total = x.data.sum(axis=0) + fill_total if x.nnz else xp.full(kept_dense_shape, fill_total)
            m = total / n if n else xp.full(kept_dense_shape, np.nan, dtype=x.dtype)
            m2 = _sq_dev(x.data, m, xp).sum(axis=0) if x.nnz else xp.zeros(kept_dense_shape, real_dt)
            if missing:
                m2 = m2 + missing * _sq_dev(fill, m, xp)
            result = xp.asarray(m2 / divisor)
            return dense_result(result, real_dt, kept_dense_shape, xp)
        out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
        fill_mean = (fill * n) / n if n else fill
        out_fill = np.asarray(n * _sq_dev(fill, fill_mean, np) / divisor).astype(real_dt)[()]
        if x.nnz == 0:
            return sparse_result(xp.zeros((len(kept_sparse), 0), np.int64),
                                 xp.zeros((0,) + kept_dense_shape, real_dt), out_shape, out_fill, x.device, xp,
                                 drop=False)
        perm, starts, ids, group_coords = group_by_kept(x, kept_sparse, k, xp)
        values = x.data.reshape(x.nnz, -1)
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        counts = (starts[1:] - starts[:-1]).reshape(-1, 1)
        missing = n - counts
        sums = k.segment_reduce(ordered, starts, "sum")
        has_missing = missing > 0
        m = xp.where(has_missing, sums + missing * fill, sums) / n
        dev_sq = _sq_dev(ordered, xp.take(m, ids, axis=0), xp)
        m2 = k.segment_reduce(xp.ascontiguousarray(dev_sq), starts, "sum")
        m2 = xp.where(has_missing, m2 + missing * _sq_dev(fill, m, xp), m2)
        result = m2 / divisor
        result = result.astype(real_dt).reshape((group_coords.shape[1],) + kept_dense_shape)
        return sparse_result(group_coords, result, out_shape, out_fill, x.device, xp)


def _nan_moment_core(x, axes, n, ddof, real_dt, k, xp):
    """:func:`_moment_core` over the non-NaN elements only (``nanvar``).

    Per group: ``c`` non-NaN elements (the unstored ones count unless the
    fill value is NaN), their mean, and their squared deviations divided by
    ``c - ddof``; NaN where ``c - ddof <= 0``, as NumPy's ``nanvar``.
    """
    sd = x.sparse_dim
    kept_sparse = [a for a in range(sd) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= sd and a not in axes)
    fill = x.fill_value
    fill_counts = not bool(np.isnan(fill))
    nan = real_dt.type(np.nan)
    valid = ~xp.isnan(x.data)
    clean = xp.where(valid, x.data, x.dtype.type(0))
    with np.errstate(divide="ignore", invalid="ignore"):
        if not kept_sparse:
            missing = n - x.nnz if fill_counts else 0
            cnt = (valid.sum(axis=0) + missing).astype(real_dt)
            total = clean.sum(axis=0) + (fill * missing if missing else 0)
            m = total / cnt
            m2 = xp.where(valid, _sq_dev(x.data, m, xp), 0).sum(axis=0)
            if missing:
                m2 = m2 + missing * _sq_dev(fill, m, xp)
            dof = cnt - ddof
            result = xp.where(dof > 0, m2 / dof, nan)
            return dense_result(result, real_dt, kept_dense_shape, xp)
        out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
        if fill_counts and n - ddof > 0:  # a group of n fill values
            fill_mean = (fill * n) / n if n else fill
            out_fill = np.asarray(n * _sq_dev(fill, fill_mean, np) / (n - ddof)).astype(real_dt)[()]
        else:
            out_fill = nan
        if x.nnz == 0:
            return sparse_result(xp.zeros((len(kept_sparse), 0), np.int64),
                                 xp.zeros((0,) + kept_dense_shape, real_dt), out_shape, out_fill, x.device, xp,
                                 drop=False)
        perm, starts, ids, group_coords = group_by_kept(x, kept_sparse, k, xp)
        values = x.data.reshape(x.nnz, -1)
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        ordered_valid = ~xp.isnan(ordered)
        stored_cnt = k.segment_reduce(xp.ascontiguousarray(ordered_valid.astype(np.int64)), starts, "sum")
        sums = k.segment_reduce(xp.ascontiguousarray(xp.where(ordered_valid, ordered, x.dtype.type(0))),
                                starts, "sum")
        if fill_counts:
            missing = n - (starts[1:] - starts[:-1]).reshape(-1, 1)
            has_missing = missing > 0
            cnt = (stored_cnt + missing).astype(real_dt)
            m = xp.where(has_missing, sums + missing * fill, sums) / cnt
        else:
            cnt = stored_cnt.astype(real_dt)
            m = sums / cnt
        dev_sq = xp.where(ordered_valid, _sq_dev(ordered, xp.take(m, ids, axis=0), xp), 0)
        m2 = k.segment_reduce(xp.ascontiguousarray(dev_sq), starts, "sum")
        if fill_counts:
            m2 = xp.where(has_missing, m2 + missing * _sq_dev(fill, m, xp), m2)
        dof = cnt - ddof
        result = xp.where(dof > 0, m2 / dof, nan)
        result = result.astype(real_dt).reshape((group_coords.shape[1],) + kept_dense_shape)
        return sparse_result(group_coords, result, out_shape, out_fill, x.device, xp)
