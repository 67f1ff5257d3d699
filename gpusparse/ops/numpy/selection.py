"""NumPy's indexing functions on sparse arrays: ``nonzero``, ``flatnonzero``, ``argwhere``, ``take``, ``where``."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import elementwise, indexing
from gpusparse.ops._validate import check_axis
from gpusparse.ops.numpy.arguments import _no_out

__all__ = []


def _nonzero(a):
    return indexing.nonzero(a)


def _flatnonzero(a):
    from gpusparse.ops.indexing.named import _nonzero as nonzero_on
    from gpusparse.ops.shape.reshaping import reshape_on
    be = backend(a.device)
    return nonzero_on(reshape_on(a, (-1,), be), be)[0]


def _argwhere(a):
    return indexing.argwhere(a)


def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("take", out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"numpy.take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if mode == "raise":
        return indexing.take(a, indices, axis)
    from gpusparse.ops.indexing.named import take_on
    be = backend(a.device)
    indices = _wrap_or_clip(indices, a.size if axis is None else a.shape[check_axis(axis, a.ndim)], mode, be)
    return take_on(a, indices, axis, be)


def _wrap_or_clip(indices, n, mode, be):
    """``indices`` into an axis of length ``n`` brought in bounds as NumPy's ``take`` ``mode`` does."""
    if isinstance(indices, (int, np.integer)):
        if n == 0:
            raise IndexError("numpy.take: cannot do a non-empty take from an empty axis")
        return int(indices) % n if mode == "wrap" else min(max(int(indices), 0), n - 1)
    xp = be.xp
    with be.scope():
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
