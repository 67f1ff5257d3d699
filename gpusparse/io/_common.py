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
import secrets
import stat
import sys

import numpy as np

__all__ = [
    "FileFormatError",
    "as_index_array",
    "atomic_path",
    "describe",
    "engine",
    "host",
    "is_path",
    "place",
    "progress_bar",
    "require_index_pointer",
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


def _create_beside(directory: str, name: str, suffix: str) -> str:
    """Create an empty file with a fresh name in ``directory``, mode ``0o666`` less the umask.

    :func:`tempfile.mkstemp` creates its files with mode ``0o600``; this
    creates them as :func:`open` does (NumPy's and SciPy's writers), so the
    file renamed over a new target has the mode the target would have had.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}{suffix}")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name for {name!r} in {directory!r}")


def _keep_mode_and_owner(tmp: str, target: str) -> None:
    """Give ``tmp`` the permission bits (and, where allowed, the group) of the existing ``target``."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        return
    os.chmod(tmp, stat.S_IMODE(st.st_mode))
    if hasattr(os, "chown"):
        with contextlib.suppress(OSError):  # another owner or a group the writer is not in: keep ours
            os.chown(tmp, -1, st.st_gid)


@contextlib.contextmanager
def atomic_path(target, suffix=".tmp"):
    """Yield a temporary path beside ``target``; on success it replaces ``target``.

    The file is written as ``open(target, "wb")`` would write it, only
    atomically:

    * a symbolic link (or a chain of them) is followed: the file it points
      to is replaced and the link stays a link;
    * an existing file keeps its permission bits (and its group, where the
      writer may set it); a new file gets ``0o666`` less the umask, as
      NumPy's and SciPy's writers give it.

    The temporary file lives in the directory of the (resolved) target, so
    :func:`os.replace` is an atomic rename on every platform Python
    supports. Any exception removes it and propagates, leaving ``target``
    as it was. ``suffix`` ends the temporary name (a writer that appends an
    extension it misses is given that extension).
    """
    target = os.path.realpath(os.fspath(target))
    directory, name = os.path.split(target)
    tmp = _create_beside(directory, name, suffix)
    try:
        _keep_mode_and_owner(tmp, target)
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def as_index_array(arr):
    """``arr`` as an array of indices a constructor takes without changing a value.

    Signed integers are returned as they are (the constructors check their
    range). Unsigned ones become int64 -- after checking that every value
    fits, so that a cast never turns 2**64 - 1 into -1 or 2**32 into 0.

    Raises
    ------
    ValueError
        ``arr`` does not hold integers, or an unsigned value exceeds 2**63 - 1.
    """
    if arr.dtype.kind not in "iu":
        raise ValueError(f"indices must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u":
        if arr.size and arr.dtype.itemsize == 8 and int(arr.max()) > 2**63 - 1:
            raise ValueError(f"index {int(arr.max())} (dtype {arr.dtype}) exceeds the largest index, 2**63 - 1")
        arr = arr.astype(np.int64)
    return arr


def require_index_pointer(name: str, shape, major_axis: int, nnz: int, device, index_dtype=None) -> None:
    """``MemoryError`` naming the file ``name`` when the ``indptr`` a CSR/CSC of ``shape`` needs cannot fit.

    A file may store a compressed array without its index pointer (as COO
    triplets), and then ``shape[major_axis] + 1`` entries are allocated from
    a size the file only states: a few bytes can ask for terabytes. The
    bytes are checked with the memory rule (:func:`gpusparse._memory.require`)
    against what ``device`` can provide before anything is allocated.
    """
    import gpusparse._memory as _memory
    from gpusparse._dtypes import index_dtype_for

    n_major, n_minor = int(shape[major_axis]), int(shape[1 - major_axis])
    dtype = np.dtype(index_dtype) if index_dtype is not None else index_dtype_for(n_major, n_minor, nnz)
    if np.iinfo(dtype).max < max(n_major, n_minor, nnz):
        dtype = np.dtype(np.int64)
    axis = "rows" if major_axis == 0 else "columns"
    _memory.require((n_major + 1) * dtype.itemsize, device,
                    f"the index pointer of its {n_major} {axis} ({n_major + 1} entries of {dtype.name})", name)


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
