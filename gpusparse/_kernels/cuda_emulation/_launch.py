"""Launching emulated kernels: the counterpart of ``cupy.RawKernel`` calls.

:func:`get_function` has the signature of
:func:`gpusparse._kernels.cuda._loader.get_function`; the object it returns
is called like a ``cupy.RawKernel``: ``kernel(grid, block, args)``. Each
argument is checked against the kernel's parameter (a device array for a
pointer, a NumPy scalar of the parameter's size and kind for a value), as a
GPU cannot: a wrong argument type is a silent wrong result there. After the
launch the guard bytes of every array argument are verified, and the launch
is reported to :mod:`~gpusparse._kernels.cuda_emulation._counting`, tagged
with the stream it ran on: the ``stream=`` it was given, else the current
one (as a ``RawKernel`` launch without a stream runs on CuPy's current
stream).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import threading
from pathlib import Path

import numpy as np

from gpusparse._kernels import cuda_emulation
from gpusparse._kernels.cuda_emulation import _build, _counting
from gpusparse._kernels.cuda_emulation._array import GuardError, check_guards, ndarray

__all__ = ["EmulationError", "EmulatedKernel", "get_function", "kernel_sources", "settings"]

_MAX_PARAMS = 64

#: One launch at a time: a kernel's ``__shared__`` arrays are statics of the compiled library, so
#: two host threads launching at once (ctypes releases the GIL) would share them.
_LAUNCH_LOCK = threading.Lock()


class EmulationError(RuntimeError):
    """A kernel misbehaved under emulation (deadlock, bad collective, bad argument, out-of-bounds write)."""


class _Settings:
    """Where the kernel sources come from, the thread-order seed, and the ASan build."""

    def __init__(self):
        self.source_dir: "Path | None" = None
        seed = os.environ.get("GPUSPARSE_CUDA_EMULATION_SEED", "1").strip() or "1"
        try:
            self.seed = int(seed)
        except ValueError:
            raise ValueError(f"GPUSPARSE_CUDA_EMULATION_SEED must be an integer; got {seed!r}") from None
        self.asan = cuda_emulation.mode() == "asan"
        #: Verify the guard bytes around the array arguments after each launch.
        self.check_guards = True
        self._launches = itertools.count(1)

    def next_seed(self) -> int:
        """The seed of the next launch: 0 (thread-index order) when the base seed is 0."""
        if self.seed == 0:
            return 0
        return (self.seed * 0x9E3779B97F4A7C15 + next(self._launches)) & 0xFFFFFFFFFFFFFFFF or 1


settings = _Settings()


@contextlib.contextmanager
def kernel_sources(source_dir=None, seed=None):
    """Run kernels compiled from ``source_dir`` (and/or with ``seed``) inside a ``with`` block.

    For tests that plant a defect in a copy of a kernel family.
    """
    saved = settings.source_dir, settings.seed
    if source_dir is not None:
        settings.source_dir = Path(source_dir)
    if seed is not None:
        settings.seed = int(seed)
    try:
        yield
    finally:
        settings.source_dir, settings.seed = saved


def _asan_loaded() -> bool:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return "libasan" in maps.read()
    except OSError:
        return False


class EmulatedKernel:
    """One kernel instantiation compiled for the CPU, called like a ``cupy.RawKernel``."""

    def __init__(self, family: str, expression: str, source_dir: Path, asan: bool):
        if asan and not _asan_loaded():
            raise EmulationError(
                "GPUSPARSE_CUDA_EMULATION=asan needs AddressSanitizer's runtime in the process: run Python "
                "with LD_PRELOAD=$(g++ -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 "
                "(make emulation-memcheck does)"
            )
        self.family = family
        self.expression = expression
        self._lib = ctypes.CDLL(str(_build.build(source_dir, family, expression, asan=asan)))
        self._lib.gs_emu_launch.restype = ctypes.c_int
        self._lib.gs_emu_launch.argtypes = [
            ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_ulonglong, ctypes.c_char_p, ctypes.c_size_t,
        ]
        sizes = (ctypes.c_ulonglong * _MAX_PARAMS)()
        kinds = ctypes.create_string_buffer(_MAX_PARAMS)
        n = self._lib.gs_emu_describe(sizes, kinds, _MAX_PARAMS)
        self.param_sizes = tuple(int(s) for s in sizes[:n])
        self.param_kinds = kinds.raw[:n].decode()

    def __repr__(self) -> str:
        return f"<emulated kernel {self.expression} of {self.family}.cu>"

    def _argument(self, i: int, arg, keep: list) -> int:
        size, kind = self.param_sizes[i], self.param_kinds[i]
        where = f"{self.expression}: argument {i}"
        if isinstance(arg, ndarray):
            if kind != "p":
                raise EmulationError(f"{where} is a device array, but the parameter is a {size}-byte value")
            cell = ctypes.c_uint64(arg._a.ctypes.data)
        elif isinstance(arg, np.ndarray):
            raise TypeError(f"{where}: a host NumPy array cannot be a kernel argument (emulated CUDA device)")
        elif isinstance(arg, np.generic):
            value = np.asarray(arg)
            arg_kind = {"b": "b", "i": "i", "u": "u", "f": "f"}.get(value.dtype.kind, "v")
            if value.dtype.itemsize != size:
                raise EmulationError(
                    f"{where} is a {value.dtype} scalar ({value.dtype.itemsize} bytes), but the parameter "
                    f"takes {size} bytes"
                )
            if kind == "p" and not (arg_kind in "iu" and int(value) == 0):
                raise EmulationError(f"{where}: a pointer parameter takes a device array or a null (0)")
            if kind != "p" and (kind == "f") != (arg_kind == "f"):
                raise EmulationError(f"{where} is a {value.dtype} scalar for a parameter of kind {kind!r}")
            cell = ctypes.create_string_buffer(value.tobytes(), size)
        else:
            raise TypeError(
                f"{where}: {type(arg).__name__} is not a kernel argument; pass NumPy scalars of the "
                "parameter's exact C type or device arrays"
            )
        keep.append(cell)
        return ctypes.addressof(cell)

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None, enable_cooperative_groups=False):
        args = tuple(args)
        if len(args) != len(self.param_sizes):
            raise EmulationError(
                f"{self.expression} takes {len(self.param_sizes)} arguments; {len(args)} were given"
            )
        if shared_mem:
            raise EmulationError("dynamic shared memory is not emulated; no kernel here uses it")
        keep: list = []
        pointers = (ctypes.c_void_p * max(1, len(args)))(*[self._argument(i, a, keep) for i, a in enumerate(args)])
        dims = []
        for name, value in (("grid", grid), ("block", block)):
            value = tuple(int(v) for v in (value if isinstance(value, (tuple, list)) else (value,)))
            if not 1 <= len(value) <= 3 or any(v < 0 or v > 0xFFFFFFFF for v in value):
                raise EmulationError(f"{self.expression}: bad {name} {value!r}")
            dims.append((ctypes.c_uint * 3)(*(value + (1,) * (3 - len(value)))))
        error = ctypes.create_string_buffer(1024)
        with _LAUNCH_LOCK:
            status = self._lib.gs_emu_launch(dims[0], dims[1], pointers, settings.next_seed(), error, len(error))
        try:
            if settings.check_guards:
                check_guards([a._a for a in args if isinstance(a, ndarray)])
        except GuardError as exc:
            raise EmulationError(f"{self.expression} of {self.family}.cu: {exc}") from None
        if status != 0:
            raise EmulationError(f"{self.expression} of {self.family}.cu: {error.value.decode(errors='replace')}")
        if _counting.active():
            _counting.launch(self.expression, sum(a._a.nbytes for a in args if isinstance(a, ndarray)),
                             None if stream is None else getattr(stream, "ptr", stream))


@functools.cache
def _kernel(source_dir: Path, family: str, expression: str, asan: bool) -> EmulatedKernel:
    return EmulatedKernel(family, expression, source_dir, asan)


def get_function(family: str, template_name: str, type_args=()):
    """The emulated kernel ``template_name<type_args...>`` of ``family`` (see the loader's)."""
    # Imported here: the loader's package imports this module through its seam.
    from gpusparse._kernels.cuda._loader import kernel_dir, name_expression
    source_dir = settings.source_dir or kernel_dir()
    return _kernel(Path(source_dir), family, name_expression(template_name, type_args), settings.asan)
