"""The one decorator every Numba kernel goes through.

``jit`` compiles with ``nogil=True`` and caches the machine code on disk
(:mod:`gpusparse._kernels._cache`: keyed by the sources of the whole kernel
package, with a prebuilt cache that any machine of the same architecture
loads). Numba keeps the cache in ``NUMBA_CACHE_DIR`` when set, else beside
the sources when their ``__pycache__`` is writable, else in a per-user
directory (``~/.cache/numba``). Where none of these is writable (a
read-only install run with an unwritable home, as in many containers)
``jit`` caches in a private directory of the system's temporary directory
(``gpusparse-numba-<uid>``, created with mode 0700 and used only while it
belongs to the user and nobody else may write to it: the cache holds
pickled data), and compiles without a cache where that fails too. Set
``GPUSPARSE_NUMBA_CACHE=0`` to switch caching off. ``fastmath`` is never
``True``: its ``nnan`` flag compiles ``isnan`` away and breaks NumPy's NaN
semantics; kernels may ask for single flags (``{"reassoc", "contract"}``).

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
import stat
import tempfile

import numba

from gpusparse._kernels._cache import kernel_cache, source_digest

__all__ = ["jit", "n_threads", "parallel_kernel", "private_cache_dir", "source_digest"]


def private_cache_dir() -> "str | None":
    """``<tmp>/gpusparse-numba-<uid>``, made if missing; None unless only this user may write there.

    >>> path = private_cache_dir()
    >>> path is None or os.path.basename(path).startswith("gpusparse-numba-")
    True
    """
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = os.path.join(tempfile.gettempdir(), f"gpusparse-numba-{uid if uid is not None else 'user'}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o022:
        return None
    if uid is not None and info.st_uid != uid:
        return None
    return path if os.access(path, os.W_OK) else None


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


def jit(*, parallel: bool = False, fastmath=frozenset()):
    """Decorate a top-level kernel with ``numba.njit`` (nogil, cached on disk); see the module docstring.

    ``fastmath`` is a set of LLVM fast-math flags (never ``nnan``, never all of them).
    """
    # Imported here: importing it runs gpusparse._kernels.cpu's __init__,
    # whose kernel modules import this module. The module itself, not the
    # package: the registry's names are not needed here.
    import gpusparse._kernels.cpu._threading as _threading

    _threading.configure()
    if fastmath is True or "nnan" in fastmath or "fast" in fastmath:
        raise ValueError(f"fastmath must be a set of single flags without 'nnan', got {fastmath!r}")
    flags = set(fastmath) or False

    def decorate(func):
        kernel = numba.njit(cache=False, nogil=True, parallel=parallel, fastmath=flags)(func)
        kernel._cache = kernel_cache(func, private_cache_dir)
        return parallel_kernel(kernel, _threading.launch_lock) if parallel else kernel

    return decorate


def n_threads() -> int:
    """Threads the parallel kernels will use."""
    return numba.get_num_threads()
