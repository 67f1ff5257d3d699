"""Devices: where arrays live and which kernels run on them.

A :class:`Device` is ``"cpu"`` or ``"cuda:N"``. Arrays on the CPU are NumPy
arrays and run the Numba primitives; arrays on a CUDA device are CuPy arrays
and run the CUDA primitives. Operations run where their operands live
(:func:`device_of`); the *default* device only decides where creation
functions (``zeros``, ``random``, ``asarray`` of Python lists, ...) put new
arrays.

CuPy is imported lazily and every failure to import it or to find a GPU is
caught and recorded, so ``import gpusparse`` works with no CuPy, with CuPy but
no GPU, and with a broken CUDA installation. :func:`cuda_status` says why CUDA
is unavailable.

With ``GPUSPARSE_CUDA_EMULATION`` set (test infrastructure, see
:mod:`gpusparse._kernels.cuda_emulation`), ``cuda:0`` is an emulated device
whose arrays are the harness's device arrays and whose primitives run the
CUDA launchers and kernels on the CPU; :func:`cuda_module` is where the rest
of the library gets its ``cupy`` from.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
import sys
import types

import numpy as np

# Device, CPU, cuda_module and _emulated live in gpusparse._placement, below the kernels (which
# size their allocations per device); they are this module's names as before.
from gpusparse._placement import CPU, Device, _emulated, cuda_module

__all__ = [
    "Device",
    "as_device",
    "cuda_module",
    "cuda_status",
    "default_device",
    "device",
    "device_of",
    "device_scope",
    "kernels_for",
    "xp_for",
]


# --------------------------------------------------------------------------
# CUDA availability, detected once and lazily
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CudaStatus:
    """What :func:`cuda_status` found: the device count and, if 0, why."""

    device_count: int
    reason: "str | None"
    cupy_version: "str | None"


@functools.cache
def cuda_status() -> CudaStatus:
    """Detect CUDA once: how many devices CuPy can use, or why none.

    Never raises: a missing CuPy, a missing driver and a broken CUDA
    installation all give ``device_count == 0`` with the reason.
    """
    if _emulated():
        return CudaStatus(1, None, "emulated")
    try:
        import cupy
    except Exception as exc:  # ImportError, OSError from a broken CUDA install, ...
        return CudaStatus(0, f"CuPy is not importable ({type(exc).__name__}: {exc})", None)
    version = getattr(cupy, "__version__", None)
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver, insufficient driver, ...
        return CudaStatus(0, f"CuPy found no usable CUDA device ({type(exc).__name__}: {exc})", version)
    if count == 0:
        return CudaStatus(0, "CuPy reports zero CUDA devices", version)
    return CudaStatus(count, None, version)


def _require_cuda(dev: Device) -> None:
    status = cuda_status()
    if status.device_count == 0:
        raise RuntimeError(f"device {dev} is not available: {status.reason}")
    if dev.index >= status.device_count:
        raise ValueError(
            f"device {dev} does not exist: {status.device_count} CUDA device(s) found"
        )


# --------------------------------------------------------------------------
# The default device for creation functions
# --------------------------------------------------------------------------

_scoped_default: contextvars.ContextVar["Device | None"] = contextvars.ContextVar(
    "gpusparse_default_device", default=None
)


def default_device() -> Device:
    """The device that creation functions use when none is given.

    In order: the innermost ``with gpusparse.device(...)`` block, the
    ``GPUSPARSE_DEVICE`` environment variable, the first CUDA device when CuPy
    sees one, else the CPU.

    A ``GPUSPARSE_DEVICE`` that names no device (``"tpu"``) or a CUDA
    device that does not exist raises ``ValueError``; one that names CUDA
    where none is usable raises ``RuntimeError`` with the reason
    (:func:`cuda_status`). Both name the variable and its value.
    """
    scoped = _scoped_default.get()
    if scoped is not None:
        return scoped
    env = os.environ.get("GPUSPARSE_DEVICE", "").strip()
    if env and env.lower() != "auto":
        try:
            dev = Device.parse(env)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"GPUSPARSE_DEVICE: {exc}") from None
        if dev.is_cuda:
            _require_env_cuda(dev, env)
        return dev
    return Device("cuda", 0) if cuda_status().device_count > 0 else CPU


def _require_env_cuda(dev: Device, env: str) -> None:
    """Check the CUDA device ``GPUSPARSE_DEVICE`` asks for, naming the variable in the error."""
    status = cuda_status()
    advice = "unset GPUSPARSE_DEVICE or set it to 'cpu' or 'auto'"
    if status.device_count == 0:
        raise RuntimeError(
            f"GPUSPARSE_DEVICE={env!r} asks for {dev}, but CUDA is not available: {status.reason}; {advice}"
        )
    if dev.index >= status.device_count:
        raise ValueError(
            f"GPUSPARSE_DEVICE={env!r} asks for {dev}, which does not exist: "
            f"{status.device_count} CUDA device(s) found; {advice}"
        )


@contextlib.contextmanager
def device(spec: "str | Device"):
    """Make ``spec`` the default device for creation inside a ``with`` block.

    Operations on existing arrays still run where those arrays live.

    Examples
    --------
    >>> import gpusparse as gs
    >>> with gs.device("cpu"):
    ...     x = gs.zeros((3, 4))
    >>> str(x.device)
    'cpu'
    """
    dev = as_device(spec)
    token = _scoped_default.set(dev)
    try:
        yield dev
    finally:
        _scoped_default.reset(token)


def as_device(spec: "str | Device | None") -> Device:
    """Resolve ``None`` to the default device and check that a device exists."""
    if spec is None:
        return default_device()
    dev = Device.parse(spec)
    if dev.is_cuda:
        _require_cuda(dev)
    return dev


# --------------------------------------------------------------------------
# Which device an array lives on
# --------------------------------------------------------------------------

def is_cupy_array(obj) -> bool:
    """True if ``obj`` is a ``cupy.ndarray`` (or an emulated one); never imports CuPy."""
    if _emulated():
        return isinstance(obj, cuda_module().ndarray)
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(obj, cupy.ndarray)


def array_device(arr) -> Device:
    """The device of one NumPy or CuPy array."""
    if isinstance(arr, np.ndarray):
        return CPU
    if is_cupy_array(arr):
        return Device("cuda", int(arr.device.id))
    raise TypeError(f"expected a numpy or cupy array, got {type(arr).__name__}")


def device_of(*operands, what: "tuple[str, ...] | None" = None) -> Device:
    """The one device all ``operands`` live on.

    Operands are NumPy/CuPy arrays or objects with a ``device`` attribute that
    is a :class:`Device` (gpusparse containers). ``None`` and scalars are
    ignored. Raises ``ValueError`` naming both devices when they differ: data
    never moves between devices behind the user's back.
    """
    found: "Device | None" = None
    found_name = None
    for i, op in enumerate(operands):
        if op is None:
            continue
        if isinstance(op, np.ndarray) or is_cupy_array(op):
            dev = array_device(op)
        elif isinstance(getattr(op, "device", None), Device):
            dev = op.device
        else:
            continue
        name = what[i] if what else f"operand {i}"
        if found is None:
            found, found_name = dev, name
        elif dev != found:
            raise ValueError(
                f"operands are on different devices: {found_name} is on {found} and "
                f"{name} is on {dev}; move one explicitly with .to(device)"
            )
    return found if found is not None else default_device()


# --------------------------------------------------------------------------
# Array module and kernels per device
# --------------------------------------------------------------------------

def xp_for(dev: Device) -> types.ModuleType:
    """The array module for ``dev``: ``numpy`` or ``cupy``."""
    if dev.is_cuda:
        return cuda_module()
    return np


def kernels_for(dev: Device):
    """The primitive implementation for ``dev`` (see ``gpusparse._kernels``)."""
    if dev.is_cuda:
        from gpusparse._kernels import cuda
        return cuda
    from gpusparse._kernels import cpu
    return cpu


def device_scope(dev: Device):
    """A context that makes ``dev`` current for allocations and launches."""
    if dev.is_cuda:
        return cuda_module().cuda.Device(dev.index)
    return contextlib.nullcontext()


def to_device_array(arr, dev: Device):
    """Copy (only if needed) a NumPy/CuPy array onto ``dev``."""
    src = array_device(arr)
    if src == dev:
        return arr
    if dev.is_cuda:
        cupy = cuda_module()
        with cupy.cuda.Device(dev.index):
            return cupy.asarray(arr)
    return arr.get()


def to_host(arr) -> np.ndarray:
    """A NumPy copy of a (small) NumPy or CuPy array; synchronises for CuPy."""
    return arr.get() if is_cupy_array(arr) else np.asarray(arr)
