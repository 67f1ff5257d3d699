"""Shape manipulation: transpose, reshape, squeeze, broadcast, concatenate, split, pad, ...

Every function follows NumPy's semantics (and error messages) on the dense
array a sparse array stands for, on any format, any rank and any split into
sparse and dense dimensions. They work on the COO view:

* axes permutations permute the coordinate rows (and transpose ``data`` for
  dense dimensions); the result is flagged unsorted unless the sparse
  dimensions keep their order. Transposing CSR gives CSC over the same
  arrays, and back.
* ``reshape`` splits the old and new shapes into blocks of equal size and
  re-linearises only the blocks that change; the order of the entries, and
  so the sorted flag, is kept. A block whose size does not fit in 63 bits
  takes a slow exact path through Python integers, never an overflow.
* Where a dense dimension has to move in front of a sparse one, it becomes
  sparse first (:func:`sparsify`): each stored block turns into one entry
  per element.

Results of compressed inputs keep the format where the result has the two
sparse dimensions in order (and swap CSR/CSC on transposition); otherwise
they are COO.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from gpusparse._device import device_of, device_scope, kernels_for, to_host, xp_for
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_axis, check_shape

__all__ = [
    "array_split",
    "broadcast_to",
    "concatenate",
    "diag",
    "diagonal",
    "dstack",
    "expand_dims",
    "flip",
    "hstack",
    "matrix_transpose",
    "moveaxis",
    "pad",
    "permute_dims",
    "reshape",
    "resize",
    "roll",
    "sparsify",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
    "tril",
    "triu",
    "vstack",
]

_FITS = 2**63


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def _coo(x):
    return x if x.format == "coo" else convert.compressed_to_coo(x)


def _new_coo(coords, data, shape, fill, dev, *, sorted, unique):
    from gpusparse.containers import COO
    xp = xp_for(dev)
    return COO._from_parts(xp.ascontiguousarray(coords, dtype=np.int64), xp.ascontiguousarray(data),
                           tuple(shape), fill, dev, sorted=sorted, unique=unique)


def _axes(axis, ndim, argument="axis"):
    """A tuple of distinct normalised axes from an int or a sequence."""
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = tuple(check_axis(a, ndim, argument) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {argument}: {tuple(axis)}")
    return out


def _same_fill(a, b) -> bool:
    return bool(a == b) or (a != a and b != b)


def _for_padding(coo):
    """``coo`` ready for its dense blocks to be padded with the fill value.

    Duplicates add up their blocks, padding included, so a nonzero fill
    needs unique coordinates first.
    """
    fill = coo.fill_value
    if coo.unique or (fill == 0 and fill == fill):
        return coo
    return canonical.coalesce(coo)


def _zero_fill(x, what):
    fill = x.fill_value
    if not (fill == 0 and fill == fill):
        raise ValueError(f"{what} needs a zero fill value, got {fill!r}")


def _reduce_to_one(coo):
    """A COO with no sparse dimension keeps at most one entry: sum the rest."""
    n = coo.nnz
    if n <= 1:
        return coo.data
    xp = xp_for(coo.device)
    return canonical.sum_segments(coo.data, xp.asarray([0, n], dtype=np.int64), None,
                                  kernels_for(coo.device))


def sparsify(x, sparse_dim):
    """``x`` as COO with its first dense dimensions made sparse, ``sparse_dim`` in all.

    Each stored block becomes one entry per element of the block (fill-valued
    elements included), so the result stands for the same dense array. Order
    and uniqueness are kept.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [[5.0, 0.0]], shape=(2, 2), device="cpu")
    >>> y = sparsify(x, 2)
    >>> y.coords, y.data
    (array([[1, 1],
           [0, 1]]), array([5., 0.]))
    """
    coo = _coo(x)
    S = coo.sparse_dim
    if sparse_dim <= S:
        return coo
    if sparse_dim > coo.ndim:
        raise ValueError(f"sparse_dim must be at most ndim={coo.ndim}, got {sparse_dim}")
    dev = coo.device
    k, xp = kernels_for(dev), xp_for(dev)
    block = coo.shape[S:sparse_dim]
    m, n = math.prod(block), coo.nnz
    with device_scope(dev):
        outer = xp.repeat(coo.coords, m, axis=1)
        inner = k.delinearize(xp.arange(m, dtype=np.int64), block) if m else xp.zeros((len(block), 0), np.int64)
        inner = xp.tile(inner, (1, n))
        coords = xp.concatenate([outer, inner], axis=0)
        data = coo.data.reshape((n * m,) + coo.shape[sparse_dim:])
    return _new_coo(coords, data, coo.shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


# --------------------------------------------------------------------------
# Axis permutations
# --------------------------------------------------------------------------

def permute_dims(x, axes=None):
    """Permute the axes (NumPy's ``transpose`` / array API ``permute_dims``; torch's ``permute``).

    ``axes=None`` reverses them. Transposing a 2-D CSR gives a CSC over the
    same arrays (and back); other permutations of sparse dimensions give an
    unsorted COO.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6).reshape(1, 2, 3), device="cpu")
    >>> permute_dims(x, (2, 0, 1)).shape
    (3, 1, 2)
    >>> gs.fromdense(np.eye(2), format="csr", device="cpu").T.format
    'csc'
    """
    ndim = x.ndim
    if axes is None:
        axes = tuple(range(ndim - 1, -1, -1))
    else:
        axes = tuple(axes) if not isinstance(axes, (int, np.integer)) else (axes,)
        if len(axes) != ndim:
            raise ValueError(f"axes don't match array: got {len(axes)} axes for a {ndim}-d array")
        axes = _axes(axes, ndim, "axes")
    if axes == tuple(range(ndim)):
        return x
    dev = x.device
    xp = xp_for(dev)
    if x.format != "coo" and axes[:2] in ((0, 1), (1, 0)) and sorted(axes[2:]) == list(axes[2:]) == list(range(2, ndim)):
        return _swap_compressed(x)
    if x.format != "coo" and axes[:2] == (0, 1):
        with device_scope(dev):
            data = xp.ascontiguousarray(xp.transpose(x.data, (0,) + tuple(a - 1 for a in axes[2:])))
        shape = x.shape[:2] + tuple(x.shape[a] for a in axes[2:])
        return type(x)._from_parts(x.indptr, x.indices, data, shape, x.fill_value, dev)
    S = x.sparse_dim
    last = max((p for p, a in enumerate(axes) if a < S), default=-1)
    width = last + 1
    while width and max(axes[:width]) + 1 > width:
        width = max(axes[:width]) + 1
    coo = sparsify(x, max(width, S)) if width > S else _coo(x)
    S = coo.sparse_dim
    with device_scope(dev):
        data = xp.transpose(coo.data, (0,) + tuple(a - S + 1 for a in axes[S:]))
    shape = tuple(coo.shape[a] for a in axes)
    keeps_order = axes[:S] == tuple(range(S))
    moved = axes[0]
    if (coo.sorted and not keeps_order and coo.nnz > 1
            and axes[:S] == (moved,) + tuple(d for d in range(S) if d != moved)):
        # one axis moved to the front (a 2-D transpose): a stable sort on that
        # axis alone restores row-major order, since the rest is ordered already
        coords, data = _stable_by_axis(coo.coords, data, list(axes[:S]), shape[0], dev)
        keeps_order = True
    else:
        with device_scope(dev):
            coords = coo.coords[list(axes[:S])] if S else coo.coords
    return _new_coo(coords, data, shape, coo.fill_value, dev,
                    sorted=coo.sorted and keeps_order, unique=coo.unique)


def _stable_by_axis(coords, data, rows, n_first, dev):
    """``coords[rows]`` and ``data`` stably sorted by ``coords[rows[0]]`` (``n_first`` values)."""
    k, xp = kernels_for(dev), xp_for(dev)
    n, S = int(coords.shape[1]), len(rows)
    with device_scope(dev):
        if n_first <= 4 * n + (1 << 16):  # one counting pass, then scatters
            dest, starts = k.bucket_order(coords[rows[0]], n_first)
            width = math.prod(data.shape[1:])
            out = k.empty((S, n), np.int64)
            k.expand(starts, n, out=out[0])
            for d in range(1, S):
                k.scatter_dense(dest, coords[rows[d]].reshape(n, 1), out[d].reshape(n, 1))
            flat = k.empty((n, width), data.dtype)
            k.scatter_dense(dest, xp.ascontiguousarray(data).reshape(n, width), flat)
            return out, flat.reshape(data.shape)
        first, order = k.sort_pairs(coords[rows[0]], None, max(n_first - 1, 0).bit_length())
        out = xp.concatenate([first.reshape(1, -1), xp.take(coords[rows[1:]], order, axis=1)])
        return out, xp.take(data, order, axis=0)


transpose = permute_dims


def _swap_compressed(x):
    from gpusparse.containers import CSC, CSR
    cls = CSC if x.format == "csr" else CSR
    shape = (x.shape[1], x.shape[0]) + x.shape[2:]
    return cls._from_parts(x.indptr, x.indices, x.data, shape, x.fill_value, x.device)


def swapaxes(x, axis1, axis2):
    """Interchange two axes (NumPy's ``swapaxes``; torch's ``transpose(dim0, dim1)``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> swapaxes(gs.fromdense(np.zeros((2, 3, 4)), device="cpu"), 0, 2).shape
    (4, 3, 2)
    """
    a, b = check_axis(axis1, x.ndim, "axis1"), check_axis(axis2, x.ndim, "axis2")
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute_dims(x, axes)


def moveaxis(x, source, destination):
    """Move axes to new positions, the others keeping their order (NumPy's ``moveaxis``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> moveaxis(gs.fromdense(np.zeros((2, 3, 4)), device="cpu"), 0, -1).shape
    (3, 4, 2)
    """
    src = _axes(source, x.ndim, "source")
    dst = _axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("source and destination arguments must have the same number of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def matrix_transpose(x):
    """Swap the last two axes (the array API's ``matrix_transpose``, ``x.mT``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> matrix_transpose(gs.fromdense(np.zeros((2, 3, 4)), device="cpu")).shape
    (2, 4, 3)
    """
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got a {x.ndim}-d array")
    return swapaxes(x, -1, -2)


# --------------------------------------------------------------------------
# reshape, squeeze, expand_dims, broadcast_to
# --------------------------------------------------------------------------

def _target_shape(shape, size, argument="shape"):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = [operator.index(s) for s in shape]
    except TypeError:
        raise TypeError(f"{argument} must be a sequence of integers, got {shape!r}") from None
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in dims):
        raise ValueError(f"negative dimensions not allowed in {argument}: {tuple(dims)}")
    if unknown:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or size % known:
            shown = tuple("newaxis" if d == -1 else d for d in dims)
            raise ValueError(f"cannot reshape array of size {size} into shape {_fmt(shown)}")
        dims[unknown[0]] = size // known
    if math.prod(dims) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {_fmt(tuple(dims))}")
    return check_shape(dims, argument)  # every dimension must fit int64 coordinates


def _fmt(shape):
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def reshape(x, shape):
    """The same elements in ``shape`` (one entry may be -1), in C order.

    Dense trailing dimensions are kept when ``shape`` ends with them;
    otherwise the result is fully sparse. Sorted input stays sorted.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6).reshape(2, 3), device="cpu")
    >>> reshape(x, (3, -1)).todense()
    array([[0, 1],
           [2, 3],
           [4, 5]])
    """
    shape = _target_shape(shape, x.size)
    if shape == x.shape:
        return x
    coo = _coo(x)
    S, D = coo.sparse_dim, coo.dense_dim
    dense_shape = coo.shape[S:]
    if (D and len(shape) >= D and shape[len(shape) - D:] == dense_shape
            and math.prod(shape[: len(shape) - D]) == math.prod(coo.shape[:S])):
        new_sparse = shape[: len(shape) - D]
    else:
        coo = sparsify(coo, coo.ndim)
        new_sparse, dense_shape = shape, ()
    coords = _reshape_coords(coo.coords, coo.shape[: coo.sparse_dim], new_sparse, coo.device)
    if not new_sparse:
        data = _reduce_to_one(coo)
        coords = coords[:, : data.shape[0]]
    else:
        data = coo.data
    out = _new_coo(coords, data, new_sparse + dense_shape, coo.fill_value, coo.device,
                   sorted=coo.sorted or not new_sparse, unique=coo.unique or not new_sparse)
    return _keep_format(x, out)


def _keep_format(x, out):
    """Compressed input, result with exactly two sparse dimensions: same format."""
    if x.format != "coo" and out.sparse_dim == 2:
        return convert.asformat(out, x.format)
    return out


def _blocks(old, new):
    """Pair the non-1 dimensions of ``old`` and ``new`` into runs of equal product."""
    a = [i for i, d in enumerate(old) if d != 1]
    b = [j for j, d in enumerate(new) if d != 1]
    blocks, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        bi, bj = [a[i]] if i < len(a) else [], [b[j]] if j < len(b) else []
        pa = old[a[i]] if i < len(a) else 1
        pb = new[b[j]] if j < len(b) else 1
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                bi.append(a[i]); pa *= old[a[i]]; i += 1
            else:
                bj.append(b[j]); pb *= new[b[j]]; j += 1
        blocks.append((bi, bj))
    return blocks


def _reshape_coords(coords, old, new, dev):
    k, xp = kernels_for(dev), xp_for(dev)
    n = int(coords.shape[1])
    with device_scope(dev):
        if math.prod(old) == 0 or n == 0:
            return xp.zeros((len(new), n), dtype=np.int64)
        rows = [None] * len(new)
        for bi, bj in _blocks(old, new):
            if len(bi) == 1 and len(bj) == 1:
                rows[bj[0]] = coords[bi[0]]
                continue
            sub_old, sub_new = tuple(old[i] for i in bi), tuple(new[j] for j in bj)
            if math.prod(sub_old) < _FITS:
                keys = k.linearize(xp.ascontiguousarray(coords[bi]), sub_old)
                out = k.delinearize(keys, sub_new)
            else:
                out = _relinearize_exact(coords[bi], sub_old, sub_new, xp)
            if bj == list(range(len(new))):  # one block makes every row: no stacking copy
                return out
            for r, j in enumerate(bj):
                rows[j] = out[r]
        zeros = None
        for j in range(len(new)):
            if rows[j] is None:
                zeros = xp.zeros(n, dtype=np.int64) if zeros is None else zeros
                rows[j] = zeros
        return xp.stack(rows) if rows else xp.zeros((0, n), dtype=np.int64)


def _relinearize_exact(coords, old, new, xp):
    """Mixed-radix conversion with Python integers (products beyond 63 bits); slow but exact."""
    host = to_host(coords).astype(object)  # sync: exact path for huge blocks
    keys = np.zeros(host.shape[1], dtype=object)
    for row, stride in zip(host, canonical.c_strides(old)):
        keys = keys + row * stride
    out = np.empty((len(new), host.shape[1]), dtype=np.int64)
    for r in range(len(new) - 1, -1, -1):
        out[r] = (keys % new[r]).astype(np.int64)
        keys = keys // new[r]
    return xp.asarray(out)


def squeeze(x, axis=None):
    """Remove axes of length one (all of them when ``axis`` is None).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> squeeze(gs.fromdense(np.ones((1, 3, 1)), device="cpu")).shape
    (3,)
    """
    if axis is None:
        axes = tuple(a for a, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes(axis, x.ndim)
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not axes:
        return x
    coo = _coo(x)
    S = coo.sparse_dim
    keep_sparse = [a for a in range(S) if a not in axes]
    dev = coo.device
    shape = tuple(d for a, d in enumerate(coo.shape) if a not in axes)
    with device_scope(dev):
        dense_shape = tuple(d for a, d in enumerate(coo.shape) if a >= S and a not in axes)
        data = coo.data.reshape((coo.nnz,) + dense_shape)
        coords = coo.coords[keep_sparse]
        if not keep_sparse and S:
            data = _reduce_to_one(_new_coo(coords, data, dense_shape, coo.fill_value, dev,
                                           sorted=False, unique=False))
            coords = coords[:, : data.shape[0]]
    out = _new_coo(coords, data, shape, coo.fill_value, dev,
                   sorted=coo.sorted or not keep_sparse, unique=coo.unique or not keep_sparse)
    return _keep_format(x, out) if len(keep_sparse) == 2 else out


def expand_dims(x, axis):
    """Insert axes of length one at the positions ``axis`` (of the result).

    A new axis among or before the sparse dimensions is sparse; one after
    them is dense when the array has dense dimensions, sparse otherwise.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.ones((2, 3)), device="cpu")
    >>> expand_dims(x, (0, -1)).shape
    (1, 2, 3, 1)
    """
    out_ndim = x.ndim + (1 if isinstance(axis, (int, np.integer)) else len(tuple(axis)))
    axes = set(_axes(axis, out_ndim))
    coo = _coo(x)
    S = coo.sparse_dim
    order, it = [], iter(range(x.ndim))
    for p in range(out_ndim):
        order.append(None if p in axes else next(it))
    last_sparse = max((p for p, a in enumerate(order) if a is not None and a < S), default=-1)
    n_sparse = last_sparse + 1 if coo.dense_dim else out_ndim
    dev = coo.device
    xp = xp_for(dev)
    with device_scope(dev):
        zeros = xp.zeros(coo.nnz, dtype=np.int64)
        rows = [zeros if a is None else coo.coords[a] for a in order[:n_sparse]]
        coords = xp.stack(rows) if rows else xp.zeros((0, coo.nnz), dtype=np.int64)
        shape = tuple(1 if a is None else coo.shape[a] for a in order)
        data = coo.data.reshape((coo.nnz,) + shape[n_sparse:])
    return _new_coo(coords, data, shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (NumPy's rules); broadcast sparse axes replicate entries.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[0, 2]]), device="cpu")
    >>> broadcast_to(x, (3, 2)).todense()
    array([[0, 2],
           [0, 2],
           [0, 2]])
    """
    shape = check_shape(shape)
    lead = len(shape) - x.ndim
    ok = lead >= 0 and all(d in (1, t) for d, t in zip(x.shape, shape[lead:]))
    if not ok:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape {shape}")
    if shape == x.shape:
        return x
    coo = expand_dims(_coo(x), tuple(range(lead))) if lead else _coo(x)
    S = coo.sparse_dim
    dev = coo.device
    k, xp = kernels_for(dev), xp_for(dev)
    grow = [a for a in range(S) if coo.shape[a] != shape[a]]
    n = coo.nnz
    with device_scope(dev):
        coords, data = coo.coords, coo.data
        if grow:
            sizes = tuple(shape[a] for a in grow)
            m = math.prod(sizes)
            coords = xp.repeat(coords, m, axis=1)
            inner = k.delinearize(xp.arange(m, dtype=np.int64), sizes) if m else xp.zeros((len(grow), 0), np.int64)
            inner = xp.tile(inner, (1, n))
            coords = coords.copy()
            for r, a in enumerate(grow):
                coords[a] = inner[r]
            data = xp.repeat(data, m, axis=0)
        data = xp.broadcast_to(data, (data.shape[0],) + tuple(shape[S:]))
    return _new_coo(coords, data, shape, coo.fill_value, dev,
                    sorted=coo.sorted and not grow, unique=coo.unique)


