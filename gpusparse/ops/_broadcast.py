"""NumPy broadcasting for sparse operands.

Broadcasting a sparse array replicates its stored entries: a new leading
dimension of size ``n``, or a sparse dimension of size 1 stretched to ``n``,
stores every entry ``n`` times with the new coordinate running over
``range(n)``. Dense trailing dimensions (hybrid arrays) broadcast their
blocks like NumPy arrays do. A dense operand is never broadcast to the
result shape: its elements are gathered at the stored coordinates.

Everything here works on COO components and runs on the operands' device.
"""

from __future__ import annotations

import math

import numpy as np

import gpusparse._memory as _memory
from gpusparse._backend import backend

__all__ = ["as_coo", "broadcast_coo", "broadcast_shapes", "gather_dense", "sparse_prefix"]


def broadcast_shapes(shapes, names) -> tuple:
    """NumPy's broadcast of ``shapes``, or ``ValueError`` naming the operands that clash.

    Examples
    --------
    >>> broadcast_shapes([(4,), (5, 1)], ["x", "y"])
    (5, 4)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim, 0, -1):  # counted from the end
        size, owner = 1, None
        for shape, name in zip(shapes, names):
            d = shape[-axis] if axis <= len(shape) else 1
            if d == 1:
                continue
            if size != 1 and d != size:
                described = ", ".join(f"{n} {tuple(sh)}" for sh, n in zip(shapes, names))
                raise ValueError(
                    f"operands could not be broadcast together: {described}; {owner} has size {size} and "
                    f"{name} has size {d} in dimension {-axis} (counted from the end)"
                )
            size, owner = d, name
        out.append(int(size))
    return tuple(out)


def as_coo(x, *, be=None):
    """``x`` (any format) as COO; compressed arrays are viewed without sorting (on backend ``be`` when given)."""
    if x.format == "coo":
        return x
    from gpusparse.ops.convert import compressed_to_coo
    return compressed_to_coo(x, be=be)


def sparse_prefix(x, ndim: int) -> int:
    """How many leading dimensions of an ``ndim``-d broadcast result ``x``'s sparse dimensions reach."""
    return ndim - x.ndim + x.sparse_dim


def _with_parts(x, coords, data, shape, *, sorted, unique):
    from gpusparse.containers import COO
    return COO._from_parts(coords, data, shape, x.fill_value, x.device, sorted=sorted, unique=unique)


def _require_entries(x, entries, sparse_dims, value_bytes, what):
    """Refuse (``MemoryError``) a replication of ``x`` into ``entries`` stored entries that cannot fit.

    Each entry holds ``sparse_dims`` int64 coordinates and ``value_bytes``
    of values; the replication builds them next to temporaries of about the
    same size (repeated coordinates, the coordinates of the new dimensions).
    """
    per_entry = 2 * (8 * sparse_dims + value_bytes) + 8
    _memory.require(entries * per_entry, x.device, f"{what} ({entries:.3g} stored entries)")


def _sparsify_dense_dims(x, count: int, target, *, be=None):
    """Turn the first ``count`` dense dimensions of COO ``x`` into sparse ones.

    ``target`` gives their sizes in the result; dimensions of size 1 in
    ``x`` are broadcast to them first. Every block element becomes an entry
    (elements equal to the fill value included), so flags are kept. ``be`` is
    the backend of ``x``'s device, when the caller has it already.
    """
    if count == 0:
        return x
    be = be or backend(x.device)
    k, xp = be.kernels, be.xp
    sd = x.sparse_dim
    dense = x.shape[sd:]
    sizes = tuple(target)
    data = x.data
    if dense[:count] != sizes:
        data = xp.ascontiguousarray(xp.broadcast_to(data, (x.nnz,) + sizes + dense[count:]))
    block = math.prod(sizes)
    n = x.nnz * block
    # Each new entry keeps the dense dimensions after the first ``count`` (its values); counting all
    # of ``dense`` per entry would charge the sparsified block twice (once in ``n``).
    _require_entries(x, n, sd + count, np.dtype(x.dtype).itemsize * math.prod(dense[count:]),
                     "making dense dimensions sparse")
    coords = xp.repeat(x.coords, block, axis=1)
    inner = xp.tile(xp.arange(block, dtype=np.int64), x.nnz)
    new_rows = k.delinearize(inner, sizes) if n else xp.zeros((count, 0), dtype=np.int64)
    coords = xp.ascontiguousarray(xp.concatenate([coords, new_rows], axis=0))
    data = data.reshape((n,) + dense[count:])
    shape = x.shape[:sd] + sizes + dense[count:]
    return _with_parts(x, coords, data, shape, sorted=x.sorted, unique=x.unique)


