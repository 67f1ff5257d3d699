"""Conversions between formats, dtypes, devices and to dense arrays.

The conversions take the :class:`~gpusparse._backend.Backend` of their
operand's device as the keyword ``be`` when their caller has resolved it
already, and resolve it once themselves when not.
"""

from __future__ import annotations

import math

import numpy as np

import gpusparse._memory as _memory
from gpusparse._backend import backend
from gpusparse._device import as_device, to_device_array
from gpusparse._dtypes import check_value_dtype, index_dtype_for, normalize_fill_value
from gpusparse.ops import canonical

__all__ = [
    "asformat",
    "astype",
    "compressed_to_coo",
    "coo_to_compressed",
    "compressed_subset",
    "copy",
    "keep_entries",
    "to_dense",
    "to_device",
    "transpose_compressed",
]

FORMATS = ("coo", "csr", "csc")


def _format_class(name: str):
    from gpusparse.containers import COO, CSC, CSR
    classes = {"coo": COO, "csr": CSR, "csc": CSC}
    if not isinstance(name, str) or name.lower() not in classes:
        raise ValueError(f"format must be one of {FORMATS}, got {name!r}")
    return classes[name.lower()]


# --------------------------------------------------------------------------
# Components in, components out
# --------------------------------------------------------------------------

def components(x) -> tuple:
    """The component arrays of ``x`` in constructor order."""
    if x.format == "coo":
        return (x.coords, x.data)
    return (x.indptr, x.indices, x.data)


def rebuild(x, arrays: tuple, *, fill_value=None, device=None):
    """A container like ``x`` (format, shape, flags) over other component arrays."""
    fill = x.fill_value if fill_value is None else fill_value
    dev = x.device if device is None else device
    if x.format == "coo":
        coords, data = arrays
        return type(x)._from_parts(coords, data, x.shape, fill, dev, sorted=x.sorted, unique=x.unique)
    indptr, indices, data = arrays
    return type(x)._from_parts(indptr, indices, data, x.shape, fill, dev)


def compressed_subset(indptr, keep, arrays, k, xp):
    """The entries of a compressed structure where the bool mask ``keep`` holds.

    ``indptr`` is the structure's row pointer and ``arrays`` its per-entry
    arrays (indices, data, ...). Returns ``(new_indptr, kept_arrays)``:
    ``new_indptr`` (int64) from the running total of ``keep``, and the
    kept rows of every array (a ``gather``).
    """
    index = xp.nonzero(keep)[0]  # sync: the number of entries kept
    new_indptr = xp.take(k.offsets(keep), indptr)
    return new_indptr, [canonical.take_rows(a, index, k) for a in arrays]


def keep_entries(x, keep, *, be=None):
    """``x`` with the stored entries where the bool mask ``keep`` ((nnz,)) holds; format and flags kept."""
    be = be or backend(x.device)
    k, xp = be.kernels, be.xp
    with be.scope():
        if x.format == "coo":
            index = xp.nonzero(keep)[0]  # sync: the number of entries kept
            return rebuild(x, (k.take_columns(x.coords, index), canonical.take_rows(x.data, index, k)))
        indptr, (indices, data) = compressed_subset(x.indptr, keep, [x.indices, x.data], k, xp)
    return rebuild(x, (indptr.astype(x.index_dtype, copy=False), indices, data))


# --------------------------------------------------------------------------
# Dense output
# --------------------------------------------------------------------------

def to_dense(x, default_value=None, *, be=None):
    """Dense array of ``x`` with every unstored element equal to ``default_value`` (or the fill)."""
    _memory.require(_memory.nbytes(x.shape, x.dtype), x.device,
                    f"the dense array of shape {x.shape} and dtype {x.dtype.name}",
                    _memory.current_operation() or "to_dense")
    be = be or backend(x.device)
    coo = x if x.format == "coo" else compressed_to_coo(x, be=be)
    coo = coo if coo.unique else canonical.coalesce(coo, be=be)
    dtype = x.dtype
    fill = x.fill_value if default_value is None else normalize_fill_value(default_value, dtype, "default_value")
    sparse_shape, dense_shape = x.shape[: x.sparse_dim], x.shape[x.sparse_dim:]
    k, xp = be.kernels, be.xp
    with be.scope():
        out = xp.full((math.prod(sparse_shape), math.prod(dense_shape)), fill, dtype=dtype)
        if coo.nnz and out.size:
            keys = k.linearize(coo.coords, sparse_shape)
            k.scatter_dense(keys, coo.data.reshape(coo.nnz, -1), out)
        return out.reshape(x.shape)


# --------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------

def compressed_to_coo(x, *, trusted=True, be=None):
    """COO view of a CSR/CSC array (new coordinate array, shared data).

    ``trusted=False`` is for components not yet made canonical: the result
    then claims neither sorted nor unique coordinates.
    """
    from gpusparse.containers import COO
    be = be or backend(x.device)
    dev, k, xp = be.device, be.kernels, be.xp
    with be.scope():
        majors = k.expand(x.indptr, x.nnz)
        minors = x.indices.astype(np.int64)
        pair = (majors, minors) if x._major_axis == 0 else (minors, majors)
        coords = xp.stack(pair)
    is_csr = x._major_axis == 0
    return COO._from_parts(coords, x.data, x.shape, x.fill_value, dev,
                           sorted=trusted and is_csr, unique=trusted)


