"""The ``gpusparse::`` custom operators: components in, components out.

Each operator takes a sparse operand as ``(layout, index, values, shape)``
-- ``layout`` one of ``"coo"`` (``index == [indices]``, coalesced),
``"csr"`` / ``"csc"`` (``index == [compressed, plain]``, canonical) --
views the tensors as NumPy/CuPy arrays without copying, runs the operation
of :mod:`gpusparse.ops` on the tensors' device and returns torch tensors
over the results, on torch's current CUDA stream (:func:`on_torch_stream`).
Every operator has a fake implementation (so that
``torch.compile`` traces it) and a backward written with these operators
and torch's own, so that the backward traces too. The sparse-sparse
product and the softmax backward have no derivative of their own (second
derivatives through them raise).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gpusparse.autograd._parts import container, on_torch_stream, pattern, to_arrays, to_tensor

__all__ = ["coalesce", "coo_indices", "gather", "scatter", "sddmm", "softmax", "spgemm", "spmm", "spmm_reduce"]

_lib = torch.library


def _none(index):
    """The gradient of an index list: nothing, in the list's structure."""
    return [None] * len(index)


def _sparse_dim(layout, index):
    return index[0].shape[0] if layout == "coo" else 2


# --------------------------------------------------------------------------
# spmm: op(a) @ b, and its dual sddmm: x[i] . y[j] at the pattern
# --------------------------------------------------------------------------

@_lib.custom_op("gpusparse::spmm", mutates_args=())
@on_torch_stream
def _spmm(layout: str, index: list[Tensor], values: Tensor, shape: list[int], b: Tensor,
          transpose: bool) -> Tensor:
    from gpusparse.ops import linalg
    from gpusparse.ops.linalg.core import transpose_2d
    from gpusparse.ops.linalg.operands import coo_to_csr
    a = container(layout, index, values, shape)
    if transpose:  # CSR.T is CSC: the product runs the transposed kernel, no copy
        a = transpose_2d(coo_to_csr(a) if layout == "coo" else a)
    (arr,) = to_arrays(b)
    return to_tensor(linalg.mm(a, arr), b, values)


@_spmm.register_fake
def _(layout, index, values, shape, b, transpose):
    return values.new_empty((shape[1] if transpose else shape[0], b.shape[1]))


def _spmm_setup(ctx, inputs, output):
    layout, index, values, shape, b, transpose = inputs
    ctx.save_for_backward(values, b, *index)
    ctx.layout, ctx.shape, ctx.transpose = layout, shape, transpose


def _spmm_backward(ctx, grad):
    values, b, *index = ctx.saved_tensors
    gv = gb = None
    if ctx.needs_input_grad[2]:
        x, y = (b, grad) if ctx.transpose else (grad, b)
        gv = sddmm(ctx.layout, index, ctx.shape, x, y)
    if ctx.needs_input_grad[4]:
        gb = _spmm(ctx.layout, index, values, ctx.shape, grad, not ctx.transpose)
    return None, _none(index), gv, None, gb, None


_spmm.register_autograd(_spmm_backward, setup_context=_spmm_setup)


@_lib.custom_op("gpusparse::sddmm", mutates_args=())
@on_torch_stream
def _sddmm(layout: str, index: list[Tensor], shape: list[int], x: Tensor, y: Tensor) -> Tensor:
    from gpusparse.ops import linalg
    if index[-1].shape[-1] == 0 or x.shape[1] == 0:  # nothing stored, or empty inner products
        return x.new_zeros((index[-1].shape[-1],))
    p = pattern(layout, index, shape, x)
    xa, ya = to_arrays(x, y)
    out = linalg.sampled_addmm(p, xa, ya.T, beta=0)
    return to_tensor(out.data, x, y)


@_sddmm.register_fake
def _(layout, index, shape, x, y):
    return x.new_empty((index[-1].shape[-1],))


def _sddmm_setup(ctx, inputs, output):
    layout, index, shape, x, y = inputs
    ctx.save_for_backward(x, y, *index)
    ctx.layout, ctx.shape = layout, shape


def _sddmm_backward(ctx, grad):
    x, y, *index = ctx.saved_tensors
    gx = _spmm(ctx.layout, index, grad, ctx.shape, y, False) if ctx.needs_input_grad[3] else None
    gy = _spmm(ctx.layout, index, grad, ctx.shape, x, True) if ctx.needs_input_grad[4] else None
    return None, _none(index), None, gx, gy


_sddmm.register_autograd(_sddmm_backward, setup_context=_sddmm_setup)


def spmm(sp, b, transpose=False):
    """``sp @ b`` (``sp.T @ b`` with ``transpose``) for a canonical 2-D operand and a dense matrix."""
    return _spmm(sp.layout, sp.index, sp.values, list(sp.shape), b, transpose)


