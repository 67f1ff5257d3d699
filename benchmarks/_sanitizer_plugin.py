"""pytest plugin for runs under ``compute-sanitizer``: every CuPy array gets its own allocation.

CuPy's memory pool serves many arrays from one large driver allocation, so an
out-of-bounds access that stays inside the pool is invisible to memcheck.
Switching the pool off makes each array a separate ``cudaMalloc`` whose
bounds memcheck knows. Loaded by ``benchmarks.gpu_report`` with
``-p benchmarks._sanitizer_plugin``; harmless without CuPy.
"""

from __future__ import annotations

import contextlib


def pytest_configure(config):
    with contextlib.suppress(Exception):  # no CuPy or no GPU: nothing to switch off
        import cupy
        cupy.cuda.set_allocator(None)
        cupy.cuda.set_pinned_memory_allocator(None)