# --------------------------------------------------------------------------
# Joining and splitting
# --------------------------------------------------------------------------

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
    from gpusparse.containers import SparseArray
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    for i, a in enumerate(arrays):
        if not isinstance(a, SparseArray):
            raise TypeError(f"arrays[{i}] is a {type(a).__name__}, not a gpusparse array")
    dev = device_of(*arrays, what=tuple(f"arrays[{i}]" for i in range(len(arrays))))
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
        return _concat_compressed(arrays, axis, out_shape, fill, dev)
    S = max(a.sparse_dim for a in arrays)
    zero_fill = fill == 0 and fill == fill
    if axis >= S and not zero_fill:
        S = axis + 1
    coos = canonical.flag_sorted([sparsify(a, S) for a in arrays])  # TF's row-major output from sorted inputs
    coos = [_for_padding(a) if a.shape[S:] != out_shape[S:] and axis < S else a for a in coos]
    xp = xp_for(dev)
    all_sorted = all(a.sorted for a in coos)
    all_unique = all(a.unique for a in coos)
    with device_scope(dev):
        datas, offsets, offset = [], [], 0
        for a in coos:
            datas.append(_pad_block(a, out_shape, S, axis if axis >= S else None, offset, fill, xp))
            offsets.append(offset)
            offset += a.shape[axis]
        out = None
        if all_sorted and 0 < axis < S:
            out = _interleave_sorted([a.coords for a in coos], offsets, datas, out_shape, axis, fill, dev,
                                     all_unique)
        if out is None:
            k = kernels_for(dev)
            coords = _joined_coords(coos, offsets, axis if axis < S else None, k)
            data = xp.concatenate(datas, axis=0, out=k.empty((coords.shape[1],) + datas[0].shape[1:],
                                                             datas[0].dtype))
    if out is None:
        if S == 0:  # one block at most: the padded blocks add up
            data = _reduce_to_one(_new_coo(coords, data, out_shape, fill, dev, sorted=False, unique=False))
            coords = coords[:, : data.shape[0]]
            all_sorted = all_unique = True
        out = _new_coo(coords, data, out_shape, fill, dev,
                       sorted=all_sorted and axis == 0 and S > 0, unique=all_unique and axis < S)
        if all_sorted and not out.sorted and 0 < axis < S:
            out = _stable_sort_prefix(out, axis)
    if len(formats) == 1 and arrays[0].format != "coo":
        return _keep_format(arrays[0], out)
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


