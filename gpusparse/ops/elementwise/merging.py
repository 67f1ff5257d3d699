"""Merge plans of several sparse operands: the union or the intersection of their entries.

Coordinates are linearised to keys and merged on the device (primitive
``merge_sorted``; ``merge_rows`` for two CSR/CSC operands). Where the
function maps each operand's entries to the result's fill value wherever
the other is unstored -- a product with fill 0 and no infinities or NaN --
only the intersection is computed, otherwise the union.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._device import to_host
from gpusparse._dtypes import index_dtype_for
from gpusparse.ops import canonical
from gpusparse.ops._fill import fill_mask
from gpusparse.ops._merge_plan import (compressed_in_order, fused_row_merge, keys_of, keys_of_compressed,
                                       permuted, spread, union_by_sort, unravel)
from gpusparse.ops.elementwise.assembly import prune_on
from gpusparse.ops.elementwise.evaluation import evaluate, prepare_values

__all__ = ["compressed_merge", "merge_plan", "read_plan", "rows_mergeable"]


_ANNIHILATED_BY_ZERO = ("multiply", "logical_and", "bitwise_and")
#: Binary ufuncs that keep an operand's entry where the other is unstored
#: (``x + 0`` is ``x``): their entries vanish there only when they are the
#: fill value, so the union is taken without testing.
_KEEPS_EACH_OPERAND = ("add", "subtract", "logical_or", "logical_xor", "bitwise_or", "bitwise_xor")


def _intersection_test(dfunc, operands, datas, coords, shape, prefix, kwargs, fills, xp, keep_fill_entries):
    """Whether the intersection of two sparse operands' entries suffices (see :func:`_vanishes`).

    Returns a bool, or a 0-d device bool for the caller to read together
    with the size of its merge plan (one sync for both). With fill entries
    dropped the union always gives the same result (entries that vanish are
    dropped), so for the functions of ``_KEEPS_EACH_OPERAND`` -- whose
    entries rarely vanish -- nothing is tested.
    """
    name = getattr(dfunc, "__name__", "")
    if not keep_fill_entries and not kwargs and len(operands) == 2 and name in _KEEPS_EACH_OPERAND:
        return False
    pending = None
    for i, data in enumerate(datas):
        v = _vanishes(dfunc, operands, i, data, coords[i], shape, prefix, kwargs, fills, xp, lazy=True)
        if v is False:
            return False
        if v is not True:
            pending = v if pending is None else pending & v
    return True if pending is None else pending


def _vanishes(dfunc, operands, which, data, coords, shape, prefix, kwargs, fills, xp, lazy=False):
    """Whether the entries of sparse operand ``which`` alone all map to the result's fill values.

    ``coords`` (the operand's coordinates in natural order) is a callable,
    called only when dense operands need gathering. ``lazy``: where the
    answer is one device reduction (a product with fill 0), return it as a
    0-d device bool instead of reading it.
    """
    n = data.shape[0]
    if n == 0:
        return True
    sparse = [o for o in operands if o.kind == "sparse"]
    name = getattr(dfunc, "__name__", "")
    if name in _ANNIHILATED_BY_ZERO and len(operands) == 2 and len(sparse) == 2 and not kwargs \
            and fills[0] == 0 and sparse[1 - which].value.fill_value == 0:
        # x * 0 is 0 unless x is infinite or NaN (and x & 0, x and 0, are 0 always).
        if data.dtype.kind not in "fc" or name != "multiply":
            return True
        # A finite sum means finite entries (an inf or NaN entry makes it inf
        # or NaN); a sum that overflows only sends us to the union: one
        # reduction instead of a mask (4M entries: 3 -> 1 ms).
        with np.errstate(all="ignore"):
            total = data.sum()
        finite = xp.isfinite(total)
        return finite if lazy else bool(to_host(finite))  # sync: does the intersection suffice?
    coords = coords() if any(o.kind == "dense" for o in operands) else None
    for stop in (min(n, 32), n):
        values = [data[:stop] if i == which else op.value.fill_value
                  for i, op in enumerate(o for o in operands if o.kind == "sparse")]
        with np.errstate(all="ignore"):
            results = evaluate(dfunc, operands, values, None if coords is None else coords[:, :stop], shape,
                               prefix, kwargs, xp)
        ok = xp.stack([fill_mask(xp.asarray(r), f, xp).all() for r, f in zip(results, fills)]).all()
        if not bool(to_host(ok)):  # sync: does the intersection suffice?
            return False
        if stop == n:
            return True
    return True


def merge_plan(part, dfunc, operands, kwargs, fills, shape, prefix, order, k, xp, keep_fill_entries=False,
               defer=False, force_union=False):
    """Coordinates (permuted order) and per-operand index maps of the result's candidate positions.

    Returns ``(values_of, coords, maps, present, deferred)``: ``values_of[i]``
    has the coalesced ``data`` and ``fill_value`` of operand i, ``maps[i]``
    indexes them for every output position (-1: not stored there).

    ``force_union``: the union without testing whether the intersection
    suffices. ``defer`` (two operands): the plan's size is not read. ``deferred`` is
    then ``(count, pending, perm_shape)`` -- the size as a 0-d device array,
    the device test of :func:`_intersection_test` or None -- ``coords`` are
    the merged linear keys and the maps have room for more positions than
    ``count`` (the rest undefined): the caller reads the size together with
    what it computes on the plan (:func:`read_plan`). Otherwise
    ``deferred`` is None.
    """
    perm_shape = tuple(shape[a] for a in order)
    sparse = [op for op in operands if op.kind == "sparse"]
    keyed = [keys_of_compressed(op.value, order, k, xp) if compressed_in_order(op.value, shape, order) else
             keys_of(part(op), order, k, xp) for op in sparse]
    if any(y is None for y in keyed):
        coalesced = [canonical.coalesce(permuted(part(op), order, xp)) for op in sparse]
        coords, maps = union_by_sort(coalesced, perm_shape, k, xp)
        return coalesced, coords, maps, [False] * len(sparse), None
    how, pending = "union", None
    if len(sparse) == 2 and not force_union:
        inv = list(np.argsort(order))
        test = _intersection_test(dfunc, operands, [y.data for y in keyed],
                                  [lambda y=y: xp.ascontiguousarray(y.coords()[inv]) for y in keyed],
                                  shape, prefix, kwargs, fills, xp, keep_fill_entries)
        if isinstance(test, bool):
            how = "intersection" if test else "union"
        else:  # decided on the device: merge for the intersection, read the test with its size
            how, pending = "intersection", test
    out_keys, maps = keyed[0].keys, None
    if defer and len(sparse) == 2:
        merged, left, right, count = k.merge_sorted(out_keys, keyed[1].keys, how)
        return keyed, merged, [left, right], [how == "intersection"] * 2, (count, pending, perm_shape)
    for y in keyed[1:]:
        merged, left, right, count = k.merge_sorted(out_keys, y.keys, how)
        if pending is None:
            n_out = int(to_host(count))  # sync: size of the merged plan
        else:
            # sync: size of the intersection and whether it suffices, read together
            n_out, suffices = (int(v) for v in to_host(xp.stack([count, pending])))
            pending = None
            if not suffices:
                how = "union"
                merged, left, right, count = k.merge_sorted(out_keys, y.keys, how)
                n_out = int(to_host(count))  # sync: size of the merged plan
        merged, left, right = merged[:n_out], left[:n_out], right[:n_out]
        if maps is None:
            maps = [left, right]
        else:
            maps = [spread(m, left, -1, k, how == "intersection") for m in maps] + [right]
        out_keys = merged
    if maps is None:
        maps = [xp.arange(out_keys.shape[0], dtype=np.int64)]
    coords = unravel(out_keys, perm_shape, k, xp)
    present = [how == "intersection"] * len(sparse)
    return keyed, coords, maps, present, None


def read_plan(deferred, keys, values, fill, k, xp):
    """The coordinates and values a deferred merge plan (see :func:`merge_plan`) keeps, or None.

    ``values`` were computed over the whole room of the plan. One sync reads
    its size, how many of its values differ from ``fill`` and, with a
    pending test, whether the intersection sufficed (None when it did not:
    the caller plans the union). Entries equal to ``fill`` are dropped
    here (a second sync, only when there are some).
    """
    count, pending, perm_shape = deferred
    keep = ~fill_mask(values, fill, xp) & (xp.arange(values.shape[0]) < count)
    parts = [count, keep.sum()] + ([] if pending is None else [pending])
    report = [int(v) for v in to_host(xp.stack(parts))]  # sync: size of the plan, entries kept, test
    if pending is not None and not report[2]:
        return None
    n, n_keep = report[0], report[1]
    if n_keep == n:
        return unravel(keys[:n], perm_shape, k, xp), values[:n]
    index = xp.nonzero(keep)[0]  # sync: the entries kept
    return unravel(xp.take(keys, index), perm_shape, k, xp), xp.take(values, index, axis=0)


def rows_mergeable(sparse, operands, shape, order) -> bool:
    """Two CSR (CSC) operands of the result's shape, nothing dense: a row-by-row merge (``merge_rows``)."""
    return (len(sparse) == 2 and all(op.kind != "dense" for op in operands)
            and all(compressed_in_order(op.value, shape, order) for op in sparse)
            and math.prod(shape[:2]) < 2**63)


def compressed_merge(dfunc, operands, kwargs, shape, fills, dtypes, be, keep_fill_entries):
    """Two canonical CSR (CSC) operands merged row by row into CSR (CSC) results, on backend ``be``."""
    k, xp = be.kernels, be.xp
    a, b = (op.value for op in operands if op.kind == "sparse")
    test = _intersection_test(dfunc, operands, [a.data, b.data], [None, None], shape, 2, kwargs, fills, xp,
                              keep_fill_entries)
    vanish = test if isinstance(test, bool) else bool(to_host(test))  # sync: does the intersection suffice?
    how = "intersection" if vanish else "union"
    fused = fused_row_merge(dfunc, operands, kwargs, fills, dtypes, how, be=be)  # CPU sum/product: one pass
    if fused is not None:
        indptr, indices, results = fused[0], fused[1], (fused[2],)
    else:
        indptr, indices, left, right = k.merge_rows(a.indptr, a.indices, b.indptr, b.indices,
                                                    shape[1 - a._major_axis], how)
        values = [spread(y.data, m, y.fill_value, k, vanish) for y, m in ((a, left), (b, right))]
        scratch = values[0] if values[0].dtype == dtypes[0] else None  # ours: may be overwritten
        results = evaluate(dfunc, operands, values, None, shape, 2, kwargs, xp, out=scratch)
    n = int(indices.shape[0])
    index_dtype = np.promote_types(indices.dtype, index_dtype_for(n))  # the inputs' where it holds n
    indptr, indices = indptr.astype(index_dtype, copy=False), indices.astype(index_dtype, copy=False)
    out = []
    for v, fill, dt in zip(results, fills, dtypes):
        v = prepare_values(v, dt, n, tuple(shape[2:]), xp)
        y = type(a)._from_parts(indptr, indices, v, shape, np.asarray(fill).astype(dt)[()], be.device)
        out.append(y if keep_fill_entries else prune_on(y, be))
    return tuple(out)
