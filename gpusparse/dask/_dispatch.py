"""gpusparse arrays as ``dask.array`` chunks: Dask's dispatch tables and chunk-type registry.

Dask reaches a chunk through NumPy's protocols (``__array_function__`` and
``__array_ufunc__``, which gpusparse answers: ``np.sum(..., keepdims=True)``,
``np.transpose``, ``np.broadcast_to``, ...) and, where NumPy has no protocol,
through its own dispatch tables. :func:`register` fills those for
:class:`gpusparse.SparseArray`:

* ``concatenate_lookup`` -- :func:`concatenate` below (how ``compute()``,
  ``rechunk`` and the reduction trees join chunks), and for ``dict``
  (Dask's stand-in for structured records in ``argmax``/``argmin`` along an
  axis) :func:`concatenate_records`, which refuses gpusparse members;
* ``tensordot_lookup`` -- :func:`tensordot` below (``A @ x``, ``da.dot``);
* ``einsum_lookup``, ``take_lookup`` -- gpusparse's ``einsum`` and ``take``;
* ``empty_lookup`` -- :func:`gpusparse.zeros` (nothing stored);
* ``numel_lookup`` -- element counts on the chunk's device (``mean``, ``var``);
* ``register_chunk_type`` -- so Dask arrays do not defer to gpusparse in
  arithmetic (``dask_array + chunk``);
* ``dask.sizeof`` -- the bytes of the component arrays, so Dask's memory
  accounting sees what a chunk holds.

Registration is automatic (see :mod:`gpusparse.dask._hook`); calling
:func:`register` again does nothing.
"""

from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["concatenate", "concatenate_records", "register", "tensordot"]

_done = False


def _same(a, b) -> bool:
    return bool(a == b) or (a != a and b != b)  # NaN fills are equal


def concatenate(arrays, axis=0):
    """Dask's ``concatenate_lookup`` for gpusparse chunks: :func:`gpusparse.concatenate`, made total.

    Dask joins chunks that gpusparse alone would refuse to join, so this

    * makes dense members sparse (storing what differs from the fill value
      of the first sparse member) -- Dask mixes dense and sparse chunks where
      a reduction returned a dense block;
    * gives every chunk the first chunk's fill value when they differ (e.g.
      the partial results of an ``argmax`` along one axis, whose unstored
      index depends on the chunk's offset): such a chunk is densified and
      stored anew, which costs memory in proportion to its size.

    Examples
    --------
    >>> import gpusparse as gs
    >>> from gpusparse.dask._dispatch import concatenate
    >>> a = gs.full((2,), 1.0, device="cpu")
    >>> b = gs.zeros((3,), device="cpu")
    >>> c = concatenate([a, b])
    >>> c.todense(), c.fill_value
    (array([1., 1., 0., 0., 0.]), np.float64(1.0))
    """
    from gpusparse.ops import comparison, creation, elementwise, shape as shape_ops
    from gpusparse.containers import SparseArray
    arrays = list(arrays)
    ref = next((a for a in arrays if isinstance(a, SparseArray)), None)
    if ref is None:
        raise TypeError("concatenate: no gpusparse array among the chunks")
    arrays = [a if isinstance(a, SparseArray) else comparison.dense_as_sparse(a, ref) for a in arrays]
    dtype = np.result_type(*(a.dtype for a in arrays))
    arrays = [elementwise.astype(a, dtype, copy=False) for a in arrays]
    fill = arrays[0].fill_value
    arrays = [
        a if _same(a.fill_value, fill) else creation.fromdense(
            a.todense(), fill_value=fill, sparse_dim=a.sparse_dim, format=a.format, device=a.device)
        for a in arrays
    ]
    return shape_ops.concatenate(arrays, axis=axis)


