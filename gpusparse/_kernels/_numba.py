"""The one decorator every Numba kernel goes through.

``jit`` compiles with ``cache=True, nogil=True`` and falls back to
``cache=False`` where Numba finds no writable cache location (a read-only
install with an unwritable home raises at decoration time otherwise). Set
``GPUSPARSE_NUMBA_CACHE=0`` to switch caching off. ``fastmath`` is never used:
its ``nnan`` flag compiles ``isnan`` away and breaks NumPy's NaN semantics.

The first decoration chooses Numba's threading layer
(:mod:`gpusparse._kernels.cpu._threading`: TBB, safe with threads and with
``fork()``, unless the user chose one), before any parallel kernel can run.
``jit(parallel=True)`` returns the dispatcher wrapped by
:func:`parallel_kernel`, which holds the threading layer's launch lock
around each call where the layer needs one (``workqueue``), so gpusparse
may be used from several threads at once on every layer (about 0.1 us a
call where no lock is needed). Parallel kernels are therefore called from
Python only, never from other compiled kernels.
"""

from __future__ import annotations

import functools
import os

import numba

__all__ = ["jit", "n_threads", "parallel_kernel"]


def parallel_kernel(dispatcher, launch_lock):
    """Wrap a ``parallel=True`` dispatcher: each call holds ``launch_lock()`` unless that is None.

    The dispatcher stays reachable as ``.dispatcher``.

    Examples
    --------
    >>> import numpy as np
    >>> from numba import prange
    >>> @jit(parallel=True)
    ... def doubled(x):
    ...     out = np.empty_like(x)
    ...     for i in prange(x.size):
    ...         out[i] = 2 * x[i]
    ...     return out
    >>> doubled(np.arange(3)), type(doubled.dispatcher).__name__
    (array([0, 2, 4]), 'CPUDispatcher')
    """

    @functools.wraps(dispatcher.py_func)
    def launch(*args):
        lock = launch_lock()
        if lock is None:
            return dispatcher(*args)
        with lock:
            return dispatcher(*args)

    launch.dispatcher = dispatcher
    return launch


def jit(*, parallel: bool = False):
    """Decorate a top-level kernel with ``numba.njit`` (cached, nogil); see the module docstring."""
    # Imported here: importing it runs gpusparse._kernels.cpu's __init__,
    # whose kernel modules import this module.
    from gpusparse._kernels.cpu import _threading

    _threading.configure()

    def decorate(func):
        want_cache = os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") != "0"
        try:
            kernel = numba.njit(cache=want_cache, nogil=True, parallel=parallel)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            kernel = numba.njit(cache=False, nogil=True, parallel=parallel)(func)
        return parallel_kernel(kernel, _threading.launch_lock) if parallel else kernel

    return decorate


def n_threads() -> int:
    """Threads the parallel kernels will use."""
    return numba.get_num_threads()
