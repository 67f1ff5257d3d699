"""Benchmarks of gpusparse against its peers, run in one process.

``python -m benchmarks.run`` discovers every ``benchmarks/bench_*.py`` module
and runs it (the plugin contract is in :mod:`benchmarks.run`);
``python3 -m benchmarks.gpu_report`` runs the test suite, the memory checker
and the benchmarks on a GPU machine and writes one report. Results go to
``benchmarks/results/`` as JSON plus a Markdown table.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

__all__ = ["Context"]

# Peers timed in alternation share the cores. An OpenMP runtime that
# spin-waits after each parallel region (libgomp's and Intel's default)
# keeps every core busy for a while after a peer's call returns, and the
# next implementation's timed call runs on what is left: on 2 cores a
# masked mxv timed right after a GraphBLAS call took 0.78 ms against 0.32 ms
# alone. Set before any OpenMP runtime loads; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The tables measure kernels compiled for the machine itself: a prebuilt
# kernel cache (``python -m gpusparse warmup --portable``, which ``make demo``
# builds into the package) holds code for the generic CPU, which a process
# would load where its own cache lacks a kernel. An explicit setting wins.
os.environ.setdefault("GPUSPARSE_PREBUILT_CACHE", os.path.join(os.path.dirname(__file__), "no-prebuilt-cache"))


@dataclasses.dataclass
class Context:
    """What a benchmark module's ``run(ctx)`` is told about the run.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where to run gpusparse and which peers to compare with.
    quick : bool
        Tiny sizes: a smoke test of the harness, not a measurement.
    target_s : float
        About how long the timed repeats of one implementation on one case
        should take; the number of repeats adapts to it.
    log : callable
        ``log(message)`` prints progress (flushed).
    size : int, optional
        Overrides a module's default problem size (for coalesce, the number
        of entries).

    Examples
    --------
    >>> ctx = Context(device="cpu", quick=True)
    >>> ctx.xp.__name__
    'numpy'
    """

    device: str = "cpu"
    quick: bool = False
    target_s: float = 1.5
    log: Callable[[str], None] = print
    size: int | None = None

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def xp(self):
        """The array module of :attr:`device`: ``numpy`` or ``cupy``."""
        if self.is_cuda:
            import cupy
            return cupy
        import numpy
        return numpy
