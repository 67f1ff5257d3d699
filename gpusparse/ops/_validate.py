"""Validation of user input: every error names the argument at fault."""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._components import place_components
from gpusparse._device import to_host, xp_for
from gpusparse._dtypes import check_value_dtype, index_dtype_for, normalize_fill_value

__all__ = [
    "check_array", "check_axis", "check_coords", "check_shape", "check_structure",
    "as_index_dtype", "compressed_components", "coo_components",
]

_INT64_MAX = 2**63 - 1  # the largest dimension int64 coordinates (and shapes handed to kernels) allow


def check_shape(shape, argument: str = "shape") -> tuple:
    """``shape`` as a tuple of non-negative Python ints, or ``TypeError``/``ValueError``.

    Every dimension must fit in int64, the dtype of coordinates: one of
    2**63 or more raises ``ValueError``. The number of elements may exceed
    2**63 (linear keys are then built over groups of dimensions).

    >>> check_shape((2**62, 2**62))
    (4611686018427387904, 4611686018427387904)
    """
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{argument} must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{argument} must not have negative dimensions, got {dims}")
    too_long = [k for k, d in enumerate(dims) if d > _INT64_MAX]
    if too_long:
        k = too_long[0]
        raise ValueError(
            f"{argument} {dims} has dimension {k} of length {dims[k]}, beyond the int64 limit of "
            f"coordinates: every dimension must be at most 2**63 - 1"
        )
    return dims


def check_axis(axis, ndim: int, argument: str = "axis") -> int:
    """``axis`` as an int in ``[0, ndim)`` (negative counts from the end), or ``TypeError``/``AxisError``.

    >>> check_axis(-1, 3)
    2
    """
    from numpy.exceptions import AxisError
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{argument} must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim, msg_prefix=argument)
    return axis % ndim


def _integer_index_array(arr, argument: str, xp):
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{argument} must have an integer dtype, got {arr.dtype.name}")
    return arr


def as_index_dtype(arr, dtype, xp):
    """``arr`` as a C-contiguous array of the signed index ``dtype``, never wrapping a value.

    A value the target cannot hold (an unsigned one of 2**63 or more for
    int64, one beyond the int32 range for int32) is *saturated* to the
    nearest end of the target's range, not wrapped modulo 2**bits: it stays
    out of bounds for every shape the dtype can index, so an unchecked array
    (``check=False``) acts as if it were clipped into the shape, as the
    bounds-safe kernels document, instead of naming some valid-looking
    index (``2**64 - 1`` wrapping to -1, ``2**32 + 5`` to 5). A cast that
    cannot lose a value (widening, or the same dtype) is a plain cast; a
    narrowing one costs one clip, fused with the copy the cast makes.
    Validated input is inside the target's range already, so the clip
    changes nothing there.
    """
    dtype = np.dtype(dtype)
    src = arr.dtype
    if src == dtype or np.can_cast(src, dtype, casting="safe"):
        return xp.ascontiguousarray(arr, dtype=dtype)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    lo, hi = max(lo, int(np.iinfo(src).min)), min(hi, int(np.iinfo(src).max))
    clipped = xp.clip(arr, src.type(lo), src.type(hi))
    return xp.ascontiguousarray(clipped, dtype=dtype)


def _value_array(data, xp):
    check_value_dtype(data.dtype, "data")
    return xp.ascontiguousarray(data)


def _extremes(arr, xp):
    """(min, max) of each row of a 2-D integer array, read back in one transfer."""
    both = xp.stack([arr.min(axis=1), arr.max(axis=1)])
    return to_host(both)  # sync: bounds check


