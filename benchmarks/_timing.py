"""Timing: first call, warm medians, and the copy bandwidth to compare with.

Every measurement follows one recipe:

1. :func:`call_once` times the first call on its own. It includes Numba
   compilation (or loading from Numba's cache) and NVRTC compilation, so it is
   reported separately as ``first_call_s`` and never mixed into the median.
2. :func:`time_call` makes one more untimed warm-up call (skipped when the
   caller made the first call already), times one call to estimate the
   cost, then repeats ``N`` times with ``N`` chosen so that the repeats take
   about ``target_s`` (at least 3 repeats, 5 for calls under half a second),
   and reports the median.
3. On the GPU each call runs between a full device synchronisation and CUDA
   events on the legacy default stream (where CuPy and torch launch by
   default); the end event is recorded after a second device synchronisation,
   so work on any stream is counted. On the CPU, ``time.perf_counter``.
   The garbage collector is off while repeating.
4. :func:`time_interleaved` times several implementations of one case in
   alternating rounds, so that a change in machine load hits all of them
   alike and their ratios stay fair; benchmarks comparing peers use it.

:func:`copy_bandwidth` measures ``dst[...] = src`` in the same process, so a
result can be stated as a fraction of what a plain copy reaches there.

Examples
--------
>>> import numpy as np
>>> t = time_call(lambda: np.ones(1000).sum(), device="cpu", target_s=0.01)
>>> t.repeats >= 3 and t.median_s > 0
True
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import statistics
import time

__all__ = ["Timing", "call_once", "copy_bandwidth", "free_memory", "synchronize", "time_call",
           "time_interleaved"]

MIN_REPEATS = 3
MAX_REPEATS = 10_000
#: ``GPUSPARSE_BENCH_MIN_REPEATS`` set (to 1): one timed call per implementation and no warm-up, for
#: smoke runs where a call takes long and its time means nothing (the emulated CUDA device)
REPEATS_CAP = int(os.environ.get("GPUSPARSE_BENCH_MIN_REPEATS", "0") or 0)


@dataclasses.dataclass
class Timing:
    """Warm timings of one callable, in seconds."""

    median_s: float
    min_s: float
    p25_s: float
    p75_s: float
    repeats: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _is_cuda(device: str) -> bool:
    return str(device).startswith("cuda")


def synchronize(device: str) -> None:
    """Wait for all work on ``device`` (a no-op on the CPU)."""
    if _is_cuda(device):
        import cupy
        cupy.cuda.Device().synchronize()


def free_memory(device: str) -> None:
    """Wait for ``device`` and give the memory pooled by CuPy and torch back (a no-op on the CPU).

    Called after every implementation, so that one peer's cached blocks do
    not crowd out the next one.
    """
    if not _is_cuda(device):
        return
    import sys

    import cupy
    synchronize(device)
    cupy.get_default_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


class _Clock:
    """Times one call of ``fn`` on ``device``; returns ``(result, seconds)``."""

    def __init__(self, device: str):
        self.cuda = _is_cuda(device)
        if self.cuda:
            import cupy
            self._cupy = cupy
            self._start = cupy.cuda.Event()
            self._end = cupy.cuda.Event()

    def __call__(self, fn):
        if not self.cuda:
            start = time.perf_counter()
            out = fn()
            return out, time.perf_counter() - start
        cupy = self._cupy
        null = cupy.cuda.Stream.null
        cupy.cuda.Device().synchronize()
        self._start.record(null)
        out = fn()
        cupy.cuda.Device().synchronize()
        self._end.record(null)
        self._end.synchronize()
        return out, cupy.cuda.get_elapsed_time(self._start, self._end) / 1e3


def call_once(fn, device: str = "cpu"):
    """Run ``fn()`` once, synchronised; returns ``(result, seconds)``.

    Use it for the first call, whose time includes compilation.
    """
    return _Clock(device)(fn)


def time_call(fn, device: str = "cpu", *, target_s: float = 1.5,
              min_repeats: int | None = None, max_repeats: int = MAX_REPEATS,
              warmed: bool = False) -> Timing:
    """Median time of warm calls of ``fn()`` on ``device``.

    Parameters
    ----------
    fn : callable
        Called with no arguments; its result is discarded after each call.
    device : str
        ``"cpu"`` or ``"cuda"``/``"cuda:N"`` (the current CuPy device).
    target_s : float
        About how long all timed repeats together should take.
    min_repeats, max_repeats : int
        Bounds on the number of timed repeats. ``min_repeats`` defaults to 3
        for calls over half a second and 5 otherwise.
    warmed : bool
        ``fn`` has been called already (by :func:`call_once`): skip the
        untimed warm-up call.

    Returns
    -------
    Timing

    Examples
    --------
    >>> t = time_call(lambda: sum(range(100)), target_s=0.01, min_repeats=4)
    >>> t.repeats >= 4
    True
    """
    clock = _Clock(device)
    if REPEATS_CAP:  # a smoke run: one timed call, no warm-up
        return _summary([clock(fn)[1]])
    if not warmed:
        clock(fn)  # warm-up: caches, memory pools, lazy loads
    _, estimate = clock(fn)
    if min_repeats is None:
        min_repeats = MIN_REPEATS if estimate > 0.5 else 5
    repeats = int(min(max(math.ceil(target_s / max(estimate, 1e-9)), min_repeats), max_repeats))
    times = []
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            out, seconds = clock(fn)
            del out
            times.append(seconds)
    finally:
        if enabled:
            gc.enable()
    return _summary(times)


def _summary(times) -> Timing:
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(median_s=statistics.median(times), min_s=min(times),
                  p25_s=q[0], p75_s=q[2], repeats=len(times))


def time_interleaved(fns: dict, device: str = "cpu", *, target_s: float = 1.5,
                     min_rounds: int = 5, max_rounds: int = MAX_REPEATS,
                     max_calls_per_round: int = 8, warmed: bool = False) -> dict:
    """Median times of several callables timed in alternation.

    Comparing implementations on a machine whose load changes (other jobs
    on a shared host) biases whichever ran while it was busiest. Here every
    round calls each function, in an order rotated from round to round, so
    all of them sample the same conditions and their ratios stay fair. A
    function much faster than the slowest is called several times in a row
    per round (at most ``max_calls_per_round``) so it gets more samples.
    Each function's calls in a round start with one untimed call: the call
    right after another implementation's pays for what that one left behind
    (its threads still waking or winding down, caches filled with its data),
    which is neither library's own cost.

    Parameters
    ----------
    fns : dict
        ``{name: callable}``; each callable takes no arguments.
    device : str
        ``"cpu"`` or ``"cuda"``/``"cuda:N"``.
    target_s : float
        About how long each function's timed calls should take in all; the
        number of rounds is chosen from one estimate call per function.
    min_rounds, max_rounds : int
        Bounds on the number of rounds.
    max_calls_per_round : int
        Most consecutive calls of one function in one round.
    warmed : bool
        Every function has been called already: skip the warm-up call.

    Returns
    -------
    dict
        ``{name: Timing}``.

    Examples
    --------
    >>> out = time_interleaved({"a": lambda: sum(range(10)), "b": lambda: sum(range(1000))},
    ...                        target_s=0.01)
    >>> sorted(out), out["a"].repeats >= 5
    (['a', 'b'], True)
    """
    clock = _Clock(device)
    names = list(fns)
    if REPEATS_CAP:  # a smoke run: one timed call each, no warm-up
        return {n: _summary([clock(fns[n])[1]]) for n in names}
    if not names:
        return {}
    estimates = {}
    for name in names:
        if not warmed:
            clock(fns[name])
        estimates[name] = max(clock(fns[name])[1], 1e-9)
    slowest = max(estimates.values())
    calls = {n: int(min(max(slowest // estimates[n], 1), max_calls_per_round)) for n in names}
    round_s = sum(calls[n] * estimates[n] for n in names)
    rounds = int(min(max(math.ceil(target_s * len(names) / round_s), min_rounds), max_rounds))
    times = {n: [] for n in names}
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                if len(names) > 1:  # settle: the first call after another implementation's is not timed
                    clock(fns[name])
                for _ in range(calls[name]):
                    out, seconds = clock(fns[name])
                    del out
                    times[name].append(seconds)
    finally:
        if enabled:
            gc.enable()
    return {n: _summary(times[n]) for n in names}


def copy_bandwidth(nbytes: int, xp, *, device: str | None = None, target_s: float = 0.5) -> dict:
    """Bandwidth of ``dst[...] = src`` for a ``src`` of ``nbytes`` bytes.

    The traffic counted is the read plus the write, ``2 * nbytes``, so the
    result is directly comparable with a model that counts both.

    Parameters
    ----------
    nbytes : int
        Size of the source buffer (rounded up to whole float64 elements).
    xp : module
        ``numpy`` (single-threaded copy) or ``cupy`` (device copy).
    device : str, optional
        Defaults to ``"cuda"`` for CuPy and ``"cpu"`` for NumPy.
    target_s : float
        Passed to :func:`time_call`.

    Returns
    -------
    dict
        ``bytes`` (read + write), ``median_s`` and ``gb_s`` (1e9 bytes/s).

    Examples
    --------
    >>> import numpy as np
    >>> bw = copy_bandwidth(1 << 20, np, target_s=0.01)
    >>> bw["bytes"] == 2 << 20 and bw["gb_s"] > 0
    True
    """
    if device is None:
        device = "cuda" if xp.__name__ == "cupy" else "cpu"
    n = max(1, -(-int(nbytes) // 8))
    src = xp.ones(n, dtype=xp.float64)
    dst = xp.empty_like(src)

    def copy():
        dst[...] = src

    timing = time_call(copy, device, target_s=target_s)
    traffic = 2 * n * 8
    return {"bytes": traffic, "median_s": timing.median_s, "gb_s": traffic / timing.median_s / 1e9}