def sddmm(layout, index, shape, x, y):
    """``(x @ y.T)`` at the stored positions of the pattern, in storage order."""
    return _sddmm(layout, index, list(shape), x, y)


# --------------------------------------------------------------------------
# gather (sparse_mask) and scatter (to_dense), each the other's backward
# --------------------------------------------------------------------------

@_lib.custom_op("gpusparse::gather", mutates_args=())
@on_torch_stream
def _gather(layout: str, index: list[Tensor], shape: list[int], dense: Tensor) -> Tensor:
    from gpusparse.ops import masks
    (arr,) = to_arrays(dense)
    return to_tensor(masks.sparse_mask(arr, pattern(layout, index, shape, dense)).data, dense)


@_gather.register_fake
def _(layout, index, shape, dense):
    S = _sparse_dim(layout, index)
    return dense.new_empty((index[-1].shape[-1], *shape[S:]))


@_lib.custom_op("gpusparse::scatter", mutates_args=())
@on_torch_stream
def _scatter(layout: str, index: list[Tensor], values: Tensor, shape: list[int]) -> Tensor:
    return to_tensor(container(layout, index, values, shape).todense(), values)


@_scatter.register_fake
def _(layout, index, values, shape):
    return values.new_empty(tuple(shape))


def _gather_setup(ctx, inputs, output):
    layout, index, shape, _ = inputs
    ctx.save_for_backward(*index)
    ctx.layout, ctx.shape = layout, shape


def _gather_backward(ctx, grad):
    index = list(ctx.saved_tensors)
    return None, _none(index), None, _scatter(ctx.layout, index, grad, ctx.shape)


def _scatter_setup(ctx, inputs, output):
    layout, index, _, shape = inputs
    ctx.save_for_backward(*index)
    ctx.layout, ctx.shape = layout, shape


def _scatter_backward(ctx, grad):
    index = list(ctx.saved_tensors)
    return None, _none(index), _gather(ctx.layout, index, ctx.shape, grad), None


_gather.register_autograd(_gather_backward, setup_context=_gather_setup)
_scatter.register_autograd(_scatter_backward, setup_context=_scatter_setup)


def gather(sp, dense):
    """The elements (blocks) of ``dense`` at ``sp``'s stored positions, in storage order."""
    return _gather(sp.layout, sp.index, list(sp.shape), dense.contiguous())


def scatter(sp):
    """``sp`` as a dense tensor."""
    return _scatter(sp.layout, sp.index, sp.values, list(sp.shape))


# --------------------------------------------------------------------------
# coalesce: the gradient of each input entry is that of its output entry
# --------------------------------------------------------------------------

@_lib.custom_op("gpusparse::coalesce", mutates_args=())
@on_torch_stream
def _coalesce(indices: Tensor, values: Tensor, shape: list[int]) -> tuple[Tensor, Tensor, Tensor]:
    from gpusparse.containers import COO
    from gpusparse._device import array_device, device_scope, xp_for
    from gpusparse.ops import canonical
    from gpusparse.ops.interop._common import pointer
    coords, data = to_arrays(indices, values)
    dev = array_device(data)
    S = coords.shape[0]
    if math.prod(shape[:S]) >= 2**63:
        raise ValueError(f"coalesce needs a sparse shape below 2**63 elements, got {tuple(shape[:S])}")
    x = COO._from_parts(coords, data, tuple(shape), data.dtype.type(0), dev, sorted=False, unique=False)
    c = canonical.coalesce(x)
    xp = xp_for(dev)
    with device_scope(dev):
        if x.nnz <= 1 or c.nnz == x.nnz and pointer(c.coords) == pointer(coords):  # canonical already
            inverse = xp.arange(x.nnz, dtype=xp.int64)
        else:
            strides = canonical.c_strides(tuple(shape[:S]))
            inverse = xp.searchsorted(_keys(c.coords, strides, xp), _keys(coords, strides, xp))
    return (to_tensor(c.coords, indices), to_tensor(c.data, values), to_tensor(inverse))


def _keys(coords, strides, xp):
    """Row-major linear keys of ``coords`` (the caller's shape fits in 63 bits: coalesce checked it)."""
    keys = xp.zeros(coords.shape[1], dtype=xp.int64)
    for d, s in enumerate(strides):
        keys += coords[d] * s
    return keys


@_coalesce.register_fake
def _(indices, values, shape):
    u = torch.library.get_ctx().new_dynamic_size()
    return (indices.new_empty((indices.shape[0], u)), values.new_empty((u, *values.shape[1:])),
            indices.new_empty((indices.shape[1],)))


def _coalesce_setup(ctx, inputs, output):
    ctx.save_for_backward(output[2])


