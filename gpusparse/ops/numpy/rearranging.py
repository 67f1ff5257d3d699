"""NumPy's rearranging functions on sparse arrays: rolls, flips, rotations, pads, triangles, diagonals, traces."""

from __future__ import annotations

import numpy as np

from gpusparse.ops import reductions, shape as shape_ops
from gpusparse.ops.numpy.arguments import _no_out

__all__ = []


def _roll(a, shift, axis=None):
    return shape_ops.roll(a, shift, axis)


def _flip(m, axis=None):
    return shape_ops.flip(m, axis)


def _fliplr(m):
    if m.ndim < 2:
        raise ValueError("numpy.fliplr: input must be >= 2-d")
    return shape_ops.flip(m, 1)


def _flipud(m):
    if m.ndim < 1:
        raise ValueError("numpy.flipud: input must be >= 1-d")
    return shape_ops.flip(m, 0)


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
        return shape_ops.flip(shape_ops.flip(m, axes[0]), axes[1])
    perm = list(range(n))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return shape_ops.permute_dims(shape_ops.flip(m, axes[1]), perm)
    return shape_ops.flip(shape_ops.permute_dims(m, perm), axes[1])


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
    return shape_ops.pad(array, pad_width, mode="constant", constant_values=value)


def _tril(m, k=0):
    return shape_ops.tril(m, k)


def _triu(m, k=0):
    return shape_ops.triu(m, k)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return shape_ops.diagonal(a, offset, axis1, axis2)


def _linalg_diagonal(x, /, *, offset=0):
    return shape_ops.diagonal(x, offset, -2, -1)


def _diag(v, k=0):
    return shape_ops.diag(v, k)


def _diagflat(v, k=0):
    return shape_ops.diag(shape_ops.reshape(v, (-1,)), k)


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out("trace", out)
    return reductions.sum(shape_ops.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _linalg_trace(x, /, *, offset=0, dtype=None):
    return _trace(x, offset, -2, -1, dtype)
