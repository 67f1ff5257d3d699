"""``astype``: values and fill value cast under NumPy's ``casting`` rule."""

from __future__ import annotations

import numpy as np

from gpusparse._dtypes import check_value_dtype
from gpusparse.ops import convert

__all__ = ["astype"]


def astype(x, dtype, casting: str = "unsafe", copy: bool = True):
    """``x`` with values and fill value cast to ``dtype`` under NumPy's ``casting`` rule.

    Parameters
    ----------
    casting : {"no", "equiv", "safe", "same_kind", "unsafe"}
        As in ``np.ndarray.astype``; a cast the rule forbids raises
        ``TypeError``.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0]], [1.5], shape=(2,), device="cpu")
    >>> gs.astype(x, "int32").todense()
    array([1, 0], dtype=int32)
    >>> gs.astype(x, "int32", casting="safe")
    Traceback (most recent call last):
        ...
    TypeError: astype: cannot cast float64 to int32 under casting='safe'
    """
    target = check_value_dtype(dtype, "dtype")
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got {casting!r}")
    if not np.can_cast(x.dtype, target, casting=casting):
        raise TypeError(f"astype: cannot cast {x.dtype} to {target} under casting={casting!r}")
    return convert.astype(x, target, copy=copy)
