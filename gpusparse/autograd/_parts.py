"""Sparse operands as torch tensors or as tuples of plain tensors, and their gpusparse views.

``torch.compile`` refuses sparse tensors, so every operator also takes its
sparse operand as a tuple of strided tensors (:class:`COOParts`,
:class:`CSRParts`, :class:`CSCParts`, or plain tuples: ``(indices, values,
size)`` and ``(indices, values, size, is_coalesced)`` are COO, ``(crow_indices,
col_indices, values, size)`` CSR) and returns sparse results in the form it
was given. Inside, an operand is a :class:`Sparse`: its layout, index tensors,
values (the tensor that carries gradients) and shape. Every operand is
validated on the way in (:func:`as_sparse`), torch sparse tensors too, since
torch builds them unchecked by default.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from typing import NamedTuple

import numpy as np
import torch

__all__ = ["COOParts", "CSCParts", "CSRParts", "Sparse", "as_sparse", "container", "pattern", "to_arrays",
           "to_tensor"]


class COOParts(NamedTuple):
    """A COO operand as plain tensors (torch's ``sparse_coo_tensor`` arguments).

    ``indices`` is int64 ``(sparse_dim, nnz)``, ``values`` ``(nnz, *dense_shape)``,
    ``size`` the full shape. Duplicates mean their sum; ``is_coalesced=True``
    promises sorted unique indices (then no coalescing pass runs).
    """

    indices: torch.Tensor
    values: torch.Tensor
    size: tuple
    is_coalesced: bool = False


class CSRParts(NamedTuple):
    """A CSR operand as plain tensors (torch's ``sparse_csr_tensor`` arguments), sorted without duplicates."""

    crow_indices: torch.Tensor
    col_indices: torch.Tensor
    values: torch.Tensor
    size: tuple


class CSCParts(NamedTuple):
    """A CSC operand as plain tensors (torch's ``sparse_csc_tensor`` arguments), sorted without duplicates."""

    ccol_indices: torch.Tensor
    row_indices: torch.Tensor
    values: torch.Tensor
    size: tuple


_PARTS = {"coo": COOParts, "csr": CSRParts, "csc": CSCParts}


class Sparse(NamedTuple):
    """An operand inside the operators: ``index`` is ``[indices]`` (COO) or ``[compressed, plain]``."""

    layout: str
    index: list
    values: torch.Tensor
    shape: tuple
    coalesced: bool
    as_tensor: bool  # give results back as torch sparse tensors (else as parts)

    @property
    def sparse_dim(self) -> int:
        return self.index[0].shape[0] if self.layout == "coo" else 2

    @property
    def dense_dim(self) -> int:
        return len(self.shape) - self.sparse_dim

    def with_(self, layout=None, index=None, values=None, shape=None, coalesced=None) -> "Sparse":
        return Sparse(layout or self.layout, self.index if index is None else index,
                      self.values if values is None else values, self.shape if shape is None else tuple(shape),
                      self.coalesced if coalesced is None else coalesced, self.as_tensor)

    def out(self):
        """This operand in the form its source had: a torch sparse tensor or a parts tuple."""
        if self.as_tensor:
            return _build_tensor(self)
        cls = _PARTS[self.layout]
        if self.layout == "coo":
            return cls(self.index[0], self.values, self.shape, self.coalesced)
        return cls(self.index[0], self.index[1], self.values, self.shape)


def on_torch_stream(fn):
    """``fn`` run with torch's current CUDA stream as CuPy's current stream.

    For every function of this package that hands torch tensors to
    gpusparse (the custom operators' implementations, the operand checks):
    what gpusparse launches then runs on the stream torch runs the caller
    on, forward and backward alike (torch's autograd engine runs a backward
    on its forward's stream), in order with torch's own work there. The
    stream is that of the first CUDA tensor among the arguments (see
    :func:`gpusparse.ops.interop._torch.torch_stream_scope`).
    """
    from gpusparse.ops.interop._torch import torch_stream_scope

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with torch_stream_scope(*args, *kwargs.values()):
            return fn(*args, **kwargs)
    # Annotations resolved in fn's module, where torch.library reads the operator's schema from them.
    run.__signature__ = inspect.signature(fn, eval_str=True)
    return run


def _coo_gradient(t, grad):
    """The gradient of COO ``t`` as a sparse tensor, given ``grad`` for each of its stored entries.

    torch reads a sparse gradient as the dense tensor it stands for (duplicates
    add up), and its ``sparse_coo_tensor`` backward hands each stored entry the
    element at its coordinate. So the gradient of an uncoalesced ``t`` is
    coalesced, one element per coordinate: the gradient of the coordinate's
    first entry (every entry of a coordinate has the same one, since the
    operators see ``t`` only through its coalesced value).
    """
    indices = t._indices()
    nnz = indices.shape[1]
    if t.is_coalesced() or nnz == 0:
        return torch.sparse_coo_tensor(indices, grad, t.shape, is_coalesced=t.is_coalesced(),
                                       check_invariants=False)
    from gpusparse.autograd import _ops
    unique, _, inverse = _ops.coalesce(indices, grad, tuple(t.shape))
    position = torch.arange(nnz, device=indices.device)
    first = torch.full((unique.shape[1],), nnz, dtype=position.dtype, device=position.device)
    first = first.scatter_reduce(0, inverse, position, "amin")
    return torch.sparse_coo_tensor(unique, grad.index_select(0, first), t.shape, is_coalesced=True,
                                   check_invariants=False)


class _Unpack(torch.autograd.Function):
    """A sparse tensor's stored values; the gradient comes back as a sparse tensor (see :func:`_coo_gradient`)."""

    @staticmethod
    def forward(ctx, t):
        ctx.t = t.detach()
        return t._values() if t.layout == torch.sparse_coo else t.values()

    @staticmethod
    def backward(ctx, grad):
        t = ctx.t
        if t.layout == torch.sparse_coo:
            return _coo_gradient(t, grad)
        if t.layout == torch.sparse_csr:
            return torch.sparse_csr_tensor(t.crow_indices(), t.col_indices(), grad, t.shape, check_invariants=False)
        return torch.sparse_csc_tensor(t.ccol_indices(), t.row_indices(), grad, t.shape, check_invariants=False)


class _Pack(torch.autograd.Function):
    """A sparse tensor over ``values`` (the inverse of :class:`_Unpack`)."""

    @staticmethod
    def forward(ctx, layout, index, values, shape, coalesced):
        ctx.layout, ctx.index, ctx.coalesced = layout, index, coalesced
        if layout == "coo":
            return torch.sparse_coo_tensor(index[0], values, shape, is_coalesced=coalesced, check_invariants=False)
        make = torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor
        return make(index[0], index[1], values, shape, check_invariants=False)

    @staticmethod
    def backward(ctx, grad):
        from gpusparse.autograd import _ops
        sp = Sparse(ctx.layout, ctx.index, None, tuple(grad.shape), True, False)
        if grad.layout == torch.strided:
            values = _ops.gather(sp, grad)
        elif grad.layout == torch.sparse_coo and ctx.layout == "coo" and (ctx.coalesced or grad.is_coalesced()) \
                and grad._nnz() == ctx.index[0].shape[1] and torch.equal(grad._indices(), ctx.index[0]):
            values = grad._values()  # our pattern, without duplicates
        else:  # another pattern, or duplicates (which add up): the gradient's elements at our entries
            values = _values_on(grad, sp)
        return None, None, values, None, None


def _values_on(grad, sp: Sparse):
    """The elements (blocks) of the sparse tensor ``grad`` at the stored positions of ``sp``, 0 where absent."""
    from gpusparse.autograd._ops import coo_indices
    g = (grad if grad.layout == torch.sparse_coo else grad.to_sparse_coo()).coalesce()
    S = sp.sparse_dim
    if g.sparse_dim() != S:
        g = g.to_dense().to_sparse(S).coalesce()
    mine = sp.index[0] if sp.layout == "coo" else coo_indices(sp.layout, sp.index)
    strides = [math.prod(sp.shape[d + 1:S]) for d in range(S)]
    keys = sum(mine[d] * strides[d] for d in range(S)) if S else mine.new_zeros(mine.shape[1])
    theirs = g._indices()
    their_keys = sum(theirs[d] * strides[d] for d in range(S)) if S else theirs.new_zeros(theirs.shape[1])
    values = g._values()
    out = values.new_zeros((keys.shape[0], *values.shape[1:]))
    if their_keys.shape[0]:
        pos = torch.searchsorted(their_keys, keys).clamp_(max=their_keys.shape[0] - 1)
        hit = their_keys[pos] == keys
        out[hit] = values[pos[hit]]
    return out


def _build_tensor(sp: Sparse):
    return _Pack.apply(sp.layout, sp.index, sp.values, sp.shape, sp.coalesced)


_FORMS = ("(indices, values, size) or (indices, values, size, is_coalesced) for COO, "
          "(crow_indices, col_indices, values, size) for CSR, or COOParts / CSRParts / CSCParts")

#: The names of the index tensors of each layout, as torch calls them.
_INDEX_NAMES = {"coo": ("indices",), "csr": ("crow_indices", "col_indices"), "csc": ("ccol_indices", "row_indices")}


def _tuple_layout(x, name):
    """The layout of parts tuple ``x``: named tuples by their class, plain ones by their length and last element.

    A plain 4-tuple is COO when it ends in a bool (``is_coalesced``) and CSR
    when it ends in a size (a tuple, list or ``torch.Size``).
    """
    if isinstance(x, COOParts):
        return "coo"
    if isinstance(x, CSRParts):
        return "csr"
    if isinstance(x, CSCParts):
        return "csc"
    if len(x) == 3:
        return "coo"
    if len(x) == 4:
        if isinstance(x[3], (bool, np.bool_)):
            return "coo"
        if isinstance(x[3], (tuple, list, torch.Size)):
            return "csr"
        raise TypeError(f"{name} as a 4-tuple must end in is_coalesced (a bool: COO) or in size (a tuple: "
                        f"CSR), got {type(x[3]).__name__}; the forms are {_FORMS}")
    raise TypeError(f"{name} as a tuple must be {_FORMS}; got {len(x)} elements")


def _require(condition, message) -> None:
    """``ValueError`` unless ``condition``; while compiling, a ``torch._check`` (sizes may be symbolic)."""
    if torch.compiler.is_compiling():
        torch._check(condition)
    elif not condition:
        raise ValueError(message())


def _size(size, name):
    """``size`` as a tuple of non-negative ints (``TypeError`` / ``ValueError`` naming ``name``)."""
    if torch.compiler.is_compiling():  # symbolic sizes: the shape checks run as torch._check
        return tuple(size)
    if isinstance(size, torch.Tensor) or not isinstance(size, (tuple, list, torch.Size)):
        raise TypeError(f"{name}.size must be a tuple of integers, got {type(size).__name__}")
    from gpusparse.ops._validate import check_shape
    return check_shape(tuple(size), f"{name}.size")


def _index_tensor(t, name, part, ndim):
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
        raise TypeError(f"{name}.{part} must be a dense torch tensor, got {type(t).__name__}"
                        f"{'' if not isinstance(t, torch.Tensor) else ' of layout ' + str(t.layout)}")
    if t.ndim != ndim or t.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name}.{part} must be a {ndim}-D int64 tensor (int32 for CSR/CSC), got {t.ndim}-D "
                        f"{t.dtype}")


