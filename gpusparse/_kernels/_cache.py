"""The on-disk cache of the CPU kernels, and a prebuilt cache that any machine of the same kind loads.

Numba compiles each CPU kernel the first time it sees a combination of
argument types and keeps the machine code in a cache on disk. Numba's own
cache has two limits that matter to gpusparse:

* It checks a cached kernel against the kernel's own source file only,
  while the kernel's machine code also holds the helpers it inlined from
  other modules (``row_range`` from ``_common``, say). :class:`KernelCache`
  therefore keys every entry by :func:`source_digest` as well, a digest of
  every source of ``gpusparse._kernels``: after any change there (an edited
  checkout, a ``git pull`` into an editable install) every kernel compiles
  afresh instead of running code inlined from the old helpers.
* Its entries are keyed by the compiling machine's CPU (name and features),
  and its directories by where the sources are installed, so a cache built
  on one machine is never found on another. A *prebuilt* cache lifts both:
  ``python -m gpusparse warmup --portable`` compiles the kernels for
  Numba's ``generic`` CPU of the architecture (x86-64 without AVX, say:
  code every such machine runs) into :func:`prebuilt_dir`, laid out by the
  kernels' place in the package and stamped with :func:`source_digest`
  rather than with file paths or times. A process looks a kernel up first
  in its own cache with its own CPU, then there with ``generic`` (a cache
  built by ``NUMBA_CPU_NAME=generic`` into the usual place), then in the
  prebuilt cache; only then does it compile, into its own cache.

The prebuilt cache sits inside the package (``gpusparse/_kernels/_prebuilt``)
so that a wheel or a container image can carry it, or wherever
``GPUSPARSE_PREBUILT_CACHE`` names. It holds pickled data, as every Numba
cache does: trust it as you trust the package's code. Entries that do not
match the running Python, Numba, architecture or kernel sources are never
loaded (the keys and the stamp differ), and an unreadable prebuilt cache is
passed over, never an error. ``generic`` code forgoes the vector extensions
of newer CPUs; measured on the benchmark rows it costs about 1.5 % in the
geometric mean (``python -m benchmarks.ab_cpu_name``), and a kernel compiled
later on the machine itself uses all of them.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os

from numba.core import caching
from numba.core import config as _numba_config

__all__ = [
    "BUILDING_ENV", "GENERIC_CPU", "PREBUILT_ENV", "building_prebuilt", "caching_enabled", "kernel_cache",
    "prebuilt_dir", "source_digest",
]

#: The package directory of the kernels (``gpusparse/_kernels``).
_KERNEL_PACKAGE = os.path.dirname(os.path.abspath(__file__))
#: The ``gpusparse`` package directory: the prebuilt cache is laid out relative to it.
_PACKAGE = os.path.dirname(_KERNEL_PACKAGE)
#: Names another directory for the prebuilt cache (read, or written by ``warmup --portable``).
PREBUILT_ENV = "GPUSPARSE_PREBUILT_CACHE"
#: Set in the processes of ``warmup --portable``: kernels are cached into the prebuilt directory.
BUILDING_ENV = "GPUSPARSE_BUILDING_PREBUILT_CACHE"
#: Numba's CPU name for code that every machine of an architecture runs.
GENERIC_CPU = "generic"


def _digest_of(directory) -> str:
    """A digest of the names and contents of the ``.py`` files below ``directory``.

    >>> len(_digest_of(os.path.dirname(__file__)))
    16
    """
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_prebuilt"))
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


def prebuilt_dir() -> str:
    """The directory of the prebuilt kernel cache: ``GPUSPARSE_PREBUILT_CACHE``, else inside the package.

    >>> os.path.basename(prebuilt_dir()) if "GPUSPARSE_PREBUILT_CACHE" not in os.environ else "_prebuilt"
    '_prebuilt'
    """
    return os.environ.get(PREBUILT_ENV) or os.path.join(_KERNEL_PACKAGE, "_prebuilt")


def caching_enabled() -> bool:
    """Whether kernels are cached on disk at all (``GPUSPARSE_NUMBA_CACHE=0`` switches it off)."""
    return os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") != "0"


def building_prebuilt() -> bool:
    """Whether this process compiles into the prebuilt cache (a process of ``warmup --portable``)."""
    return os.environ.get(BUILDING_ENV) == "1"


def _prebuilt_path(py_file) -> "str | None":
    """Where the prebuilt cache keeps the kernels of ``py_file``: its package-relative directory.

    None for a source outside the package (a kernel of the user's own
    decorated with ``jit``): only gpusparse's kernels are prebuilt.

    >>> _prebuilt_path(__file__) == os.path.join(prebuilt_dir(), "_kernels")
    True
    >>> _prebuilt_path(os.path.join(os.path.dirname(_PACKAGE), "elsewhere.py")) is None
    True
    """
    directory = os.path.dirname(os.path.abspath(py_file))
    try:
        relative = os.path.relpath(directory, _PACKAGE)
    except ValueError:  # another drive (Windows)
        return None
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return None
    return os.path.join(prebuilt_dir(), relative)


def _generic(magic):
    """``magic`` (Numba's ``(triple, cpu name, features)``) for the generic CPU of the same architecture."""
    return (magic[0], GENERIC_CPU, "")


class _PrebuiltLocator(caching._CacheLocator):
    """Numba's cache locator for the prebuilt cache: a package-relative path, stamped by the source digest."""

    def __init__(self, py_func, py_file, path):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = path

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return source_digest()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        path = _prebuilt_path(py_file)
        if path is None:
            return None
        self = cls(py_func, py_file, path)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


class KernelCache(caching.FunctionCache):
    """Numba's function cache, keyed by the kernel sources, falling back to generic and prebuilt entries.

    Loads try, in order: this process's cache with its own CPU, the same
    cache with the generic CPU, the prebuilt cache (generic CPU). Saves go
    to this process's cache. See the module docstring.
    """

    def __init__(self, py_func):
        super().__init__(py_func)
        self._prebuilt = None
        path = _prebuilt_path(inspect.getfile(py_func))
        if path is not None and os.path.isdir(path) and os.path.abspath(path) != os.path.abspath(self._cache_path):
            self._prebuilt = caching.IndexDataCacheFile(
                cache_path=path, filename_base=self._impl.filename_base, source_stamp=source_digest())

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), source_digest())

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        data = self._cache_file.load(key)
        generic = (key[0], _generic(key[1]), *key[2:])
        if data is None and generic != key:
            data = self._cache_file.load(generic)
        if data is not None:
            return self._impl.rebuild(target_context, data)
        if self._prebuilt is None:
            return None
        try:
            data = self._prebuilt.load(generic)
            return None if data is None else self._impl.rebuild(target_context, data)
        except Exception:  # an unreadable prebuilt cache is passed over: compile instead
            return None


