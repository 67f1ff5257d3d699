"""NumPy's function protocol (NEP 18): ``__array_function__`` of sparse arrays.

``SparseArray.__array_function__`` forwards here. A NumPy function reaches

* its entry in :data:`FUNCTIONS`: gpusparse's operation, directly where the
  signatures agree, else through a thin adapter written with NumPy's
  signature (its parameter names, ``out=`` refused with ``TypeError``,
  ``mode=``/``order=`` mapped or refused);
* else the products of :data:`gpusparse.ops.linalg.numpy_names.FUNCTIONS`
  (``np.dot``, ``np.tensordot``, ...);
* else, for the few functions in :data:`NUMPY_SAFE` whose NumPy
  implementation reads only ``shape``/``ndim``/``size``/``dtype``, NumPy's
  own implementation;
* else ``TypeError`` naming the NumPy function and what to call instead
  (gpusparse's nearest function, or ``.todense()``): no NumPy function
  densifies behind the user's back or returns a wrong answer.

Results keep sparsity where the operation does (``np.concatenate`` of sparse
arrays is sparse); functions whose result is constant (``np.ones_like``,
``np.full_like``) give arrays with that fill value and nothing stored, as
pydata sparse does; ``np.zeros_like`` gives fill 0, NumPy's zeros.
"""

from __future__ import annotations

import numpy as np

from gpusparse._device import array_device, device_scope, xp_for
from gpusparse.ops import comparison, creation, einsum, elementwise, indexing, manipulation, reductions
from gpusparse.ops._validate import check_axis

__all__ = ["FUNCTIONS", "NUMPY_SAFE", "array_function"]

_ORDERS = ("K", "A", "C", "F")


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"numpy.{name}: out= is not supported for gpusparse arrays; "
                        f"use the returned array")


def _check_order(name, order, allowed=_ORDERS):
    if order not in allowed:
        raise ValueError(f"numpy.{name}: order must be one of {allowed}, got {order!r}")


def _sparse_list(arrays, name):
    """The members of a sequence as sparse arrays: dense members stored where they differ
    from the fill value of the first sparse member (never densifying a sparse one)."""
    arrays = list(arrays)
    ref = next((a for a in arrays if _is_sparse(a)), None)
    if ref is None:
        raise TypeError(f"numpy.{name}: no gpusparse array among the inputs")
    return [a if _is_sparse(a) else comparison.dense_as_sparse(a, ref) for a in arrays]


def _cast_all(arrays, dtype, casting, name):
    """The arrays cast to ``dtype``; without one, checked against the dtype they promote to."""
    target = np.result_type(*(a.dtype for a in arrays)) if dtype is None else np.dtype(dtype)
    for a in arrays:
        if not np.can_cast(a.dtype, target, casting=casting):
            raise TypeError(f"numpy.{name}: cannot cast array data from {a.dtype} to {target} "
                            f"according to the rule {casting!r}")
    return arrays if dtype is None else [elementwise.astype(a, target) for a in arrays]


# --------------------------------------------------------------------------
# Shapes and axes
# --------------------------------------------------------------------------

def _reshape(a, /, shape, order="C", *, copy=None):
    _check_order("reshape", order, ("C", "F", "A"))
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if order == "F":  # Fortran order is C order on the reversed axes
        out = manipulation.permute_dims(manipulation.reshape(manipulation.permute_dims(a), shape[::-1]))
    else:
        out = manipulation.reshape(a, shape)
    if copy:
        return creation.copy(out)
    if copy is False and out.nnz and not _shares(out.data, a.data, np.may_share_memory):
        raise ValueError("numpy.reshape: unable to avoid copying the stored values (copy=False)")
    return out


def _ravel(a, order="C"):
    return _reshape(a, (-1,), order=order)


def _expand_dims(a, axis):
    return manipulation.expand_dims(a, axis)