def _coalesce_backward(ctx, g_indices, g_values, g_inverse):
    (inverse,) = ctx.saved_tensors
    return None, g_values.index_select(0, inverse), None


_coalesce.register_autograd(_coalesce_backward, setup_context=_coalesce_setup)


def coalesce(indices, values, shape):
    """``(indices, values, inverse)``: sorted unique coordinates, summed values, and the output entry of each input."""
    return _coalesce(indices, values, list(shape))


# --------------------------------------------------------------------------
# softmax / log_softmax along one dimension
# --------------------------------------------------------------------------

@_lib.custom_op("gpusparse::softmax", mutates_args=())
@on_torch_stream
def _softmax(layout: str, index: list[Tensor], values: Tensor, shape: list[int], dim: int, log: bool) -> Tensor:
    from gpusparse.ops import softmax as sm
    x = container(layout, index, values, shape)
    out = sm.log_softmax(x, dim) if log else sm.softmax(x, dim)
    return to_tensor(out.data, values)


@_softmax.register_fake
def _(layout, index, values, shape, dim, log):
    return torch.empty_like(values)


@_lib.custom_op("gpusparse::softmax_backward", mutates_args=())
@on_torch_stream
def _softmax_backward(layout: str, index: list[Tensor], out: Tensor, shape: list[int], grad: Tensor,
                      dim: int, log: bool) -> Tensor:
    from gpusparse.ops import softmax as sm
    (g,) = to_arrays(grad)
    return to_tensor(sm.softmax_backward(container(layout, index, out, shape), g, dim, log), out, grad)


@_softmax_backward.register_fake
def _(layout, index, out, shape, grad, dim, log):
    return torch.empty_like(out)


def _softmax_setup(ctx, inputs, output):
    layout, index, _, shape, dim, log = inputs
    ctx.save_for_backward(output, *index)
    ctx.layout, ctx.shape, ctx.dim, ctx.log = layout, shape, dim, log


def _softmax_bwd(ctx, grad):
    out, *index = ctx.saved_tensors
    g = _softmax_backward(ctx.layout, index, out, ctx.shape, grad, ctx.dim, ctx.log)
    return None, _none(index), g, None, None, None


_softmax.register_autograd(_softmax_bwd, setup_context=_softmax_setup)


def softmax(sp, dim, log):
    """The (log-)softmax of a canonical operand's values along ``dim``."""
    return _softmax(sp.layout, sp.index, sp.values, list(sp.shape), dim, log)


# --------------------------------------------------------------------------
# reduced products: mean / max / min over each row's stored products
# --------------------------------------------------------------------------

def coo_indices(layout, index):
    """``(2, nnz)`` int64 (row, column) of a 2-D operand's entries in storage order; COO indices as they are."""
    if layout == "coo":
        return index[0]
    compressed, plain = index
    majors = torch.arange(compressed.shape[0] - 1, device=plain.device)
    expanded = torch.repeat_interleave(majors, compressed.diff(), output_size=plain.shape[0])
    plain = plain.to(torch.int64)
    return torch.stack([expanded, plain] if layout == "csr" else [plain, expanded])


@_lib.custom_op("gpusparse::spmm_reduce", mutates_args=())
@on_torch_stream
def _spmm_reduce(layout: str, index: list[Tensor], values: Tensor, shape: list[int], b: Tensor,
                 reduce: str) -> Tensor:
    from gpusparse.ops import linalg
    (arr,) = to_arrays(b)
    return to_tensor(linalg.mm(container(layout, index, values, shape), arr, reduce=reduce), b, values)


@_spmm_reduce.register_fake
def _(layout, index, values, shape, b, reduce):
    return values.new_empty((shape[0], b.shape[1]))


def _reduce_setup(ctx, inputs, output):
    layout, index, values, shape, b, reduce = inputs
    ctx.save_for_backward(values, b, output, *index)
    ctx.layout, ctx.shape, ctx.reduce = layout, shape, reduce


def _reduce_backward(ctx, grad):
    values, b, out, *index = ctx.saved_tensors
    layout, shape = ctx.layout, ctx.shape
    rows, cols = coo_indices(layout, index).unbind(0)
    if ctx.reduce == "mean":
        count = grad.new_zeros(shape[0]).index_add_(0, rows, grad.new_ones(rows.shape)).clamp_(min=1)
        g = grad / count[:, None]
        gv = sddmm(layout, index, shape, g, b) if ctx.needs_input_grad[2] else None
        gb = _spmm(layout, index, values, shape, g, True) if ctx.needs_input_grad[4] else None
        return None, _none(index), gv, None, gb, None
    # max / min: the gradient goes through the first entry of each row reaching the extreme
    from gpusparse.autograd._semiring import first_extreme_terms
    b_at = b.index_select(0, cols)
    products = values[:, None] * b_at
    g_at = torch.where(first_extreme_terms(rows, products, out), grad.index_select(0, rows), 0)
    gv = (g_at * b_at).sum(1) if ctx.needs_input_grad[2] else None
    gb = torch.zeros_like(b).index_add(0, cols, g_at * values[:, None]) if ctx.needs_input_grad[4] else None
    return None, _none(index), gv, None, gb, None


