"""Counting what the CUDA path asks of the device: launches, syncs, memory.

The emulated device (:mod:`gpusparse._kernels.cuda_emulation._array` and
:mod:`~gpusparse._kernels.cuda_emulation._launch`) reports here what a GPU
would do, so that a cost model of every operation can be measured on a
machine without one:

* **launches**: every ``RawKernel`` launch of the library's kernels, and
  every call of the ``cupy`` namespace that would launch a kernel on a GPU
  (an elementwise operation, a reduction, a sort, a scan, a gather or
  scatter, a fill, a copy). A call counts as one launch when it writes a
  new array or writes into one in place; views (reshape, transpose, basic
  slicing) and bare allocations (``empty``) launch nothing. CuPy may run
  more than one kernel for some calls (a sort, a scan): the count is a lower
  bound there;
* **syncs**: every device-to-host read (``.get()``, ``cupy.asnumpy``,
  ``int()``, ``bool()``, ``float()``, ``.item()``, ``.tolist()``, printing),
  every explicit ``synchronize()``, and every call whose output size is
  only known on the device (``nonzero``, ``unique``, boolean-mask
  indexing, ...), which CuPy answers with a blocking read;
* **allocations**: every new device buffer (count and bytes), and the live
  device bytes, whose high-water mark above the live bytes at the start is
  the operation's peak;
* **arg_bytes**: the bytes of the device arrays each launch takes (inputs
  and outputs), an upper bound on its memory traffic;
* **h2d**: host-to-device copies (``cupy.asarray`` of host data);
* **streams**: the stream current at each launch and allocation
  (``launch_streams``, ``alloc_streams``: counts by stream handle), or the
  stream a ``RawKernel`` launch names explicitly.

Everything is a no-op unless a :func:`counting` block is open.

Examples
--------
>>> from gpusparse._kernels.cuda_emulation import _counting
>>> from gpusparse._kernels.cuda_emulation._array import cupy
>>> x = cupy.arange(4)
>>> with _counting.counting() as c:
...     y = x + 1
...     total = int(y.sum())
>>> c.launches, c.syncs, c.allocations
(2, 1, 2)
"""

from __future__ import annotations

import collections
import contextlib
import threading
import weakref

import numpy as np

__all__ = ["CostCounter", "counting", "device_bytes"]

#: The counters of the open :func:`counting` blocks (innermost last).
_active: "list[CostCounter]" = []
#: Every buffer ever behind a device array, by id, so that a view of an
#: existing buffer is not taken for a new allocation.
_known: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


class CostCounter:
    """What the device was asked to do inside one :func:`counting` block.

    Attributes
    ----------
    launches : int
        Kernel launches: ``raw_launches`` plus the ``cupy`` calls that run a kernel.
    raw_launches : int
        Launches of the library's own kernels (``cuda_kernels/*.cu``).
    syncs : int
        Host-device synchronisations (device-to-host reads, blocking size
        queries, explicit ``synchronize()``).
    d2h_bytes : int
        Bytes read back to the host.
    allocations, alloc_bytes : int
        New device buffers and their bytes.
    h2d, h2d_bytes : int
        Host-to-device copies and their bytes.
    arg_bytes : int
        Sum over launches of the bytes of their device array arguments.
    live, peak : int
        Device bytes allocated inside the block and still alive, and the
        largest value ``live`` reached.
    end_live : int or None
        ``live`` when the block closed (what the block left allocated:
        outputs and caches).
    launch_names, sync_names : collections.Counter
        The launches and syncs by name (kernel expression, ``cupy`` function
        or conversion).
    launch_streams, alloc_streams : collections.Counter
        The launches and the allocations by the handle (``ptr``) of the
        stream they were made on: ``cupy.cuda.get_current_stream()`` at the
        time, or the ``stream=`` a kernel launch was given (0: the null
        stream).
    """

    def __init__(self):
        self.launches = 0
        self.raw_launches = 0
        self.syncs = 0
        self.d2h_bytes = 0
        self.allocations = 0
        self.alloc_bytes = 0
        self.h2d = 0
        self.h2d_bytes = 0
        self.arg_bytes = 0
        self.live = 0
        self.peak = 0
        self.end_live: "int | None" = None
        self.open = True
        self.launch_names: "collections.Counter[str]" = collections.Counter()
        self.sync_names: "collections.Counter[str]" = collections.Counter()
        self.launch_streams: "collections.Counter[int]" = collections.Counter()
        self.alloc_streams: "collections.Counter[int]" = collections.Counter()

    @property
    def peak_above_end(self) -> int:
        """Peak device bytes above what the block left allocated (its temporaries' high-water mark)."""
        end = self.live if self.end_live is None else self.end_live
        return max(0, self.peak - end)

    def as_dict(self) -> dict:
        """The counts as a plain dictionary (names sorted by count)."""
        return {
            "launches": self.launches,
            "raw_launches": self.raw_launches,
            "syncs": self.syncs,
            "d2h_bytes": self.d2h_bytes,
            "allocations": self.allocations,
            "alloc_bytes": self.alloc_bytes,
            "h2d": self.h2d,
            "h2d_bytes": self.h2d_bytes,
            "arg_bytes": self.arg_bytes,
            "peak": self.peak,
            "end_live": self.live if self.end_live is None else self.end_live,
            "launch_names": dict(self.launch_names.most_common()),
            "sync_names": dict(self.sync_names.most_common()),
        }

    def __repr__(self) -> str:
        return (f"<CostCounter launches={self.launches} syncs={self.syncs} allocations={self.allocations} "
                f"alloc_bytes={self.alloc_bytes} peak={self.peak} arg_bytes={self.arg_bytes}>")


