"""Merge plans: sparse operands as sorted unique linear keys, and where each one's entries go.

A binary (or N-ary) elementwise operation on sparse operands runs on the
merge of their keys (primitive ``merge_sorted``): these helpers produce the
keys -- coalescing an operand without ever building its coalesced
coordinates, or reading a CSR/CSC operand's keys off its index arrays --
spread each operand's values over the merged positions, and turn merged
keys back into coordinates.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical

__all__ = ["Keyed", "compressed_in_order", "fused_row_merge", "keys_of", "keys_of_compressed", "permuted",
           "spread", "union_by_sort", "unravel"]


class Keyed:
    """A sparse operand as sorted unique linear keys and the values that go with them."""

    __slots__ = ("keys", "data", "fill_value", "coords")

    def __init__(self, keys, data, fill_value, coords):
        self.keys, self.data, self.fill_value, self.coords = keys, data, fill_value, coords


def keys_of(x, order, k, xp):
    """COO ``x`` as sorted unique linear keys of its coordinates in axis order ``order``.

    Duplicates are summed (``x`` is coalesced without ever building the
    coalesced coordinates: only the keys are needed). Returns a
    :class:`Keyed` whose ``coords()`` gives the permuted coordinates, or
    None when the permuted shape has 2**63 elements or more.
    """
    sparse_shape = x.shape[: x.sparse_dim]
    perm_shape = tuple(sparse_shape[a] for a in order)
    if math.prod(perm_shape) >= 2**63:
        return None
    identity = list(order) == list(range(len(order)))
    coords = x.coords if identity else xp.ascontiguousarray(x.coords[list(order)])
    n = x.nnz
    if n <= 1 or identity and x.is_coalesced():  # sorted and unique: the keys are too
        keys = k.linearize(coords, perm_shape)
        return Keyed(keys, x.data, x.fill_value, lambda: coords)
    keys, moved, state = canonical.sorted_keys(coords, perm_shape, k, xp, lambda: canonical.value_payload(x.data))
    if state == 2:  # strictly increasing already
        return Keyed(keys, x.data, x.fill_value, lambda: coords)
    if moved is None:  # sorted, with repeats
        values, perm = x.data, None
    elif canonical.has_payload(x.data):
        values, perm = canonical.payload_values(moved, x.data), None
    else:
        values, perm = x.data, moved
    starts = k.run_starts(keys)  # sync: the number of distinct coordinates
    if starts.shape[0] - 1 == n:  # no duplicates
        data = values if perm is None else xp.take(values, perm, axis=0)
        return Keyed(keys, data, x.fill_value, lambda: k.delinearize(keys, perm_shape))
    unique_keys = xp.take(keys, starts[:-1])
    data = canonical.sum_segments(values, starts, perm, k)
    return Keyed(unique_keys, data, x.fill_value, lambda: k.delinearize(unique_keys, perm_shape))


def compressed_in_order(x, shape, order) -> bool:
    """A CSR (CSC) operand, not broadcast, merged in row-major (column-major) order."""
    return x.format != "coo" and x.shape == tuple(shape) and tuple(order) == ((0, 1) if x.format == "csr" else (1, 0))


def keys_of_compressed(x, order, k, xp):
    """The keys of a CSR/CSC array straight from its index arrays (canonical: sorted, unique)."""
    return Keyed(canonical.compressed_keys(x, k), x.data, x.fill_value,
                  lambda: xp.stack([k.expand(x.indptr, x.nnz), x.indices.astype(np.int64)]))


def spread(data, index, fill, k, all_present=False):
    """``data[index]`` with ``fill`` where ``index`` is -1 (one gather primitive).

    ``all_present``: ``index`` has no -1 (an intersection plan).
    """
    return canonical.take_rows(data, index, k, None if all_present else fill)


def fused_row_merge(dfunc, operands, kwargs, fills, dtypes, how, *, be=None):
    """``(indptr, indices, values)`` of ``a + b`` or ``a * b`` for two canonical CSR (CSC) operands, or None.

    Where the device's primitives have the optional ``merge_rows_values``
    (the CPU's), a sum (``how="union"``) or a product (``how="intersection"``)
    of two operands with fill value 0, 1-D values of the result's dtype and
    no other argument is merged and computed in one pass; anything else
    returns None and takes the general path (merge plan, gathers, ``dfunc``).
    ``be`` is the backend of the operands' device, when the caller has it already.
    """
    if len(operands) != 2 or kwargs or len(dtypes) != 1 or fills[0] != 0:
        return None
    op = {np.add: "add", np.multiply: "multiply"}.get(dfunc) if isinstance(dfunc, np.ufunc) else None
    if op is None or how != ("union" if op == "add" else "intersection"):
        return None
    a, b = (o.value for o in operands)
    fused = getattr((be or backend(a.device)).kernels, "merge_rows_values", None)  # an optional primitive
    dt = np.dtype(dtypes[0])
    if fused is None or dt.kind not in "iufc" or not all(
            y.data.ndim == 1 and y.data.dtype == dt and y.fill_value == 0 for y in (a, b)):
        return None
    return fused(a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, op)


def union_by_sort(parts, shape_perm, k, xp):
    """Union of coalesced COO ``parts`` whose keys do not fit in int64: sort the concatenation.

    Returns ``(coords, [index into part i or -1, ...])``.
    """
    coords = xp.concatenate([p.coords for p in parts], axis=1)
    sizes = [p.nnz for p in parts]
    keys, perm, _ = canonical.sorted_keys(coords, shape_perm, k, xp)
    total = sum(sizes)
    perm = xp.arange(total, dtype=np.int64) if perm is None else perm
    ids = k.segment_ids(keys)
    n_out = int(to_host(ids[-1:])[0]) + 1  # sync: size of the union
    starts = k.segment_starts(ids, n_out)
    out_coords = k.take_columns(coords, xp.take(perm, starts[:-1]))
    maps, offset = [], 0
    for size in sizes:
        index = xp.full(n_out, -1, dtype=np.int64)
        source = perm - offset
        mine = (source >= 0) & (source < size)
        index[ids[mine]] = source[mine]
        maps.append(index)
        offset += size
    return out_coords, maps


def permuted(x, order, xp):
    """COO ``x`` with its sparse axes in ``order`` (flags honest: unsorted unless identity)."""
    from gpusparse.containers import COO
    if list(order) == list(range(len(order))):
        return x
    coords = xp.ascontiguousarray(x.coords[list(order)])
    shape = tuple(x.shape[a] for a in order) + x.shape[x.sparse_dim:]
    return COO._from_parts(coords, x.data, shape, x.fill_value, x.device, sorted=False, unique=x.unique)


def unravel(keys, shape, k, xp):
    """Coordinates ``(len(shape), n)`` of linear keys (``delinearize``; 1-D: a view)."""
    if len(shape) == 1:
        return keys.reshape(1, -1)
    return k.delinearize(keys, shape)
