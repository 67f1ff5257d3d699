"""Joining arrays: ``concatenate`` (TF's ``sparse.concat`` too), ``stack``, ``vstack``, ``hstack``, ``dstack``.

Inputs are cast to their common dtype and must share the fill value. When
every input is sorted the result is sorted too (TF's promise): along the
first axis the entries are appended, along a later sparse axis the sorted
runs of each input are interleaved without a sort; CSR along rows and
columns (CSC likewise) is joined without going through COO.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend_of
from gpusparse.ops import canonical
from gpusparse.ops._validate import check_axis
from gpusparse.ops.shape._common import (
    _for_padding, _keep_format, _new_coo, _reduce_to_one, _same_fill, sparsify,
)
from gpusparse.ops.shape.reshaping import expand_dims_on, reshape_on

__all__ = ["concatenate", "concatenate_on", "dstack", "hstack", "stack", "vstack"]


def concatenate(arrays, axis=0, *, expand_nonconcat_dim=False):
    """Join arrays along an existing axis (NumPy's ``concatenate``, TF's ``sparse.concat``).

    Parameters
    ----------
    arrays : sequence of sparse arrays
        Same number of dimensions, same fill value (after casting to the
        common dtype), and the same shape except along ``axis``.
    axis : int
    expand_nonconcat_dim : bool
        TF's option: the other dimensions may differ and the result takes the
        largest of each.

    Notes
    -----
    When every input is sorted the result is sorted too (TF's promise); CSR
    along rows and columns (CSC likewise) is joined without a sort.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[0, 1], [2, 0]]), device="cpu")
    >>> b = gs.fromdense(np.array([[3], [0]]), device="cpu")
    >>> concatenate([a, b], axis=1).todense()
    array([[0, 1, 3],
           [2, 0, 0]])
    """
    return concatenate_on(arrays, axis, None, expand_nonconcat_dim=expand_nonconcat_dim)


def concatenate_on(arrays, axis, be, *, expand_nonconcat_dim=False):
    """:func:`concatenate` on the backend ``be`` of the arrays' device (resolved here when None)."""
    from gpusparse.containers import SparseArray
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    for i, a in enumerate(arrays):
        if not isinstance(a, SparseArray):
            raise TypeError(f"arrays[{i}] is a {type(a).__name__}, not a gpusparse array")
    be = be or backend_of(*arrays, what=tuple(f"arrays[{i}]" for i in range(len(arrays))))
    ndim = arrays[0].ndim
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at index 0 "
                f"has {ndim} dimension(s) and the array at index {i} has {a.ndim} dimension(s)"
            )
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = check_axis(axis, ndim)
    dtype = np.result_type(*(a.dtype for a in arrays))
    fills = [np.asarray(a.fill_value).astype(dtype)[()] for a in arrays]
    for i, f in enumerate(fills):
        if not _same_fill(f, fills[0]):
            raise ValueError(
                f"concatenate needs equal fill values: arrays[0] has {fills[0]!r} and arrays[{i}] has {f!r}"
            )
    fill = fills[0]
    out_shape = list(arrays[0].shape)
    for i, a in enumerate(arrays):
        for d in range(ndim):
            if d == axis or a.shape[d] == out_shape[d]:
                continue
            if not expand_nonconcat_dim:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match "
                    f"exactly, but along dimension {d}, the array at index 0 has size "
                    f"{arrays[0].shape[d]} and the array at index {i} has size {a.shape[d]}"
                )
            out_shape[d] = max(out_shape[d], a.shape[d])
    out_shape[axis] = sum(a.shape[axis] for a in arrays)
    out_shape = tuple(out_shape)
    arrays = [a.astype(dtype, copy=False) for a in arrays]
    formats = {a.format for a in arrays}
    if (len(formats) == 1 and arrays[0].format != "coo" and axis < 2
            and all(a.shape[2:] == out_shape[2:] for a in arrays)):
        return _concat_compressed(arrays, axis, out_shape, fill, be)
    S = max(a.sparse_dim for a in arrays)
    zero_fill = fill == 0 and fill == fill
    if axis >= S and not zero_fill:
        S = axis + 1
    coos = canonical.flag_sorted([sparsify(a, S, be=be) for a in arrays], be=be)  # TF's row-major output from sorted inputs
    coos = [_for_padding(a, be) if a.shape[S:] != out_shape[S:] and axis < S else a for a in coos]
    xp = be.xp
    all_sorted = all(a.sorted for a in coos)
    all_unique = all(a.unique for a in coos)
    with be.scope():
        datas, offsets, offset = [], [], 0
        for a in coos:
            datas.append(_pad_block(a, out_shape, S, axis if axis >= S else None, offset, fill, xp))
            offsets.append(offset)
            offset += a.shape[axis]
        out = None
        if all_sorted and 0 < axis < S:
            out = _interleave_sorted([a.coords for a in coos], offsets, datas, out_shape, axis, fill, be,
                                     all_unique)
        if out is None:
            k = be.kernels
            coords = _joined_coords(coos, offsets, axis if axis < S else None, k)
            data = xp.concatenate(datas, axis=0, out=k.empty((coords.shape[1],) + datas[0].shape[1:],
                                                             datas[0].dtype))
    if out is None:
        if S == 0:  # one block at most: the padded blocks add up
            data = _reduce_to_one(_new_coo(coords, data, out_shape, fill, be, sorted=False, unique=False), be)
            coords = coords[:, : data.shape[0]]
            all_sorted = all_unique = True
        out = _new_coo(coords, data, out_shape, fill, be,
                       sorted=all_sorted and axis == 0 and S > 0, unique=all_unique and axis < S)
        if all_sorted and not out.sorted and 0 < axis < S:
            out = _stable_sort_prefix(out, axis, be)
    if len(formats) == 1 and arrays[0].format != "coo":
        return _keep_format(arrays[0], out, be)
    return out


