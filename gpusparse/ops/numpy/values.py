"""NumPy's reductions and elementwise functions whose signatures differ from gpusparse's.

``np.var``/``np.std`` and their nan forms (``correction=``), ``np.astype``,
``np.round``, ``np.clip`` (``min=``/``max=``), ``np.iscomplex``,
``np.isreal`` and ``np.ptp``.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops import creation, elementwise, reductions
from gpusparse.ops.numpy.arguments import _no_out

__all__ = []


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
