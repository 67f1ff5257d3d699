"""Splitting an array into pieces along an axis: ``split`` and ``array_split``.

Two or more disjoint pieces of a COO array along a sparse axis come from one
pass over the entries (piece ids, a stable sort, cuts); anything else is a
slice per piece.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import canonical
from gpusparse.ops._validate import check_axis
from gpusparse.ops.shape._common import _new_coo

__all__ = ["array_split", "split"]


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
    from gpusparse.ops.indexing.subscript import getitem
    lead = (slice(None),) * axis
    disjoint = all(max(a1, b1) <= a2 for (a1, b1), (a2, _) in zip(bounds[:-1], bounds[1:]))
    be = backend(x.device)
    if x.format != "coo" or axis >= x.sparse_dim or len(bounds) <= 2 or not disjoint:
        return [getitem(x, lead + (slice(a, max(a, b)),), be=be) for a, b in bounds]
    # one pass over the entries for many pieces: piece ids, a stable sort, cuts
    k, xp = be.kernels, be.xp
    with be.scope():
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
        out.append(_new_coo(coords[:, at: at + count], data[at: at + count], shape, x.fill_value, be,
                            sorted=x.sorted, unique=x.unique))
        at += count
    return out
