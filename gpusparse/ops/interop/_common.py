"""What every converter shares: the ``copy`` contract, buffer identity, layout helpers.

The ``copy`` argument follows DLPack and the array API: ``True`` always
copies, ``None`` copies only what the layouts force, ``False`` raises
``ValueError`` naming the reason when a copy cannot be avoided. A converter
states each unavoidable copy up front with :func:`refuse`, builds its result,
and then lets :func:`finish_import` check that every component it meant to
share really is shared (peers' constructors sometimes cast or copy behind
the caller's back) and make the copies ``copy=True`` asks for.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import cuda_module, is_cupy_array, to_host

__all__ = [
    "check_copy",
    "expand_dense_dims",
    "export_components",
    "finish_import",
    "loaded",
    "own_components",
    "order_state",
    "pointer",
    "refuse",
    "require_host",
    "require_zero_fill",
    "shares",
    "stack_rows",
    "verified_flags",
]

_COMPONENT_NAMES = {
    "coo": ("coordinates", "values"),
    "csr": ("index pointer", "column indices", "values"),
    "csc": ("index pointer", "row indices", "values"),
}


def loaded(name: str):
    """The module ``name`` if it has been imported already, else None; never imports."""
    return sys.modules.get(name)


# --------------------------------------------------------------------------
# The copy contract
# --------------------------------------------------------------------------

def check_copy(copy):
    """``copy`` as True, False or None, or ``TypeError`` naming the argument."""
    if copy is None or isinstance(copy, (bool, np.bool_)):
        return None if copy is None else bool(copy)
    raise TypeError(f"copy must be True, False or None, got {copy!r}")


def refuse(copy, reason: str) -> None:
    """Raise ``ValueError`` when ``copy is False``: ``reason`` says why a copy is unavoidable."""
    if copy is False:
        raise ValueError(f"copy=False, but {reason}; a copy cannot be avoided (pass copy=None to allow it)")


def pointer(arr) -> int:
    """Address of the first element of a NumPy or CuPy array."""
    if is_cupy_array(arr):
        return int(arr.data.ptr)
    return int(arr.__array_interface__["data"][0])


def shares(a, b) -> bool:
    """True if the NumPy/CuPy arrays ``a`` and ``b`` (same module) may overlap in memory.

    Empty arrays share nothing.
    """
    if a.size == 0 or b.size == 0:
        return False
    if is_cupy_array(a) != is_cupy_array(b):
        return False
    if is_cupy_array(a):
        return bool(cuda_module().may_share_memory(a, b))
    return bool(np.may_share_memory(a, b))


def _why(name: str, src, ours, peer: str, fmt: str) -> str:
    if src.dtype != ours.dtype:
        return f"the {peer} {name} have dtype {src.dtype.name} and gpusparse keeps {ours.dtype.name}"
    if not src.flags.c_contiguous:
        return f"the {peer} {name} are not C-contiguous"
    return (f"the {peer} entries are not in canonical order (sorted within each slice, "
            f"without duplicates), which gpusparse {fmt.upper()} requires")


def finish_import(out, sources, copy, peer: str, *, be=None):
    """Check and complete the ``copy`` contract for a container ``out`` built from a peer.

    ``sources`` holds, for each component of ``out`` in constructor order,
    the peer's array it was meant to share, or None where the component is
    new by design (an unavoidable copy already allowed through
    :func:`refuse`). With ``copy=False`` every non-empty source must still be
    shared; with ``copy=True`` every component that shares memory with a
    source is copied. ``be`` is the backend of ``out``'s device, when the
    caller has it already.
    """
    from gpusparse.ops.convert import components, rebuild
    arrays = components(out)
    names = _COMPONENT_NAMES[out.format]
    if copy is False:
        for name, src, ours in zip(names, sources, arrays):
            if src is not None and src.size and not shares(src, ours):
                refuse(copy, _why(name, src, ours, peer, out.format))
        return out
    if copy:
        be = be or backend(out.device)
        with be.scope():
            fresh = tuple(
                a.copy() if any(s is not None and shares(s, a) for s in sources) else a
                for a in arrays
            )
        return rebuild(out, fresh)
    return out


# --------------------------------------------------------------------------
# What a peer cannot hold
# --------------------------------------------------------------------------

def require_host(x, peer: str) -> None:
    """``ValueError`` unless ``x`` lives on the CPU: no silent device-to-host copy."""
    if x.device.is_cuda:
        raise ValueError(
            f"x is on {x.device} but {peer} arrays live in host memory; move it explicitly "
            "with x.to('cpu') first"
        )


def require_valid(x, peer: str) -> None:
    """Validate ``x`` (:meth:`~gpusparse.SparseArray.check`) before another library takes its components.

    The receiving library trusts what it is given (SciPy's, torch's and
    cuSPARSE's kernels index memory with the coordinates), while ``x``
    may have been built with ``check=False`` or its buffers changed since:
    one pass over the components, and the error names the peer.
    """
    try:
        x.check()
    except ValueError as exc:
        raise ValueError(f"x cannot be handed to {peer}: {exc}") from None


def own_components(x) -> tuple:
    """The component arrays ``x`` holds, in constructor order (not the read-only views of the accessors)."""
    if x.format == "coo":
        return (x._coords, x._data)
    return (x._indptr, x._indices, x._data)


def export_components(x, original) -> tuple:
    """``x``'s components as a peer receives them: read-only exactly where they share memory with ``original``.

    ``original`` holds the component arrays of the array the user exported.
    A component that shares memory with one of them is handed out as a
    read-only view on the CPU (as the accessors hand it out: a write through
    the peer would change that array behind its validation and flags); one
    that is new -- a ``copy=True`` copy, a coalesced or expanded component
    -- belongs to the peer alone and stays writable, so that the peer's own
    in-place methods (SciPy's ``sort_indices``, ``m.data *= 2``) work on it.
    CuPy has no read-only arrays.
    """
    from gpusparse.containers._base import read_only
    return tuple(read_only(a) if any(shares(a, o) for o in original) else a for a in own_components(x))


def require_zero_fill(x, peer: str) -> None:
    """``ValueError`` unless ``x.fill_value`` is 0: the peer has no fill value."""
    fill = x.fill_value
    if fill == 0:  # False for NaN too
        return
    raise ValueError(
        f"{peer} sparse arrays have no fill value (unstored elements are 0), but x has "
        f"fill_value={fill.item()!r}; densify with x.todense() or rebuild x with fill_value=0"
    )


# --------------------------------------------------------------------------
# Layout helpers
# --------------------------------------------------------------------------

def _allocation(arr):
    """An object identifying the memory allocation behind ``arr``."""
    if is_cupy_array(arr):
        return arr.data.mem
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr if arr.base is None else arr.base


def stack_rows(rows, xp):
    """One ``(len(rows), n)`` int64 C-contiguous array from 1-D index arrays.

    Returns ``(stacked, fresh)``. When the rows are int64 and lie back to
    back in one allocation -- as the rows of a ``(d, n)`` array that a peer
    split into one array per dimension do -- the result is a view of that
    memory and ``fresh`` is False; otherwise the rows are copied.
    """
    rows = list(rows)
    n = rows[0].shape[0] if rows else 0
    if n and all(r.ndim == 1 and r.shape[0] == n and r.dtype == np.int64 and r.flags.c_contiguous
                 for r in rows):
        step = n * 8
        start = pointer(rows[0])
        owner = _allocation(rows[0])
        if all(pointer(r) == start + k * step and _allocation(r) is owner for k, r in enumerate(rows)):
            if xp is np:
                as_strided = np.lib.stride_tricks.as_strided
            else:
                as_strided = xp.lib.stride_tricks.as_strided
            return as_strided(rows[0], shape=(len(rows), n), strides=(step, 8)), False
    out = xp.empty((len(rows), n), dtype=np.int64)
    for k, r in enumerate(rows):
        out[k] = r
    return out, True


def order_state(coords, sparse_shape, device, *, be=None) -> int:
    """2 if ``coords`` strictly increase in row-major order, 1 if they only do not decrease, else 0.

    One pass over the coordinates and one device synchronisation. ``be`` is
    the backend of ``device``, when the caller has it already.
    """
    from gpusparse.ops import canonical
    nnz = coords.shape[1]
    if nnz <= 1:
        return 2
    if coords.shape[0] == 0:
        return 1
    be = be or backend(device)
    k, xp = be.kernels, be.xp
    with be.scope():
        rows = [k.linearize(coords[a:b], sparse_shape[a:b])
                for a, b in canonical.key_groups(sparse_shape)]
        keys = rows[0] if len(rows) == 1 else xp.stack(rows)
        return int(to_host(k.sortedness(keys)))  # sync: which flags are honest


def verified_flags(coords, sparse_shape, device, *, sorted: bool, unique: bool, be=None) -> tuple:
    """``(sorted, unique)`` for coordinates a peer claims to be ``sorted`` / ``unique``, as they really are.

    A peer's flags are claims, not facts: torch's ``is_coalesced()``, JAX's
    ``indices_sorted``/``unique_indices`` and pydata's ``sorted`` /
    ``has_duplicates`` are whatever their constructors were told, and the
    buffers may have changed since. A container flagged coalesced skips the
    summation of duplicates, so a false claim would silently drop values.
    Where the peer claims anything, one pass over the coordinates
    (:func:`order_state`, one synchronisation) decides both flags; where it
    claims nothing, both are False at no cost. ``be`` is the backend of
    ``device``, when the caller has it already.
    """
    if not (sorted or unique):
        return False, False
    state = order_state(coords, sparse_shape, device, be=be)
    return state >= 1, state == 2


def expand_dense_dims(x, *, be=None):
    """COO ``x`` with its dense dimensions turned into sparse ones (a new array).

    Each stored block becomes ``prod(dense_shape)`` entries, in C order
    within the block, so sorted and unique coordinates stay so (on the
    backend ``be`` of ``x``'s device, when the caller has it).
    """
    from gpusparse.containers import COO
    if x.dense_dim == 0:
        return x
    dense_shape = x.shape[x.sparse_dim:]
    block = math.prod(dense_shape)
    be = be or backend(x.device)
    xp = be.xp
    with be.scope():
        grid = xp.indices(dense_shape, dtype=np.int64).reshape(len(dense_shape), block)
        coords = xp.concatenate([xp.repeat(x.coords, block, axis=1), xp.tile(grid, (1, x.nnz))], axis=0)
        coords = xp.ascontiguousarray(coords, dtype=np.int64)
        data = xp.ascontiguousarray(x.data.reshape(-1))
    return COO._from_parts(coords, data, x.shape, x.fill_value, x.device,
                           sorted=x.sorted, unique=x.unique)


def from_scipy_layout(m, copy, peer: str, *, device, rows, xp, again):
    """Import a SciPy-layout sparse matrix ``m`` (SciPy itself, or cupyx on a GPU).

    CSR/CSC (2-D) share ``indptr``, ``indices`` and ``data``; COO shares
    ``data`` and stacks ``rows`` (``m``'s per-dimension index arrays) into
    one ``(ndim, nnz)`` array, a view when they lie back to back; other
    formats go through ``m.tocsr()`` (``m.tocoo()`` when not 2-D) and
    ``again``, the public importer. ``copy`` follows :func:`check_copy`.
    """
    from gpusparse.containers import COO, CSC, CSR
    from gpusparse.ops import _validate
    copy = check_copy(copy)
    if m.format in ("csr", "csc") and m.ndim == 2:
        cls = CSR if m.format == "csr" else CSC
        sources = (m.indptr, m.indices, m.data)
        out = cls(*sources, shape=tuple(m.shape), device=device)
        return finish_import(out, sources, copy, peer)
    if m.format == "coo":
        coords, fresh = stack_rows(rows, xp)
        if fresh and coords.size:
            refuse(copy, f"{peer} COO keeps one index array per dimension, which gpusparse "
                         "stacks into one (ndim, nnz) array")
        coords, data, shape, fill, dev = _validate.coo_components(
            coords, m.data, tuple(m.shape), None, device, True
        )
        state = order_state(coords, shape, dev)
        out = COO._from_parts(coords, data, shape, fill, dev, sorted=state >= 1, unique=state == 2)
        return finish_import(out, (None if fresh else rows[0], m.data), copy, peer)
    refuse(copy, f"gpusparse has no {m.ndim}-d {m.format.upper()} format; the matrix is "
                 "converted through CSR or COO")
    converted = m.tocsr() if m.ndim == 2 and m.format != "csr" else m.tocoo()
    return again(converted, copy=True if copy else None)

