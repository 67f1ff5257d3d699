"""The one decorator every Numba kernel goes through.

``jit`` compiles with ``cache=True, nogil=True`` and falls back to
``cache=False`` where Numba finds no writable cache location (a read-only
install with an unwritable home raises at decoration time otherwise). Set
``GPUSPARSE_NUMBA_CACHE=0`` to switch caching off. ``fastmath`` is never used:
its ``nnan`` flag compiles ``isnan`` away and breaks NumPy's NaN semantics.
"""

from __future__ import annotations

import os

import numba

__all__ = ["jit", "n_threads"]


def jit(*, parallel: bool = False):
    """Decorate a top-level kernel with ``numba.njit`` (cached, nogil)."""

    def decorate(func):
        want_cache = os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") != "0"
        try:
            return numba.njit(cache=want_cache, nogil=True, parallel=parallel)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, nogil=True, parallel=parallel)(func)

    return decorate


def n_threads() -> int:
    """Threads the parallel kernels will use."""
    return numba.get_num_threads()
