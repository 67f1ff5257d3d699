"""``mxm`` and ``mxv``: matrix products over a semiring, with an optional mask (GraphBLAS's names).

One op layer for both devices: it resolves the semiring into an add monoid
and a multiply operator (:mod:`gpusparse.ops.semiring._defs`), puts the
operands in canonical CSR form and calls the primitives ``spmm_semiring``
(sparse x dense, sparse x dense vector) and ``spgemm_semiring`` (sparse x
sparse, sparse x sparse vector). A mask is handed to the primitive, which
skips the outputs it does not select: no full product is formed first.
``plus_times`` without a mask goes to the library's ordinary products
(cuSPARSE, the CPU's SpMM/SpGEMM), which have the same structure.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops.linalg.operands import is_sparse
from gpusparse.ops.semiring._defs import parse, plan
from gpusparse.ops.semiring._operands import (
    as_csr,
    column_csr,
    dense_mask,
    dense_operand,
    mask_structure,
    need_sparse,
    vector_of,
)

__all__ = ["RepeatedMxv", "mxm", "mxv"]


def _dtype_of(x):
    if is_sparse(x):
        return x.dtype
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.asarray(x).dtype


def _ordinary_product(a, b, p, fill_zero, be):
    """plus_times without a mask through the library's matmul (same structure); None where it does not apply."""
    if p.semiring.name != "plus_times" or p.as_bool or not fill_zero:
        return None
    from gpusparse.ops.linalg.products import matmul_on
    return matmul_on(a, b, be)


def _sparse_result(indptr, indices, data, shape, p, be):
    from gpusparse.containers import CSR
    if p.as_bool:
        with be.scope():
            data = data != 0
    return CSR._from_parts(indptr, indices, data, shape, p.fill, be.device)


def _sparse_product(a, b, p, mask, complement, what, be):
    """Canonical CSR ``a (+.*) b`` for 2-D sparse ``a`` (m, k) and ``b`` (k, n), on the backend ``be``."""
    k = be.kernels
    m, n = a.shape[0], b.shape[1]
    ac, bc = as_csr(a, be=be), as_csr(b, be=be)
    if mask is not None:
        mask_indptr, mask_indices = mask
    else:
        mask_indptr = mask_indices = None
    sr = p.semiring
    with be.scope():
        ip, ix, dd = k.spgemm_semiring(ac.indptr, ac.indices, ac.data.astype(p.compute, copy=False),
                                       bc.indptr, bc.indices, bc.data.astype(p.compute, copy=False),
                                       (m, a.shape[1], n), sr.add, sr.mul, mask_indptr, mask_indices,
                                       complement)  # sync: the primitive sizes its output
    return _sparse_result(ip, ix, dd, (m, n), p, be)


def _dense_product(a, b, p, allowed, be):
    """Dense ``a (+.*) b`` for 2-D sparse ``a`` and a dense (k, n) ``b`` already in ``p.compute``, on ``be``."""
    ac = as_csr(a, be=be)
    with be.scope():
        return _spmm(ac.indptr, ac.indices, ac.data.astype(p.compute, copy=False), ac.shape, b, p, allowed, be)


def _spmm(indptr, indices, data, shape, b, p, allowed, be):
    """The ``spmm_semiring`` primitive for the plan ``p`` (its result as bool where the plan says so)."""
    sr = p.semiring
    out = be.kernels.spmm_semiring(indptr, indices, data, shape, b, sr.add, sr.mul, allowed)
    return out != 0 if p.as_bool else out


def _check_inner(a_shape, b_shape, what):
    if a_shape[1] != b_shape[0]:
        raise ValueError(f"{what}: shapes {tuple(a_shape)} and {tuple(b_shape)} do not align "
                         f"({a_shape[1]} != {b_shape[0]})")