def _joined_coords(coos, offsets, axis, k):
    """The coordinates of ``coos`` side by side, shifted by ``offsets`` along a sparse ``axis``.

    Written once into the output (no shifted copies of the inputs first).
    """
    S = coos[0].coords.shape[0]
    out = k.empty((S, sum(a.nnz for a in coos)), np.int64)
    start = 0
    for a, off in zip(coos, offsets):
        stop = start + a.nnz
        out[:, start:stop] = a.coords
        if axis is not None and off:
            out[axis, start:stop] += off
        start = stop
    return out


def _pad_block(a, out_shape, S, axis, offset, fill, xp):
    """``a.data`` placed in the output's dense block, at ``offset`` along a dense ``axis``.

    The rest of the block holds the fill value. Along a dense concatenation
    axis the fill is 0 (``concatenate`` makes the axis sparse otherwise), so
    blocks of different inputs at one coordinate add up to the joined block.
    """
    dense_out = tuple(out_shape[S:])
    if axis is None and a.shape[S:] == dense_out:
        return a.data
    block = xp.full((a.nnz,) + dense_out, fill, dtype=a.dtype)
    index = [slice(None)]
    for d in range(S, len(out_shape)):
        start = offset if d == axis else 0
        index.append(slice(start, start + a.shape[d]))
    block[tuple(index)] = a.data
    return block