class _PrebuiltImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_PrebuiltLocator]


class PrebuildingKernelCache(KernelCache):
    """:class:`KernelCache` whose own cache is the prebuilt one (``warmup --portable``'s processes)."""

    _impl_class = _PrebuiltImpl


def kernel_cache(py_func, private_dir):
    """The cache for the kernel ``py_func``: a :class:`KernelCache`, or Numba's null cache.

    Where Numba finds no writable place for a cache (a read-only install
    run with an unwritable home), the cache goes to ``private_dir()`` (a
    callable returning a directory or None); without that, kernels are
    compiled in each process (:class:`numba.core.caching.NullCache`).
    ``GPUSPARSE_NUMBA_CACHE=0`` switches caching off.
    """
    if not caching_enabled():
        return caching.NullCache()
    if building_prebuilt():
        try:
            return PrebuildingKernelCache(py_func)
        except RuntimeError:  # a kernel outside the package: cached as usual
            pass
    try:
        return KernelCache(py_func)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        pass
    directory = private_dir()
    if directory is not None:
        saved = _numba_config.CACHE_DIR
        _numba_config.CACHE_DIR = directory  # Numba's locators read the setting when the cache is made
        try:
            return KernelCache(py_func)
        except RuntimeError:
            pass
        finally:
            _numba_config.CACHE_DIR = saved
    return caching.NullCache()