def coo_components(coords, data, shape, fill_value, device, check, *, be=None):
    """Validate COO input; returns ``(coords, data, shape, fill_value, device)``.

    ``be`` is the backend of ``device``, when an operation that has resolved
    it already builds the components; a constructor's ``device`` (a string,
    a Device or None) is resolved here.
    """
    arrays, dev = place_components({"coords": coords, "data": data}, device if be is None else be.device)
    coords, data = arrays["coords"], arrays["data"]
    xp = be.xp if be is not None else xp_for(dev)
    if coords.ndim == 1:
        coords = coords.reshape(1, -1)
    if coords.ndim != 2:
        raise ValueError(f"coords must have shape (sparse_dim, nnz), got {coords.ndim}-d input of shape {coords.shape}")
    _integer_index_array(coords, "coords", xp)
    nnz = coords.shape[1]
    if data.ndim == 0:
        data = xp.broadcast_to(data, (nnz,))
    if data.shape[0] != nnz:
        raise ValueError(
            f"coords and data disagree on the number of entries: coords has {nnz} "
            f"(shape {coords.shape}), data has {data.shape[0]} (shape {data.shape})"
        )
    data = _value_array(data, xp)
    sparse_dim, dense_shape = coords.shape[0], tuple(data.shape[1:])
    if coords.shape[0] == 0 and nnz > 1:
        raise ValueError("coords with 0 sparse dimensions can hold at most one entry")
    if shape is not None:
        shape = check_shape(shape)
        if len(shape) != sparse_dim + len(dense_shape):
            raise ValueError(
                f"shape {shape} has {len(shape)} dimensions but coords has {sparse_dim} sparse "
                f"and data {len(dense_shape)} dense ones"
            )
        if shape[sparse_dim:] != dense_shape:
            raise ValueError(
                f"shape {shape} ends in {shape[sparse_dim:]} but data's dense dimensions are {dense_shape}"
            )
    if shape is None:  # the smallest shape holding every coordinate: in bounds by construction
        hi = _coords_extremes(coords, xp)[1]
        shape = check_shape(tuple(int(h) + 1 for h in hi) + dense_shape, "the shape coords imply")
    elif check:
        check_coords(coords, shape, xp)
    # After the checks, which read the values in their own dtype: a uint64
    # coordinate of 2**63 or more must be refused, not wrapped to a negative one.
    coords = as_index_dtype(coords, np.int64, xp)
    fill = normalize_fill_value(fill_value, data.dtype)
    return coords, data, shape, fill, dev


def _coords_extremes(coords, xp):
    """(lo, hi) per sparse dimension as lists of Python ints (0 and -1 without entries).

    Read in the dtype of ``coords`` (one transfer), so every value is exact
    whatever the integer dtype (uint64 included). Raises on negatives.
    """
    sparse_dim, nnz = coords.shape
    if not nnz:
        return [0] * sparse_dim, [-1] * sparse_dim
    lo, hi = (list(map(int, row)) for row in _extremes(coords, xp))
    negative = [k for k in range(sparse_dim) if lo[k] < 0]
    if negative:
        dim = negative[0]
        raise ValueError(f"coords must be non-negative; dimension {dim} has {lo[dim]}")
    return lo, hi


def check_coords(coords, shape, xp) -> None:
    """Raise ``ValueError`` unless every coordinate lies inside ``shape`` (one pass, one transfer)."""
    hi = _coords_extremes(coords, xp)[1]
    too_small = [k for k in range(coords.shape[0]) if hi[k] >= shape[k]]
    if too_small:
        k = too_small[0]
        raise ValueError(
            f"coords out of bounds for shape {shape}: dimension {k} has coordinate "
            f"{hi[k]} >= {shape[k]}"
        )


def compressed_components(indptr, indices, data, shape, fill_value, device, check, major_axis):
    """Validate CSR/CSC input; returns ``(indptr, indices, data, shape, fill_value, device)``."""
    arrays, dev = place_components({"indptr": indptr, "indices": indices, "data": data}, device)
    indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
    xp = xp_for(dev)
    if indptr.ndim != 1:
        raise ValueError(f"indptr must be 1-d, got shape {indptr.shape}")
    if indices.ndim != 1:
        raise ValueError(f"indices must be 1-d, got shape {indices.shape}")
    _integer_index_array(indptr, "indptr", xp)
    _integer_index_array(indices, "indices", xp)
    if shape is None:
        shape = check_shape(_implied_compressed_shape(indptr, indices, data, major_axis), "the shape indices imply")
    else:
        shape = check_shape(shape)
    nnz = indices.shape[0]
    if data.ndim == 0:
        data = xp.broadcast_to(data, (nnz,))
    if data.shape[0] != nnz:
        raise ValueError(f"indices has {nnz} entries but data has {data.shape[0]}")
    data = _value_array(data, xp)
    if len(shape) < 2 or tuple(shape[2:]) != tuple(data.shape[1:]):
        raise ValueError(
            f"shape must be (n_rows, n_cols, *dense_shape) with dense_shape {tuple(data.shape[1:])} "
            f"from data; got {shape}"
        )
    n_major, n_minor = shape[major_axis], shape[1 - major_axis]
    if indptr.shape[0] != n_major + 1:
        axis_name = "rows" if major_axis == 0 else "columns"
        raise ValueError(
            f"indptr must have {n_major + 1} entries (number of {axis_name} + 1), got {indptr.shape[0]}"
        )
    wanted = index_dtype_for(n_major, n_minor, nnz)
    index_dtype = indices.dtype if indices.dtype in (np.int32, np.int64) else wanted
    if np.iinfo(index_dtype).max < max(n_major, n_minor, nnz):
        index_dtype = np.dtype(np.int64)
    if check:  # on the values as given: a cast first could wrap an invalid index into a valid one
        check_structure(indptr, indices, n_minor, xp)
    indptr = as_index_dtype(indptr, index_dtype, xp)
    indices = as_index_dtype(indices, index_dtype, xp)
    fill = normalize_fill_value(fill_value, data.dtype)
    return indptr, indices, data, shape, fill, dev


