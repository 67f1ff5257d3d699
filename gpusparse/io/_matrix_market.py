"""Matrix Market files through fast_matrix_market.

`fast_matrix_market <https://github.com/alugowski/fast_matrix_market>`_
(the engine ``scipy.io.mmread``/``mmwrite`` vendor since SciPy 1.12) parses
and formats the text in parallel and reports malformed input with its line
number. Reads call the package; writes call SciPy's vendored copy where
there is one (see :func:`_writer`). This module maps its ``(data, (row, col))`` triplets and dense
arrays to gpusparse containers and back, and adds what the engine leaves to
its callers: the file name in every error, atomic writes, compressed
targets, symmetry detection that uses gpusparse's own conversions, value
dtypes the format has no field for, and a progress bar.

The engine reads a ``.gz``/``.bz2`` file through Python's ``gzip``/``bz2``
stream (slower than a plain file, which it reads with its own threads); so
does a read with a progress bar, whose stream counts the bytes consumed.
"""

from __future__ import annotations

import bz2
import collections
import contextlib
import functools
import gzip
import io
import os
import re
import zlib

import numpy as np

from gpusparse.io._common import (
    CountingReader,
    CountingWriter,
    FileFormatError,
    atomic_path,
    describe,
    engine,
    host,
    is_path,
    place,
    progress_bar,
    require_index_pointer,
)

__all__ = ["mminfo", "mmread", "mmwrite"]

_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
_FIELDS = ("real", "complex", "integer", "pattern")
_FORMATS = ("coo", "csr", "csc")
_OPENERS = {
    ".gz": lambda f, mode: gzip.GzipFile(fileobj=f, mode=mode),
    ".bz2": lambda f, mode: bz2.BZ2File(f, mode=mode),
}


def _fmm():
    return engine("fast_matrix_market", "Matrix Market input/output")


def _opener(path: str):
    """``gzip.GzipFile``/``bz2.BZ2File`` for a compressed path, else None."""
    return _OPENERS.get(os.path.splitext(str(path))[1].lower())


def _fail(name: str, exc: Exception, declared=None) -> FileFormatError:
    """The engine's error, prefixed with the file's name (its message has the line number)."""
    message = str(exc).strip()
    message = re.sub(r"^Line (\d+):", r"line \1:", message)
    if message.startswith("Truncated file") and declared is not None:
        message += f" (the size line declares {declared} entries)"
    return FileFormatError(f"{name}: {message}")


#: Errors of a damaged ``.gz``/``.bz2`` stream (``gzip.BadGzipFile`` and bz2's are OSErrors).
_STREAM_ERRORS = (EOFError, OSError, zlib.error)
#: Bytes read from a stream per step while checking the size line's claim.
_CHUNK = 2**20