def _interleave_sorted(coords, offsets, datas, shape, axis, fill, dev, unique):
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
    k, xp = kernels_for(dev), xp_for(dev)
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
    return _new_coo(out_coords, out_data, shape, fill, dev, sorted=True, unique=unique)


def _stable_sort_prefix(x, axis):
    """Stable sort of sorted runs by the coordinates before ``axis``: sorted again."""
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        _, perm, _ = canonical.sorted_keys(x.coords[:axis], x.shape[:axis], k, xp)
        if perm is None:
            return _new_coo(x.coords, x.data, x.shape, x.fill_value, dev, sorted=True, unique=x.unique)
        coords = k.take_columns(x.coords, perm)
        data = canonical.take_rows(x.data, perm, k)
    return _new_coo(coords, data, x.shape, x.fill_value, dev, sorted=True, unique=x.unique)


def _concat_compressed(arrays, axis, out_shape, fill, dev):
    """CSR/CSC joined along the major axis (append) or the minor axis (interleave rows)."""
    from gpusparse._dtypes import index_dtype_for
    cls = type(arrays[0])
    major = cls._major_axis
    k, xp = kernels_for(dev), xp_for(dev)
    nnz = sum(a.nnz for a in arrays)
    dtype = index_dtype_for(out_shape[0], out_shape[1], nnz)
    with device_scope(dev):
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
                           data, out_shape, fill, dev)


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
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


