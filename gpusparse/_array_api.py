"""The Python array API standard's namespace: the ``gpusparse`` module itself.

``x.__array_namespace__()`` returns :mod:`gpusparse`, so code written as
``xp = array_api_compat.array_namespace(x)`` (or ``import gpusparse as xp``)
runs on sparse arrays. The standard's names are gpusparse's operations,
re-exported, or the thin adapters of this module over :mod:`gpusparse.ops`
(the standard's parameter names and defaults, the NumPy functions it
renames); nothing here is a second implementation.

Where a result is dense in nature (``arange``, ``linspace``, ``argsort``,
``sort``, ``cumulative_sum``) it is computed densely on the array's device
and returned as a sparse array with fill value 0 (the input's fill value
for ``sort``), storing the elements that differ from it. Where the standard
cannot hold for a sparse array (``searchsorted``, item assignment, DLPack
export of a sparse layout) the function raises ``TypeError`` (``BufferError``
for DLPack) saying what to call instead.

Examples
--------
>>> import numpy as np, gpusparse as gs
>>> x = gs.asarray(np.array([[0.0, 2.0], [4.0, 0.0]]), device="cpu")
>>> xp = x.__array_namespace__()
>>> xp is gs
True
>>> xp.acos(xp.zeros((2,), dtype=xp.float64, device="cpu")).todense()
array([1.57079633, 1.57079633])
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np

from gpusparse._device import Device, as_device, cuda_status, default_device, device_scope, xp_for
from gpusparse.ops import canonical, convert, creation, elementwise, indexing, reductions
from gpusparse.ops import shape as shape_ops
from gpusparse.ops.numpy import dtypes as _numpy_dtypes
from gpusparse.ops.numpy import products as _numpy_products
from gpusparse.ops.numpy import shapes as _numpy_shapes
from gpusparse.containers._bound import bind as _bind_methods
from gpusparse.ops import _methods  # noqa: F401 -- binds the operations the containers' methods call
from gpusparse.ops._validate import check_axis

__all__ = [
    "API_VERSIONS", "ELEMENTWISE", "array_namespace", "asarray", "empty", "arange", "linspace", "meshgrid",
    "from_dlpack",
    "concat", "broadcast_arrays", "reshape", "expand_dims", "repeat", "tile", "unstack", "clip", "astype",
    "var", "std", "vecdot", "cumulative_sum", "cumulative_prod", "broadcast_shapes", "searchsorted", "sort", "argsort", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "isdtype", "finfo", "iinfo", "result_type",
    "can_cast", "e", "pi", "inf", "nan", "newaxis", "__array_namespace_info__",
]

#: The standard's versions this namespace implements (the newest is the default).
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")


def array_namespace(api_version=None):
    """The namespace of gpusparse arrays (``SparseArray.__array_namespace__``): :mod:`gpusparse`.

    ``ValueError`` for an ``api_version`` not in :data:`API_VERSIONS`.

    >>> import gpusparse as gs
    >>> gs.zeros((2,), device="cpu").__array_namespace__(api_version="2023.12") is gs
    True
    """
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"api_version must be one of {API_VERSIONS} or None, got {api_version!r}")
    # The package that holds this module: loaded before it, so this looks it up and imports nothing.
    return sys.modules[__name__.partition(".")[0]]


_bind_methods(array_namespace=array_namespace)  # SparseArray.__array_namespace__


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _require_sparse(x, name, argument="x"):
    if not _is_sparse(x):
        raise TypeError(f"{name}: {argument} must be a gpusparse array, got {type(x).__name__}")


# --------------------------------------------------------------------------
# Constants and dtypes (NumPy's: x.dtype == gs.float64 holds)
# --------------------------------------------------------------------------

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None

bool = np.bool_  # noqa: A001 -- the standard's name
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64, complex64, complex128 = np.float32, np.float64, np.complex64, np.complex128

_DTYPES = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
           "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
           "complex64": complex64, "complex128": complex128}


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)) else x


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind`` (a dtype, a kind name such as ``"real floating"``, or a tuple).

    >>> import gpusparse as gs
    >>> gs.isdtype(gs.float32, "real floating"), gs.isdtype(gs.int8, ("bool", "unsigned integer"))
    (True, False)
    """
    return np.isdtype(np.dtype(dtype), kind)


