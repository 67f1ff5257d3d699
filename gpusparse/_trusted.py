"""The trusted CSR structures: a registry of ``(indptr, indices)`` pairs known valid and canonical.

What trust means, and who may record it, is described in
:mod:`gpusparse.containers.compressed`, whose arrays record their
structures here; the CUDA products (:mod:`gpusparse._kernels.cuda._linalg`)
look them up before handing a structure to cuSPARSE and record their
outputs. The registry sits below both, with no import of the library, so
the kernels need not import the containers.
"""

from __future__ import annotations

import threading
import weakref

__all__ = ["forget_structure", "is_trusted_structure", "trust_structure"]

#: ``(id(indptr), id(indices)) -> (weakref(indptr), weakref(indices), {stored shapes})``.
_TRUSTED: dict = {}
#: Re-entrant: a garbage collection inside a critical section can run a ``forget`` callback
#: (which takes the lock) on the same thread.
_TRUSTED_LOCK = threading.RLock()


def trust_structure(indptr, indices, stored_shape) -> None:
    """Record that ``(indptr, indices)`` is a valid, canonical CSR structure of ``stored_shape`` that only the library holds.

    Parameters
    ----------
    indptr, indices : array
        The arrays themselves (NumPy or CuPy), as the structure holds them.
    stored_shape : tuple of int
        ``(n_major, n_minor)``: the rows and columns of the stored CSR
        matrix (columns and rows for a CSC array).

    Notes
    -----
    Only for arrays the library allocated and whose values its kernels
    produced or a validation checked. The record lives as long as both
    arrays do (weak references): an array object created later never
    inherits it, even at a reused address.
    """
    indptr, indices = _behind_read_only_view(indptr), _behind_read_only_view(indices)
    key = (id(indptr), id(indices))
    shape = tuple(int(s) for s in stored_shape)

    def forget(ref, key=key):
        with _TRUSTED_LOCK:  # only this record: a later one at the same addresses stays
            entry = _TRUSTED.get(key)
            if entry is not None and (entry[0] is ref or entry[1] is ref):
                del _TRUSTED[key]

    with _TRUSTED_LOCK:
        entry = _TRUSTED.get(key)
        if entry is not None and entry[0]() is indptr and entry[1]() is indices:
            entry[2].add(shape)
            return
        _TRUSTED[key] = (weakref.ref(indptr, forget), weakref.ref(indices, forget), {shape})


def forget_structure(indptr, indices) -> None:
    """Drop the record of ``(indptr, indices)`` (every shape): later products check the structure again."""
    indptr, indices = _behind_read_only_view(indptr), _behind_read_only_view(indices)
    with _TRUSTED_LOCK:
        entry = _TRUSTED.get((id(indptr), id(indices)))
        if entry is not None and entry[0]() is indptr and entry[1]() is indices:
            del _TRUSTED[(id(indptr), id(indices))]


def _behind_read_only_view(arr):
    """The array a read-only NumPy view of the whole of it (what the accessors return) stands for; else ``arr``."""
    import numpy as np
    while (isinstance(arr, np.ndarray) and not arr.flags.writeable and isinstance(arr.base, np.ndarray)
           and arr.base.shape == arr.shape and arr.base.strides == arr.strides and arr.base.dtype == arr.dtype
           and arr.base.__array_interface__["data"][0] == arr.__array_interface__["data"][0]):
        arr = arr.base
    return arr


def is_trusted_structure(indptr, indices, stored_shape) -> bool:
    """Whether ``(indptr, indices)`` were recorded by :func:`trust_structure` for ``stored_shape``.

    A dictionary look-up: no pass over the arrays and no synchronisation.
    The read-only views the CPU accessors hand out stand for the arrays
    they view (nothing can be written through them).
    """
    indptr, indices = _behind_read_only_view(indptr), _behind_read_only_view(indices)
    entry = _TRUSTED.get((id(indptr), id(indices)))
    return (entry is not None and entry[0]() is indptr and entry[1]() is indices
            and tuple(int(s) for s in stored_shape) in entry[2])