def _check_parts(sp: Sparse, name: str) -> Sparse:
    """``sp``, validated; ``TypeError`` / ``ValueError`` naming ``name`` and the part at fault.

    Shapes, then the contents (in a compiled graph by an operator): COO indices inside
    ``size`` (sorted and unique where flagged coalesced), CSR/CSC
    ``crow_indices`` running non-decreasing from 0 to nnz, plain indices in
    range, sorted and unique within each row (column), as torch's invariants
    require. The contents checks are those of :meth:`gpusparse.SparseArray.check`.
    """
    parts = _INDEX_NAMES[sp.layout]
    values = sp.values
    if not isinstance(values, torch.Tensor) or values.layout != torch.strided:
        raise TypeError(f"{name}.values must be a dense torch tensor, got {type(values).__name__}")
    if values.ndim == 0:
        raise ValueError(f"{name}.values must have a leading entry dimension, got a 0-D tensor")
    for t, part in zip(sp.index, parts):
        _index_tensor(t, name, part, 2 if sp.layout == "coo" else 1)
    if sp.layout == "coo" and sp.index[0].dtype != torch.int64:
        raise TypeError(f"{name}.indices must be an int64 tensor of shape (sparse_dim, nnz), got {sp.index[0].dtype}")
    S = sp.sparse_dim
    nnz = sp.index[-1].shape[-1]
    _require(values.shape[0] == nnz, lambda: f"{name}: {values.shape[0]} values for {nnz} {parts[-1]}")
    if len(sp.shape) != S + values.ndim - 1:
        raise ValueError(f"{name}.size {sp.shape} has {len(sp.shape)} dimensions, but {name} has {S} sparse and "
                         f"{values.ndim - 1} dense ones (values of shape {tuple(values.shape)})")
    for d, (want, got) in enumerate(zip(sp.shape[S:], values.shape[1:])):
        _require(want == got, lambda: f"{name}.size {sp.shape} ends in {sp.shape[S:]}, but the values' dense "
                                      f"dimensions are {tuple(values.shape[1:])}")
    if sp.layout != "coo":
        major = 0 if sp.layout == "csr" else 1
        _require(sp.index[0].shape[0] == sp.shape[major] + 1,
                 lambda: f"{name}.{parts[0]} must have {sp.shape[major] + 1} entries ({name}.size[{major}] + 1), "
                         f"got {sp.index[0].shape[0]}")
    if torch.compiler.is_compiling():  # the contents check runs in the graph, its result anchored to the values
        ok = _check_contents_op(name, sp.layout, sp.index, list(sp.shape), sp.coalesced, values.dtype)
        return sp.with_(values=values + ok)
    _check_contents(name, sp.layout, sp.index, sp.shape, sp.coalesced)
    return sp


