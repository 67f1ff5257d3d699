"""TensorFlow's sparse toolbox: reset_shape, fill_empty_rows, to_indicator, merge, retain, reorder.

Each function reproduces its ``tf.sparse`` namesake (the examples of TF's
documentation are tests), on every device and format, with NumPy-style
errors naming the argument where TF raises ``InvalidArgumentError``.

Stored entries are taken one by one where TF reads them as a list of ids
(``to_indicator``, ``merge``): duplicates there are separate ids, not a sum.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._components import to_array
from gpusparse._backend import backend, backend_of
from gpusparse._device import array_device, to_device_array, to_host
from gpusparse._dtypes import normalize_fill_value
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_shape

__all__ = ["fill_empty_rows", "merge", "reorder", "reset_shape", "retain", "to_indicator"]


def _coo(x, be):
    """The COO view of ``x`` (itself when COO), on backend ``be``."""
    return x if x.format == "coo" else convert.compressed_to_coo(x, be=be)


def _check_sparse(x, argument):
    from gpusparse.containers import SparseArray
    if not isinstance(x, SparseArray):
        raise TypeError(f"{argument} must be a gpusparse array, got {type(x).__name__}")


def reorder(x):
    """Entries in row-major order, duplicates kept in their order (TF's ``sparse.reorder``).

    Compressed arrays are always ordered and come back unchanged.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 3, 2], [3, 1, 1, 0]], [2, 1, 4, 3], shape=(4, 5), device="cpu")
    >>> y = reorder(x)
    >>> y.coords.T.tolist(), y.data.tolist()
    ([[0, 1], [0, 3], [2, 0], [3, 1]], [1, 2, 3, 4])
    """
    _check_sparse(x, "x")
    return x if x.format != "coo" else canonical.reorder(x, be=backend(x.device))


def reset_shape(x, new_shape=None):
    """The same entries in ``new_shape``, or in the tight bounding box (TF's ``sparse.reset_shape``).

    Parameters
    ----------
    x : sparse array
    new_shape : tuple of int, optional
        Same rank as ``x`` and no smaller in any dimension. ``None`` gives
        the tight bounding box: one past the largest coordinate of each
        sparse dimension (0 when nothing is stored); dense dimensions keep
        their size.

    Raises
    ------
    ValueError
        ``new_shape`` has another rank, or a dimension smaller than ``x``'s.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 0, 1], [0, 1, 2, 0], [1, 0, 2, 3]], [1, 2, 3, 4], shape=(2, 3, 5), device="cpu")
    >>> reset_shape(x).shape
    (2, 3, 4)
    >>> reset_shape(x, (2, 3, 6)).shape
    (2, 3, 6)
    """
    _check_sparse(x, "x")
    be = backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    dev, xp = be.device, be.xp
    if new_shape is None:
        if coo.nnz and S:
            with be.scope():
                top = to_host(coo.coords.max(axis=1))  # sync: the bounding box
            sparse_shape = tuple(int(t) + 1 for t in top)
        else:
            sparse_shape = (0,) * S
        shape = sparse_shape + coo.shape[S:]
    else:
        shape = check_shape(new_shape, "new_shape")
        if len(shape) != x.ndim:
            raise ValueError(
                f"new_shape {shape} has rank {len(shape)} but x has rank {x.ndim} (shape {x.shape})"
            )
        for d, (new, old) in enumerate(zip(shape, x.shape)):
            if new < old:
                raise ValueError(
                    f"new_shape {shape} is smaller than x's shape {x.shape} in dimension {d} "
                    f"({new} < {old})"
                )
    from gpusparse.containers import COO
    if shape[S:] != coo.shape[S:]:
        from gpusparse.ops.shape._common import _for_padding
        coo = _for_padding(coo, be)
    data = coo.data
    if shape[S:] != coo.shape[S:]:
        with be.scope():
            data = xp.pad(data, [(0, 0)] + [(0, n - o) for n, o in zip(shape[S:], coo.shape[S:])],
                          mode="constant", constant_values=coo.fill_value)
    out = COO._from_parts(coo.coords, data, shape, coo.fill_value, dev, sorted=coo.sorted, unique=coo.unique)
    return convert.asformat(out, x.format, be=be) if x.format != "coo" else out


def fill_empty_rows(x, default_value):
    """Add ``default_value`` at ``[row, 0, ...]`` for every empty row (TF's ``sparse.fill_empty_rows``).

    Returns
    -------
    filled : sparse array
        Same shape and format, entries in row-major order (duplicates of
        uncoalesced input kept).
    empty_row_indicator : array of bool, shape (x.shape[0],)
        On ``x``'s device: True where the row had no stored entry.

    Raises
    ------
    ValueError
        ``x`` has no sparse dimension, or some row is empty and another
        dimension has size 0 (there is no ``[row, 0, ...]`` to fill).

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 2, 3], [1, 3, 0, 1]], [1, 2, 3, 4], shape=(5, 6), device="cpu")
    >>> filled, empty = fill_empty_rows(x, -1)
    >>> filled.coords.T.tolist(), filled.data.tolist(), empty.tolist()
    ([[0, 1], [0, 3], [1, 0], [2, 0], [3, 1], [4, 0]], [1, 2, -1, 3, 4, -1], [False, True, False, False, True])
    """
    _check_sparse(x, "x")
    if x.sparse_dim == 0:
        raise ValueError("fill_empty_rows needs at least one sparse dimension")
    value = normalize_fill_value(default_value, x.dtype) if np.ndim(default_value) == 0 else None
    be = backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    n_rows = x.shape[0]
    from gpusparse.containers import COO
    with be.scope():
        if value is None:
            block, _ = to_array(default_value, "default_value")
            block = to_device_array(block, dev) if array_device(block) != dev else block
            block = xp.broadcast_to(block.astype(x.dtype), x.shape[x.sparse_dim:])
        else:
            block = xp.full(x.shape[x.sparse_dim:], value, dtype=x.dtype)
        if x.format == "csr":
            counts = xp.diff(x.indptr.astype(np.int64))
        else:
            coo = canonical.reorder(_coo(x, be), be=be)
            counts = xp.bincount(coo.coords[0], minlength=n_rows)[:n_rows] if n_rows else xp.zeros(0, np.int64)
        empty = counts == 0
        missing = xp.nonzero(empty)[0]  # sync: number of empty rows
        n_new = int(missing.shape[0])
        if n_new and 0 in x.shape[1: x.sparse_dim]:
            raise ValueError(
                f"x has empty rows but no position [row, 0, ...] to fill: shape {x.shape}"
            )
        if n_new == 0:
            return x, empty
        if x.format == "csr":
            coo = convert.compressed_to_coo(x, be=be)
        # merge the new entries into the row-major order without a sort: an
        # empty row r goes where the entries of rows >= r begin
        ends = k.offsets(counts)
        new_pos = xp.take(ends, missing) + xp.arange(n_new, dtype=np.int64)
        shift = xp.cumsum(empty.astype(np.int64))  # empty rows up to and including r
        old_pos = xp.arange(coo.nnz, dtype=np.int64) + xp.take(shift, coo.coords[0]) if coo.nnz else xp.zeros(0, np.int64)
        total = coo.nnz + n_new
        coords = xp.zeros((x.sparse_dim, total), dtype=np.int64)
        coords[:, old_pos] = coo.coords
        coords[0, new_pos] = missing
        data = xp.empty((total,) + x.shape[x.sparse_dim:], dtype=x.dtype)
        data[old_pos] = coo.data
        data[new_pos] = block
    out = COO._from_parts(coords, data, x.shape, x.fill_value, dev, sorted=True, unique=coo.unique)
    return (convert.asformat(out, x.format, be=be) if x.format != "coo" else out), empty


def to_indicator(x, vocab_size):
    """A dense bool array marking the ids stored in ``x`` (TF's ``sparse.to_indicator``).

    The last dimension of ``x`` is replaced by one of length ``vocab_size``:
    ``out[c_0, ..., c_{n-1}, x[c_0, ..., c_n]] = True`` for every stored
    entry ``(c_0, ..., c_n)``. Repeated ids are allowed.

    Raises
    ------
    TypeError
        ``x`` does not hold integers.
    ValueError
        An id is negative or not below ``vocab_size``, or ``x`` has dense dimensions.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 1, 1, 1, 1, 1], [0, 1, 0, 1, 1, 1, 2], [0, 0, 3, 2, 3, 4, 1]],
    ...            [0, 10, 103, 150, 149, 150, 121], shape=(2, 3, 5), device="cpu")
    >>> out = to_indicator(x, 200)
    >>> out.shape, [tuple(map(int, t)) for t in zip(*out.nonzero())]
    ((2, 3, 200), [(0, 0, 0), (0, 1, 10), (1, 0, 103), (1, 1, 149), (1, 1, 150), (1, 2, 121)])
    """
    _check_sparse(x, "x")
    be = backend(x.device)
    ids, prefix, shape = _ids(x, vocab_size, "x", be)
    k, xp = be.kernels, be.xp
    with be.scope():
        out = xp.zeros(int(np.prod(shape)), dtype=bool)
        if ids.shape[0]:
            keys = k.linearize(xp.ascontiguousarray(xp.concatenate([prefix, ids.reshape(1, -1)])), shape)
            out[keys] = True
    return out.reshape(shape)


def _ids(x, vocab_size, argument, be):
    """Validated ids of ``x`` (int64), its coordinates but the last, and the output shape, on backend ``be``."""
    if x.dtype.kind not in "iu":
        raise TypeError(f"{argument} must hold integer ids, got {x.dtype.name}")
    if x.dense_dim:
        raise ValueError(f"{argument} must have no dense dimensions, got dense_dim={x.dense_dim}")
    if x.ndim == 0:
        raise ValueError(f"{argument} must have at least one dimension")
    vocab_size = operator.index(vocab_size)
    if vocab_size < 0:
        raise ValueError(f"vocab_size must be non-negative, got {vocab_size}")
    coo = _coo(x, be)
    xp = be.xp
    with be.scope():
        ids = coo.data.astype(np.int64)
        if coo.nnz:
            lo, hi = (int(v) for v in to_host(xp.stack([ids.min(), ids.max()])))  # sync: id range
            if lo < 0:
                raise ValueError(f"{argument} holds a negative id {lo}")
            if hi >= vocab_size:
                raise ValueError(f"vocab_size={vocab_size} must be larger than the largest id {hi} in {argument}")
        prefix = coo.coords[:-1]
    return ids, prefix, x.shape[:-1] + (vocab_size,)


def merge(sp_ids, sp_values, vocab_size):
    """Join a batch of feature ids and their values into one sparse array (TF's ``sparse.merge``).

    Parameters
    ----------
    sp_ids : sparse array of integers, or a list of them
        Ids; the last dimension of its coordinates is replaced by the id
        (with a list, one new dimension per array, in order).
    sp_values : sparse array
        The values, entry for entry with ``sp_ids`` (same shape and nnz).
    vocab_size : int or list of int
        Size of each new last dimension; larger than every id.

    Returns
    -------
    COO of shape ``sp_ids.shape[:-1] + (vocab_size,)`` in row-major order,
    with ``sp_values``' values and fill value.

    Examples
    --------
    >>> import gpusparse as gs
    >>> ids = gs.COO([[0, 1, 1, 1, 2, 2], [0, 0, 1, 2, 0, 1]], [0, 1, 4, 3, 0, 3], shape=(3, 3), device="cpu")
    >>> values = gs.COO(ids.coords, [-3.0, 1, 1, 4, 5, 9], shape=(3, 3), device="cpu")
    >>> out = merge(ids, values, 6)
    >>> out.coords.T.tolist(), out.data.tolist(), out.shape
    ([[0, 0], [1, 1], [1, 3], [1, 4], [2, 0], [2, 3]], [-3.0, 1.0, 4.0, 1.0, 5.0, 9.0], (3, 6))
    """
    from gpusparse.containers import COO
    many = isinstance(sp_ids, (list, tuple))
    id_list = list(sp_ids) if many else [sp_ids]
    sizes = list(vocab_size) if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    if many != isinstance(vocab_size, (list, tuple)) or len(sizes) != len(id_list):
        raise ValueError("sp_ids and vocab_size must both be single or lists of the same length")
    _check_sparse(sp_values, "sp_values")
    for i, ids in enumerate(id_list):
        _check_sparse(ids, f"sp_ids[{i}]" if many else "sp_ids")
        if ids.shape != sp_values.shape or ids.nnz != sp_values.nnz:
            raise ValueError(
                f"sp_ids{f'[{i}]' if many else ''} (shape {ids.shape}, nnz {ids.nnz}) and sp_values "
                f"(shape {sp_values.shape}, nnz {sp_values.nnz}) must hold the same entries"
            )
    be = backend_of(sp_values, *id_list)
    dev, xp = be.device, be.xp
    rows, prefix = [], None
    for i, (ids, size) in enumerate(zip(id_list, sizes)):
        values, pre, _ = _ids(ids, size, f"sp_ids[{i}]" if many else "sp_ids", be)
        prefix = pre if prefix is None else prefix
        rows.append(values.reshape(1, -1))
    values = _coo(sp_values, be)
    if sp_values.dense_dim:
        raise ValueError(f"sp_values must have no dense dimensions, got dense_dim={sp_values.dense_dim}")
    with be.scope():
        coords = xp.ascontiguousarray(xp.concatenate([prefix] + rows))
    shape = sp_values.shape[:-1] + tuple(operator.index(s) for s in sizes)
    out = COO._from_parts(coords, values.data, shape, values.fill_value, dev, sorted=False, unique=False)
    return canonical.reorder(out, be=be)


def retain(x, to_retain):
    """Keep the entries where ``to_retain`` is True (TF's ``sparse.retain``).

    Parameters
    ----------
    x : sparse array
    to_retain : array of bool, shape (nnz,)
        One flag per stored entry, in storage order.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 0, 2, 3], [1, 3, 0, 1]], [1, 2, 3, 4], shape=(4, 5), device="cpu")
    >>> y = retain(x, [True, False, False, True])
    >>> y.coords.T.tolist(), y.data.tolist()
    ([[0, 1], [3, 1]], [1, 4])
    """
    _check_sparse(x, "x")
    dev = x.device
    flags, _ = to_array(to_retain, "to_retain")
    if array_device(flags) != dev:
        flags = to_device_array(flags, dev)
    if flags.dtype != np.bool_:
        raise TypeError(f"to_retain must be a bool array, got {flags.dtype.name}")
    if flags.shape != (x.nnz,):
        raise ValueError(f"to_retain must have shape (nnz,) = ({x.nnz},), got {flags.shape}")
    return convert.keep_entries(x, flags, be=backend(dev))