def _least_bytes(header) -> int:
    """The fewest bytes the body of a file with this header can have.

    The engine allocates the arrays the size line declares before it reads
    a line, so the claim is checked against the bytes there are first.
    Every entry is a line of whitespace-separated numbers, each at least one
    character followed by a separator: two indices and zero (pattern), one
    or two (complex) values in a coordinate file, one or two values per
    stored element of an array file (the lower triangle of a symmetric one).
    """
    values = {"pattern": 0, "complex": 2}.get(header.field, 1)
    if header.format == "coordinate":
        entries, tokens = header.nnz, 2 + values
    else:
        n, m = header.nrows, header.ncols
        entries = {"general": n * m, "skew-symmetric": n * (n - 1) // 2}.get(header.symmetry, n * (n + 1) // 2)
        tokens = max(values, 1)
    return max(entries * 2 * tokens - 1, 0)


def _check_claim(name, header, available, exact=True):
    """FileFormatError when the file is too short to hold what its size line declares."""
    least = _least_bytes(header)
    if least > available:
        what = f"has {available} bytes" if exact else f"ends {available} bytes after the size line"
        raise FileFormatError(f"{name}: the size line declares {header.nrows} x {header.ncols} with {header.nnz} "
                              f"entries ({header.format}, {header.field}), which take at least {least} bytes, "
                              f"but the file {what}")


def _read_header_bytes(stream) -> bytes:
    """The banner, comment and blank lines and the size line of ``stream``, as they are."""
    lines = []
    while True:
        line = stream.readline(_CHUNK)
        while line and not line.endswith(b"\n") and len(line) % _CHUNK == 0:  # a long line, read on
            more = stream.readline(_CHUNK)
            line += more
            if not more:
                break
        lines.append(line)
        if not line or (len(lines) > 1 and line.strip() and not line.startswith(b"%")):
            return b"".join(lines)


class _Chain(io.RawIOBase):
    """A stream of ``prefix`` (a list of byte strings), what is left of ``rest``, and a final newline.

    The newline is added when the text does not end with one: the engine
    (fast_matrix_market 1.7, also inside SciPy) reads past its buffer and
    crashes the process on a last line without newline that has anything
    after its last number (a space, a tab, a form feed); a newline at the
    end changes the meaning of no file.
    """

    def __init__(self, prefix, rest):
        super().__init__()
        self._parts, self._rest = collections.deque(prefix), rest
        self._last, self._ended = b"\n", False

    def readable(self):
        return True

    def readinto(self, buffer):
        while self._parts and not self._parts[0]:
            self._parts.popleft()
        if not self._parts:
            data = b"" if self._ended else self._rest.read(len(buffer))
            if not data and not self._ended:
                self._ended = True
                data = b"\n" if self._last != b"\n" and len(buffer) else b""
        else:
            data = self._parts[0][:len(buffer)]
            self._parts[0] = self._parts[0][len(data):]
        if data:
            self._last = data[-1:]
            if b"\0" in data:  # no Matrix Market text has one, and the engine's number parser crashes on it
                raise ValueError("a NUL byte in the text")
        buffer[:len(data)] = data
        return len(data)


def _bounded(fmm, name, stream):
    """``stream`` for the engine, once the bytes its size line claims are known to be there.

    The header is parsed from its own bytes; then the body is read ahead,
    in steps of :data:`_CHUNK`, up to the fewest bytes the claim needs (or
    the end of the stream, which makes the file a truncated one). What was
    read ahead is handed to the engine again, before the rest of the stream,
    so memory never exceeds what the stream really holds.
    """
    head = _read_header_bytes(stream)
    try:
        header = fmm.read_header(io.BytesIO(head))
    except (ValueError, RuntimeError, OverflowError) as exc:
        raise _fail(name, exc) from exc
    least, parts, have = _least_bytes(header), [head], 0
    while have < least:
        chunk = stream.read(min(_CHUNK, least - have))
        if not chunk:
            _check_claim(name, header, have, exact=False)
        parts.append(chunk)
        have += len(chunk)
    return io.BufferedReader(_Chain(parts, stream), buffer_size=_CHUNK)


@contextlib.contextmanager
def _source(source, progress, fmm=None, name=None):
    """What to hand the engine for ``source``: a path, or an open binary stream.

    With ``fmm`` given, the size line's claim is checked against the bytes
    there are before the engine sees the file (see :func:`_bounded`).
    """
    if not is_path(source):
        yield source if fmm is None else _bounded(fmm, name, source)
        return
    path = os.fspath(source)
    opener = _opener(path)
    size = os.path.getsize(path)
    bar = progress_bar(progress, size, f"reading {os.path.basename(str(path))}")
    try:
        if opener is None and fmm is not None:
            try:
                header = fmm.read_header(str(path))
            except (ValueError, RuntimeError, OverflowError) as exc:
                raise _fail(name, exc) from exc
            _check_claim(name, header, size)
        if opener is None and type(bar).__name__ == "_NoBar" and _plain_text(path):
            yield str(path)  # the engine reads a plain file itself, with its threads
            return
        with open(path, "rb") as raw:
            counted = CountingReader(raw, bar)
            if opener is None:
                yield counted if fmm is None else io.BufferedReader(_Chain([], counted), buffer_size=_CHUNK)
            else:
                with opener(counted, "rb") as stream:
                    try:
                        bounded = stream if fmm is None else _bounded(fmm, name, stream)
                    except _STREAM_ERRORS as exc:
                        raise _damaged(name, exc) from exc
                    yield bounded
    finally:
        bar.close()


def _plain_text(path) -> bool:
    """Whether the engine may read ``path`` itself: no NUL byte, empty or ending with a newline.

    Other files go through :class:`_Chain`, which refuses NUL bytes and
    adds the final newline.
    """
    last = b"\n"
    buffer = bytearray(max(min(os.path.getsize(path), _CHUNK * 16), 1))  # one buffer, no larger than the file
    with open(path, "rb") as f:
        while n := f.readinto(buffer):
            if buffer.find(b"\0", 0, n) >= 0:
                return False
            last = buffer[n - 1:n]
    return last == b"\n"


def _damaged(name, exc) -> FileFormatError:
    return FileFormatError(f"{name}: the compressed stream is damaged or truncated: {type(exc).__name__}: {exc}")


def mminfo(source):
    """The header of a Matrix Market file: ``(rows, cols, entries, format, field, symmetry)``.

    As ``scipy.io.mminfo``: ``format`` is ``"coordinate"`` or ``"array"``;
    ``entries`` is the number of lines of a coordinate file (before a
    symmetric file is expanded).

    Examples
    --------
    >>> import io, gpusparse as gs
    >>> text = b"%%MatrixMarket matrix coordinate real symmetric\\n3 3 2\\n1 1 1.0\\n3 1 2.0\\n"
    >>> gs.io.mminfo(io.BytesIO(text))
    (3, 3, 2, 'coordinate', 'real', 'symmetric')
    """
    fmm = _fmm()
    name = describe(source)
    compressed = is_path(source) and _opener(os.fspath(source)) is not None
    with _source(source, False) as src:
        try:
            header = fmm.read_header(src)
        except (ValueError, RuntimeError, OverflowError) as exc:
            raise _fail(name, exc) from exc
        except _STREAM_ERRORS as exc:
            if not compressed:
                raise
            raise _damaged(name, exc) from exc
    return header.nrows, header.ncols, header.nnz, header.format, header.field, header.symmetry


def mmread(source, device=None, format="coo", check=True, *, progress=None):
    """Read a Matrix Market file into a sparse array.

    Parameters
    ----------
    source : str, os.PathLike or binary file object
        A coordinate or array file; real, integer, complex or pattern;
        general, symmetric, skew-symmetric or hermitian (expanded to every
        entry). A path ending in ``.gz`` or ``.bz2`` is decompressed.
    device : {"cpu", "cuda", "cuda:N"}, optional
        Where to put the array (default: the CPU). The file is parsed into
        host memory and each component is copied to the device once; a
        conversion to ``format`` then runs there.
    format : {"coo", "csr", "csc"}
    check : bool, default True
        Validate the coordinates again after parsing (the engine already
        rejects indices outside the declared shape).
    progress : bool, optional
        Draw a tqdm progress bar of the bytes read. ``None`` (default): when
        tqdm is installed, the file has at least 256 MiB and stderr is a
        terminal.

    Returns
    -------
    COO, CSR or CSC
        Values float64 (real, pattern: ones), int64 (integer), uint64
        (fast_matrix_market's unsigned-integer) or complex128, as
        ``scipy.io.mmread``; fill value 0. An array file keeps the elements
        that differ from 0. A COO is not flagged coalesced.

    Raises
    ------
    FileFormatError
        A ``ValueError`` naming the file and the line at fault: a bad banner
        or header, a value that does not parse, an index out of range, more
        or fewer entries than the size line declares.

    Examples
    --------
    >>> import io, gpusparse as gs
    >>> text = b"%%MatrixMarket matrix coordinate real symmetric\\n3 3 2\\n1 1 1.0\\n3 1 2.0\\n"
    >>> x = gs.io.mmread(io.BytesIO(text))
    >>> x.todense()
    array([[1., 0., 2.],
           [0., 0., 0.],
           [2., 0., 0.]])
    >>> gs.io.mmread(io.BytesIO(b"%%MatrixMarket matrix coordinate real general\\n2 2 1\\n3 1 1.0\\n"))
    Traceback (most recent call last):
    ...
    gpusparse.io._common.FileFormatError: <BytesIO>: line 3: Row index out of bounds
    """
    from gpusparse.containers import COO
    from gpusparse.ops.convert import asformat
    from gpusparse.ops.creation import fromdense

    if not isinstance(format, str) or format.lower() not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, got {format!r}")
    fmm = _fmm()
    name = describe(source)
    compressed = is_path(source) and _opener(os.fspath(source)) is not None
    with _source(source, progress, fmm, name) as src:
        try:
            body, shape = fmm.read_array_or_coo(src)
        except (ValueError, RuntimeError, OverflowError) as exc:
            declared = None
            if is_path(source) and str(exc).startswith("Truncated"):
                with contextlib.suppress(Exception):
                    declared = mminfo(source)[2]
            raise _fail(name, exc, declared) from exc
        except _STREAM_ERRORS as exc:
            if not compressed:
                raise
            raise _damaged(name, exc) from exc
    if isinstance(body, np.ndarray):
        x = fromdense(np.ascontiguousarray(body), device="cpu")
    else:
        data, (row, col) = body
        coords = np.empty((2, data.shape[0]), dtype=np.int64)
        coords[0], coords[1] = row, col
        try:
            x = COO(coords, data, tuple(int(s) for s in shape), device="cpu", check=check)
        except (ValueError, IndexError) as exc:
            raise FileFormatError(f"{name}: {exc}") from exc
    x = place(x, device)
    if format.lower() == "coo":
        return x
    # the index pointer's size is the declared shape's, which no file size bounds
    require_index_pointer(name, x.shape, 0 if format.lower() == "csr" else 1, x.nnz, x.device)
    return asformat(x, format.lower())


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------

def _writer(fmm):
    """The engine's ``mmwrite``: SciPy's vendored build where there is one.

    SciPy >= 1.12 ships the same engine (identical output); its build
    formats numbers markedly faster than the fast_matrix_market 1.7 wheel
    (about 1.4x on 2**20 float64 entries), so writes go through it.
    """
    try:
        import scipy.io
        import scipy.io._fast_matrix_market  # noqa: F401 (present from SciPy 1.12)
    except ImportError:
        return fmm.mmwrite
    return scipy.io.mmwrite


def _write_empty(fmm, target, matrix, **args):
    """Write the header of a coordinate file without entries (the engine calls every empty body "real")."""
    fmm.write_header(target, fmm.header(shape=matrix.shape, nnz=0, field=args["field"] or "real",
                                        symmetry=args["symmetry"], comment=args["comment"]))


def _symmetry_of(x) -> str:
    """The strongest Matrix Market symmetry ``x`` has, through gpusparse's CSR and CSC conversions.

    The CSC of ``x`` read as CSR is the canonical CSR of ``x.T``, so ``x``
    is symmetric (skew-symmetric, hermitian) when the two structures agree
    and the values are equal (negated, conjugated). Explicit entries count
    as structure, so a matrix with an unmatched stored zero is "general".
    """
    if x.shape[0] != x.shape[1] or x.nnz == 0:
        return "general"
    a, b = x.tocsr(), x.tocsc()
    if not (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)):
        return "general"
    if np.array_equal(a.data, b.data):
        return "symmetric"
    if x.dtype.kind in "ifc":
        with np.errstate(over="ignore"):
            if np.array_equal(a.data, -b.data):
                return "skew-symmetric"
    if x.dtype.kind == "c" and np.array_equal(a.data, np.conj(b.data)):
        return "hermitian"
    return "general"