_spmm_reduce.register_autograd(_reduce_backward, setup_context=_reduce_setup)


def spmm_reduce(sp, b, reduce):
    """``reduce`` over each row's stored ``a_ij * b[j, :]`` (``mean``, ``max``, ``min``)."""
    return _spmm_reduce(sp.layout, sp.index, sp.values, list(sp.shape), b, reduce)


# --------------------------------------------------------------------------
# sparse @ sparse
# --------------------------------------------------------------------------

@_lib.custom_op("gpusparse::spgemm", mutates_args=())
@on_torch_stream
def _spgemm(la: str, ia: list[Tensor], va: Tensor, sa: list[int], lb: str, ib: list[Tensor], vb: Tensor,
            sb: list[int]) -> tuple[Tensor, Tensor]:
    from gpusparse.ops import canonical, convert, linalg
    c = linalg.matmul(container(la, ia, va, sa), container(lb, ib, vb, sb))
    c = canonical.coalesce(convert.asformat(c, "coo"))
    return to_tensor(c.coords), to_tensor(c.data, va, vb)


@_spgemm.register_fake
def _(la, ia, va, sa, lb, ib, vb, sb):
    u = torch.library.get_ctx().new_dynamic_size()
    return ia[0].new_empty((2, u), dtype=torch.int64), va.new_empty((u,))


@_lib.custom_op("gpusparse::spgemm_backward", mutates_args=())
@on_torch_stream
def _spgemm_backward(out_indices: Tensor, grad: Tensor, la: str, ia: list[Tensor], va: Tensor, sa: list[int],
                     lb: str, ib: list[Tensor], vb: Tensor, sb: list[int]) -> tuple[Tensor, Tensor]:
    from gpusparse.ops import linalg
    from gpusparse.ops.linalg.core import transpose_2d
    from gpusparse.ops.linalg.operands import coo_to_csr
    g = container("coo", [out_indices], grad, [sa[0], sb[1]])
    a, b = (coo_to_csr(x) if x.format == "coo" else x
            for x in (container(la, ia, va, sa), container(lb, ib, vb, sb)))
    ga = _values_at(linalg.matmul(g, transpose_2d(b)), la, ia, sa)
    gb = _values_at(linalg.matmul(transpose_2d(a), g), lb, ib, sb)
    return ga, gb


def _values_at(c, layout, index, shape):
    """The elements of sparse ``c`` at the stored positions of a pattern, in its storage order (0 where absent)."""
    from gpusparse.ops import canonical, convert
    c = canonical.coalesce(convert.asformat(c, "coo"))
    ci, cv = to_tensor(c.coords), to_tensor(c.data)
    rc = coo_indices(layout, index)
    keys = rc[0] * shape[1] + rc[1]
    ckeys = ci[0] * shape[1] + ci[1]
    pos = torch.searchsorted(ckeys, keys).clamp_(max=max(ckeys.shape[0] - 1, 0))
    if ckeys.shape[0] == 0:
        return cv.new_zeros(keys.shape)
    return torch.where(ckeys[pos] == keys, cv[pos], 0).contiguous()


@_spgemm_backward.register_fake
def _(out_indices, grad, la, ia, va, sa, lb, ib, vb, sb):
    return torch.empty_like(va), torch.empty_like(vb)


def _spgemm_setup(ctx, inputs, output):
    la, ia, va, sa, lb, ib, vb, sb = inputs
    ctx.save_for_backward(output[0], va, vb, *ia, *ib)
    ctx.meta = (la, len(ia), sa, lb, sb)


def _spgemm_bwd(ctx, g_indices, g_values):
    out_indices, va, vb, *idx = ctx.saved_tensors
    la, na, sa, lb, sb = ctx.meta
    ga, gb = _spgemm_backward(out_indices, g_values.contiguous(), la, idx[:na], va, sa, lb, idx[na:], vb, sb)
    return None, _none(idx[:na]), ga, None, None, _none(idx[na:]), gb, None


_spgemm.register_autograd(_spgemm_bwd, setup_context=_spgemm_setup)


def spgemm(a, b):
    """``a @ b`` for two canonical 2-D operands: ``(indices, values)`` of the coalesced COO product."""
    return _spgemm(a.layout, a.index, a.values, list(a.shape), b.layout, b.index, b.values, list(b.shape))
