"""The fill value of an elementwise result, and the check that it is sparse at all.

The result's fill value is the function of the operands' fill values
(pydata sparse's rule), computed on the host with NumPy's promotion
(:func:`host_fills`). With dense operands, ``f(fill values, dense)`` must be
one value everywhere (:func:`dense_fills`); otherwise the result is dense
and :func:`densify` raises, or computes it where auto-densify is on.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import gpusparse._memory as _memory
from gpusparse._device import to_host
from gpusparse._options import get_option
from gpusparse.ops.elementwise.operands import as_tuple, result_dtype

__all__ = ["dense_fills", "densify", "empty_result_fills", "host_fills"]


def _call(func, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kwargs)


def _fill_args(operands):
    """Arguments giving f(fill values): NumPy scalars for sparse operands."""
    return [op.value.fill_value if op.kind == "sparse" else op.value for op in operands]


def host_fills(func, operands, kwargs, name):
    """``(fills, dtypes, kwargs)`` of the result on the host, NumPy semantics.

    Sparse operands enter as 0-d arrays of their dtype so that NumPy's
    promotion treats them like arrays (NEP 50); a float16 result is
    computed in float32 instead, the narrowest float sparse arrays hold.
    """
    args = [np.asarray(op.value.fill_value) if op.kind == "sparse" else
            (np.zeros((), op.value.dtype) if op.kind == "dense" else op.value) for op in operands]
    result = as_tuple(_call(func, args, kwargs))
    dtypes = [np.asarray(r).dtype for r in result]
    if any(dt == np.float16 for dt in dtypes):
        if isinstance(func, np.ufunc) and len(result) == 1 and "dtype" not in kwargs:
            kwargs = {**kwargs, "dtype": np.float32}
            result = as_tuple(_call(func, args, kwargs))
            dtypes = [np.asarray(r).dtype for r in result]
    dtypes = [result_dtype(dt, name) for dt in dtypes]
    fills = tuple(np.asarray(r).astype(dt)[()] for r, dt in zip(result, dtypes))
    return fills, dtypes, kwargs


def empty_result_fills(func, operands, kwargs, name):
    """Fill values (zeros) and dtypes for a result without elements, where the fills raise.

    NumPy raises for some values (an integer to a negative power) only when
    it computes an element: a result with none gives no error there, so the
    dtypes come from 0-size operands and the fill value is irrelevant.
    """
    args = [np.empty((0,), op.value.dtype) if op.kind != "scalar" else op.value for op in operands]
    dtypes = [result_dtype(np.asarray(r).dtype, name) for r in as_tuple(_call(func, args, kwargs))]
    return tuple(np.zeros((), dt)[()] for dt in dtypes), dtypes


def dense_fills(dfunc, operands, kwargs, dtypes, xp):
    """The result's fill values when dense operands take part, or None if not constant.

    ``f(fill values, dense operands)`` is evaluated over the dense operands
    (never over the full result shape); the result is sparse only if every
    element of it is the same value.
    """
    result = as_tuple(_call(dfunc, _fill_args(operands), kwargs))
    fills = []
    for r, dt in zip(result, dtypes):
        r = xp.asarray(r).astype(dt, copy=False)
        flat = r.reshape(-1)
        if flat.size == 0:
            return None
        first = flat[:1]
        same = flat == first
        if dt.kind in "fc":
            same |= xp.isnan(flat) & xp.isnan(first)
        report = xp.concatenate([same.all().reshape(1).astype(dt), first])
        host = to_host(report)  # sync: is f(fill, dense) one value?
        if not bool(host[0]):
            return None
        fills.append(host[1])
    return tuple(fills)


def densify(dfunc, operands, kwargs, name, shape):
    if not get_option("auto_densify"):
        raise ValueError(
            f"{name} would give a dense result of shape {shape}: a dense operand maps the "
            "fill value of the sparse operands to different values. Densify explicitly -- "
            "call .todense() on the sparse operands -- or switch auto-densify on with "
            "gpusparse.set_options(auto_densify=True) or GPUSPARSE_AUTO_DENSIFY=1"
        )
    sparse = [op.value for op in operands if op.kind == "sparse"]
    itemsize = max(np.dtype(op.value.dtype).itemsize for op in operands if op.kind in ("sparse", "dense"))
    dense = sum(_memory.nbytes(x.shape, x.dtype) for x in sparse) + math.prod(shape) * itemsize
    _memory.require(dense, sparse[0].device,
                    f"densifying the sparse operands and the dense result of shape {shape}", name)
    args = [op.value.todense() if op.kind == "sparse" else op.value for op in operands]
    result = dfunc(*args, **kwargs)
    return result