def _writable_values(x):
    """``x`` with values of a dtype the format has a field for (integers as int64)."""
    from gpusparse.ops.elementwise import astype

    kind, size = x.dtype.kind, x.dtype.itemsize
    if kind == "b" or kind == "i" and size < 8 or kind == "u" and size < 8:
        return astype(x, np.int64)
    if kind == "u" and (x.nnz == 0 or int(x.data.max()) <= np.iinfo(np.int64).max):
        return astype(x, np.int64)
    return x  # uint64 beyond int64: fast_matrix_market's "unsigned-integer" field


def _prepare(x, symmetry, field):
    """``(scipy matrix or ndarray, symmetry, field)`` ready for the engine; validates the arguments."""
    from gpusparse.containers import SparseArray
    from gpusparse.ops.interop import to_scipy
    from gpusparse.ops.shape import tril

    if field is not None and field not in _FIELDS:
        raise ValueError(f"field must be one of {_FIELDS} or None, got {field!r}")
    if symmetry is not None and symmetry not in _SYMMETRIES:
        raise ValueError(f"symmetry must be one of {_SYMMETRIES} or None, got {symmetry!r}")
    if isinstance(x, np.ndarray):
        if x.ndim != 2:
            raise ValueError(f"x must be 2-d for Matrix Market, got shape {x.shape}")
        return x, symmetry, field
    if not isinstance(x, SparseArray):
        raise TypeError(f"x must be a gpusparse COO, CSR or CSC array or a 2-d NumPy array, got {type(x).__name__}")
    if x.ndim != 2 or x.dense_dim:
        raise ValueError(f"x must be a 2-d array with no dense dimensions for Matrix Market, got shape {x.shape} "
                         f"with {x.dense_dim} dense dimension(s)")
    if np.asarray(x.fill_value).any():
        raise ValueError(f"Matrix Market has no fill value, but x has fill_value {x.fill_value!r}; "
                         f"write x - x.fill_value or store it with save_npz")
    x = _writable_values(host(x))
    if symmetry != "general":
        found = _symmetry_of(x)
        if symmetry is not None and found != symmetry and not (symmetry == "hermitian" and found == "symmetric"
                                                               and x.dtype.kind != "c"):
            raise ValueError(f"symmetry={symmetry!r}, but x is {found!r}; pass symmetry=None to detect it")
        symmetry = symmetry or found
    if symmetry != "general":  # the lower triangle (strictly lower for skew-symmetric) is what the file holds
        x = tril(x.tocoo().coalesce(), -1 if symmetry == "skew-symmetric" else 0)
    if field is None:  # named, so that an empty array keeps its field too
        field = {"i": "integer", "f": "real", "c": "complex"}.get(x.dtype.kind)
    return to_scipy(x), symmetry, field


