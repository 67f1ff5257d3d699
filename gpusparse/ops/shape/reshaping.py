"""New shapes for the same elements: ``reshape``, ``squeeze``, ``expand_dims``, ``broadcast_to``, ``resize``.

``reshape`` splits the old and new shapes into blocks of equal size and
re-linearises only the blocks that change; the order of the entries, and so
the sorted flag, is kept. A block whose size does not fit in 63 bits takes a
slow exact path through Python integers, never an overflow. Dense trailing
dimensions are kept where the new shape ends with them.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical
from gpusparse.ops._validate import check_shape
from gpusparse.ops.shape._common import (
    _FITS, _axes, _coo, _keep_format, _new_coo, _reduce_to_one, sparsify,
)

__all__ = ["broadcast_to", "expand_dims", "expand_dims_on", "reshape", "reshape_on", "resize", "squeeze"]


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
    return reshape_on(x, shape, backend(x.device))


def reshape_on(x, shape, be):
    """:func:`reshape` of ``x`` on its device's backend ``be``."""
    shape = _target_shape(shape, x.size)
    if shape == x.shape:
        return x
    coo = _coo(x, be)
    S, D = coo.sparse_dim, coo.dense_dim
    dense_shape = coo.shape[S:]
    if (D and len(shape) >= D and shape[len(shape) - D:] == dense_shape
            and math.prod(shape[: len(shape) - D]) == math.prod(coo.shape[:S])):
        new_sparse = shape[: len(shape) - D]
    else:
        coo = sparsify(coo, coo.ndim, be=be)
        new_sparse, dense_shape = shape, ()
    coords = _reshape_coords(coo.coords, coo.shape[: coo.sparse_dim], new_sparse, be)
    if not new_sparse:
        data = _reduce_to_one(coo, be)
        coords = coords[:, : data.shape[0]]
    else:
        data = coo.data
    out = _new_coo(coords, data, new_sparse + dense_shape, coo.fill_value, be,
                   sorted=coo.sorted or not new_sparse, unique=coo.unique or not new_sparse)
    return _keep_format(x, out, be)


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


def _reshape_coords(coords, old, new, be):
    """The coordinates ``coords`` of sparse shape ``old`` in sparse shape ``new``, on backend ``be``."""
    k, xp = be.kernels, be.xp
    n = int(coords.shape[1])
    with be.scope():
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
    be = backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    keep_sparse = [a for a in range(S) if a not in axes]
    shape = tuple(d for a, d in enumerate(coo.shape) if a not in axes)
    with be.scope():
        dense_shape = tuple(d for a, d in enumerate(coo.shape) if a >= S and a not in axes)
        data = coo.data.reshape((coo.nnz,) + dense_shape)
        coords = coo.coords[keep_sparse]
        if not keep_sparse and S:
            data = _reduce_to_one(_new_coo(coords, data, dense_shape, coo.fill_value, be,
                                           sorted=False, unique=False), be)
            coords = coords[:, : data.shape[0]]
    out = _new_coo(coords, data, shape, coo.fill_value, be,
                   sorted=coo.sorted or not keep_sparse, unique=coo.unique or not keep_sparse)
    return _keep_format(x, out, be) if len(keep_sparse) == 2 else out


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
    return expand_dims_on(x, axis, backend(x.device))


def expand_dims_on(x, axis, be):
    """:func:`expand_dims` of ``x`` on its device's backend ``be``."""
    out_ndim = x.ndim + (1 if isinstance(axis, (int, np.integer)) else len(tuple(axis)))
    axes = set(_axes(axis, out_ndim))
    coo = _coo(x, be)
    S = coo.sparse_dim
    order, it = [], iter(range(x.ndim))
    for p in range(out_ndim):
        order.append(None if p in axes else next(it))
    last_sparse = max((p for p, a in enumerate(order) if a is not None and a < S), default=-1)
    n_sparse = last_sparse + 1 if coo.dense_dim else out_ndim
    xp = be.xp
    with be.scope():
        zeros = xp.zeros(coo.nnz, dtype=np.int64)
        rows = [zeros if a is None else coo.coords[a] for a in order[:n_sparse]]
        coords = xp.stack(rows) if rows else xp.zeros((0, coo.nnz), dtype=np.int64)
        shape = tuple(1 if a is None else coo.shape[a] for a in order)
        data = coo.data.reshape((coo.nnz,) + shape[n_sparse:])
    return _new_coo(coords, data, shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)


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
    return broadcast_to_on(x, shape, None)


def broadcast_to_on(x, shape, be):
    """:func:`broadcast_to` of ``x`` on the backend ``be`` of its device (None: resolved when needed)."""
    shape = check_shape(shape)
    lead = len(shape) - x.ndim
    ok = lead >= 0 and all(d in (1, t) for d, t in zip(x.shape, shape[lead:]))
    if not ok:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape {shape}")
    if shape == x.shape:
        return x
    be = be or backend(x.device)
    coo = expand_dims_on(_coo(x, be), tuple(range(lead)), be) if lead else _coo(x, be)
    S = coo.sparse_dim
    k, xp = be.kernels, be.xp
    grow = [a for a in range(S) if coo.shape[a] != shape[a]]
    n = coo.nnz
    with be.scope():
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
    return _new_coo(coords, data, shape, coo.fill_value, be,
                    sorted=coo.sorted and not grow, unique=coo.unique)




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
    be = backend(x.device)
    coo = sparsify(x, x.ndim, be=be)
    size = math.prod(new_shape)
    k, xp = be.kernels, be.xp
    if math.prod(coo.shape) >= _FITS or size >= _FITS:
        raise ValueError(f"resize supports sizes below 2**63, got {x.shape} -> {new_shape}")
    with be.scope():
        keys = (k.linearize(coo.coords, coo.shape) if coo.ndim
                else xp.zeros(coo.nnz, dtype=np.int64))
        keep = xp.nonzero(keys < size)[0]  # sync: entries that stay
        keys = xp.take(keys, keep)
        data = xp.take(coo.data, keep, axis=0)
        coords = k.delinearize(keys, new_shape) if new_shape else xp.zeros((0, keys.shape[0]), np.int64)
    if not new_shape:
        data = _reduce_to_one(_new_coo(coords, data, (), coo.fill_value, be, sorted=False, unique=False), be)
        coords = coords[:, : data.shape[0]]
    return _new_coo(coords, data, new_shape, coo.fill_value, be,
                    sorted=coo.sorted or not new_shape, unique=coo.unique or not new_shape)