@on_torch_stream
def _check_contents(name: str, layout: str, index: list, shape, coalesced: bool) -> None:
    """The data-dependent checks of :func:`_check_parts` (those of :meth:`gpusparse.SparseArray.check`)."""
    from gpusparse.containers import COO, CSC, CSR
    from gpusparse._components import to_array
    from gpusparse._device import array_device
    parts = _INDEX_NAMES[layout]
    S = index[0].shape[0] if layout == "coo" else 2
    shape = tuple(int(s) for s in shape)
    arrays = to_arrays(*index)
    zeros = torch.zeros((), dtype=torch.float64, device=index[0].device).expand((index[-1].shape[-1], *shape[S:]))
    data = to_array(zeros, "values")[0]
    dev = array_device(data)
    if layout == "coo":
        x = COO._from_parts(arrays[0], data, shape, 0.0, dev, sorted=coalesced, unique=coalesced)
    else:
        x = (CSR if layout == "csr" else CSC)._from_parts(arrays[0], arrays[1], data, shape, 0.0, dev)
    try:
        x.check()
    except ValueError as e:
        message = str(e)
        if layout == "coo":
            message = re.sub(r"\bcoords\b", "indices", message.replace("x is flagged", "is_coalesced=True promises"))
        else:
            message = re.sub(r"\bindices\b", parts[1], re.sub(r"\bindptr\b", parts[0], message))
        raise ValueError(f"{name}: {message}") from None


