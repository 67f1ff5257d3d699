"""NumPy's ufunc protocol (NEP 13): ``__array_ufunc__`` of sparse arrays.

``SparseArray.__array_ufunc__`` forwards here; ``__array_function__`` (NEP 18)
lives in :mod:`gpusparse.ops.numpy.functions`.

* ``np.sin(x)``, ``np.add(x, y, dtype=...)`` run :func:`elementwise.apply`
  (``__call__``); ``np.add.reduce(x, axis=0)`` runs :func:`reductions.reduce`
  (NumPy's default ``axis=0``). The products registered in
  ``gpusparse.ops.linalg.numpy_names.UFUNCS`` (``np.matmul``) go there.
* ``out=`` takes gpusparse arrays: ``np.add(x, 1, out=x)`` updates ``x``
  and returns it (see :mod:`gpusparse.ops.inplace` for NumPy's rules on
  shape and casting that apply). A dense ``out`` raises ``TypeError``:
  writing a sparse result into it would densify implicitly.
* ``where=``, generalised ufuncs and the other methods (``accumulate``,
  ``outer``, ``at``, ``reduceat``) return ``NotImplemented``, so NumPy raises
  its usual ``TypeError``.

Examples
--------
>>> import numpy as np, gpusparse as gs
>>> x = gs.COO([[0, 2]], [1.0, 4.0], shape=(3,), device="cpu")
>>> np.sqrt(x, out=x) is x, x.todense()
(True, array([1., 0., 2.]))
"""

from __future__ import annotations

__all__ = ["array_ufunc"]


def array_ufunc(ufunc, method, inputs, kwargs):
    """``__array_ufunc__``: elementwise calls and reductions of any ufunc, with or without ``out=``."""
    from gpusparse.ops import elementwise, inplace, reductions
    from gpusparse.ops.linalg import numpy_names as _linalg_numpy
    if ufunc in _linalg_numpy.UFUNCS:
        return _linalg_numpy.array_ufunc(ufunc, method, inputs, kwargs)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if kwargs.get("where", True) is not True or ufunc.signature is not None:
        return NotImplemented
    kwargs.pop("where", None)
    outs = out if isinstance(out, tuple) else (out,)
    if any(o is not None for o in outs):
        return inplace.ufunc_out(ufunc, method, inputs, kwargs, outs)
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
