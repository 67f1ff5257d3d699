"""torch's product family: mm (with reduce), mv, bmm, addmm, sspaddmm, hspmm, smm, sampled_addmm.

Re-exported by :mod:`gpusparse.ops.linalg`. The notes on semantics of
:mod:`gpusparse.ops.linalg.products` (zero fill values, uncoalesced
operands, dtype promotion, only stored elements multiplied) apply here too.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import canonical, convert
from gpusparse.ops.linalg.core import (
    _check_operands,
    _matmul,
    _matmul_shapes,
    _need_dense,
    _need_ndim,
    _need_sparse,
    finish_dense,
    spmm_into,
)
from gpusparse.ops.linalg.operands import (
    CsrView,
    all_sparse,
    as_coo,
    compute_dtype,
    coo_to_csr,
    csr_view,
    is_sparse,
    linear_keys,
    new_coo,
    prepare,
    require_zero_fill,
    result_dtype,
    returns_operand_kind,
    settle_duplicates,
)

__all__ = ["MM_REDUCE_OPS", "addmm", "bmm", "hspmm", "mm", "mv", "sampled_addmm", "smm", "sspaddmm"]

#: ``reduce=`` values of :func:`mm` (torch's ``amax`` / ``amin`` are accepted too).
MM_REDUCE_OPS = ("sum", "mean", "max", "min")
_REDUCE_ALIASES = {"amax": "max", "amin": "min"}


def _reduce_name(reduce):
    op = _REDUCE_ALIASES.get(reduce, reduce)
    if op not in MM_REDUCE_OPS:
        raise ValueError(f"reduce must be one of {MM_REDUCE_OPS} (or 'amax', 'amin'), got {reduce!r}")
    return op


@returns_operand_kind
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
    return mm_on(a, b, reduce, backend(dev))


def mm_on(a, b, reduce, be):
    """:func:`mm` of ``a`` and ``b`` on the backend ``be`` of their one device."""
    (a, b), _ = prepare((a, b), ("a", "b"))
    _need_ndim(a, 2, "a", "mm")
    _need_ndim(b, 2, "b", "mm")
    op = None if reduce is None else _reduce_name(reduce)
    if op in (None, "sum"):
        with be.scope():
            if not (is_sparse(a) or is_sparse(b)):
                return be.xp.matmul(a, b)
            return _matmul(a, b, what="mm", be=be)
    _need_sparse(a, "a", "mm(reduce=...)")
    _need_dense(b, "b", "mm(reduce=...)")
    dtype = _check_operands(a, b, ("a", "b"), "mm")
    _matmul_shapes(tuple(a.shape), tuple(b.shape), ("a", "b"), "mm")
    if op == "mean" and dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    if op in ("max", "min") and dtype.kind == "c":
        raise TypeError(f"mm: reduce={reduce!r} is not defined for complex values ({dtype.name})")
    cdt = compute_dtype(dtype)
    k, xp = be.kernels, be.xp
    with be.scope():
        csr = convert.asformat(a, "csr", be=be) if a.format == "csc" else a
        view = csr_view(csr, be=be)
        if a.shape[0] * b.shape[1] == 0:
            return xp.zeros((a.shape[0], b.shape[1]), dtype=dtype)
        out = k.spmm_reduce(view.indptr, view.indices, view.data.astype(cdt, copy=False),
                            view.stored_shape, xp.ascontiguousarray(b.astype(cdt, copy=False)), op)
        return finish_dense(out, dtype)


@returns_operand_kind
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
    be = backend(dev)
    with be.scope():
        return _matmul(a, v, ("a", "v"), "mv", be=be)


@returns_operand_kind
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
    be = backend(dev)
    with be.scope():
        return _matmul(a, b, what="bmm", be=be)


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


def _sparse_axpby(x, y, alpha, beta, dtype, be):
    """``beta * x + alpha * y`` for same-shape sparse ``x``, ``y`` (zero fills) on ``be``: coalesced COO."""
    xc = as_coo(settle_duplicates(x, dtype, be=be), be=be)
    yc = as_coo(settle_duplicates(y, dtype, be=be), be=be)
    xp = be.xp
    with be.scope():
        coords = xp.concatenate([xc.coords, yc.coords], axis=1)
        data = xp.concatenate([xc.data.astype(dtype) * dtype.type(beta),
                               yc.data.astype(dtype) * dtype.type(alpha)])
    return canonical.coalesce(new_coo(coords, data, x.shape, be, sorted=False, unique=False), be=be)


@returns_operand_kind
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
    be = backend(dev)
    xp = be.xp
    with be.scope():
        if is_sparse(input):
            require_zero_fill(input, "input", "addmm")
            if input.shape != (m, n):
                raise ValueError(f"addmm: input has shape {input.shape}, the product has {(m, n)}")
            if not (is_sparse(mat1) and is_sparse(mat2)):
                raise TypeError("addmm: a sparse input needs sparse mat1 and mat2 "
                                "(sspaddmm takes a sparse input with a dense mat2)")
            prod = _matmul(mat1, mat2, ("mat1", "mat2"), "addmm", be=be)
            out = _sparse_axpby(input, prod, alpha, beta, dtype, be)
            fmt = mat1.format
            return out if fmt == "coo" else convert.asformat(out, fmt, be=be)
        try:
            base = xp.broadcast_to(input, (m, n))
        except ValueError:
            raise ValueError(f"addmm: input of shape {input.shape} does not broadcast to the "
                             f"product's shape {(m, n)}") from None
        cdt = compute_dtype(dtype)
        fused = is_sparse(mat1) and not is_sparse(mat2) and mat1.dense_dim == 0 and dtype != np.bool_
        if fused and m * n and mat1.nnz and mat1.shape[1]:
            out = xp.array(base, dtype=cdt, copy=True) if beta != 0 else xp.empty((m, n), dtype=cdt)
            view = csr_view(mat1, be=be).astype(cdt)
            spmm_into(view, mat2.astype(cdt, copy=False), out, be, cdt.type(alpha), cdt.type(beta))
            return out
        prod = _matmul(mat1, mat2, ("mat1", "mat2"), "addmm", be=be)
        prod = convert.to_dense(prod, be=be) if is_sparse(prod) else prod
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


@returns_operand_kind
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
    be = backend(dev)
    xp = be.xp
    m, n = mat1.shape[0], mat2.shape[1]
    with be.scope():
        csr = mat1 if mat1.format == "csr" else (coo_to_csr(mat1, be=be) if mat1.format == "coo"
                                                 else convert.asformat(mat1, "csr", be=be))
        rows, sub = _nonempty_rows_csr(csr, xp)
        vals = xp.empty((rows.shape[0], n), dtype=cdt)
        view = CsrView(sub, csr.indices, csr.data.astype(cdt, copy=False), (rows.shape[0], mat1.shape[1]))
        spmm_into(view, mat2.astype(cdt, copy=False), vals, be)
        vals = finish_dense(vals, dtype)
        return COO._from_parts(rows.reshape(1, -1), xp.ascontiguousarray(vals), (m, n), dtype.type(0), dev,
                               sorted=True, unique=True)


@returns_operand_kind
def smm(mat1, mat2):
    """Sparse (m, k) @ dense (k, n) as a sparse COO matrix (torch's ``smm``): every element of the non-empty rows.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> a = gs.COO([[1], [0]], [2.0], shape=(2, 2), device="cpu")
    >>> smm(a, np.ones((2, 3))).todense().tolist()
    [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]
    """
    from gpusparse.ops.shape import sparsify
    return sparsify(hspmm(mat1, mat2), 2)


@returns_operand_kind
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
    be = backend(dev)
    return _sparse_axpby(all_sparse(input, be=be), prod, alpha, beta, dtype, be)


@returns_operand_kind
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
    be = backend(dev)
    k, xp = be.kernels, be.xp
    kk = mat1.shape[-1]
    with be.scope():
        rows_a, rows_b = math.prod(batch) * m, math.prod(batch) * n  # explicit: reshape(-1, 0) is ambiguous
        a = xp.ascontiguousarray(xp.broadcast_to(mat1, batch + (m, kk)).astype(cdt, copy=False)).reshape(rows_a, kk)
        bt = xp.ascontiguousarray(xp.broadcast_to(xp.swapaxes(mat2, -1, -2), batch + (n, kk))
                                  .astype(cdt, copy=False)).reshape(rows_b, kk)
        if input.format == "csr":
            x = input
            vals = k.sddmm(x.indptr, x.indices, a, bt, cdt.type(alpha))
        elif input.format == "csc":
            x = input
            vals = k.sddmm(x.indptr, x.indices, bt, a, cdt.type(alpha))
        else:
            x = canonical.coalesce(input, be=be)
            c = x.coords
            if batch:
                blin = linear_keys(list(c[:-2]), list(batch), k, xp)
                rows, cols = blin * m + c[-2], blin * n + c[-1]
            else:
                rows, cols = c[0], c[1]
            from gpusparse.containers import CSR
            two_d = new_coo(xp.stack([rows, cols]), x.data, (math.prod(batch) * m, math.prod(batch) * n),
                            be, sorted=True, unique=True)
            csr = convert.coo_to_compressed(two_d, CSR, be=be)
            vals = k.sddmm(csr.indptr, csr.indices, a, bt, cdt.type(alpha))
        if beta != 0:
            vals = vals + x.data.astype(cdt, copy=False) * cdt.type(beta)
        vals = finish_dense(vals, dtype)
        arrays = convert.components(x)
        return convert.rebuild(x, arrays[:-1] + (vals,), fill_value=dtype.type(0))
