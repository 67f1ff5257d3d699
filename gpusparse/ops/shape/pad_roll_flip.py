"""Moving elements within the shape: ``pad`` (with the fill value), ``roll`` and ``flip``.

Sparse dimensions shift or mirror the coordinates (``roll`` and ``flip``
leave them unsorted), dense dimensions go through the array module.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops._validate import check_axis
from gpusparse.ops.shape._common import _axes, _coo, _for_padding, _keep_format, _new_coo, _same_fill
from gpusparse.ops.shape.reshaping import reshape_on

__all__ = ["flip", "pad", "roll"]


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
    be = backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    if any(w != (0, 0) for w in widths[S:]):
        coo = _for_padding(coo, be)
    xp = be.xp
    shape = tuple(d + a + b for d, (a, b) in zip(coo.shape, widths))
    with be.scope():
        coords = coo.coords
        if any(widths[d][0] for d in range(S)):
            coords = coords + xp.asarray([widths[d][0] for d in range(S)], dtype=np.int64).reshape(-1, 1)
        data = coo.data
        if any(w != (0, 0) for w in widths[S:]):
            data = xp.pad(data, [(0, 0)] + widths[S:], mode="constant", constant_values=x.fill_value)
    out = _new_coo(coords, data, shape, coo.fill_value, be, sorted=coo.sorted, unique=coo.unique)
    return _keep_format(x, out, be)


def roll(x, shift, axis=None):
    """Roll elements along axes (NumPy's ``roll``; the flattened array when ``axis`` is None).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> roll(gs.fromdense(np.array([1, 0, 2]), device="cpu"), 1).todense()
    array([2, 1, 0])
    """
    be = backend(x.device)
    if axis is None:
        return reshape_on(_roll(reshape_on(x, (-1,), be), shift, 0, be), x.shape, be)
    return _roll(x, shift, axis, be)


def _roll(x, shift, axis, be):
    """:func:`roll` of ``x`` along ``axis`` (not None) on its device's backend ``be``."""
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = {}
    for s, a in zip(shifts.reshape(-1), axes.reshape(-1)):
        a = check_axis(int(a), x.ndim)
        total[a] = total.get(a, 0) + int(s)
    total = {a: s % x.shape[a] for a, s in total.items() if x.shape[a] and s % x.shape[a]}
    if not total:
        return x
    coo = _coo(x, be)
    S = coo.sparse_dim
    xp = be.xp
    with be.scope():
        coords = coo.coords.copy() if any(a < S for a in total) else coo.coords
        data = coo.data
        for a, s in total.items():
            if a < S:
                coords[a] = (coords[a] + s) % coo.shape[a]
            else:
                data = xp.roll(data, s, axis=a - S + 1)
    out = _new_coo(coords, data, coo.shape, coo.fill_value, be,
                   sorted=coo.sorted and not any(a < S for a in total), unique=coo.unique)
    return _keep_format(x, out, be)


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
    be = backend(x.device)
    coo = _coo(x, be)
    S = coo.sparse_dim
    xp = be.xp
    with be.scope():
        coords = coo.coords.copy() if any(a < S for a in axes) else coo.coords
        for a in axes:
            if a < S:
                coords[a] = (coo.shape[a] - 1) - coords[a]
        dense_axes = tuple(a - S + 1 for a in axes if a >= S)
        data = xp.flip(coo.data, axis=dense_axes) if dense_axes else coo.data
    out = _new_coo(coords, data, coo.shape, coo.fill_value, be,
                   sorted=coo.sorted and not any(a < S for a in axes), unique=coo.unique)
    return _keep_format(x, out, be)