class finfo_object(NamedTuple):
    """Machine limits of a floating dtype, as Python numbers (the standard's ``finfo`` object)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


def finfo(type, /):  # noqa: A002 -- the standard's parameter name
    """Machine limits of a floating dtype (or an array's dtype) as Python floats.

    NumPy's ``finfo`` gives NumPy scalars of the dtype; the standard asks for
    Python floats. For a complex dtype the limits are those of its real part.

    >>> import gpusparse as gs
    >>> info = gs.finfo(gs.float32)
    >>> info.bits, type(info.eps).__name__, info.dtype
    (32, 'float', dtype('float32'))
    """
    info = np.finfo(_dtype_of(type))
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), info.dtype)


def iinfo(type, /):  # noqa: A002
    """NumPy's ``iinfo`` of a dtype or of an array's dtype."""
    return np.iinfo(_dtype_of(type))


def result_type(*arrays_and_dtypes):
    """The dtype the arguments promote to (NumPy's rules; arrays stand for their dtypes)."""
    return _numpy_dtypes._result_type(*arrays_and_dtypes)


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or an array) casts safely to ``to``."""
    return _numpy_dtypes._can_cast(from_, to)


def astype(x, dtype, /, casting="unsafe", copy=True, *, device=None):
    """``x`` cast to ``dtype`` (and moved to ``device``): the standard's ``astype``.

    >>> import numpy as np, gpusparse as gs
    >>> gs.astype(gs.asarray(np.array([0.5, 2.0]), device="cpu"), gs.int32).todense()
    array([0, 2], dtype=int32)
    """
    out = elementwise.astype(x, dtype, casting=casting, copy=copy)
    return out if device is None else out.to(device)


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------

def asarray(obj, /, *, dtype=None, device=None, copy=None, format=None, fill_value=None):
    """A gpusparse array of ``obj``: :func:`gpusparse.ops.creation.asarray` plus the standard's ``dtype``.

    Dense input (Python scalars and sequences, NumPy and CuPy arrays) stores
    the elements that differ from ``fill_value`` (default 0).

    >>> import gpusparse as gs
    >>> x = gs.asarray([[0, 1], [2, 0]], dtype=gs.float32, device="cpu")
    >>> x.dtype, x.nnz
    (dtype('float32'), 2)
    """
    if isinstance(obj, (list, tuple, int, float, complex, np.generic)) and device is None:
        device = default_device()  # Python data goes where creation functions put new arrays
    if isinstance(obj, (list, tuple, int, float, complex, np.generic, np.ndarray)):
        obj = np.asarray(obj, dtype=dtype)  # Python data: NumPy's conversion, on the host
    out = creation.asarray(obj, format=format, device=device, copy=copy, fill_value=fill_value)
    if dtype is not None and out.dtype != np.dtype(dtype):
        if copy is False:
            raise ValueError("asarray: copy=False but casting to dtype requires a copy")
        out = elementwise.astype(out, dtype, copy=False)
    return out


def empty(shape, *, dtype=None, device=None, format="coo"):
    """An array of ``shape`` with nothing stored (fill value 0): :func:`gpusparse.zeros`."""
    return creation.zeros(shape, dtype=np.float64 if dtype is None else dtype, format=format, device=device)


def _from_dense(dense, fill_value=0, like=None):
    """``dense`` as a COO array storing the elements that differ from ``fill_value``."""
    return creation.fromdense(dense, fill_value=fill_value, device=None if like is None else like.device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """NumPy's ``arange`` on ``device``, as a sparse array with fill value 0 (dense in nature).

    >>> import gpusparse as gs
    >>> x = gs.arange(4, device="cpu")
    >>> x.nnz, x.todense()
    (3, array([0, 1, 2, 3]))
    """
    dev = as_device(device)
    with device_scope(dev):
        dense = xp_for(dev).arange(start, stop, step, dtype=dtype) if stop is not None else \
            xp_for(dev).arange(start, step=step, dtype=dtype)
    return creation.fromdense(dense, device=dev)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """NumPy's ``linspace`` on ``device``, as a sparse array with fill value 0 (dense in nature).

    >>> import gpusparse as gs
    >>> gs.linspace(0.0, 1.0, 3, device="cpu").todense()
    array([0. , 0.5, 1. ])
    """
    dev = as_device(device)
    if dtype is None:
        dtype = np.complex128 if isinstance(start, complex) or isinstance(stop, complex) else np.float64
    with device_scope(dev):
        dense = xp_for(dev).linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    return creation.fromdense(dense, device=dev)


def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-D arrays: broadcasts of reshapes, sparse as the inputs.

    >>> import numpy as np, gpusparse as gs
    >>> a, b = gs.meshgrid(gs.asarray([0, 1], device="cpu"), gs.asarray([2, 0, 3], device="cpu"))
    >>> a.shape, b.todense()[:, 0]
    ((3, 2), array([2, 0, 3]))
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        _require_sparse(a, "meshgrid", f"arrays[{i}]")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays[{i}] must be 1-D, got {a.ndim} dimensions")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and n >= 2 else i
        shape = [1] * n
        shape[axis] = a.shape[0]
        out.append(shape_ops.broadcast_to(shape_ops.reshape(a, tuple(shape)), tuple(sizes)))
    return tuple(out)


def from_dlpack(x, /, *, device=None, copy=None):
    """A gpusparse array of a dense DLPack producer (a NumPy, CuPy or torch tensor), on its device.

    DLPack has no sparse layout: a sparse producer raises ``BufferError``.

    >>> import numpy as np, gpusparse as gs
    >>> gs.from_dlpack(np.array([0.0, 3.0])).nnz
    1
    """
    if copy is False:
        raise ValueError("from_dlpack: copy=False cannot be honoured (a sparse array always copies)")
    if _is_sparse(x):
        x.__dlpack__()  # raises BufferError naming what to do
    dev_type, index = x.__dlpack_device__()
    dev = Device("cuda", int(index)) if int(dev_type) in (2, 3, 13) else Device("cpu")
    xp = xp_for(dev)
    with device_scope(dev):
        dense = xp.from_dlpack(x)
    return creation.fromdense(dense, device=dev if device is None else device)


# --------------------------------------------------------------------------
# Manipulation
# --------------------------------------------------------------------------

def concat(arrays, /, *, axis=0):
    """Join arrays along ``axis`` (``None``: flattened first): :func:`gpusparse.concatenate`."""
    return _numpy_shapes._concatenate(arrays, axis=axis)


def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape (sparse stay sparse)."""
    return tuple(_numpy_shapes._broadcast_arrays(*arrays))


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new ``shape`` (``copy=True`` copies; ``False`` raises where it must copy)."""
    return _numpy_shapes._reshape(x, shape, copy=copy)


def expand_dims(x, /, axis=0):
    """``x`` with a new length-1 dimension at ``axis``."""
    return shape_ops.expand_dims(x, axis)


def _host_ints(values, name, argument):
    if _is_sparse(values) or (hasattr(values, "shape") and not isinstance(values, np.ndarray)):
        raise TypeError(f"{name}: {argument} must be an int or a sequence of ints on the host "
                        f"(the output shape depends on them)")
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"{name}: {argument} must be integers, got {arr.dtype}")
    if (arr < 0).any():
        raise ValueError(f"{name}: {argument} must be non-negative")
    return arr.astype(np.int64)


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times along ``axis`` (``None``: flattened), by :func:`take`.

    >>> import numpy as np, gpusparse as gs
    >>> gs.repeat(gs.asarray(np.array([0, 5]), device="cpu"), 2).todense()
    array([0, 0, 5, 5])
    """
    _require_sparse(x, "repeat")
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    axis = check_axis(axis, x.ndim)
    reps = _host_ints(repeats, "repeat", "repeats")
    if reps.ndim > 1 or reps.ndim == 1 and reps.size not in (1, x.shape[axis]):
        raise ValueError(f"repeat: repeats must be an int or have length {x.shape[axis]}")
    return indexing.take(x, np.repeat(np.arange(x.shape[axis]), reps), axis)


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions[i]`` times along each axis (NumPy's ``tile``), by :func:`take`."""
    _require_sparse(x, "tile")
    reps = _host_ints(repetitions, "tile", "repetitions").reshape(-1)
    n = max(x.ndim, reps.size)
    x = shape_ops.reshape(x, (1,) * (n - x.ndim) + x.shape) if x.ndim < n else x
    reps = np.concatenate([np.ones(n - reps.size, np.int64), reps])
    for axis, r in enumerate(reps):
        if r != 1:
            x = indexing.take(x, np.tile(np.arange(x.shape[axis]), int(r)), axis)
    return x


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    return _numpy_shapes._unstack(x, axis=axis)


def vecdot(x1, x2, /, *, axis=-1):
    """``sum(conj(x1) * x2, axis)`` with broadcasting (the standard's ``vecdot``)."""
    return _numpy_products._vecdot(x1, x2, axis=axis)


# --------------------------------------------------------------------------
# Elementwise functions under the standard's names: NumPy's ufuncs through elemwise
# --------------------------------------------------------------------------

def _unary(name, ufunc):
    def function(x, /):
        return elementwise.elemwise(ufunc, x)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The standard's ``{name}``: ``gpusparse.elemwise(numpy.{ufunc.__name__}, x)``."
    return function


def _binary(name, ufunc):
    def function(x1, x2, /):
        return elementwise.elemwise(ufunc, x1, x2)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"The standard's ``{name}``: ``gpusparse.elemwise(numpy.{ufunc.__name__}, "
                        f"x1, x2)``.")
    return function


acos, acosh, asin, asinh = (_unary("acos", np.arccos), _unary("acosh", np.arccosh),
                            _unary("asin", np.arcsin), _unary("asinh", np.arcsinh))
atan, atanh, atan2 = _unary("atan", np.arctan), _unary("atanh", np.arctanh), _binary("atan2", np.arctan2)
bitwise_and, bitwise_or, bitwise_xor = (_binary("bitwise_and", np.bitwise_and),
                                        _binary("bitwise_or", np.bitwise_or),
                                        _binary("bitwise_xor", np.bitwise_xor))
bitwise_left_shift = _binary("bitwise_left_shift", np.left_shift)
bitwise_right_shift = _binary("bitwise_right_shift", np.right_shift)
bitwise_invert = _unary("bitwise_invert", np.invert)
ceil, floor, trunc = _unary("ceil", np.ceil), _unary("floor", np.floor), _unary("trunc", np.trunc)
copysign, hypot = _binary("copysign", np.copysign), _binary("hypot", np.hypot)
cos, cosh = _unary("cos", np.cos), _unary("cosh", np.cosh)
sin, sinh = _unary("sin", np.sin), _unary("sinh", np.sinh)
tan, tanh = _unary("tan", np.tan), _unary("tanh", np.tanh)
exp, expm1 = _unary("exp", np.exp), _unary("expm1", np.expm1)
log, log1p = _unary("log", np.log), _unary("log1p", np.log1p)
log2, log10, logaddexp = _unary("log2", np.log2), _unary("log10", np.log10), _binary("logaddexp", np.logaddexp)
divide, multiply = _binary("divide", np.divide), _binary("multiply", np.multiply)
subtract = _binary("subtract", np.subtract)
floor_divide, remainder = _binary("floor_divide", np.floor_divide), _binary("remainder", np.remainder)
pow = _binary("pow", np.power)  # noqa: A001 -- the standard's name
equal, not_equal = _binary("equal", np.equal), _binary("not_equal", np.not_equal)
greater, greater_equal = _binary("greater", np.greater), _binary("greater_equal", np.greater_equal)
less, less_equal = _binary("less", np.less), _binary("less_equal", np.less_equal)
logical_and, logical_or = _binary("logical_and", np.logical_and), _binary("logical_or", np.logical_or)
logical_xor, logical_not = _binary("logical_xor", np.logical_xor), _unary("logical_not", np.logical_not)
negative, positive = _unary("negative", np.negative), _unary("positive", np.positive)
isinf, sign, signbit = _unary("isinf", np.isinf), _unary("sign", np.sign), _unary("signbit", np.signbit)
sqrt, square = _unary("sqrt", np.sqrt), _unary("square", np.square)
reciprocal, nextafter = _unary("reciprocal", np.reciprocal), _binary("nextafter", np.nextafter)

#: The elementwise names defined here (the others -- abs, add, clip, conj, imag, isfinite, isnan,
#: maximum, minimum, real, round -- are gpusparse's own functions).
ELEMENTWISE = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "bitwise_and", "bitwise_or",
               "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "bitwise_invert", "ceil", "floor",
               "trunc", "copysign", "hypot", "cos", "cosh", "sin", "sinh", "tan", "tanh", "exp", "expm1",
               "log", "log1p", "log2", "log10", "logaddexp", "divide", "multiply", "subtract",
               "floor_divide", "remainder", "pow", "equal", "not_equal", "greater", "greater_equal", "less",
               "less_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "negative",
               "positive", "isinf", "sign", "signbit", "sqrt", "square", "reciprocal", "nextafter")



