"""scipy.sparse arrays and matrices: CSR/CSC shared as they are, COO stacked.

SciPy stores CSR/CSC exactly as gpusparse does (``indptr``, ``indices``,
``data``), so those components are shared both ways. SciPy keeps one index
array per dimension for COO where gpusparse keeps one ``(ndim, nnz)`` array:
exporting shares the rows of that array, importing stacks them -- a copy,
unless the rows already lie back to back in memory, as they do for a SciPy
array made by :func:`to_scipy`.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops.interop._common import (
    require_valid,
    check_copy,
    from_scipy_layout,
    export_components,
    loaded,
    own_components,
    pointer,
    refuse,
    require_host,
    require_zero_fill,
)

__all__ = ["from_scipy", "is_scipy_sparse", "to_scipy"]

_KINDS = ("array", "matrix")


def is_scipy_sparse(obj) -> bool:
    """True for a scipy.sparse array or matrix; never imports SciPy."""
    sp = loaded("scipy.sparse")
    return sp is not None and bool(sp.issparse(obj))


def _coords_of(m) -> tuple:
    """The per-dimension index arrays of a SciPy COO (``coords`` since SciPy 1.13)."""
    coords = getattr(m, "coords", None)
    return tuple(coords) if coords is not None else (m.row, m.col)


def from_scipy(m, *, copy=None):
    """A gpusparse array for the scipy.sparse array or matrix ``m``.

    Parameters
    ----------
    m : scipy.sparse array or matrix
        CSR and CSC (2-D) share ``indptr``, ``indices`` and ``data``; COO
        (any number of dimensions) shares ``data`` and stacks ``coords``
        into one ``(ndim, nnz)`` array. Other formats (DIA, BSR, LIL, DOK,
        1-D CSR) go through ``m.tocsr()`` or ``m.tocoo()``, which copies.
    copy : bool, optional
        ``None`` (default) shares what the layouts allow, ``True`` always
        copies, ``False`` raises ``ValueError`` where a copy is unavoidable
        (COO coordinates, other formats, non-canonical CSR/CSC, index or
        value dtypes gpusparse does not keep).

    Returns
    -------
    COO, CSR or CSC
        On the CPU. CSR/CSC entries are made canonical (sorted within each
        row/column, duplicates summed) if they are not; COO flags say whether
        the coordinates are sorted and unique, as one pass over them finds.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, gpusparse as gs
    >>> m = sp.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    >>> x = gs.from_scipy(m)
    >>> x.format, x.indptr
    ('csr', array([0, 1, 2], dtype=int32))
    >>> x.data.ctypes.data == m.data.ctypes.data
    True
    """
    if not is_scipy_sparse(m):
        raise TypeError(f"m must be a scipy.sparse array or matrix, got {type(m).__name__}")
    rows = _coords_of(m) if m.format == "coo" else ()
    return from_scipy_layout(m, copy, "SciPy", device="cpu", rows=rows, xp=np, again=from_scipy)


def to_scipy(x, *, copy=None, kind="array"):
    """A scipy.sparse array (or matrix) over the components of ``x``.

    Parameters
    ----------
    x : COO, CSR or CSC
        On the CPU (``x.to("cpu")`` first for a CUDA array: nothing moves
        between devices silently), with fill value 0 and no dense
        dimensions, which SciPy does not have.
    copy : bool, optional
        ``None`` (default) and ``False`` share every component -- a COO's
        coordinate rows too: SciPy's arrays are then read-only views (as
        ``x``'s accessors are), so SciPy's in-place methods refuse to change
        ``x`` behind its validation. ``True`` copies them into writable
        arrays that belong to the result alone.
    kind : {"array", "matrix"}
        ``coo_array``/``csr_array``/``csc_array`` or the ``*_matrix``
        classes (2-D only).

    Returns
    -------
    scipy.sparse array or matrix
        Its ``has_canonical_format`` is True for CSR/CSC and for a coalesced
        COO (SciPy >= 1.13, whose canonical COO order is row-major), False
        otherwise.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.CSR([0, 1, 2], [1, 0], [1.0, 2.0], shape=(2, 2), device="cpu")
    >>> m = gs.to_scipy(x)
    >>> type(m).__name__, m.has_canonical_format
    ('csr_array', True)
    >>> m.toarray()
    array([[0., 1.],
           [2., 0.]])
    >>> m.indptr.ctypes.data == x.indptr.ctypes.data
    True
    """
    import scipy.sparse as sp

    from gpusparse.ops import convert
    copy = check_copy(copy)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    require_host(x, "SciPy")
    require_zero_fill(x, "SciPy")
    require_valid(x, "SciPy")
    if x.dense_dim:
        raise ValueError(
            f"SciPy has no dense dimensions, but x has {x.dense_dim} (shape {x.shape}, "
            f"sparse_dim {x.sparse_dim}); store every dimension as a sparse one first"
        )
    if kind == "matrix" and x.ndim != 2:
        raise ValueError(f"kind='matrix' needs a 2-d array, x has shape {x.shape}")
    if x.ndim == 0:
        raise ValueError("SciPy has no 0-d sparse arrays")
    original = own_components(x)
    if copy:
        x = convert.copy(x)
    arrays = export_components(x, original)  # read-only where shared with x, writable copies
    cls = getattr(sp, f"{x.format}_{kind}")
    m = cls(x.shape, dtype=x.dtype)  # empty; the components are set below without any cast
    if x.format == "coo":
        rows = tuple(arrays[0])
        if isinstance(getattr(type(m), "row", None), property):
            m.coords = rows
            canonical = x.is_coalesced()  # SciPy's canonical COO order is row-major (C order)
        else:  # SciPy before 1.13: row and col are plain attributes, canonical order column-major
            m.row, m.col = rows
            canonical = False
        m.data = arrays[1]
        m.has_canonical_format = canonical
        shared = ((arrays[0], _coords_of(m)[0]), (arrays[1], m.data))
    else:
        m.indptr, m.indices, m.data = arrays
        m.has_canonical_format = True
        m.check_format(full_check=False)
        shared = tuple(zip(arrays, (m.indptr, m.indices, m.data)))
    for ours, theirs in shared:  # SciPy may have replaced an array while checking it
        if ours.size and pointer(ours) != pointer(theirs):
            refuse(copy, f"SciPy replaced a component of dtype {ours.dtype.name}")
    return m
