"""The one seam of the CUDA launchers: their array module and their kernels.

Every launcher in this package takes ``cupy`` and ``get_function`` from here.
On a machine with CUDA they are CuPy and the NVRTC loader
(:mod:`gpusparse._kernels.cuda._loader`). With ``GPUSPARSE_CUDA_EMULATION``
set they are the CPU execution harness of
:mod:`gpusparse._kernels.cuda_emulation`: NumPy over emulated device arrays,
and the unmodified kernels compiled by the host C++ compiler. The launchers
themselves are the same code in both cases.
"""

from __future__ import annotations

from gpusparse._kernels import cuda_emulation

__all__ = ["EMULATED", "cupy", "get_function"]

#: Whether the CUDA primitives run on the CPU execution harness.
EMULATED = cuda_emulation.enabled()

if EMULATED:
    from gpusparse._kernels.cuda_emulation._array import cupy
    from gpusparse._kernels.cuda_emulation._launch import get_function
else:
    import cupy

    from gpusparse._kernels.cuda._loader import get_function
