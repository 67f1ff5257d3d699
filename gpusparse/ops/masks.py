"""Masks: dense values at a sparse pattern (torch's ``sparse_mask``).

See also :func:`gpusparse.ops.tf_ops.retain`, which keeps entries by a flag
per stored entry.
"""

from __future__ import annotations

import math

import numpy as np

from gpusparse._components import to_array
from gpusparse._backend import backend
from gpusparse._device import array_device, to_device_array
from gpusparse._dtypes import check_value_dtype, normalize_fill_value
from gpusparse.ops import canonical, convert

__all__ = ["sparse_mask"]


def sparse_mask(dense, mask, *, fill_value=None):
    """The elements of ``dense`` at the stored coordinates of ``mask`` (torch's ``Tensor.sparse_mask``).

    Parameters
    ----------
    dense : array_like
        A NumPy or device array (or any DLPack producer, or lists) of
        ``mask.shape``, on ``mask``'s device (host input is moved there).
    mask : sparse array
        Only its pattern matters: the result stores one entry per distinct
        coordinate of ``mask`` (duplicates count once) holding
        ``dense[coordinate]`` -- a block of ``dense`` for hybrid masks, as in
        torch and JAX's ``bcoo_extract``.
    fill_value : scalar, optional
        The result's fill value; default 0.

    Returns
    -------
    A sparse array in ``mask``'s format with ``dense``'s dtype.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> mask = gs.COO([[0, 1, 1], [2, 0, 0]], [1, 1, 1], shape=(2, 3), device="cpu")
    >>> y = sparse_mask(np.arange(6.0).reshape(2, 3), mask)
    >>> y.coords.tolist(), y.data.tolist()
    ([[0, 1], [2, 0]], [2.0, 3.0])
    """
    from gpusparse.containers import COO, SparseArray
    if not isinstance(mask, SparseArray):
        raise TypeError(f"mask must be a gpusparse array, got {type(mask).__name__}")
    dev = mask.device
    arr, placed = to_array(dense, "dense")
    if array_device(arr) != dev:
        if placed and dev.kind == "cpu":
            raise ValueError(f"dense is on {array_device(arr)} but mask is on {dev}; move one explicitly")
        arr = to_device_array(arr, dev)
    check_value_dtype(arr.dtype, "dense")
    if tuple(arr.shape) != mask.shape:
        raise ValueError(f"dense has shape {tuple(arr.shape)} but mask has shape {mask.shape}")
    fill = normalize_fill_value(fill_value, arr.dtype)
    be = backend(dev)
    k, xp = be.kernels, be.xp
    S = mask.sparse_dim
    if mask.format != "coo":
        pattern = convert.compressed_to_coo(mask, be=be)
    else:
        pattern = mask if mask.unique else _unique_pattern(mask, be)
    with be.scope():
        rows = arr.reshape((math.prod(mask.shape[:S]), math.prod(mask.shape[S:])))
        if S and pattern.nnz:
            keys = _keys(pattern.coords, mask.shape[:S], k, xp)
            values = k.gather(xp.ascontiguousarray(rows), keys)
        else:
            values = rows[: pattern.nnz]
        values = xp.ascontiguousarray(values.reshape((pattern.nnz,) + mask.shape[S:]))
    if mask.format != "coo":
        return type(mask)._from_parts(mask.indptr, mask.indices, values, mask.shape, fill, dev)
    return COO._from_parts(pattern.coords, values, mask.shape, fill, dev,
                           sorted=pattern.sorted, unique=True)


def _keys(coords, shape, k, xp):
    if math.prod(shape) < 2**63:
        return k.linearize(coords, shape)
    raise ValueError(f"sparse_mask needs a sparse shape below 2**63 elements, got {shape}")


def _unique_pattern(mask, be):
    """``mask``'s distinct coordinates, sorted (values are irrelevant: a cheap dtype is coalesced)."""
    from gpusparse.containers import COO
    with be.scope():
        ones = be.xp.zeros((mask.nnz,), dtype=np.uint8)
    probe = COO._from_parts(mask.coords, ones, mask.shape[: mask.sparse_dim], np.uint8(0), mask.device,
                            sorted=mask.sorted, unique=False)
    return canonical.coalesce(probe, be=be)