def mxm(a, b, semiring="plus_times", mask=None, complement=False):
    """The matrix product ``a @ b`` over a semiring, computed only where a mask selects (GraphBLAS ``mxm``).

    ``C[i, j] = add over k of mul(a[i, k], b[k, j])`` over the *stored*
    ``a[i, k]`` and ``b[k, j]`` (every element of a dense ``b``): an
    output exists where at least one term exists, never where only fill
    values would meet. A sparse result is CSR with the add monoid's
    identity as its fill value (``inf`` for ``min``, ``-inf`` for ``max``;
    the dtype's max / min for integers, ``0`` for ``plus``, ``False`` for
    ``lor``), so ``todense()`` shows the identity where no term exists; a
    dense result holds the identity there.

    Parameters
    ----------
    a : SparseArray
        2-D, any format (COO duplicates are summed first). Its fill value
        is ignored: only stored entries take part.
    b : SparseArray or array_like
        2-D sparse (sparse result) or dense on ``a``'s device (dense result).
    semiring : str
        ``"plus_times"``, ``"min_plus"``, ``"max_plus"``, ``"max_times"``,
        ``"min_times"``, ``"min_max"``, ``"max_min"``, ``"lor_land"``,
        ``"plus_pair"``, ``"any_pair"``, ``"min_first"``, ``"min_second"``,
        ``"max_first"``, ``"max_second"`` and the other
        ``plus|min|max _ times|plus|min|max|pair|first|second`` pairs
        (python-graphblas's names; ``first(x, y) = x``, ``second(x, y) = y``,
        ``pair(x, y) = 1``).
    mask : SparseArray or array_like, optional
        Of the result's shape. Its structure (a dense mask: its non-zero
        elements) selects the outputs to compute; elsewhere a sparse result
        has no entry and a dense one the identity.
    complement : bool
        Compute the outputs the mask does *not* select instead.

    Returns
    -------
    CSR or dense array
        Values in the operands' promoted dtype (bool for ``lor_*``; bool
        operands under ``plus``/``min``/``max`` follow GraphBLAS's bool
        algebra: plus and max are or, times and min are and).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[0., 2.], [1., 0.]]), format="csr")
    >>> c = gs.mxm(a, a, "min_plus")
    >>> c.todense()
    array([[ 3., inf],
           [inf,  3.]])
    >>> gs.mxm(a, np.array([[1.], [5.]]), "max_plus")
    array([[7.],
           [2.]])
    >>> gs.mxm(a, a, "plus_times", mask=a, complement=True).todense()
    array([[2., 0.],
           [0., 2.]])
    """
    what = "mxm"
    need_sparse(a, "a", what)
    p = plan(semiring, a.dtype, _dtype_of(b))
    dev = a.device
    be = backend(dev)
    if is_sparse(b):
        need_sparse(b, "b", what)
        if b.device != dev:
            raise ValueError(f"{what}: a is on {dev} and b on {b.device}; move one explicitly")
        _check_inner(a.shape, b.shape, what)
        shape = (a.shape[0], b.shape[1])
        if mask is None:
            res = _ordinary_product(a, b, p, a.fill_value == 0 and b.fill_value == 0, be)
            if res is not None:
                return as_csr(res, be=be)
            return _sparse_product(a, b, p, None, False, what, be)
        return _sparse_product(a, b, p, mask_structure(mask, shape, be, what), bool(complement), what, be)
    bd = dense_operand(b, be, p.compute, "b", what)
    if bd.ndim != 2:
        raise ValueError(f"{what}: a dense b must be 2-D (use mxv for vectors); got shape {tuple(bd.shape)}")
    _check_inner(a.shape, bd.shape, what)
    shape = (a.shape[0], bd.shape[1])
    if mask is None:
        res = _ordinary_product(a, bd, p, a.fill_value == 0, be)
        if res is not None:
            return res
        return _dense_product(a, bd, p, None, be)
    return _dense_product(a, bd, p, dense_mask(mask, shape, complement, be, what), be)


