"""Comparing arrays without densifying them: ``isclose``, ``allclose``, ``array_equal``, ``array_equiv``.

Each is an elementwise comparison (:func:`gpusparse.elemwise`) followed, for
the ones answering with one bool, by :func:`gpusparse.all`: the comparison
runs over the union of the stored patterns, and once over the fill values,
so the cost is the stored entries', never the dense size. NumPy's semantics
hold elementwise -- ``rtol``, ``atol`` and ``equal_nan`` mean what they mean
there, and arrays of different shapes are not equal.

A dense operand (a NumPy or CuPy array, or nested lists) is first made sparse
with the other operand's fill value as its own, which stores only where it
differs from that fill; the comparison then never densifies the sparse
operand. Scalars enter the elementwise call as they are.
"""

from __future__ import annotations

import numpy as np

from gpusparse._device import to_host
from gpusparse._dtypes import normalize_fill_value

__all__ = ["allclose", "array_equal", "array_equiv", "dense_as_sparse", "isclose"]


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _is_scalar(x) -> bool:
    return np.isscalar(x) or (isinstance(x, np.ndarray) and x.ndim == 0)


def dense_as_sparse(dense, like):
    """``dense`` as a sparse array storing only the elements that differ from ``like``'s fill value.

    Arrays stay on their device; nested lists and scalars are placed on
    ``like``'s (they are host data the caller passed in).
    """
    from gpusparse.ops.creation import fromdense
    device = None if hasattr(dense, "shape") and not isinstance(dense, np.generic) else like.device
    dtype = getattr(dense, "dtype", None)
    dtype = np.asarray(dense).dtype if dtype is None else np.dtype(dtype)
    try:
        fill = normalize_fill_value(like.fill_value, dtype)
    except (TypeError, ValueError):  # not representable in dense's dtype: any fill will do
        fill = None
    return fromdense(dense, fill_value=fill, device=device)


def _operands(a, b):
    """``(a, b)`` with dense operands made sparse (see the module docstring); scalars kept."""
    if not (_is_sparse(a) or _is_sparse(b)):
        raise TypeError("comparison: no sparse operand; use numpy's function on dense arrays")
    sparse = a if _is_sparse(a) else b
    return tuple(x if _is_sparse(x) or _is_scalar(x) else dense_as_sparse(x, sparse) for x in (a, b))


def _shape(x) -> tuple:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def _all(x) -> bool:
    from gpusparse.ops import reductions
    return bool(to_host(reductions.all(x)))  # sync: the one bool the caller asked for


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (NumPy's ``isclose``), as a sparse bool array.

    Parameters
    ----------
    a, b : SparseArray, dense array or scalar
        At least one sparse; shapes broadcast.
    rtol, atol : float
        Relative and absolute tolerance, as in NumPy (asymmetric in ``b``).
    equal_nan : bool
        NaN compares close to NaN.

    Returns
    -------
    SparseArray
        bool, fill value ``isclose(fill_a, fill_b)``, stored only where the
        operands store something.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, np.nan], shape=(4,), device="cpu")
    >>> y = gs.COO([[0, 1]], [1.0 + 1e-9, 2.0], shape=(4,), device="cpu")
    >>> r = gs.isclose(x, y)
    >>> r.fill_value, r.todense()
    (np.True_, array([ True, False, False,  True]))
    >>> gs.isclose(x, x).todense(), gs.isclose(x, x, equal_nan=True).todense()
    (array([ True,  True, False,  True]), array([ True,  True,  True,  True]))
    """
    from gpusparse.ops.elementwise import elemwise
    a, b = _operands(a, b)
    return elemwise(np.isclose, a, b, rtol=rtol, atol=atol, equal_nan=bool(equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``a`` is close to ``b`` (NumPy's ``allclose``): ``all(isclose(...))``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([0.0, 1.0, 0.0]), device="cpu")
    >>> gs.allclose(x, x * (1 + 1e-9)), gs.allclose(x, np.array([0.0, 1.1, 0.0]))
    (True, False)
    """
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _equal_or_both_nan(x, y):
    return (x == y) | ((x != x) & (y != y))


def _equal(a, b, equal_nan):
    from gpusparse.ops.elementwise import elemwise
    a, b = _operands(a, b)
    return _all(elemwise(_equal_or_both_nan if equal_nan else np.equal, a, b))


def array_equal(a1, a2, equal_nan=False) -> bool:
    """True if the arrays have the same shape and elements (NumPy's ``array_equal``).

    ``equal_nan=True`` counts NaN equal to NaN (for complex numbers: a NaN
    in either part). Values compare across dtypes and formats, stored
    entries against fill values.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, np.nan], shape=(3,), device="cpu")
    >>> gs.array_equal(x, x), gs.array_equal(x, x, equal_nan=True)
    (False, True)
    >>> gs.array_equal(x, x[:2]), gs.array_equal(x[:1], np.array([1.0]))
    (False, True)
    """
    if _shape(a1) != _shape(a2):
        return False
    return _equal(a1, a2, equal_nan)


def array_equiv(a1, a2) -> bool:
    """True if the arrays broadcast to one shape and are equal there (NumPy's ``array_equiv``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[1, 0], [1, 0]]), device="cpu")
    >>> gs.ops.comparison.array_equiv(x, np.array([1, 0])), gs.ops.comparison.array_equiv(x, x.T)
    (True, False)
    """
    try:
        np.broadcast_shapes(_shape(a1), _shape(a2))
    except ValueError:
        return False
    return _equal(a1, a2, False)
