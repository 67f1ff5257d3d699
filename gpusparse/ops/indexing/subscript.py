"""``x[key]``: the entry point, which picks a fast path or the general one."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops.indexing.fast_paths import _compressed_fast, _coo_row_select
from gpusparse.ops.indexing.general import _select
from gpusparse.ops.indexing.keys import _normalise, _raw_items

__all__ = ["getitem"]


def getitem(x, key, *, be=None):
    """``x[key]`` with NumPy's semantics; see :mod:`gpusparse.ops.indexing`.

    Parameters
    ----------
    x : SparseArray
    key : index
        Integers, slices, ``None``, ``...``, integer or boolean arrays.
    be : Backend, optional
        The backend of ``x``'s device, when the caller has it already.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(12).reshape(3, 4) % 5, device="cpu")
    >>> x[1].todense()
    array([4, 0, 1, 2])
    >>> x[::-1, [0, 3]].todense()
    array([[3, 1],
           [4, 2],
           [0, 3]])
    >>> x[x.todense() > 2].todense()
    array([3, 4, 3, 4])
    >>> x[2, 0]
    np.int64(3)
    """
    if isinstance(key, tuple) and len(key) == 0:
        return x  # also for 0-d arrays (as CuPy, torch, JAX and the array API; NumPy gives a scalar)
    be = be or backend(x.device)
    raw = _raw_items(x, key)
    bools = [i for i, (kind, _) in enumerate(raw) if kind == "bool0"]
    if bools:  # a 0-d boolean adds an axis indexed by [0] (True) or [] (False)
        from gpusparse.ops.shape.reshaping import expand_dims_on
        at = bools[0]
        axis = sum(p.ndim if kind == "boolarr" else 1 for kind, p in raw[:at]
                   if kind in ("int", "slice", "intarr", "boolarr"))
        with be.scope():
            index = be.xp.zeros(int(raw[at][1]), dtype=np.int64)
        rebuilt = [None if kind == "new" else Ellipsis if kind == "ellipsis" else payload
                   for kind, payload in raw]
        rebuilt[at] = index
        return getitem(expand_dims_on(x, axis, be), tuple(rebuilt), be=be)
    spec = _normalise(x, raw, be)
    with be.scope():
        if x.format != "coo":
            fast = _compressed_fast(x, spec, be)
            if fast is not None:
                return fast
        elif x.sorted:
            fast = _coo_row_select(x, spec, be)
            if fast is not None:
                return fast
        return _select(x, spec, be)