@contextlib.contextmanager
def counting():
    """Count the device work done inside a ``with`` block.

    Yields
    ------
    CostCounter
        Filled in as the block runs; ``end_live`` is set when it closes.
        Blocks may nest: an event counts in every open block.
    """
    counter = CostCounter()
    _active.append(counter)
    try:
        yield counter
    finally:
        counter.end_live = counter.live
        counter.open = False
        _active.remove(counter)


def active() -> bool:
    """Whether a :func:`counting` block is open."""
    return bool(_active)


# --------------------------------------------------------------------------
# Events, reported by the emulated device
# --------------------------------------------------------------------------

class _Call(threading.local):
    """How deep in ``cupy`` calls this thread is (calls made inside one are part of it)."""

    depth = 0


_CALL = _Call()


def _current_stream() -> int:
    """The handle of the emulated device's current stream."""
    from gpusparse._kernels.cuda_emulation._array import current_stream_ptr  # imports this module
    return current_stream_ptr()


def _release(counters, nbytes: int) -> None:
    for counter in counters:
        if counter.open:
            counter.live -= nbytes


def track_buffer(root: np.ndarray, nbytes: "int | None" = None, *, count: bool = True) -> None:
    """Note the buffer ``root`` behind a new device array; a new one is an allocation.

    Parameters
    ----------
    root : numpy.ndarray
        The base of the array's memory.
    nbytes : int, optional
        The allocation's size, when it is not ``root.nbytes`` (guard bytes).
    count : bool
        False for a buffer that stands for no device allocation (the scalar
        copy NumPy makes for a 0-d view).
    """
    key = id(root)
    if _known.get(key) is root:
        return
    _known[key] = root
    if not _active or not count:
        return
    nbytes = int(root.nbytes if nbytes is None else nbytes)
    if nbytes <= 0:
        return
    counters = tuple(_active)
    stream = _current_stream()
    for counter in counters:
        counter.alloc_streams[stream] += 1
        counter.allocations += 1
        counter.alloc_bytes += nbytes
        counter.live += nbytes
        counter.peak = max(counter.peak, counter.live)
    weakref.finalize(root, _release, counters, nbytes)


def launch(name: str, arg_bytes: int, stream: "int | None" = None) -> None:
    """Count one kernel launch of the library's own kernels, on ``stream`` (a handle; None: the current one)."""
    stream = _current_stream() if stream is None else int(stream)
    for counter in _active:
        counter.launch_streams[stream] += 1
        counter.launches += 1
        counter.raw_launches += 1
        counter.arg_bytes += int(arg_bytes)
        counter.launch_names[name] += 1


def sync(name: str, nbytes: int = 0) -> None:
    """Count one host-device synchronisation (``nbytes`` read back to the host)."""
    for counter in _active:
        counter.syncs += 1
        counter.d2h_bytes += int(nbytes)
        counter.sync_names[name] += 1


def host_to_device(nbytes: int) -> None:
    """Count one host-to-device copy."""
    for counter in _active:
        counter.h2d += 1
        counter.h2d_bytes += int(nbytes)


def device_bytes(obj, _depth: int = 0) -> int:
    """The bytes of the device arrays in ``obj`` (an array, or lists, tuples and dicts of them)."""
    from gpusparse._kernels.cuda_emulation._array import ndarray
    if isinstance(obj, ndarray):
        return int(obj._a.nbytes)
    if _depth < 3 and isinstance(obj, (list, tuple)):
        return sum(device_bytes(o, _depth + 1) for o in obj)
    if _depth < 3 and isinstance(obj, dict):
        return sum(device_bytes(o, _depth + 1) for o in obj.values())
    return 0


class _Scope:
    """One ``cupy`` call: a launch if it allocated or wrote, a sync if its output size needs the host."""

    __slots__ = ("name", "operands", "inplace", "blocking", "start")

    def __init__(self, name, operands, inplace, blocking):
        self.name = name
        self.operands = operands
        self.inplace = inplace
        self.blocking = blocking

    def __enter__(self):
        _CALL.depth += 1
        counter = _active[-1]
        self.start = (counter.allocations, counter.alloc_bytes)
        return self

    def __exit__(self, exc_type, exc, tb):
        _CALL.depth -= 1
        if _CALL.depth or exc_type is not None or not _active:
            return False
        counter = _active[-1]
        new_allocations = counter.allocations - self.start[0]
        new_bytes = counter.alloc_bytes - self.start[1]
        if new_allocations or self.inplace:
            arg_bytes = device_bytes(self.operands) + new_bytes
            stream = _current_stream()
            for c in _active:
                c.launch_streams[stream] += 1
                c.launches += 1
                c.arg_bytes += arg_bytes
                c.launch_names[self.name] += 1
        if self.blocking:
            for c in _active:
                c.syncs += 1
                c.sync_names[self.name] += 1
        return False


_NULL = contextlib.nullcontext()


def call(name: str, operands=(), *, inplace: bool = False, blocking: bool = False):
    """A context around one ``cupy`` call (a no-op outside :func:`counting`).

    Parameters
    ----------
    name : str
        The call's name in :attr:`CostCounter.launch_names`.
    operands
        The call's device arrays (lists, tuples and dicts are searched), for
        ``arg_bytes``.
    inplace : bool
        The call writes into an existing array: a launch even without a new
        allocation.
    blocking : bool
        The call's output size is only known on the device: a sync.
    """
    if not _active:
        return _NULL
    return _Scope(name, operands, inplace, blocking)