def _atleast(a, ndim):
    if a.ndim >= ndim:
        return a
    if ndim == 1:
        return reshape(a, (1,))
    if ndim == 2:
        return expand_dims(a, 0) if a.ndim == 1 else reshape(a, (1, 1))
    if a.ndim == 0:
        return reshape(a, (1, 1, 1))
    if a.ndim == 1:
        return expand_dims(a, (0, 2))
    return expand_dims(a, 2)


def vstack(arrays):
    """Stack arrays row-wise (NumPy's ``vstack``: 1-D arrays become rows).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> vstack([a, a]).shape
    (2, 2)
    """
    return concatenate([_atleast(a, 2) for a in arrays], axis=0)


def hstack(arrays):
    """Stack arrays column-wise (NumPy's ``hstack``: 1-D arrays are joined end to end).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> hstack([a, a]).shape
    (4,)
    """
    arrays = [_atleast(a, 1) if a.ndim == 0 else a for a in arrays]
    return concatenate(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


def dstack(arrays):
    """Stack arrays depth-wise along a third axis (NumPy's ``dstack``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([1, 0]), device="cpu")
    >>> dstack([a, a]).shape
    (1, 2, 2)
    """
    return concatenate([_atleast(a, 3) for a in arrays], axis=2)


def _split_bounds(n, indices_or_sections, strict):
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"number of sections must be larger than 0, got {sections}")
        if strict and n % sections:
            raise ValueError(
                f"array split does not result in an equal division: axis of size {n} into {sections} sections"
            )
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        try:
            points = [operator.index(i) for i in indices_or_sections]
        except TypeError:
            raise TypeError("indices_or_sections must be an integer or a sequence of integers") from None
        bounds = [0] + points + [n]
    return [(min(max(a if a >= 0 else a + n, 0), n), min(max(b if b >= 0 else b + n, 0), n))
            for a, b in zip(bounds[:-1], bounds[1:])]