# --------------------------------------------------------------------------
# Elementwise and statistics with the standard's parameters
# --------------------------------------------------------------------------

def clip(x, /, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002
    """Limit the values to ``[min, max]`` (``a_min``/``a_max``: NumPy's names, still accepted)."""
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    if lo is None and hi is None:  # the standard's clip without bounds: a copy
        _require_sparse(x, "clip")
        return creation.copy(x)
    return elementwise.clip(x, lo, hi)


def _correction(ddof, correction, name):
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: give ddof or correction, not both")
    return correction


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Variance over ``axis`` (``correction``: the standard's name for ``ddof``); see ``reductions.var``."""
    return reductions.var(x, axis=axis, dtype=dtype, out=out, ddof=_correction(ddof, correction, "var"),
                          keepdims=keepdims, where=where)


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Standard deviation over ``axis`` (``correction`` is ``ddof``); see ``reductions.std``."""
    return reductions.std(x, axis=axis, dtype=dtype, out=out, ddof=_correction(ddof, correction, "std"),
                          keepdims=keepdims, where=where)


def _dense_along(x, axis, name):
    _require_sparse(x, name)
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dimension")
    return x.todense(), check_axis(axis, x.ndim), xp_for(x.device)


def _cumulative(x, axis, dtype, include_initial, name, scan, initial):
    if axis is None:
        if getattr(x, "ndim", 0) > 1:
            raise ValueError(f"{name}: axis is required for arrays of more than one dimension")
        axis = 0
    dense, axis, xp = _dense_along(x, axis, name)
    with device_scope(x.device):
        if dtype is None and dense.dtype.kind in "biu":
            dtype = np.uint64 if dense.dtype.kind == "u" else np.int64
        out = getattr(xp, scan)(dense, axis=axis, dtype=dtype)
        if include_initial:
            first = xp.full(out.shape[:axis] + (1,) + out.shape[axis + 1:], initial, dtype=out.dtype)
            out = xp.concatenate([first, out], axis=axis)
    return _from_dense(out, like=x)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Cumulative sums along ``axis`` (dense in nature: computed densely, fill value 0).

    >>> import numpy as np, gpusparse as gs
    >>> gs.cumulative_sum(gs.asarray(np.array([1, 0, 2]), device="cpu")).todense()
    array([1, 1, 3])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum", "cumsum", 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Cumulative products along ``axis`` (dense in nature: computed densely, fill value 0).

    >>> import numpy as np, gpusparse as gs
    >>> gs.cumulative_prod(gs.asarray(np.array([2, 3, 0, 5]), device="cpu"), include_initial=True).todense()
    array([1, 2, 6, 0, 0])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod", "cumprod", 1)


def broadcast_shapes(*shapes):
    """The shape ``shapes`` broadcast to (NumPy's rules; ``ValueError`` where they do not broadcast).

    >>> import gpusparse as gs
    >>> gs.broadcast_shapes((3, 1), (1, 4))
    (3, 4)
    """
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """``x`` sorted along ``axis`` (computed densely on the device; the result keeps ``x``'s fill value)."""
    dense, axis, xp = _dense_along(x, axis, "sort")
    with device_scope(x.device):
        out = xp.sort(dense, axis=axis)
        if descending:
            out = xp.flip(xp.sort(xp.flip(dense, axis=axis), axis=axis), axis=axis)
    return _from_dense(out, fill_value=x.fill_value, like=x)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis`` (stable; computed densely; fill value 0)."""
    dense, axis, xp = _dense_along(x, axis, "argsort")
    with device_scope(x.device):
        if descending:
            n = dense.shape[axis]
            idx = n - 1 - xp.flip(xp.argsort(xp.flip(dense, axis=axis), axis=axis, kind="stable"), axis=axis)
        else:
            idx = xp.argsort(dense, axis=axis, kind="stable")
    return _from_dense(idx.astype(np.int64), like=x)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Not provided: a sorted 1-D array is dense in nature; search ``x1.todense()`` instead."""
    raise TypeError("searchsorted is not implemented for gpusparse arrays (a sorted 1-D array is dense "
                    "in nature): call the device array module's searchsorted on x1.todense()")


# --------------------------------------------------------------------------
# Set functions: the stored values, plus the fill value where an element is unstored
# --------------------------------------------------------------------------

class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _unique(x, name):
    """(coalesced COO, xp.unique of the stored values and the fill value with index/inverse/counts,
    number of unstored elements)."""
    _require_sparse(x, name)
    coo = canonical.coalesce(x if x.format == "coo" else convert.compressed_to_coo(x))
    unstored = x.size - coo.data.size
    xp = xp_for(x.device)
    with device_scope(x.device):
        values = xp.concatenate([coo.data.reshape(-1), xp.asarray(x.fill_value, dtype=x.dtype).reshape(1)])
        vals, index, inverse, counts = xp.unique(values, return_index=True, return_inverse=True,
                                                 return_counts=True)
    return coo, (vals, index, inverse.reshape(-1), counts), unstored, xp


def unique_values(x, /):
    """The distinct values of ``x``: those stored, and the fill value if an element is unstored.

    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 2]], [3.0, 3.0], shape=(4,), device="cpu")
    >>> gs.unique_values(x).todense()
    array([0., 3.])
    """
    return unique_counts(x).values


def unique_counts(x, /):
    """The distinct values of ``x`` and how many elements hold each."""
    coo, (vals, index, inverse, counts), unstored, xp = _unique(x, "unique_counts")
    with device_scope(x.device):
        counts = counts - (inverse[-1] == xp.arange(vals.shape[0])) * (1 - unstored)
        keep = counts > 0  # the fill value is no value of x where every element is stored
        vals, counts = vals[keep], counts[keep]  # sync: the number of distinct values
    return UniqueCountsResult(_from_dense(vals, like=x), _from_dense(counts.astype(np.int64), like=x))


def unique_inverse(x, /):
    """The distinct values and, for each element of ``x``, the index of its value (sparse, like ``x``)."""
    result = unique_all(x)
    return UniqueInverseResult(result.values, result.inverse_indices)


def unique_all(x, /):
    """Distinct values, the flat index of the first element holding each, inverse indices and counts.

    The inverse indices are a sparse array shaped as ``x`` whose fill value is
    the index of ``x``'s fill value.

    >>> import gpusparse as gs
    >>> x = gs.COO([[1, 3]], [5, 5], shape=(4,), device="cpu")
    >>> r = gs.unique_all(x)
    >>> r.values.todense(), r.indices.todense(), r.inverse_indices.todense(), r.counts.todense()
    (array([0, 5]), array([0, 1]), array([0, 1, 0, 1]), array([2, 2]))
    """
    coo, (vals, index, inverse, counts), unstored, xp = _unique(x, "unique_all")
    from gpusparse.containers import COO
    n = vals.shape[0]
    with device_scope(x.device):
        is_fill = inverse[-1] == xp.arange(n)
        counts = counts - is_fill * (1 - unstored)
        block = math.prod(coo.data.shape[1:])
        stored_flat = _flat_positions(coo, block, xp)
        first = xp.take(xp.concatenate([stored_flat, xp.asarray([x.size], dtype=np.int64)]), index)
        if unstored:  # the fill value's first unstored element may come before its first stored one
            first = xp.where(is_fill, xp.minimum(first, _first_unstored(coo, block, xp)), first)
        keep = counts > 0
        new_index = xp.cumsum(keep) - 1
        inv = xp.take(new_index, inverse)
        vals, first, counts = vals[keep], first[keep], counts[keep]  # sync: the number of distinct values
        fill_index = new_index[inverse[-1]].astype(np.int64)
        inverse_data = inv[:-1].reshape(coo.data.shape).astype(np.int64)
    inverse_fill = np.int64(fill_index.item()) if unstored else np.int64(0)  # sync: one index
    inverse_x = COO._from_parts(coo.coords, inverse_data, coo.shape, inverse_fill, x.device,
                                sorted=True, unique=True)
    return UniqueAllResult(_from_dense(vals, like=x), _from_dense(first.astype(np.int64), like=x),
                           inverse_x, _from_dense(counts.astype(np.int64), like=x))


def _flat_positions(coo, block, xp):
    """Row-major flat index of every stored element of a coalesced COO, in storage order."""
    keys = xp.zeros(coo.nnz, dtype=np.int64)
    for d in range(coo.sparse_dim):
        keys = keys * coo.shape[d] + coo.coords[d].astype(np.int64)
    return (keys[:, None] * block + xp.arange(block, dtype=np.int64)[None, :]).reshape(-1)


def _first_unstored(coo, block, xp):
    """Flat index of the first unstored element of a coalesced COO with an unstored element."""
    keys = _flat_positions(coo, block, xp)[::block] // block
    if keys.shape[0] == 0:
        return 0
    gap = keys != xp.arange(keys.shape[0], dtype=np.int64)
    pos = xp.where(gap.any(), xp.argmax(gap), keys.shape[0])
    return pos.astype(np.int64) * block


# --------------------------------------------------------------------------
# Inspection
# --------------------------------------------------------------------------

_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
          "numeric")


class Info:
    """What the namespace supports (the standard's ``__array_namespace_info__()``)."""

    def capabilities(self):
        return {"boolean indexing": False, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        from gpusparse._device import default_device
        return default_device()

    def devices(self):
        return (Device("cpu"),) + tuple(Device("cuda", i) for i in range(cuda_status().device_count))

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        if kind is not None and not isinstance(kind, tuple) and not (
                isinstance(kind, str) and kind in _KINDS):
            raise ValueError(f"dtypes: kind must be one of {_KINDS} or a tuple of them, got {kind!r}")
        return {name: np.dtype(t) for name, t in _DTYPES.items()
                if kind is None or isdtype(t, kind)}


def __array_namespace_info__():
    """An :class:`Info` object: devices, dtypes and capabilities of the namespace."""
    return Info()


