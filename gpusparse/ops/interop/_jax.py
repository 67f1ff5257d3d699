"""JAX ``jax.experimental.sparse``: BCOO and BCSR.

BCOO stores indices as ``(nse, n_sparse)``, the transpose of gpusparse's
``(n_sparse, nnz)``, so its coordinates are copied (except with one sparse
dimension and int64 indices); its values are shared. BCOO's ``n_dense``
trailing dimensions are gpusparse's dense dimensions; batch dimensions have
no equivalent and become sparse ones. Entries whose indices are out of
bounds are JAX's padding and are dropped. A BCSR without batch dimensions
shares all three components with a CSR.

JAX arrays are immutable, so :func:`to_jax` always copies: JAX may alias a
buffer it imports through DLPack, and gpusparse's components stay writable.
"""

from __future__ import annotations

import numpy as np

from gpusparse._components import to_array
from gpusparse._backend import backend
from gpusparse._device import array_device, to_host
from gpusparse.ops.interop._common import (
    require_valid,
    check_copy,
    finish_import,
    loaded,
    refuse,
    require_zero_fill,
    shares,
    verified_flags,
)

__all__ = ["from_jax", "is_jax_sparse", "to_jax"]

_INT32_MAX = np.iinfo(np.int32).max
_WIDE = tuple(np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128))


