"""Indexing: ``x[key]`` with NumPy's rules, and index_select, narrow, take, nonzero, argwhere.

``x[key]`` accepts every NumPy index on every format and every dimension,
sparse or dense: integers (negative too), slices with any step, ``...``,
``None``, boolean masks and integer arrays, several at once. Advanced indices
(arrays, and integers when an array is present) broadcast together; their
dimensions replace the first of them when they are adjacent in the key and go
first otherwise, exactly as in NumPy. A result with no dimension is a scalar
(a NumPy scalar on the CPU, a 0-d device array on a GPU, which avoids a
synchronisation); bad keys raise NumPy's ``IndexError``.

How it works, on the COO view of any format:

1. *Normalise* the key: expand ``...``, turn boolean masks into integer
   arrays (``nonzero``), broadcast the advanced indices, wrap negatives and
   check bounds (one synchronisation for all arrays).
2. *Filter* the entries by the integer and slice indices of sparse
   dimensions: a mask per dimension, one compaction, and the surviving
   coordinates remapped (``(c - start) // step``).
3. *Match* the entries with the advanced index tuples over sparse
   dimensions: linear keys of the index tuples are sorted, each entry finds
   its matches through a count table (small key ranges) or a binary search,
   and the matches are expanded with their multiplicities.
4. *Index the values* (``data``, shape ``(nnz, *dense_shape)``) with the
   dense part of the key, directly with the array module.

A dense dimension that must come before a sparse one in the result (an
advanced block moved in front) becomes sparse. Fast paths: row selection and
slicing of CSR (column selection of CSC) through ``indptr`` gathers, and
``index_select`` along the first axis of a sorted COO array.
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np

from gpusparse._components import to_array
from gpusparse._device import (
    Device, array_device, device_scope, is_cupy_array, kernels_for, to_device_array, to_host, xp_for,
)
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_axis

__all__ = ["argwhere", "getitem", "index_select", "narrow", "nonzero", "take"]

_INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


# --------------------------------------------------------------------------
# Key normalisation
# --------------------------------------------------------------------------

@dataclasses.dataclass(eq=False)
class _Item:
    """One normalised index: what it does to which input dimension.

    ``kind`` is ``"int"`` (payload: a Python int, already wrapped),
    ``"slice"`` (payload: ``(start, step, length)``), ``"new"`` (a new axis
    of length 1) or ``"adv"`` (payload: the flat broadcast index array of
    length ``prod(bshape)``). ``pos`` is the position in the key, for the
    adjacency rule of advanced indices.
    """

    kind: str
    dim: "int | None"
    payload: object
    pos: int
    source: object = None  # the slice as given, for indexing dense values


@dataclasses.dataclass
class _Key:
    items: list
    bshape: "tuple | None"  # broadcast shape of the advanced indices, None if none
    adv_front: bool  # advanced dimensions go first (indices not adjacent)
    ellipsis: bool = False  # a 0-d result is an array, not a scalar (NumPy's rule)


def _slice_item(obj: slice, n: int):
    for part in (obj.start, obj.stop, obj.step):
        if part is not None and not hasattr(part, "__index__"):
            raise TypeError("slice indices must be integers or None or have an __index__ method")
    if obj.step is not None and operator.index(obj.step) == 0:
        raise ValueError("slice step cannot be zero")
    start, stop, step = obj.indices(n)
    return start, step, len(range(start, stop, step))


def _index_array(obj, dev: Device):
    """An index array on ``dev``; host input (lists, NumPy) is moved there."""
    arr, _ = to_array(obj, "index")
    if isinstance(obj, (list, tuple)) and arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # NumPy treats [] as an empty integer index
    if array_device(arr) != dev:
        if dev.kind == "cpu":
            raise ValueError(
                f"index is on {array_device(arr)} but the array is on {dev}; move one explicitly"
            )
        arr = to_device_array(arr, dev)
    if arr.dtype.kind not in "biu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return arr


def _raw_items(x, key):
    """The key as ``(kind, payload)`` pairs, with ``...`` expanded to full slices."""
    from gpusparse.containers import SparseArray
    if not isinstance(key, tuple):
        key = (key,)
    raw = []
    for obj in key:
        if obj is None:
            raw.append(("new", None))
        elif obj is Ellipsis:
            raw.append(("ellipsis", None))
        elif isinstance(obj, slice):
            raw.append(("slice", obj))
        elif isinstance(obj, (bool, np.bool_)):
            raw.append(("bool0", bool(obj)))
        elif isinstance(obj, (int, np.integer)):
            raw.append(("int", int(obj)))
        elif isinstance(obj, SparseArray) and obj.dtype.kind not in "iu":
            raise IndexError("a sparse boolean mask cannot be used as an index (its dense form is the size "
                             "of the array it selects from); use .todense() or .coords")
        elif isinstance(obj, (list, tuple, np.ndarray, SparseArray)) or hasattr(obj, "__dlpack__") or is_cupy_array(obj):
            # an integer index array is dense in nature: a sparse one gives its elements
            arr = _index_array(obj.todense() if isinstance(obj, SparseArray) else obj, x.device)
            if arr.ndim == 0:
                value = to_host(arr).item()  # sync: a 0-d index acts as a scalar
                raw.append(("bool0", value) if arr.dtype == np.bool_ else ("int", int(value)))
            else:
                raw.append(("boolarr" if arr.dtype == np.bool_ else "intarr", arr))
        elif hasattr(obj, "__index__"):
            raw.append(("int", operator.index(obj)))
        else:
            raise IndexError(_INVALID_INDEX)
    if sum(kind == "ellipsis" for kind, _ in raw) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(p.ndim if kind == "boolarr" else 1
                   for kind, p in raw if kind in ("int", "slice", "intarr", "boolarr"))
    if consumed > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {consumed} were indexed"
        )
    fill = [("slice", slice(None))] * (x.ndim - consumed)
    if any(kind == "ellipsis" for kind, _ in raw):
        at = next(i for i, (kind, _) in enumerate(raw) if kind == "ellipsis")
        raw = raw[:at] + fill + [("ellipsis", None)] + raw[at + 1:]
    else:
        raw = raw + fill
    return raw


def _normalise(x, raw) -> _Key:
    """Items per input dimension, advanced indices broadcast, bounds checked."""
    dev = x.device
    xp = xp_for(dev)
    items, arrays = [], []  # arrays: (item, array) for advanced indices
    has_arrays = any(kind in ("intarr", "boolarr") for kind, _ in raw)
    dim = 0
    ellipsis = any(kind == "ellipsis" for kind, _ in raw)
    for pos, (kind, payload) in enumerate(raw):
        if kind == "ellipsis":
            continue
        if kind == "new":
            items.append(_Item("new", None, None, pos))
            continue
        if kind == "slice":
            items.append(_Item("slice", dim, _slice_item(payload, x.shape[dim]), pos, payload))
            dim += 1
            continue
        if kind == "int":
            n = x.shape[dim]
            if not -n <= payload < n:
                raise IndexError(f"index {payload} is out of bounds for axis {dim} with size {n}")
            value = payload + n if payload < 0 else payload
            if has_arrays:
                item = _Item("adv", dim, None, pos)
                arrays.append((item, xp.asarray(value, dtype=np.int64)))
            else:
                item = _Item("int", dim, value, pos)
            items.append(item)
            dim += 1
            continue
        if kind == "boolarr" and payload.ndim == 1 and payload.shape[0] == 0:
            # NumPy takes an empty 1-d boolean index as an empty integer index, whatever the axis'
            # size (np.arange(4)[np.array([], bool)] is empty): the same here.
            kind, payload = "intarr", xp.zeros(0, dtype=np.int64)
        if kind == "boolarr":
            m = payload.ndim
            for j in range(m):
                if payload.shape[j] != x.shape[dim + j]:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {dim + j}; size of "
                        f"axis is {x.shape[dim + j]} but size of corresponding boolean axis is "
                        f"{payload.shape[j]}"
                    )
            with device_scope(dev):
                where = xp.nonzero(payload)  # sync: number of True elements
            for j in range(m):
                item = _Item("adv", dim + j, None, pos)
                arrays.append((item, where[j].astype(np.int64)))
                items.append(item)
            dim += m
            continue
        # intarr
        item = _Item("adv", dim, None, pos)
        arrays.append((item, payload))
        items.append(item)
        dim += 1
    if not arrays:
        return _Key(items, None, False, ellipsis)
    try:
        bshape = np.broadcast_shapes(*(a.shape for _, a in arrays))
    except ValueError:
        shapes = " ".join(str(tuple(a.shape)) for _, a in arrays)
        raise IndexError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None
    _check_array_bounds(x, arrays, xp, dev)
    with device_scope(dev):
        for item, arr in arrays:
            flat = xp.broadcast_to(arr.astype(np.int64, copy=False), bshape).reshape(-1)
            n = x.shape[item.dim]
            item.payload = xp.ascontiguousarray(xp.where(flat < 0, flat + n, flat))
    positions = sorted({item.pos for item, _ in arrays})
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    return _Key(items, tuple(bshape), not adjacent, ellipsis)


def _check_array_bounds(x, arrays, xp, dev):
    """IndexError for the first index out of its axis; one synchronisation for all arrays."""
    checked = [(item, arr) for item, arr in arrays if arr.size and arr.ndim]
    if not checked:
        return
    with device_scope(dev):
        ends = xp.stack([xp.stack([a.min(), a.max()]).astype(np.int64) for _, a in checked])
    ends = to_host(ends)  # sync: bounds of every index array
    for (item, _), (lo, hi) in zip(checked, ends):
        n = x.shape[item.dim]
        bad = lo if lo < -n else hi if hi >= n else None
        if bad is not None:
            raise IndexError(f"index {int(bad)} is out of bounds for axis {item.dim} with size {n}")


# --------------------------------------------------------------------------
# x[key]
# --------------------------------------------------------------------------

def getitem(x, key):
    """``x[key]`` with NumPy's semantics; see the module docstring.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(12).reshape(3, 4) % 5, device="cpu")
    >>> x[1].todense()
    array([4, 0, 1, 2])
    >>> x[::-1, [0, 3]].todense()
    array([[3, 1],
           [4, 2],
           [0, 3]])
    >>> x[x.todense() > 2].todense()
    array([3, 4, 3, 4])
    >>> x[2, 0]
    np.int64(3)
    """
    if isinstance(key, tuple) and len(key) == 0:
        return x  # also for 0-d arrays (as CuPy, torch, JAX and the array API; NumPy gives a scalar)
    raw = _raw_items(x, key)
    bools = [i for i, (kind, _) in enumerate(raw) if kind == "bool0"]
    if bools:  # a 0-d boolean adds an axis indexed by [0] (True) or [] (False)
        from gpusparse.ops.manipulation import expand_dims
        at = bools[0]
        axis = sum(p.ndim if kind == "boolarr" else 1 for kind, p in raw[:at]
                   if kind in ("int", "slice", "intarr", "boolarr"))
        xp = xp_for(x.device)
        with device_scope(x.device):
            index = xp.zeros(int(raw[at][1]), dtype=np.int64)
        rebuilt = [None if kind == "new" else Ellipsis if kind == "ellipsis" else payload
                   for kind, payload in raw]
        rebuilt[at] = index
        return getitem(expand_dims(x, axis), tuple(rebuilt))
    spec = _normalise(x, raw)
    with device_scope(x.device):
        if x.format != "coo":
            fast = _compressed_fast(x, spec)
            if fast is not None:
                return fast
        elif x.sorted:
            fast = _coo_row_select(x, spec)
            if fast is not None:
                return fast
        return _select(x, spec)


def _taker(k):
    """``take(a, index)``: rows of ``a`` at int64 ``index`` through the ``gather`` primitive."""
    return lambda a, index: canonical.take_rows(a, index, k)


def _out_dims(spec: _Key):
    """Output dimensions in order: ("slice", item) / ("new", item) / ("adv", j)."""
    out, adv_done = [], False
    if spec.bshape is not None and spec.adv_front:
        out.extend(("adv", j) for j in range(len(spec.bshape)))
        adv_done = True
    for item in spec.items:
        if item.kind in ("slice", "new"):
            out.append((item.kind, item))
        elif item.kind == "adv" and not adv_done:
            out.extend(("adv", j) for j in range(len(spec.bshape)))
            adv_done = True
    return out


def _select(x, spec: _Key):
    """The general path on the COO view."""
    from gpusparse.containers import COO
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    coo = x if x.format == "coo" else convert.compressed_to_coo(x)
    S = x.sparse_dim
    coords = coo.coords
    take = _taker(k)
    adv = [it for it in spec.items if it.kind == "adv"]
    adv_sp = [it for it in adv if it.dim < S]
    adv_dn = [it for it in adv if it.dim >= S]
    out_dims = _out_dims(spec)

    def sparse_origin(d):
        kind, ref = d
        return (kind == "slice" and ref.dim < S) or (kind == "adv" and bool(adv_sp))
    last = max((i for i, d in enumerate(out_dims) if sparse_origin(d)), default=-1)
    out_sparse, out_dense = out_dims[: last + 1], out_dims[last + 1:]
    b_sparse = any(kind == "adv" for kind, _ in out_sparse)

    # 1. filter by integers and slices of sparse dimensions
    keep, remapped = None, {}
    for it in spec.items:
        if it.dim is None or it.dim >= S:
            continue
        if it.kind == "int":
            hit = coords[it.dim] == it.payload
        elif it.kind == "slice":
            start, step, length = it.payload
            if start == 0 and step == 1 and length == x.shape[it.dim]:
                continue
            hit, remapped[it.dim] = _slice_hits(coords[it.dim], start, step, length)
        else:
            continue
        keep = hit if keep is None else keep & hit
    src = None if keep is None else xp.nonzero(keep)[0]  # sync: entries that survive
    n_cur = coo.nnz if src is None else int(src.shape[0])

    # 2. match advanced index tuples
    b = None
    if adv_sp:
        entry_cols = [coords[it.dim] if src is None else take(coords[it.dim], src) for it in adv_sp]
        ent, b = _match(entry_cols, [it.payload for it in adv_sp],
                        [x.shape[it.dim] for it in adv_sp], k, xp)
        src = ent if src is None else take(src, ent)
    elif b_sparse:  # advanced indices on dense dimensions placed before sparse ones
        nb = math.prod(spec.bshape)
        base = xp.arange(coo.nnz, dtype=np.int64) if src is None else src
        src = xp.repeat(base, nb)
        b = xp.tile(xp.arange(nb, dtype=np.int64), n_cur)
    n_out = coo.nnz if src is None else int(src.shape[0])

    # 3. coordinates of the sparse output dimensions
    rows = []
    bcoords = None
    for kind, ref in out_sparse:
        if kind == "new":
            rows.append(xp.zeros(n_out, dtype=np.int64))
        elif kind == "slice":
            row = remapped.get(ref.dim, coords[ref.dim])
            rows.append(row if src is None else take(row, src))
        else:
            if bcoords is None:
                bcoords = k.delinearize(b, spec.bshape) if n_out else xp.zeros((len(spec.bshape), 0), np.int64)
            rows.append(bcoords[ref])
    new_coords = xp.stack(rows) if rows else xp.zeros((0, n_out), dtype=np.int64)

    # 4. values: the dense part of the key applied to data
    data = coo.data if src is None else take(coo.data, src)
    dense_in_out = {id(ref) for kind, ref in out_dense if kind == "new"}
    key = [slice(None)]
    for it in spec.items:
        if it.kind == "new":
            if id(it) in dense_in_out:
                key.append(None)
        elif it.dim >= S:
            if it.kind == "int":
                key.append(it.payload)
            elif it.kind == "slice":
                key.append(it.source)
            elif b_sparse:
                key.append(xp.take(it.payload, b))
            else:
                key.append(it.payload.reshape(spec.bshape))
    if adv_dn and b_sparse:
        key[0] = xp.arange(n_out, dtype=np.int64)
    if len(key) > 1:
        data = data[tuple(key)]
        if adv_dn and not b_sparse and spec.adv_front:
            data = xp.moveaxis(data, len(spec.bshape), 0)
    data = xp.ascontiguousarray(data)

    shape = []
    for kind, ref in out_dims:
        shape.append(spec.bshape[ref] if kind == "adv" else 1 if kind == "new" else ref.payload[2])
    shape = tuple(shape)
    fill = x.fill_value
    if not out_sparse:  # every sparse dimension was consumed: sum what remains
        if n_out > 1:
            data = canonical.sum_segments(data, xp.asarray([0, n_out], dtype=np.int64), None, k)
        if not shape and not spec.ellipsis:
            return _scalar(data, fill, dev, xp)
        out = COO._from_parts(xp.zeros((0, min(n_out, 1)), np.int64), data[: min(n_out, 1)], shape,
                              fill, dev, sorted=True, unique=True)
        return out
    positive = all(it.payload[1] > 0 for it in spec.items if it.kind == "slice" and it.dim < S)
    out = COO._from_parts(xp.ascontiguousarray(new_coords), data, shape, fill, dev,
                          sorted=coo.sorted and positive and not b_sparse, unique=coo.unique)
    return _finish(x, out, out_sparse, S)


def _slice_hits(c, start, step, length):
    """Which of the coordinates ``c`` a slice keeps, and their new coordinates (int64)."""
    if step == 1:
        hit = (c >= start) & (c < start + length)
        return hit, (c - start if start else c).astype(np.int64, copy=False)
    t = c.astype(np.int64) - start
    q = t // step
    return (q * step == t) & (q >= 0) & (q < length), q


def _scalar(data, fill, dev, xp):
    """The one element: a NumPy scalar on the CPU, a 0-d device array on a GPU (no sync)."""
    value = xp.asarray(fill) if data.shape[0] == 0 else data[0]
    if dev.kind != "cpu":
        return xp.array(value, copy=True).reshape(())
    return np.asarray(value).reshape(())[()]


def _finish(x, out, out_sparse, S):
    """Compressed input keeps its format when the result has two sparse dimensions."""
    if x.format == "coo" or len(out_sparse) != 2:
        return out
    return convert.asformat(out, x.format)


# --------------------------------------------------------------------------
# Matching entries with advanced index tuples
# --------------------------------------------------------------------------

_TABLE_MIN = 1 << 16


def _match(entry_cols, index_cols, dims, k, xp):
    """Pairs ``(entry, b)`` with ``entry_cols[:, entry] == index_cols[:, b]``.

    Entry-major, ``b`` ascending within an entry. Index tuples are sorted by
    their linear key; entries count their matches through a count table when
    the key range is small and by binary search otherwise, and the matches
    are expanded from the running total of those counts (no compaction of
    the entries that match).
    """
    n, nb = int(entry_cols[0].shape[0]), int(index_cols[0].shape[0])
    take = _taker(k)
    if n == 0 or nb == 0:
        empty = xp.zeros(0, dtype=np.int64)
        return empty, empty
    entry_keys, index_keys, key_range = _tuple_keys(entry_cols, index_cols, dims, xp, k)
    bits = max(key_range - 1, 0).bit_length()
    if key_range <= max(_TABLE_MIN, 4 * (n + nb)):
        counts = xp.bincount(index_keys, minlength=key_range)
        _, order = k.sort_pairs(index_keys, None, bits)
        begin = k.offsets(counts)
        found = take(counts, entry_keys)

        def first_of(ent):
            return take(begin, take(entry_keys, ent))
    else:
        sorted_keys, order = k.sort_pairs(index_keys, None, bits)
        first = xp.searchsorted(sorted_keys, entry_keys, side="left")
        found = xp.searchsorted(sorted_keys, entry_keys, side="right") - first

        def first_of(ent):
            return take(first, ent)
    ends = k.offsets(found)
    total = int(to_host(ends[-1:])[0])  # sync: number of matches
    ent = k.expand(ends, total)
    j = xp.arange(total, dtype=np.int64) - take(ends, ent)
    return ent, take(order, first_of(ent) + j)


def _tuple_keys(entry_cols, index_cols, dims, xp, k):
    """Linear keys of entries and index tuples over ``dims``; never overflows.

    Where ``prod(dims)`` does not fit in 62 bits, dimensions are folded one
    at a time into dense ranks among the index tuples (entries that match no
    tuple get a key no tuple has).
    """
    if len(dims) == 1:
        return entry_cols[0], index_cols[0], max(dims[0], 1)
    if math.prod(dims) < 2**62:
        ekeys = k.linearize(xp.ascontiguousarray(xp.stack(entry_cols)), dims)
        ikeys = k.linearize(xp.ascontiguousarray(xp.stack(index_cols)), dims)
        return ekeys, ikeys, max(math.prod(dims), 1)
    erank = xp.zeros(entry_cols[0].shape[0], dtype=np.int64)
    irank = xp.zeros(index_cols[0].shape[0], dtype=np.int64)
    missing = xp.zeros(entry_cols[0].shape[0], dtype=bool)
    size = 1
    for ecol, icol in zip(entry_cols, index_cols):
        values = xp.unique(icol)  # sync: unique sizes its output
        m = int(values.shape[0])  # sync: distinct values of this index
        epos = xp.minimum(xp.searchsorted(values, ecol), m - 1)
        missing |= xp.take(values, epos) != ecol
        ecomb = erank * m + epos
        icomb = irank * m + xp.searchsorted(values, icol)
        combos = xp.unique(icomb)  # sync: unique sizes its output
        size = int(combos.shape[0])  # sync: distinct index tuples so far
        erank = xp.minimum(xp.searchsorted(combos, ecomb), size - 1)
        missing |= xp.take(combos, erank) != ecomb
        irank = xp.searchsorted(combos, icomb)
    erank = xp.where(missing, size, erank)
    return erank, irank, size + 1


# --------------------------------------------------------------------------
# Fast paths: gathers of whole rows
# --------------------------------------------------------------------------

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


def _compressed_fast(x, spec: _Key):
    """CSR row / CSC column selection and slicing through ``indptr``; None if not applicable."""
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
        return _compressed_restrict(x, spec) if item_major.kind in ("int", "slice") else None
    k, xp = kernels_for(x.device), xp_for(x.device)
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


def _compressed_restrict(x, spec: _Key):
    """Cut a compressed array to the major range its integer/slice index needs, then index the rest."""
    major = x._major_axis
    item = next(it for it in spec.items if it.dim == major)
    xp = xp_for(x.device)
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
    fast = _compressed_fast(part, new_spec) if item.kind == "slice" else None
    return fast if fast is not None else _select(part, new_spec)


def _coo_row_select(x, spec: _Key):
    """``index_select`` along axis 0 of a sorted COO array: whole rows, output sorted."""
    items = spec.items
    if x.sparse_dim < 1 or spec.bshape is None or len(spec.bshape) != 1:
        return None
    first = items[0]
    if first.kind != "adv" or first.dim != 0:
        return None
    if any(it.dim is None or not _is_full(it, x.shape[it.dim]) for it in items[1:]):
        return None
    from gpusparse.containers import COO
    k, xp = kernels_for(x.device), xp_for(x.device)
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


# --------------------------------------------------------------------------
# Named selections
# --------------------------------------------------------------------------

def index_select(x, axis, index):
    """The slices ``index`` (a 1-D integer array) along ``axis`` (torch's ``index_select``).

    Same as ``x[(slice(None),) * axis + (index,)]``; CSR rows and CSC columns
    take a gather fast path and keep the format.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[1, 0], [0, 2], [3, 0]]), format="csr", device="cpu")
    >>> y = index_select(x, 0, [2, 0, 2])
    >>> y.format, y.todense().tolist()
    ('csr', [[3, 0], [1, 0], [3, 0]])
    """
    axis = check_axis(axis, x.ndim)
    index = _index_array(index, x.device)
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise IndexError(
            f"index must be a 1-D integer array, got a {index.ndim}-d array of {index.dtype.name}"
        )
    return getitem(x, (slice(None),) * axis + (index,))


def narrow(x, axis, start, length):
    """``length`` consecutive slices from ``start`` along ``axis`` (torch's ``narrow``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6).reshape(2, 3), device="cpu")
    >>> narrow(x, 1, -2, 2).todense()
    array([[1, 2],
           [4, 5]])
    """
    axis = check_axis(axis, x.ndim)
    n = x.shape[axis]
    start, length = operator.index(start), operator.index(length)
    if not -n <= start <= n:
        raise IndexError(f"start {start} is out of range for axis {axis} of size {n}")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise IndexError(
            f"start ({start}) + length ({length}) exceeds dimension size ({n}) of axis {axis}"
        )
    return getitem(x, (slice(None),) * axis + (slice(start, start + length),))


def take(x, indices, axis=None):
    """NumPy's ``take``: ``x[..., indices, ...]`` along ``axis``, of the flattened array if None.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0, 5], [7, 0]]), device="cpu")
    >>> take(x, [1, 2]).todense()
    array([5, 7])
    >>> take(x, [[1]], axis=1).todense()
    array([[[5]],
    <BLANKLINE>
           [[0]]])
    """
    if axis is None:
        from gpusparse.ops.manipulation import reshape
        return getitem(reshape(x, (-1,)), _take_index(indices, x.device))
    axis = check_axis(axis, x.ndim)
    return getitem(x, (slice(None),) * axis + (_take_index(indices, x.device),))


def _take_index(indices, dev):
    from gpusparse.containers import SparseArray
    if isinstance(indices, (int, np.integer)):
        return int(indices)
    if isinstance(indices, SparseArray):  # an index list is dense in nature: its elements, on its device
        indices = indices.todense()
    arr = _index_array(indices, dev)
    if arr.dtype.kind not in "iu":
        raise IndexError("indices must be integers")
    return arr


def nonzero(x):
    """Indices of the non-zero elements, one array per dimension, in row-major order.

    Needs a zero fill value (the result would be dense otherwise), as pydata
    sparse does. Explicitly stored zeros are not reported.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[1, 0, 1]], [2, 3, 0], shape=(3,), device="cpu")
    >>> nonzero(x)
    (array([0, 1]),)
    """
    fill = x.fill_value
    if fill != 0 or fill != fill:
        raise ValueError(f"nonzero needs a zero fill value, got {fill!r}")
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not defined (NumPy raises too); use argwhere")
    coo = canonical.coalesce(x if x.format == "coo" else convert.compressed_to_coo(x))
    xp = xp_for(x.device)
    with device_scope(x.device):
        hit = coo.data != 0
        where = xp.nonzero(hit)  # sync: number of non-zero elements
        entry = where[0]
        out = tuple(xp.take(row, entry) for row in coo.coords) + tuple(w.astype(np.int64) for w in where[1:])
    return tuple(xp.ascontiguousarray(a, dtype=np.int64) for a in out)


def argwhere(x):
    """Indices of the non-zero elements as an ``(N, ndim)`` array (NumPy's ``argwhere``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> argwhere(gs.fromdense(np.array([[0, 1], [2, 0]]), device="cpu"))
    array([[0, 1],
           [1, 0]])
    """
    xp = xp_for(x.device)
    if x.ndim == 0:
        value = to_host(x.to_dense()).item()  # sync: one element
        with device_scope(x.device):
            return xp.zeros((int(value != 0), 0), dtype=np.int64)
    parts = nonzero(x)
    with device_scope(x.device):
        return xp.ascontiguousarray(xp.stack(parts, axis=1))
