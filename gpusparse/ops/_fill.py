"""Stored entries equal to a fill value: finding them and dropping them.

Shared by the elementwise operations and the reductions, which both store
no entry equal to the result's fill value (pydata sparse's rule). NaN
equals NaN here, and -0.0 differs from 0.0 (as in pydata sparse: ``-x`` of
an array holding 0.0 stores -0.0, which ``1 / x`` turns into -inf).
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._device import to_host

__all__ = ["drop", "equals_exactly", "fill_mask", "is_nan", "kept"]

_WORDS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_nan(value) -> bool:
    return bool(np.isnan(value)) if np.asarray(value).dtype.kind in "fc" else False


def equals_exactly(values, value, xp, *, signed_zeros=True):
    """``values == value`` for real float ``values`` and a number ``value`` (not NaN), by bit patterns.

    Exact on every device: CuPy compiles its kernels with ``-ftz=true``, so
    on a GPU a float32 comparison takes a subnormal number for zero; bit
    patterns do not. ``signed_zeros=False`` lets ``-0.0`` equal ``0.0`` (the
    ``==`` of floats), True tells them apart.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([0.0, -0.0, 1e-45, 2.0], dtype=np.float32)
    >>> equals_exactly(v, 0.0, np).tolist(), equals_exactly(v, 0.0, np, signed_zeros=False).tolist()
    ([True, False, False, False], [True, True, False, False])
    """
    word = _WORDS[values.dtype.itemsize]
    bits = values.view(word)
    target = np.asarray(value).astype(values.dtype)
    if not signed_zeros and target == 0:
        magnitude = word(np.iinfo(word).max >> 1)  # every bit but the sign
        return (bits & magnitude) == 0
    return bits == target.view(word)[()]


def fill_mask(values, fill, xp):
    """True where ``values`` equals ``fill`` (NaN equals NaN, -0.0 differs from 0.0), per row of blocks.

    Signed zeros are told apart as pydata sparse does: ``-x`` of an array
    holding 0.0 stores -0.0, which ``1 / x`` would turn into -inf.
    """
    if is_nan(fill):
        eq = xp.isnan(values)
    elif values.dtype.kind == "f" and np.asarray(fill).dtype == values.dtype:
        eq = equals_exactly(values, fill, xp)
    elif values.dtype.kind == "c" and np.asarray(fill).dtype == values.dtype:
        eq = equals_exactly(values.real, fill.real, xp) & equals_exactly(values.imag, fill.imag, xp)
    else:
        eq = values == fill
        kind = np.asarray(fill).dtype.kind
        if kind in "fc" and fill == 0:
            if kind == "f":
                eq &= xp.signbit(values) == np.signbit(fill)
            else:
                eq &= (xp.signbit(values.real) == np.signbit(fill.real)) & \
                      (xp.signbit(values.imag) == np.signbit(fill.imag))
    if eq.ndim > 1:  # explicit width: -1 is ambiguous when there are no rows
        eq = eq.reshape(eq.shape[0], math.prod(eq.shape[1:])).all(axis=1)
    return eq


def kept(values, fill, xp):
    """A bool mask of the entries whose value (whole block) differs from ``fill``; None if all do."""
    if values.shape[0] == 0:
        return None
    if not is_nan(fill) and values.ndim == 1:  # the common case: one comparison pass
        equal = values == fill
        if not bool(to_host(equal.any())):  # sync: anything to drop?
            return None
    keep = ~fill_mask(values, fill, xp)
    if bool(to_host(keep.all())):  # sync: anything to drop?
        return None
    return keep


def drop(coords, values, fill, xp):
    """Entries whose value (whole block) differs from ``fill``."""
    keep = kept(values, fill, xp)
    if keep is None:
        return coords, values
    index = xp.nonzero(keep)[0]  # sync: the number of entries kept
    return xp.take(coords, index, axis=1), xp.take(values, index, axis=0)
