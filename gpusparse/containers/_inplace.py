"""In-place operations of sparse arrays: ``x += y``, ``out=``, and torch's ``add_``, ``zero_``, ...

:class:`InPlaceMixin` is a base of :class:`~gpusparse.containers.SparseArray`.
Every method computes its result out of place (``gpusparse.ops``) and hands
it to :meth:`InPlaceMixin._assign`, the one step that makes the array hold
it; the rules (shapes, casting, formats) live in :mod:`gpusparse.ops.inplace`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["InPlaceMixin"]


class InPlaceMixin:
    """NumPy's in-place operators and torch's in-place methods (each returns ``self``)."""

    def _assign(self, result, *, name="", casting="same_kind", shape=None):
        """Make this array hold ``result``; the one step of every in-place operation.

        ``result`` is checked and converted to this array's shape (NumPy's
        broadcasting of outputs; ``shape`` to require another one exactly),
        dtype (``casting`` rule) and format by
        :func:`gpusparse.ops.inplace.prepare`; then this object's whole
        state -- components, shape, fill value, flags, and anything derived
        from them -- is replaced by the result's. Nothing is written into
        the old component arrays: views taken from them before keep the
        old values. Returns ``self``.
        """
        from gpusparse.ops import inplace
        result = inplace.prepare(self, result, name, casting, shape)
        if result is not self:
            state = dict(vars(result))
            vars(self).clear()
            vars(self).update(state)
        return self

    def _iop(self, name, *args):
        """``x op= y``: NumPy's ``ufunc(x, y, out=x)``."""
        from gpusparse.ops import _numpy_ufuncs
        return _numpy_ufuncs.array_ufunc(getattr(np, name), "__call__", (self,) + args, {"out": (self,)})

    def __iadd__(self, other):
        return self._iop("add", other)

    def __isub__(self, other):
        return self._iop("subtract", other)

    def __imul__(self, other):
        return self._iop("multiply", other)

    def __itruediv__(self, other):
        return self._iop("true_divide", other)

    def __ifloordiv__(self, other):
        return self._iop("floor_divide", other)

    def __imod__(self, other):
        return self._iop("remainder", other)

    def __ipow__(self, other):
        return self._iop(*self._power(other))

    def __iand__(self, other):
        return self._iop("bitwise_and", other)

    def __ior__(self, other):
        return self._iop("bitwise_or", other)

    def __ixor__(self, other):
        return self._iop("bitwise_xor", other)

    def __ilshift__(self, other):
        return self._iop("left_shift", other)

    def __irshift__(self, other):
        return self._iop("right_shift", other)

    def __imatmul__(self, other):
        """``x @= y``: the product must have ``x``'s shape exactly and be sparse (NumPy's rule)."""
        return self._assign(self @ other, name="matmul", shape=self._shape)

    # torch's in-place methods: each returns self (see gpusparse.ops.inplace).
    def add_(self, other, *, alpha=1):
        """``self += alpha * other`` (torch's ``add_``); returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), device="cpu")
        >>> x.add_(x, alpha=2) is x, x.todense()
        (True, array([3., 0., 6.]))
        """
        from gpusparse.ops import inplace
        return self._assign(inplace.scaled(np.add, self, other, alpha), name="add_")

    def sub_(self, other, *, alpha=1):
        """``self -= alpha * other`` (torch's ``sub_``); returns ``self``."""
        from gpusparse.ops import inplace
        return self._assign(inplace.scaled(np.subtract, self, other, alpha), name="sub_")

    def mul_(self, other):
        """``self *= other`` (torch's ``mul_``); returns ``self``."""
        return self._iop("multiply", other)

    def div_(self, other, *, rounding_mode=None):
        """``self /= other`` rounded by ``rounding_mode`` (None, ``"trunc"``, ``"floor"``; torch's ``div_``)."""
        from gpusparse.ops import inplace
        return self._assign(inplace.divided(self, other, rounding_mode), name="div_")

    def floor_divide_(self, other):
        """``self //= other`` (torch's ``floor_divide_``); returns ``self``."""
        return self._iop("floor_divide", other)

    def neg_(self):
        """``self = -self`` (torch's ``neg_``); returns ``self``."""
        return self._iop("negative")

    negative_ = neg_

    def asin_(self):
        """``self = arcsin(self)`` (torch's ``asin_``; uncoalesced input is coalesced, torch refuses it)."""
        return self._iop("arcsin")

    arcsin_ = asin_

    def log1p_(self):
        """``self = log1p(self)`` (torch's ``log1p_``); returns ``self``."""
        return self._iop("log1p")

    def deg2rad_(self):
        """Degrees to radians in place (torch's ``deg2rad_``); returns ``self``."""
        return self._iop("deg2rad")

    def rad2deg_(self):
        """Radians to degrees in place (torch's ``rad2deg_``); returns ``self``."""
        return self._iop("rad2deg")

    def zero_(self):
        """Every element zero: no stored entries, fill value 0 (torch's ``zero_``); returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), fill_value=5.0, device="cpu")
        >>> x.zero_().nnz, x.fill_value
        (0, np.float64(0.0))
        """
        from gpusparse.ops import inplace
        return self._assign(inplace.emptied(self, fill_value=0), name="zero_")

    def copy_(self, src):
        """The elements of ``src`` (any format and dtype, cast unsafely; any device) in this array's
        format and dtype (torch's ``copy_``); ``src`` broadcasts to this array's shape. Returns ``self``."""
        from gpusparse.ops import inplace
        return self._assign(inplace.copied(self, src), name="copy_", casting="unsafe")

    def t_(self):
        """Transpose a 0-, 1- or 2-D array in place (torch's ``t_``); returns ``self``."""
        from gpusparse.ops import inplace
        result = inplace.transposed(self)
        return self._assign(result, name="t_", shape=result.shape)

    def transpose_(self, dim0, dim1):
        """Swap axes ``dim0`` and ``dim1`` in place (torch's ``transpose_``); returns ``self``."""
        from gpusparse.ops import inplace
        result = inplace.transposed(self, dim0, dim1)
        return self._assign(result, name="transpose_", shape=result.shape)

    def sparse_resize_(self, size, sparse_dim, dense_dim):
        """Resize keeping the stored entries (torch's ``sparse_resize_``, with its rules).

        With stored entries, ``sparse_dim`` and ``dense_dim`` must stay and
        no dimension may shrink; an array without stored entries takes any
        ``size``. New elements of grown dense dimensions hold the fill value.
        ``len(size) == sparse_dim + dense_dim``. Returns ``self``.

        Examples
        --------
        >>> import gpusparse as gs
        >>> x = gs.COO([[0, 1]], [1.0, 2.0], shape=(2,), device="cpu")
        >>> x.sparse_resize_((4,), 1, 0).shape
        (4,)
        >>> x.sparse_resize_((1,), 1, 0)
        Traceback (most recent call last):
        ...
        ValueError: sparse_resize_: shrinking the size of sparse dimensions (from [4] to [1]) of an array with stored entries is not supported (torch's rule); use sparse_resize_and_clear_ for an empty array of that size, or build a new array
        """
        from gpusparse.ops import inplace
        result = inplace.resized(self, size, sparse_dim, dense_dim)
        return self._assign(result, name="sparse_resize_", shape=result.shape)

    def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim):
        """Drop every stored entry and take ``size`` (torch's ``sparse_resize_and_clear_``); returns ``self``.

        The fill value stays, so every element equals it afterwards.
        """
        from gpusparse.ops import inplace
        result = inplace.resized(self, size, sparse_dim, dense_dim, clear=True)
        return self._assign(result, name="sparse_resize_and_clear_", shape=result.shape)

    def resize_as_(self, other):
        """``sparse_resize_(other.shape, other.sparse_dim, other.dense_dim)`` (torch's ``resize_as_``)."""
        return self.sparse_resize_(other.shape, other.sparse_dim, other.dense_dim)