def broadcast_coo(x, shape, prefix: int, *, be=None):
    """COO ``x`` broadcast to ``shape`` with ``prefix`` sparse dimensions.

    ``prefix`` must be at least :func:`sparse_prefix` of ``x``; the dense
    dimensions in between become sparse. Entries are replicated along new
    and stretched sparse dimensions; the order stays row-major when the
    replicated dimensions lead, otherwise the result is marked unsorted.
    Dense trailing dimensions of size 1 are left for NumPy broadcasting (the
    data may have size-1 dimensions where ``shape`` has more). ``be`` is the
    backend of ``x``'s device, when the caller has it already.
    """
    shape = tuple(shape)
    ndim = len(shape)
    lead = ndim - x.ndim
    own = sparse_prefix(x, ndim)
    if prefix < own:
        raise ValueError(f"cannot broadcast a sparse array with {own} sparse dimensions to {prefix}")
    x = _sparsify_dense_dims(x, prefix - own, shape[own:prefix], be=be)
    # Now x's sparse dimensions are result dimensions [lead, prefix).
    stretched = [d for d in range(prefix) if d < lead or x.shape[d - lead] != shape[d]]
    sparse_shape = shape[:prefix]
    if not stretched:
        return _with_parts(x, x.coords, x.data, sparse_shape + x.shape[x.sparse_dim:],
                           sorted=x.sorted, unique=x.unique)
    be = be or backend(x.device)
    k, xp = be.kernels, be.xp
    sizes = tuple(shape[d] for d in stretched)
    reps = math.prod(sizes)
    n = x.nnz
    _require_entries(x, n * reps, prefix, np.dtype(x.dtype).itemsize * math.prod(x.shape[x.sparse_dim:]),
                     f"broadcasting a sparse operand of shape {x.shape} to {shape}")
    leading = stretched == list(range(len(stretched)))
    combos = xp.arange(reps, dtype=np.int64)
    if leading:  # all copies of entry 0, then of entry 1, ... per leading combination
        combo_of = xp.repeat(combos, n)
        rows = [xp.tile(x.coords[d - lead], reps) if d not in stretched else None for d in range(prefix)]
        data = xp.tile(x.data, (reps,) + (1,) * (x.data.ndim - 1)) if n else x.data[:0]
    else:
        combo_of = xp.tile(combos, n)
        rows = [xp.repeat(x.coords[d - lead], reps) if d not in stretched else None for d in range(prefix)]
        data = xp.repeat(x.data, reps, axis=0)
    new_coords = k.delinearize(combo_of, sizes) if n * reps else xp.zeros((len(sizes), 0), np.int64)
    for j, d in enumerate(stretched):
        rows[d] = new_coords[j]
    coords = xp.stack(rows) if prefix else xp.zeros((0, n * reps), dtype=np.int64)
    coords = xp.ascontiguousarray(coords)
    out_shape = sparse_shape + x.shape[x.sparse_dim:]
    return _with_parts(x, coords, xp.ascontiguousarray(data), out_shape,
                       sorted=x.sorted and leading, unique=x.unique)


def gather_dense(dense, coords, shape, prefix: int, xp):
    """The elements of dense ``dense`` (broadcastable to ``shape``) at sparse ``coords``.

    ``coords`` is ``(prefix, n)``; returns an array of shape
    ``(n, *trailing)`` where ``trailing`` is ``dense``'s part of the
    ``len(shape) - prefix`` trailing dimensions (size 1 where it broadcasts),
    ready to broadcast against values of shape ``(n, *shape[prefix:])``.
    """
    ndim = len(shape)
    aligned = dense.reshape((1,) * (ndim - dense.ndim) + tuple(dense.shape))
    keep = [d for d in range(prefix) if aligned.shape[d] != 1]
    squeezed = aligned[tuple(slice(None) if d in keep else 0 for d in range(prefix))]
    n = coords.shape[1]
    if not keep:
        return xp.broadcast_to(squeezed[None], (n,) + squeezed.shape)
    return squeezed[tuple(coords[d] for d in keep)]
