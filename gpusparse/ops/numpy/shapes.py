"""NumPy's shape, axis, joining and splitting functions on sparse arrays (``np.reshape``, ``np.stack``, ...)."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import array_device
from gpusparse.ops import creation, shape as shape_ops
from gpusparse.ops.shape.joining import _atleast as _atleast_on
from gpusparse.ops.shape.permutation import permute_dims_on
from gpusparse.ops.shape.reshaping import reshape_on
from gpusparse.ops._validate import check_axis
from gpusparse.ops.numpy.arguments import _cast_all, _check_order, _is_sparse, _no_out, _sparse_list
from gpusparse.ops.numpy.dtypes import _shares

__all__ = []


def _reshape(a, /, shape, order="C", *, copy=None):
    _check_order("reshape", order, ("C", "F", "A"))
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if order == "F":  # Fortran order is C order on the reversed axes
        be = backend(a.device)
        out = permute_dims_on(reshape_on(permute_dims_on(a, None, be), shape[::-1], be), None, be)
    else:
        out = shape_ops.reshape(a, shape)
    if copy:
        return creation.copy(out)
    if copy is False and out.nnz and not _shares(out.data, a.data, np.may_share_memory):
        raise ValueError("numpy.reshape: unable to avoid copying the stored values (copy=False)")
    return out


def _ravel(a, order="C"):
    return _reshape(a, (-1,), order=order)


def _expand_dims(a, axis):
    return shape_ops.expand_dims(a, axis)


def _squeeze(a, axis=None):
    if a.ndim == 0 and axis is not None:  # NumPy accepts axis 0 (or -1) of a 0-d array
        for ax in (axis if isinstance(axis, tuple) else (axis,)):
            check_axis(ax, 1)
        return a
    return shape_ops.squeeze(a, axis)


def _moveaxis(a, source, destination):
    return shape_ops.moveaxis(a, source, destination)


def _rollaxis(a, axis, start=0):
    n = a.ndim
    axis = check_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"numpy.rollaxis: start {start} out of range for {n} dimensions")
    if axis < start:
        start -= 1
    return a if axis == start else shape_ops.moveaxis(a, axis, start)


def _swapaxes(a, axis1, axis2):
    return shape_ops.swapaxes(a, axis1, axis2)


def _transpose(a, axes=None):
    return shape_ops.permute_dims(a, axes)


def _matrix_transpose(x, /):
    return shape_ops.matrix_transpose(x)


def _broadcast_to(array, shape, subok=False):
    return shape_ops.broadcast_to(array, shape)


def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) if not hasattr(a, "shape") else a.shape for a in args))
    out = []
    for a in args:
        if _is_sparse(a):
            out.append(shape_ops.broadcast_to(a, shape))
        else:
            be = backend(array_device(a))
            with be.scope():
                out.append(be.xp.broadcast_to(a, shape))
    return tuple(out)


def _atleast(ndim):
    def one(a):
        if _is_sparse(a):
            return _atleast_on(a, ndim, backend(a.device))
        if hasattr(a, "shape") and not isinstance(a, np.generic):  # a dense array: its module's function
            be = backend(array_device(a))
            with be.scope():
                return getattr(be.xp, f"atleast_{ndim}d")(a)
        return getattr(np, f"atleast_{ndim}d")(a)

    def atleast(*arys):
        out = tuple(one(a) for a in arys)
        return out[0] if len(out) == 1 else out
    atleast.__name__ = f"atleast_{ndim}d"
    return atleast


def _concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("concatenate", out)
    arrays = _cast_all(_sparse_list(arrays, "concatenate"), dtype, casting, "concatenate")
    if axis is None:
        arrays, axis = [shape_ops.reshape(a, (-1,)) for a in arrays], 0
    return shape_ops.concatenate(arrays, axis=axis)


def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("stack", out)
    return shape_ops.stack(_cast_all(_sparse_list(arrays, "stack"), dtype, casting, "stack"), axis)


def _vstack(tup, *, dtype=None, casting="same_kind"):
    return shape_ops.vstack(_cast_all(_sparse_list(tup, "vstack"), dtype, casting, "vstack"))


def _hstack(tup, *, dtype=None, casting="same_kind"):
    return shape_ops.hstack(_cast_all(_sparse_list(tup, "hstack"), dtype, casting, "hstack"))


def _dstack(tup):
    return shape_ops.dstack(_sparse_list(tup, "dstack"))


def _column_stack(tup):
    arrays = _sparse_list(tup, "column_stack")
    return shape_ops.concatenate(
        [a if a.ndim >= 2 else shape_ops.reshape(a, (-1, 1)) for a in arrays], axis=1)


def _split(ary, indices_or_sections, axis=0):
    return list(shape_ops.split(ary, indices_or_sections, axis))


def _array_split(ary, indices_or_sections, axis=0):
    return list(shape_ops.array_split(ary, indices_or_sections, axis))


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
