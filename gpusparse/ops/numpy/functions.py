"""NumPy's function protocol (NEP 18): the ``__array_function__`` table and its entry point.

``SparseArray.__array_function__`` forwards to :func:`array_function`. A
NumPy function reaches

* its entry in :data:`FUNCTIONS`: gpusparse's operation, directly where the
  signatures agree, else through a thin adapter written with NumPy's
  signature (its parameter names, ``out=`` refused with ``TypeError``,
  ``mode=``/``order=`` mapped or refused; the adapters live in the sibling
  modules of :mod:`gpusparse.ops.numpy`, one per family);
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

from gpusparse.ops import comparison, elementwise, reductions
from gpusparse.ops.numpy.construction import (_array, _asarray, _copy, _empty_like, _full_like, _ones_like,
                                              _zeros_like)
from gpusparse.ops.numpy.dtypes import _can_cast, _may_share_memory, _result_type, _shares_memory
from gpusparse.ops.numpy.products import (_einsum, _linalg_matmul, _linalg_outer, _linalg_tensordot, _matrix_norm,
                                          _norm, _vdot, _vecdot, _vector_norm)
from gpusparse.ops.numpy.rearranging import (_diag, _diagflat, _diagonal, _flip, _fliplr, _flipud,
                                             _linalg_diagonal, _linalg_trace, _pad, _roll, _rot90, _trace, _tril,
                                             _triu)
from gpusparse.ops.numpy.selection import _argwhere, _flatnonzero, _nonzero, _take, _where
from gpusparse.ops.numpy.shapes import (_array_split, _atleast, _broadcast_arrays, _broadcast_to, _column_stack,
                                        _concatenate, _directional_split, _dstack, _expand_dims, _hstack,
                                        _matrix_transpose, _moveaxis, _ravel, _reshape, _rollaxis, _split,
                                        _squeeze, _stack, _swapaxes, _transpose, _unstack, _vstack)
from gpusparse.ops.numpy.values import _astype, _clip, _iscomplex, _isreal, _moments, _ptp, _round

__all__ = ["FUNCTIONS", "NUMPY_SAFE", "array_function"]


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
