"""Fast paths of ``x[key]``: gathers of whole rows through ``indptr``.

Row selection and slicing of CSR (column selection of CSC), and
``index_select`` along the first axis of a sorted COO array. Each returns
None where it does not apply, and the general path
(:mod:`~gpusparse.ops.indexing.general`) takes over.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gpusparse._device import to_host
from gpusparse.ops import convert
from gpusparse.ops.indexing.general import _select, _slice_hits
from gpusparse.ops.indexing.keys import _Key


def _gather_rows(indptr, rows, arrays, k, xp):
    """The entries of ``rows`` (int64) of a row pointer, copied run by run from each array.

    Returns ``(new_indptr, gathered)``: ``copy_segments`` moves the arrays
    two at a time, no per-entry position array.
    """
    starts, ends = _row_bounds(indptr, rows, int(arrays[-1].shape[0]), xp)
    counts = ends - starts
    new_indptr = k.offsets(counts)
    total = int(to_host(new_indptr[-1:])[0])  # sync: size of the output
    return new_indptr, _copy_runs(arrays, starts, new_indptr[:-1], counts, total, k, xp)


def _row_bounds(indptr, rows, nnz, xp):
    """Start and end (int64) of the entries of ``rows`` (an int64 array), ``start <= end``.

    Pointers are clipped to ``[0, nnz]`` and a decreasing pair gives an empty
    row (the memory-safety contract), so that output sizes computed from them
    never exceed what the entries allow, whatever ``indptr`` holds.
    """
    ptr = indptr.astype(np.int64, copy=False)
    return _clip_bounds(xp.take(ptr, rows), xp.take(ptr, rows + 1), nnz, xp)


def _clip_bounds(begin, end, nnz, xp):
    begin = xp.clip(begin, 0, nnz)
    return begin, xp.maximum(xp.clip(end, 0, nnz), begin)


def _copy_runs(arrays, src_starts, dst_starts, lengths, total, k, xp):
    """For each array (any trailing shape), rows ``src_starts[i]:+lengths[i]`` placed at ``dst_starts[i]``."""
    def flat(a):
        return xp.ascontiguousarray(a).reshape(a.shape[0], math.prod(a.shape[1:]))
    outs = [k.empty((total,) + tuple(a.shape[1:]), a.dtype) for a in arrays]
    for i in range(0, len(arrays), 2):
        pair = arrays[i: i + 2]
        if len(pair) == 2:
            k.copy_segments(flat(pair[0]), src_starts, dst_starts, lengths, flat(outs[i]),
                            flat(pair[1]), flat(outs[i + 1]))
        else:
            k.copy_segments(flat(pair[0]), src_starts, dst_starts, lengths, flat(outs[i]))
    return outs


def _is_full(item, n):
    return item.kind == "slice" and item.payload == (0, 1, n)


def _compressed_fast(x, spec: _Key, be):
    """CSR row / CSC column selection and slicing through ``indptr`` on backend ``be``; None if not applicable."""
    major = x._major_axis
    items = spec.items
    if any(it.kind == "new" for it in items):
        return None
    by_dim = {it.dim: it for it in items}
    item_major, item_minor = by_dim[major], by_dim[1 - major]
    dense_items = [it for it in items if it.dim >= 2]
    if any(it.kind == "adv" for it in dense_items):
        return None
    if item_major.kind == "adv" and not (len(spec.bshape) == 1 and
                                         sum(it.kind == "adv" for it in items) == 1):
        return None
    if item_major.kind not in ("adv", "slice") or item_minor.kind != "slice" or item_minor.payload[1] < 0:
        return _compressed_restrict(x, spec, be) if item_major.kind in ("int", "slice") else None
    k, xp = be.kernels, be.xp
    n_minor = x.shape[1 - major]
    mstart, mstep, mlength = item_minor.payload
    minor_full = (mstart, mstep, mlength) == (0, 1, n_minor)
    begin = None
    if item_major.kind == "slice":
        start, step, length = item_major.payload
        n_major = length
        if step == 1 and (minor_full or mstep != 1):  # contiguous rows: views
            indptr, indices, data = _major_range(x, start, start + length, xp)
        elif step == 1:
            ptr = x.indptr.astype(np.int64, copy=False)
            begin, end = _clip_bounds(ptr[start: start + length], ptr[start + 1: start + length + 1], x.nnz, xp)
        else:
            rows = xp.arange(start, start + step * length, step, dtype=np.int64)[:length]
            begin, end = _row_bounds(x.indptr, rows, x.nnz, xp)
    else:
        rows = item_major.payload
        n_major = int(rows.shape[0])
        begin, end = _row_bounds(x.indptr, rows, x.nnz, xp)
    searched = False
    if begin is not None:
        if not minor_full and mstep == 1:  # a column range of sorted rows: binary searches
            lo = k.segment_search(x.indices, begin, end, xp.full(n_major, mstart, dtype=np.int64))
            hi = k.segment_search(x.indices, lo, end, xp.full(n_major, mstart + mlength, dtype=np.int64))
            begin, end, searched = lo, hi, True
        counts = end - begin
        indptr = k.offsets(counts)
        total = int(to_host(indptr[-1:])[0])  # sync: size of the output
        indices, data = _copy_runs([x.indices, x.data], begin, indptr[:-1], counts, total, k, xp)
        if searched:
            n_minor = mlength
            if mstart:
                indices -= indices.dtype.type(mstart)
    if not minor_full and not searched:
        hit, q = _slice_hits(indices, mstart, mstep, mlength)
        indptr, (indices, data) = convert.compressed_subset(indptr, hit, [q, data], k, xp)
        n_minor = mlength
    dense_key = tuple(it.payload if it.kind == "int" else it.source for it in sorted(dense_items, key=lambda i: i.dim))
    if dense_key:
        data = data[(slice(None),) + dense_key]
    data = xp.ascontiguousarray(data)
    from gpusparse._dtypes import index_dtype_for
    dtype = index_dtype_for(n_major, n_minor, int(indices.shape[0]))
    if x.index_dtype == np.int64:
        dtype = np.dtype(np.int64)
    shape = [0, 0]
    shape[major], shape[1 - major] = n_major, n_minor
    dense_shape = tuple(data.shape[1:])
    return type(x)._from_parts(xp.ascontiguousarray(indptr, dtype=dtype),
                               xp.ascontiguousarray(indices, dtype=dtype), data,
                               tuple(shape) + dense_shape, x.fill_value, x.device)


def _major_range(x, lo, hi, xp):
    """Components of the contiguous major range ``[lo, hi)``."""
    ends = to_host(x.indptr[[lo, hi]] if hi > lo else x.indptr[[lo, lo]])  # sync: entry range
    a, b = int(ends[0]), int(ends[1])
    indptr = x.indptr[lo: hi + 1].astype(np.int64) - a
    return indptr, x.indices[a:b], x.data[a:b]


def _compressed_restrict(x, spec: _Key, be):
    """Cut a compressed array to the major range its integer/slice index needs, then index the rest."""
    major = x._major_axis
    item = next(it for it in spec.items if it.dim == major)
    xp = be.xp
    n = x.shape[major]
    if item.kind == "int":
        lo, hi = item.payload, item.payload + 1
    else:
        start, step, length = item.payload
        if length == 0 or step == 1 and length == n:
            return None
        last = start + step * (length - 1)
        lo, hi = min(start, last), max(start, last) + 1
        if (lo, hi) == (0, n):
            return None
    indptr, indices, data = _major_range(x, lo, hi, xp)
    shape = list(x.shape)
    shape[major] = hi - lo
    part = type(x)._from_parts(indptr.astype(x.index_dtype), indices, data, tuple(shape),
                               x.fill_value, x.device)
    new_items = []
    for it in spec.items:
        if it is item:
            if it.kind == "int":
                it = dataclasses.replace(it, payload=0)
            else:
                start, step, length = it.payload
                it = dataclasses.replace(it, payload=(start - lo, step, length))
        new_items.append(it)
    new_spec = _Key(new_items, spec.bshape, spec.adv_front, spec.ellipsis)
    fast = _compressed_fast(part, new_spec, be) if item.kind == "slice" else None
    return fast if fast is not None else _select(part, new_spec, be)


def _coo_row_select(x, spec: _Key, be):
    """``index_select`` along axis 0 of a sorted COO array on backend ``be``: whole rows, output sorted."""
    items = spec.items
    if x.sparse_dim < 1 or spec.bshape is None or len(spec.bshape) != 1:
        return None
    first = items[0]
    if first.kind != "adv" or first.dim != 0:
        return None
    if any(it.dim is None or not _is_full(it, x.shape[it.dim]) for it in items[1:]):
        return None
    from gpusparse.containers import COO
    k, xp = be.kernels, be.xp
    indptr = k.compress(x.coords[0], x.shape[0], np.int64)
    rows = first.payload
    new_indptr, gathered = _gather_rows(indptr, rows, list(x.coords[1:]) + [x.data], k, xp)
    total = int(gathered[-1].shape[0])
    coords = xp.empty((x.sparse_dim, total), dtype=np.int64)
    coords[0] = k.expand(new_indptr, total)
    for d, row in enumerate(gathered[:-1], start=1):
        coords[d] = row
    data = gathered[-1]
    shape = (int(rows.shape[0]),) + x.shape[1:]
    return COO._from_parts(coords, data, shape, x.fill_value, x.device, sorted=True, unique=x.unique)
