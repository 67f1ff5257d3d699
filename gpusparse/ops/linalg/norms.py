"""Norms of sparse arrays: Frobenius, matrix 1 / inf norms, and vector p-norms along any axis.

Semantics are NumPy's ``numpy.linalg.norm`` (and SciPy's
``scipy.sparse.linalg.norm``, which follows it) on the dense array the
sparse one stands for: duplicates of an uncoalesced COO are summed before
taking absolute values, unstored elements are 0 (the fill value must be 0).
The reductions run on the array's device through gpusparse's own products
(``|x|^p @ ones`` sums a slice, ``mm(..., reduce="max")`` takes its maximum).
"""

from __future__ import annotations

import operator

import numpy as np

from gpusparse._backend import backend_of

__all__ = ["norm"]

_MATRIX_ORDS = (None, "fro", "f", 1, -1, np.inf, -np.inf, 2, -2, "nuc")


def _real_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.complex64):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _abs_coo(x, rdtype, be, power=1):
    """Coalesced all-sparse COO of ``|x| ** power`` in ``rdtype``, on ``be``."""
    from gpusparse.ops import canonical, convert
    from gpusparse.ops.linalg.operands import all_sparse, as_coo
    coo = canonical.coalesce(as_coo(all_sparse(x, be=be), be=be), be=be)
    xp = be.xp
    with be.scope():
        values = xp.abs(coo.data).astype(rdtype)
        if power != 1:
            values = values ** rdtype.type(power)
    return convert.rebuild(coo, (coo.coords, values), fill_value=rdtype.type(0))


def _pattern_coo(x, rdtype, be):
    """Coalesced COO with 1 where ``x`` stores a non-zero value (after summing duplicates), on ``be``."""
    from gpusparse.ops import canonical, convert
    from gpusparse.ops.linalg.operands import all_sparse, as_coo
    coo = canonical.coalesce(as_coo(all_sparse(x, be=be), be=be), be=be)
    with be.scope():
        values = (coo.data != 0).astype(rdtype)
    return convert.rebuild(coo, (coo.coords, values), fill_value=rdtype.type(0))


def _sum_along(x, axis, be):
    """Dense sums of all-sparse ``x`` along ``axis`` (a tensordot with ones), on ``be``."""
    from gpusparse.ops.linalg.products import tensordot_on
    with be.scope():
        ones = be.xp.ones(x.shape[axis], dtype=x.dtype)
    return tensordot_on(x, ones, ([axis], [0]), be)


def _reduce_along(x, axis, op, be):
    """Dense max / min over the *stored* elements of ``x`` along ``axis`` (0 for slices storing nothing), on ``be``."""
    from gpusparse.ops.linalg.operands import coo_to_csr
    from gpusparse.ops.linalg.products import _matrix_of
    from gpusparse.ops.linalg.torch_names import mm_on
    other = [d for d in range(x.ndim) if d != axis]
    with be.scope():
        matrix = coo_to_csr(_matrix_of(x, other, [axis], be), warn=False, be=be)
        ones = be.xp.ones((x.shape[axis], 1), dtype=x.dtype)
        out = mm_on(matrix, ones, op, be)
    return out.reshape(tuple(x.shape[d] for d in other))


def _vector_norm(x, ord, axis, rdtype, be):
    xp = be.xp
    n = x.shape[axis]
    if ord is None or ord == 2:
        with be.scope():
            return xp.sqrt(_sum_along(_abs_coo(x, rdtype, be, 2), axis, be))
    if ord == 1:
        return _sum_along(_abs_coo(x, rdtype, be), axis, be)
    if ord == np.inf:
        return _reduce_along(_abs_coo(x, rdtype, be), axis, "max", be)
    count = _sum_along(_pattern_coo(x, rdtype, be), axis, be)
    if ord == 0:
        return count
    full = count == n  # slices with no zero element
    with be.scope():
        if ord == -np.inf:
            smallest = _reduce_along(_abs_coo(x, rdtype, be), axis, "min", be)
            return xp.where(full, smallest, rdtype.type(0))
        p = float(ord)
        total = _sum_along(_abs_coo(x, rdtype, be, p), axis, be)
        if p < 0:
            safe = xp.where(full, total, rdtype.type(1))
            return xp.where(full, safe ** rdtype.type(1.0 / p), rdtype.type(0))
        return total ** rdtype.type(1.0 / p)


def _frobenius(x, rdtype, be):
    xp = be.xp
    sq = _abs_coo(x, rdtype, be, 2)
    with be.scope():
        return xp.sqrt(sq.data.sum(dtype=rdtype))


