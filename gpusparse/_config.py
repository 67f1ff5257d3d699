"""``show_config``: versions, devices found, and why a device is unavailable."""

from __future__ import annotations

import importlib.metadata
import platform
import sys

from gpusparse._device import cuda_status, default_device

__all__ = ["show_config"]

_PACKAGES = ("numpy", "numba", "scipy", "cupy", "torch", "jax", "sparse")


def _version(module: str) -> str:
    loaded = sys.modules.get(module)
    if loaded is not None and hasattr(loaded, "__version__"):
        return str(loaded.__version__)
    for dist in (module, "cupy-cuda13x", "cupy-cuda12x") if module == "cupy" else (module,):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def show_config(file=None) -> None:
    """Print gpusparse's versions, the devices it can use and why others are unavailable.

    Examples
    --------
    >>> import gpusparse as gs
    >>> gs.show_config()  # doctest: +SKIP
    gpusparse 0.1.0 ...
    """
    out = file or sys.stdout
    print(f"gpusparse {_version('gpusparse')} on Python {platform.python_version()} ({platform.machine()})", file=out)
    for name in _PACKAGES:
        print(f"  {name:<8} {_version(name)}", file=out)
    status = cuda_status()
    print("devices:", file=out)
    print("  cpu      available (Numba kernels)", file=out)
    if status.device_count:
        import cupy
        for index in range(status.device_count):
            props = cupy.cuda.runtime.getDeviceProperties(index)
            name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            print(f"  cuda:{index}   {name}", file=out)
    else:
        print(f"  cuda     unavailable: {status.reason}", file=out)
    try:
        print(f"default device: {default_device()}", file=out)
    except (RuntimeError, ValueError) as exc:
        print(f"default device: invalid ({exc})", file=out)
