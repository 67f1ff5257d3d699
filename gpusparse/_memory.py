"""The memory rule: an operation sizes what it will allocate, and refuses what cannot fit.

On Linux a large host allocation succeeds whatever its size (memory is
mapped lazily, page by page, on first write), so an operation that builds
more than the machine can hold is not refused: it is killed by the kernel's
OOM killer while it writes. gpusparse therefore estimates the bytes an
operation will allocate (its result and its largest temporaries) from the
sizes it knows before it allocates them, and raises :class:`MemoryError`
naming the operation and the size when they exceed what the operands'
device can still provide:

* host: the kernel's ``MemAvailable`` (``os.sysconf`` where
  ``/proc/meminfo`` is missing), lowered to what is left under the
  process's memory cgroup limit (v2 ``memory.max``, v1
  ``memory.limit_in_bytes``; page cache that can be reclaimed counts as
  free) and under ``RLIMIT_AS`` where set;
* CUDA device: the driver's free memory (``cudaMemGetInfo``, which does
  not synchronise the device) plus the free blocks of CuPy's memory pool,
  lowered to what the pool's limit (``set_limit`` or
  ``CUPY_GPU_MEMORY_LIMIT``) leaves. The emulated CUDA device, whose
  memory is host memory, takes the host's figure.

Requests below :data:`CHECK_MIN_BYTES` are never measured, so ordinary
operations pay nothing. The same check guards every output the CPU kernels
allocate (:func:`check_output`), where a size read from malformed
components can be absurd; it names the operation in progress
(:func:`operation`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os

import numpy as np

__all__ = ["CHECK_MIN_BYTES", "available", "check_output", "describe", "nbytes", "operation", "require"]

#: Requests below this many bytes are allowed without measuring anything.
CHECK_MIN_BYTES = 64 << 20

_operation: "contextvars.ContextVar[str | None]" = contextvars.ContextVar("gpusparse_operation", default=None)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # not POSIX: no limit known
        return 1 << 62


PHYSICAL_MEMORY = _physical_memory()


def nbytes(shape, dtype) -> int:
    """Bytes of a C-contiguous array of ``shape`` and ``dtype`` (Python integers: no overflow).

    >>> nbytes((1000, 1000), "float64")
    8000000
    """
    return math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize


def describe(n: int) -> str:
    """``n`` bytes for a message: GiB from 1 GiB up, else MiB.

    >>> describe(3 << 30), describe(5 << 20)
    ('3.0 GiB', '5.0 MiB')
    """
    return f"{n / 2**30:.1f} GiB" if n >= 1 << 30 else f"{n / 2**20:.1f} MiB"


# --------------------------------------------------------------------------
# What a device can still provide
# --------------------------------------------------------------------------

def _read(path) -> "str | None":
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _meminfo_available() -> "int | None":
    text = _read("/proc/meminfo")
    if text is not None:
        for line in text.splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _cgroup_dirs():
    """Candidate ``(limit file, usage file, stat file, inactive-file key)`` of this process's memory cgroup."""
    own = _read("/proc/self/cgroup") or ""
    v2, v1 = [], []
    for line in own.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2.append(parts[2])
        elif "memory" in parts[1].split(","):
            v1.append(parts[2])
    found = []
    for rel in (*v2, "/"):  # inside a container the own path is often the mount's root
        base = "/sys/fs/cgroup" + rel.rstrip("/")
        found.append((f"{base}/memory.max", f"{base}/memory.current", f"{base}/memory.stat", "inactive_file"))
    for rel in (*v1, "/"):
        base = "/sys/fs/cgroup/memory" + rel.rstrip("/")
        found.append((f"{base}/memory.limit_in_bytes", f"{base}/memory.usage_in_bytes", f"{base}/memory.stat",
                      "total_inactive_file"))
    return found


def _cgroup_available() -> "int | None":
    """Bytes left under this process's memory cgroup limit (reclaimable page cache counted free), or None."""
    for limit_file, usage_file, stat_file, key in _cgroup_dirs():
        raw = _read(limit_file)
        if raw is None:
            continue
        raw = raw.strip()
        if raw == "max" or not raw.isdigit() or int(raw) >= PHYSICAL_MEMORY:
            return None  # the innermost cgroup that exists sets no limit below the machine's
        usage = _read(usage_file)
        if usage is None or not usage.strip().isdigit():
            return None
        inactive = 0
        for line in (_read(stat_file) or "").splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                inactive = int(value)
                break
        return max(int(raw) - (int(usage) - inactive), 0)
    return None


