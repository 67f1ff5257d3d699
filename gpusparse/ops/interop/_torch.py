"""torch sparse tensors: COO (hybrid, uncoalesced), CSR and CSC, component by component.

torch refuses to export a sparse tensor through DLPack, but each component
is an ordinary strided tensor: indices, crow/ccol indices and values travel
through DLPack one by one, so CPU tensors share memory with NumPy arrays and
CUDA tensors with CuPy arrays on the same device.

Streams
-------
gpusparse launches on CuPy's current stream; a torch program works on
torch's current stream, which need not be the same one (a side stream, or a
CUDA graph capture). :func:`torch_stream_scope` makes CuPy's current stream
torch's for the duration of a call, so that what gpusparse launches, the
cuSPARSE calls it makes and the memory it allocates (CuPy's pool is per
stream) are ordered after whatever torch queued on that stream before the
call, and before whatever it queues after. The autograd operators
(:mod:`gpusparse.autograd`, forward and backward: torch's autograd engine
runs a backward on the stream of its forward) and :func:`from_torch` /
:func:`to_torch` enter it.

DLPack carries the rest: a consumer passes its current stream to the
producer's ``__dlpack__(stream=...)`` and the producer makes its pending
work visible on that stream (``cupy.from_dlpack(tensor)`` passes CuPy's
current stream and torch makes it wait for torch's current stream;
``torch.from_dlpack(cupy_array)`` passes torch's and CuPy makes it wait for
CuPy's). gpusparse imports with ``cupy.from_dlpack`` and exports with
``torch.from_dlpack``, both inside the scope, where the two streams are one
and the exchange needs no event.
"""

from __future__ import annotations

import contextlib

from gpusparse._components import to_array
from gpusparse._device import cuda_module
from gpusparse.ops.interop._common import (
    require_valid,
    check_copy,
    finish_import,
    loaded,
    pointer,
    refuse,
    require_zero_fill,
    verified_flags,
)

__all__ = ["from_torch", "is_torch_sparse", "to_torch", "torch_stream", "torch_stream_scope"]


def _cuda_index(objs, torch) -> "int | None":
    """The index of the first CUDA tensor or device in ``objs`` (lists and tuples searched one level)."""
    for obj in objs:
        items = obj if isinstance(obj, (list, tuple)) else (obj,)
        for t in items:
            dev = t.device if isinstance(t, torch.Tensor) else t if isinstance(t, torch.device) else None
            if dev is not None and dev.type == "cuda":
                return torch.cuda.current_device() if dev.index is None else dev.index
    return None