def _matrix_norm(x, ord, axes, rdtype, be):
    r, c = axes
    if ord in (None, "fro", "f"):
        if x.ndim != 2:
            raise ValueError("norm: a matrix Frobenius norm over two of more than two axes is not supported")
        return _frobenius(x, rdtype, be)
    if ord in (2, -2, "nuc"):
        raise ValueError(f"norm: ord={ord!r} needs singular values; use gpusparse.linalg.svd_lowrank "
                         "or scipy/cupyx svds through gpusparse.linalg.aslinearoperator")
    if x.ndim != 2:
        raise ValueError("norm: matrix norms are supported for 2-D arrays only")
    absx = _abs_coo(x, rdtype, be)
    if ord in (1, -1):
        sums = _sum_along(absx, r, be)
    else:
        sums = _sum_along(absx, c, be)
    with be.scope():
        if sums.size == 0:
            raise ValueError("norm: zero-size array to a matrix norm")
        return sums.max() if ord in (1, np.inf) else sums.min()


def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm of a sparse array (``numpy.linalg.norm``'s semantics), on its device.

    Parameters
    ----------
    x : SparseArray
        Any format, rank and dense dimensions; the fill value must be 0.
    ord : {None, "fro", 1, -1, inf, -inf, 0, p}, optional
        Matrix norms (2-D, or two axes): ``None`` / ``"fro"`` Frobenius,
        ``1`` / ``-1`` max / min column sum of ``|x|``, ``inf`` / ``-inf``
        max / min row sum. Vector norms (1-D, or one axis): ``None`` / 2
        Euclidean, ``inf`` / ``-inf`` max / min of ``|x|``, ``0`` the number of
        non-zero elements, any other ``p``: ``sum(|x|**p) ** (1/p)``.
    axis : int or (int, int), optional
        The axis of a vector norm or the two axes of a matrix norm. By
        default a 1-D array has a vector norm, a 2-D array a matrix norm, and
        with ``ord=None`` any array the Frobenius norm of all its elements.
    keepdims : bool
        Keep the reduced axes with length 1.

    Returns
    -------
    A dense array on ``x``'s device (0-d for a single norm), float64 for
    integer input, the real counterpart of a complex dtype.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.linalg import norm
    >>> x = gs.fromdense(np.array([[3.0, 0.0], [-4.0, 1.0]]), device="cpu")
    >>> float(norm(x)), float(norm(x, 1)), float(norm(x, np.inf))
    (5.0990195135927845, 7.0, 5.0)
    >>> norm(x, axis=1).tolist(), norm(x, ord=0, axis=0).tolist()
    ([3.0, 4.123105625617661], [2.0, 1.0])
    """
    from gpusparse.ops.linalg.operands import is_sparse, require_zero_fill
    if not is_sparse(x):
        from gpusparse._components import to_array
        arr, _ = to_array(x, "x")
        be = backend_of(arr)
        with be.scope():
            return be.xp.linalg.norm(arr, ord=ord, axis=axis, keepdims=keepdims)
    require_zero_fill(x, "x", "norm")
    rdtype = _real_dtype(x.dtype)
    be = backend_of(x)
    xp = be.xp
    if axis is None:
        if ord is None:
            out = _frobenius(x, rdtype, be)
            if keepdims:
                with be.scope():
                    out = out.reshape((1,) * x.ndim)
            return out
        if x.ndim == 1:
            axis = (0,)
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: ord={ord!r} needs axis for a {x.ndim}-D array (improper number of dimensions)")
    elif isinstance(axis, (int, np.integer)):
        axis = (axis,)
    try:
        axes = tuple(operator.index(a) for a in axis)
    except TypeError:
        raise TypeError(f"axis must be an integer or a tuple of integers, got {axis!r}") from None
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            from numpy.exceptions import AxisError
            raise AxisError(a, x.ndim, msg_prefix="norm: axis")
    axes = tuple(a % x.ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"norm: duplicate axes {axis}")
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: ord={ord!r} is a matrix norm; a vector norm takes a number")
        out = _vector_norm(x, ord, axes[0], rdtype, be)
    elif len(axes) == 2:
        if ord not in _MATRIX_ORDS:
            raise ValueError(f"norm: invalid matrix norm ord={ord!r}; one of {_MATRIX_ORDS}")
        out = _matrix_norm(x, ord, axes, rdtype, be)
    else:
        raise ValueError(f"norm: axis must name one or two axes, got {axis}")
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
        with be.scope():
            out = xp.asarray(out).reshape(shape)
    return out
