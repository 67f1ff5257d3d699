"""Running the CUDA path on the CPU: an execution harness for ``cuda_kernels/``.

Test infrastructure, not a device for users. With
``GPUSPARSE_CUDA_EMULATION=1`` in the environment (read at import), the CUDA
device ``cuda:0`` exists on a machine without a GPU, and every CUDA
primitive in :mod:`gpusparse._kernels.cuda` runs its unmodified launcher
with

* :data:`cupy`, NumPy standing in for CuPy over emulated device arrays
  (:class:`ndarray`: no implicit host conversion, garbage-filled ``empty``,
  guard bytes around every allocation), and
* :func:`get_function`, the kernels of ``cuda_kernels/*.cu`` compiled by the
  host C++ compiler against ``cuda_runtime_emulation.h``, whose blocks run
  their threads as fibers with real barriers and warp collectives in a
  shuffled order.

``GPUSPARSE_CUDA_EMULATION=asan`` builds the kernels with AddressSanitizer
(any out-of-bounds read or write fails; run Python with
``LD_PRELOAD=$(g++ -print-file-name=libasan.so)``, as ``make
emulation-memcheck`` does). ``GPUSPARSE_CUDA_EMULATION_SEED`` sets the
thread-order seed (0: thread-index order, no shuffle).

cuSPARSE is not emulated: the products take their hand-written kernels.
What a green emulated run proves is the logic of kernels and launchers, not
their speed, the GPU's memory model, or cuSPARSE.
"""

from __future__ import annotations

import os

__all__ = ["enabled", "mode"]


def mode() -> str:
    """``"off"``, ``"on"`` or ``"asan"``, as ``GPUSPARSE_CUDA_EMULATION`` asks."""
    value = os.environ.get("GPUSPARSE_CUDA_EMULATION", "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on"):
        return "on"
    if value == "asan":
        return "asan"
    raise ValueError(f"GPUSPARSE_CUDA_EMULATION must be 0, 1 or asan; got {value!r}")


def enabled() -> bool:
    """Whether ``GPUSPARSE_CUDA_EMULATION`` asks for the emulated CUDA device."""
    return mode() != "off"
