"""The COO view that every shape operation works on, and the helpers they share.

Building a COO result from parts, normalising lists of axes, comparing and
checking fill values, summing the entries of an array with no sparse
dimension, keeping a compressed format where the result allows it, and
:func:`sparsify`, which makes leading dense dimensions sparse (a dense
dimension that has to move in front of a sparse one goes through it).

The helpers take the :class:`~gpusparse._backend.Backend` that their
operation resolved once at its entry as ``be``.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import canonical, convert
from gpusparse.ops._validate import check_axis

__all__ = ["sparsify"]

#: Sizes from here on do not fit int64 linear keys.
_FITS = 2**63


def _coo(x, be):
    """The COO view of ``x`` (itself when COO)."""
    return x if x.format == "coo" else convert.compressed_to_coo(x, be=be)


def _new_coo(coords, data, shape, fill, be, *, sorted, unique):
    """A COO array on ``be``'s device from contiguous copies of its parts."""
    from gpusparse.containers import COO
    xp = be.xp
    return COO._from_parts(xp.ascontiguousarray(coords, dtype=np.int64), xp.ascontiguousarray(data),
                           tuple(shape), fill, be.device, sorted=sorted, unique=unique)


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


def _for_padding(coo, be):
    """``coo`` ready for its dense blocks to be padded with the fill value.

    Duplicates add up their blocks, padding included, so a nonzero fill
    needs unique coordinates first.
    """
    fill = coo.fill_value
    if coo.unique or (fill == 0 and fill == fill):
        return coo
    return canonical.coalesce(coo, be=be)


def _zero_fill(x, what):
    fill = x.fill_value
    if not (fill == 0 and fill == fill):
        raise ValueError(f"{what} needs a zero fill value, got {fill!r}")


def _reduce_to_one(coo, be):
    """A COO with no sparse dimension keeps at most one entry: sum the rest."""
    n = coo.nnz
    if n <= 1:
        return coo.data
    return canonical.sum_segments(coo.data, be.xp.asarray([0, n], dtype=np.int64), None, be.kernels)


def _keep_format(x, out, be):
    """Compressed input, result with exactly two sparse dimensions: same format."""
    if x.format != "coo" and out.sparse_dim == 2:
        return convert.asformat(out, x.format, be=be)
    return out


def sparsify(x, sparse_dim, *, be=None):
    """``x`` as COO with its first dense dimensions made sparse, ``sparse_dim`` in all.

    Each stored block becomes one entry per element of the block (fill-valued
    elements included), so the result stands for the same dense array. Order
    and uniqueness are kept.

    Parameters
    ----------
    x : SparseArray
    sparse_dim : int
        The number of sparse dimensions of the result.
    be : Backend, optional
        The backend of ``x``'s device, when the caller has it already.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[1]], [[5.0, 0.0]], shape=(2, 2), device="cpu")
    >>> y = sparsify(x, 2)
    >>> y.coords, y.data
    (array([[1, 1],
           [0, 1]]), array([5., 0.]))
    """
    be = be or backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    if sparse_dim <= S:
        return coo
    if sparse_dim > coo.ndim:
        raise ValueError(f"sparse_dim must be at most ndim={coo.ndim}, got {sparse_dim}")
    k, xp = be.kernels, be.xp
    block = coo.shape[S:sparse_dim]
    m, n = math.prod(block), coo.nnz
    with be.scope():
        outer = xp.repeat(coo.coords, m, axis=1)
        inner = k.delinearize(xp.arange(m, dtype=np.int64), block) if m else xp.zeros((len(block), 0), np.int64)
        inner = xp.tile(inner, (1, n))
        coords = xp.concatenate([outer, inner], axis=0)
        data = coo.data.reshape((n * m,) + coo.shape[sparse_dim:])
    return _new_coo(coords, data, coo.shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)
