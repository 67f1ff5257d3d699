"""NumPy's and TF's products: matmul, dot, tensordot, inner, outer, kron and sparse_dense_matmul.

Semantics are NumPy's on the dense arrays the operands stand for, for COO,
CSR and CSC operands alike:

* ``matmul`` / ``@``: the last two axes are the matrices, leading axes are
  batch axes that broadcast; a 1-D operand is a vector. ``sparse @ dense``
  and ``dense @ sparse`` give dense arrays, ``sparse @ sparse`` a sparse
  array (2-D: the left operand's format; N-d: COO). A result with no axes
  (vector @ vector) is a 0-d dense array.
* Products need zero fill values (pydata's rule): a non-zero fill would make
  every result dense.
* Uncoalesced COO operands mean the sum of their duplicates, as everywhere.
* Operands with dense trailing dimensions (torch's hybrid arrays) follow the
  same rules. When the contraction runs over a dense dimension of the left
  operand (``(*sparse, *dense, K) @ (K, N)``), each stored block is
  multiplied as it is; otherwise the dense dimensions are made sparse first.
* dtypes promote as in NumPy (int8 @ float32 is float64, ...); integers
  wrap; bool products are OR-of-AND.
* Only stored elements are multiplied (SciPy's rule): an unstored zero
  times ``inf`` or ``nan`` in the other operand contributes nothing, where
  NumPy's dense product gives ``nan``. Stored zeros are multiplied as
  values (``0.0 * inf`` is ``nan``).

torch's family (``mm``, ``mv``, ``bmm``, ``addmm``, ``sspaddmm``, ``hspmm``,
``smm``, ``sampled_addmm``) lives in :mod:`gpusparse.ops.linalg.torch_names`;
both are re-exported by :mod:`gpusparse.ops.linalg`. The engines are in
:mod:`gpusparse.ops.linalg.core`.

Dense operands may be NumPy or device arrays, any DLPack producer (torch,
JAX) or nested lists; they must live on the sparse operand's device (lists
are moved there). Operations run on that device. A dense result has the
type of the first dense array operand (torch in, torch out; see
:func:`gpusparse.ops.linalg.operands.returns_operand_kind`). Sparse
operands of other libraries (SciPy, torch, CuPy, pydata, JAX) are converted
without copies where the layouts allow, and the product is computed as for
gpusparse arrays.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import gpusparse._memory as _memory
from gpusparse._backend import backend
from gpusparse.ops import canonical, convert
from gpusparse.ops.linalg.core import (
    _matmul,
    _need_ndim,
    dense_sparse,
    finish_sparse,
    sparse_dense,
    spgemm_2d,
    transpose_2d,
)
from gpusparse.ops.linalg.operands import (
    all_sparse,
    as_coo,
    compute_dtype,
    coo_to_csr,
    is_sparse,
    linear_keys,
    new_coo,
    prepare,
    require_zero_fill,
    result_dtype,
    returns_operand_kind,
    settle_duplicates,
)
from gpusparse.ops._validate import check_shape

__all__ = [
    "dot",
    "inner",
    "kron",
    "matmul",
    "outer",
    "sparse_dense_matmul",
    "tensordot",
]


# --------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------

@returns_operand_kind
def matmul(a, b):
    """Matrix product with NumPy's ``matmul`` rules; one operand at least is sparse.

    Parameters
    ----------
    a, b : SparseArray or array_like
        Sparse arrays (COO, CSR, CSC, N-d, hybrid) or dense arrays on the
        same device. 1-D operands are vectors; leading axes broadcast.

    Returns
    -------
    Dense array for sparse @ dense and dense @ sparse; sparse array for
    sparse @ sparse (2-D: ``a``'s format; N-d: COO; 0-d: a dense scalar array).

    Raises
    ------
    ValueError
        Inner dimensions differ, batch dimensions do not broadcast, a 0-d
        operand, a sparse operand with a non-zero fill value, or operands on
        different devices.
    TypeError
        An operand is not array-like or its dtype is not supported.

    Notes
    -----
    Only stored elements are multiplied, as in SciPy: an unstored (structural)
    zero times ``inf`` or ``nan`` in the other operand contributes nothing,
    where NumPy's dense product would give ``nan`` (``0 * inf``). A stored
    zero is multiplied like any value (``0.0 * inf`` is ``nan``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.CSR([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(2, 3), device="cpu")
    >>> matmul(a, np.array([1.0, 1.0, 1.0]))
    array([3., 3.])
    >>> (a @ np.eye(3)).tolist()
    [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
    >>> (a @ a.T).todense().tolist()
    [[5.0, 0.0], [0.0, 9.0]]
    >>> matmul(a, np.array([1.0, np.inf, 1.0]))  # a[0, 1] is not stored: no 0 * inf
    array([ 3., inf])
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    return _prepared_matmul(a, b, backend(dev))


def matmul_on(a, b, be):
    """:func:`matmul` of ``a`` and ``b`` on the backend ``be`` of their one device."""
    (a, b), _ = prepare((a, b), ("a", "b"))
    return _prepared_matmul(a, b, be)


def _prepared_matmul(a, b, be):
    """:func:`matmul` of operands that :func:`prepare` returned, on their device's backend ``be``."""
    with be.scope():
        if not (is_sparse(a) or is_sparse(b)):
            return be.xp.matmul(a, b)
        return _matmul(a, b, be=be)


# --------------------------------------------------------------------------
# tensordot, dot, inner
# --------------------------------------------------------------------------

def _normalize_axes(axes, a_ndim, b_ndim):
    from numpy.exceptions import AxisError
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError(f"axes must be a non-negative integer or a pair of sequences, got {n}")
        if n > a_ndim or n > b_ndim:
            raise ValueError(f"axes={n} is more than the dimensions of a ({a_ndim}) or b ({b_ndim})")
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    try:
        axes_a, axes_b = axes
    except (TypeError, ValueError):
        raise TypeError(f"axes must be an integer or a pair of sequences of integers, got {axes!r}") from None
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"axes: a lists {len(axes_a)} axes but b lists {len(axes_b)}")
    out = []
    for axes_x, ndim, name in ((axes_a, a_ndim, "a"), (axes_b, b_ndim, "b")):
        norm = []
        for ax in axes_x:
            ax = operator.index(ax)
            if not -ndim <= ax < ndim:
                raise AxisError(ax, ndim, msg_prefix=f"axes of {name}")
            norm.append(ax % ndim)
        if len(set(norm)) != len(norm):
            raise ValueError(f"axes of {name} repeat an axis: {axes_x}")
        out.append(norm)
    return out[0], out[1]


def _matrix_of(x, row_axes, col_axes, be):
    """Sparse ``x`` as the 2-D COO ``(prod rows, prod cols)`` (a permutation and reshape), on ``be``."""
    k, xp = be.kernels, be.xp
    coo = as_coo(all_sparse(x, be=be), be=be)
    c = coo.coords
    row_shape = [coo.shape[i] for i in row_axes]
    col_shape = [coo.shape[i] for i in col_axes]
    r = linear_keys([c[i] for i in row_axes], row_shape, k, xp) if row_axes else xp.zeros(coo.nnz, np.int64)
    s = linear_keys([c[i] for i in col_axes], col_shape, k, xp) if col_axes else xp.zeros(coo.nnz, np.int64)
    keeps = list(row_axes) + list(col_axes) == list(range(coo.ndim))
    return new_coo(xp.stack([r, s]), coo.data, (math.prod(row_shape), math.prod(col_shape)),
                   be, sorted=coo.sorted and keeps, unique=coo.unique)


def _scale(x, s, dtype, be):
    """Sparse ``x`` times a 0-d array ``s`` (dot with a scalar)."""
    from gpusparse._device import to_host
    from gpusparse.ops.convert import components, rebuild
    arrays = components(x)
    scalar = to_host(s).astype(dtype)[()]  # sync: the scalar, for the fill value
    with be.scope():
        data = arrays[-1].astype(dtype) * scalar
        fill = (np.asarray(x.fill_value).astype(dtype) * scalar)[()]
    return rebuild(x, arrays[:-1] + (data,), fill_value=fill)


@returns_operand_kind
def tensordot(a, b, axes=2):
    """Sum of products over the given axes (NumPy's ``tensordot``), on any axes of sparse operands.

    Parameters
    ----------
    a, b : SparseArray or array_like
        At least one is sparse; both on one device.
    axes : int or (sequence, sequence)
        ``N``: the last ``N`` axes of ``a`` with the first ``N`` of ``b``;
        or the axes of ``a`` and of ``b`` to contract, pairwise.

    Returns
    -------
    A dense array when one operand is dense, a sparse COO array when both
    are sparse (a 0-d dense array when no axis is left). The result's axes
    are ``a``'s free axes followed by ``b``'s.

    Notes
    -----
    Only stored elements are multiplied, as in SciPy: an unstored (structural)
    zero times ``inf`` or ``nan`` in the other operand contributes nothing,
    where NumPy's dense product would give ``nan`` (``0 * inf``). A stored
    zero is multiplied like any value (``0.0 * inf`` is ``nan``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.arange(24.0).reshape(2, 3, 4), device="cpu")
    >>> y = np.ones((4, 3))
    >>> np.array_equal(tensordot(x, y, axes=([1, 2], [1, 0])),
    ...                np.tensordot(np.arange(24.0).reshape(2, 3, 4), y, axes=([1, 2], [1, 0])))
    True
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    return _tensordot(a, b, axes, backend(dev))


def tensordot_on(a, b, axes, be):
    """:func:`tensordot` of ``a`` and ``b`` on the backend ``be`` of their one device."""
    (a, b), _ = prepare((a, b), ("a", "b"))
    return _tensordot(a, b, axes, be)


def _tensordot(a, b, axes, be):
    """tensordot of prepared operands on their device's backend ``be``."""
    xp, k = be.xp, be.kernels
    if not (is_sparse(a) or is_sparse(b)):
        with be.scope():
            return xp.tensordot(a, b, axes)
    axes_a, axes_b = _normalize_axes(axes, a.ndim, b.ndim)
    for ia, ib in zip(axes_a, axes_b):
        if a.shape[ia] != b.shape[ib]:
            raise ValueError(
                f"tensordot: shape mismatch: axis {ia} of a has length {a.shape[ia]} but "
                f"axis {ib} of b has length {b.shape[ib]}"
            )
    for x, name in ((a, "a"), (b, "b")):
        if is_sparse(x):
            require_zero_fill(x, name, "tensordot")
    dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
    a = settle_duplicates(a, compute_dtype(dtype), be=be) if is_sparse(a) else a
    b = settle_duplicates(b, compute_dtype(dtype), be=be) if is_sparse(b) else b
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    R = math.prod(a.shape[i] for i in free_a)
    N = math.prod(b.shape[i] for i in free_b)
    C = math.prod(a.shape[i] for i in axes_a)
    with be.scope(), _memory.operation("tensordot"):
        if is_sparse(a):  # the reshaped matrices are sorted once here, without a warning
            a2 = coo_to_csr(_matrix_of(a, free_a, axes_a, be), warn=False, be=be)
        else:
            a2 = xp.transpose(a, free_a + axes_a).reshape(R, C)
        if is_sparse(b):
            b2 = coo_to_csr(_matrix_of(b, axes_b, free_b, be), warn=False, be=be)
        else:
            b2 = xp.transpose(b, axes_b + free_b).reshape(C, N)
        if is_sparse(a) and is_sparse(b):
            res = canonical.coalesce(as_coo(spgemm_2d(a2, b2, compute_dtype(dtype), be), be=be), be=be)
            coords_a = k.delinearize(res.coords[0], tuple(a.shape[i] for i in free_a))
            coords_b = k.delinearize(res.coords[1], tuple(b.shape[i] for i in free_b))
            out = new_coo(xp.concatenate([coords_a, coords_b]), res.data, out_shape, be,
                          sorted=res.sorted, unique=True)
            out = finish_sparse(out, dtype, be)
            return convert.to_dense(out, be=be) if out.ndim == 0 else out
        res = sparse_dense(a2, b2, dtype, be) if is_sparse(a) else dense_sparse(a2, b2, dtype, be)
        return res.reshape(out_shape)


@returns_operand_kind
def dot(a, b):
    """NumPy's ``dot``: matmul for 1-D and 2-D operands, tensordot over (last of a, second-to-last of b) for N-d.

    A 0-d operand scales the other. As in :func:`matmul`, only stored
    elements are multiplied: an unstored zero times ``inf`` or ``nan``
    contributes nothing (SciPy's rule; NumPy's dense ``dot`` gives ``nan``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> v = gs.COO([[0, 2]], [1.0, 2.0], shape=(3,), device="cpu")
    >>> dot(v, v)
    array(5.)
    >>> dot(v, 2.0).todense()
    array([2., 0., 4.])
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    be = backend(dev)
    if not (is_sparse(a) or is_sparse(b)):
        with be.scope():
            return be.xp.dot(a, b)
    if a.ndim == 0 or b.ndim == 0:
        dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
        if is_sparse(a) and is_sparse(b):
            raise ValueError("dot of a 0-d sparse array with a sparse array: use todense() on the 0-d one")
        sp, sc = (a, b) if is_sparse(a) else (b, a)
        if sc.ndim != 0:
            raise ValueError("dot with a 0-d sparse operand needs a scalar other operand; densify the 0-d one")
        return _scale(sp, be.xp.asarray(sc), dtype, be)
    if a.ndim <= 2 and b.ndim <= 2:
        with be.scope():
            return _matmul(a, b, what="dot", be=be)
    return _tensordot(a, b, ([a.ndim - 1], [max(b.ndim - 2, 0)]), be)


@returns_operand_kind
def inner(a, b):
    """NumPy's ``inner``: sum over the last axes of both (a scalar operand scales the other).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]]), device="cpu")
    >>> inner(x, np.array([1.0, 1.0]))
    array([1., 2.])
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    if a.ndim == 0 or b.ndim == 0:
        return dot(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


# --------------------------------------------------------------------------
# outer, kron
# --------------------------------------------------------------------------

def _coo_operand(x, be, dtype):
    """A sparse or dense operand as all-sparse COO (dense: its non-zero elements)."""
    if is_sparse(x):
        require_zero_fill(x, "operand", "outer/kron")
        return as_coo(all_sparse(settle_duplicates(x, dtype, be=be), be=be), be=be)
    from gpusparse.ops.creation import fromdense
    return fromdense(x, device=be.device)


@returns_operand_kind
def outer(a, b):
    """Outer product of the flattened operands (NumPy's ``outer``), as a sparse COO matrix.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> u = gs.COO([[1]], [2.0], shape=(3,), device="cpu")
    >>> outer(u, np.array([1.0, 0.0, 3.0])).todense().tolist()
    [[0.0, 0.0, 0.0], [2.0, 0.0, 6.0], [0.0, 0.0, 0.0]]
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    be = backend(dev)
    xp, k = be.xp, be.kernels
    if not (is_sparse(a) or is_sparse(b)):
        with be.scope():
            return xp.outer(a, b)
    dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
    size_a, size_b = math.prod(a.shape), math.prod(b.shape)
    with be.scope(), _memory.operation("outer"):
        A, B = _coo_operand(a, be, dtype), _coo_operand(b, be, dtype)
        _require_products(A.nnz, B.nnz, 2, dtype, dev, "outer")
        ka = linear_keys(list(A.coords), list(A.shape), k, xp) if A.ndim else xp.zeros(A.nnz, np.int64)
        kb = linear_keys(list(B.coords), list(B.shape), k, xp) if B.ndim else xp.zeros(B.nnz, np.int64)
        coords = xp.empty((2, A.nnz * B.nnz), dtype=np.int64)
        coords[0].reshape(A.nnz, B.nnz)[...] = ka.reshape(-1, 1)
        coords[1].reshape(A.nnz, B.nnz)[...] = kb.reshape(1, -1)
        da, db = A.data.astype(dtype, copy=False), B.data.astype(dtype, copy=False)
        data = (da.reshape(-1, 1) * db.reshape(1, -1)).reshape(-1)
        return new_coo(coords, data, (size_a, size_b), be,
                       sorted=A.sorted and B.sorted, unique=A.unique and B.unique)


def _require_products(nnz_a, nnz_b, nd, dtype, dev, name):
    """Refuse (``MemoryError``) an outer/Kronecker product of ``nnz_a * nnz_b`` entries that cannot fit.

    The result holds ``nd`` int64 coordinates and one value per entry; the
    coordinates are written in place, one dimension at a time, so the
    largest temporary is one coordinate row.
    """
    entries = nnz_a * nnz_b
    per_entry = 8 * nd + np.dtype(dtype).itemsize + 8
    _memory.require(entries * per_entry, dev, f"the result ({nnz_a} x {nnz_b} = {entries:.3g} stored entries)",
                    name)


@returns_operand_kind
def kron(a, b):
    """Kronecker product (NumPy's ``kron``, any rank), as a sparse COO array.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> i2 = gs.eye(2, device="cpu")
    >>> kron(i2, np.array([[1.0, 2.0]])).todense().tolist()
    [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0]]
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    be = backend(dev)
    xp = be.xp
    if not (is_sparse(a) or is_sparse(b)):
        with be.scope():
            return xp.kron(a, b)
    dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    shape = check_shape(tuple(x * y for x, y in zip(sa, sb)), "the result's shape")
    with be.scope(), _memory.operation("kron"):
        A, B = _coo_operand(a, be, dtype), _coo_operand(b, be, dtype)
        _require_products(A.nnz, B.nnz, nd, dtype, dev, "kron")
        ca = xp.concatenate([xp.zeros((nd - A.ndim, A.nnz), np.int64), A.coords]) if nd > A.ndim else A.coords
        cb = xp.concatenate([xp.zeros((nd - B.ndim, B.nnz), np.int64), B.coords]) if nd > B.ndim else B.coords
        coords = xp.empty((nd, A.nnz * B.nnz), dtype=np.int64)
        for d in range(nd):  # one row at a time: the only temporary is one (nnz_a, nnz_b) block
            block = coords[d].reshape(A.nnz, B.nnz)
            block[...] = cb[d].reshape(1, -1)
            block += ca[d].reshape(-1, 1) * sb[d]
        da, db = A.data.astype(dtype, copy=False), B.data.astype(dtype, copy=False)
        data = (da.reshape(-1, 1) * db.reshape(1, -1)).reshape(-1)
        out = new_coo(coords, data, shape, be,
                      sorted=nd <= 1 and A.sorted and B.sorted, unique=A.unique and B.unique)
    return convert.to_dense(out, be=be) if nd == 0 else out


# --------------------------------------------------------------------------
# TF
# --------------------------------------------------------------------------

def _adjoint(x, be):
    """``x.conj().T`` of a 2-D operand (free for CSR/CSC; conj copies complex values)."""
    xp = be.xp
    if is_sparse(x):
        x = all_sparse(x, be=be)
        t = transpose_2d(coo_to_csr(x, be=be) if x.format == "coo" else x, be=be)  # CSR.T is CSC: free
        if x.dtype.kind != "c":
            return t
        arrays = convert.components(t)
        return convert.rebuild(t, arrays[:-1] + (xp.conj(arrays[-1]),))
    return xp.conj(x).T if x.dtype.kind == "c" else x.T


@returns_operand_kind
def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False):
    """TF's ``sparse.sparse_dense_matmul``: ``op(sp_a) @ op(b)`` with optional adjoints.

    ``op(x)`` is ``x.conj().T`` when its ``adjoint_*`` flag is set (the
    transpose for real values). Both operands are 2-D; one is sparse (TF2
    also takes a dense ``sp_a`` with a sparse ``b``). The result is dense,
    or sparse when both are sparse.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[0, 1], [1, 0]], [1j, 2.0], shape=(2, 2), device="cpu")
    >>> sparse_dense_matmul(a, np.eye(2), adjoint_a=True).tolist()
    [[0j, (2+0j)], [-1j, 0j]]
    """
    (sp_a, b), dev = prepare((sp_a, b), ("sp_a", "b"))
    _need_ndim(sp_a, 2, "sp_a", "sparse_dense_matmul")
    _need_ndim(b, 2, "b", "sparse_dense_matmul")
    if not (is_sparse(sp_a) or is_sparse(b)):
        raise TypeError("sparse_dense_matmul: sp_a or b must be sparse")
    be = backend(dev)
    with be.scope():
        for x, name in ((sp_a, "sp_a"), (b, "b")):
            if is_sparse(x):
                require_zero_fill(x, name, "sparse_dense_matmul")
        a_op = _adjoint(sp_a, be) if adjoint_a else sp_a
        b_op = _adjoint(b, be) if adjoint_b else b
        return _matmul(a_op, b_op, ("sp_a", "b"), "sparse_dense_matmul", be=be)