def split(x, indices_or_sections, axis=0):
    """Split into equal sections or at indices (NumPy's ``split``).

    An integer must divide the axis (``ValueError`` otherwise, naming the
    count); see :func:`array_split` for TF's and NumPy's uneven split.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(6), device="cpu")
    >>> [p.todense().tolist() for p in split(x, [2, 3])]
    [[0, 1], [2], [3, 4, 5]]
    """
    axis = check_axis(axis, x.ndim)
    return _split(x, _split_bounds(x.shape[axis], indices_or_sections, strict=True), axis)


def array_split(x, indices_or_sections, axis=0):
    """Split into sections that may differ by one (NumPy's ``array_split``, TF's ``sparse.split``).

    The first ``n % sections`` pieces get one more slice, as in TF.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(7), device="cpu")
    >>> [p.shape for p in array_split(x, 2)]
    [(4,), (3,)]
    """
    axis = check_axis(axis, x.ndim)
    return _split(x, _split_bounds(x.shape[axis], indices_or_sections, strict=False), axis)


def _split(x, bounds, axis):
    from gpusparse.ops.indexing import getitem
    lead = (slice(None),) * axis
    disjoint = all(max(a1, b1) <= a2 for (a1, b1), (a2, _) in zip(bounds[:-1], bounds[1:]))
    if x.format != "coo" or axis >= x.sparse_dim or len(bounds) <= 2 or not disjoint:
        return [getitem(x, lead + (slice(a, max(a, b)),)) for a, b in bounds]
    # one pass over the entries for many pieces: piece ids, a stable sort, cuts
    dev = x.device
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        starts = xp.asarray([a for a, _ in bounds], dtype=np.int64)
        stops = xp.asarray([max(a, b) for a, b in bounds], dtype=np.int64)
        c = x.coords[axis]
        piece = xp.searchsorted(starts, c, side="right") - 1
        inside = c < xp.take(stops, xp.maximum(piece, 0))
        piece = xp.where(inside & (piece >= 0), piece, len(bounds))
        _, perm = k.sort_pairs(piece, None, (len(bounds)).bit_length())
        counts = to_host(xp.bincount(piece, minlength=len(bounds) + 1))  # sync: piece sizes
        coords = k.take_columns(x.coords, perm)
        coords[axis] -= xp.take(starts, xp.minimum(xp.take(piece, perm), len(bounds) - 1))
        data = canonical.take_rows(x.data, perm, k)
    out, at = [], 0
    for (a, b), count in zip(bounds, counts[: len(bounds)]):
        count = int(count)
        shape = x.shape[:axis] + (max(b - a, 0),) + x.shape[axis + 1:]
        out.append(_new_coo(coords[:, at: at + count], data[at: at + count], shape, x.fill_value, dev,
                            sorted=x.sorted, unique=x.unique))
        at += count
    return out