def _squeeze(a, axis=None):
    if a.ndim == 0 and axis is not None:  # NumPy accepts axis 0 (or -1) of a 0-d array
        for ax in (axis if isinstance(axis, tuple) else (axis,)):
            check_axis(ax, 1)
        return a
    return manipulation.squeeze(a, axis)


def _moveaxis(a, source, destination):
    return manipulation.moveaxis(a, source, destination)


def _rollaxis(a, axis, start=0):
    n = a.ndim
    axis = check_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"numpy.rollaxis: start {start} out of range for {n} dimensions")
    if axis < start:
        start -= 1
    return a if axis == start else manipulation.moveaxis(a, axis, start)


def _swapaxes(a, axis1, axis2):
    return manipulation.swapaxes(a, axis1, axis2)


def _transpose(a, axes=None):
    return manipulation.permute_dims(a, axes)


def _matrix_transpose(x, /):
    return manipulation.matrix_transpose(x)


def _broadcast_to(array, shape, subok=False):
    return manipulation.broadcast_to(array, shape)


def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) if not hasattr(a, "shape") else a.shape for a in args))
    out = []
    for a in args:
        if _is_sparse(a):
            out.append(manipulation.broadcast_to(a, shape))
        else:
            dev = array_device(a)
            with device_scope(dev):
                out.append(xp_for(dev).broadcast_to(a, shape))
    return tuple(out)


def _atleast(ndim):
    def one(a):
        if _is_sparse(a):
            return manipulation._atleast(a, ndim)
        if hasattr(a, "shape") and not isinstance(a, np.generic):  # a dense array: its module's function
            dev = array_device(a)
            with device_scope(dev):
                return getattr(xp_for(dev), f"atleast_{ndim}d")(a)
        return getattr(np, f"atleast_{ndim}d")(a)

    def atleast(*arys):
        out = tuple(one(a) for a in arys)
        return out[0] if len(out) == 1 else out
    atleast.__name__ = f"atleast_{ndim}d"
    return atleast


# --------------------------------------------------------------------------
# Joining and splitting
# --------------------------------------------------------------------------

def _concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("concatenate", out)
    arrays = _cast_all(_sparse_list(arrays, "concatenate"), dtype, casting, "concatenate")
    if axis is None:
        arrays, axis = [manipulation.reshape(a, (-1,)) for a in arrays], 0
    return manipulation.concatenate(arrays, axis=axis)


def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("stack", out)
    return manipulation.stack(_cast_all(_sparse_list(arrays, "stack"), dtype, casting, "stack"), axis)


def _vstack(tup, *, dtype=None, casting="same_kind"):
    return manipulation.vstack(_cast_all(_sparse_list(tup, "vstack"), dtype, casting, "vstack"))


def _hstack(tup, *, dtype=None, casting="same_kind"):
    return manipulation.hstack(_cast_all(_sparse_list(tup, "hstack"), dtype, casting, "hstack"))


def _dstack(tup):
    return manipulation.dstack(_sparse_list(tup, "dstack"))


def _column_stack(tup):
    arrays = _sparse_list(tup, "column_stack")
    return manipulation.concatenate(
        [a if a.ndim >= 2 else manipulation.reshape(a, (-1, 1)) for a in arrays], axis=1)


def _split(ary, indices_or_sections, axis=0):
    return list(manipulation.split(ary, indices_or_sections, axis))


def _array_split(ary, indices_or_sections, axis=0):
    return list(manipulation.array_split(ary, indices_or_sections, axis))


def _directional_split(name, min_ndim, axis_of):
    def split(ary, indices_or_sections):
        if ary.ndim < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return _split(ary, indices_or_sections, axis_of(ary.ndim))
    split.__name__ = name
    return split