def _address_space_available() -> "int | None":
    """Bytes of address space left under ``RLIMIT_AS``, or None where it is not set."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    statm = _read("/proc/self/statm")
    if statm is None:
        return None
    return max(soft - int(statm.split()[0]) * os.sysconf("SC_PAGE_SIZE"), 0)


def host_available() -> "tuple[int, str]":
    """``(bytes, what limits them)``: the host memory a new allocation may take now."""
    candidates = [
        (_meminfo_available(), "the host's available memory"),
        (_cgroup_available(), "what the memory cgroup limit leaves"),
        (_address_space_available(), "what RLIMIT_AS leaves"),
    ]
    known = [(n, why) for n, why in candidates if n is not None]
    if not known:
        return PHYSICAL_MEMORY, "the host's physical memory"
    return min(known)


def _cuda_available(dev) -> "tuple[int, str]":
    from gpusparse._placement import cuda_module
    cupy = cuda_module()
    mem_get_info = getattr(cupy.cuda.runtime, "memGetInfo", None)
    if mem_get_info is None:  # the emulated device: its memory is host memory
        return host_available()
    with cupy.cuda.Device(dev.index):
        free, _ = mem_get_info()
        pool = cupy.get_default_memory_pool()
        free += pool.free_bytes()
        limit = pool.get_limit()
        if limit:
            left = max(limit - pool.used_bytes(), 0)
            if left < free:
                return left, "what CuPy's memory pool limit leaves"
    return free, "the device's free memory and CuPy's free blocks"


def available(device) -> "tuple[int, str]":
    """``(bytes, what limits them)``: the memory a new allocation on ``device`` may take now.

    Examples
    --------
    >>> from gpusparse._placement import CPU
    >>> n, why = available(CPU)
    >>> n > 0 and isinstance(why, str)
    True
    """
    if getattr(device, "is_cuda", False):
        return _cuda_available(device)
    return host_available()


#: The host buffer pools' ``release_free`` functions (:mod:`gpusparse._kernels.cpu._pool` adds its
#: own when imported): a pool that was never imported holds no free blocks.
_HOST_POOLS: list = []


def add_host_pool(release_free) -> None:
    """Have :func:`require` call ``release_free()`` (bytes released) before it refuses a host request."""
    if release_free not in _HOST_POOLS:
        _HOST_POOLS.append(release_free)


def _release_free_blocks(device) -> int:
    """Hand the free blocks of the device's memory pool back; the bytes released."""
    if getattr(device, "is_cuda", False):
        return 0  # CuPy's free blocks are already counted as available
    return sum(release_free() for release_free in _HOST_POOLS)


# --------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------

@contextlib.contextmanager
def operation(name: str):
    """Name the public operation that the allocations inside the block serve.

    A :class:`MemoryError` raised inside by the allocator itself (NumPy,
    CuPy's ``OutOfMemoryError``) is re-raised naming ``name``. Nested
    blocks keep the outermost name: the operation the user called.
    """
    outer = _operation.get()
    token = _operation.set(outer or name)
    try:
        yield
    except MemoryError as exc:
        if outer is not None or getattr(exc, "gpusparse_checked", False):
            raise
        err = MemoryError(f"{name}: the allocator refused memory ({type(exc).__name__}: {exc})")
        err.gpusparse_checked = True
        raise err from exc
    finally:
        _operation.reset(token)


def current_operation() -> "str | None":
    """The name of the outermost enclosing :func:`operation` block, or None."""
    return _operation.get()


def _refuse(message: str):
    err = MemoryError(message)
    err.gpusparse_checked = True
    return err


def require(nbytes_needed: int, device, what: str, name: "str | None" = None) -> None:
    """Raise ``MemoryError`` before allocating if ``nbytes_needed`` cannot fit on ``device``.

    Parameters
    ----------
    nbytes_needed : int
        The estimated peak of the allocations about to be made (result
        and temporaries).
    device : Device
        Where they would be made.
    what : str
        What they are, for the message (``"the result (1.6e+09 entries)"``).
    name : str, optional
        The operation; defaults to the one of the enclosing
        :func:`operation` block.

    Examples
    --------
    >>> from gpusparse._placement import CPU
    >>> require(1 << 20, CPU, "a small buffer", "demo")
    >>> require(1 << 62, CPU, "the result", "demo")
    Traceback (most recent call last):
    ...
    MemoryError: demo: the result needs 4294967296.0 GiB, more than ...
    """
    if nbytes_needed < CHECK_MIN_BYTES:
        return
    free, why = available(device)
    if nbytes_needed > free and _release_free_blocks(device):
        free, why = available(device)
    if nbytes_needed > free:
        op = name or _operation.get() or "an operation"
        raise _refuse(
            f"{op}: {what} needs {describe(nbytes_needed)}, more than the {describe(free)} that "
            f"{device} can provide ({why}); nothing was allocated"
        )


def check_output(shape, dtype) -> None:
    """Refuse a kernel output of ``shape``/``dtype`` that cannot fit in host memory (see :func:`require`).

    Outputs sized from data (a merge of rows, a row selection, the count
    pass of a sparse product) can be absurd when the components are
    malformed (``check=False``, buffers changed after construction); the
    message then says how to find out.
    """
    needed = nbytes(shape, dtype)
    if needed < CHECK_MIN_BYTES:
        return
    from gpusparse._placement import CPU
    what = f"an output of shape {tuple(shape)} and dtype {np.dtype(dtype).name}"
    if needed > PHYSICAL_MEMORY:
        op = _operation.get() or "an operation"
        raise _refuse(
            f"{op}: {what} needs {describe(needed)}, more than this machine's {describe(PHYSICAL_MEMORY)}; "
            "if its size comes from an array built with check=False or whose buffers changed, "
            "x.check() tells what is wrong"
        )
    require(needed, CPU, what)
