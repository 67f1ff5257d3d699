"""cupyx.scipy.sparse: SciPy's layouts in GPU memory, shared with CUDA arrays.

CSR and CSC share ``indptr``, ``indices`` and ``data``; COO stacks ``row``
and ``col`` into one ``(2, nnz)`` array (a view when they lie back to back,
as they do for a matrix made by :func:`to_cupyx`). cupyx keeps int32
indices, and int64 ones since CuPy 14.1; its ``*_matrix`` classes narrow
int64 indices to int32 where the values allow (a copy), its ``*_array``
classes keep them. cupyx values are bool, float32/64 or complex64/128.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops.interop._common import (
    require_valid,
    check_copy,
    from_scipy_layout,
    loaded,
    pointer,
    refuse,
    require_zero_fill,
)

__all__ = ["from_cupyx", "is_cupyx_sparse", "to_cupyx"]

_KINDS = ("matrix", "array")
_VALUE_DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.float32, np.float64, np.complex64, np.complex128))
_INT32_MAX = np.iinfo(np.int32).max


def is_cupyx_sparse(obj) -> bool:
    """True for a cupyx.scipy.sparse matrix or array; never imports CuPy."""
    module = loaded("cupyx.scipy.sparse")
    return module is not None and bool(module.issparse(obj))


def _keeps_int64(cupy) -> bool:
    """Whether this CuPy's cupyx.scipy.sparse accepts int64 indices (CuPy >= 14.1)."""
    try:
        major, minor = (int(p) for p in cupy.__version__.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (14, 1)


def from_cupyx(m, *, copy=None):
    """A gpusparse array sharing the components of the cupyx sparse matrix ``m``.

    Parameters
    ----------
    m : cupyx.scipy.sparse matrix or array
        CSR and CSC (2-D) share ``indptr``, ``indices`` and ``data``; COO
        shares ``data`` and stacks ``row``/``col`` (a view when they lie
        back to back in memory, else a copy). Other formats go through
        ``m.tocsr()`` (``m.tocoo()`` for 1-D arrays), which copies.
    copy : bool, optional
        ``None`` (default) shares what the layouts allow, ``True`` always
        copies, ``False`` raises ``ValueError`` where a copy is unavoidable.

    Returns
    -------
    COO, CSR or CSC
        On the CUDA device holding ``m``. CSR/CSC entries are made canonical
        if they are not; COO flags come from one pass over the coordinates.

    Examples
    --------
    On a machine with a CUDA device:

    >>> import cupy, cupyx.scipy.sparse as csp, gpusparse as gs  # doctest: +SKIP
    >>> m = csp.csr_matrix(cupy.array([[0.0, 1.0], [2.0, 0.0]]))  # doctest: +SKIP
    >>> x = gs.from_cupyx(m)  # doctest: +SKIP
    >>> x.device, x.data.data.ptr == m.data.data.ptr  # doctest: +SKIP
    (Device('cuda:0'), True)
    """
    if not is_cupyx_sparse(m):
        raise TypeError(f"m must be a cupyx.scipy.sparse matrix or array, got {type(m).__name__}")
    import cupy

    rows = ((m.col,) if m.ndim == 1 else (m.row, m.col)) if m.format == "coo" else ()  # 1-D: no row
    with cupy.cuda.Device(m.data.device.id):
        return from_scipy_layout(m, copy, "cupyx", device=None, rows=rows, xp=cupy, again=from_cupyx)


def to_cupyx(x, *, copy=None, kind="matrix"):
    """A cupyx.scipy.sparse matrix (or array) over the components of ``x``.

    Parameters
    ----------
    x : COO, CSR or CSC
        2-D, on a CUDA device (``x.to("cuda")`` first for a CPU array:
        nothing moves between devices silently), with fill value 0, no dense
        dimensions and values of a dtype cupyx supports (bool, float32,
        float64, complex64, complex128).
    copy : bool, optional
        ``None`` (default) shares what cupyx allows, ``True`` always copies,
        ``False`` raises ``ValueError`` where cupyx would copy (int64
        indices narrowed by a ``*_matrix`` class, or by a CuPy before 14.1).
    kind : {"matrix", "array"}
        ``coo_matrix``/``csr_matrix``/``csc_matrix`` (every CuPy) or the
        ``*_array`` classes of CuPy versions that have them.

    Returns
    -------
    cupyx.scipy.sparse matrix or array
        Its ``has_canonical_format`` is True for CSR/CSC and for a coalesced
        COO.

    Examples
    --------
    On a machine with a CUDA device:

    >>> import gpusparse as gs  # doctest: +SKIP
    >>> x = gs.random((4, 5), density=0.5, format="csr", device="cuda")  # doctest: +SKIP
    >>> m = gs.to_cupyx(x)  # doctest: +SKIP
    >>> type(m).__name__, m.indptr.data.ptr == x.indptr.data.ptr  # doctest: +SKIP
    ('csr_matrix', True)
    """
    import cupy
    import cupyx.scipy.sparse as csp

    from gpusparse.ops import convert
    copy = check_copy(copy)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    if not x.device.is_cuda:
        raise ValueError(f"x is on {x.device} but cupyx arrays live on a CUDA device; move it "
                         "explicitly with x.to('cuda') first")
    require_zero_fill(x, "cupyx")
    require_valid(x, "cupyx")
    if x.ndim != 2 or x.dense_dim:
        raise ValueError(f"cupyx holds 2-d arrays without dense dimensions; x has shape {x.shape} "
                         f"with {x.sparse_dim} sparse dimensions")
    if x.dtype not in _VALUE_DTYPES:
        names = ", ".join(d.name for d in _VALUE_DTYPES)
        raise TypeError(f"cupyx supports the value dtypes {names}; x has {x.dtype.name} "
                        "(cast it with x.astype())")
    cls = getattr(csp, f"{x.format}_{kind}", None)
    if cls is None:
        raise ValueError(f"this CuPy ({cupy.__version__}) has no "
                         f"cupyx.scipy.sparse.{x.format}_{kind}; use kind='matrix'")
    if copy:
        x = convert.copy(x)
    index_arrays = convert.components(x)[:-1]
    if not _keeps_int64(cupy) and any(a.dtype == np.int64 for a in index_arrays):
        if max(x.shape + (x.nnz,)) > _INT32_MAX:
            raise ValueError(f"x needs int64 indices, which cupyx supports from CuPy 14.1 "
                             f"(this is {cupy.__version__})")
        refuse(copy, f"cupyx of CuPy {cupy.__version__} keeps int32 indices only")
        index_arrays = tuple(a.astype(np.int32) for a in index_arrays)
    with cupy.cuda.Device(x.device.index):
        if x.format == "coo":
            coords = index_arrays[0]
            m = cls((x.data, (coords[0], coords[1])), shape=x.shape, copy=False)
            m.has_canonical_format = x.is_coalesced()
            shared = ((coords, m.row), (x.data, m.data))
        else:
            indptr, indices = index_arrays
            m = cls((x.data, indices, indptr), shape=x.shape, copy=False)
            m.has_canonical_format = True
            shared = ((indptr, m.indptr), (indices, m.indices), (x.data, m.data))
    for ours, theirs in shared:
        if ours.size and pointer(ours) != pointer(theirs):
            refuse(copy, f"cupyx narrowed or copied a component of dtype {ours.dtype.name} "
                         f"(to {theirs.dtype.name}); kind='array' keeps int64 indices")
    return m
