"""Key normalisation: a NumPy index turned into one item per input dimension.

``...`` is expanded, boolean masks become integer arrays (``nonzero``), the
advanced indices (arrays, and integers when an array is present) are
broadcast together, negatives are wrapped and bounds checked (one
synchronisation for all arrays). Bad keys raise NumPy's ``IndexError``.
"""

from __future__ import annotations

import dataclasses
import operator

import numpy as np

from gpusparse._components import to_array
from gpusparse._device import (
    Device, array_device, is_cupy_array, to_device_array, to_host,
)


_INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


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


def _normalise(x, raw, be) -> _Key:
    """Items per input dimension, advanced indices broadcast, bounds checked, on backend ``be``."""
    xp = be.xp
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
            with be.scope():
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
    _check_array_bounds(x, arrays, be)
    with be.scope():
        for item, arr in arrays:
            flat = xp.broadcast_to(arr.astype(np.int64, copy=False), bshape).reshape(-1)
            n = x.shape[item.dim]
            item.payload = xp.ascontiguousarray(xp.where(flat < 0, flat + n, flat))
    positions = sorted({item.pos for item, _ in arrays})
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    return _Key(items, tuple(bshape), not adjacent, ellipsis)


def _check_array_bounds(x, arrays, be):
    """IndexError for the first index out of its axis; one synchronisation for all arrays (on backend ``be``)."""
    xp = be.xp
    checked = [(item, arr) for item, arr in arrays if arr.size and arr.ndim]
    if not checked:
        return
    with be.scope():
        ends = xp.stack([xp.stack([a.min(), a.max()]).astype(np.int64) for _, a in checked])
    ends = to_host(ends)  # sync: bounds of every index array
    for (item, _), (lo, hi) in zip(checked, ends):
        n = x.shape[item.dim]
        bad = lo if lo < -n else hi if hi >= n else None
        if bad is not None:
            raise IndexError(f"index {int(bad)} is out of bounds for axis {item.dim} with size {n}")