@torch.library.custom_op("gpusparse::check_operand", mutates_args=())
def _check_contents_op(name: str, layout: str, index: list[torch.Tensor], shape: list[int], coalesced: bool,
                       dtype: torch.dtype) -> torch.Tensor:
    """:func:`_check_contents` as an operator of a compiled graph: a zero of ``dtype`` (added to the values,
    so that the check is not dropped as dead code), or ``ValueError`` naming ``name``."""
    _check_contents(name, layout, index, shape, coalesced)
    return torch.zeros((), dtype=dtype, device=index[0].device)


@_check_contents_op.register_fake
def _(name, layout, index, shape, coalesced, dtype):
    return torch.zeros((), dtype=dtype, device=index[0].device)


def as_sparse(x, name: str) -> Sparse:
    """``x`` (a torch sparse tensor or a parts tuple) as a validated :class:`Sparse`; errors name ``name``."""
    if isinstance(x, torch.Tensor):
        if x.layout == torch.strided:
            raise TypeError(f"{name} must be sparse (a torch sparse tensor or a parts tuple), got a dense tensor")
        values = _Unpack.apply(x) if x.requires_grad else (
            x._values() if x.layout == torch.sparse_coo else x.values())
        if x.layout == torch.sparse_coo:
            sp = Sparse("coo", [x._indices()], values, tuple(x.shape), x.is_coalesced(), True)
        elif x.layout == torch.sparse_csr and x.ndim - x.dense_dim() == 2:
            sp = Sparse("csr", [x.crow_indices(), x.col_indices()], values, tuple(x.shape), True, True)
        elif x.layout == torch.sparse_csc and x.ndim - x.dense_dim() == 2:
            if x.requires_grad and x.grad_fn is None:
                raise ValueError(f"{name} is a CSC leaf tensor that requires grad, and torch cannot accumulate "
                                 "CSC gradients; pass CSCParts(ccol_indices, row_indices, values, size) with "
                                 "values requiring grad, or a CSR tensor")
            sp = Sparse("csc", [x.ccol_indices(), x.row_indices()], values, tuple(x.shape), True, True)
        else:
            raise TypeError(f"{name} has layout {x.layout} (or batch dimensions), which gpusparse.autograd does "
                            "not take; convert it with to_sparse_coo()")
        return _check_parts(sp, name)  # torch builds sparse tensors unchecked by default
    if not isinstance(x, tuple):
        raise TypeError(f"{name} must be a torch sparse tensor or a parts tuple, got {type(x).__name__}")
    layout = _tuple_layout(x, name)
    parts = tuple(x)
    size = _size(parts[2 if layout == "coo" else 3], name)
    if layout == "coo":
        if len(parts) > 3 and not isinstance(parts[3], (bool, np.bool_)):
            raise TypeError(f"{name}.is_coalesced must be a bool, got {type(parts[3]).__name__}")
        coalesced = bool(parts[3]) if len(parts) > 3 else False
        index, values = [parts[0]], parts[1]
    else:
        index, values, coalesced = [parts[0], parts[1]], parts[2], True
    return _check_parts(Sparse(layout, index, values, size, coalesced, False), name)


