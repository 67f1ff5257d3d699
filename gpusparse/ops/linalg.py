"""Products: matmul, dot, tensordot, inner, outer, kron, the torch family and TF's sparse_dense_matmul.

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

Dense operands may be NumPy or device arrays, any DLPack producer (torch,
JAX) or nested lists; they must live on the sparse operand's device (lists
are moved there). Operations run on that device.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from gpusparse._device import device_scope, kernels_for, xp_for
from gpusparse._errors import warn_efficiency
from gpusparse.ops import canonical, convert
from gpusparse.ops._linalg_core import (
    BatchPlan,
    dense_sparse,
    finish_dense,
    finish_sparse,
    hybrid_left_dense,
    sparse_dense,
    sparse_sparse,
    spgemm_2d,
    spmm_into,
    transpose_2d,
)
from gpusparse.ops._linalg_operands import (
    CsrView,
    all_sparse,
    as_coo,
    compute_dtype,
    coo_to_csr,
    csr_view,
    drop_axes,
    insert_zero_axis,
    is_sparse,
    linear_keys,
    new_coo,
    prepare,
    require_zero_fill,
    result_dtype,
    settle_duplicates,
)
from gpusparse.ops._validate import check_shape

__all__ = [
    "MM_REDUCE_OPS",
    "addmm",
    "bmm",
    "dot",
    "hspmm",
    "inner",
    "kron",
    "matmul",
    "mm",
    "mv",
    "outer",
    "sampled_addmm",
    "smm",
    "sparse_dense_matmul",
    "sspaddmm",
    "tensordot",
]

#: ``reduce=`` values of :func:`mm` (torch's ``amax`` / ``amin`` are accepted too).
MM_REDUCE_OPS = ("sum", "mean", "max", "min")
_REDUCE_ALIASES = {"amax": "max", "amin": "min"}


# --------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------

def _check_operands(a, b, names, what):
    for x, name in zip((a, b), names):
        if x.ndim == 0:
            raise ValueError(f"{what}: {name} is 0-d; it needs at least one dimension "
                             "(multiply by a scalar instead)")
        if is_sparse(x):
            require_zero_fill(x, name, what)
    return result_dtype((names[0], a.dtype), (names[1], b.dtype))


def _matmul_shapes(a_shape, b_shape, names, what):
    """The shape of ``matmul(a, b)``; ``ValueError`` naming both operands when they cannot multiply."""
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        where = "its only" if len(b_shape) == 1 else "its second-to-last"
        raise ValueError(
            f"{what}: inner dimensions differ: {names[0]} has shape {a_shape} "
            f"({a2[-1]} along its last axis) but {names[1]} has shape {b_shape} "
            f"({b2[-2]} along {where} axis)"
        )
    out = BatchPlan(a2[:-2], b2[:-2], names).out
    if len(a_shape) > 1:
        out += (a2[-2],)
    if len(b_shape) > 1:
        out += (b2[-1],)
    return out


def _matmul(a, b, names=("a", "b"), what="matmul"):
    """matmul of prepared operands (at least one sparse, one device)."""
    dtype = _check_operands(a, b, names, what)
    out_shape = _matmul_shapes(tuple(a.shape), tuple(b.shape), names, what)
    sa, sb = is_sparse(a), is_sparse(b)
    cdt = compute_dtype(dtype)
    a = settle_duplicates(a, cdt) if sa else a
    b = settle_duplicates(b, cdt) if sb else b
    if sa and not sb and a.dense_dim > 0 and b.ndim <= 2:
        return hybrid_left_dense(a, b, dtype)
    a1, b1 = a.ndim == 1, b.ndim == 1
    fmt = a.format if sa and a.ndim == 2 and b.ndim == 2 else "coo"
    for x, name in ((a, names[0]), (b, names[1])):
        if is_sparse(x) and x.dense_dim and x.nnz:
            warn_efficiency(
                f"{what}: the dense dimensions of {name} (shape {x.shape}, dense_dim={x.dense_dim}) "
                "are made sparse for this product, one entry per element of every stored block; "
                "products that contract a dense dimension of the left operand with a 1-D or 2-D "
                "dense operand keep the blocks as they are"
            )
    if sa:
        a = all_sparse(a)
        a = insert_zero_axis(a, 0) if a1 else a
    elif a1:
        a = a.reshape(1, -1)
    if sb:
        b = all_sparse(b)
        b = insert_zero_axis(b, 1) if b1 else b
    elif b1:
        b = b.reshape(-1, 1)
    if sa and sb:
        res = sparse_sparse(a, b, dtype, fmt)
        if not (a1 or b1):
            return res
        promoted = ([res.ndim - 2] if a1 else []) + ([res.ndim - 1] if b1 else [])
        res = drop_axes(as_coo(res), promoted)
        return res.to_dense() if res.ndim == 0 else res
    res = sparse_dense(a, b, dtype) if sa else dense_sparse(a, b, dtype)
    return res.reshape(out_shape)


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
    if not (is_sparse(a) or is_sparse(b)):
        with device_scope(dev):
            return xp_for(dev).matmul(a, b)
    with device_scope(dev):
        return _matmul(a, b)


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


def _matrix_of(x, row_axes, col_axes, k, xp):
    """Sparse ``x`` as the 2-D COO ``(prod rows, prod cols)`` (a permutation and reshape)."""
    coo = as_coo(all_sparse(x))
    c = coo.coords
    row_shape = [coo.shape[i] for i in row_axes]
    col_shape = [coo.shape[i] for i in col_axes]
    r = linear_keys([c[i] for i in row_axes], row_shape, k, xp) if row_axes else xp.zeros(coo.nnz, np.int64)
    s = linear_keys([c[i] for i in col_axes], col_shape, k, xp) if col_axes else xp.zeros(coo.nnz, np.int64)
    keeps = list(row_axes) + list(col_axes) == list(range(coo.ndim))
    return new_coo(xp.stack([r, s]), coo.data, (math.prod(row_shape), math.prod(col_shape)),
                   coo.device, sorted=coo.sorted and keeps, unique=coo.unique)


def _scale(x, s, dtype):
    """Sparse ``x`` times a 0-d array ``s`` (dot with a scalar)."""
    from gpusparse._device import to_host
    from gpusparse.ops.convert import components, rebuild
    arrays = components(x)
    scalar = to_host(s).astype(dtype)[()]  # sync: the scalar, for the fill value
    with device_scope(x.device):
        data = arrays[-1].astype(dtype) * scalar
        fill = (np.asarray(x.fill_value).astype(dtype) * scalar)[()]
    return rebuild(x, arrays[:-1] + (data,), fill_value=fill)


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
    xp, k = xp_for(dev), kernels_for(dev)
    if not (is_sparse(a) or is_sparse(b)):
        with device_scope(dev):
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
    a = settle_duplicates(a, compute_dtype(dtype)) if is_sparse(a) else a
    b = settle_duplicates(b, compute_dtype(dtype)) if is_sparse(b) else b
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    R = math.prod(a.shape[i] for i in free_a)
    N = math.prod(b.shape[i] for i in free_b)
    C = math.prod(a.shape[i] for i in axes_a)
    with device_scope(dev):
        if is_sparse(a):  # the reshaped matrices are sorted once here, without a warning
            a2 = coo_to_csr(_matrix_of(a, free_a, axes_a, k, xp), warn=False)
        else:
            a2 = xp.transpose(a, free_a + axes_a).reshape(R, C)
        if is_sparse(b):
            b2 = coo_to_csr(_matrix_of(b, axes_b, free_b, k, xp), warn=False)
        else:
            b2 = xp.transpose(b, axes_b + free_b).reshape(C, N)
        if is_sparse(a) and is_sparse(b):
            res = canonical.coalesce(as_coo(spgemm_2d(a2, b2, compute_dtype(dtype))))
            coords_a = k.delinearize(res.coords[0], tuple(a.shape[i] for i in free_a))
            coords_b = k.delinearize(res.coords[1], tuple(b.shape[i] for i in free_b))
            out = new_coo(xp.concatenate([coords_a, coords_b]), res.data, out_shape, dev,
                          sorted=res.sorted, unique=True)
            out = finish_sparse(out, dtype)
            return out.to_dense() if out.ndim == 0 else out
        res = sparse_dense(a2, b2, dtype) if is_sparse(a) else dense_sparse(a2, b2, dtype)
        return res.reshape(out_shape)


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
    if not (is_sparse(a) or is_sparse(b)):
        with device_scope(dev):
            return xp_for(dev).dot(a, b)
    if a.ndim == 0 or b.ndim == 0:
        dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
        if is_sparse(a) and is_sparse(b):
            raise ValueError("dot of a 0-d sparse array with a sparse array: use todense() on the 0-d one")
        sp, sc = (a, b) if is_sparse(a) else (b, a)
        if sc.ndim != 0:
            raise ValueError("dot with a 0-d sparse operand needs a scalar other operand; densify the 0-d one")
        return _scale(sp, xp_for(dev).asarray(sc), dtype)
    if a.ndim <= 2 and b.ndim <= 2:
        with device_scope(dev):
            return _matmul(a, b, what="dot")
    return tensordot(a, b, axes=([a.ndim - 1], [max(b.ndim - 2, 0)]))


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

def _coo_operand(x, dev, dtype):
    """A sparse or dense operand as all-sparse COO (dense: its non-zero elements)."""
    if is_sparse(x):
        require_zero_fill(x, "operand", "outer/kron")
        return as_coo(all_sparse(settle_duplicates(x, dtype)))
    from gpusparse.ops.creation import fromdense
    return fromdense(x, device=dev)


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
    xp, k = xp_for(dev), kernels_for(dev)
    if not (is_sparse(a) or is_sparse(b)):
        with device_scope(dev):
            return xp.outer(a, b)
    dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
    size_a, size_b = math.prod(a.shape), math.prod(b.shape)
    with device_scope(dev):
        A, B = _coo_operand(a, dev, dtype), _coo_operand(b, dev, dtype)
        ka = linear_keys(list(A.coords), list(A.shape), k, xp) if A.ndim else xp.zeros(A.nnz, np.int64)
        kb = linear_keys(list(B.coords), list(B.shape), k, xp) if B.ndim else xp.zeros(B.nnz, np.int64)
        rows = xp.repeat(ka, B.nnz)
        cols = xp.tile(kb, A.nnz)
        da, db = A.data.astype(dtype, copy=False), B.data.astype(dtype, copy=False)
        data = (da.reshape(-1, 1) * db.reshape(1, -1)).reshape(-1)
        return new_coo(xp.stack([rows, cols]), data, (size_a, size_b), dev,
                       sorted=A.sorted and B.sorted, unique=A.unique and B.unique)


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
    xp = xp_for(dev)
    if not (is_sparse(a) or is_sparse(b)):
        with device_scope(dev):
            return xp.kron(a, b)
    dtype = result_dtype(("a", a.dtype), ("b", b.dtype))
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    shape = check_shape(tuple(x * y for x, y in zip(sa, sb)), "the result's shape")
    with device_scope(dev):
        A, B = _coo_operand(a, dev, dtype), _coo_operand(b, dev, dtype)
        ca = xp.concatenate([xp.zeros((nd - A.ndim, A.nnz), np.int64), A.coords]) if nd > A.ndim else A.coords
        cb = xp.concatenate([xp.zeros((nd - B.ndim, B.nnz), np.int64), B.coords]) if nd > B.ndim else B.coords
        ia = xp.repeat(xp.arange(A.nnz, dtype=np.int64), B.nnz)
        ib = xp.tile(xp.arange(B.nnz, dtype=np.int64), A.nnz)
        scale = xp.asarray(sb, dtype=np.int64).reshape(-1, 1)
        coords = ca[:, ia] * scale + cb[:, ib]
        da, db = A.data.astype(dtype, copy=False), B.data.astype(dtype, copy=False)
        data = (da.reshape(-1, 1) * db.reshape(1, -1)).reshape(-1)
        out = new_coo(coords.reshape(nd, -1), data, shape, dev,
                      sorted=nd <= 1 and A.sorted and B.sorted, unique=A.unique and B.unique)
    return out.to_dense() if nd == 0 else out


# --------------------------------------------------------------------------
# torch: mm, mv, bmm, addmm, sspaddmm, hspmm, smm, sampled_addmm
# --------------------------------------------------------------------------

def _need_ndim(x, ndim, name, what):
    if x.ndim != ndim:
        raise ValueError(f"{what}: {name} must be {ndim}-D, got shape {tuple(x.shape)}")


def _need_sparse(x, name, what, dense_ok=False):
    if not is_sparse(x):
        raise TypeError(f"{what}: {name} must be a sparse array, got {type(x).__name__}")
    if x.dense_dim and not dense_ok:
        raise ValueError(f"{what}: {name} must have no dense dimensions, got dense_dim={x.dense_dim}")


def _need_dense(x, name, what):
    if is_sparse(x):
        raise TypeError(f"{what}: {name} must be dense, got a sparse {type(x).__name__}")


def _reduce_name(reduce):
    op = _REDUCE_ALIASES.get(reduce, reduce)
    if op not in MM_REDUCE_OPS:
        raise ValueError(f"reduce must be one of {MM_REDUCE_OPS} (or 'amax', 'amin'), got {reduce!r}")
    return op


def mm(a, b, reduce=None):
    """Matrix product of two 2-D operands (torch's ``mm`` / ``sparse.mm``), optionally reduced.

    Parameters
    ----------
    a, b : 2-D operands, one sparse at least
    reduce : {None, "sum", "mean", "max", "min"}, optional
        With a reduction, ``a`` must be sparse and ``b`` dense, and
        ``out[i, :] = reduce over the stored (i, j) of a_ij * b[j, :]``;
        rows of ``a`` without entries give 0 (torch's
        ``sparse.mm(a, b, reduce=)``; ``"amax"`` / ``"amin"`` are accepted).
        ``mean`` of integers is float64 (NumPy's mean); ``max`` / ``min`` of
        complex values raise ``TypeError``.

    Notes
    -----
    Only stored elements are multiplied, as in SciPy: an unstored (structural)
    zero times ``inf`` or ``nan`` in the other operand contributes nothing,
    where NumPy's dense product would give ``nan`` (``0 * inf``). A stored
    zero is multiplied like any value (``0.0 * inf`` is ``nan``).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.CSR([0, 2, 2, 3], [0, 2, 1], [1.0, -2.0, 3.0], shape=(3, 3), device="cpu")
    >>> b = np.array([[1.0, 2.0], [3.0, -4.0], [5.0, 6.0]])
    >>> mm(a, b, reduce="max").tolist()
    [[1.0, 2.0], [0.0, 0.0], [9.0, -12.0]]
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    _need_ndim(a, 2, "a", "mm")
    _need_ndim(b, 2, "b", "mm")
    op = None if reduce is None else _reduce_name(reduce)
    if op in (None, "sum"):
        if not (is_sparse(a) or is_sparse(b)):
            with device_scope(dev):
                return xp_for(dev).matmul(a, b)
        with device_scope(dev):
            return _matmul(a, b, what="mm")
    _need_sparse(a, "a", "mm(reduce=...)")
    _need_dense(b, "b", "mm(reduce=...)")
    dtype = _check_operands(a, b, ("a", "b"), "mm")
    _matmul_shapes(tuple(a.shape), tuple(b.shape), ("a", "b"), "mm")
    if op == "mean" and dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    if op in ("max", "min") and dtype.kind == "c":
        raise TypeError(f"mm: reduce={reduce!r} is not defined for complex values ({dtype.name})")
    cdt = compute_dtype(dtype)
    k, xp = kernels_for(dev), xp_for(dev)
    with device_scope(dev):
        csr = a.asformat("csr") if a.format == "csc" else a
        view = csr_view(csr)
        if a.shape[0] * b.shape[1] == 0:
            return xp.zeros((a.shape[0], b.shape[1]), dtype=dtype)
        out = k.spmm_reduce(view.indptr, view.indices, view.data.astype(cdt, copy=False),
                            view.stored_shape, xp.ascontiguousarray(b.astype(cdt, copy=False)), op)
        return finish_dense(out, dtype)


def mv(a, v):
    """Matrix-vector product (torch's ``mv``): 2-D ``a`` times 1-D ``v``.

    Unstored zeros of ``a`` times ``inf`` or ``nan`` in ``v`` contribute
    nothing (SciPy's rule, see :func:`matmul`).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> mv(gs.eye(2, device="cpu"), np.array([3.0, 4.0]))
    array([3., 4.])
    """
    (a, v), dev = prepare((a, v), ("a", "v"))
    _need_ndim(a, 2, "a", "mv")
    _need_ndim(v, 1, "v", "mv")
    with device_scope(dev):
        return _matmul(a, v, ("a", "v"), "mv")


def bmm(a, b):
    """Batched matrix product (torch's ``bmm``): 3-D operands with the same batch size.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.fromdense(np.stack([np.eye(2), 2 * np.eye(2)]), device="cpu")
    >>> bmm(x, np.ones((2, 2, 1)))[:, :, 0].tolist()
    [[1.0, 1.0], [2.0, 2.0]]
    """
    (a, b), dev = prepare((a, b), ("a", "b"))
    _need_ndim(a, 3, "a", "bmm")
    _need_ndim(b, 3, "b", "bmm")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: a has {a.shape[0]}, b has {b.shape[0]}")
    with device_scope(dev):
        return _matmul(a, b, what="bmm")


def _check_scalar(value, name):
    """``value`` as a Python number (so that it promotes weakly, as NumPy's scalars do)."""
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "biufc":
        raise TypeError(f"{name} must be a number, got {value!r}")
    return arr.item()


def _with_scalars(dtype, *scalars):
    """``dtype`` promoted with Python scalars (NumPy 2's weak promotion)."""
    out = np.result_type(dtype, *scalars)
    return result_dtype(("the operands", out))


def _sparse_axpby(x, y, alpha, beta, dtype):
    """``beta * x + alpha * y`` for same-shape sparse ``x``, ``y`` (zero fills): coalesced COO."""
    xc, yc = as_coo(settle_duplicates(x, dtype)), as_coo(settle_duplicates(y, dtype))
    dev = x.device
    xp = xp_for(dev)
    with device_scope(dev):
        coords = xp.concatenate([xc.coords, yc.coords], axis=1)
        data = xp.concatenate([xc.data.astype(dtype) * dtype.type(beta),
                               yc.data.astype(dtype) * dtype.type(alpha)])
    return canonical.coalesce(new_coo(coords, data, x.shape, dev, sorted=False, unique=False))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` (torch's ``addmm`` / ``sparse.addmm``).

    ``mat1`` and ``mat2`` are 2-D, one sparse at least. When their product
    is dense, ``input`` must be dense and broadcast to the result; when both
    are sparse, ``input`` may be sparse (sparse result, ``mat1``'s format
    for CSR/CSC, else COO) or dense (dense result). ``beta == 0`` ignores
    ``input``'s values (NaN included), as torch does.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.eye(2, format="csr", device="cpu")
    >>> addmm(np.ones((2, 2)), a, np.full((2, 2), 3.0), beta=2.0, alpha=0.5).tolist()
    [[3.5, 3.5], [3.5, 3.5]]
    """
    (input, mat1, mat2), dev = prepare((input, mat1, mat2), ("input", "mat1", "mat2"))
    _need_ndim(mat1, 2, "mat1", "addmm")
    _need_ndim(mat2, 2, "mat2", "addmm")
    beta, alpha = _check_scalar(beta, "beta"), _check_scalar(alpha, "alpha")
    if not (is_sparse(mat1) or is_sparse(mat2)):
        raise TypeError("addmm: mat1 or mat2 must be sparse (use the dense library for dense operands)")
    _check_operands(mat1, mat2, ("mat1", "mat2"), "addmm")
    _matmul_shapes(tuple(mat1.shape), tuple(mat2.shape), ("mat1", "mat2"), "addmm")
    dtype = result_dtype(("input", input.dtype), ("mat1", mat1.dtype), ("mat2", mat2.dtype))
    dtype = _with_scalars(dtype, alpha, beta)
    m, n = mat1.shape[0], mat2.shape[1]
    xp = xp_for(dev)
    with device_scope(dev):
        if is_sparse(input):
            require_zero_fill(input, "input", "addmm")
            if input.shape != (m, n):
                raise ValueError(f"addmm: input has shape {input.shape}, the product has {(m, n)}")
            if not (is_sparse(mat1) and is_sparse(mat2)):
                raise TypeError("addmm: a sparse input needs sparse mat1 and mat2 "
                                "(sspaddmm takes a sparse input with a dense mat2)")
            prod = _matmul(mat1, mat2, ("mat1", "mat2"), "addmm")
            out = _sparse_axpby(input, prod, alpha, beta, dtype)
            fmt = mat1.format
            return out if fmt == "coo" else convert.asformat(out, fmt)
        try:
            base = xp.broadcast_to(input, (m, n))
        except ValueError:
            raise ValueError(f"addmm: input of shape {input.shape} does not broadcast to the "
                             f"product's shape {(m, n)}") from None
        cdt = compute_dtype(dtype)
        fused = is_sparse(mat1) and not is_sparse(mat2) and mat1.dense_dim == 0 and dtype != np.bool_
        if fused and m * n and mat1.nnz and mat1.shape[1]:
            out = xp.array(base, dtype=cdt, copy=True) if beta != 0 else xp.empty((m, n), dtype=cdt)
            view = csr_view(mat1).astype(cdt)
            spmm_into(view, mat2.astype(cdt, copy=False), out, dev, cdt.type(alpha), cdt.type(beta))
            return out
        prod = _matmul(mat1, mat2, ("mat1", "mat2"), "addmm")
        prod = prod.to_dense() if is_sparse(prod) else prod
        scaled = prod.astype(dtype) * dtype.type(alpha)
        if beta == 0:
            return xp.ascontiguousarray(xp.broadcast_to(scaled, (m, n)))
        return base.astype(dtype) * dtype.type(beta) + scaled


def _nonempty_rows_csr(a, xp):
    """``(rows, sub_indptr)``: the rows of canonical CSR ``a`` holding entries, and their index pointer."""
    indptr = a.indptr
    counts = indptr[1:] - indptr[:-1]
    rows = xp.nonzero(counts)[0].astype(np.int64)  # sync: the number of non-empty rows
    sub = xp.concatenate([indptr[rows], indptr[-1:]])
    return rows, sub


def hspmm(mat1, mat2):
    """Sparse (m, k) @ dense (k, n) as a hybrid COO: one stored row (n values) per non-empty row of ``mat1``.

    torch's ``hspmm``: the result has ``sparse_dim == 1`` and
    ``dense_dim == 1``, and stores exactly the rows of ``mat1`` that hold
    entries. May synchronise the device (the number of such rows).

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[0, 0], [0, 2]], [1.0, 2.0], shape=(3, 3), device="cpu")
    >>> h = hspmm(a, np.ones((3, 2)))
    >>> h.coords, h.data, h.shape
    (array([[0]]), array([[3., 3.]]), (3, 2))
    """
    from gpusparse.containers import COO
    (mat1, mat2), dev = prepare((mat1, mat2), ("mat1", "mat2"))
    _need_sparse(mat1, "mat1", "hspmm")
    _need_dense(mat2, "mat2", "hspmm")
    _need_ndim(mat1, 2, "mat1", "hspmm")
    _need_ndim(mat2, 2, "mat2", "hspmm")
    dtype = _check_operands(mat1, mat2, ("mat1", "mat2"), "hspmm")
    _matmul_shapes(tuple(mat1.shape), tuple(mat2.shape), ("mat1", "mat2"), "hspmm")
    cdt = compute_dtype(dtype)
    xp = xp_for(dev)
    m, n = mat1.shape[0], mat2.shape[1]
    with device_scope(dev):
        csr = mat1 if mat1.format == "csr" else (coo_to_csr(mat1) if mat1.format == "coo"
                                                 else convert.asformat(mat1, "csr"))
        rows, sub = _nonempty_rows_csr(csr, xp)
        vals = xp.empty((rows.shape[0], n), dtype=cdt)
        view = CsrView(sub, csr.indices, csr.data.astype(cdt, copy=False), (rows.shape[0], mat1.shape[1]))
        spmm_into(view, mat2.astype(cdt, copy=False), vals, dev)
        vals = finish_dense(vals, dtype)
        return COO._from_parts(rows.reshape(1, -1), xp.ascontiguousarray(vals), (m, n), dtype.type(0), dev,
                               sorted=True, unique=True)


def smm(mat1, mat2):
    """Sparse (m, k) @ dense (k, n) as a sparse COO matrix (torch's ``smm``): every element of the non-empty rows.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[1], [0]], [2.0], shape=(2, 2), device="cpu")
    >>> smm(a, np.ones((2, 3))).todense().tolist()
    [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]
    """
    from gpusparse.ops.manipulation import sparsify
    return sparsify(hspmm(mat1, mat2), 2)


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` as a sparse COO (torch's ``sspaddmm``).

    ``input`` and ``mat1`` are sparse 2-D, ``mat2`` is dense; the product
    contributes every element of the rows where ``mat1`` has entries. The
    result is coalesced.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> s = gs.COO([[0], [1]], [5.0], shape=(2, 2), device="cpu")
    >>> sspaddmm(s, s, np.ones((2, 2)), beta=2.0).todense().tolist()
    [[5.0, 15.0], [0.0, 0.0]]
    """
    (input, mat1, mat2), dev = prepare((input, mat1, mat2), ("input", "mat1", "mat2"))
    _need_sparse(input, "input", "sspaddmm")
    _need_ndim(input, 2, "input", "sspaddmm")
    beta, alpha = _check_scalar(beta, "beta"), _check_scalar(alpha, "alpha")
    require_zero_fill(input, "input", "sspaddmm")
    prod = smm(mat1, mat2)
    if input.shape != prod.shape:
        raise ValueError(f"sspaddmm: input has shape {input.shape}, mat1 @ mat2 has {prod.shape}")
    dtype = _with_scalars(result_dtype(("input", input.dtype), ("product", prod.dtype)), alpha, beta)
    return _sparse_axpby(all_sparse(input), prod, alpha, beta, dtype)


def sampled_addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``alpha * (mat1 @ mat2) * spy(input) + beta * input`` at the sparsity of ``input`` (SDDMM).

    torch's ``sparse.sampled_addmm``: ``mat1 @ mat2`` is only computed at
    the positions ``input`` stores. ``input`` is sparse (any format, no
    dense dimensions), 2-D or batched ``(*batch, m, n)``; ``mat1``
    ``(*batch, m, k)`` and ``mat2`` ``(*batch, k, n)`` are dense and their
    batch dimensions broadcast to ``input``'s. The result has ``input``'s
    format and (coalesced) sparsity pattern.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> s = gs.eye(2, format="csr", device="cpu")
    >>> r = sampled_addmm(s, np.ones((2, 3)), np.ones((3, 2)), beta=0.5, alpha=2.0)
    >>> r.todense().tolist()
    [[6.5, 0.0], [0.0, 6.5]]
    """
    (input, mat1, mat2), dev = prepare((input, mat1, mat2), ("input", "mat1", "mat2"))
    what = "sampled_addmm"
    _need_sparse(input, "input", what)
    _need_dense(mat1, "mat1", what)
    _need_dense(mat2, "mat2", what)
    require_zero_fill(input, "input", what)
    beta, alpha = _check_scalar(beta, "beta"), _check_scalar(alpha, "alpha")
    if input.ndim < 2 or mat1.ndim < 2 or mat2.ndim < 2:
        raise ValueError(f"{what}: input, mat1 and mat2 must be at least 2-D, got shapes "
                         f"{input.shape}, {mat1.shape}, {mat2.shape}")
    m, n = input.shape[-2:]
    if mat1.shape[-2] != m or mat2.shape[-1] != n or mat1.shape[-1] != mat2.shape[-2]:
        raise ValueError(f"{what}: shapes do not line up: input {input.shape}, mat1 {mat1.shape}, "
                         f"mat2 {mat2.shape} (need (m, n), (m, k), (k, n))")
    batch = tuple(input.shape[:-2])
    try:
        np.broadcast_shapes(mat1.shape[:-2], mat2.shape[:-2], batch)
        if np.broadcast_shapes(mat1.shape[:-2], mat2.shape[:-2], batch) != batch:
            raise ValueError
    except ValueError:
        raise ValueError(f"{what}: the batch dimensions of mat1 {mat1.shape[:-2]} and mat2 "
                         f"{mat2.shape[:-2]} must broadcast to input's {batch}") from None
    dtype = result_dtype(("input", input.dtype), ("mat1", mat1.dtype), ("mat2", mat2.dtype))
    cdt = compute_dtype(dtype)
    k, xp = kernels_for(dev), xp_for(dev)
    kk = mat1.shape[-1]
    with device_scope(dev):
        a = xp.ascontiguousarray(xp.broadcast_to(mat1, batch + (m, kk)).astype(cdt, copy=False)).reshape(-1, kk)
        bt = xp.ascontiguousarray(xp.broadcast_to(xp.swapaxes(mat2, -1, -2), batch + (n, kk))
                                  .astype(cdt, copy=False)).reshape(-1, kk)
        if input.format == "csr":
            x = input
            vals = k.sddmm(x.indptr, x.indices, a, bt, cdt.type(alpha))
        elif input.format == "csc":
            x = input
            vals = k.sddmm(x.indptr, x.indices, bt, a, cdt.type(alpha))
        else:
            x = canonical.coalesce(input)
            c = x.coords
            if batch:
                blin = linear_keys(list(c[:-2]), list(batch), k, xp)
                rows, cols = blin * m + c[-2], blin * n + c[-1]
            else:
                rows, cols = c[0], c[1]
            from gpusparse.containers import CSR
            two_d = new_coo(xp.stack([rows, cols]), x.data, (math.prod(batch) * m, math.prod(batch) * n),
                            dev, sorted=True, unique=True)
            csr = convert.coo_to_compressed(two_d, CSR)
            vals = k.sddmm(csr.indptr, csr.indices, a, bt, cdt.type(alpha))
        if beta != 0:
            vals = vals + x.data.astype(cdt, copy=False) * cdt.type(beta)
        vals = finish_dense(vals, dtype)
        arrays = convert.components(x)
        return convert.rebuild(x, arrays[:-1] + (vals,), fill_value=dtype.type(0))


# --------------------------------------------------------------------------
# TF
# --------------------------------------------------------------------------

def _adjoint(x, xp):
    """``x.conj().T`` of a 2-D operand (free for CSR/CSC; conj copies complex values)."""
    if is_sparse(x):
        x = all_sparse(x)
        t = transpose_2d(coo_to_csr(x) if x.format == "coo" else x)  # CSR.T is CSC: free
        if x.dtype.kind != "c":
            return t
        arrays = convert.components(t)
        return convert.rebuild(t, arrays[:-1] + (xp.conj(arrays[-1]),))
    return xp.conj(x).T if x.dtype.kind == "c" else x.T


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
    xp = xp_for(dev)
    with device_scope(dev):
        for x, name in ((sp_a, "sp_a"), (b, "b")):
            if is_sparse(x):
                require_zero_fill(x, name, "sparse_dense_matmul")
        a_op = _adjoint(sp_a, xp) if adjoint_a else sp_a
        b_op = _adjoint(b, xp) if adjoint_b else b
        return _matmul(a_op, b_op, ("sp_a", "b"), "sparse_dense_matmul")