def _unstack(x, /, *, axis=0):
    axis = check_axis(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


# --------------------------------------------------------------------------
# Rearranging
# --------------------------------------------------------------------------

def _roll(a, shift, axis=None):
    return manipulation.roll(a, shift, axis)


def _flip(m, axis=None):
    return manipulation.flip(m, axis)


def _fliplr(m):
    if m.ndim < 2:
        raise ValueError("numpy.fliplr: input must be >= 2-d")
    return manipulation.flip(m, 1)


def _flipud(m):
    if m.ndim < 1:
        raise ValueError("numpy.flipud: input must be >= 1-d")
    return manipulation.flip(m, 0)


def _rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("numpy.rot90: len(axes) must be 2")
    n = m.ndim
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == n:
        raise ValueError("numpy.rot90: axes must be different")
    if not all(-n <= ax < n for ax in axes):
        raise ValueError(f"numpy.rot90: axes={axes} out of range for array of ndim={n}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return manipulation.flip(manipulation.flip(m, axes[0]), axes[1])
    perm = list(range(n))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return manipulation.permute_dims(manipulation.flip(m, axes[1]), perm)
    return manipulation.flip(manipulation.permute_dims(m, perm), axes[1])


def _pad(array, pad_width, mode="constant", **kwargs):
    unknown = sorted(set(kwargs) - {"constant_values"})
    if unknown:
        raise TypeError(f"numpy.pad: unsupported keyword arguments for sparse arrays: {unknown}")
    if mode != "constant":
        raise ValueError(f"numpy.pad: mode must be 'constant' for sparse arrays, got {mode!r}")
    if np.asarray(pad_width).dtype.kind not in "iu":
        raise TypeError("numpy.pad: pad_width must be of integral type")
    value = np.asarray(kwargs.get("constant_values", 0))  # NumPy pads with 0 by default
    if value.ndim and value.size:  # one value for every side: that value (NaN matching NaN)
        flat, first = value.ravel(), value.flat[0]
        if ((flat == first) | ((flat != flat) & (first != first))).all():
            value = first
    return manipulation.pad(array, pad_width, mode="constant", constant_values=value)


def _tril(m, k=0):
    return manipulation.tril(m, k)


def _triu(m, k=0):
    return manipulation.triu(m, k)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return manipulation.diagonal(a, offset, axis1, axis2)


def _linalg_diagonal(x, /, *, offset=0):
    return manipulation.diagonal(x, offset, -2, -1)


def _diag(v, k=0):
    return manipulation.diag(v, k)


def _diagflat(v, k=0):
    return manipulation.diag(manipulation.reshape(v, (-1,)), k)


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out("trace", out)
    return reductions.sum(manipulation.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _linalg_trace(x, /, *, offset=0, dtype=None):
    return _trace(x, offset, -2, -1, dtype)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------

def _nonzero(a):
    return indexing.nonzero(a)


def _flatnonzero(a):
    return indexing.nonzero(manipulation.reshape(a, (-1,)))[0]


def _argwhere(a):
    return indexing.argwhere(a)


def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("take", out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"numpy.take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if mode != "raise":
        indices = _wrap_or_clip(indices, a.size if axis is None else a.shape[check_axis(axis, a.ndim)],
                                mode, a.device)
    return indexing.take(a, indices, axis)


def _wrap_or_clip(indices, n, mode, dev):
    """``indices`` into an axis of length ``n`` brought in bounds as NumPy's ``take`` ``mode`` does."""
    if isinstance(indices, (int, np.integer)):
        if n == 0:
            raise IndexError("numpy.take: cannot do a non-empty take from an empty axis")
        return int(indices) % n if mode == "wrap" else min(max(int(indices), 0), n - 1)
    xp = xp_for(dev)
    with device_scope(dev):
        idx = xp.asarray(indices)
        if idx.size == 0 and isinstance(indices, (list, tuple)):
            idx = idx.astype(np.int64)  # NumPy treats [] as an empty integer index
        if idx.dtype.kind not in "iu":
            raise IndexError("numpy.take: indices must be integers")
        if idx.size == 0:
            return idx
        if n == 0:
            raise IndexError("numpy.take: cannot do a non-empty take from an empty axis")
        return idx % n if mode == "wrap" else xp.clip(idx, 0, n - 1)


def _where(condition, x=None, y=None, /):
    if x is None and y is None:
        return indexing.nonzero(condition)
    if x is None or y is None:
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    return elementwise.where(condition, x, y)


# --------------------------------------------------------------------------
# Reductions and elementwise
# --------------------------------------------------------------------------

def _moments(name):
    """``np.var``/``np.std`` (and the nan versions): NumPy's ``correction`` is ``ddof``."""
    reduce = getattr(reductions, name)

    def moment(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
               mean=np._NoValue, correction=np._NoValue):
        _no_out(name, out)
        if mean is not np._NoValue:
            raise TypeError(f"numpy.{name}: mean= is not supported for gpusparse arrays")
        if correction is not np._NoValue:
            if ddof != 0:
                raise ValueError(f"numpy.{name}: ddof and correction can't be provided simultaneously")
            ddof = correction
        keepdims = False if keepdims is np._NoValue else keepdims
        return reduce(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    moment.__name__ = name
    return moment


def _astype(x, dtype, /, *, copy=True, device=None):
    out = elementwise.astype(x, dtype, copy=copy)
    return out if device is None else out.to(device)


def _round(a, decimals=0, out=None):
    _no_out("round", out)
    return elementwise.round(a, decimals)


def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue,
          **kwargs):
    _no_out("clip", out)
    if a_min is not np._NoValue and min is not np._NoValue or \
            a_max is not np._NoValue and max is not np._NoValue:
        raise ValueError("numpy.clip: pass either a_min/a_max or min/max, not both")
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    if kwargs:
        return elementwise.elemwise(np.clip, a, lo, hi, **kwargs)
    return elementwise.clip(a, lo, hi)


def _iscomplex(x):
    if x.dtype.kind == "c":
        return elementwise.elemwise(np.not_equal, elementwise.imag(x), 0)
    return creation.full_like(x, False, dtype=np.bool_)


def _isreal(x):
    if x.dtype.kind == "c":
        return elementwise.elemwise(np.equal, elementwise.imag(x), 0)
    return creation.full_like(x, True, dtype=np.bool_)


def _ptp(a, axis=None, out=None, keepdims=np._NoValue):
    _no_out("ptp", out)
    keepdims = False if keepdims is np._NoValue else keepdims
    return reductions.max(a, axis, keepdims=keepdims) - reductions.min(a, axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------

def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("full_like", order)
    return creation.full_like(a, fill_value, dtype=dtype, shape=shape, device=device)


def _zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("zeros_like", order)
    return creation.zeros_like(a, dtype=dtype, shape=shape, device=device)


def _ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("ones_like", order)
    return creation.full_like(a, 1, dtype=dtype, shape=shape, device=device)


def _empty_like(prototype, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_order("empty_like", order)  # any content will do: keep the fill value, store nothing
    return creation.empty_like(prototype, dtype=dtype, shape=shape, device=device)


def _copy(a, order="K", subok=False):
    _check_order("copy", order)
    return creation.copy(a)


def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """``np.asarray(a, like=x)`` (also ``np.asanyarray``): ``a`` as a gpusparse array.

    NumPy does not pass ``like`` on, so host data goes to the default device.
    """
    _check_order("asarray", "K" if order is None else order)
    if not _is_sparse(a):
        a = np.asarray(a, dtype=dtype)
    out = creation.asarray(a, copy=copy)
    return out if dtype is None else elementwise.astype(out, dtype, copy=False)


def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None):  # noqa: A002
    """``np.array(object, like=x)``: :func:`_asarray`, copying by default."""
    if ndmin or ndmax:
        raise TypeError("numpy.array: ndmin and ndmax are not supported for gpusparse arrays; "
                        "use expand_dims or reshape")
    return _asarray(object, dtype, order, copy=copy)


# --------------------------------------------------------------------------
# Dtypes and memory
# --------------------------------------------------------------------------

def _as_dtype(x):
    """A sparse or device array stands for its dtype (NEP 50 treats arrays by dtype alone)."""
    if _is_sparse(x) or (hasattr(x, "dtype") and hasattr(x, "shape")
                         and not isinstance(x, (type, np.dtype, np.generic))):
        return x.dtype
    return x


def _result_type(*arrays_and_dtypes):
    return np.result_type(*(_as_dtype(x) for x in arrays_and_dtypes))


def _can_cast(from_, to, casting="safe"):
    return np.can_cast(_as_dtype(from_), to, casting=casting)


def _buffers(x):
    if _is_sparse(x):
        from gpusparse.ops.convert import components
        return components(x)
    return (x,) if hasattr(x, "shape") and not isinstance(x, np.generic) else ()


def _shares(a, b, test) -> bool:
    """Whether a buffer of ``a`` and one of ``b`` overlap, by ``test`` on their array module."""
    for p in _buffers(a):
        for q in _buffers(b):
            dev = array_device(p)
            if array_device(q) != dev:
                continue
            xp = xp_for(dev)
            with device_scope(dev):
                if bool(getattr(xp, test.__name__)(p, q)):
                    return True
    return False


def _may_share_memory(a, b, /, max_work=0):
    return _shares(a, b, np.may_share_memory)


def _shares_memory(a, b, /, max_work=-1):
    return _shares(a, b, np.shares_memory)


# --------------------------------------------------------------------------
# Products beyond _linalg_numpy's
# --------------------------------------------------------------------------

def _einsum(*operands, out=None, optimize=False, **kwargs):
    return einsum.einsum(*operands, out=out, optimize=optimize, **kwargs)


def _norm(x, ord=None, axis=None, keepdims=False):
    from gpusparse.linalg import norm
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    from gpusparse.linalg import norm
    from gpusparse.ops.reductions.arguments import normalize_axes
    axes = normalize_axes(axis, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d not in axes)
    flat = manipulation.reshape(manipulation.permute_dims(x, rest + axes),
                                tuple(x.shape[d] for d in rest) + (int(np.prod([x.shape[d] for d in axes])),))
    result = norm(flat, ord=ord, axis=-1)
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
        result = manipulation.reshape(result, shape) if _is_sparse(result) else result.reshape(shape)
    return result


def _matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if np.ndim(x) <= 2 or ord not in ("fro", 1, -1, np.inf, -np.inf):
        return _norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)
    if ord == "fro":  # a stack of matrices: the reductions over the last two axes
        return _vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    summed, over = (-2, -1) if ord in (1, -1) else (-1, -2)
    sums = reductions.sum(elementwise.abs(x), axis=summed, keepdims=True)
    best = (reductions.max if ord > 0 else reductions.min)(sums, axis=over, keepdims=True)
    return best if keepdims else manipulation.squeeze(best, (-2, -1)) if _is_sparse(best) else best[..., 0, 0]


def _conj(x):
    if x.dtype.kind != "c":
        return x
    return elementwise.conj(x) if _is_sparse(x) else x.conj()


def _flat(x):
    return manipulation.reshape(x, (-1,)) if _is_sparse(x) else x.reshape(-1)


def _vdot(a, b, /):
    from gpusparse.ops import linalg
    return linalg.inner(_flat(_conj(a)), _flat(b))


def _vecdot(x1, x2, /, *, axis=-1):
    # As NumPy's gufunc: the contracted axis does not broadcast, the dtype is the product's.
    s1, s2 = tuple(np.shape(x1)), tuple(np.shape(x2))
    ndim = max(len(s1), len(s2))
    s1, s2 = (1,) * (ndim - len(s1)) + s1, (1,) * (ndim - len(s2)) + s2
    at = check_axis(axis, ndim)
    if s1[at] != s2[at]:
        raise ValueError(f"vecdot: x1 and x2 must have the same length along axis {axis}, "
                         f"got {s1[at]} and {s2[at]}")
    product = elementwise.elemwise(np.multiply, _conj(x1), x2)
    return reductions.sum(product, axis=at, dtype=product.dtype)


def _linalg_outer(x1, x2, /):
    from gpusparse.ops import linalg
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError("numpy.linalg.outer: input arrays must be one-dimensional")
    return linalg.outer(x1, x2)


def _linalg_tensordot(x1, x2, /, *, axes=2):
    from gpusparse.ops import linalg
    return linalg.tensordot(x1, x2, axes=axes)


def _linalg_matmul(x1, x2, /):
    from gpusparse.ops import linalg
    return linalg.matmul(x1, x2)


#: ``{numpy function: implementation}`` for ``__array_function__``.
FUNCTIONS = {
    # reductions (NumPy's signatures already)
    np.sum: reductions.sum,
    np.prod: reductions.prod,
    np.max: reductions.max,
    np.amax: reductions.max,
    np.min: reductions.min,
    np.amin: reductions.min,
    np.mean: reductions.mean,
    np.var: _moments("var"),
    np.std: _moments("std"),
    np.any: reductions.any,
    np.all: reductions.all,
    np.argmax: reductions.argmax,
    np.argmin: reductions.argmin,
    np.count_nonzero: reductions.count_nonzero,
    np.nansum: reductions.nansum,
    np.nanprod: reductions.nanprod,
    np.nanmax: reductions.nanmax,
    np.nanmin: reductions.nanmin,
    np.nanmean: reductions.nanmean,
    np.nanvar: _moments("nanvar"),
    np.nanstd: _moments("nanstd"),
    np.nanargmax: reductions.nanargmax,
    np.nanargmin: reductions.nanargmin,
    np.ptp: _ptp,
    # elementwise
    np.where: _where,
    np.clip: _clip,
    np.round: _round,
    np.real: elementwise.real,
    np.imag: elementwise.imag,
    np.nan_to_num: elementwise.nan_to_num,
    np.iscomplex: _iscomplex,
    np.isreal: _isreal,
    np.isclose: comparison.isclose,
    np.allclose: comparison.allclose,
    np.array_equal: comparison.array_equal,
    np.array_equiv: comparison.array_equiv,
    # shapes and axes
    np.reshape: _reshape,
    np.ravel: _ravel,
    np.expand_dims: _expand_dims,
    np.squeeze: _squeeze,
    np.moveaxis: _moveaxis,
    np.rollaxis: _rollaxis,
    np.swapaxes: _swapaxes,
    np.transpose: _transpose,
    np.broadcast_to: _broadcast_to,
    np.broadcast_arrays: _broadcast_arrays,
    np.atleast_1d: _atleast(1),
    np.atleast_2d: _atleast(2),
    np.atleast_3d: _atleast(3),
    # joining and splitting
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.vstack: _vstack,
    np.hstack: _hstack,
    np.dstack: _dstack,
    np.column_stack: _column_stack,
    np.split: _split,
    np.array_split: _array_split,
    np.hsplit: _directional_split("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0),
    np.vsplit: _directional_split("vsplit", 2, lambda ndim: 0),
    np.dsplit: _directional_split("dsplit", 3, lambda ndim: 2),
    # rearranging
    np.roll: _roll,
    np.flip: _flip,
    np.fliplr: _fliplr,
    np.flipud: _flipud,
    np.rot90: _rot90,
    np.pad: _pad,
    np.tril: _tril,
    np.triu: _triu,
    np.diagonal: _diagonal,
    np.diag: _diag,
    np.diagflat: _diagflat,
    np.trace: _trace,
    # indexing
    np.nonzero: _nonzero,
    np.flatnonzero: _flatnonzero,
    np.argwhere: _argwhere,
    np.take: _take,
    # creation
    np.zeros_like: _zeros_like,
    np.ones_like: _ones_like,
    np.full_like: _full_like,
    np.empty_like: _empty_like,
    np.copy: _copy,
    np.asarray: _asarray,  # reached only through like=
    np.array: _array,
    np.asanyarray: _asarray,
    # dtypes and memory
    np.result_type: _result_type,
    np.can_cast: _can_cast,
    np.may_share_memory: _may_share_memory,
    np.shares_memory: _shares_memory,
    # products (the rest are in _linalg_numpy.FUNCTIONS)
    np.einsum: _einsum,
    np.vdot: _vdot,
    np.linalg.norm: _norm,
    np.linalg.matrix_norm: _matrix_norm,
    np.linalg.vector_norm: _vector_norm,
    np.linalg.vecdot: _vecdot,
    np.linalg.outer: _linalg_outer,
    np.linalg.tensordot: _linalg_tensordot,
    np.linalg.matmul: _linalg_matmul,
    np.linalg.diagonal: _linalg_diagonal,
    np.linalg.trace: _linalg_trace,
}
for _name, _impl in (("astype", _astype), ("matrix_transpose", _matrix_transpose),
                     ("unstack", _unstack), ("around", _round)):
    if hasattr(np, _name):  # NumPy >= 2.1 (astype, matrix_transpose, unstack); around: < 2.5
        FUNCTIONS[getattr(np, _name)] = _impl
if hasattr(np.linalg, "matrix_transpose"):
    FUNCTIONS[np.linalg.matrix_transpose] = _matrix_transpose

#: NumPy functions whose own implementation is right on sparse arrays: it
#: reads only ``shape``, ``ndim``, ``size`` or ``dtype`` (see NumPy's source).
NUMPY_SAFE = frozenset({np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.common_type})

#: What to call instead of a NumPy function gpusparse does not implement.
_HINTS = {
    "append": "gpusparse.concatenate",
    "block": "gpusparse.concatenate, vstack or hstack",
    "resize": "gpusparse.resize, which pads with the fill value (ndarray.resize's semantics) "
              "where numpy.resize repeats the array",
    "min_scalar_type": "x.dtype",
    "average": "gpusparse.mean (unweighted) or gpusparse.sum of a product",
    "einsum_path": "gpusparse.einsum, which pairs the operands itself",
    "cross": "gpusparse.elemwise of the components",
    "linalg.svd": "gpusparse.linalg.svd_lowrank",
    "linalg.eigh": "gpusparse.linalg.lobpcg",
    "linalg.eigvalsh": "gpusparse.linalg.lobpcg",
    "linalg.solve": "the iterative solvers of scipy.sparse.linalg / cupyx over "
                    "gpusparse.linalg.aslinearoperator(x)",
    "linalg.multi_dot": "gpusparse.einsum or repeated gpusparse.matmul",
}


def _qualname(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def not_implemented_message(func) -> str:
    """The ``TypeError`` message for a NumPy function gpusparse does not implement."""
    name = _qualname(func)
    hint = _HINTS.get(name.removeprefix("numpy."))
    alternative = f"; gpusparse's nearest: {hint}" if hint else ""
    return (f"{name} is not implemented for gpusparse arrays; densify explicitly with x.todense() "
            f"and call {name} on the dense array{alternative}")


def _known_type(t) -> bool:
    from gpusparse.containers import SparseArray
    if issubclass(t, (SparseArray, np.ndarray)):
        return True
    return t.__name__ == "ndarray"  # the dense arrays of a GPU array module


def array_function(func, types, args, kwargs):
    """``__array_function__``: gpusparse's ``func``, NumPy's own for the safe few, else ``TypeError``."""
    from gpusparse.ops.linalg import numpy_names as _linalg_numpy
    if not all(_known_type(t) for t in types):
        return NotImplemented
    impl = FUNCTIONS.get(func) or _linalg_numpy.FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    if func in NUMPY_SAFE:
        return func._implementation(*args, **kwargs)
    raise TypeError(not_implemented_message(func))