def is_jax_sparse(obj) -> bool:
    """True for a ``jax.experimental.sparse.JAXSparse`` array; never imports JAX."""
    module = loaded("jax.experimental.sparse")
    cls = getattr(module, "JAXSparse", None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _view(arr, name):
    try:
        return to_array(arr, name)[0]
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise TypeError(f"the JAX {name} cannot be exchanged through DLPack: {exc}") from None


def from_jax(b, *, copy=None):
    """A gpusparse array for the JAX sparse array ``b``.

    Parameters
    ----------
    b : jax.experimental.sparse.BCOO or BCSR
        A BCOO becomes a COO (``n_dense`` dense dimensions), a BCSR a CSR.
        Batch dimensions (``n_batch > 0``) become sparse dimensions through
        ``bcoo_update_layout(b, n_batch=0)`` (BCSR: ``b.to_bcoo()``), which
        copies. Padding entries (indices out of bounds) are dropped.
    copy : bool, optional
        ``None`` (default) shares what the layouts allow, ``True`` always
        copies, ``False`` raises ``ValueError`` where a copy is unavoidable
        (BCOO indices with more than one sparse dimension or int32 dtype,
        padding, batch dimensions).

    Returns
    -------
    COO or CSR
        On the device of ``b``'s buffers (NumPy on the CPU, where shared
        buffers are read-only, as JAX arrays are immutable). BCOO's
        ``indices_sorted`` and ``unique_indices`` are claims its constructor
        takes on trust: where either is True, one pass over the indices
        (one synchronisation on CUDA) sets the COO's flags to what holds,
        and repeated indices are summed, as JAX's ``todense`` sums them.

    Examples
    --------
    >>> import jax.numpy as jnp, gpusparse as gs
    >>> from jax.experimental import sparse
    >>> b = sparse.BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
    >>> x = gs.from_jax(b)
    >>> x.coords, x.is_coalesced()
    (array([[0, 1],
           [1, 0]]), True)
    >>> x.data.ctypes.data == b.data.unsafe_buffer_pointer()
    True
    """
    if not is_jax_sparse(b):
        raise TypeError(f"b must be a jax.experimental.sparse array, got {type(b).__name__}")
    copy = check_copy(copy)
    jsp = loaded("jax.experimental.sparse")
    if isinstance(b, jsp.BCOO):
        if b.n_batch:
            refuse(copy, f"gpusparse has no batch dimensions; the BCOO's {b.n_batch} become sparse ones")
            b = jsp.bcoo_update_layout(b, n_batch=0, on_inefficient=None)
        return _from_bcoo(b, copy)
    if isinstance(b, jsp.BCSR):
        if b.n_batch:
            refuse(copy, f"gpusparse has no batch dimensions; the BCSR's {b.n_batch} become sparse ones")
            return from_jax(b.to_bcoo(), copy=True if copy else None)
        return _from_bcsr(b, copy)
    raise TypeError(f"b must be a BCOO or BCSR; convert a {type(b).__name__} to BCOO first")


def _from_bcoo(b, copy):
    from gpusparse.containers import COO
    from gpusparse.ops import _validate
    src_indices = _view(b.indices, "indices")  # (nse, n_sparse)
    src_data = _view(b.data, "data")
    indices, data = src_indices, src_data
    nse, n_sparse = indices.shape
    be = backend(array_device(indices))
    dev, xp = be.device, be.xp
    with be.scope():
        if nse and n_sparse:
            inside = (indices < xp.asarray(b.shape[:n_sparse], dtype=np.int64)).all(axis=1)
            if not bool(to_host(inside.all())):  # sync: padding to drop?
                refuse(copy, "the BCOO holds padding entries (indices out of bounds), which are dropped")
                keep = xp.nonzero(inside)[0]
                indices, data = indices[keep], data[keep]
    if indices.size and not (n_sparse == 1 and indices.dtype == np.int64):
        refuse(copy, "BCOO indices are (nse, n_sparse), the transpose of gpusparse's (n_sparse, nnz)"
                     if n_sparse > 1 else
                     f"the BCOO indices have dtype {indices.dtype.name} and gpusparse keeps int64")
    # The transposed view goes to the validation as it is: it checks the values
    # in their own dtype before the cast to int64.
    coords, data, shape, fill, dev = _validate.coo_components(
        indices.T, data, tuple(b.shape), None, dev, True, be=be
    )
    coords_shared = shares(coords, src_indices)
    # BCOO's flags are claims (BCOO(..., indices_sorted=True, unique_indices=True) takes them on trust).
    sorted_, unique = verified_flags(coords, shape[:n_sparse], dev, sorted=b.indices_sorted,
                                     unique=b.unique_indices, be=be)
    out = COO._from_parts(coords, data, shape, fill, dev, sorted=sorted_, unique=unique)
    return finish_import(out, (src_indices if coords_shared else None, src_data), copy, "JAX", be=be)


def _from_bcsr(b, copy):
    from gpusparse.containers import CSR
    indptr, indices, data = (_view(a, name) for a, name in
                             ((b.indptr, "indptr"), (b.indices, "indices"), (b.data, "data")))
    nnz = int(to_host(indptr[-1:])[0])  # sync: entries past indptr[-1] are padding
    sources = (indptr, indices[:nnz], data[:nnz])
    out = CSR(*sources, shape=tuple(b.shape))
    return finish_import(out, sources, copy, "JAX")


def _x64_enabled(jax) -> bool:
    try:
        return bool(jax.config.read("jax_enable_x64"))
    except AttributeError:  # a JAX without config.read
        return bool(getattr(jax.config, "jax_enable_x64", False))


def to_jax(x, *, copy=None):
    """A JAX sparse array holding a copy of ``x``.

    Parameters
    ----------
    x : COO, CSR or CSC
        Fill value 0 (JAX has no other). Hybrid arrays keep their dense
        dimensions as ``n_dense``.
    copy : bool, optional
        ``None`` and ``True`` copy (JAX arrays are immutable, so sharing
        writable memory with one is unsafe); ``False`` raises ``ValueError``.

    Returns
    -------
    jax.experimental.sparse.BCOO or BCSR
        A BCSR for a CSR, a BCOO otherwise (with ``indices_sorted`` and
        ``unique_indices`` from ``x``'s flags), on the device of ``x``.
        Indices are int32 where the sizes allow, as JAX makes them.

    Raises
    ------
    TypeError
        For 64-bit values (or indices beyond int32) while JAX's
        ``jax_enable_x64`` is off: JAX would silently narrow them.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> x = gs.COO([[0, 1], [1, 0]], np.array([1.0, 2.0], dtype=np.float32), device="cpu")
    >>> b = gs.to_jax(x)
    >>> type(b).__name__, b.indices.dtype
    ('BCOO', dtype('int32'))
    >>> b.todense()
    Array([[0., 1.],
           [2., 0.]], dtype=float32)
    """
    import jax
    from jax.experimental import sparse as jsp
    copy = check_copy(copy)
    refuse(copy, "JAX arrays are immutable, so to_jax always copies into new JAX arrays")
    require_zero_fill(x, "JAX")
    require_valid(x, "JAX")
    x64 = _x64_enabled(jax)
    if not x64 and x.dtype in _WIDE:
        raise TypeError(
            f"x has dtype {x.dtype.name} but jax_enable_x64 is off, so JAX would narrow it to 32 "
            "bits; enable it (jax.config.update('jax_enable_x64', True)) or cast x with .astype()"
        )
    index_dtype = np.dtype(np.int32 if max(x.shape + (x.nnz,), default=0) <= _INT32_MAX else np.int64)
    if index_dtype == np.int64 and not x64:
        raise TypeError(
            f"x of shape {x.shape} with {x.nnz} entries needs int64 indices, but jax_enable_x64 is off"
        )
    be = backend(x.device)
    if x.format == "csc":
        from gpusparse.ops import convert
        x = convert.asformat(x, "coo", be=be)
    xp = be.xp
    with be.scope():
        data = xp.array(x.data, order="C", copy=True)
        if x.format == "coo":
            indices = xp.empty((x.nnz, x.sparse_dim), dtype=index_dtype)
            indices[...] = x.coords.T
            args = (_to_jax(data, jax), _to_jax(indices, jax))
            return jsp.BCOO(args, shape=x.shape, indices_sorted=x.sorted, unique_indices=x.unique)
        indices = x.indices.astype(index_dtype, copy=True)
        indptr = x.indptr.astype(index_dtype, copy=True)
        args = (_to_jax(data, jax), _to_jax(indices, jax), _to_jax(indptr, jax))
        return jsp.BCSR(args, shape=x.shape, indices_sorted=True, unique_indices=True)


def _to_jax(arr, jax):
    """A JAX array owning ``arr``, a new C-contiguous array nobody else holds."""
    return jax.dlpack.from_dlpack(arr)
