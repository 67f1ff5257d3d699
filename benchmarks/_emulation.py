"""The emulated CUDA device for the benchmarks (``GPUSPARSE_CUDA_EMULATION=1``).

The benchmark modules and :mod:`benchmarks._timing` import ``cupy``; on the
emulated device (:mod:`gpusparse._kernels.cuda_emulation`) there is none, so
:func:`install` puts the emulation's NumPy-backed stand-in under that name,
completed with what the benchmarks use and the stand-in lacks: CUDA events
(host clocks), ``get_elapsed_time`` and a memory pool with nothing to free.
``cupyx`` stays absent, so its peers are skipped with that reason. Emulated
figures say that the benchmarks run, not how fast a GPU is.
"""

from __future__ import annotations

import sys
import time

__all__ = ["install", "enabled"]


def enabled() -> bool:
    """Whether ``GPUSPARSE_CUDA_EMULATION`` asks for the emulated CUDA device."""
    from gpusparse._kernels import cuda_emulation
    return cuda_emulation.enabled()


class _Event:
    def __init__(self, *args, **kwargs):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        return None


class _Pool:
    def free_all_blocks(self):
        return None

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0


def install() -> bool:
    """Make ``import cupy`` give the emulated device's stand-in; False where emulation is off.

    A real CuPy already imported is left alone.
    """
    if not enabled():
        return False
    if "cupy" in sys.modules and not getattr(sys.modules["cupy"], "__version__", "") == "emulated":
        return False
    from gpusparse._kernels.cuda_emulation._array import cupy
    cuda = cupy.cuda
    # Each piece on its own: the emulated namespace grows (it has streams and events of its own
    # now), and whatever it lacks the timers need.
    if not hasattr(cuda, "get_elapsed_time"):
        cuda.Event = _Event  # host clocks, read by get_elapsed_time below
        cuda.get_elapsed_time = lambda start, end: (end.t - start.t) * 1e3
    if getattr(cuda.Stream, "null", None) is None:
        cuda.Stream.null = cuda.Stream()
    if not hasattr(cupy, "get_default_memory_pool"):
        pool = _Pool()
        cupy.get_default_memory_pool = lambda: pool
        cupy.get_default_pinned_memory_pool = lambda: pool
    if not hasattr(cuda.runtime, "driverGetVersion"):
        cuda.runtime.driverGetVersion = lambda: 0
    sys.modules["cupy"] = cupy
    sys.modules["cupy.cuda"] = cuda
    return True