def mxv(a, v, semiring="plus_times", mask=None, complement=False):
    """The matrix-vector product ``a @ v`` over a semiring, with an optional mask (GraphBLAS ``mxv``).

    As :func:`mxm` with ``v`` a vector: a 1-D sparse ``v`` gives a 1-D
    sparse (COO) result whose fill value is the monoid's identity; a dense
    ``v`` a dense vector holding the identity where no term exists. A mask
    is a vector of the result's length (sparse: its structure; dense: its
    non-zero elements).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[0, 2, 1], [0, 0, 0], [4, 0, 0]]), format="csr")
    >>> gs.mxv(a, np.array([10, 20, 30]), "min_plus")
    array([                  22, 9223372036854775807,                   14])
    >>> x = gs.mxv(a, gs.fromdense(np.array([0, 0, 7])), "max_second")
    >>> x.coords, x.data, x.fill_value
    (array([[0]]), array([7]), np.int64(-9223372036854775808))
    >>> gs.mxv(a, np.array([1, 1, 1]), "plus_pair", mask=np.array([True, False, False]), complement=True)
    array([0, 0, 1])
    """
    what = "mxv"
    need_sparse(a, "a", what)
    p = plan(semiring, a.dtype, _dtype_of(v))
    dev = a.device
    be = backend(dev)
    m = a.shape[0]
    if is_sparse(v):
        need_sparse(v, "v", what, ndim=(1,))
        if v.device != dev:
            raise ValueError(f"{what}: a is on {dev} and v on {v.device}; move one explicitly")
        _check_inner(a.shape, (v.shape[0], 1), what)
        vc = column_csr(v, be=be)
        structure = None if mask is None else mask_structure(mask, (m,), be, what)
        if structure is None:
            res = _ordinary_product(a, vc, p, a.fill_value == 0 and v.fill_value == 0, be)
            if res is not None:
                return vector_of(as_csr(res, be=be), be=be)
        return vector_of(_sparse_product(a, vc, p, structure, bool(complement), what, be), be=be)
    vd = dense_operand(v, be, p.compute, "v", what)
    if vd.ndim != 1:
        raise ValueError(f"{what}: v must be 1-D; got shape {tuple(vd.shape)}")
    _check_inner(a.shape, (vd.shape[0], 1), what)
    if mask is None:
        res = _ordinary_product(a, vd, p, a.fill_value == 0, be)
        if res is not None:
            return res
        allowed = None
    else:
        allowed = dense_mask(mask, (m,), complement, be, what)
    with be.scope():
        return _dense_product(a, vd.reshape(-1, 1), p, allowed, be).reshape(m)


class RepeatedMxv:
    """``mxv(a, v, semiring, mask=allowed)`` of one matrix, prepared once for a dense ``v`` given every round.

    Graph algorithms multiply one adjacency matrix by a new dense vector in
    every round. This does once what each :func:`mxv` call repeats -- the
    plan, the canonical CSR form, the values in the compute dtype, 64-bit
    indices, the backend -- so that a round is the product kernel alone.

    Call it inside the backend's scope (``with be.scope():``, as the graph
    algorithms' loops run) with ``v`` a contiguous 1-D array of ``a``'s
    device in the plan's compute dtype (``plan.compute``), of length ``a.shape[1]``, and
    ``allowed`` None or a contiguous 1-D bool array of length
    ``a.shape[0]`` (True where the output is computed). Nothing is
    validated per call. Returns the dense result (``a.shape[0]``,): the
    add monoid's identity where no term exists or ``allowed`` is False.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.fromdense(np.array([[0, 2, 1], [0, 0, 0], [4, 0, 0]]), format="csr")
    >>> step = RepeatedMxv(a, "min_plus", np.int64)
    >>> step(np.array([10, 20, 30]), np.array([True, True, False]))
    array([                 22, 9223372036854775807, 9223372036854775807])
    """

    def __init__(self, a, semiring, v_dtype):
        need_sparse(a, "a", "mxv")
        self.plan = plan(semiring, a.dtype, v_dtype)
        self.be = be = backend(a.device)
        csr = as_csr(a, be=be)
        self.shape = csr.shape
        with be.scope():
            xp = be.xp
            self._indptr = xp.ascontiguousarray(csr.indptr, dtype=np.int64)
            self._indices = xp.ascontiguousarray(csr.indices, dtype=np.int64)
            self._data = xp.ascontiguousarray(csr.data, dtype=self.plan.compute)

    def __call__(self, v, allowed=None):
        return _spmm(self._indptr, self._indices, self._data, self.shape, v.reshape(-1, 1), self.plan,
                     None if allowed is None else allowed.reshape(-1, 1), self.be).reshape(-1)