def _interleave_sorted(coords, offsets, datas, shape, axis, fill, be, unique):
    """Sorted COO inputs joined along a sparse ``axis > 0``, sorted, without a sort; None if too sparse.

    ``coords[i]`` / ``datas[i]`` are input ``i``'s entries, to be shifted by
    ``offsets[i]`` along ``axis``. Entries with equal prefixes
    ``coords[:axis]`` go in input order, which is the joined array's
    row-major order, so each input's prefix runs (``compress``) are copied
    into place (``copy_segments``) and the output's prefix coordinates are
    expanded from the joined pointers: O(nnz + prefixes). None when the
    prefix range is too large for that.
    """
    nnz = sum(int(c.shape[1]) for c in coords)
    n_prefix = math.prod(shape[:axis])
    if n_prefix > 4 * nnz + (1 << 16):
        return None
    k, xp = be.kernels, be.xp
    S = coords[0].shape[0]
    pointers = []
    for c in coords:
        prefix = c[0] if axis == 1 else k.linearize(xp.ascontiguousarray(c[:axis]), shape[:axis])
        pointers.append(k.compress(prefix, n_prefix, np.int64))
    counts = [xp.diff(p) for p in pointers]
    out_ptr = k.offsets(sum(counts[1:], counts[0]))
    width = math.prod(shape[S:])
    out_coords = k.empty((S, nnz), np.int64)
    if axis == 1:
        k.expand(out_ptr, nnz, out=out_coords[0])
    else:
        out_coords[:axis] = k.delinearize(k.expand(out_ptr, nnz), shape[:axis])
    out_data = k.empty((nnz,) + tuple(shape[S:]), datas[0].dtype)
    flat_out = out_data.reshape(nnz, width)
    before = out_ptr[:-1].copy()
    for c, off, d, ptr, cnt in zip(coords, offsets, datas, pointers, counts):
        n = int(c.shape[1])
        if n == 0:
            continue
        src = ptr[:-1]
        ins = [xp.add(c[axis], off, out=k.empty(n, np.int64)) if off else c[axis]]
        ins += [c[row] for row in range(axis + 1, S)]
        ins = [xp.ascontiguousarray(row).reshape(n, 1) for row in ins]
        ins.append(xp.ascontiguousarray(d).reshape(n, width))
        outs = [out_coords[row].reshape(nnz, 1) for row in range(axis, S)] + [flat_out]
        for i in range(0, len(ins), 2):
            if i + 1 < len(ins):
                k.copy_segments(ins[i], src, before, cnt, outs[i], ins[i + 1], outs[i + 1])
            else:
                k.copy_segments(ins[i], src, before, cnt, outs[i])
        before += cnt
    return _new_coo(out_coords, out_data, shape, fill, be, sorted=True, unique=unique)


def _stable_sort_prefix(x, axis, be):
    """Stable sort of sorted runs by the coordinates before ``axis``: sorted again."""
    k, xp = be.kernels, be.xp
    with be.scope():
        _, perm, _ = canonical.sorted_keys(x.coords[:axis], x.shape[:axis], k, xp)
        if perm is None:
            return _new_coo(x.coords, x.data, x.shape, x.fill_value, be, sorted=True, unique=x.unique)
        coords = k.take_columns(x.coords, perm)
        data = canonical.take_rows(x.data, perm, k)
    return _new_coo(coords, data, x.shape, x.fill_value, be, sorted=True, unique=x.unique)