def mmwrite(target, x, comment="", field=None, symmetry=None, precision=None, *, progress=None):
    """Write a 2-d array to a Matrix Market file.

    Parameters
    ----------
    target : str, os.PathLike or binary file object
        A path is written atomically (to a temporary file beside it, renamed
        once complete); one ending in ``.gz`` or ``.bz2`` is compressed.
    x : COO, CSR, CSC or numpy.ndarray
        A sparse array (any device; fill value 0, no dense dimensions) is
        written as a coordinate file, a dense NumPy array as an array file.
    comment : str
        Written after the banner, one ``%`` line per line of text.
    field : {"real", "complex", "integer", "pattern"}, optional
        Convert the values to this field; ``"pattern"`` writes the structure
        only. Default: from the dtype (bool and integers as ``integer``,
        uint64 beyond int64 as fast_matrix_market's ``unsigned-integer``).
    symmetry : {"general", "symmetric", "skew-symmetric", "hermitian"}, optional
        ``None`` (default) detects the strongest one ``x`` has (a CSR and a
        CSC conversion of ``x``; pass ``"general"`` to skip it on large
        arrays); another value is verified, and ``ValueError`` raised if
        ``x`` does not have it. A symmetric file holds the lower triangle.
    precision : int, optional
        Significant digits of floating-point values; default: the shortest
        text that reads back to the same value.
    progress : bool, optional
        A tqdm bar of the bytes written; ``None``: for arrays of at least
        2**24 entries when tqdm is installed and stderr is a terminal.

    Examples
    --------
    >>> import io, gpusparse as gs
    >>> x = gs.COO([[0, 1], [1, 0]], [2.5, 2.5], shape=(2, 2), device="cpu")
    >>> buffer = io.BytesIO()
    >>> gs.io.mmwrite(buffer, x)
    >>> print(buffer.getvalue().decode())
    %%MatrixMarket matrix coordinate real symmetric
    %
    2 2 1
    2 1 2.5
    <BLANKLINE>
    """
    fmm = _fmm()
    if not isinstance(comment, str):
        raise TypeError(f"comment must be a str, got {type(comment).__name__}")
    if precision is not None and (not isinstance(precision, (int, np.integer)) or precision < 1):
        raise ValueError(f"precision must be a positive int or None, got {precision!r}")
    matrix, symmetry, field = _prepare(x, symmetry, field)
    entries = matrix.size if isinstance(matrix, np.ndarray) else matrix.nnz
    args = dict(comment=comment, field=field, precision=precision, symmetry=symmetry)
    empty = entries == 0 and not isinstance(matrix, np.ndarray)
    write = functools.partial(_write_empty, fmm) if empty else _writer(fmm)
    if not is_path(target):
        write(target, matrix, **args)
        return
    path = os.fspath(target)
    opener = _opener(path)
    bar = progress_bar(progress, 16 * entries if progress is not None or entries >= 2**24 else 0,
                       f"writing {os.path.basename(str(path))}")
    try:
        with atomic_path(path, suffix=".tmp.mtx") as tmp:  # scipy.io.mmwrite appends .mtx to other names
            if opener is None and type(bar).__name__ == "_NoBar":
                write(tmp, matrix, **args)
                return
            with open(tmp, "wb") as raw:
                if opener is None:
                    write(CountingWriter(raw, bar), matrix, **args)
                else:
                    with opener(raw, "wb") as stream:
                        write(CountingWriter(stream, bar), matrix, **args)
    finally:
        bar.close()
