"""NumPy's protocols on sparse arrays: ``__array_function__`` (NEP 18) and ``__array_ufunc__`` (NEP 13).

* :mod:`~gpusparse.ops.numpy.functions`: the table :data:`FUNCTIONS` of
  NumPy functions and :func:`array_function`, the entry point of
  ``SparseArray.__array_function__``.
* :mod:`~gpusparse.ops.numpy.ufuncs`: :func:`array_ufunc`, the entry point
  of ``SparseArray.__array_ufunc__`` (calls, ``reduce`` and ``out=``).
* The adapters that give gpusparse's operations NumPy's signatures, one
  module per family: :mod:`~gpusparse.ops.numpy.shapes` (shapes, axes,
  joining, splitting), :mod:`~gpusparse.ops.numpy.rearranging`,
  :mod:`~gpusparse.ops.numpy.selection` (indexing),
  :mod:`~gpusparse.ops.numpy.values` (reductions and elementwise
  functions), :mod:`~gpusparse.ops.numpy.construction`,
  :mod:`~gpusparse.ops.numpy.dtypes` (dtypes and memory) and
  :mod:`~gpusparse.ops.numpy.products`, on the shared
  :mod:`~gpusparse.ops.numpy.arguments`.
"""

from __future__ import annotations

from gpusparse.ops.numpy.functions import FUNCTIONS, NUMPY_SAFE, array_function
from gpusparse.ops.numpy.ufuncs import array_ufunc

__all__ = ["FUNCTIONS", "NUMPY_SAFE", "array_function", "array_ufunc"]