def _concat_compressed(arrays, axis, out_shape, fill, be):
    """CSR/CSC joined along the major axis (append) or the minor axis (interleave rows)."""
    from gpusparse._dtypes import index_dtype_for
    cls = type(arrays[0])
    major = cls._major_axis
    k, xp = be.kernels, be.xp
    nnz = sum(a.nnz for a in arrays)
    dtype = index_dtype_for(out_shape[0], out_shape[1], nnz)
    with be.scope():
        if axis == major:
            parts, base = [xp.zeros(1, dtype=np.int64)], 0
            for a in arrays:
                parts.append(a.indptr[1:].astype(np.int64) + base)
                base += a.nnz
            indptr = xp.concatenate(parts)
            indices = xp.concatenate([a.indices.astype(dtype, copy=False) for a in arrays])
            data = xp.concatenate([a.data for a in arrays], axis=0)
        else:
            n_major = out_shape[major]
            counts = []
            for a in arrays:
                c = xp.zeros(n_major, dtype=np.int64)
                c[: a.shape[major]] = xp.diff(a.indptr.astype(np.int64))
                counts.append(c)
            indptr = k.offsets(sum(counts[1:], counts[0]))
            before = xp.zeros(n_major, dtype=np.int64)
            indices = k.empty(nnz, dtype)
            data = k.empty((nnz,) + tuple(out_shape[2:]), arrays[0].dtype)
            offset = 0
            for a, c in zip(arrays, counts):
                if a.nnz:
                    n = a.shape[major]
                    src = a.indptr[:-1].astype(np.int64)
                    dst = indptr[:n] + before[:n]
                    lengths = c[:n]
                    shifted = a.indices.astype(dtype) + dtype.type(offset) if offset else a.indices.astype(dtype, copy=False)
                    width = math.prod(out_shape[2:])
                    k.copy_segments(shifted.reshape(-1, 1), src, dst, lengths, indices.reshape(-1, 1),
                                    xp.ascontiguousarray(a.data).reshape(a.nnz, width), data.reshape(nnz, width))
                before += c
                offset += a.shape[axis]
    return cls._from_parts(xp.ascontiguousarray(indptr, dtype=dtype), xp.ascontiguousarray(indices, dtype=dtype),
                           data, out_shape, fill, be.device)


def stack(arrays, axis=0):
    """Join arrays of one shape along a new axis (NumPy's ``stack``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> stack([a, a], axis=1).todense()
    array([[1, 1],
           [0, 0]])
    """
    from gpusparse.ops.creation import zero_d_as_sparse
    arrays = [a if (z := zero_d_as_sparse(a)) is None else z for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    axis = check_axis(axis, arrays[0].ndim + 1)
    be = _backend_of_list(arrays)
    return concatenate_on([expand_dims_on(a, axis, be) for a in arrays], axis, be)


def _backend_of_list(arrays):
    """The backend of the one device of ``arrays`` (sparse arrays, at least one)."""
    return backend_of(*arrays, what=tuple(f"arrays[{i}]" for i in range(len(arrays))))


def _atleast(a, ndim, be):
    """``a`` with at least ``ndim`` dimensions, NumPy's ``atleast_{ndim}d`` way, on backend ``be``."""
    if a.ndim >= ndim:
        return a
    if ndim == 1:
        return reshape_on(a, (1,), be)
    if ndim == 2:
        return expand_dims_on(a, 0, be) if a.ndim == 1 else reshape_on(a, (1, 1), be)
    if a.ndim == 0:
        return reshape_on(a, (1, 1, 1), be)
    if a.ndim == 1:
        return expand_dims_on(a, (0, 2), be)
    return expand_dims_on(a, 2, be)


def _stacked(arrays, ndim, axis):
    """``arrays`` made at least ``ndim``-dimensional and joined along ``axis`` (a function of the first)."""
    arrays = list(arrays)
    if not arrays:
        return concatenate_on(arrays, 0, None)  # the error of an empty list
    be = _backend_of_list(arrays)
    arrays = [_atleast(a, ndim, be) for a in arrays]
    return concatenate_on(arrays, axis(arrays[0]), be)


def vstack(arrays):
    """Stack arrays row-wise (NumPy's ``vstack``: 1-D arrays become rows).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> vstack([a, a]).shape
    (2, 2)
    """
    return _stacked(arrays, 2, lambda first: 0)


def hstack(arrays):
    """Stack arrays column-wise (NumPy's ``hstack``: 1-D arrays are joined end to end).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> hstack([a, a]).shape
    (4,)
    """
    return _stacked(arrays, 1, lambda first: 0 if first.ndim == 1 else 1)


def dstack(arrays):
    """Stack arrays depth-wise along a third axis (NumPy's ``dstack``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> dstack([a, a]).shape
    (1, 2, 2)
    """
    return _stacked(arrays, 3, lambda first: 2)
