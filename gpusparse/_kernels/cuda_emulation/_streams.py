"""Emulated CUDA streams and events: which stream is current, so that launches can be tagged with it.

Work runs at once on the emulated device, so streams order nothing; they
are context managers (and ``use()``) as in CuPy, and
:func:`get_current_stream` answers as CuPy's does.
"""

from __future__ import annotations

import itertools
import threading

from gpusparse._kernels.cuda_emulation import _counting

__all__ = ["current_stream_ptr", "get_current_stream"]


class _StreamState(threading.local):
    """The streams made current on this thread: ``use()``'s, and a stack of ``with`` blocks."""

    def __init__(self):
        self.used: "_Stream | None" = None
        self.stack: "list[_Stream]" = []


_STREAMS = _StreamState()
#: Handles of the streams the emulation creates (CUDA's special handles 0, 1 and 2 are never given out).
_stream_handles = itertools.count(0x5000, 0x10)


class _Event:
    """``cupy.cuda.Event``: remembers the stream it was last recorded on."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.stream_ptr: "int | None" = None

    def record(self, stream=None):
        self.stream_ptr = (get_current_stream() if stream is None else stream).ptr

    def synchronize(self):
        _counting.sync("event.synchronize")

    @property
    def done(self):
        return True


class _Stream:
    """``cupy.cuda.Stream``: a handle, a context manager that makes it current, and its waits.

    Work runs at once on the emulated device, so streams order nothing; what
    they are for is the record: every launch is tagged with the stream
    current at launch (see :mod:`~gpusparse._kernels.cuda_emulation._counting`),
    and :attr:`waited` lists the handles of the streams whose events this
    stream was made to wait for.
    """

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.ptr = 0 if null else 2 if ptds else next(_stream_handles)
        self.device_id = 0
        self.waited: "list[int | None]" = []

    def __enter__(self):
        _STREAMS.stack.append(self)
        return self

    def __exit__(self, *exc):
        _STREAMS.stack.pop()
        return False

    def use(self):
        _STREAMS.used = self
        return self

    def synchronize(self):
        _counting.sync("synchronize")

    def record(self, event=None):
        event = _Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        self.waited.append(event.stream_ptr)

    @property
    def done(self):
        return True

    def __eq__(self, other):
        return isinstance(other, _Stream) and other.ptr == self.ptr

    def __hash__(self):
        return hash(self.ptr)

    def __repr__(self):
        return f"<{type(self).__name__.lstrip('_')} {self.ptr:#x} (emulated)>"


class _ExternalStream(_Stream):
    """``cupy.cuda.ExternalStream``: a stream made elsewhere (torch's), known by its handle."""

    def __init__(self, ptr, device_id=-1):
        if int(device_id) not in (-1, 0):
            raise ValueError(f"device {device_id} does not exist: the emulation has one CUDA device")
        self.ptr = int(ptr)
        self.device_id = int(device_id)
        self.waited = []


_Stream.null = _Stream(null=True)
_Stream.ptds = _Stream(ptds=True)


def get_current_stream(device_id=None):
    """The stream current on this thread: the innermost ``with stream:``, else ``use()``'s, else null."""
    if _STREAMS.stack:
        return _STREAMS.stack[-1]
    return _STREAMS.used if _STREAMS.used is not None else _Stream.null


def current_stream_ptr() -> int:
    """The handle of :func:`get_current_stream` (what a launch is tagged with)."""
    return get_current_stream().ptr
