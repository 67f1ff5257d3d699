"""The reduction engine: any monoid over any axes of any format (:func:`reduce_with`).

Dense (hybrid) dimensions that are reduced are reduced on the values with
the array module. Reduced sparse dimensions: the kept coordinates are
linearised to keys and stably sorted (skipped when already in order, e.g.
the rows of a row-major array), runs of equal keys form segments, and the
primitive ``segment_reduce`` reduces each segment on the device. A full
reduction of the sparse dimensions needs no sort at all; CSR/CSC arrays
reduce over their minor axis along the index pointer, over their major axis
by key, and few kept elements are reduced by key without a sort. The fill
value is folded into each result as many times as the group has unstored
elements.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import _fill, canonical
from gpusparse.ops._broadcast import as_coo
from gpusparse.ops._merge_plan import unravel
from gpusparse.ops.reductions.arguments import NO_VALUE, normalize_axes, value_dtype
from gpusparse.ops.reductions.monoid import IDEMPOTENT, identity_scalar, is_identity
from gpusparse.ops.reductions.results import dense_result, keepdims_dense, keepdims_sparse, sparse_result
from gpusparse.ops.reductions.segments import group_by_kept, kept_keys

__all__ = ["check_identity", "reduce_with"]


#: Reductions ``reduce_by_key`` runs, and how many kept elements per entry it may allocate.
_BY_KEY_OPS = ("sum", "prod", "min", "max", "any", "all")
_BY_KEY_FACTOR = 2


def check_identity(mono_name, has_identity, x_shape, axes, name):
    """``ValueError`` for a reduction without identity over zero elements, as NumPy."""
    reduced = math.prod(x_shape[a] for a in axes)
    if not has_identity and reduced == 0:
        raise ValueError(
            f"{name}: zero-size array to reduction operation {mono_name} which has no identity "
            f"(axis covers a dimension of size 0 in shape {x_shape})"
        )


def reduce_with(x, mono, axis, keepdims, dtype, name, initial=NO_VALUE, *, be=None):
    """Reduce ``x`` with monoid ``mono`` over ``axis``; the engine of every decomposable reduction.

    ``be`` is the backend of ``x``'s device, when the caller has it already.
    """
    axes = normalize_axes(axis, x.ndim)
    has_identity = mono.ufunc.identity is not None or initial is not NO_VALUE
    check_identity(mono.name, has_identity, x.shape, axes, name)
    out_dtype = value_dtype(mono.result_dtype(x.dtype, dtype), name)
    be = be or backend(x.device)
    k, xp = be.kernels, be.xp
    with be.scope():
        if math.prod(x.shape[a] for a in axes) == 0:  # nothing reduced: the identity (or initial)
            value = identity_scalar(mono, out_dtype) if initial is NO_VALUE else \
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
            result = _reduce_core(x if whole else as_coo(x, be=be), mono, axes, out_dtype, be)
        if initial is not NO_VALUE and math.prod(x.shape[a] for a in axes):
            result = _with_initial(result, mono, initial, out_dtype, xp)
        if keepdims:
            result = (keepdims_sparse(result, x.shape, axes, x.sparse_dim, be=be) if hasattr(result, "fill_value")
                      else keepdims_dense(result, x.shape, axes, xp))
    return result


def _fold_missing(mono, seg, fill, missing, dtype, xp):
    """``seg`` ``(groups, w)`` with ``fill`` folded in ``missing[i]`` times where that is positive.

    The unstored elements of a group all hold the fill value; for an
    idempotent op any number of copies is the fill itself, so no per-group
    power is built.
    """
    if mono.name in IDEMPOTENT:
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
    return sparse_result(coords, seg, (n_major,) + kept_dense_shape, out_fill, x.device, xp)


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
    return sparse_result(xp.zeros((len(kept_sparse), 0), np.int64), xp.zeros((0,) + kept_dense_shape, dtype),
                         out_shape, value, x.device, xp, drop=False)


def _with_initial(result, mono, initial, dtype, xp):
    from gpusparse.containers import SparseArray
    from gpusparse.ops.elementwise.dispatch import elemwise
    if isinstance(result, SparseArray):
        return elemwise(mono.ufunc, result, np.asarray(initial).astype(dtype)[()])
    return dense_result(mono.fold(result, xp.asarray(np.asarray(initial).astype(dtype)), xp), dtype, result.shape, xp)


def _reduce_core(x, mono, axes, out_dtype, be):
    k, xp = be.kernels, be.xp
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
        x = canonical.coalesce(x, be=be)
    data = x.data if x.data.dtype == out_dtype else x.data.astype(out_dtype)
    fill = np.asarray(x.fill_value).astype(out_dtype)[()]
    # 1. Dense (hybrid) axes: reduce each stored block; unstored blocks are all fill.
    if red_dense:
        data = mono.reduce_axis(data, tuple(1 + a - sd for a in red_dense), out_dtype, xp)
        block = math.prod(x.shape[a] for a in red_dense)
        fill = mono.power(fill, block) if block else identity_scalar(mono, out_dtype)
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
            result = xp.full(kept_dense_shape, identity_scalar(mono, out_dtype), dtype=out_dtype)
        return dense_result(result, out_dtype, kept_dense_shape, xp)
    out_shape = tuple(x.shape[a] for a in kept_sparse) + kept_dense_shape
    out_fill = mono.power(fill, n_red) if n_red else identity_scalar(mono, out_dtype)
    # 2b. No sparse axis reduced: the same coordinates.
    if not red_sparse:
        return sparse_result(x.coords, data, out_shape, out_fill, x.device, xp, flags=(x.sorted, x.unique))
    # 2c. Some sparse axes reduced: segments of the kept coordinates.
    if nnz == 0:
        return sparse_result(xp.zeros((len(kept_sparse), 0), np.int64), data[:0], out_shape, out_fill,
                             x.device, xp, drop=False)
    values = data.reshape(nnz, -1)
    kept_shape = tuple(x.shape[a] for a in kept_sparse)
    if mono.kernel_op in _BY_KEY_OPS and math.prod(kept_shape) <= _BY_KEY_FACTOR * nnz:
        keys = kept_keys(x, kept_sparse, kept_shape, k, xp)
        return _reduce_by_key(keys, values, mono, kept_shape, kept_dense_shape, n_red, fill, out_fill,
                              out_dtype, x.device, k, xp)
    perm, starts, _, group_coords = group_by_kept(x, kept_sparse, k, xp, need_starts=False, need_ids=False)
    if starts is None:  # one entry per group: the reduction of each is the entry
        seg = values if perm is None else xp.take(values, perm, axis=0)
    elif mono.kernel_op is not None:
        seg = k.segment_reduce(values, starts, mono.kernel_op, perm)
        seg = seg.astype(out_dtype, copy=False)
    else:
        ordered = values if perm is None else xp.take(values, perm, axis=0)
        seg = mono.reduce_segments(ordered, starts, xp)
    if not is_identity(mono, fill, out_dtype):  # fold in the unstored elements
        counts = starts[1:] - starts[:-1] if starts is not None else xp.ones(nnz, dtype=np.int64)
        seg = _fold_missing(mono, seg, fill, n_red - counts, out_dtype, xp)
    seg = seg.reshape((seg.shape[0],) + kept_dense_shape)
    return sparse_result(group_coords, seg, out_shape, out_fill, x.device, xp)


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
    neutral = is_identity(mono, fill, dtype)
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
