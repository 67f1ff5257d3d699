"""The one decorator every Numba kernel goes through.

``jit`` compiles with ``cache=True, nogil=True``. Numba keeps the cache in
``NUMBA_CACHE_DIR`` when set, else beside the sources when their
``__pycache__`` is writable, else in a per-user directory
(``~/.cache/numba``). Where none of these is writable (a read-only install
run with an unwritable home, as in many containers) Numba raises at
decoration time; ``jit`` then caches in a private directory of the system's
temporary directory (``gpusparse-numba-<uid>``, created with mode 0700 and
used only while it belongs to the user and nobody else may write to it:
the cache holds pickled data), and compiles without a cache where that
fails too. Set ``GPUSPARSE_NUMBA_CACHE=0`` to switch caching off.
``fastmath`` is never used: its ``nnan`` flag compiles ``isnan`` away and
breaks NumPy's NaN semantics.

Numba checks a cached kernel against its own source file only, but a
kernel's machine code also holds the helpers it inlined from other modules
(``row_range`` from ``_common``, say). So each kernel's cache entries are
keyed by :func:`source_digest` as well, a digest of every source of
``gpusparse._kernels``: after any change there (an edited checkout, a
``git pull`` into an editable install) every kernel compiles afresh
instead of running code inlined from the old helpers.

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
import hashlib
import os
import stat
import tempfile

import numba
from numba.core import config as _numba_config

__all__ = ["jit", "n_threads", "parallel_kernel", "private_cache_dir", "source_digest"]

_KERNEL_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _digest_of(directory) -> str:
    """A digest of the names and contents of the ``.py`` files below ``directory``.

    >>> len(_digest_of(os.path.dirname(__file__)))
    16
    """
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, directory).encode() + b"\0")
            with open(path, "rb") as fh:
                h.update(fh.read())
            h.update(b"\0")
    return h.hexdigest()[:16]


@functools.cache
def source_digest() -> str:
    """The digest of ``gpusparse._kernels``' sources that every cached kernel is keyed by (read once a process)."""
    return _digest_of(_KERNEL_PACKAGE)


def _keyed_by_sources(dispatcher):
    """``dispatcher`` with :func:`source_digest` added to the key of each of its cache entries."""
    cache = getattr(dispatcher, "_cache", None)
    index_key = getattr(cache, "_index_key", None)
    if index_key is None:  # no cache (NullCache), or a Numba without this hook: nothing to key
        return dispatcher
    digest = source_digest()

    def keyed(sig, codegen):
        return (*index_key(sig, codegen), digest)

    cache._index_key = keyed
    return dispatcher


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


def _njit_in(directory, func, parallel):
    """``numba.njit(cache=True)`` with its cache in ``directory`` (Numba reads the setting when decorating)."""
    saved = _numba_config.CACHE_DIR
    _numba_config.CACHE_DIR = directory
    try:
        return numba.njit(cache=True, nogil=True, parallel=parallel)(func)
    finally:
        _numba_config.CACHE_DIR = saved


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
    # whose kernel modules import this module. The module itself, not the
    # package: the registry's names are not needed here.
    import gpusparse._kernels.cpu._threading as _threading

    _threading.configure()

    def decorate(func):
        want_cache = os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") != "0"
        try:
            kernel = numba.njit(cache=want_cache, nogil=True, parallel=parallel)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            kernel = None
            directory = private_cache_dir()
            if directory is not None:
                try:
                    kernel = _njit_in(directory, func, parallel)
                except RuntimeError:
                    kernel = None
            if kernel is None:
                kernel = numba.njit(cache=False, nogil=True, parallel=parallel)(func)
        kernel = _keyed_by_sources(kernel)
        return parallel_kernel(kernel, _threading.launch_lock) if parallel else kernel

    return decorate


def n_threads() -> int:
    """Threads the parallel kernels will use."""
    return numba.get_num_threads()
