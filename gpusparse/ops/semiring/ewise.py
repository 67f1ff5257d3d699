"""GraphBLAS's element-wise union and intersection, select and apply over stored entries.

* :func:`ewise_add` -- the union of two structures: ``op(a, b)`` where both
  store an entry, the one stored value where only one does (GraphBLAS
  ``eWiseAdd``; never the fill value of the other operand).
* :func:`ewise_mult` -- the intersection: ``op(a, b)`` where both store one.
* :func:`select` -- the stored entries a positional or value predicate keeps.
* :func:`apply` -- a unary operator (or a binary one with a bound scalar)
  on every stored value; the structure stays.

The union and intersection plans come from the ``merge_rows`` primitive on
canonical CSR structures (the machinery of ``gpusparse.ops.elementwise``),
the values are combined with the array module, and select keeps entries
through ``convert.keep_entries``: nothing here is device-specific.
A result's fill value is the operator applied to the operands' fill values.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import canonical, convert
from gpusparse.ops.semiring._operands import as_csr, column_csr, need_sparse, vector_of

__all__ = ["BINARY_OPS", "SELECT_OPS", "UNARY_OPS", "apply", "ewise_add", "ewise_mult", "select"]

#: Binary operators by python-graphblas name: ``f(xp, x, y)``.
BINARY_OPS = {
    "plus": lambda xp, x, y: x + y,
    "minus": lambda xp, x, y: x - y,
    "rminus": lambda xp, x, y: y - x,
    "times": lambda xp, x, y: x * y,
    "truediv": lambda xp, x, y: xp.true_divide(x, y),
    "min": lambda xp, x, y: xp.minimum(x, y),
    "max": lambda xp, x, y: xp.maximum(x, y),
    "first": lambda xp, x, y: x,
    "second": lambda xp, x, y: y,
    "pair": lambda xp, x, y: xp.ones_like(x),
    "any": lambda xp, x, y: x,
    "land": lambda xp, x, y: xp.logical_and(x, y),
    "lor": lambda xp, x, y: xp.logical_or(x, y),
    "lxor": lambda xp, x, y: xp.logical_xor(x, y),
    "eq": lambda xp, x, y: x == y,
    "ne": lambda xp, x, y: x != y,
    "gt": lambda xp, x, y: x > y,
    "ge": lambda xp, x, y: x >= y,
    "lt": lambda xp, x, y: x < y,
    "le": lambda xp, x, y: x <= y,
}
_BOOL_RESULT = ("land", "lor", "lxor", "eq", "ne", "gt", "ge", "lt", "le")

#: Unary operators by python-graphblas name: ``f(xp, x)``.
UNARY_OPS = {
    "identity": lambda xp, x: x.copy(),
    "ainv": lambda xp, x: -x,
    "minv": lambda xp, x: xp.true_divide(1, x),
    "abs": lambda xp, x: xp.abs(x),
    "lnot": lambda xp, x: xp.logical_not(x),
    "one": lambda xp, x: xp.ones_like(x),
    "sqrt": lambda xp, x: xp.sqrt(x),
    "exp": lambda xp, x: xp.exp(x),
    "log": lambda xp, x: xp.log(x),
}

#: Select operators: positional ones test ``(row, column)`` against the thunk
#: ``k`` (default 0), value ones the stored value against the thunk.
SELECT_OPS = ("tril", "triu", "diag", "offdiag", "rowle", "rowgt", "colle", "colgt",
              "valueeq", "valuene", "valuegt", "valuege", "valuelt", "valuele")


def _binary(op, what):
    if callable(op):
        return lambda xp, x, y: op(x, y), None
    if op not in BINARY_OPS:
        raise ValueError(f"{what}: unknown operator {op!r}; known: {', '.join(BINARY_OPS)} or a callable")
    return BINARY_OPS[op], (np.dtype(np.bool_) if op in _BOOL_RESULT else None)


def _pair(a, b, what):
    need_sparse(a, "a", what, ndim=(1, 2))
    need_sparse(b, "b", what, ndim=(1, 2))
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{what}: shapes {tuple(a.shape)} and {tuple(b.shape)} differ")
    if a.device != b.device:
        raise ValueError(f"{what}: a is on {a.device} and b on {b.device}; move one explicitly")
    be = backend(a.device)
    if a.ndim == 1:
        return column_csr(a, be=be), column_csr(b, be=be), True, be
    return as_csr(a, be=be), as_csr(b, be=be), False, be


def _merge(a, b, op, how, what):
    f, forced = _binary(op, what)
    ac, bc, vector, be = _pair(a, b, what)
    dev = a.device
    k, xp = be.kernels, be.xp
    dtype = np.result_type(a.dtype, b.dtype)
    with np.errstate(all="ignore"):
        fill = np.asarray(f(np, np.asarray(a.fill_value, dtype), np.asarray(b.fill_value, dtype)))
    out_dtype = forced or fill.dtype
    from gpusparse.containers import CSR
    with be.scope():
        indptr, indices, ai, bi = k.merge_rows(ac.indptr, ac.indices, bc.indptr, bc.indices, ac.shape[1], how)
        av = xp.take(ac.data.astype(dtype, copy=False), xp.clip(ai, 0, max(ac.nnz - 1, 0))) if ac.nnz else \
            xp.zeros(ai.shape[0], dtype=dtype)
        bv = xp.take(bc.data.astype(dtype, copy=False), xp.clip(bi, 0, max(bc.nnz - 1, 0))) if bc.nnz else \
            xp.zeros(bi.shape[0], dtype=dtype)
        with np.errstate(all="ignore"):
            both = xp.asarray(f(xp, av, bv)).astype(out_dtype, copy=False)
        if how == "union":
            values = xp.where((ai >= 0) & (bi >= 0), both,
                              xp.where(ai >= 0, av.astype(out_dtype), bv.astype(out_dtype)))
        else:
            values = both
        values = xp.ascontiguousarray(values.astype(out_dtype, copy=False))
        index_dtype = indices.dtype
        res = CSR._from_parts(indptr.astype(index_dtype, copy=False), indices, values, ac.shape,
                              fill.astype(out_dtype)[()], dev)
    return vector_of(res, be=be) if vector else res


def ewise_add(a, b, op="plus"):
    """The union of two sparse arrays' entries: ``op(a, b)`` where both store one, the stored one elsewhere.

    GraphBLAS ``eWiseAdd``: an entry stored in only one operand passes
    through unchanged (it is never combined with the other's fill value).

    Parameters
    ----------
    a, b : SparseArray
        1-D or 2-D, one shape, one device (COO duplicates are summed first).
    op : str or callable
        A name of :data:`BINARY_OPS` (``plus``, ``minus``, ``times``,
        ``min``, ``max``, ``first``, ``second``, ``pair``, ``land``,
        ``lor``, ``eq``, ...) or ``f(x, y)`` on value arrays.

    Returns
    -------
    CSR (2-D) or COO (1-D), fill value ``op(a.fill_value, b.fill_value)``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[1, 0], [0, 5]]))
    >>> b = gs.fromdense(np.array([[3, 2], [0, 0]]))
    >>> gs.ewise_add(a, b, "min").todense()
    array([[1, 2],
           [0, 5]])
    """
    return _merge(a, b, op, "union", "ewise_add")


def ewise_mult(a, b, op="times"):
    """The intersection of two sparse arrays' entries: ``op(a, b)`` where both store one (GraphBLAS ``eWiseMult``).

    Parameters as :func:`ewise_add`.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[1, 0], [0, 5]]))
    >>> b = gs.fromdense(np.array([[3, 2], [0, 4]]))
    >>> c = gs.ewise_mult(a, b, "max")
    >>> c.todense(), c.nnz
    (array([[3, 0],
           [0, 5]]), 2)
    """
    return _merge(a, b, op, "intersection", "ewise_mult")


def select(a, op, thunk=None):
    """The stored entries of ``a`` that a predicate keeps (GraphBLAS ``select``); the rest are dropped.

    Parameters
    ----------
    a : SparseArray
        Positional predicates need 2-D; value predicates take any shape.
        A COO's duplicates are summed first.
    op : str or (str, scalar)
        ``"tril"`` (``j <= i + k``), ``"triu"`` (``j >= i + k``), ``"diag"``
        (``j == i + k``), ``"offdiag"`` (``j != i + k``), ``"rowle"`` /
        ``"rowgt"`` (``i <= k`` / ``i > k``), ``"colle"`` / ``"colgt"``, or
        a value predicate ``"valueeq"``, ``"valuene"``, ``"valuegt"``,
        ``"valuege"``, ``"valuelt"``, ``"valuele"`` comparing the value with
        the thunk; ``("valuegt", 0)`` passes the thunk with the name.
    thunk : scalar, optional
        ``k`` (default 0).

    Returns
    -------
    SparseArray in ``a``'s format (COO for COO input), same fill value.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[1, 2], [3, -4]]), format="csr")
    >>> gs.select(a, "tril").todense()
    array([[ 1,  0],
           [ 3, -4]])
    >>> gs.select(a, ("valuegt", 1)).todense()
    array([[0, 2],
           [3, 0]])
    """
    if isinstance(op, tuple):
        op, thunk = op
    if op not in SELECT_OPS:
        raise ValueError(f"select: unknown operator {op!r}; known: {', '.join(SELECT_OPS)}")
    need_sparse(a, "a", "select", ndim=(1, 2) if op.startswith("value") else (2,))
    be = backend(a.device)
    x = canonical.coalesce(a, be=be) if a.format == "coo" else a
    thunk = 0 if thunk is None else thunk
    k, xp = be.kernels, be.xp
    with be.scope():
        if op.startswith("value"):
            v = x.data
            t = np.asarray(thunk)
            keep = {"valueeq": lambda: v == t, "valuene": lambda: v != t, "valuegt": lambda: v > t,
                    "valuege": lambda: v >= t, "valuelt": lambda: v < t, "valuele": lambda: v <= t}[op]()
        else:
            if x.format == "coo":
                rows, cols = x.coords[0], x.coords[1]
            else:
                majors = k.expand(x.indptr, x.nnz)
                minors = x.indices.astype(np.int64)
                rows, cols = (majors, minors) if x.format == "csr" else (minors, majors)
            t = int(thunk)
            keep = {"tril": lambda: cols <= rows + t, "triu": lambda: cols >= rows + t,
                    "diag": lambda: cols == rows + t, "offdiag": lambda: cols != rows + t,
                    "rowle": lambda: rows <= t, "rowgt": lambda: rows > t,
                    "colle": lambda: cols <= t, "colgt": lambda: cols > t}[op]()
        keep = xp.ascontiguousarray(keep)
    return convert.keep_entries(x, keep, be=be)


def apply(a, op, thunk=None):
    """A unary operator on every stored value of ``a`` (GraphBLAS ``apply``); the structure stays.

    Parameters
    ----------
    a : SparseArray
        Any shape (a COO's duplicates are summed first).
    op : str, (str, scalar) or callable
        A name of :data:`UNARY_OPS` (``identity``, ``ainv``, ``minv``,
        ``abs``, ``lnot``, ``one``, ``sqrt``, ``exp``, ``log``); a binary
        operator of :data:`BINARY_OPS` with a bound second argument,
        ``("plus", 3)`` or ``op="plus", thunk=3`` (``x + 3``); or
        ``f(values)`` on the value array.

    Returns
    -------
    SparseArray in ``a``'s format; fill value ``op(a.fill_value)``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[1, 0], [0, -4]]), format="csr")
    >>> gs.apply(a, "ainv").todense()
    array([[-1,  0],
           [ 0,  4]])
    >>> b = gs.apply(a, ("plus", 10))
    >>> b.data, b.fill_value
    (array([11,  6]), np.int64(10))
    """
    if isinstance(op, tuple):
        op, thunk = op
    need_sparse(a, "a", "apply", ndim=tuple(range(1, 33)))
    if callable(op):
        f = lambda xp, x: op(x)  # noqa: E731
    elif thunk is not None:
        g, _ = _binary(op, "apply")
        f = lambda xp, x: g(xp, x, thunk)  # noqa: E731
    elif op in UNARY_OPS:
        f = UNARY_OPS[op]
    else:
        raise ValueError(f"apply: unknown operator {op!r}; known: {', '.join(UNARY_OPS)}, a binary operator "
                         "with a thunk, or a callable")
    be = backend(a.device)
    x = canonical.coalesce(a, be=be) if a.format == "coo" else a
    xp = be.xp
    with np.errstate(all="ignore"):
        fill = np.asarray(f(np, np.asarray(x.fill_value)))
        with be.scope():
            values = xp.ascontiguousarray(xp.asarray(f(xp, x.data)))
    arrays = convert.components(x)[:-1] + (values,)
    return convert.rebuild(x, arrays, fill_value=fill.astype(values.dtype)[()])
