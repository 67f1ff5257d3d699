"""Numba's threading layer for the parallel CPU kernels: safe with threads and with fork.

Numba runs ``parallel=True`` kernels on one of three threading layers:

* ``tbb`` (Intel oneTBB) may be used by several threads at once and keeps
  working in a child process made by ``fork()``.
* ``omp`` (GNU OpenMP on Linux) may be used by several threads at once, but
  a child forked after a parallel kernel has run is terminated at its first
  parallel kernel -- every ``multiprocessing`` worker of the ``fork`` start
  method, and every forked ``torch.utils.data.DataLoader`` worker.
* ``workqueue`` survives ``fork()`` but aborts the process when two threads
  launch parallel kernels at the same time.

:func:`configure` runs when the kernels are first imported, before any
parallel kernel, and picks the layer:

1. Where the user chose (``NUMBA_THREADING_LAYER`` or
   ``NUMBA_THREADING_LAYER_PRIORITY`` in the environment, a Numba config
   file, or ``numba.config`` set before gpusparse's first CPU operation), or
   where Numba already started its threads, nothing is changed.
2. Otherwise ``tbb`` where TBB loads. The ``tbb`` wheel (a dependency of
   gpusparse where wheels exist: Linux x86_64, Windows x86-64) installs the
   library into ``<prefix>/lib`` (``<prefix>/Library/bin`` on Windows),
   where the dynamic loader does not look in a virtual environment, so the
   library is loaded here by its full path first (Numba then finds it by
   name). Where a TBB is already loaded, that one is used.
3. Otherwise ``workqueue``: fork-safe, and thread-safe for gpusparse because
   gpusparse's parallel kernels then run one at a time per process (each
   still on every thread; see :func:`launch_lock`). Parallel Numba code of
   other libraries run concurrently with gpusparse's can still abort.

:func:`describe` says which layer runs and why.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

__all__ = ["configure", "describe", "launch_lock"]

_DEFAULT_PRIORITY = ["tbb", "omp", "workqueue"]
_USER_VARIABLES = ("NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY")
#: Layers that several threads may use at once ("safe"/"threadsafe" pick among tbb and omp).
_THREAD_SAFE = ("tbb", "omp")

if sys.platform == "win32":
    _TBB_LIBRARY = "tbb12.dll"
elif sys.platform == "darwin":
    _TBB_LIBRARY = "libtbb.12.dylib"
else:
    _TBB_LIBRARY = "libtbb.so.12"

_configured = False
_reason = "not configured yet"
_tbb_handle = None  # keeps the library preloaded from the tbb wheel
_serialise: "bool | None" = None  # None until the layer in use is known
_lock = threading.Lock()


def _tbb_in_wheel() -> "str | None":
    """Full path of the TBB runtime installed by the ``tbb`` distribution, if any."""
    try:
        from importlib import metadata
        dist = metadata.distribution("tbb")
    except Exception:  # PackageNotFoundError, or broken metadata
        return None
    for file in dist.files or ():
        if file.name == _TBB_LIBRARY:
            path = os.fspath(dist.locate_file(file))
            if os.path.isfile(path):
                return path
    return None


def _already_loaded() -> bool:
    noload = getattr(os, "RTLD_NOLOAD", None)
    if noload is None:
        return False
    try:
        ctypes.CDLL(_TBB_LIBRARY, mode=noload)
    except OSError:
        return False
    return True


def _preload_tbb() -> None:
    """Load the wheel's TBB runtime by its path, so Numba's load by name finds it."""
    global _tbb_handle
    if _tbb_handle is not None or _already_loaded():
        return
    path = _tbb_in_wheel()
    if path is None:
        return
    try:
        _tbb_handle = ctypes.CDLL(path)
    except OSError:
        pass  # Numba reports its own reason when the layer is requested


def _tbb_problem() -> "str | None":
    """None where Numba's TBB layer loads, else why not."""
    import warnings

    from numba.np.ufunc import parallel
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an old TBB warns, then raises ImportError
            check = getattr(parallel, "_check_tbb_version_compatible", None)
            if check is not None:
                check()
            from numba.np.ufunc import tbbpool  # noqa: F401
    except (ImportError, OSError) as exc:
        return str(exc) or type(exc).__name__
    return None


def _user_choice(config) -> "str | None":
    for name in _USER_VARIABLES:
        if name in os.environ:
            return f"{name}={os.environ[name]!r}"
    if str(config.THREADING_LAYER).lower() != "default":
        return f"numba.config.THREADING_LAYER={config.THREADING_LAYER!r}"
    if list(config.THREADING_LAYER_PRIORITY) != _DEFAULT_PRIORITY:
        return f"numba.config.THREADING_LAYER_PRIORITY={config.THREADING_LAYER_PRIORITY!r}"
    return None


def configure() -> None:
    """Choose Numba's threading layer for the parallel kernels (once; see the module docstring)."""
    global _configured, _reason
    if _configured:
        return
    _configured = True
    from numba.core import config
    from numba.np.ufunc import parallel

    _preload_tbb()  # also lets a user's NUMBA_THREADING_LAYER=tbb work in a virtual environment
    if parallel._is_initialized:
        _reason = "Numba's threads were started before gpusparse chose a layer"
        return
    user = _user_choice(config)
    if user is not None:
        _reason = f"chosen by the user ({user})"
        return
    problem = _tbb_problem()
    if problem is None:
        config.THREADING_LAYER = "tbb"
        _reason = "chosen by gpusparse: safe with threads and fork"
    else:
        config.THREADING_LAYER = "workqueue"
        _reason = (f"chosen by gpusparse because TBB could not be loaded ({problem}); "
                   "gpusparse's parallel kernels run one at a time")


def _layer_in_use() -> "str | None":
    from numba.np.ufunc import parallel
    return parallel._threading_layer if parallel._is_initialized else None


def launch_lock() -> "threading.Lock | None":
    """The lock a parallel kernel launch must hold, or None where the layer is thread-safe.

    Until Numba has started its threads the layer is unknown and the lock is
    returned; from then on it is returned only for ``workqueue``.

    >>> lock = launch_lock()
    >>> lock is None or hasattr(lock, "acquire")
    True
    """
    global _serialise
    if _serialise is None:
        layer = _layer_in_use()
        if layer is None:
            return _lock
        _serialise = layer not in _THREAD_SAFE
    return _lock if _serialise else None


def describe() -> str:
    """The threading layer of the parallel kernels and why it was chosen.

    >>> describe().startswith(("tbb", "omp", "workqueue", "not started"))
    True
    """
    layer = _layer_in_use()
    if layer is None:
        from numba.core import config
        layer = f"not started (requested: {config.THREADING_LAYER})"
    return f"{layer}, {_reason}"


def _after_fork_in_child() -> None:
    # A launch in flight in another thread of the parent never ends here.
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
