"""The fill-value algebra: how a reduction folds values, and ``k`` copies of the fill value.

A :class:`Monoid` wraps an associative binary ufunc: its result dtype, the
array module's reduction over dense axes, and ``value`` folded with itself
``k`` times in closed form (``fill * k`` for a sum, ``fill ** k`` for a
product, once for an idempotent op such as max), for one scalar or for
every group at once. :func:`is_identity` tells whether folding a fill value
changes nothing; :func:`identity_scalar` is the result of reducing nothing.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._device import to_host

__all__ = ["IDEMPOTENT", "Monoid", "identity_scalar", "is_identity", "pairwise_fold", "segmented_fold"]


_KERNEL_OPS = {
    "add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
    "logical_or": "any", "logical_and": "all",
}
IDEMPOTENT = ("maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
              "bitwise_and", "bitwise_or", "gcd")


class Monoid:
    """An associative binary ufunc as a reduction."""

    def __init__(self, ufunc):
        if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
            raise TypeError(f"reduce needs a binary ufunc with one output, got {ufunc!r}")
        self.ufunc = ufunc
        self.name = ufunc.__name__
        self.kernel_op = _KERNEL_OPS.get(self.name)

    def result_dtype(self, dtype, requested):
        if requested is not None:
            return np.dtype(requested)  # (checked, in native byte order, by value_dtype)
        probe = np.ones(1, dtype=dtype)
        return self.ufunc.reduce(probe).dtype if self.name not in ("logical_or", "logical_and") \
            else np.dtype(np.bool_)

    def fold(self, a, b, xp):
        return self._f(xp)(a, b)

    def _f(self, xp):
        return getattr(xp, self.name) if xp is not np else self.ufunc

    def reduce_axis(self, data, axes, dtype, xp):
        """Reduce ``data`` over ``axes`` with the array module."""
        if not axes:
            return data
        if self.name in ("add", "multiply"):
            return getattr(xp, "sum" if self.name == "add" else "prod")(data, axis=axes, dtype=dtype)
        if self.name in ("maximum", "minimum"):
            return getattr(xp, "max" if self.name == "maximum" else "min")(data, axis=axes)
        if self.name in ("logical_or", "logical_and"):
            return getattr(xp, "any" if self.name == "logical_or" else "all")(data, axis=axes)
        if xp is np:
            return self.ufunc.reduce(data, axis=axes, dtype=dtype)
        # CuPy's ufuncs reduce only for add and multiply: fold pairwise instead.
        return pairwise_fold(self._f(xp), self.ufunc.identity, data, axes, dtype, xp)

    def reduce_segments(self, values, starts, xp):
        """``ufunc.reduceat(values, starts[:-1], axis=0)`` for non-empty segments ``starts[i]:starts[i+1]``.

        NumPy's own ``reduceat``; CuPy has none: :func:`segmented_fold`.
        """
        if xp is np:
            return self.ufunc.reduceat(values, starts[:-1], axis=0)
        return segmented_fold(self._f(xp), values, starts, xp)

    def power(self, value, k: int):
        """``value`` folded with itself ``k >= 1`` times (a host scalar)."""
        with np.errstate(all="ignore"):
            dt = np.asarray(value).dtype
            if self.name == "add":
                return _wrap_scalar(_py(value) * k, dt)
            if self.name == "multiply":
                if dt.kind in "iu":
                    return _wrap_scalar(pow(int(value), k, 1 << (8 * dt.itemsize)), dt)
                return np.asarray(np.power(value, dt.type(k) if dt.kind != "b" else k)).astype(dt)[()]
            if self.name in IDEMPOTENT:
                return np.asarray(value).astype(dt)[()]
            result, base, k = None, np.asarray(value).astype(dt), int(k)
            while k:
                if k & 1:
                    result = base if result is None else self.ufunc(result, base)
                k >>= 1
                if k:
                    base = self.ufunc(base, base)
            return np.asarray(result).astype(dt)[()]

    def power_array(self, value, counts, dtype, xp):
        """``value`` folded ``counts[i]`` times (device array of int64 >= 1) for every i."""
        if self.name == "add":
            return counts.astype(dtype) * dtype.type(value) if dtype.kind != "b" else counts > 0
        if self.name == "multiply":
            if dtype.kind == "b":
                return xp.full(counts.shape, bool(value), dtype=dtype)
            return xp.power(xp.asarray(dtype.type(value)), counts.astype(dtype)).astype(dtype)
        if self.name in IDEMPOTENT:
            return xp.full(counts.shape, value, dtype=dtype)
        f = self._f(xp)
        # Binary exponentiation without an identity: ``have`` marks where
        # ``result`` holds a value yet.
        base = xp.full(counts.shape, value, dtype=dtype)
        result = base.copy()
        have = xp.zeros(counts.shape, dtype=bool)
        remaining = counts.astype(np.int64)
        while bool(to_host((remaining > 0).any())):  # sync: more doubling rounds?
            bit = (remaining & 1).astype(bool)
            result = xp.where(bit & have, f(result, base), xp.where(bit, base, result))
            have |= bit
            remaining = remaining >> 1
            base = f(base, base)
        return result.astype(dtype)


def _py(value):
    v = np.asarray(value)
    return int(v) if v.dtype.kind in "iub" else complex(v) if v.dtype.kind == "c" else float(v)


def _wrap_scalar(value, dt):
    """A Python number as ``dt``, wrapping integers modulo 2**bits as NumPy does."""
    if dt.kind in "iu":
        bits = 8 * dt.itemsize
        value = int(value) % (1 << bits)
        if dt.kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
        return dt.type(value)
    if dt.kind == "b":
        return np.bool_(value)
    return np.asarray(value).astype(dt)[()]


def is_identity(mono, fill, dtype) -> bool:
    """Whether folding ``fill`` into any value leaves it unchanged (the op's identity)."""
    value = np.asarray(fill).astype(dtype)[()]
    if mono.name == "add":  # (the sign of a zero sum is not tracked)
        return value == 0 and dtype.kind != "b"
    if mono.name == "multiply":
        return value == 1
    if mono.name == "maximum":
        return dtype.kind == "f" and value == -np.inf or dtype.kind in "iu" and value == np.iinfo(dtype).min
    if mono.name == "minimum":
        return dtype.kind == "f" and value == np.inf or dtype.kind in "iu" and value == np.iinfo(dtype).max
    if mono.name == "logical_or":
        return not value
    if mono.name == "logical_and":
        return bool(value)
    return False


def identity_scalar(mono, dtype):
    """The result of reducing no element: the ufunc's identity as ``dtype`` (0 without one)."""
    identity = mono.ufunc.identity
    if identity is None:
        return np.zeros((), dtype)[()]
    return np.asarray(identity).astype(dtype)[()]


def pairwise_fold(f, identity, data, axes, dtype, xp):
    """``f.reduce`` over ``axes`` as ``log2(n)`` elementwise calls of ``f`` on adjacent pairs.

    For array modules whose ufuncs have no ``reduce`` (CuPy's, but for add
    and multiply). The operands keep their order; ``identity`` (the
    ufunc's, or None) is the result over an empty axis, where None raises
    NumPy's ``ValueError``.

    Examples
    --------
    >>> pairwise_fold(np.bitwise_xor, 0, np.array([[1, 2, 4], [8, 8, 3]]), (1,), None, np)
    array([7, 3])
    """
    axes = tuple(sorted(a % data.ndim for a in axes))
    kept = [a for a in range(data.ndim) if a not in axes]
    out_shape = tuple(data.shape[a] for a in kept)
    n = math.prod(data.shape[a] for a in axes)
    x = xp.transpose(data, kept + list(axes)).reshape(out_shape + (n,))
    x = x.astype(dtype or x.dtype, copy=False)
    if n == 0:
        if identity is None:
            raise ValueError(f"zero-size array to reduction operation {f.__name__} which has no identity")
        return xp.full(out_shape, identity, dtype=x.dtype)
    while x.shape[-1] > 1:
        m = x.shape[-1]
        pairs = f(x[..., 0:m - 1:2], x[..., 1:m:2]).astype(x.dtype, copy=False)
        x = xp.concatenate([pairs, x[..., m - 1:]], axis=-1) if m % 2 else pairs
    return x[..., 0]


def segmented_fold(f, values, starts, xp):
    """``f.reduceat(values, starts[:-1], axis=0)`` for non-empty segments, by elementwise calls of ``f``.

    In round ``r`` every position ``p`` of a segment with ``p % 2**(r+1) == 0``
    takes ``f(v[p], v[p + 2**r])`` where that position is in the segment, so
    after ``log2`` of the longest segment rounds (one sync to know it) each
    segment's first position holds its fold, the operands in order.

    Examples
    --------
    >>> segmented_fold(np.bitwise_or, np.array([1, 2, 4, 8, 16]), np.array([0, 1, 4, 5]), np)
    array([ 1, 14, 16])
    """
    n, n_seg = values.shape[0], starts.size - 1
    lengths = starts[1:] - starts[:-1]
    positions = xp.arange(n, dtype=np.int64)
    segment = xp.searchsorted(starts[1:], positions, side="right")
    offset = positions - starts[segment]
    length = lengths[segment]
    folded = values.copy()
    longest = int(to_host(lengths.max())) if n_seg else 0  # sync: how many rounds
    stride = 1
    while stride < longest:
        at = xp.nonzero((offset % (2 * stride) == 0) & (offset + stride < length))[0]
        folded[at] = f(folded[at], folded[at + stride]).astype(folded.dtype, copy=False)
        stride *= 2
    return folded[starts[:-1]]
