"""pydata ``sparse``: COO shared as it is, 2-D GCXS shared as CSR or CSC.

pydata's COO has gpusparse's layout -- ``coords`` of shape ``(ndim, nnz)``,
``data``, ``shape`` and a ``fill_value`` -- but always holds sorted, unique
coordinates and no dense dimensions. A 2-D GCXS compressed along axis 0 is
CSR, along axis 1 CSC. pydata arrays live in host memory.
"""

from __future__ import annotations

import numpy as np

from gpusparse.ops.interop._common import (
    require_valid,
    check_copy,
    expand_dense_dims,
    export_components,
    finish_import,
    loaded,
    own_components,
    pointer,
    refuse,
    require_host,
    shares,
    verified_flags,
)

__all__ = ["from_pydata", "is_pydata_sparse", "to_pydata"]


def is_pydata_sparse(obj) -> bool:
    """True for a pydata ``sparse.SparseArray``; never imports ``sparse``."""
    module = loaded("sparse")
    cls = getattr(module, "SparseArray", None)
    return isinstance(cls, type) and isinstance(obj, cls)


def from_pydata(s, *, copy=None):
    """A gpusparse array sharing the components of the pydata sparse array ``s``.

    Parameters
    ----------
    s : sparse.COO, sparse.GCXS or another sparse.SparseArray
        A COO shares ``coords`` (when int64) and ``data``; a 2-D GCXS
        compressed along axis 0 becomes a CSR, along axis 1 a CSC, sharing
        ``indptr``, ``indices`` and ``data``. Other arrays (N-d GCXS, DOK)
        go through ``s.asformat("coo")``, which copies.
    copy : bool, optional
        ``None`` (default) shares what the layouts allow, ``True`` always
        copies, ``False`` raises ``ValueError`` where a copy is unavoidable.

    Returns
    -------
    COO, CSR or CSC
        On the CPU, with ``s.fill_value`` as its fill value. pydata's COO
        coordinates are sorted and unique unless its constructor was told
        so falsely (``sorted=True``, ``has_duplicates=False``): one pass over
        them sets the flags, and repeated coordinates are summed.

    Examples
    --------
    >>> import numpy as np, sparse, gpusparse as gs
    >>> s = sparse.COO.from_numpy(np.array([[1, 1, 3], [1, 2, 1]]), fill_value=1)
    >>> x = gs.from_pydata(s)
    >>> x.fill_value, x.nnz, x.is_coalesced()
    (np.int64(1), 2, True)
    >>> x.coords.ctypes.data == s.coords.ctypes.data
    True
    """
    if not is_pydata_sparse(s):
        raise TypeError(f"s must be a pydata sparse array, got {type(s).__name__}")
    copy = check_copy(copy)
    module = loaded("sparse")
    if isinstance(s, module.COO):
        return _from_coo(s, copy)
    if isinstance(s, module.GCXS) and s.ndim == 2 and tuple(s.compressed_axes) in ((0,), (1,)):
        return _from_gcxs(s, copy)
    refuse(copy, f"gpusparse has no {s.ndim}-d {type(s).__name__} format; the array is converted "
                 "through COO")
    return _from_coo(s.asformat("coo"), True if copy else None)


def _from_coo(s, copy):
    from gpusparse.containers import COO
    from gpusparse.ops import _validate
    coords, data, shape, fill, dev = _validate.coo_components(
        s.coords, s.data, s.shape, s.fill_value, "cpu", True
    )
    # pydata keeps no flags: its COO is canonical unless COO(..., sorted=True,
    # has_duplicates=False) was told so falsely, which it takes on trust.
    sorted_, unique = verified_flags(coords, shape, dev, sorted=True, unique=True)
    out = COO._from_parts(coords, data, shape, fill, dev, sorted=sorted_, unique=unique)
    return finish_import(out, (s.coords, s.data), copy, "pydata")


def _from_gcxs(s, copy):
    from gpusparse.containers import CSC, CSR
    cls = CSR if tuple(s.compressed_axes) == (0,) else CSC
    sources = (s.indptr, s.indices, s.data)
    out = cls(*sources, shape=s.shape, fill_value=s.fill_value, device="cpu")
    return finish_import(out, sources, copy, "pydata")


def to_pydata(x, *, copy=None):
    """A pydata sparse array over the components of ``x``, with the same fill value.

    Parameters
    ----------
    x : COO, CSR or CSC
        On the CPU (``x.to("cpu")`` first for a CUDA array: nothing moves
        between devices silently).
    copy : bool, optional
        ``None`` (default) shares what the layouts allow, ``True`` always
        copies, ``False`` raises ``ValueError`` where a copy is unavoidable.
        Shared components are read-only views (as ``x``'s accessors are);
        copied ones are writable and belong to the result alone.

    Returns
    -------
    sparse.COO or sparse.GCXS
        A COO for a COO; a GCXS compressed along axis 0 (CSR) or 1 (CSC).

    Notes
    -----
    pydata has no dense dimensions and no duplicate coordinates, so a copy
    is unavoidable for

    * an uncoalesced COO, which is coalesced first (duplicates summed);
    * a hybrid array, whose dense dimensions become sparse ones: each stored
      block of ``prod(dense_shape)`` elements becomes that many entries
      (entries equal to the fill value included). Hybrid CSR/CSC arrays give
      a pydata COO.

    Examples
    --------
    >>> import gpusparse as gs
    >>> x = gs.COO([[0, 2]], [5, 7], shape=(4,), fill_value=-1, device="cpu").coalesce()
    >>> s = gs.to_pydata(x)
    >>> s.fill_value, s.todense()
    (np.int64(-1), array([ 5, -1,  7, -1]))
    >>> s.data.ctypes.data == x.data.ctypes.data
    True
    """
    import sparse

    copy = check_copy(copy)
    require_host(x, "pydata sparse")
    require_valid(x, "pydata sparse")
    original = own_components(x)
    if x.dense_dim:
        refuse(copy, "pydata has no dense dimensions, so they become sparse ones")
        x = expand_dense_dims(x.tocoo())
    if x.format == "coo" and not x.is_coalesced():
        refuse(copy, "pydata COO cannot hold unsorted or repeated coordinates, so they are "
                     "coalesced")
        x = x.coalesce()
    if copy:
        x = _copy_shared(x, original)
    arrays = export_components(x, original)  # read-only where shared with the caller's x
    fill = x.fill_value
    if x.format == "coo":
        coords, data = arrays
        out = sparse.COO(coords, data, shape=x.shape, has_duplicates=False, sorted=True,
                         fill_value=fill)
        shared = ((coords, out.coords), (data, out.data))
    else:
        indptr, indices, data = arrays
        axes = (0,) if x.format == "csr" else (1,)
        out = sparse.GCXS((data, indices, indptr), shape=x.shape, compressed_axes=axes,
                          fill_value=fill)
        shared = ((indptr, out.indptr), (indices, out.indices), (data, out.data))
    for ours, theirs in shared:
        if ours.size and pointer(ours) != pointer(np.asarray(theirs)):
            refuse(copy, f"pydata copied a component of dtype {ours.dtype.name}")
    return out


def _copy_shared(x, original):
    """``x`` with every component that shares memory with one of ``original`` copied."""
    from gpusparse.ops import convert
    arrays = tuple(a.copy() if any(shares(a, o) for o in original) else a
                   for a in own_components(x))
    return convert.rebuild(x, arrays)
