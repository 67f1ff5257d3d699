"""The differentiable operators: argument checks, canonical operands, results in the form given."""

from __future__ import annotations

import torch

from gpusparse.autograd import _ops
from gpusparse.autograd._parts import Sparse, as_sparse

__all__ = ["addmm", "bmm", "coalesce", "log_softmax", "mm", "mul", "mv", "sampled_addmm", "softmax",
           "sparse_dense_matmul", "sparse_mask", "spgemm", "sum", "to_dense", "transpose"]

_REDUCE = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "amax": "max", "amin": "min"}


def _canonical(sp: Sparse) -> Sparse:
    """``sp`` with sorted unique entries: uncoalesced COO goes through the differentiable coalesce."""
    if sp.layout == "coo" and not sp.coalesced:
        indices, values, _ = _ops.coalesce(sp.index[0], sp.values, sp.shape)
        return sp.with_(index=[indices], values=values, coalesced=True)
    return sp


def _float(sp: Sparse, name: str) -> None:
    if not sp.values.is_floating_point():
        raise TypeError(f"{name} must have real floating-point values, got {sp.values.dtype}")


def _dense(x, name: str, sp: Sparse, ndim=None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) torch tensor, got "
                        f"{getattr(x, 'layout', type(x).__name__)}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(x.shape)}")
    if x.dtype != sp.values.dtype:
        raise TypeError(f"{name} has dtype {x.dtype} but the sparse operand has {sp.values.dtype}")
    if x.device != sp.values.device:
        raise ValueError(f"{name} is on {x.device} but the sparse operand is on {sp.values.device}")
    return x


def _matrix(x, name: str) -> Sparse:
    sp = as_sparse(x, name)
    if len(sp.shape) != 2 or sp.dense_dim:
        raise ValueError(f"{name} must be a 2-D sparse matrix without dense dimensions, got shape {sp.shape} "
                         f"with {sp.dense_dim} dense")
    _float(sp, name)
    return _canonical(sp)


def _product_shapes(sp, b, names, transpose=False):
    k = sp.shape[0] if transpose else sp.shape[1]
    if b.shape[0] != k:
        raise ValueError(f"{names[0]} and {names[1]} cannot be multiplied: shapes {sp.shape}"
                         f"{'.T' if transpose else ''} and {tuple(b.shape)}")


# --------------------------------------------------------------------------
# products
# --------------------------------------------------------------------------