# --------------------------------------------------------------------------
# pad, roll, flip
# --------------------------------------------------------------------------

def pad(x, pad_width, mode="constant", constant_values=None):
    """Pad with the fill value (NumPy's ``pad`` with ``mode="constant"``).

    ``constant_values`` must equal the fill value (the padding is not
    stored), as in pydata sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> pad(gs.fromdense(np.array([1, 2]), device="cpu"), (1, 2)).todense()
    array([0, 1, 2, 0, 0])
    """
    if mode != "constant":
        raise ValueError(f"mode must be 'constant' for sparse arrays, got {mode!r}")
    if constant_values is not None:
        value = np.asarray(constant_values)
        if value.ndim or not _same_fill(value.astype(x.dtype)[()], x.fill_value):
            raise ValueError(
                f"constant_values must equal the fill value {x.fill_value!r}, got {constant_values!r}"
            )
    if x.ndim == 0:
        return x
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    except ValueError:
        raise ValueError(f"pad_width {pad_width!r} does not fit an array of {x.ndim} dimensions") from None
    if (widths < 0).any():
        raise ValueError("pad_width cannot contain negative values")
    widths = [tuple(int(v) for v in row) for row in widths]
    if all(w == (0, 0) for w in widths):
        return x
    coo = _coo(x)
    S = coo.sparse_dim
    if any(w != (0, 0) for w in widths[S:]):
        coo = _for_padding(coo)
    dev = coo.device
    xp = xp_for(dev)
    shape = tuple(d + a + b for d, (a, b) in zip(coo.shape, widths))
    with device_scope(dev):
        coords = coo.coords
        if any(widths[d][0] for d in range(S)):
            coords = coords + xp.asarray([widths[d][0] for d in range(S)], dtype=np.int64).reshape(-1, 1)
        data = coo.data
        if any(w != (0, 0) for w in widths[S:]):
            data = xp.pad(data, [(0, 0)] + widths[S:], mode="constant", constant_values=x.fill_value)
    out = _new_coo(coords, data, shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)
    return _keep_format(x, out)


