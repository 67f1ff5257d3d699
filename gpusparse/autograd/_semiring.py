"""Semiring products with masks as differentiable operators: ``mxm`` and ``mxv`` (GraphBLAS's names).

The forward pass is :func:`gpusparse.ops.semiring.mxm` on the tensors'
device (the ``gpusparse::semiring_mm`` custom operator); the backward is
written with torch's operators and the ``spmm`` / ``sddmm`` operators of
:mod:`gpusparse.autograd._ops`, so one backward serves the CPU and CUDA.

Which semirings have a gradient (:data:`DIFFERENTIABLE`):

* ``plus_times`` is the ordinary product: the gradient is torch's
  ``sparse.mm``'s (the values' gradient ``G @ B.T`` at the pattern of
  ``A``, the dense operand's ``A.T @ G``);
* ``max_plus``, ``min_plus``, ``max_times``, ``min_times`` (tropical and
  max-/min-product semirings): a subgradient. Each output element's
  gradient goes to the one term ``a[i, k] (*) b[k, j]`` that reaches the
  extreme; among tied terms, the one with the lowest inner index ``k``
  (the first in storage order), as ``mm(..., reduce="max")`` does. torch's
  ``amax`` splits a tie evenly instead; both are subgradients.

Outputs a mask leaves out, and outputs without a term (which hold the add
monoid's identity, e.g. ``inf`` for ``min``), pass no gradient. Other
semirings (``lor_land``, ``any_pair``, ``plus_pair``, ``min_first``, ...)
compute forward only: given an operand that requires grad (with grad mode
on) they raise ``TypeError`` naming the semiring.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from gpusparse.autograd import _ops
from gpusparse.autograd._api import _canonical, _dense
from gpusparse.autograd._parts import Sparse, as_sparse, container, on_torch_stream, to_arrays, to_tensor

__all__ = ["DIFFERENTIABLE", "first_extreme_terms", "mxm", "mxv"]

#: The semirings whose products have a (sub)gradient here.
DIFFERENTIABLE = ("plus_times", "max_plus", "min_plus", "max_times", "min_times")


# --------------------------------------------------------------------------
# the operator: dense op(a) (+.*) b at the outputs ``allowed`` selects
# --------------------------------------------------------------------------

@torch.library.custom_op("gpusparse::semiring_mm", mutates_args=())
@on_torch_stream
def _semiring_mm(layout: str, index: list[Tensor], values: Tensor, shape: list[int], b: Tensor, semiring: str,
                 allowed: Optional[Tensor]) -> Tensor:
    from gpusparse.ops.semiring import mxm as gs_mxm
    a = container(layout, index, values, shape)
    if allowed is None:
        (arr,) = to_arrays(b)
        out = gs_mxm(a, arr, semiring)
    else:
        arr, mask = to_arrays(b, allowed)
        out = gs_mxm(a, arr, semiring, mask=mask)
    return to_tensor(out, b, values)


@_semiring_mm.register_fake
def _(layout, index, values, shape, b, semiring, allowed):
    return values.new_empty((shape[0], b.shape[1]))


def _setup(ctx, inputs, output):
    layout, index, values, shape, b, semiring, allowed = inputs
    ctx.save_for_backward(values, b, output, allowed, *index)
    ctx.layout, ctx.shape, ctx.semiring = layout, shape, semiring


def first_extreme_terms(rows: Tensor, terms: Tensor, out: Tensor) -> Tensor:
    """Which terms carry their output's gradient: per output, the first term (in storage order) equal to it.

    Parameters
    ----------
    rows : Tensor
        ``(nnz,)`` int64, the output row of each stored entry of ``a``
        (non-decreasing within a row's entries by inner index).
    terms : Tensor
        ``(nnz, n)``: the term ``a[i, k] (*) b[k, :]`` of each stored entry.
    out : Tensor
        ``(m, n)``: the reduced outputs (the extremes).

    Returns
    -------
    Tensor
        ``(nnz, n)`` bool: True at exactly one term per output that some
        term reaches (the lowest storage position among ties).

    Examples
    --------
    >>> import torch
    >>> rows = torch.tensor([0, 0, 1])
    >>> terms = torch.tensor([[2.0], [2.0], [1.0]])
    >>> first_extreme_terms(rows, terms, torch.tensor([[2.0], [1.0]]))[:, 0]
    tensor([ True, False,  True])
    """
    nnz, n = terms.shape
    position = torch.arange(nnz, device=terms.device)[:, None].expand(nnz, n)
    reaching = torch.where(terms == out.index_select(0, rows), position, nnz)
    first = torch.full(out.shape, nnz, device=terms.device, dtype=position.dtype)
    first = first.scatter_reduce(0, rows[:, None].expand(nnz, n), reaching, "amin")
    return first.index_select(0, rows) == position


def _backward(ctx, grad):
    values, b, out, allowed, *index = ctx.saved_tensors
    layout, shape = ctx.layout, ctx.shape
    g = grad if allowed is None else torch.where(allowed, grad, 0)
    gv = gb = None
    if ctx.semiring == "plus_times":
        if ctx.needs_input_grad[2]:
            gv = _ops.sddmm(layout, index, shape, g, b)
        if ctx.needs_input_grad[4]:
            gb = _ops.spmm(Sparse(layout, index, values, tuple(shape), True, False), g, transpose=True)
        return None, [None] * len(index), gv, None, gb, None, None
    rows, cols = _ops.coo_indices(layout, index).unbind(0)
    b_at = b.index_select(0, cols)
    times = ctx.semiring.endswith("_times")
    terms = values[:, None] * b_at if times else values[:, None] + b_at
    g_at = torch.where(first_extreme_terms(rows, terms, out), g.index_select(0, rows), 0)
    if ctx.needs_input_grad[2]:
        gv = (g_at * b_at if times else g_at).sum(1)
    if ctx.needs_input_grad[4]:
        gb = torch.zeros_like(b).index_add(0, cols, g_at * values[:, None] if times else g_at)
    return None, [None] * len(index), gv, None, gb, None, None


_semiring_mm.register_autograd(_backward, setup_context=_setup)


# --------------------------------------------------------------------------
# the differentiable functions
# --------------------------------------------------------------------------

def _allowed(mask, shape, complement, like: Tensor) -> Optional[Tensor]:
    """The bool tensor of ``shape`` selecting the outputs to compute (``None``: every output)."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor) and mask.layout == torch.strided:
        if tuple(mask.shape) != tuple(shape):
            raise ValueError(f"mask has shape {tuple(mask.shape)}, the result {tuple(shape)}")
        allowed = (mask != 0).to(like.device)
    else:
        sp = as_sparse(mask, "mask")
        if sp.shape != tuple(shape):
            raise ValueError(f"mask has shape {sp.shape}, the result {tuple(shape)}")
        indices = sp.index[0] if sp.layout == "coo" else _ops.coo_indices(sp.layout, sp.index)
        allowed = torch.zeros(shape, dtype=torch.bool, device=like.device)
        allowed[tuple(indices.to(like.device))] = True
    return ~allowed if complement else allowed


def _matrix(a, what) -> Sparse:
    sp = as_sparse(a, "a")
    if len(sp.shape) != 2 or sp.dense_dim:
        raise ValueError(f"{what}: a must be a 2-D sparse matrix without dense dimensions, got shape {sp.shape} "
                         f"with {sp.dense_dim} dense")
    return sp


def _product(sp: Sparse, b: Tensor, semiring, allowed, what) -> Tensor:
    """Dense ``sp (+.*) b`` for a 2-D sparse operand and a dense 2-D ``b`` (checked), with the gradient check."""
    from gpusparse.ops.semiring import parse
    name = parse(semiring).name
    if name not in DIFFERENTIABLE and torch.is_grad_enabled() and (sp.values.requires_grad or b.requires_grad):
        raise TypeError(f"{what}: semiring {name!r} has no gradient (differentiable semirings: "
                        f"{', '.join(DIFFERENTIABLE)}); detach the operands or compute under torch.no_grad()")
    sp = _canonical(sp)
    return _semiring_mm(sp.layout, sp.index, sp.values, list(sp.shape), b, name, allowed)


def _aligned(sp: Sparse, k: int, what: str, other: str) -> None:
    if sp.shape[1] != k:
        raise ValueError(f"{what}: a of shape {sp.shape} and {other} do not align ({sp.shape[1]} != {k})")


def mxm(a, b, semiring="plus_times", mask=None, complement=False):
    """The product ``a @ b`` over a semiring for a sparse ``a`` and a dense ``b``, optionally masked.

    ``out[i, j] = add over the stored a[i, k] of mul(a[i, k], b[k, j])``,
    as :func:`gpusparse.mxm` computes it, on the tensors' device.

    Parameters
    ----------
    a : sparse matrix
        A torch sparse tensor (COO, uncoalesced included; CSR; CSC) or a
        parts tuple; its values may require grad. Duplicates are summed
        first, and each receives the summed entry's gradient.
    b : torch.Tensor
        Dense ``(k, n)`` of ``a``'s dtype and device; may require grad.
    semiring : str
        A python-graphblas name (:data:`gpusparse.SEMIRINGS` and the other
        pairs :func:`gpusparse.mxm` takes). Gradients exist for
        ``plus_times`` (torch's ``sparse.mm``'s) and the subgradients of
        ``max_plus``, ``min_plus``, ``max_times``, ``min_times``: each
        output's gradient goes to the term reaching the extreme, the one
        of lowest inner index ``k`` among ties (torch's ``amax`` splits
        ties evenly instead). Other semirings raise ``TypeError`` when an
        operand requires grad.
    mask : sparse matrix or torch.Tensor, optional
        Of the result's shape: a sparse mask selects its stored positions
        (whatever the values), a dense one its non-zero elements. Outputs
        not selected hold the add monoid's identity and pass no gradient.
    complement : bool
        Select the outputs the mask does *not* select.

    Returns
    -------
    torch.Tensor
        Dense ``(m, n)``; where no term exists (or the mask leaves the
        output out), the monoid's identity: 0 for ``plus``, ``inf`` for
        ``min``, ``-inf`` for ``max``.

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.tensor([[0.0, 2.0], [1.0, 3.0]]).to_sparse().requires_grad_()
    >>> b = torch.tensor([[1.0], [5.0]], requires_grad=True)
    >>> out = ga.mxm(a, b, "max_plus")
    >>> out.detach()[:, 0]
    tensor([7., 8.])
    >>> out.sum().backward()
    >>> a.grad.to_dense(), b.grad[:, 0]
    (tensor([[0., 1.],
            [0., 1.]]), tensor([0., 2.]))
    """
    sp = _matrix(a, "mxm")
    b = _dense(b, "b", sp, 2)
    _aligned(sp, b.shape[0], "mxm", f"b of shape {tuple(b.shape)}")
    allowed = _allowed(mask, (sp.shape[0], b.shape[1]), complement, b)
    return _product(sp, b, semiring, allowed, "mxm")


def mxv(a, v, semiring="plus_times", mask=None, complement=False):
    """The product ``a @ v`` over a semiring for a sparse matrix and a dense vector, optionally masked.

    As :func:`mxm` with ``v`` of length ``k``; a mask is a vector of length
    ``m`` (sparse 1-D: its structure; dense: its non-zero elements).

    Examples
    --------
    >>> import torch, gpusparse.autograd as ga
    >>> a = torch.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse_csr()
    >>> v = torch.tensor([10.0, 20.0], requires_grad=True)
    >>> x = ga.mxv(a, v, "min_plus", mask=torch.tensor([True, False]))
    >>> x.detach()
    tensor([22., inf])
    >>> x[0].backward()
    >>> v.grad
    tensor([0., 1.])
    """
    sp = _matrix(a, "mxv")
    v = _dense(v, "v", sp, 1)
    _aligned(sp, v.shape[0], "mxv", f"v of length {v.shape[0]}")
    allowed = _allowed(mask, (sp.shape[0],), complement, v)
    return _product(sp, v[:, None], semiring, None if allowed is None else allowed[:, None], "mxv")[:, 0]