def torch_stream(*tensors) -> "tuple[int, int] | None":
    """``(handle, device index)`` of torch's current CUDA stream for ``tensors``, or None.

    The device is that of the first CUDA tensor (or ``torch.device``) among
    ``tensors`` (lists and tuples of them are searched too), else torch's
    current device.
    None where torch is not imported or has not initialised CUDA (then no
    tensor is on a GPU, and nothing torch queued can be pending). Never
    imports torch, never initialises CUDA.
    """
    torch = loaded("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    index = _cuda_index(tensors, torch)
    if index is None:
        index = torch.cuda.current_device()
    return int(torch.cuda.current_stream(index).cuda_stream), int(index)


@contextlib.contextmanager
def torch_stream_scope(*tensors, join: bool = False):
    """Make torch's current CUDA stream CuPy's current stream inside a ``with`` block.

    Parameters
    ----------
    *tensors : torch.Tensor or torch.device
        The call's tensors: the stream is torch's current stream on the
        device of the first CUDA one, else on torch's current device (see
        :func:`torch_stream`).
    join : bool
        Also order the stream against CuPy's current stream outside the
        block, where the two differ: torch's stream waits for CuPy's on
        entry (gpusparse arrays made before the call are complete before the
        block reads them) and CuPy's waits for torch's on exit (arrays made
        in the block are complete before CuPy's stream reads them). For
        calls whose inputs or outputs are gpusparse arrays (:func:`to_torch`,
        :func:`from_torch`); the autograd operators take and return torch
        tensors only, and do not join (a join would tie a torch side stream
        to CuPy's default stream, torch's default stream too).

    Yields
    ------
    cupy.cuda.Stream or None
        The stream made current (a ``cupy.cuda.ExternalStream`` over
        torch's), CuPy's current stream where it already is torch's, or None
        where there is no torch CUDA stream (torch not imported, CUDA not
        initialised, CuPy missing): the block then runs unchanged.

    Notes
    -----
    The current device is set to the stream's device for the block. No
    synchronisation with the host: the join is an event recorded on one
    stream and waited for by the other.
    """
    found = torch_stream(*tensors)
    if found is None:
        yield None
        return
    ptr, index = found
    try:
        cupy = cuda_module()
    except ImportError:  # torch has CUDA but there is no CuPy: gpusparse has no CUDA device to launch on
        yield None
        return
    with cupy.cuda.Device(index):
        outer = cupy.cuda.get_current_stream()
        if int(outer.ptr) == ptr:
            yield outer
            return
        inner = cupy.cuda.ExternalStream(ptr, index)
        if join:
            inner.wait_event(outer.record())
        try:
            with inner:
                yield inner
        finally:
            if join:
                outer.wait_event(inner.record())


def is_torch_sparse(obj) -> bool:
    """True for a torch tensor with a sparse layout; never imports torch."""
    torch = loaded("torch")
    return torch is not None and isinstance(obj, torch.Tensor) and obj.layout != torch.strided


def _strided(t, name: str, copy):
    """A NumPy/CuPy view of the strided tensor ``t`` (resolving torch's lazy conj/neg bits)."""
    if t.is_conj() or t.is_neg():
        refuse(copy, f"the torch {name} carry a lazy conjugation or negation bit")
        t = t.resolve_conj().resolve_neg()
    try:
        return to_array(t, name)[0]
    except (BufferError, RuntimeError, TypeError) as exc:
        raise TypeError(f"torch {name} of dtype {t.dtype} on {t.device} cannot be used: {exc}") from None


def from_torch(t, *, copy=None):
    """A gpusparse array sharing the components of the torch sparse tensor ``t``.

    Parameters
    ----------
    t : torch.Tensor
        A tensor with layout ``torch.sparse_coo`` (hybrid and uncoalesced
        tensors included), ``torch.sparse_csr`` or ``torch.sparse_csc``.
        Other sparse layouts (BSR, BSC, batched CSR/CSC) go through
        ``t.to_sparse_coo()``, which copies. Dense (strided) tensors are
        not sparse arrays: use :func:`gpusparse.asarray` or
        :func:`gpusparse.fromdense`.
    copy : bool, optional
        ``None`` (default) shares every component the layouts allow,
        ``True`` always copies, ``False`` raises ``ValueError`` where a copy
        is unavoidable.

    Returns
    -------
    COO, CSR or CSC
        On the tensor's device: CPU tensors give NumPy components, CUDA
        tensors CuPy components on the same GPU. A COO tensor's
        ``is_coalesced()`` is a claim (``torch.sparse_coo_tensor(...,
        is_coalesced=True)`` takes it on trust): where it is True, one pass
        over the indices (one synchronisation on CUDA) confirms it, and
        repeated or unsorted indices give an uncoalesced COO whose duplicates
        are summed, as torch sums them. CSR/CSC entries are made canonical
        (sorted within each row/column, duplicates summed) if they are not.

    Notes
    -----
    The tensor is detached from autograd. COO indices are int64 in torch, so
    they are always shared; CSR/CSC keep their int32 or int64 indices.

    Examples
    --------
    >>> import torch, gpusparse as gs
    >>> t = torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    >>> x = gs.from_torch(t)
    >>> x.format, x.is_coalesced()
    ('coo', True)
    >>> x.todense()
    array([[0., 1.],
           [2., 0.]], dtype=float32)
    >>> x.data.ctypes.data == t.values().data_ptr()
    True
    """
    torch = loaded("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    copy = check_copy(copy)
    if t.layout == torch.strided:
        raise TypeError(
            "t is a dense (strided) tensor; convert dense input with gpusparse.asarray or "
            "gpusparse.fromdense"
        )
    t = t.detach()
    with torch_stream_scope(t, join=True):
        if t.layout == torch.sparse_coo:
            return _from_coo(t, copy)
        if t.layout in (torch.sparse_csr, torch.sparse_csc) and t.ndim - t.dense_dim() == 2:
            return _from_compressed(t, copy, torch)
        layout = str(t.layout).replace("torch.", "")
        if t.layout in (torch.sparse_csr, torch.sparse_csc):
            what = f"batch dimensions ({layout} with {t.ndim - t.dense_dim() - 2})"
        else:
            what = f"{layout} layout"
        refuse(copy, f"gpusparse has no {what}; the tensor is converted through COO")
        return _from_coo(t.to_sparse_coo(), True if copy else None)


def _from_coo(t, copy):
    from gpusparse.containers import COO
    from gpusparse.ops import _validate
    if t.sparse_dim() == 0 and t._nnz() > 1:
        refuse(copy, "a torch COO tensor with no sparse dimension holds several blocks, "
                     "which gpusparse sums into one")
        t = t.coalesce()
    coalesced = t.is_coalesced()
    src_coords = _strided(t._indices(), "indices", copy)
    src_data = _strided(t._values(), "values", copy)
    coords, data, shape, fill, dev = _validate.coo_components(
        src_coords, src_data, tuple(t.shape), None, None, True
    )
    sorted_, unique = verified_flags(coords, shape[: coords.shape[0]], dev, sorted=coalesced, unique=coalesced)
    out = COO._from_parts(coords, data, shape, fill, dev, sorted=sorted_, unique=unique)
    return finish_import(out, (src_coords, src_data), copy, "torch")


def _from_compressed(t, copy, torch):
    from gpusparse.containers import CSC, CSR
    if t.layout == torch.sparse_csr:
        cls, pointers, indices = CSR, t.crow_indices(), t.col_indices()
    else:
        cls, pointers, indices = CSC, t.ccol_indices(), t.row_indices()
    sources = (
        _strided(pointers, "compressed indices", copy),
        _strided(indices, "plain indices", copy),
        _strided(t.values(), "values", copy),
    )
    out = cls(*sources, shape=tuple(t.shape))
    return finish_import(out, sources, copy, "torch")


def to_torch(x, *, copy=None):
    """A torch sparse tensor over the components of ``x``.

    Parameters
    ----------
    x : COO, CSR or CSC
        Hybrid arrays (dense trailing dimensions) are kept hybrid. The fill
        value must be 0: torch has no other.
    copy : bool, optional
        ``None`` (default) and ``False`` share every component (the tensor
        and ``x`` then see each other's writes), ``True`` copies them.

    Returns
    -------
    torch.Tensor
        ``torch.sparse_coo`` (with ``is_coalesced()`` equal to
        ``x.is_coalesced()``), ``torch.sparse_csr`` or ``torch.sparse_csc``
        on the device of ``x``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1, 1], [1, 0, 0]], [1.0, 2.0, 3.0], shape=(2, 2), device="cpu")
    >>> t = gs.to_torch(x)
    >>> t.is_coalesced(), t.to_dense()
    (False, tensor([[0., 1.],
            [5., 0.]], dtype=torch.float64))
    >>> t._values().data_ptr() == x.data.ctypes.data
    True
    """
    import torch

    from gpusparse.ops import convert
    copy = check_copy(copy)
    require_zero_fill(x, "torch")
    require_valid(x, "torch")
    device = torch.device("cuda", x.device.index) if x.device.is_cuda else None
    with torch_stream_scope(device, join=True):
        return _to_torch(x, copy, torch, convert)


def _to_torch(x, copy, torch, convert):
    """:func:`to_torch` on torch's current stream (``torch.from_dlpack`` passes it to ``__dlpack__``)."""
    if copy:
        x = convert.copy(x)
    tensors = tuple(torch.from_dlpack(a) for a in convert.components(x))
    if x.format == "coo":
        out = torch.sparse_coo_tensor(*tensors, size=x.shape, is_coalesced=x.is_coalesced(),
                                      check_invariants=False)
        shared = (out._indices(), out._values())
    else:
        make = torch.sparse_csr_tensor if x.format == "csr" else torch.sparse_csc_tensor
        out = make(*tensors, size=x.shape, check_invariants=False)
        if x.format == "csr":
            shared = (out.crow_indices(), out.col_indices(), out.values())
        else:
            shared = (out.ccol_indices(), out.row_indices(), out.values())
    _check_shared(convert.components(x), shared, copy)
    return out


def _check_shared(ours, theirs, copy) -> None:
    """With ``copy=False``, make sure torch kept every buffer (it casts otherwise)."""
    if copy is not False:
        return
    for mine, tensor in zip(ours, theirs):
        if mine.size and pointer(mine) != tensor.data_ptr():
            refuse(copy, f"torch copied a component of dtype {mine.dtype.name} into {tensor.dtype}")