def _implied_compressed_shape(indptr, indices, data, major_axis) -> tuple:
    """torch's shape for omitted ``shape``: ``len(indptr) - 1`` majors, one minor past the largest index."""
    if indptr.shape[0] == 0:
        raise ValueError("indptr must have at least one entry (number of rows or columns + 1), got 0")
    n_minor = max(int(to_host(indices.max())) + 1, 0) if indices.shape[0] else 0  # sync: the implied shape
    dims = (indptr.shape[0] - 1, n_minor)
    return (dims if major_axis == 0 else dims[::-1]) + tuple(data.shape[1:])


def _saturated_int64(values, xp):
    """Integer ``values`` as int64, a uint64 of 2**63 or more as 2**63 - 1 (still out of every range)."""
    if values.dtype == np.uint64:
        values = xp.minimum(values, np.uint64(_INT64_MAX))
    return values.astype(np.int64)


def _shown(value: int, dtype) -> str:
    """``value`` for a message; a saturated uint64 shows as what it is, a lower bound."""
    if value == _INT64_MAX and np.dtype(dtype) == np.uint64:
        return f"a value >= {_INT64_MAX}"
    return str(value)


def check_structure(indptr, indices, n_minor, xp) -> None:
    """Raise ``ValueError`` unless ``indptr`` runs non-decreasing from 0 to nnz and ``indices`` lie in ``[0, n_minor)``.

    The values are compared in the dtype they are given in (uint64
    included), before any cast to the index dtype of the array: one pass
    and one transfer.
    """
    nnz = indices.shape[0]
    first_last = _saturated_int64(xp.stack([indptr[0], indptr[-1]]), xp)
    steps_ok = xp.all(indptr[1:] >= indptr[:-1]) if indptr.shape[0] > 1 else xp.asarray(True)
    bounds = (_saturated_int64(xp.stack([indices.min(), indices.max()]), xp)
              if nnz else xp.asarray([0, -1], dtype=np.int64))
    report = xp.concatenate([first_last, bounds, steps_ok.astype(np.int64).reshape(1)])
    first, last, lo, hi, monotone = (int(v) for v in to_host(report))  # sync: validation
    if first != 0 or last != nnz:
        raise ValueError(f"indptr must start at 0 and end at nnz={nnz}; got "
                         f"{_shown(first, indptr.dtype)} ... {_shown(last, indptr.dtype)}")
    if not monotone:
        raise ValueError("indptr must be non-decreasing")
    if nnz and (lo < 0 or hi >= n_minor):
        bad = lo if lo < 0 else hi
        raise ValueError(f"indices out of range [0, {n_minor}): found {_shown(bad, indices.dtype)}")


def check_array(x) -> None:
    """Validate ``x``'s components as the constructors do, and the order its flags claim.

    The implementation of :meth:`gpusparse.SparseArray.check`: raises
    ``ValueError`` naming the first problem found.
    """
    from gpusparse._backend import backend
    from gpusparse.ops import canonical
    be = backend(x.device)
    xp, k = be.xp, be.kernels
    with be.scope():
        if x.format == "coo":
            check_coords(x._coords, x.shape, xp)
            claims = 2 if x.is_coalesced() else 1 if x.sorted else 0
            if claims and x.nnz > 1:
                _, _, state = canonical.sorted_keys(x._coords, x.shape[: x.sparse_dim], k, xp)
                if state < claims:
                    what = "sorted and unique (coalesced)" if claims == 2 else "sorted"
                    raise ValueError(f"x is flagged {what}, but its coordinates are not")
            return
        check_structure(x._indptr, x._indices, x.shape[1 - x._major_axis], xp)
        if not canonical.is_compressed_canonical(x, be=be):
            axis = "row" if x._major_axis == 0 else "column"
            raise ValueError(
                f"indices must be sorted and unique within each {axis} (canonical {x.format.upper()})"
            )
