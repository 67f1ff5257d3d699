"""Softmax and log-softmax over stored elements, unspecified elements counting as -inf.

``softmax(x, axis)`` is torch's ``torch.sparse.softmax(x, dim)`` and, for the
last axis, TF's ``sparse.softmax``: along ``axis`` the stored elements of
each line are normalised among themselves, and the elements that are not
stored stay unstored (their softmax is 0, their log-softmax -inf, which is
the fill value of the result). The result has exactly the input's pattern.

Along a sparse axis, entries are grouped by their other sparse coordinates
(a stable sort by linear key unless the grouping is already contiguous, as
for the last axis of a sorted array or the rows of a CSR), then a segmented
max, ``exp(v - max)``, a segmented sum and a division: numerically stable
for any magnitude. Along a dense axis it is the dense softmax of each stored
block. Uncoalesced input is coalesced first (duplicates add up before the
non-linear map). Integer and bool values give float64, as NumPy's ``exp``
does; a line whose stored values are all -inf gives NaN, as in torch.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_axis

__all__ = ["log_softmax", "softmax", "softmax_backward"]


def softmax(x, axis=-1):
    """Softmax of the stored elements along ``axis``; unstored elements count as -inf.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 5.0], shape=(2, 3), device="cpu")
    >>> softmax(x, axis=1).todense()
    array([[0.5, 0. , 0.5],
           [0. , 1. , 0. ]])
    """
    return _softmax(x, axis, log=False)


def log_softmax(x, axis=-1):
    """Logarithm of :func:`softmax`, computed stably; unstored elements are -inf (the fill value).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2.0, 2.0], shape=(3,), device="cpu")
    >>> log_softmax(x, 0).todense()
    array([-0.69314718, -0.69314718,        -inf])
    """
    return _softmax(x, axis, log=True)


def softmax_backward(y, grad, axis=-1, log=False):
    """The gradient of :func:`softmax` (or :func:`log_softmax`) for the stored values of its input.

    ``y`` is the (log-)softmax result and ``grad`` the gradient of a loss
    for ``y.data`` (same shape); returns the gradient for the input's
    stored values, in ``y``'s entry order: ``y * (grad - sum(grad * y))``
    for softmax and ``grad - exp(y) * sum(grad)`` for log-softmax, the
    sums running along each line of ``axis``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 5.0], shape=(2, 3), device="cpu")
    >>> softmax_backward(softmax(x, 1), np.array([1.0, 0.0, 1.0]), 1).tolist()
    [0.25, -0.25, 0.0]
    """
    axis = check_axis(axis, y.ndim)
    be = backend(y.device)
    k, xp = be.kernels, be.xp
    S = y.sparse_dim
    with be.scope(), np.errstate(invalid="ignore", over="ignore"):
        values = y.data
        grad = xp.asarray(grad, dtype=values.dtype).reshape(values.shape)
        p = xp.exp(values) if log else values
        weighted = grad if log else grad * values
        if axis >= S:
            total = weighted.sum(axis=axis - S + 1, keepdims=True)
        elif y.nnz == 0:
            return xp.zeros_like(values)
        else:
            width = math.prod(values.shape[1:])
            starts, perm, group = _groups(y, axis, be)
            total = k.segment_reduce(xp.ascontiguousarray(weighted.reshape(y.nnz, width)), starts, "sum", perm)
            total = xp.take(total, group, axis=0).reshape(values.shape)
        return xp.ascontiguousarray(grad - p * total if log else values * (grad - total))


def _float_dtype(dtype):
    if dtype.kind == "c":
        raise TypeError(f"softmax is not defined for complex values ({dtype.name})")
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _softmax(x, axis, log):
    from gpusparse.containers import SparseArray
    if not isinstance(x, SparseArray):
        raise TypeError(f"x must be a gpusparse array, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("softmax needs at least one dimension")
    axis = check_axis(axis, x.ndim)
    dtype = _float_dtype(x.dtype)
    fill = dtype.type(-np.inf if log else 0)
    be = backend(x.device)
    y = x if x.format != "coo" else canonical.coalesce(x, be=be)
    xp = be.xp
    S = y.sparse_dim
    with be.scope(), np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        values = y.data.astype(dtype, copy=False)
        if axis >= S:
            out = _dense_softmax(values, axis - S + 1, log, xp)
        else:
            out = _sparse_softmax(y, values, axis, log, be)
        out = xp.ascontiguousarray(out)
    return convert.rebuild(y, convert.components(y)[:-1] + (out,), fill_value=fill)


def _dense_softmax(values, axis, log, xp):
    if values.size == 0:
        return values
    top = values.max(axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, xp.zeros((), dtype=values.dtype))
    shifted = values - top
    total = xp.exp(shifted).sum(axis=axis, keepdims=True)
    return shifted - xp.log(total) if log else xp.exp(shifted) / total


def _sparse_softmax(y, values, axis, log, be):
    """(Log-)softmax of the stored ``values`` of ``y`` along a sparse ``axis``, on backend ``be``."""
    k, xp = be.kernels, be.xp
    n = y.nnz
    width = math.prod(values.shape[1:])
    flat = values.reshape(n, width)
    if n == 0:
        return values
    starts, perm, group = _groups(y, axis, be)
    top = k.segment_reduce(flat, starts, "max", perm)
    top = xp.where(xp.isfinite(top), top, xp.zeros((), dtype=top.dtype))
    shifted = flat - xp.take(top, group, axis=0)
    e = xp.exp(shifted)
    total = k.segment_reduce(e, starts, "sum", perm)
    total = xp.take(total, group, axis=0)
    out = shifted - xp.log(total) if log else e / total
    return out.reshape(values.shape)


def _groups(y, axis, be):
    """Lines along ``axis``: ``(starts, perm, group)`` with ``group[i]`` the line of entry ``i``, on backend ``be``.

    ``perm`` (None when the entries of a line are already contiguous) lists
    the entries line by line for ``segment_reduce``.
    """
    k, xp = be.kernels, be.xp
    n = y.nnz
    if y.format != "coo" and axis == 1 - y._major_axis:  # CSR rows / CSC columns: indptr
        starts = y.indptr.astype(np.int64)
        return starts, None, k.expand(starts, n)
    coo = y if y.format == "coo" else convert.compressed_to_coo(y, be=be)
    S = coo.sparse_dim
    lines = math.prod(coo.shape[: S - 1])
    if coo.sorted and axis == S - 1 and lines <= 4 * n + (1 << 16):
        # the lines are runs of the sorted prefix: their pointer is compress()
        if S == 1:
            prefix = xp.zeros(n, dtype=np.int64)
        elif S == 2:
            prefix = coo.coords[0]
        else:
            prefix = k.linearize(coo.coords[: S - 1], coo.shape[: S - 1])
        return k.compress(prefix, lines, np.int64), None, prefix
    others = [d for d in range(coo.sparse_dim) if d != axis]
    coords = xp.ascontiguousarray(coo.coords[others]) if others else xp.zeros((0, n), dtype=np.int64)
    shape = tuple(coo.shape[d] for d in others)
    keys, perm, _ = canonical.sorted_keys(coords, shape, k, xp)
    ids = k.segment_ids(keys)
    n_groups = int(to_host(ids[-1:])[0]) + 1  # sync: number of lines
    starts = k.segment_starts(ids, n_groups)
    if perm is None:
        return starts, None, ids
    group = xp.empty(n, dtype=np.int64)
    group[perm] = ids
    return starts, perm, group
