"""Reductions over any axes: sum, prod, max, min, mean, var, std, any, all, argmin, nan*, ...

Semantics follow NumPy (``axis``, ``keepdims``, ``dtype``, ``initial``;
NaN propagates, ``nan*`` ignore it; a reduction without identity over an
empty selection raises ``ValueError``). Elements that are not stored take
part as the fill value: a row of ``n`` elements with ``c`` stored ones
reduces its stored values together with ``n - c`` copies of the fill value
(computed in closed form: ``fill * k`` for a sum, ``fill ** k`` for a
product, once for max/min/any/all).

Reducing every sparse dimension returns a dense array of the device (of the
kept dense dimensions; 0-d for a full reduction), as torch's
``sparse.sum`` and TF's ``sparse.reduce_sum`` do; otherwise the result is a
sparse COO array over the kept dimensions, whose fill value is the
reduction of the fill value over the reduced elements and which stores no
entry equal to it (pydata sparse).

How it runs
-----------
Dense (hybrid) dimensions that are reduced are reduced on the values with
the array module. Reduced sparse dimensions: the kept coordinates are
linearised to keys and stably sorted (skipped when already in order, e.g.
the rows of a row-major array), runs of equal keys form segments, and the
primitive ``segment_reduce`` reduces each segment on the device. A full
reduction of the sparse dimensions needs no sort at all.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from gpusparse._device import device_scope, kernels_for, to_host, xp_for
from gpusparse._dtypes import VALUE_DTYPES, dtype_text, native_dtype
from gpusparse.ops import canonical
from gpusparse.ops._broadcast import _sparsify_dense_dims, as_coo
from gpusparse.ops import _fill
from gpusparse.ops._merge_plan import unravel

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "max",
    "mean",
    "min",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "prod",
    "reduce",
    "std",
    "sum",
    "var",
]

_builtin_all, _builtin_any, _builtin_max, _builtin_min, _builtin_sum = all, any, max, min, sum

_NO_VALUE = object()


# --------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------

def normalize_axes(axis, ndim: int, name: str = "axis") -> tuple:
    """``axis`` (None, an int or a sequence of ints) as a sorted tuple of non-negative axes.

    Raises ``numpy.exceptions.AxisError`` (a ``ValueError``) for an axis out
    of range and ``ValueError`` for a repeated one, ``TypeError`` for
    non-integers.
    """
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, (int, np.integer)) else axis
    try:
        items = tuple(operator.index(a) for a in items)
    except TypeError:
        raise TypeError(f"{name} must be None, an integer or a tuple of integers, got {axis!r}") from None
    out = []
    for a in items:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"{name} {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {name}={axis!r}")
    return tuple(sorted(out))


def _check_unsupported(out=None, where=None, name="reduction"):
    if out is not None:
        raise TypeError(f"{name}: out= is not supported for sparse arrays")
    if where is not None and where is not True:
        raise TypeError(f"{name}: where= is not supported for sparse arrays")


def _value_dtype(dt, name):
    given = np.dtype(dt)
    dt = native_dtype(given)  # ">f8" asks for float64 values: results are native
    if dt not in VALUE_DTYPES:
        raise TypeError(f"{name}: result dtype {dtype_text(given)} is not supported by sparse arrays")
    return dt


# --------------------------------------------------------------------------
# Monoids: how a reduction folds values, and k copies of the fill value
# --------------------------------------------------------------------------

_KERNEL_OPS = {
    "add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
    "logical_or": "any", "logical_and": "all",
}
_IDEMPOTENT = ("maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
               "bitwise_and", "bitwise_or", "gcd")


class _Monoid:
    """An associative binary ufunc as a reduction."""

    def __init__(self, ufunc):
        if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
            raise TypeError(f"reduce needs a binary ufunc with one output, got {ufunc!r}")
        self.ufunc = ufunc
        self.name = ufunc.__name__
        self.kernel_op = _KERNEL_OPS.get(self.name)

    def result_dtype(self, dtype, requested):
        if requested is not None:
            return np.dtype(requested)  # (checked, in native byte order, by _value_dtype)
        probe = np.ones(1, dtype=dtype)
        return self.ufunc.reduce(probe).dtype if self.name not in ("logical_or", "logical_and") \
            else np.dtype(np.bool_)

    def fold(self, a, b, xp):
        return self._f(xp)(a, b)

    def _f(self, xp):
        return getattr(xp, self.name) if xp is not np else self.ufunc

    def reduce_axis(self, data, axes, dtype, xp):
        """Reduce ``data`` over ``axes`` with the array module."""
        if not axes:
            return data
        if self.name in ("add", "multiply"):
            return getattr(xp, "sum" if self.name == "add" else "prod")(data, axis=axes, dtype=dtype)
        if self.name in ("maximum", "minimum"):
            return getattr(xp, "max" if self.name == "maximum" else "min")(data, axis=axes)
        if self.name in ("logical_or", "logical_and"):
            return getattr(xp, "any" if self.name == "logical_or" else "all")(data, axis=axes)
        return self._f(xp).reduce(data, axis=axes, dtype=dtype)

    def power(self, value, k: int):
        """``value`` folded with itself ``k >= 1`` times (a host scalar)."""
        with np.errstate(all="ignore"):
            dt = np.asarray(value).dtype
            if self.name == "add":
                return _wrap_scalar(_py(value) * k, dt)
            if self.name == "multiply":
                if dt.kind in "iu":
                    return _wrap_scalar(pow(int(value), k, 1 << (8 * dt.itemsize)), dt)
                return np.asarray(np.power(value, dt.type(k) if dt.kind != "b" else k)).astype(dt)[()]
            if self.name in _IDEMPOTENT:
                return np.asarray(value).astype(dt)[()]
            result, base, k = None, np.asarray(value).astype(dt), int(k)
            while k:
                if k & 1:
                    result = base if result is None else self.ufunc(result, base)
                k >>= 1
                if k:
                    base = self.ufunc(base, base)
            return np.asarray(result).astype(dt)[()]

    def power_array(self, value, counts, dtype, xp):
        """``value`` folded ``counts[i]`` times (device array of int64 >= 1) for every i."""
        if self.name == "add":
            return counts.astype(dtype) * dtype.type(value) if dtype.kind != "b" else counts > 0
        if self.name == "multiply":
            if dtype.kind == "b":
                return xp.full(counts.shape, bool(value), dtype=dtype)
            return xp.power(xp.asarray(dtype.type(value)), counts.astype(dtype)).astype(dtype)
        if self.name in _IDEMPOTENT:
            return xp.full(counts.shape, value, dtype=dtype)
        f = self._f(xp)
        # Binary exponentiation without an identity: ``have`` marks where
        # ``result`` holds a value yet.
        base = xp.full(counts.shape, value, dtype=dtype)
        result = base.copy()
        have = xp.zeros(counts.shape, dtype=bool)
        remaining = counts.astype(np.int64)
        while bool(to_host((remaining > 0).any())):  # sync: more doubling rounds?
            bit = (remaining & 1).astype(bool)
            result = xp.where(bit & have, f(result, base), xp.where(bit, base, result))
            have |= bit
            remaining = remaining >> 1
            base = f(base, base)
        return result.astype(dtype)


def _py(value):
    v = np.asarray(value)
    return int(v) if v.dtype.kind in "iub" else complex(v) if v.dtype.kind == "c" else float(v)


def _wrap_scalar(value, dt):
    """A Python number as ``dt``, wrapping integers modulo 2**bits as NumPy does."""
    if dt.kind in "iu":
        bits = 8 * dt.itemsize
        value = int(value) % (1 << bits)
        if dt.kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
        return dt.type(value)
    if dt.kind == "b":
        return np.bool_(value)
    return np.asarray(value).astype(dt)[()]


# --------------------------------------------------------------------------
# The reduction engine
# --------------------------------------------------------------------------

def _grouping(x, kept, k, xp, need_starts=True, need_ids=True):
    """Segments of COO ``x`` by the coordinates of the ``kept`` sparse axes.

    Returns ``(perm, starts, ids, group_coords)``: ``perm`` orders the
    entries by group (None when already in order), ``starts`` delimits the
    groups in that order (None when every entry is a group of its own and
    not ``need_starts``),
    ``ids`` numbers the group of every entry in that order (None unless
    ``need_ids``), ``group_coords`` ``(len(kept), n_groups)`` are the groups'
    coordinates, row-major sorted. Stable: within a group, entries keep
    their order. Synchronises to learn the number of groups.
    """
    kept_shape = tuple(x.shape[a] for a in kept)
    leading = list(kept) == list(range(len(kept)))
    if leading:  # a contiguous view of the rows, sorted already when x is
        coords = x.coords[: len(kept)]
    else:
        coords = xp.ascontiguousarray(x.coords[list(kept)])
    keys, perm, _ = canonical.sorted_keys(coords, kept_shape, k, xp, known_sorted=leading and x.sorted)
    if need_ids:
        ids = k.segment_ids(keys)
        n_groups = int(to_host(ids[-1:])[0]) + 1  # sync: the number of groups
    else:
        ids, starts = None, k.run_starts(keys)  # sync: the number of groups
        n_groups = starts.shape[0] - 1
    if n_groups == x.nnz:  # every entry is a group of its own: nothing to delimit
        starts = xp.arange(n_groups + 1, dtype=np.int64) if need_starts else None
        group_coords = coords if perm is None else k.take_columns(coords, perm)
        return perm, starts, ids, group_coords
    if need_ids:
        starts = k.segment_starts(ids, n_groups)
    firsts = starts[:-1]
    source = firsts if perm is None else xp.take(perm, firsts)
    group_coords = k.take_columns(coords, source)  # a gather: cheaper than dividing keys
    return perm, starts, ids, group_coords


def _sparse_out(coords, data, shape, fill, dev, xp, *, drop=True, flags=(True, True)):
    from gpusparse.containers import COO
    data = xp.ascontiguousarray(data)
    fill = np.asarray(fill).astype(data.dtype)[()]
    if drop:
        coords, data = _fill.drop(coords, data, fill, xp)
    return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(data), tuple(shape), fill, dev,
                           sorted=flags[0], unique=flags[1])


def _keepdims_sparse(out, x_shape, axes, sparse_dim):
    """Re-insert the reduced axes of a sparse result as size-1 dimensions."""
    from gpusparse.containers import COO
    xp = xp_for(out.device)
    shape = tuple(1 if a in axes else s for a, s in enumerate(x_shape))
    rows, it = [], iter(range(out.sparse_dim))
    n = out.nnz
    for a in range(sparse_dim):
        rows.append(xp.zeros(n, dtype=np.int64) if a in axes else out.coords[next(it)])
    coords = xp.stack(rows) if rows else xp.zeros((0, n), dtype=np.int64)
    dense_axes = [a - sparse_dim + 1 for a in axes if a >= sparse_dim]
    data = xp.expand_dims(out.data, tuple(dense_axes)) if dense_axes else out.data
    return COO._from_parts(xp.ascontiguousarray(coords), xp.ascontiguousarray(data), shape, out.fill_value,
                           out.device, sorted=out.sorted, unique=out.unique)


def _keepdims_dense(arr, x_shape, axes, xp):
    return arr.reshape(tuple(1 if a in axes else s for a, s in enumerate(x_shape)))


def _check_identity(mono_name, has_identity, x_shape, axes, name):
    reduced = math.prod(x_shape[a] for a in axes)
    if not has_identity and reduced == 0:
        raise ValueError(
            f"{name}: zero-size array to reduction operation {mono_name} which has no identity "
            f"(axis covers a dimension of size 0 in shape {x_shape})"
        )


def _reduce(x, mono, axis, keepdims, dtype, name, initial=_NO_VALUE):
    """Reduce ``x`` with monoid ``mono`` over ``axis``; the engine of every decomposable reduction."""
    axes = normalize_axes(axis, x.ndim)
    has_identity = mono.ufunc.identity is not None or initial is not _NO_VALUE
    _check_identity(mono.name, has_identity, x.shape, axes, name)
    out_dtype = _value_dtype(mono.result_dtype(x.dtype, dtype), name)
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        if math.prod(x.shape[a] for a in axes) == 0:  # nothing reduced: the identity (or initial)
            value = _identity_scalar(mono, out_dtype) if initial is _NO_VALUE else \
                np.asarray(initial).astype(out_dtype)[()]
            result = _empty_reduction(x, axes, value, out_dtype, xp)
        elif x.format != "coo" and axes == (1 - x._major_axis,) and mono.kernel_op is not None:
            result = _reduce_minor(x, mono, out_dtype, k, xp)
        elif x.format != "coo" and axes == (x._major_axis,) and mono.kernel_op in _BY_KEY_OPS \
                and x.shape[1 - x._major_axis] <= _BY_KEY_FACTOR * x.nnz:
            result = _reduce_major(x, mono, out_dtype, k, xp)
        else:
            # Reducing both axes of a CSR/CSC array needs only its values: no coordinates.
            whole = x.format != "coo" and 0 in axes and 1 in axes
            result = _reduce_core(x if whole else as_coo(x), mono, axes, out_dtype, k, xp)
        if initial is not _NO_VALUE and math.prod(x.shape[a] for a in axes):
            result = _with_initial(result, mono, initial, out_dtype, xp)
        if keepdims:
            result = (_keepdims_sparse(result, x.shape, axes, x.sparse_dim) if hasattr(result, "fill_value")
                      else _keepdims_dense(result, x.shape, axes, xp))
    return result


def _fold_missing(mono, seg, fill, missing, dtype, xp):
    """``seg`` ``(groups, w)`` with ``fill`` folded in ``missing[i]`` times where that is positive.

    The unstored elements of a group all hold the fill value; for an
    idempotent op any number of copies is the fill itself, so no per-group
    power is built.
    """
    if mono.name in _IDEMPOTENT:
        folded = mono.fold(seg, xp.asarray(fill, dtype=dtype), xp)
    else:
        folded = mono.fold(seg, mono.power_array(fill, xp.maximum(missing, 1), dtype, xp).reshape(-1, 1), xp)
    return xp.where((missing > 0).reshape(-1, 1), folded.astype(dtype, copy=False), seg)


def _reduce_minor(x, mono, out_dtype, k, xp):
    """CSR over its columns (CSC over its rows): the index pointer delimits the segments.

    No keys, no sort, no segment search: one segmented reduction over
    ``indptr`` gives every row (empty ones the identity), then the fill
    value is folded in where a row has unstored elements.
    """
    n_major, n_minor = x.shape[x._major_axis], x.shape[1 - x._major_axis]
    kept_dense_shape = x.shape[2:]
    data = x.data if x.data.dtype == out_dtype else x.data.astype(out_dtype)
    fill = np.asarray(x.fill_value).astype(out_dtype)[()]
    starts = x.indptr.astype(np.int64)
    width = math.prod(kept_dense_shape)
    seg = k.segment_reduce(data.reshape(x.nnz, width), starts, mono.kernel_op).astype(out_dtype, copy=False)
    # clipped: a malformed indptr (check=False) gives some count, never a huge power
    missing = xp.clip(n_minor - (starts[1:] - starts[:-1]), 0, n_minor)
    seg = _fold_missing(mono, seg, fill, missing, out_dtype, xp)
    seg = seg.reshape((n_major,) + kept_dense_shape)
    out_fill = mono.power(fill, n_minor)
    coords = xp.arange(n_major, dtype=np.int64).reshape(1, -1)
    return _sparse_out(coords, seg, (n_major,) + kept_dense_shape, out_fill, x.device, xp)


def _reduce_major(x, mono, out_dtype, k, xp):
    """CSR over its rows (CSC over its columns): the minor indices are the keys; no sort."""
    n_major, n_minor = x.shape[x._major_axis], x.shape[1 - x._major_axis]
    data = x.data if x.data.dtype == out_dtype else x.data.astype(out_dtype)
    fill = np.asarray(x.fill_value).astype(out_dtype)[()]
    out_fill = mono.power(fill, n_major)
    width = math.prod(x.shape[2:])
    return _reduce_by_key(x.indices, data.reshape(x.nnz, width), mono, (n_minor,), tuple(x.shape[2:]), n_major, fill,
                          out_fill, out_dtype, x.device, k, xp)


def _empty_reduction(x, axes, value, dtype, xp):
    """The result of reducing zero elements: ``value`` everywhere (sparse or dense by the usual rule)."""
    kept_sparse = [a for a in range(x.sparse_dim) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= x.sparse_dim and a not in axes)
    if not kept_sparse:
        return xp.full(kept_dense_shape, value, dtype=dtype)
    out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
    return _sparse_out(xp.zeros((len(kept_sparse), 0), np.int64), xp.zeros((0,) + kept_dense_shape, dtype),
                       out_shape, value, x.device, xp, drop=False)


def _with_initial(result, mono, initial, dtype, xp):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    if isinstance(result, SparseArray):
        return elemwise(mono.ufunc, result, np.asarray(initial).astype(dtype)[()])
    return _dense_result(mono.fold(result, xp.asarray(np.asarray(initial).astype(dtype)), xp), dtype, result.shape, xp)


def _reduce_core(x, mono, axes, out_dtype, k, xp):
    sd = x.sparse_dim
    red_sparse = [a for a in axes if a < sd]
    red_dense = [a for a in axes if a >= sd]
    kept_sparse = [a for a in range(sd) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= sd and a not in axes)
    # Duplicates of an uncoalesced array mean their sum: a sum in the same
    # dtype may add them in any order (not for bool, where they mean "or").
    linear_zero = mono.name == "add" and x.fill_value == 0 and x.dtype == out_dtype and x.dtype != np.bool_
    unique = x.unique if x.format == "coo" else True
    if not unique and not linear_zero:
        x = canonical.coalesce(x)
    data = x.data if x.data.dtype == out_dtype else x.data.astype(out_dtype)
    fill = np.asarray(x.fill_value).astype(out_dtype)[()]
    # 1. Dense (hybrid) axes: reduce each stored block; unstored blocks are all fill.
    if red_dense:
        data = mono.reduce_axis(data, tuple(1 + a - sd for a in red_dense), out_dtype, xp)
        block = math.prod(x.shape[a] for a in red_dense)
        fill = mono.power(fill, block) if block else _identity_scalar(mono, out_dtype)
    n_red = math.prod(x.shape[a] for a in red_sparse)
    nnz = x.nnz
    # 2a. Every sparse axis reduced: a dense result.
    if not kept_sparse:
        missing = n_red - nnz
        fill_part = mono.power(fill, missing) if missing > 0 else None
        if nnz:
            stored = mono.reduce_axis(data, (0,), out_dtype, xp).astype(out_dtype, copy=False)
            result = stored if fill_part is None else mono.fold(stored, xp.asarray(fill_part), xp)
        elif fill_part is not None:
            result = xp.full(kept_dense_shape, fill_part, dtype=out_dtype)
        else:
            result = xp.full(kept_dense_shape, _identity_scalar(mono, out_dtype), dtype=out_dtype)
        return _dense_result(result, out_dtype, kept_dense_shape, xp)
    out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
    out_fill = mono.power(fill, n_red) if n_red else _identity_scalar(mono, out_dtype)
    # 2b. No sparse axis reduced: the same coordinates.
    if not red_sparse:
        return _sparse_out(x.coords, data, out_shape, out_fill, x.device, xp, flags=(x.sorted, x.unique))
    # 2c. Some sparse axes reduced: segments of the kept coordinates.
    if nnz == 0:
        return _sparse_out(xp.zeros((len(kept_sparse), 0), np.int64), data[:0], out_shape, out_fill,
                           x.device, xp, drop=False)
    values = data.reshape(nnz, -1)
    kept_shape = tuple(x.shape[a] for a in kept_sparse)
    if mono.kernel_op in _BY_KEY_OPS and math.prod(kept_shape) <= _BY_KEY_FACTOR * nnz:
        keys = _kept_keys(x, kept_sparse, kept_shape, k, xp)
        return _reduce_by_key(keys, values, mono, kept_shape, kept_dense_shape, n_red, fill, out_fill,
                              out_dtype, x.device, k, xp)
    perm, starts, _, group_coords = _grouping(x, kept_sparse, k, xp, need_starts=False, need_ids=False)
    if starts is None:  # one entry per group: the reduction of each is the entry
        seg = values if perm is None else xp.take(values, perm, axis=0)
    elif mono.kernel_op is not None:
        seg = k.segment_reduce(values, starts, mono.kernel_op, perm)
        seg = seg.astype(out_dtype, copy=False)
    else:
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        reduceat = getattr(mono._f(xp), "reduceat", None)
        if reduceat is None:
            raise TypeError(f"reduce: {mono.name} over sparse axes needs {mono.name}.reduceat, which the "
                            f"array module of {x.device} does not provide")
        seg = reduceat(ordered, starts[:-1], axis=0)
    if not _is_identity(mono, fill, out_dtype):  # fold in the unstored elements
        counts = starts[1:] - starts[:-1] if starts is not None else xp.ones(nnz, dtype=np.int64)
        seg = _fold_missing(mono, seg, fill, n_red - counts, out_dtype, xp)
    seg = seg.reshape((seg.shape[0],) + kept_dense_shape)
    return _sparse_out(group_coords, seg, out_shape, out_fill, x.device, xp)


#: Reductions ``reduce_by_key`` runs, and how many kept elements per entry it may allocate.
_BY_KEY_OPS = ("sum", "prod", "min", "max", "any", "all")
_BY_KEY_FACTOR = 2


def _kept_keys(x, kept, kept_shape, k, xp):
    """Linear keys of the kept sparse axes of COO ``x`` (a coordinate row itself for one axis)."""
    if len(kept) == 1:
        return x.coords[kept[0]]
    coords = x.coords if list(kept) == list(range(x.sparse_dim)) else xp.ascontiguousarray(x.coords[list(kept)])
    return k.linearize(coords, kept_shape)


def _reduce_by_key(keys, values, mono, kept_shape, kept_dense_shape, n_red, fill, out_fill, dtype, dev, k, xp):
    """Reduce into a dense array over the kept axes, without sorting (few kept elements).

    Used when the kept axes span at most ``_BY_KEY_FACTOR`` elements per
    entry, so the dense intermediate costs no more than the entries; the
    groups that differ from the result's fill value then become the sparse
    result.
    """
    n_kept = math.prod(kept_shape)
    # Folding in the fill value changes nothing where it is the op's identity
    # (a sum with fill 0): then the counts are not needed.
    neutral = _is_identity(mono, fill, dtype)
    red, counts = k.reduce_by_key(keys, values, n_kept, mono.kernel_op, not neutral)
    red = red.astype(dtype, copy=False)
    if not neutral:
        missing = n_red - counts
        powered = mono.power_array(fill, xp.maximum(missing, 1), dtype, xp)
        folded = mono.fold(red, powered.reshape(-1, 1), xp).astype(dtype, copy=False)
        red = xp.where((missing > 0).reshape(-1, 1), folded, red)
    red = red.reshape((n_kept,) + kept_dense_shape)
    out_fill = np.asarray(out_fill).astype(dtype)[()]
    index = xp.nonzero(~_fill.fill_mask(red, out_fill, xp))[0]  # sync: the number of groups stored
    from gpusparse.containers import COO
    return COO._from_parts(xp.ascontiguousarray(unravel(index, kept_shape, k, xp)),
                           xp.ascontiguousarray(xp.take(red, index, axis=0)),
                           kept_shape + kept_dense_shape, out_fill, dev, sorted=True, unique=True)


def _is_identity(mono, fill, dtype) -> bool:
    """Whether folding ``fill`` into any value leaves it unchanged (the op's identity)."""
    value = np.asarray(fill).astype(dtype)[()]
    if mono.name == "add":  # (the sign of a zero sum is not tracked)
        return value == 0 and dtype.kind != "b"
    if mono.name == "multiply":
        return value == 1
    if mono.name == "maximum":
        return dtype.kind == "f" and value == -np.inf or dtype.kind in "iu" and value == np.iinfo(dtype).min
    if mono.name == "minimum":
        return dtype.kind == "f" and value == np.inf or dtype.kind in "iu" and value == np.iinfo(dtype).max
    if mono.name == "logical_or":
        return not value
    if mono.name == "logical_and":
        return bool(value)
    return False


def _dense_result(result, dtype, shape, xp):
    """A C-contiguous array of ``shape`` (0-d included: ``ascontiguousarray`` would make it 1-d)."""
    out = xp.asarray(result).astype(dtype, copy=False).reshape(shape)
    return out if out.flags.c_contiguous else out.copy()


def _identity_scalar(mono, dtype):
    identity = mono.ufunc.identity
    if identity is None:
        return np.zeros((), dtype)[()]
    return np.asarray(identity).astype(dtype)[()]


# --------------------------------------------------------------------------
# Public reductions
# --------------------------------------------------------------------------

def reduce(x, ufunc, axis=None, keepdims=False, dtype=None, initial=_NO_VALUE):
    """Reduce ``x`` with any associative binary ufunc (``np.add``, ``np.bitwise_xor``, ...).

    Parameters
    ----------
    ufunc : numpy.ufunc
        Binary, one output, associative and commutative. ``add``,
        ``multiply``, ``maximum``, ``minimum``, ``logical_or`` and
        ``logical_and`` run the segmented-reduction primitive; any other
        ufunc its own ``reduceat``.
    axis : None, int or tuple of ints
        The axes to reduce; None reduces all (unlike ``ufunc.reduce``,
        whose default is 0).
    keepdims : bool
    dtype : dtype, optional
    initial : scalar, optional
        Folded into every result, as in NumPy.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 1, 1]], [1, 6, 3], shape=(2, 3), device="cpu")
    >>> gs.reduce(x, np.bitwise_or, axis=1).todense()
    array([7, 3])
    """
    return _reduce(x, _Monoid(ufunc), axis, keepdims, dtype, f"reduce({ufunc.__name__})", initial)


def sum(x, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Sum over ``axis`` (NumPy's ``sum``; torch's ``sparse.sum``; TF's ``sparse.reduce_sum``).

    Unstored elements count as the fill value. Reducing every sparse
    dimension gives a dense array, otherwise a sparse one. Duplicates of an
    uncoalesced array with fill value 0 are summed directly, without
    coalescing.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 1.0], shape=(2, 3), device="cpu")
    >>> gs.sum(x)
    array(3.)
    >>> gs.sum(x, axis=1).todense()
    array([2., 1.])
    >>> gs.sum(x, axis=0, keepdims=True).shape
    (1, 3)
    """
    _check_unsupported(out, where, "sum")
    return _reduce(x, _Monoid(np.add), axis, keepdims, dtype, "sum", initial)


def prod(x, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Product over ``axis`` (NumPy's ``prod``); unstored elements count as the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2.0, 3.0], shape=(3,), fill_value=1.0, device="cpu")
    >>> gs.prod(x)
    array(6.)
    """
    _check_unsupported(out, where, "prod")
    return _reduce(x, _Monoid(np.multiply), axis, keepdims, dtype, "prod", initial)


def max(x, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Maximum over ``axis`` (NumPy's ``max``): NaN propagates; unstored elements are the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [-1.0, 4.0], shape=(2, 3), device="cpu")
    >>> gs.max(x, axis=1).todense()
    array([0., 4.])
    """
    _check_unsupported(out, where, "max")
    return _reduce(x, _Monoid(np.maximum), axis, keepdims, None, "max", initial)


def min(x, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Minimum over ``axis`` (NumPy's ``min``): NaN propagates; unstored elements are the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [-1.0, 4.0], shape=(2, 3), device="cpu")
    >>> gs.min(x, axis=1).todense()
    array([-1.,  0.])
    """
    _check_unsupported(out, where, "min")
    return _reduce(x, _Monoid(np.minimum), axis, keepdims, None, "min", initial)


def any(x, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element over ``axis`` is nonzero (NumPy's ``any``; NaN counts as True).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [2.0], shape=(3,), device="cpu")
    >>> gs.any(x)
    array(True)
    """
    _check_unsupported(out, where, "any")
    return _reduce(_truthy(x), _Monoid(np.logical_or), axis, keepdims, None, "any")


def all(x, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element over ``axis`` is nonzero (NumPy's ``all``).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [2.0], shape=(3,), device="cpu")
    >>> gs.all(x), gs.all(x, axis=0, keepdims=True).shape
    (array(False), (1,))
    """
    _check_unsupported(out, where, "all")
    return _reduce(_truthy(x), _Monoid(np.logical_and), axis, keepdims, None, "all")


def _truthy(x):
    """``x != 0`` as a bool sparse array (coalesced first: duplicates may cancel)."""
    if x.dtype == np.bool_:
        return x
    from gpusparse.ops.elementwise import elemwise
    return elemwise(np.not_equal, x, x.dtype.type(0))


def count_nonzero(x, axis=None, *, keepdims=False):
    """How many elements over ``axis`` are nonzero, unstored ones included (int64).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 1], [0, 2, 1]], [1.0, 0.0, 5.0], shape=(2, 3), device="cpu")
    >>> gs.count_nonzero(x)
    array(2)
    >>> gs.count_nonzero(x, axis=1).todense()
    array([1, 1])
    """
    return _reduce(_truthy(x), _Monoid(np.add), axis, keepdims, np.int64, "count_nonzero")


def _mean_dtype(dtype, requested):
    if requested is not None:
        return native_dtype(requested)
    return np.mean(np.ones(1, dtype=dtype)).dtype


def _divide(result, n, xp):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    if isinstance(result, SparseArray):
        return elemwise(np.true_divide, result, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _dense_result(xp.true_divide(result, n), result.dtype, result.shape, xp)


def mean(x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (NumPy's ``mean``: integers give float64).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2, 4], shape=(4,), device="cpu")
    >>> gs.mean(x)
    array(1.5)
    """
    _check_unsupported(out, where, "mean")
    axes = normalize_axes(axis, x.ndim)
    dt = _mean_dtype(x.dtype, dtype)
    total = sum(x, axis=axes, dtype=dt, keepdims=keepdims)
    n = math.prod(x.shape[a] for a in axes)
    with device_scope(x.device):
        return _divide(total, n, xp_for(x.device))


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance over ``axis`` (NumPy's ``var``: mean of ``|x - x.mean()|**2``, ``ddof``).

    Two passes: the group means, then the squared deviations of the stored
    values plus ``n - c`` times that of the fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [2.0, 4.0], shape=(4,), device="cpu")
    >>> gs.var(x)
    array(2.75)
    """
    _check_unsupported(out, where, "var")
    return _moment(x, axis, dtype, ddof, keepdims, "var")


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation over ``axis`` (NumPy's ``std``), the square root of :func:`var`.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1]], [1.0, 3.0], shape=(4,), fill_value=2.0, device="cpu")
    >>> gs.std(x)
    array(0.70710678)
    """
    _check_unsupported(out, where, "std")
    return _moment(x, axis, dtype, ddof, keepdims, "std")


def _moment(x, axis, dtype, ddof, keepdims, name, skip_nan=False):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    axes = normalize_axes(axis, x.ndim)
    dt = _mean_dtype(x.dtype, dtype)
    real_dt = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    real_dt = {np.dtype("f"): np.dtype(np.float32), np.dtype("d"): np.dtype(np.float64)}.get(real_dt, real_dt)
    n = math.prod(x.shape[a] for a in axes)
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        coo = as_coo(x)
        sd = coo.sparse_dim
        red_dense = [a for a in axes if a >= sd]
        if red_dense:  # deviations are not decomposable: make the reduced dense axes sparse
            last = _builtin_max(red_dense)
            coo = _sparsify_dense_dims(canonical.coalesce(coo), last - sd + 1, coo.shape[sd:last + 1])
        coo = canonical.coalesce(coo)
        if coo.dtype != dt:
            coo = coo.astype(dt)
        core = _nan_moment_core if skip_nan else _moment_core
        result = core(coo, axes, n, ddof, real_dt, k, xp)
        if isinstance(result, SparseArray) and _builtin_all(a in axes for a in range(x.sparse_dim)):
            result = result.todense()  # every sparse axis of x reduced: dense, as other reductions
        if name.endswith("std"):
            result = elemwise(np.sqrt, result) if isinstance(result, SparseArray) else \
                _dense_result(xp.sqrt(result), result.dtype, result.shape, xp)
        if keepdims:
            result = (_keepdims_sparse(result, x.shape, axes, coo.sparse_dim) if isinstance(result, SparseArray)
                      else _keepdims_dense(result, x.shape, axes, xp))
    return result


def _sq_dev(values, mean, xp):
    d = values - mean
    return (d.real * d.real + d.imag * d.imag) if d.dtype.kind == "c" else d * d


def _moment_core(x, axes, n, ddof, real_dt, k, xp):
    sd = x.sparse_dim
    kept_sparse = [a for a in range(sd) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= sd and a not in axes)
    fill = x.fill_value
    divisor = _builtin_max(n - ddof, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if not kept_sparse:
            missing = n - x.nnz
            fill_total = fill * missing if missing else 0
            total = x.data.sum(axis=0) + fill_total if x.nnz else xp.full(kept_dense_shape, fill_total)
            m = total / n if n else xp.full(kept_dense_shape, np.nan, dtype=x.dtype)
            m2 = _sq_dev(x.data, m, xp).sum(axis=0) if x.nnz else xp.zeros(kept_dense_shape, real_dt)
            if missing:
                m2 = m2 + missing * _sq_dev(fill, m, xp)
            result = xp.asarray(m2 / divisor)
            return _dense_result(result, real_dt, kept_dense_shape, xp)
        out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
        fill_mean = (fill * n) / n if n else fill
        out_fill = np.asarray(n * _sq_dev(fill, fill_mean, np) / divisor).astype(real_dt)[()]
        if x.nnz == 0:
            return _sparse_out(xp.zeros((len(kept_sparse), 0), np.int64),
                               xp.zeros((0,) + kept_dense_shape, real_dt), out_shape, out_fill, x.device, xp,
                               drop=False)
        perm, starts, ids, group_coords = _grouping(x, kept_sparse, k, xp)
        values = x.data.reshape(x.nnz, -1)
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        counts = (starts[1:] - starts[:-1]).reshape(-1, 1)
        missing = n - counts
        sums = k.segment_reduce(ordered, starts, "sum")
        has_missing = missing > 0
        m = xp.where(has_missing, sums + missing * fill, sums) / n
        dev_sq = _sq_dev(ordered, xp.take(m, ids, axis=0), xp)
        m2 = k.segment_reduce(xp.ascontiguousarray(dev_sq), starts, "sum")
        m2 = xp.where(has_missing, m2 + missing * _sq_dev(fill, m, xp), m2)
        result = m2 / divisor
        result = result.astype(real_dt).reshape((group_coords.shape[1],) + kept_dense_shape)
        return _sparse_out(group_coords, result, out_shape, out_fill, x.device, xp)


def _nan_moment_core(x, axes, n, ddof, real_dt, k, xp):
    """:func:`_moment_core` over the non-NaN elements only (``nanvar``).

    Per group: ``c`` non-NaN elements (the unstored ones count unless the
    fill value is NaN), their mean, and their squared deviations divided by
    ``c - ddof``; NaN where ``c - ddof <= 0``, as NumPy's ``nanvar``.
    """
    sd = x.sparse_dim
    kept_sparse = [a for a in range(sd) if a not in axes]
    kept_dense_shape = tuple(s for a, s in enumerate(x.shape) if a >= sd and a not in axes)
    fill = x.fill_value
    fill_counts = not bool(np.isnan(fill))
    nan = real_dt.type(np.nan)
    valid = ~xp.isnan(x.data)
    clean = xp.where(valid, x.data, x.dtype.type(0))
    with np.errstate(divide="ignore", invalid="ignore"):
        if not kept_sparse:
            missing = n - x.nnz if fill_counts else 0
            cnt = (valid.sum(axis=0) + missing).astype(real_dt)
            total = clean.sum(axis=0) + (fill * missing if missing else 0)
            m = total / cnt
            m2 = xp.where(valid, _sq_dev(x.data, m, xp), 0).sum(axis=0)
            if missing:
                m2 = m2 + missing * _sq_dev(fill, m, xp)
            dof = cnt - ddof
            result = xp.where(dof > 0, m2 / dof, nan)
            return _dense_result(result, real_dt, kept_dense_shape, xp)
        out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
        if fill_counts and n - ddof > 0:  # a group of n fill values
            fill_mean = (fill * n) / n if n else fill
            out_fill = np.asarray(n * _sq_dev(fill, fill_mean, np) / (n - ddof)).astype(real_dt)[()]
        else:
            out_fill = nan
        if x.nnz == 0:
            return _sparse_out(xp.zeros((len(kept_sparse), 0), np.int64),
                               xp.zeros((0,) + kept_dense_shape, real_dt), out_shape, out_fill, x.device, xp,
                               drop=False)
        perm, starts, ids, group_coords = _grouping(x, kept_sparse, k, xp)
        values = x.data.reshape(x.nnz, -1)
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        ordered_valid = ~xp.isnan(ordered)
        stored_cnt = k.segment_reduce(xp.ascontiguousarray(ordered_valid.astype(np.int64)), starts, "sum")
        sums = k.segment_reduce(xp.ascontiguousarray(xp.where(ordered_valid, ordered, x.dtype.type(0))),
                                starts, "sum")
        if fill_counts:
            missing = n - (starts[1:] - starts[:-1]).reshape(-1, 1)
            has_missing = missing > 0
            cnt = (stored_cnt + missing).astype(real_dt)
            m = xp.where(has_missing, sums + missing * fill, sums) / cnt
        else:
            cnt = stored_cnt.astype(real_dt)
            m = sums / cnt
        dev_sq = xp.where(ordered_valid, _sq_dev(ordered, xp.take(m, ids, axis=0), xp), 0)
        m2 = k.segment_reduce(xp.ascontiguousarray(dev_sq), starts, "sum")
        if fill_counts:
            m2 = xp.where(has_missing, m2 + missing * _sq_dev(fill, m, xp), m2)
        dof = cnt - ddof
        result = xp.where(dof > 0, m2 / dof, nan)
        result = result.astype(real_dt).reshape((group_coords.shape[1],) + kept_dense_shape)
        return _sparse_out(group_coords, result, out_shape, out_fill, x.device, xp)


# --------------------------------------------------------------------------
# nan-aware reductions
# --------------------------------------------------------------------------

class _ReplaceNan:
    """``v`` with NaN replaced by ``value`` (the whole complex number, as NumPy's nan* do)."""

    __name__ = "replace_nan"

    def __init__(self, value):
        self.value = value

    def __call__(self, v):
        return np.where(np.isnan(v), self.value, v)


def _nan_to(x, value):
    """``x`` with NaN (in the values and the fill value) replaced by ``value``."""
    from gpusparse.ops.elementwise import elemwise
    if x.dtype.kind not in "fc":
        return x
    return elemwise(_ReplaceNan(value), x)


def nansum(x, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Sum treating NaN as 0 (NumPy's ``nansum``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nansum(gs.COO([[0, 1]], [np.nan, 2.0], shape=(3,), device="cpu"))
    array(2.)
    """
    _check_unsupported(out, where, "nansum")
    return sum(_nan_to(x, 0.0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)


def nanprod(x, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Product treating NaN as 1 (NumPy's ``nanprod``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanprod(gs.COO([[0, 1]], [np.nan, 2.0], shape=(2,), device="cpu"))
    array(2.)
    """
    _check_unsupported(out, where, "nanprod")
    return prod(_nan_to(x, 1.0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)


def _nan_extreme(x, axis, keepdims, name, initial):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    if x.dtype.kind not in "fc":
        return (max if name == "nanmax" else min)(x, axis=axis, keepdims=keepdims, initial=initial)
    axes = normalize_axes(axis, x.ndim)
    if initial is _NO_VALUE:
        _check_identity(name, False, x.shape, axes, name)
    guard = -np.inf if name == "nanmax" else np.inf
    if x.dtype.kind == "c":
        guard = complex(guard, guard)
    extreme = (max if name == "nanmax" else min)(_nan_to(x, guard), axis=axes, keepdims=keepdims, initial=initial)
    seen = any(elemwise(np.logical_not, elemwise(np.isnan, x)), axis=axes, keepdims=keepdims)
    if initial is not _NO_VALUE:
        return extreme
    nan = x.dtype.type(np.nan)
    if isinstance(extreme, SparseArray):
        return elemwise(np.where, seen, extreme, nan)
    xp = xp_for(x.device)
    return _dense_result(xp.where(seen, extreme, nan), x.dtype, extreme.shape, xp)


def nanmax(x, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Maximum ignoring NaN (NumPy's ``nanmax``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmax(gs.COO([[0, 1]], [np.nan, -2.0], shape=(2,), device="cpu"))
    array(-2.)
    """
    _check_unsupported(out, where, "nanmax")
    return _nan_extreme(x, axis, keepdims, "nanmax", initial)


def nanmin(x, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=None):
    """Minimum ignoring NaN (NumPy's ``nanmin``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmin(gs.COO([[0, 1]], [np.nan, 2.0], shape=(2,), device="cpu"))
    array(2.)
    """
    _check_unsupported(out, where, "nanmin")
    return _nan_extreme(x, axis, keepdims, "nanmin", initial)


def nanmean(x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaN (NumPy's ``nanmean``); NaN where every element is NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> gs.nanmean(gs.COO([[0, 1]], [np.nan, 3.0], shape=(3,), device="cpu"))
    array(1.5)
    """
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    _check_unsupported(out, where, "nanmean")
    if x.dtype.kind not in "fc":
        return mean(x, axis=axis, dtype=dtype, keepdims=keepdims)
    dt = _mean_dtype(x.dtype, dtype)
    total = sum(_nan_to(x, 0.0), axis=axis, dtype=dt, keepdims=keepdims)
    count = sum(elemwise(np.logical_not, elemwise(np.isnan, x)), axis=axis, dtype=np.int64, keepdims=keepdims)
    if isinstance(total, SparseArray):
        with np.errstate(divide="ignore", invalid="ignore"):
            return elemwise(np.true_divide, total, count).astype(dt)
    xp = xp_for(x.device)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _dense_result(total / count, dt, total.shape, xp)


def _nan_moment(x, axis, dtype, out, ddof, keepdims, where, name):
    _check_unsupported(out, where, name)
    if x.dtype.kind not in "fc":  # nothing to ignore: NumPy's nanvar is var here
        return _moment(x, axis, dtype, ddof, keepdims, name[3:])
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TypeError(f"{name}: dtype must be inexact for {x.dtype.name} input, got {np.dtype(dtype).name}")
    return _moment(x, axis, dtype, ddof, keepdims, name, skip_nan=True)


def nanvar(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance ignoring NaN (NumPy's ``nanvar``); NaN where ``ddof`` leaves no degree of freedom.

    Over each selection, only the ``c`` elements that are not NaN take part
    (unstored elements are the fill value, so they count unless it is NaN):
    the sum of their squared deviations from their mean, divided by
    ``c - ddof``. A selection with ``c - ddof <= 0`` (all NaN, for one)
    gives NaN.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, 4.0], shape=(3,), device="cpu")
    >>> gs.nanvar(x)
    array(4.)
    >>> gs.nanvar(x, ddof=1)
    array(8.)
    """
    return _nan_moment(x, axis, dtype, out, ddof, keepdims, where, "nanvar")


def nanstd(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation ignoring NaN (NumPy's ``nanstd``), the square root of :func:`nanvar`.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1]], [np.nan, 4.0], shape=(3,), device="cpu")
    >>> gs.nanstd(x)
    array(2.)
    """
    return _nan_moment(x, axis, dtype, out, ddof, keepdims, where, "nanstd")


# --------------------------------------------------------------------------
# argmin / argmax
# --------------------------------------------------------------------------

def _dtype_of(v) -> np.dtype:
    """The dtype of an array (of either device) or of a host scalar."""
    return np.dtype(v.dtype) if hasattr(v, "dtype") else np.asarray(v).dtype


def _lex_cmp(a, b, xp, greater):
    """a > b (or a < b) with NumPy's complex ordering (real part first)."""
    # (getattr's default would be evaluated first: np.asarray of a CuPy array raises)
    if _dtype_of(a).kind == "c" or _dtype_of(b).kind == "c":
        ar, ai, br, bi = xp.real(a), xp.imag(a), xp.real(b), xp.imag(b)
        return (ar > br) | ((ar == br) & (ai > bi)) if greater else (ar < br) | ((ar == br) & (ai < bi))
    return a > b if greater else a < b


def _arg_axis_checked(x, axis, name):
    """``axis`` (None or one axis) normalised; ``ValueError`` for an empty selection, as NumPy."""
    if axis is not None:
        if isinstance(axis, (tuple, list)):
            raise TypeError(f"{name}: axis must be None or an integer, got {axis!r}")
        (axis,) = normalize_axes(axis, x.ndim)
    if (x.size if axis is None else x.shape[axis]) == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    return axis


def _arg(x, axis, keepdims, name):
    from gpusparse.containers import SparseArray
    is_max = name == "argmax"
    axis = _arg_axis_checked(x, axis, name)
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        coo = canonical.coalesce(as_coo(x))
        if coo.dense_dim:
            coo = _sparsify_dense_dims(coo, coo.dense_dim, coo.shape[coo.sparse_dim:])
        fill = coo.fill_value
        fill_nan = bool(np.isnan(fill)) if coo.dtype.kind in "fc" else False
        if axis is None:
            result = _arg_all(coo, fill, fill_nan, is_max, k, xp)
            return result.reshape((1,) * x.ndim) if keepdims else result
        result = _arg_axis(coo, axis, fill, fill_nan, is_max, k, xp)
        if isinstance(result, SparseArray) and (x.sparse_dim == 0 or x.sparse_dim == 1 and axis == 0):
            result = result.todense()  # every sparse axis of x reduced: dense, as other reductions
        if keepdims:
            result = (_keepdims_sparse(result, x.shape, (axis,), coo.sparse_dim) if isinstance(result, SparseArray)
                      else _keepdims_dense(result, x.shape, (axis,), xp))
        return result


def _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp):
    """Index of the first extreme: the best stored element or the first unstored one (``gap``)."""
    best_nan = xp.isnan(best_val) if best_val.dtype.kind in "fc" else xp.zeros(best_val.shape, bool)
    beats = _lex_cmp(xp.asarray(fill), best_val, xp, is_max)
    ties = best_val == fill
    if fill_nan:
        take_gap = ~best_nan | (gap < best_idx)
    else:
        take_gap = ~best_nan & (beats | (ties & (gap < best_idx)))
    return xp.where(has_gap & (take_gap | (best_idx < 0)), gap, best_idx)


def _arg_all(coo, fill, fill_nan, is_max, k, xp):
    size = coo.size
    keys = k.linearize(coo.coords, coo.shape) if coo.nnz else xp.zeros(0, np.int64)
    if coo.nnz == 0:
        return xp.asarray(0, dtype=np.int64)
    pos = (xp.argmax if is_max else xp.argmin)(coo.data)
    best_idx = xp.take(keys, pos).reshape(1)
    best_val = xp.take(coo.data, pos).reshape(1)
    mismatch = keys != xp.arange(coo.nnz, dtype=np.int64)
    gap = xp.where(mismatch.any(), xp.argmax(mismatch), coo.nnz).reshape(1).astype(np.int64)
    has_gap = xp.asarray([coo.nnz < size])
    return _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp).reshape(())


def _arg_axis(coo, axis, fill, fill_nan, is_max, k, xp):
    kept = [a for a in range(coo.ndim) if a != axis]
    n_red = coo.shape[axis]
    out_shape = tuple(coo.shape[a] for a in kept)
    if coo.nnz == 0:
        if not kept:
            return xp.asarray(0, dtype=np.int64)
        return _sparse_out(xp.zeros((len(kept), 0), np.int64), xp.zeros(0, np.int64), out_shape, 0,
                           coo.device, xp, drop=False)
    if kept:
        perm, starts, ids, group_coords = _grouping(coo, kept, k, xp)
    else:
        perm, starts = None, xp.asarray([0, coo.nnz], dtype=np.int64)
        ids = xp.zeros(coo.nnz, dtype=np.int64)
        group_coords = xp.zeros((0, 1), np.int64)
    values = coo.data.reshape(-1, 1)
    rows = k.segment_reduce(values, starts, "argmax" if is_max else "argmin", perm)[:, 0]
    along = coo.coords[axis]
    best_idx = xp.take(along, rows)
    best_val = xp.take(coo.data, rows)
    ordered_along = along if perm is None else xp.take(along, perm)
    rank = xp.arange(coo.nnz, dtype=np.int64) - xp.take(starts, ids)
    counts = starts[1:] - starts[:-1]
    candidate = xp.where(ordered_along != rank, rank, xp.take(counts, ids))
    gap = k.segment_reduce(xp.ascontiguousarray(candidate.reshape(-1, 1)), starts, "min")[:, 0]
    has_gap = counts < n_red
    result = _choose(best_val, best_idx, gap, has_gap, fill, fill_nan, is_max, xp).astype(np.int64)
    if not kept:
        return result.reshape(())
    return _sparse_out(group_coords, result, out_shape, 0, coo.device, xp)


def argmax(x, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum over ``axis`` (NumPy's ``argmax``; NaN counts as the maximum).

    ``axis=None`` gives the flat index (a dense 0-d array); over one axis the
    result is sparse over the other axes (fill value 0), or dense for a 1-d
    array.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [2, 0]], [5.0, -1.0], shape=(2, 3), device="cpu")
    >>> gs.argmax(x)
    array(2)
    >>> gs.argmax(x, axis=1).todense()
    array([2, 1])
    """
    _check_unsupported(out, None, "argmax")
    return _arg(x, axis, keepdims, "argmax")


def argmin(x, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum over ``axis`` (NumPy's ``argmin``; NaN counts as the minimum).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 1], [2, 0]], [5.0, -1.0], shape=(2, 3), device="cpu")
    >>> gs.argmin(x)
    array(3)
    >>> gs.argmin(x, axis=0).todense()
    array([1, 0, 1])
    """
    _check_unsupported(out, None, "argmin")
    return _arg(x, axis, keepdims, "argmin")


def _nan_arg(x, axis, keepdims, name):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise import elemwise
    plain = name[3:]
    if x.dtype.kind not in "fc":
        return _arg(x, axis, keepdims, plain)
    axis = _arg_axis_checked(x, axis, name)
    all_nan = all(elemwise(np.isnan, x), axis=axis)
    found = any(all_nan) if isinstance(all_nan, SparseArray) else xp_for(x.device).any(all_nan)
    if bool(to_host(found)):  # sync: NumPy raises for an all-NaN selection
        raise ValueError(f"{name}: All-NaN slice encountered")
    # NaN becomes the worst value, as NumPy's nanargmax/nanargmin do (-inf+0j for complex).
    return _arg(_nan_to(x, -np.inf if name == "nanargmax" else np.inf), axis, keepdims, plain)


def nanargmax(x, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum ignoring NaN (NumPy's ``nanargmax``).

    Raises ``ValueError`` ("All-NaN slice encountered") if any selection
    holds only NaN; unstored elements take part as the fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [np.nan, -1.0], shape=(2, 3), device="cpu")
    >>> gs.nanargmax(x)
    array(1)
    >>> gs.nanargmax(x, axis=1).todense()
    array([1, 0])
    """
    _check_unsupported(out, None, "nanargmax")
    return _nan_arg(x, axis, keepdims, "nanargmax")


def nanargmin(x, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum ignoring NaN (NumPy's ``nanargmin``).

    Raises ``ValueError`` ("All-NaN slice encountered") if any selection
    holds only NaN; unstored elements take part as the fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1], [0, 2]], [np.nan, -1.0], shape=(2, 3), device="cpu")
    >>> gs.nanargmin(x)
    array(5)
    >>> gs.nanargmin(x, axis=1).todense()
    array([1, 2])
    """
    _check_unsupported(out, None, "nanargmin")
    return _nan_arg(x, axis, keepdims, "nanargmin")
