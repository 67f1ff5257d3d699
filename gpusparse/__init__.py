"""gpusparse: GPU-first sparse N-d arrays for Python.

Sparse arrays that live on the device of your data -- CuPy arrays on CUDA
devices, NumPy arrays on the CPU -- with every operation running there:
hand-written CUDA kernels and cuSPARSE on the GPU, Numba kernels on the CPU.
"""

from gpusparse._config import show_config
from gpusparse._device import Device, default_device, device
from gpusparse.containers import COO, CSC, CSR, SparseArray
from gpusparse.ops.creation import asarray, empty_like, eye, fromdense, random, zeros, zeros_like

__version__ = "0.1.0"

__all__ = [
    "COO",
    "CSC",
    "CSR",
    "Device",
    "SparseArray",
    "asarray",
    "default_device",
    "device",
    "empty_like",
    "eye",
    "fromdense",
    "random",
    "show_config",
    "zeros",
    "zeros_like",
]