# --------------------------------------------------------------------------
# torch tensors <-> gpusparse components (zero-copy)
# --------------------------------------------------------------------------

def to_arrays(*tensors):
    """NumPy (CPU) or CuPy (CUDA) views of ``tensors`` (detached, made contiguous where needed)."""
    from gpusparse._components import to_array
    return tuple(to_array(t.detach().contiguous().resolve_conj().resolve_neg(), "tensor")[0] for t in tensors)


def to_tensor(arr, *avoid) -> torch.Tensor:
    """A torch tensor over ``arr``; a copy where ``arr`` is read-only or shares memory with ``avoid``."""
    if isinstance(arr, np.ndarray) and not arr.flags.writeable:
        base = arr.base  # containers hand out read-only views of their (writeable) arrays
        same = isinstance(base, np.ndarray) and base.flags.writeable and base.dtype == arr.dtype \
            and base.shape == arr.shape \
            and base.strides == arr.strides and base.ctypes.data == arr.ctypes.data
        arr = base if same else arr.copy()
    out = torch.from_dlpack(arr)
    if out.numel() and any(a.numel() and a.data_ptr() == out.data_ptr() for a in avoid):
        out = out.clone()  # custom operators may not return their inputs
    return out


def container(layout, index, values, shape, arrays=False):
    """A gpusparse array over canonical components (COO coalesced, CSR/CSC sorted), sharing their memory.

    ``values`` is a tensor, or with ``arrays=True`` a NumPy/CuPy array used as is.
    """
    from gpusparse.containers import COO, CSC, CSR
    from gpusparse._device import array_device
    arrays = to_arrays(*index) + (values,) if arrays else to_arrays(*index, values)
    data = arrays[-1]
    dev = array_device(data)
    fill = data.dtype.type(0)
    if layout == "coo":
        return COO._from_parts(arrays[0], data, tuple(shape), fill, dev, sorted=True, unique=True)
    cls = CSR if layout == "csr" else CSC
    return cls._from_parts(arrays[0], arrays[1], data, tuple(shape), fill, dev)


def pattern(layout, index, shape, like):
    """A gpusparse array with the pattern ``index`` and zero values of ``like``'s dtype (a broadcast view)."""
    S = index[0].shape[0] if layout == "coo" else 2
    nnz = index[-1].shape[-1]
    from gpusparse._components import to_array
    zeros = torch.zeros((), dtype=like.dtype, device=like.device).expand((nnz,) + tuple(shape[S:]))
    return container(layout, index, to_array(zeros, "values")[0], shape, arrays=True)
