"""NumPy's function protocol (NEP 18): ``__array_function__`` of sparse arrays.

``SparseArray.__array_function__`` forwards here. :data:`FUNCTIONS` maps NumPy
functions (``np.sum``, ``np.where``, ``np.clip``, ...) to gpusparse's; the
products of ``_linalg_numpy.FUNCTIONS`` are looked up next. A function nobody
implements runs NumPy's own implementation, which asks for ``__array__`` and
so raises gpusparse's "no implicit densification" error.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FUNCTIONS", "array_function"]


def _elementwise(name):
    def call(*args, **kwargs):
        from gpusparse.ops import elementwise
        return getattr(elementwise, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _reduction(name):
    def call(*args, **kwargs):
        from gpusparse.ops import reductions
        return getattr(reductions, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _round(a, decimals=0, out=None):
    if out is not None:
        raise TypeError("round: out= is not supported for sparse arrays")
    from gpusparse.ops import elementwise
    return elementwise.round(a, decimals)


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    if out is not None:
        raise TypeError("clip: out= is not supported for sparse arrays")
    from gpusparse.ops import elementwise
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if kwargs:
        return elementwise.elemwise(np.clip, a, lo, hi, **kwargs)
    return elementwise.clip(a, lo, hi)


#: ``{numpy function: implementation}`` for ``__array_function__``.
FUNCTIONS = {
    np.sum: _reduction("sum"),
    np.prod: _reduction("prod"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.mean: _reduction("mean"),
    np.var: _reduction("var"),
    np.std: _reduction("std"),
    np.any: _reduction("any"),
    np.all: _reduction("all"),
    np.argmax: _reduction("argmax"),
    np.argmin: _reduction("argmin"),
    np.count_nonzero: _reduction("count_nonzero"),
    np.nansum: _reduction("nansum"),
    np.nanprod: _reduction("nanprod"),
    np.nanmax: _reduction("nanmax"),
    np.nanmin: _reduction("nanmin"),
    np.nanmean: _reduction("nanmean"),
    np.nanvar: _reduction("nanvar"),
    np.nanstd: _reduction("nanstd"),
    np.nanargmax: _reduction("nanargmax"),
    np.nanargmin: _reduction("nanargmin"),
    np.where: _elementwise("where"),
    np.clip: _clip,
    np.round: _round,
    np.around: _round,
    np.real: _elementwise("real"),
    np.imag: _elementwise("imag"),
    np.nan_to_num: _elementwise("nan_to_num"),
}
if hasattr(np, "astype"):  # NumPy >= 2.1
    FUNCTIONS[np.astype] = _elementwise("astype")


def _known_type(t) -> bool:
    from gpusparse.containers import SparseArray
    if issubclass(t, (SparseArray, np.ndarray)):
        return True
    return t.__name__ == "ndarray"  # the dense arrays of a GPU array module


def array_function(func, types, args, kwargs):
    """``__array_function__``: gpusparse's implementation of ``func``, else NumPy's own."""
    from gpusparse.ops import _linalg_numpy
    if not all(_known_type(t) for t in types):
        return NotImplemented
    impl = FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    return _linalg_numpy.array_function(func, types, args, kwargs)
