"""The entry points of elementwise operations: :func:`elemwise`, :func:`apply` and Python operators.

They classify the operands, find the device, the broadcast shape and the
result's fill values and dtypes, then compute the stored entries (see
:mod:`~gpusparse.ops.elementwise.stored`).
"""

from __future__ import annotations

import math

import numpy as np

import gpusparse._memory as _memory
from gpusparse._backend import backend_of
from gpusparse.ops._broadcast import broadcast_shapes
from gpusparse.ops.elementwise.fills import dense_fills, densify, empty_result_fills, host_fills
from gpusparse.ops.elementwise.operands import Operand, classify, device_function
from gpusparse.ops.elementwise.stored import sparse_result

__all__ = ["apply", "elemwise", "operator"]


def elemwise(func, *args, **kwargs):
    """Apply ``func`` elementwise to sparse arrays, dense arrays and scalars.

    Parameters
    ----------
    func : callable
        A NumPy ufunc, or any function of arrays that the operands' array
        module broadcasts elementwise, such as ``np.where`` or a lambda. On a
        GPU, NumPy functions are replaced by the device array module's
        functions of the same name.
    *args
        gpusparse arrays (any format), sparse arrays of SciPy (or its GPU
        twin), torch, pydata or JAX, dense arrays on the operands' device,
        and scalars. Shapes broadcast as in NumPy.
    **kwargs
        Passed to ``func`` (``dtype=``, ``casting=``, ...).

    Returns
    -------
    SparseArray or tuple of SparseArray
        CSR (CSC) when every sparse operand is CSR (CSC) and the result has
        two sparse dimensions, else COO; a tuple for functions with several
        outputs (``np.divmod``). The fill value is ``func`` of the fill
        values. With auto-densify on, a result that would be dense is
        returned as a dense array.

    Raises
    ------
    ValueError
        Shapes that do not broadcast; a dense operand that would make the
        result dense (unless auto-densify is on); operands on different
        devices.
    TypeError
        Dtypes ``func`` rejects, or a result dtype sparse arrays cannot hold.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(4,), device="cpu")
    >>> y = gs.COO([[2, 3]], [10.0, 20.0], shape=(4,), device="cpu")
    >>> gs.elemwise(np.add, x, y).todense()
    array([ 1.,  0., 12., 20.])
    >>> z = gs.elemwise(np.add, x, 1)
    >>> z.fill_value, z.todense()
    (np.float64(1.0), array([2., 1., 3., 1.]))
    >>> gs.elemwise(lambda a, b: a * b + 1, x, y).fill_value
    np.float64(1.0)
    """
    operands = classify(args)
    if operands is None:
        bad = next(type(a).__name__ for a in args if classify([a]) is None)
        raise TypeError(f"elemwise: unsupported operand type {bad}")
    return apply(func, operands, kwargs)


def operator(ufunc, *args):
    """A Python operator: ``ufunc(*args)``, or ``NotImplemented`` for an operand of another type."""
    operands = classify(args)
    if operands is None:
        return NotImplemented
    return apply(ufunc, operands, {})


def _func_name(func) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _zero_d_operands(operands, name):
    """Operands without a sparse one: NumPy scalars and 0-d device arrays become 0-d sparse arrays.

    So that the dense 0-d results of full reductions can be fed back, e.g.
    ``gs.isnan(x.sum())``; anything else raises ``TypeError``.
    """
    from gpusparse.ops.creation import zero_d_as_sparse
    promoted = [zero_d_as_sparse(op.value) for op in operands]
    if all(p is None for p in promoted):
        raise TypeError(f"{name}: no sparse operand")
    return [op if p is None else Operand("sparse", p, op.name) for op, p in zip(operands, promoted)]


def apply(func, operands, kwargs, *, keep_fill_entries=False, be=None):
    """:func:`elemwise` on classified operands (see :func:`classify`).

    ``be`` is the backend of the operands' one device, when the caller has
    resolved it already (and so checked that they share it).
    """
    name = _func_name(func)
    sparse = [op for op in operands if op.kind == "sparse"]
    if not sparse:
        operands = _zero_d_operands(operands, name)
        sparse = [op for op in operands if op.kind == "sparse"]
    dense = [op for op in operands if op.kind == "dense"]
    be = be or backend_of(*(op.value for op in sparse + dense), what=tuple(op.name for op in sparse + dense))
    xp = be.xp
    shape = broadcast_shapes([op.shape for op in sparse + dense], [op.name for op in sparse + dense])
    try:
        fills, dtypes, kwargs = host_fills(func, operands, kwargs, name)
    except (ValueError, ArithmeticError):
        if math.prod(shape):
            raise
        fills, dtypes = empty_result_fills(func, operands, kwargs, name)  # no element to compute
    dfunc = device_function(func, xp)
    with be.scope(), _memory.operation(name):
        if dense and math.prod(shape):
            constant_fills = dense_fills(dfunc, operands, kwargs, dtypes, xp)
            if constant_fills is None:
                return densify(dfunc, operands, kwargs, name, shape)
            fills = tuple(np.asarray(f).astype(dt)[()] for f, dt in zip(constant_fills, dtypes))
        results = sparse_result(func, dfunc, operands, kwargs, shape, fills, dtypes, be,
                                keep_fill_entries)
    return results if len(results) > 1 else results[0]