def roll(x, shift, axis=None):
    """Roll elements along axes (NumPy's ``roll``; the flattened array when ``axis`` is None).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> roll(gs.fromdense(np.array([1, 0, 2]), device="cpu"), 1).todense()
    array([2, 1, 0])
    """
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = {}
    for s, a in zip(shifts.reshape(-1), axes.reshape(-1)):
        a = check_axis(int(a), x.ndim)
        total[a] = total.get(a, 0) + int(s)
    total = {a: s % x.shape[a] for a, s in total.items() if x.shape[a] and s % x.shape[a]}
    if not total:
        return x
    coo = _coo(x)
    S = coo.sparse_dim
    dev = coo.device
    xp = xp_for(dev)
    with device_scope(dev):
        coords = coo.coords.copy() if any(a < S for a in total) else coo.coords
        data = coo.data
        for a, s in total.items():
            if a < S:
                coords[a] = (coords[a] + s) % coo.shape[a]
            else:
                data = xp.roll(data, s, axis=a - S + 1)
    out = _new_coo(coords, data, coo.shape, coo.fill_value, dev,
                   sorted=coo.sorted and not any(a < S for a in total), unique=coo.unique)
    return _keep_format(x, out)


def flip(x, axis=None):
    """Reverse the order of elements along axes (all of them when ``axis`` is None).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> flip(gs.fromdense(np.array([[1, 0], [0, 2]]), device="cpu"), 1).todense()
    array([[0, 1],
           [2, 0]])
    """
    axes = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim)
    axes = tuple(a for a in axes if x.shape[a] > 1)
    if not axes:
        return x
    coo = _coo(x)
    S = coo.sparse_dim
    dev = coo.device
    xp = xp_for(dev)
    with device_scope(dev):
        coords = coo.coords.copy() if any(a < S for a in axes) else coo.coords
        for a in axes:
            if a < S:
                coords[a] = (coo.shape[a] - 1) - coords[a]
        dense_axes = tuple(a - S + 1 for a in axes if a >= S)
        data = xp.flip(coo.data, axis=dense_axes) if dense_axes else coo.data
    out = _new_coo(coords, data, coo.shape, coo.fill_value, dev,
                   sorted=coo.sorted and not any(a < S for a in axes), unique=coo.unique)
    return _keep_format(x, out)


# --------------------------------------------------------------------------
# Triangles and diagonals
# --------------------------------------------------------------------------

def _triangle(x, k, lower):
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dimensions, got {x.ndim}")
    _zero_fill(x, "tril" if lower else "triu")
    k = operator.index(k)
    coo = _coo(x)
    S = coo.sparse_dim
    n = coo.ndim
    dev = coo.device
    xp = xp_for(dev)
    with device_scope(dev):
        if S == n:  # both axes sparse: drop entries
            diff = coo.coords[n - 1] - coo.coords[n - 2]
            return _keep_format(x, convert.keep_entries(coo, diff <= k if lower else diff >= k))
        rows, cols = coo.shape[n - 2], coo.shape[n - 1]
        if S == n - 1:  # row sparse, column dense
            j = xp.arange(cols, dtype=np.int64).reshape(1, cols)
            diff = j - coo.coords[n - 2].reshape(-1, 1)
        else:
            diff = (xp.arange(cols, dtype=np.int64).reshape(1, cols)
                    - xp.arange(rows, dtype=np.int64).reshape(rows, 1))
        mask = diff <= k if lower else diff >= k
        data = xp.where(mask, coo.data, xp.zeros((), dtype=coo.dtype))
    out = _new_coo(coo.coords, data, coo.shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)
    return _keep_format(x, out)