def mm(a, b, reduce=None):
    """``a @ b`` for a sparse and a dense matrix (torch's ``sparse.mm``), optionally reduced.

    Parameters
    ----------
    a, b : sparse matrix and dense ``torch.Tensor`` (or dense ``a`` and sparse ``b``)
        The sparse operand is a torch sparse tensor (COO, CSR, CSC) or a
        parts tuple; its values and the dense operand may require grad.
    reduce : {None, "sum", "mean", "max", "min"}, optional
        ``out[i] = reduce over the stored (i, j) of a_ij * b[j]`` (sparse
        ``a`` only); rows without entries give 0. ``max`` / ``min`` send
        the gradient through the first entry of each row that reaches
        the extreme.

    Returns
    -------
    torch.Tensor
        Dense ``(m, n)``; the gradient for the sparse operand lies on its
        pattern.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse().requires_grad_()
    >>> b = torch.ones(2, 3, dtype=torch.float32, requires_grad=True)
    >>> ga.mm(a, b).sum().backward()
    >>> a.grad.to_dense()
    tensor([[0., 3.],
            [3., 0.]])
    """
    if isinstance(a, torch.Tensor) and a.layout == torch.strided:
        if reduce not in (None, "sum"):
            raise ValueError("mm: reduce needs a sparse a and a dense b")
        sp = _matrix(b, "b")
        a = _dense(a, "a", sp, 2)
        if a.shape[1] != sp.shape[0]:
            raise ValueError(f"a and b cannot be multiplied: shapes {tuple(a.shape)} and {sp.shape}")
        return _ops.spmm(sp, a.mT, transpose=True).mT
    sp = _matrix(a, "a")
    b = _dense(b, "b", sp, 2)
    _product_shapes(sp, b, ("a", "b"))
    op = _REDUCE.get(reduce, None) if reduce is not None else "sum"
    if op is None:
        raise ValueError(f"reduce must be one of None, 'sum', 'mean', 'max', 'min', got {reduce!r}")
    if op == "sum":
        return _ops.spmm(sp, b)
    return _ops.spmm_reduce(sp, b, op)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` for dense ``input``, sparse ``mat1``, dense ``mat2``.

    ``beta == 0`` ignores ``input`` (NaN included), as torch does.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.eye(2, dtype=torch.float64).to_sparse_csr()
    >>> ga.addmm(torch.ones(2, 2, dtype=torch.float64), a, torch.full((2, 2), 3.0, dtype=torch.float64), beta=2)
    tensor([[5., 5.],
            [5., 5.]], dtype=torch.float64)
    """
    if not isinstance(input, torch.Tensor) or input.layout != torch.strided:
        raise TypeError("addmm: input must be a dense torch tensor")
    product = mm(mat1, mat2)
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (input if beta == 1 else input * beta)


def mv(a, v):
    """``a @ v`` for a sparse matrix and a dense vector.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> ga.mv(torch.eye(2).to_sparse(), torch.tensor([3.0, 4.0]))
    tensor([3., 4.])
    """
    if not isinstance(v, torch.Tensor) or v.ndim != 1:
        raise ValueError(f"v must be a 1-D dense tensor, got {getattr(v, 'shape', type(v).__name__)}")
    return mm(a, v[:, None])[:, 0]


def sparse_dense_matmul(a, b, adjoint_a=False, adjoint_b=False):
    """TF's ``sparse.sparse_dense_matmul``: ``op(a) @ op(b)``, ``op`` the transpose where flagged (real values).

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse()
    >>> ga.sparse_dense_matmul(a, torch.eye(2), adjoint_a=True)
    tensor([[0., 0.],
            [2., 0.]])
    """
    sp = _matrix(a, "a")
    b = _dense(b, "b", sp, 2)
    if adjoint_b:
        b = b.mT
    _product_shapes(sp, b, ("a", "b"), adjoint_a)
    return _ops.spmm(sp, b, transpose=bool(adjoint_a))


def bmm(a, b):
    """Batched ``a @ b``: sparse COO ``(B, M, K)`` (three sparse dims) and dense ``(B, K, N)``.

    The batches run as one block-diagonal product.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.stack([torch.eye(2), 2 * torch.eye(2)]).to_sparse()
    >>> ga.bmm(a, torch.ones(2, 2, 1))[:, :, 0]
    tensor([[1., 1.],
            [2., 2.]])
    """
    sp = as_sparse(a, "a")
    if sp.layout != "coo" or len(sp.shape) != 3 or sp.dense_dim:
        raise ValueError(f"a must be a 3-D COO operand with three sparse dimensions, got {sp.layout} "
                         f"of shape {sp.shape}")
    _float(sp, "a")
    sp = _canonical(sp)
    b = _dense(b, "b", sp, 3)
    B, M, K = sp.shape
    if b.shape[0] != B or b.shape[1] != K:
        raise ValueError(f"a and b cannot be multiplied in batches: shapes {sp.shape} and {tuple(b.shape)}")
    batch, i, k = sp.index[0].unbind(0)
    flat = Sparse("coo", [torch.stack([batch * M + i, batch * K + k])], sp.values, (B * M, B * K), True, False)
    N = b.shape[2]
    return _ops.spmm(flat, b.reshape(B * K, N)).reshape(B, M, N)


def _from_coo(sp: Sparse, layout: str) -> Sparse:
    """A canonical 2-D COO operand in ``layout`` (the values are permuted for CSC)."""
    if layout == "coo":
        return sp
    rows, cols = sp.index[0].unbind(0)
    m, n = sp.shape[:2]
    values = sp.values
    if layout == "csc":
        order = torch.argsort(cols * m + rows)
        rows, cols, values = rows[order], cols[order], values.index_select(0, order)
        rows, cols, m = cols, rows, n
    compressed = torch.searchsorted(rows, torch.arange(m + 1, device=rows.device))
    return sp.with_(layout=layout, index=[compressed, cols], values=values)


def spgemm(a, b):
    """``a @ b`` for two sparse matrices; the result has ``a``'s layout and form.

    The gradients are sparse on each operand's own pattern.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.tensor([[1.0, 0.0], [0.0, 2.0]]).to_sparse_csr()
    >>> ga.spgemm(a, a).to_dense()
    tensor([[1., 0.],
            [0., 4.]])
    """
    sa, sb = _matrix(a, "a"), _matrix(b, "b")
    if sa.shape[1] != sb.shape[0]:
        raise ValueError(f"a and b cannot be multiplied: shapes {sa.shape} and {sb.shape}")
    if sa.values.dtype != sb.values.dtype:
        raise TypeError(f"a and b have different dtypes: {sa.values.dtype} and {sb.values.dtype}")
    indices, values = _ops.spgemm(sa, sb)
    out = sa.with_(layout="coo", index=[indices], values=values, shape=(sa.shape[0], sb.shape[1]), coalesced=True)
    return _from_coo(out, sa.layout).out()


def sampled_addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` at the stored positions of sparse 2-D ``input`` (SDDMM).

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> s = torch.eye(2).to_sparse_csr()
    >>> ga.sampled_addmm(s, torch.ones(2, 3), torch.ones(3, 2), beta=0.5, alpha=2.0).to_dense()
    tensor([[6.5000, 0.0000],
            [0.0000, 6.5000]])
    """
    sp = _matrix(input, "input")
    mat1, mat2 = _dense(mat1, "mat1", sp, 2), _dense(mat2, "mat2", sp, 2)
    m, n = sp.shape
    if mat1.shape[0] != m or mat2.shape[1] != n or mat1.shape[1] != mat2.shape[0]:
        raise ValueError(f"shapes do not line up: input {sp.shape}, mat1 {tuple(mat1.shape)}, "
                         f"mat2 {tuple(mat2.shape)} (need (m, n), (m, k), (k, n))")
    values = _ops.sddmm(sp.layout, sp.index, sp.shape, mat1, mat2.mT)
    if alpha != 1:
        values = values * alpha
    if beta != 0:
        values = values + (sp.values if beta == 1 else sp.values * beta)
    return sp.with_(values=values).out()


# --------------------------------------------------------------------------
# reductions, softmax, masks, structure
# --------------------------------------------------------------------------

def _dims(dim, ndim, name="dim"):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not isinstance(d, int) or not -ndim <= d < ndim:
            raise IndexError(f"{name} {d!r} is out of range for {ndim} dimensions")
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} repeats a dimension: {dim!r}")
    return sorted(out)


def sum(x, dim=None):
    """Sum of a sparse operand (torch's ``sparse.sum``): over every element, or over ``dim``.

    Reducing every sparse dimension gives a dense tensor, otherwise a
    coalesced COO result (in ``x``'s form). The gradient reaches the stored
    entries only.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> x = torch.tensor([[1.0, 0.0], [2.0, 3.0]]).to_sparse()
    >>> ga.sum(x), ga.sum(x, 1).to_dense()
    (tensor(6.), tensor([1., 5.]))
    """
    sp = as_sparse(x, "x")
    if dim is None:
        return sp.values.sum()
    dims = _dims(dim, len(sp.shape))
    S = sp.sparse_dim
    dense_dims = [d - S + 1 for d in dims if d >= S]
    values = sp.values.sum(dense_dims) if dense_dims else sp.values
    kept = [d for d in range(S) if d not in dims]
    if len(kept) == S:
        shape = tuple(s for d, s in enumerate(sp.shape) if d not in dims)
        return sp.with_(values=values, shape=shape).out()
    if not kept:
        return values.sum(0)
    indices = sp.index[0] if sp.layout == "coo" else _ops.coo_indices(sp.layout, sp.index)
    shape = tuple(s for d, s in enumerate(sp.shape) if d not in dims)
    indices, values, _ = _ops.coalesce(indices[kept], values, shape)
    return sp.with_(layout="coo", index=[indices], values=values, shape=shape, coalesced=True).out()


def _softmax(x, dim, log):
    sp = as_sparse(x, "x")
    _float(sp, "x")
    (d,) = _dims(dim, len(sp.shape))
    sp = _canonical(sp)
    return sp.with_(values=_ops.softmax(sp, d, log)).out()


def softmax(x, dim):
    """Softmax of the stored elements along ``dim``, unstored elements counting as -inf (torch's ``sparse.softmax``).

    The result has ``x``'s coalesced pattern and form.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> x = torch.tensor([[1.0, 0.0, 1.0], [0.0, 5.0, 0.0]]).to_sparse()
    >>> ga.softmax(x, 1).to_dense()
    tensor([[0.5000, 0.0000, 0.5000],
            [0.0000, 1.0000, 0.0000]])
    """
    return _softmax(x, dim, False)


def log_softmax(x, dim):
    """Logarithm of :func:`softmax`, computed stably (torch's ``sparse.log_softmax``).

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> x = torch.tensor([2.0, 2.0, 0.0]).to_sparse()
    >>> ga.log_softmax(x, 0).values()
    tensor([-0.6931, -0.6931])
    """
    return _softmax(x, dim, True)


def to_dense(x):
    """``x`` as a dense tensor; the gradient is the dense gradient at the stored positions.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> i = torch.tensor([[0, 0], [1, 1]])
    >>> ga.to_dense((i, torch.tensor([1.0, 2.0]), (2, 2)))
    tensor([[0., 3.],
            [0., 0.]])
    """
    return _ops.scatter(_canonical(as_sparse(x, "x")))


def _pattern(mask, name):
    sp = as_sparse(mask, name)
    if sp.layout == "coo" and not sp.coalesced:
        sp = _canonical(sp.with_(values=sp.values.detach()))
    return sp


def sparse_mask(dense, mask):
    """The elements of ``dense`` at the stored positions of ``mask`` (torch's ``Tensor.sparse_mask``).

    The result has ``mask``'s (coalesced) pattern and form; only ``dense``
    receives a gradient.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> mask = torch.tensor([[0.0, 1.0], [1.0, 0.0]]).to_sparse()
    >>> ga.sparse_mask(torch.arange(4.0).reshape(2, 2), mask).values()
    tensor([1., 2.])
    """
    sp = _pattern(mask, "mask")
    if not isinstance(dense, torch.Tensor) or dense.layout != torch.strided:
        raise TypeError("dense must be a dense torch tensor")
    if tuple(dense.shape) != sp.shape:
        raise ValueError(f"dense has shape {tuple(dense.shape)} but mask has shape {sp.shape}")
    if dense.device != sp.values.device:
        raise ValueError(f"dense is on {dense.device} but mask is on {sp.values.device}")
    return sp.with_(values=_ops.gather(sp, dense)).out()


def mul(x, other):
    """``x * other`` on ``x``'s pattern: a sparse operand times a dense tensor broadcasting to its shape.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> x = torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    >>> ga.mul(x, torch.tensor([10.0, 100.0])).values()
    tensor([200.,  30.])
    """
    sp = _canonical(as_sparse(x, "x"))
    if not isinstance(other, torch.Tensor) or other.layout != torch.strided:
        raise TypeError("other must be a dense torch tensor")
    _dense(other, "other", sp)
    try:
        full = other.expand(sp.shape)
    except RuntimeError:
        raise ValueError(f"other of shape {tuple(other.shape)} does not broadcast to x's shape {sp.shape}") from None
    return sp.with_(values=sp.values * _ops.gather(sp, full)).out()


def coalesce(x):
    """Sorted unique coordinates with duplicates summed; each duplicate receives its entry's gradient.

    CSR/CSC operands are canonical already and come back as they are.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> i = torch.tensor([[1, 0, 1]])
    >>> c = ga.coalesce((i, torch.tensor([1.0, 2.0, 3.0]), (2,)))
    >>> c.indices, c.values, c.is_coalesced
    (tensor([[0, 1]]), tensor([2., 4.]), True)
    """
    return _canonical(as_sparse(x, "x")).out()


def transpose(x, dim0, dim1):
    """Swap two sparse dimensions or two dense dimensions (torch's ``transpose`` of sparse tensors).

    COO swaps index rows (the result is not coalesced); a CSR matrix
    becomes the CSC matrix over the same tensors, and back.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> x = torch.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse_csr()
    >>> ga.transpose(x, 0, 1).layout
    torch.sparse_csc
    """
    sp = as_sparse(x, "x")
    d0, d1 = _dims((dim0, dim1), len(sp.shape)) if dim0 != dim1 else (_dims(dim0, len(sp.shape)) * 2)
    shape = list(sp.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    S = sp.sparse_dim
    if d0 == d1:
        return sp.out()
    if d1 < S:
        if sp.layout == "coo":
            order = list(range(S))
            order[d0], order[d1] = d1, d0
            return sp.with_(index=[sp.index[0][order]], shape=shape, coalesced=False).out()
        return sp.with_(layout="csc" if sp.layout == "csr" else "csr", shape=shape).out()
    if d0 >= S:
        return sp.with_(values=sp.values.transpose(d0 - S + 1, d1 - S + 1).contiguous(), shape=shape).out()
    raise ValueError(f"transpose: dimension {d0} is sparse and {d1} is dense; only two sparse or two dense "
                     "dimensions can be swapped")
