"""NumPy's ufunc protocol (NEP 13): ``__array_ufunc__`` of sparse arrays.

``SparseArray.__array_ufunc__`` forwards here; ``__array_function__`` (NEP 18)
lives in :mod:`gpusparse.ops._numpy_functions`.

* ``np.sin(x)``, ``np.add(x, y, dtype=...)`` run :func:`elementwise.apply`
  (``__call__``); ``np.add.reduce(x, axis=0)`` runs :func:`reductions.reduce`
  (NumPy's default ``axis=0``). The products registered in
  ``gpusparse.ops._linalg_numpy.UFUNCS`` (``np.matmul``) go there. ``out=``,
  ``where=``, generalised ufuncs and the other methods (``accumulate``,
  ``outer``, ``at``, ``reduceat``) return ``NotImplemented``, so NumPy raises
  its usual ``TypeError``.
"""

from __future__ import annotations

__all__ = ["array_ufunc"]


def array_ufunc(ufunc, method, inputs, kwargs):
    """``__array_ufunc__``: elementwise calls and reductions of any ufunc."""
    from gpusparse.ops import _linalg_numpy, elementwise, reductions
    if ufunc in _linalg_numpy.UFUNCS:
        return _linalg_numpy.array_ufunc(ufunc, method, inputs, kwargs)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        return NotImplemented
    if kwargs.pop("where", True) is not True or ufunc.signature is not None:
        return NotImplemented
    if method == "__call__":
        operands = elementwise.classify(inputs)
        if operands is None:
            return NotImplemented
        return elementwise.apply(ufunc, operands, kwargs)
    if method == "reduce":
        from gpusparse.containers import SparseArray
        if len(inputs) != 1 or not isinstance(inputs[0], SparseArray):
            return NotImplemented
        axis = kwargs.pop("axis", 0)
        return reductions.reduce(inputs[0], ufunc, axis=axis, **kwargs)
    return NotImplemented