def concatenate_records(fields, axis=0):
    """Dask's ``concatenate_lookup`` for ``dict`` chunks: join one field's pieces, refusing gpusparse ones.

    Dask's ``argmax``/``argmin`` (and ``nanargmax``/``nanargmin``) along an
    axis keep, per chunk, the extreme values and their indices as structured
    records, or as a ``dict`` of the two where the chunk type has no
    structured dtype; Dask picks the join by the ``dict`` type and calls it
    on each field's pieces. With gpusparse chunks both fields are sparse
    arrays whose unstored indices depend on the chunk's offset, and the
    combining step indexes them with open meshes (``np.ogrid``), which
    sparse arrays do not support: the reduction cannot be carried out chunk
    by chunk, so it raises a ``ValueError`` saying so. Pieces of other types
    are joined by their own ``concatenate_lookup`` entry, as Dask would.
    """
    from dask.array.dispatch import concatenate_lookup

    from gpusparse.containers import SparseArray
    fields = list(fields)
    if any(isinstance(f, SparseArray) for f in fields):
        raise ValueError(
            "argmax/argmin (also nanargmax/nanargmin) along an axis is not supported on Dask arrays of "
            "gpusparse chunks: Dask combines per-chunk (value, index) records that sparse chunks cannot "
            "hold; call it without axis (the flat index, supported), or on the computed array "
            "(X.compute().argmax(axis=...))"
        )
    return concatenate_lookup.dispatch(type(fields[0]))(fields, axis=axis)


def tensordot(a, b, axes=2):
    """Dask's ``tensordot_lookup``: :func:`gpusparse.tensordot`, through ``matmul`` for matrix products.

    Dask spells every block product of ``A @ x`` and ``da.dot`` as a
    ``tensordot`` over ``((1,), (0,))``; for two-dimensional ``a`` that is
    :func:`gpusparse.matmul` (SpMV/SpMM directly, without the general
    path's transpositions). Same result either way.
    """
    from gpusparse.ops import linalg
    if getattr(a, "ndim", 0) == 2 and getattr(b, "ndim", 0) in (1, 2) and _matrix_axes(axes, b.ndim):
        return linalg.matmul(a, b)
    return linalg.tensordot(a, b, axes=axes)


def _matrix_axes(axes, b_ndim) -> bool:
    if isinstance(axes, (int, np.integer)):
        return axes == 1
    try:
        left, right = axes
        left, right = tuple(np.atleast_1d(left).tolist()), tuple(np.atleast_1d(right).tolist())
    except (TypeError, ValueError):
        return False
    return left in ((1,), (-1,)) and right in ((0,), (-b_ndim,))


def _empty(shape, dtype=float, **kwargs):
    from gpusparse.ops import creation
    return creation.zeros(shape, dtype=dtype)


def _numel(x, axis=None, keepdims=False, dtype=np.float64, **kwargs):
    """Dask's ``numel_lookup``: the element count over ``axis``, a dense array on ``x``'s device.

    Dask's default makes NumPy arrays, which cannot meet CUDA chunks
    (``mean``, ``var``); CuPy chunks get the same treatment from Dask.
    """
    from gpusparse._device import xp_for
    axes = range(x.ndim) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    axes = {a % x.ndim for a in axes}
    count = math.prod(x.shape[a] for a in axes)
    if axis is None and not keepdims:
        return np.dtype(dtype).type(count)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes)
    return xp_for(x.device).full(shape, count, dtype=dtype)


def _sizeof(x) -> int:
    return int(x.nbytes) + sys.getsizeof(x)


def register() -> None:
    """Register :class:`gpusparse.SparseArray` with ``dask.array`` (idempotent)."""
    global _done
    if _done:
        return
    from dask.array.chunk_types import register_chunk_type
    from dask.array.dispatch import (
        concatenate_lookup,
        einsum_lookup,
        empty_lookup,
        numel_lookup,
        take_lookup,
        tensordot_lookup,
    )
    from dask.sizeof import sizeof

    from gpusparse.containers import SparseArray
    from gpusparse.ops import einsum, indexing

    concatenate_lookup.register(SparseArray, concatenate)
    concatenate_lookup.register(dict, concatenate_records)
    tensordot_lookup.register(SparseArray, tensordot)
    einsum_lookup.register(SparseArray, einsum.einsum)
    take_lookup.register(SparseArray, indexing.take)
    empty_lookup.register(SparseArray, _empty)
    numel_lookup.register(SparseArray, _numel)
    sizeof.register(SparseArray, _sizeof)
    register_chunk_type(SparseArray)
    _done = True
