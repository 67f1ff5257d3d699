"""Operations along one axis and membership: ``diff``, ``take_along_axis``, ``isin``.

Each is built from operations gpusparse already has -- slicing and
elementwise subtraction (``diff``), advanced indexing (``take_along_axis``)
and the stored values' membership plus the fill value's (``isin``) -- so it
runs on both devices and never densifies a sparse operand.
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._backend import backend, backend_of
from gpusparse.ops import canonical, convert, elementwise
from gpusparse.ops._validate import check_axis

__all__ = ["diff", "isin", "take_along_axis"]


def _is_sparse(x) -> bool:
    from gpusparse.containers import SparseArray
    return isinstance(x, SparseArray)


def _require_sparse(x, name, argument="x"):
    if not _is_sparse(x):
        raise TypeError(f"{name}: {argument} must be a gpusparse array, got {type(x).__name__}")


def _axis_slice(axis, piece):
    return (slice(None),) * axis + (piece,)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (NumPy's and the array API's ``diff``).

    ``prepend`` and ``append`` (sparse arrays shaped like ``x`` except along
    ``axis``, with ``x``'s fill value) are joined to ``x`` first. Booleans
    differ by ``not_equal``, as in NumPy. The result is sparse: each step is
    ``x[..., 1:] - x[..., :-1]`` over the union of the stored patterns, with
    fill value ``fill - fill``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.asarray(np.array([[1, 0, 4], [0, 0, 2]]), device="cpu")
    >>> gs.diff(x).todense()
    array([[-1,  4],
           [ 0,  2]])
    >>> gs.diff(x, axis=0, n=1).todense()
    array([[-1,  0, -2]])
    """
    from gpusparse.ops.indexing import getitem
    from gpusparse.ops.shape.joining import concatenate_on
    _require_sparse(x, "diff")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"diff: n must be an integer, got {type(n).__name__}") from None
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension")
    axis = check_axis(axis, x.ndim)
    for argument, extra in (("prepend", prepend), ("append", append)):
        if extra is not None:
            _require_sparse(extra, "diff", argument)
    named = [(name, p) for name, p in (("prepend", prepend), ("x", x), ("append", append)) if p is not None]
    be = backend_of(*(p for _, p in named), what=tuple(name for name, _ in named))
    if len(named) > 1:
        x = concatenate_on([p for _, p in named], axis, be)
    step = np.not_equal if x.dtype == np.bool_ else np.subtract
    for _ in range(n):
        later = getitem(x, _axis_slice(axis, slice(1, None)), be=be)
        earlier = getitem(x, _axis_slice(axis, slice(None, -1)), be=be)
        x = elementwise.apply(step, elementwise.classify([later, earlier]), {}, be=be)
    return x


def take_along_axis(x, indices, /, *, axis=-1):
    """Pick elements of ``x`` along ``axis`` at ``indices`` (NumPy's and the array API's ``take_along_axis``).

    ``indices`` is an integer array with ``x``'s number of dimensions (dense
    on ``x``'s device, or sparse: an index list is dense in nature, so its
    elements are used); the other dimensions broadcast. Negative indices
    count from the end. The result is ``x[i0, ..., indices[...], ..., ik]``
    by advanced indexing, so it stays sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.asarray(np.array([[10, 0, 30], [0, 50, 0]]), device="cpu")
    >>> gs.take_along_axis(x, np.array([[2, 0], [1, 1]]), axis=1).todense()
    array([[30, 10],
           [50, 50]])
    """
    from gpusparse.ops.indexing import getitem
    _require_sparse(x, "take_along_axis")
    if x.ndim == 0:
        raise ValueError("take_along_axis: x must have at least one dimension")
    axis = check_axis(axis, x.ndim)
    be = backend(x.device)
    xp = be.xp
    with be.scope():
        index = convert.to_dense(indices, be=be) if _is_sparse(indices) else xp.asarray(indices)
        if index.dtype.kind not in "iu":
            raise IndexError(f"take_along_axis: indices must be integers, got dtype {index.dtype}")
        if index.ndim != x.ndim:
            raise ValueError(f"take_along_axis: indices must have x's {x.ndim} dimensions, got {index.ndim}")
        key = []
        for d, size in enumerate(x.shape):
            if d == axis:
                key.append(index.astype(np.int64, copy=False))
            else:
                key.append(xp.arange(size, dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - d - 1)))
    return getitem(x, tuple(key), be=be)


def _member_values(x2, be):
    """The distinct-or-not values of ``x2`` as a flat array on ``be``'s device: stored values, plus the fill if unstored."""
    xp = be.xp
    with be.scope():
        if not _is_sparse(x2):
            return xp.asarray(x2).reshape(-1)
        values = _coalesced(x2, be).data.reshape(-1)  # duplicates hold their sum
        if values.size < x2.size:  # some element is not stored: it holds the fill value
            values = xp.concatenate([values, xp.asarray([x2.fill_value], dtype=values.dtype)])
        return values


def isin(x1, x2, /, *, invert=False):
    """Whether each element of ``x1`` is among the elements of ``x2`` (the array API's ``isin``).

    ``x1`` and ``x2`` are sparse arrays on one device, or one of them a
    Python or NumPy scalar (a scalar ``x1`` gives a 0-d result); ``x2`` may
    also be a dense array of ``x1``'s device. The result has ``x1``'s
    pattern: its stored values are tested, and the fill value once (a
    one-element read on a CUDA device), so ``x1`` is never densified.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.asarray(np.array([0, 3, 5, 0]), device="cpu")
    >>> gs.isin(x, gs.asarray(np.array([5, 0, 9]), device="cpu")).todense()
    array([ True, False,  True,  True])
    >>> gs.isin(x, 3, invert=True).todense()
    array([ True, False,  True,  True])
    """
    from gpusparse.containers import COO
    from gpusparse.ops.creation import full
    if not _is_sparse(x1) and not _is_sparse(x2):
        raise TypeError("isin: x1 or x2 must be a gpusparse array")
    if not _is_sparse(x1):
        if not np.isscalar(x1):
            raise TypeError(f"isin: x1 must be a gpusparse array or a scalar, got {type(x1).__name__}")
        x1 = full((), x1, dtype=np.result_type(x1), device=x2.device)
    dev = x1.device
    be = backend(dev)
    x1 = _coalesced(x1, be)  # an element's value is the sum of its duplicates
    if _is_sparse(x2) and x2.device != dev:
        raise ValueError(f"isin: x1 is on {dev} and x2 on {x2.device}; move one explicitly with .to(device)")
    xp = be.xp
    values = _member_values(x2, be)
    invert = bool(invert)
    with be.scope():
        hit = xp.isin(x1.data, values, invert=invert)
        fill = bool(xp.isin(xp.asarray(x1.fill_value), values, invert=invert))  # sync: one bool
    if isinstance(x1, COO):
        out = COO._from_parts(x1.coords, hit, x1.shape, np.bool_(fill), dev, sorted=x1.sorted,
                              unique=x1.unique)
    else:
        out = type(x1)._from_parts(x1.indptr, x1.indices, hit, x1.shape, np.bool_(fill), dev)
    return elementwise.assembly.prune_on(out, be)


def _coalesced(x, be):
    """``x`` with each element stored at most once (``x.coalesce()``), on backend ``be``."""
    return canonical.coalesce(x, be=be) if x.format == "coo" else x
