"""What every reader and writer shares: errors, atomic writes, device placement, optional engines.

Errors
    A file that cannot be read as what it claims to be raises
    :class:`FileFormatError` (a ``ValueError``) whose message starts with the
    file's name and names the line (text formats) or the field (binary
    formats) at fault. Bad arguments raise ``ValueError``/``TypeError``
    naming the argument, as everywhere in gpusparse.

Atomic writes
    :func:`atomic_path` yields a temporary name in the target's directory;
    the writer writes there and the file is renamed over the target with
    :func:`os.replace` only when everything was written. A failed write
    removes the temporary file and leaves an existing target untouched.

Placement
    Readers build the array on the host, where the engines put the parsed
    components and where validation costs no device synchronisation, and
    :func:`place` then copies each component to the requested device once.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile

__all__ = [
    "FileFormatError",
    "atomic_path",
    "describe",
    "engine",
    "host",
    "is_path",
    "place",
    "progress_bar",
]

#: Files (or payloads) at least this large show a progress bar when ``progress=None``.
PROGRESS_THRESHOLD = 256 * 2**20


class FileFormatError(ValueError):
    """A file that is not a valid file of the format it was read as.

    The message names the file and the line or field at fault.

    Examples
    --------
    >>> from gpusparse.io import FileFormatError
    >>> issubclass(FileFormatError, ValueError)
    True
    """


def engine(name: str, purpose: str):
    """Import the optional module ``name``, or ``ImportError`` naming the ``io`` extra."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            f"{purpose} needs the package {name!r}, which is not installed; "
            f'install gpusparse\'s io extra: pip install "gpusparse[io]"'
        ) from exc


def is_path(obj) -> bool:
    """True for a ``str`` or ``os.PathLike`` (as opposed to an open file object)."""
    return isinstance(obj, (str, os.PathLike))


def describe(source) -> str:
    """A short name of ``source`` for error messages: the path, or the file object's name."""
    if is_path(source):
        return os.fspath(source) if isinstance(os.fspath(source), str) else repr(os.fspath(source))
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, (str, bytes)) else f"<{type(source).__name__}>"


@contextlib.contextmanager
def atomic_path(target, suffix=".tmp"):
    """Yield a temporary path beside ``target``; on success it replaces ``target``.

    The temporary file lives in the same directory, so :func:`os.replace` is
    an atomic rename on every platform Python supports. Any exception
    removes it and propagates, leaving ``target`` as it was. ``suffix`` ends
    the temporary name (a writer that appends an extension it misses is
    given that extension).
    """
    target = os.fspath(target)
    directory, name = os.path.split(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def host(x):
    """``x`` on the CPU (one copy per component for a CUDA array): files are written from host memory."""
    return x if not x.device.is_cuda else x.to("cpu")


def place(x, device):
    """``x`` (built on the host) on ``device``: each component copied there once."""
    return x if device is None else x.to(device)


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress_bar(progress, size: int, description: str):
    """A tqdm bar counting bytes, or a do-nothing stand-in.

    ``progress=True`` draws one (``ImportError`` naming the extra without
    tqdm), ``False`` never does, ``None`` (auto) does when tqdm is
    installed, ``size`` is at least :data:`PROGRESS_THRESHOLD` bytes and
    stderr is a terminal.
    """
    if progress is None:
        if size < PROGRESS_THRESHOLD or not getattr(sys.stderr, "isatty", lambda: False)():
            return _NoBar()
        try:
            import tqdm
        except ImportError:
            return _NoBar()
    elif progress:
        tqdm = engine("tqdm", "progress=True")
    else:
        return _NoBar()
    return tqdm.tqdm(total=size or None, desc=description, unit="B", unit_scale=True, leave=False)


class CountingReader:
    """A binary file object that reports every chunk read to a progress bar.

    The engines read in large chunks, so the bar advances as the parse
    proceeds at the cost of one Python call per chunk.
    """

    def __init__(self, raw, bar):
        self._raw, self._bar = raw, bar

    def read(self, size=-1):
        chunk = self._raw.read(size)
        self._bar.update(len(chunk))
        return chunk

    def readinto(self, buffer):
        n = self._raw.readinto(buffer)
        self._bar.update(n or 0)
        return n

    def readable(self):
        return True

    def __getattr__(self, name):
        return getattr(self._raw, name)


class CountingWriter:
    """A write-only binary stream that reports every chunk written to a progress bar.

    It offers no ``seek``, so an engine streams through it front to back:
    the compressors behind it (``bz2``) cannot seek while writing.
    """

    def __init__(self, raw, bar):
        self._raw, self._bar = raw, bar

    def write(self, data):
        n = self._raw.write(data)
        self._bar.update(len(data) if n is None else n)
        return n

    def flush(self):
        self._raw.flush()

    def writable(self):
        return True

    def seekable(self):
        return False
