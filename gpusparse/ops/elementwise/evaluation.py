"""The function evaluated at stored positions, and its values in the result's dtype and shape."""

from __future__ import annotations

import numpy as np

from gpusparse.ops._broadcast import gather_dense
from gpusparse.ops.elementwise.operands import as_tuple

__all__ = ["evaluate", "prepare_values"]


def evaluate(dfunc, operands, values, coords, shape, prefix, kwargs, xp, out=None):
    """``dfunc`` at stored positions: ``values[i]`` for sparse operand i, dense ones gathered.

    ``out``: a scratch array a ufunc with one output may write its result
    into, when the shapes and dtype allow (saves an allocation).
    """
    args = []
    it = iter(values)
    for op in operands:
        if op.kind == "sparse":
            args.append(next(it))
        elif op.kind == "dense":
            args.append(gather_dense(op.value, coords, shape, prefix, xp))
        else:
            args.append(op.value)
    if out is not None and isinstance(dfunc, np.ufunc) and dfunc.nout == 1 and "out" not in kwargs \
            and "dtype" not in kwargs and all(getattr(a, "shape", out.shape) == out.shape for a in args) \
            and np.result_type(*[a.dtype if hasattr(a, "dtype") else a for a in args]) == out.dtype:
        return (dfunc(*args, out=out, **kwargs),)
    return as_tuple(dfunc(*args, **kwargs))


def prepare_values(values, dt, n, dense_shape, xp):
    values = xp.asarray(values)
    if values.dtype != dt:
        values = values.astype(dt)
    if values.shape != (n,) + dense_shape:
        values = xp.broadcast_to(values, (n,) + dense_shape)
    return xp.ascontiguousarray(values)
