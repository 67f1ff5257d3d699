"""Operands of the GraphBLAS-style operations: canonical CSR matrices, vectors as one-column matrices, masks."""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse.ops import convert
from gpusparse.ops.linalg.operands import is_sparse

__all__ = ["as_csr", "column_csr", "dense_mask", "dense_operand", "mask_structure", "need_sparse", "vector_of"]


def need_sparse(x, name: str, what: str, ndim=(2,)):
    """``x`` if it is a gpusparse array of ``ndim`` sparse dimensions (no dense ones); TypeError / ValueError otherwise."""
    if not is_sparse(x):
        raise TypeError(f"{what}: {name} must be a gpusparse sparse array; got {type(x).__name__}")
    if x.ndim not in ndim:
        raise ValueError(f"{what}: {name} must have {' or '.join(map(str, ndim))} dimensions; got shape {x.shape}")
    if x.dense_dim:
        raise ValueError(f"{what}: {name} has dense trailing dimensions ({x.dense_dim}); make them sparse first")
    return x


def as_csr(x, *, be=None):
    """2-D sparse ``x`` as a canonical CSR (duplicates of a COO summed first); ``x`` when it is CSR.

    ``be`` is the backend of ``x``'s device, when the caller has it already (so for the helpers below).
    """
    return x if x.format == "csr" else convert.asformat(x, "csr", be=be)


def column_csr(v, *, be=None):
    """1-D sparse ``v`` of length k as the canonical CSR of a (k, 1) matrix."""
    from gpusparse.containers import COO
    be = be or backend(v.device)
    xp = be.xp
    with be.scope():
        coords = xp.stack([v.coords[0], xp.zeros(v.nnz, dtype=np.int64)])
    coo = COO._from_parts(coords, v.data, (v.shape[0], 1), v.fill_value, v.device, sorted=v.sorted,
                          unique=v.unique)
    return convert.asformat(coo, "csr", be=be)


def vector_of(csr, *, be=None):
    """The 1-D COO of an (m, 1) CSR."""
    from gpusparse.containers import COO
    be = be or backend(csr.device)
    k = be.kernels
    with be.scope():
        rows = k.expand(csr.indptr, csr.nnz).reshape(1, -1)
    return COO._from_parts(rows, csr.data, (csr.shape[0],), csr.fill_value, csr.device, sorted=True, unique=True)


def dense_operand(b, be, dtype, name, what):
    """Dense ``b`` (NumPy / device array, DLPack producer or nested list) on the device of the
    backend ``be`` as C-contiguous ``dtype``."""
    from gpusparse._components import to_array
    from gpusparse._device import array_device, to_device_array
    dev = be.device
    arr, placed = to_array(b, name)
    if placed and array_device(arr) != dev:
        raise ValueError(f"{what}: {name} is on {array_device(arr)} and the sparse operand on {dev}; "
                         "move one explicitly")
    arr = to_device_array(arr, dev)
    with be.scope():
        return be.xp.ascontiguousarray(arr.astype(dtype, copy=False))


def mask_structure(mask, shape, be, what):
    """The canonical CSR structure ``(indptr, indices)`` a mask selects for a sparse result of ``shape``.

    A sparse mask selects its stored positions (its structure, whatever the
    values); a dense one its non-zero elements. ``be`` is the backend of the operands' device.
    """
    dev = be.device
    if is_sparse(mask):
        if mask.device != dev:
            raise ValueError(f"{what}: mask is on {mask.device} and the operands on {dev}")
        m = mask
    else:
        from gpusparse.ops.creation import fromdense_on
        m = fromdense_on(dense_operand(mask, be, np.bool_, "mask", what), be, format="coo")
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"{what}: mask has shape {tuple(m.shape)}, the result {tuple(shape)}")
    if m.ndim == 1:
        m = column_csr(m, be=be)
    m = as_csr(need_sparse(m, "mask", what), be=be)
    return m.indptr, m.indices


def dense_mask(mask, shape, complement, be, what):
    """The (m, n) bool array of the outputs a mask selects for a dense result of ``shape`` (1-D: (m, 1)),
    on the backend ``be`` of the operands' device."""
    dev, xp = be.device, be.xp
    rows = shape[0]
    cols = shape[1] if len(shape) == 2 else 1
    if is_sparse(mask):
        if tuple(mask.shape) != tuple(shape):
            raise ValueError(f"{what}: mask has shape {tuple(mask.shape)}, the result {tuple(shape)}")
        if mask.device != dev:
            raise ValueError(f"{what}: mask is on {mask.device} and the operands on {dev}")
        coo = mask if mask.format == "coo" else convert.asformat(mask, "coo", be=be)
        with be.scope():
            allowed = xp.zeros((rows, cols), dtype=np.bool_)
            r = coo.coords[0]
            c = coo.coords[1] if len(shape) == 2 else xp.zeros_like(r)
            allowed[r, c] = True
    else:
        arr = dense_operand(mask, be, np.bool_, "mask", what)
        if tuple(arr.shape) != tuple(shape):
            raise ValueError(f"{what}: mask has shape {tuple(arr.shape)}, the result {tuple(shape)}")
        with be.scope():
            allowed = xp.ascontiguousarray(arr.reshape(rows, cols))
    if complement:
        with be.scope():
            allowed = xp.ascontiguousarray(~allowed)
    return allowed