def coo_to_compressed(coo, cls, index_dtype=None, *, other_order=False, be=None):
    """CSR or CSC (``cls``) from a COO array with two sparse dimensions.

    ``other_order``: the entries are sorted in the other major order (they
    come from a CSC array and CSR is wanted); with a row-major sorted COO
    and CSC wanted this is known from its flags. The sort then runs without
    first testing whether it is needed (a sync that would almost never save
    it).
    """
    from gpusparse.containers import COO
    if coo.sparse_dim != 2:
        raise ValueError(
            f"{cls.format.upper()} needs exactly 2 sparse dimensions, this array has "
            f"{coo.sparse_dim} (shape {coo.shape}); reshape it first"
        )
    major = cls._major_axis
    shape = coo.shape
    if major == 1:  # sort column-major: coalesce the transposed coordinates
        other_order = other_order or (coo.sorted and coo.nnz > 1)
        swapped = (shape[1], shape[0]) + shape[2:]
        coo = COO._from_parts(coo.coords[::-1].copy(), coo.data, swapped, coo.fill_value, coo.device,
                              sorted=False, unique=coo.unique)
    be = be or backend(coo.device)
    coo = canonical.coalesce(coo, test_order=not other_order, be=be)
    n_major, n_minor = shape[major], shape[1 - major]
    if index_dtype is None:
        index_dtype = index_dtype_for(n_major, n_minor, coo.nnz)
    with be.scope():
        indptr = be.kernels.compress(coo.coords[0], n_major, index_dtype)
        indices = coo.coords[1].astype(index_dtype)
    return cls._from_parts(indptr, indices, coo.data, shape, coo.fill_value, be.device)


def transpose_compressed(x, cls, *, be=None):
    """The CSR or CSC (``cls``) of ``x``: a CSC or CSR, or a COO whose entries are row-major sorted and unique.

    The layout transpose of SciPy's ``csr_tocsc`` (the
    ``transpose_compressed`` primitive): one pass to count the entries of
    each new major index, a scan, and a stable scatter of the entries into
    place -- no sort of coordinate keys and no duplicate search, which the
    way through :func:`coo_to_compressed` pays. The result is the one that
    way gives, bit for bit: entries ordered by the new major index and,
    inside each, by the old one; the index dtype of
    :func:`~gpusparse._dtypes.index_dtype_for`.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> from gpusparse.containers import CSC
    >>> a = gs.CSR([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(2, 3), device="cpu")
    >>> b = transpose_compressed(a, CSC)
    >>> b.indptr, b.indices, b.data
    (array([0, 1, 2, 3], dtype=int32), array([0, 1, 0], dtype=int32), array([1., 3., 2.]))
    """
    shape = x.shape
    major = cls._major_axis
    n_major, n_minor = shape[major], shape[1 - major]
    index_dtype = index_dtype_for(n_major, n_minor, x.nnz)
    be = be or backend(x.device)
    dev, k = be.device, be.kernels
    data = x.data
    nnz, rest = data.shape[0], data.shape[1:]
    with be.scope():
        if x.format == "coo":  # row-major sorted, unique: its CSR structure, then the transpose
            indptr, indices = k.compress(x.coords[0], shape[0], np.int64), x.coords[1]
        else:
            indptr, indices = x.indptr, x.indices
        rows = data.reshape(nnz, math.prod(rest)) if data.flags.c_contiguous else \
            data.copy().reshape(nnz, math.prod(rest))
        t_indptr, t_indices, t_values = k.transpose_compressed(indptr, indices, rows, n_major, index_dtype)
    return cls._from_parts(t_indptr, t_indices, t_values.reshape(data.shape), shape, x.fill_value, dev)


def asformat(x, format: str, *, be=None):
    """``x`` in ``format``; ``x`` itself when it is in that format already.

    CSR <-> CSC, and a row-major sorted, unique COO to CSC, take the direct
    transpose (:func:`transpose_compressed`); the other ways go through COO
    and its canonical form.
    """
    cls = _format_class(format)
    if x.format == cls.format:
        return x
    be = be or backend(x.device)
    if cls.format != "coo" and (x.format != "coo" or (
            cls.format == "csc" and x.sparse_dim == 2 and x.sorted and x.unique)):
        return transpose_compressed(x, cls, be=be)
    coo = x if x.format == "coo" else compressed_to_coo(x, be=be)
    if cls.format == "coo":
        return coo
    return coo_to_compressed(coo, cls, be=be)


# --------------------------------------------------------------------------
# dtype, device, copy
# --------------------------------------------------------------------------

def astype(x, dtype, copy: bool = True, *, be=None):
    """``x`` with values and fill value cast to ``dtype`` (NumPy's unsafe casting).

    A cast is not linear (``int(0.6) + int(0.6) != int(1.2)``), so duplicate
    coordinates are summed in the old dtype first.
    """
    dtype = check_value_dtype(dtype, "dtype")
    if dtype == x.dtype and not copy:
        return x
    be = be or backend(x.device)
    if dtype != x.dtype and x.format == "coo" and not x.unique:
        x = canonical.coalesce(x, be=be)
    with be.scope():
        arrays = components(x)
        data = arrays[-1].astype(dtype, copy=True)
        fill = np.asarray(x.fill_value).astype(dtype)[()]
        index_arrays = tuple(a.copy() for a in arrays[:-1]) if copy else arrays[:-1]
    return rebuild(x, index_arrays + (data,), fill_value=fill)


def to_device(x, device):
    """``x`` on ``device``; ``x`` itself when it is there already."""
    dev = as_device(device)
    if dev == x.device:
        return x
    arrays = tuple(to_device_array(a, dev) for a in components(x))
    return rebuild(x, arrays, device=dev)


def copy(x, *, be=None):
    """Deep copy of ``x`` on its device."""
    with (be or backend(x.device)).scope():
        return rebuild(x, tuple(a.copy() for a in components(x)))