def tril(x, k=0):
    """Lower triangle of the last two axes: elements above the ``k``-th diagonal become 0.

    Needs a zero fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> tril(gs.fromdense(np.ones((2, 2)), device="cpu")).todense()
    array([[1., 0.],
           [1., 1.]])
    """
    return _triangle(x, k, lower=True)


def triu(x, k=0):
    """Upper triangle of the last two axes: elements below the ``k``-th diagonal become 0.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> triu(gs.fromdense(np.ones((2, 2)), device="cpu")).todense()
    array([[1., 1.],
           [0., 1.]])
    """
    return _triangle(x, k, lower=False)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal over ``axis1`` and ``axis2``, appended as the last axis (NumPy's ``diagonal``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> diagonal(gs.fromdense(np.arange(6).reshape(2, 3), device="cpu"), 1).todense()
    array([1, 5])
    """
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dimensions, got {x.ndim}")
    a1, a2 = check_axis(axis1, x.ndim, "axis1"), check_axis(axis2, x.ndim, "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator.index(offset)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    y = permute_dims(x, rest + [a1, a2])
    n = y.ndim
    n1, n2 = y.shape[n - 2], y.shape[n - 1]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    shape = y.shape[: n - 2] + (length,)
    dev = y.device
    xp = xp_for(dev)
    if y.sparse_dim <= n - 2:
        coo = _coo(y)
        with device_scope(dev):
            data = xp.diagonal(coo.data, offset, axis1=n - 1 - coo.sparse_dim,
                               axis2=n - coo.sparse_dim).copy()
        return _new_coo(coo.coords, data, shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)
    coo = sparsify(y, n)
    with device_scope(dev):
        r, c = coo.coords[n - 2], coo.coords[n - 1]
        keep = xp.nonzero(c - r == offset)[0]  # sync: entries on the diagonal
        coords = xp.take(coo.coords[: n - 1], keep, axis=1)
        if offset < 0:
            coords[n - 2] = xp.take(c, keep)
        data = xp.take(coo.data, keep, axis=0)
    return _new_coo(coords, data, shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


def diag(x, k=0):
    """NumPy's ``diag``: the ``k``-th diagonal of a 2-D array, or a 2-D array with ``x`` on it.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> diag(gs.fromdense(np.array([1, 2]), device="cpu"), 1).todense()
    array([[0, 1, 0],
           [0, 0, 2],
           [0, 0, 0]])
    """
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"diag needs a 1-D or 2-D array, got {x.ndim}-d")
    _zero_fill(x, "diag")
    coo = sparsify(x, 1)
    n = x.shape[0] + abs(k)
    dev = coo.device
    xp = xp_for(dev)
    with device_scope(dev):
        c = coo.coords[0]
        coords = xp.stack([c + max(-k, 0), c + max(k, 0)])
    return _new_coo(coords, coo.data, (n, n), coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)


def resize(x, new_shape):
    """The elements in C order cut or extended with the fill value to ``new_shape``.

    pydata sparse's (and ``ndarray.resize``'s) semantics, returning a new
    array; see :func:`gpusparse.reset_shape` for TF's shape reset that keeps
    the coordinates.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> resize(gs.fromdense(np.array([[1, 2], [3, 4]]), device="cpu"), (3,)).todense()
    array([1, 2, 3])
    """
    new_shape = check_shape(new_shape, "new_shape")
    if new_shape == x.shape:
        return x
    coo = sparsify(x, x.ndim)
    size = math.prod(new_shape)
    dev = coo.device
    k, xp = kernels_for(dev), xp_for(dev)
    if math.prod(coo.shape) >= _FITS or size >= _FITS:
        raise ValueError(f"resize supports sizes below 2**63, got {x.shape} -> {new_shape}")
    with device_scope(dev):
        keys = (k.linearize(coo.coords, coo.shape) if coo.ndim
                else xp.zeros(coo.nnz, dtype=np.int64))
        keep = xp.nonzero(keys < size)[0]  # sync: entries that stay
        keys = xp.take(keys, keep)
        data = xp.take(coo.data, keep, axis=0)
        coords = k.delinearize(keys, new_shape) if new_shape else xp.zeros((0, keys.shape[0]), np.int64)
    if not new_shape:
        data = _reduce_to_one(_new_coo(coords, data, (), coo.fill_value, dev, sorted=False, unique=False))
        coords = coords[:, : data.shape[0]]
    return _new_coo(coords, data, new_shape, coo.fill_value, dev,
                    sorted=coo.sorted or not new_shape, unique=coo.unique or not new_shape)
