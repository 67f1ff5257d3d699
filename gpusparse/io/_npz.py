"""``.npz`` files in SciPy's and pydata sparse's layouts.

Two layouts exist and gpusparse reads and writes both:

* **SciPy** (``scipy.sparse.save_npz``): ``format`` (``b"csr"``,
  ``b"csc"``, ``b"coo"``), ``shape``, ``data`` and ``indptr``/``indices``
  (CSR/CSC), ``row``/``col`` (2-D COO) or ``coords`` (N-d COO, SciPy >=
  1.15), and ``_is_array`` for the ``*_array`` classes. It has no fill value.
* **pydata sparse** (``sparse.save_npz`` of a ``sparse.COO``): ``format``
  (``"coo"``), ``shape``, ``coords`` (``(ndim, nnz)``), ``data`` and
  ``fill_value``. ``sparse.load_npz`` marks what it reads sorted and
  duplicate-free without checking. SciPy reads this layout too (it takes
  ``coords`` for any number of dimensions, and ignores ``fill_value``).

:func:`save_npz` writes a 2-D CSR/CSC with fill value 0 and no dense
dimensions in SciPy's layout, and so a 2-D COO with fill value 0 that is
not coalesced (``row``/``col``: SciPy keeps duplicates, pydata could not).
Everything else -- a coalesced COO, N-d COO, any nonzero fill value (a
CSR/CSC with one is stored as its COO), hybrid arrays -- goes in pydata's
layout with ``_is_array``, which both libraries read (SciPy: when the fill
value is 0 and there are no dense dimensions). That layout holds coalesced
coordinates, since pydata's reader assumes them. Both readers
index only the keys they know, so gpusparse adds two of its own: the
``fill_value`` (also in SciPy's layout, so that its dtype survives) and
``gpusparse``, a JSON text with the format, the COO flags and the number of
dense dimensions.
"""

from __future__ import annotations

import json
import math
import os
import warnings
import zipfile
import zlib

import numpy as np

from gpusparse.io._common import (
    FileFormatError,
    as_index_array,
    atomic_path,
    describe,
    host,
    is_path,
    place,
    require_index_pointer,
)

__all__ = ["load_npz", "save_npz"]

_META_KEY = "gpusparse"
_META_VERSION = 1
_FOREIGN_FORMATS = ("bsr", "dia", "dok", "lil")
#: The most a deflate stream expands (1032:1): a member claiming more is damaged.
_DEFLATE_RATIO = 1032


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------

def _nodes(x) -> dict:
    """The arrays of the ``.npz`` file for ``x`` (on the host)."""
    from gpusparse.ops.convert import asformat

    meta = {"version": _META_VERSION, "format": x.format, "dense_dim": x.dense_dim}
    fill = np.asarray(x.fill_value, dtype=x.dtype)
    scipy_only = x.ndim == 2 and x.dense_dim == 0 and not fill.any() and not (
        x.format == "coo" and x.is_coalesced())
    if scipy_only:
        nodes = {"format": np.bytes_(x.format.encode("ascii")), "shape": np.asarray(x.shape, dtype=np.int64)}
        if x.format == "coo":
            nodes.update(row=x.coords[0], col=x.coords[1])
            meta.update(sorted=x.sorted, unique=x.unique)
        else:
            nodes.update(indices=x.indices, indptr=x.indptr)
    else:  # pydata sparse's COO layout, which SciPy reads too: coalesced, as pydata's reader assumes
        if x.format != "coo":
            meta["index_dtype"] = x.index_dtype.name
        coo = asformat(x, "coo").coalesce()
        nodes = {"format": np.str_("coo"), "shape": np.asarray(x.shape, dtype=np.int64), "coords": coo.coords}
        meta.update(sorted=True, unique=True)
        x = coo
    nodes.update(data=x.data, fill_value=fill, _is_array=np.True_)
    nodes[_META_KEY] = np.str_(json.dumps(meta, sort_keys=True))
    return nodes


def save_npz(file, x, compressed=True):
    """Write the sparse array ``x`` to an ``.npz`` file SciPy or pydata sparse can read.

    Parameters
    ----------
    file : str, os.PathLike or binary file object
        Where to write. A path gets ``.npz`` appended unless it ends with
        it (NumPy's rule) and is written atomically: to a temporary file in
        the same directory, renamed over the target once complete, so a
        failed write leaves no partial file.
    x : COO, CSR or CSC
        Any device (a CUDA array is copied to the host once per component),
        any dtype, fill value, number of dimensions and dense dimensions.
    compressed : bool, default True
        Deflate the arrays (``numpy.savez_compressed``); ``False`` stores
        them as they are, which is faster to write and read.

    Notes
    -----
    A 2-D CSR/CSC (or uncoalesced COO) with fill value 0 and no dense
    dimensions is stored in SciPy's layout (``scipy.sparse.load_npz`` reads
    it as ``csr_array``, ``csc_array`` or ``coo_array``); everything else in
    pydata sparse's COO layout, which ``sparse.load_npz`` reads, and
    ``scipy.sparse.load_npz`` too when the fill value is 0 and there are no
    dense dimensions. The format, dtype, fill value, index dtype and COO flags come
    back from :func:`load_npz`; the pydata layout stores coalesced
    coordinates, so an uncoalesced N-d COO comes back coalesced (same
    values).

    Examples
    --------
    >>> import io, gpusparse as gs
    >>> x = gs.CSR([0, 1, 2], [1, 0], [1.0, 2.0], shape=(2, 2), device="cpu")
    >>> buffer = io.BytesIO()
    >>> gs.save_npz(buffer, x)
    >>> _ = buffer.seek(0)
    >>> gs.load_npz(buffer).todense()
    array([[0., 1.],
           [2., 0.]])
    """
    from gpusparse.containers import SparseArray

    if not isinstance(x, SparseArray):
        raise TypeError(f"x must be a gpusparse COO, CSR or CSC array, got {type(x).__name__}")
    nodes = _nodes(host(x))
    save = np.savez_compressed if compressed else np.savez
    if not is_path(file):
        save(file, **nodes)
        return
    path = os.fspath(file)
    if not str(path).endswith(".npz"):
        path = f"{path}.npz"
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        save(f, **nodes)


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------

def _check_code_points(value, field) -> None:
    """FileFormatError unless every UTF-32 unit of the text array ``value`` is a code point (at most U+10FFFF).

    NumPy turns a larger unit into a ``str`` that Python cannot hold: the
    next operation on it (``lower()``, ``repr()``, a comparison) raises
    ``SystemError`` or worse, so the units are checked before any of them
    becomes a Python string.
    """
    order = value.dtype.byteorder if value.dtype.byteorder in "<>" else "="
    units = np.frombuffer(value.tobytes(), dtype=np.dtype(np.uint32).newbyteorder(order))
    if units.size and int(units.max()) > 0x10FFFF:
        raise FileFormatError(f"{field} is not valid text: UTF-32 unit {int(units.max()):#x} is beyond U+10FFFF")


class _Archive:
    """The arrays of an open ``.npz`` with errors naming the file and the key."""

    def __init__(self, npz, name):
        self.npz, self.name = npz, name

    def __contains__(self, key):
        return key in self.npz.files

    def _check_member(self, key):
        """Check that the member of ``key`` holds what its ``.npy`` header claims, before it is read.

        NumPy allocates the array its header describes and then reads into
        it, so a header claiming 10**12 elements in a small archive would
        allocate terabytes; a deflated member cannot expand more than
        :data:`_DEFLATE_RATIO` times either.
        """
        files = getattr(self.npz, "_files", None)
        member = files[key] if isinstance(files, dict) else (
            key if key in self.npz.zip.namelist() else f"{key}.npy")
        info = self.npz.zip.getinfo(member)
        field = f"{self.name}: field {key!r}"
        if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > _DEFLATE_RATIO * info.compress_size + 1024:
            raise FileFormatError(f"{field} claims {info.file_size} bytes, more than its {info.compress_size} "
                                  f"deflated bytes can hold")
        with self.npz.zip.open(info) as stream:
            if stream.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
                raise FileFormatError(f"{field} is not a NumPy array (its member has no .npy header)")
            stream.seek(0)
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
            else:  # 3.0 (UTF-8 field names), read by NumPy's own parser where it offers one
                impl = getattr(np.lib, "_format_impl", np.lib.format)
                parse = getattr(impl, "_read_array_header", None)
                if parse is None:
                    raise FileFormatError(f"{field}: .npy format version {version} is not read")
                shape, _, dtype = parse(stream, version)
            start = stream.tell()
        if not dtype.hasobject and math.prod(shape) * dtype.itemsize > info.file_size - start:
            raise FileFormatError(f"{field}: its .npy header claims shape {shape} of {dtype} "
                                  f"({math.prod(shape) * dtype.itemsize} bytes), but the member holds "
                                  f"{info.file_size - start} bytes of data")

    def get(self, key):
        if key not in self:
            raise FileFormatError(f"{self.name}: missing field {key!r} (fields: {', '.join(self.npz.files)})")
        try:
            self._check_member(key)
        except FileFormatError:
            raise
        except Exception as exc:  # a damaged member or .npy header: NumPy's parser raises what its tokenizer does
            raise FileFormatError(f"{self.name}: field {key!r} cannot be read: {type(exc).__name__}: {exc}") from exc
        try:
            value = self.npz[key]
        except Exception as exc:  # a damaged member, an object array refused without pickle
            raise FileFormatError(f"{self.name}: field {key!r} cannot be read: {exc}") from exc
        if not isinstance(value, np.ndarray):  # NumPy hands back the raw bytes of a member without .npy header
            raise FileFormatError(f"{self.name}: field {key!r} is not a NumPy array (its member has no .npy header)")
        if value.dtype.kind == "U":
            _check_code_points(value, f"{self.name}: field {key!r}")
        return value

    def text(self, key) -> str:
        value = self.get(key)
        if value.ndim != 0 or value.dtype.kind not in "SU":
            raise FileFormatError(f"{self.name}: field {key!r} must be a text scalar, got {value.dtype} {value.shape}")
        try:
            value = value.item()
        except (SystemError, ValueError, OverflowError) as exc:  # UTF-32 code units beyond U+10FFFF
            raise FileFormatError(f"{self.name}: field {key!r} is not valid text: {exc}") from exc
        try:
            return value.decode("ascii") if isinstance(value, bytes) else value
        except UnicodeDecodeError as exc:
            raise FileFormatError(f"{self.name}: field {key!r} is not ASCII text: {value!r}") from exc

    def index(self, key):
        """Integer array ``key`` of indices; unsigned ones as int64 once every value is known to fit."""
        value = self.get(key)
        try:
            return as_index_array(value)
        except ValueError as exc:
            raise FileFormatError(f"{self.name}: field {key!r}: {exc}") from exc

    def shape(self) -> tuple:
        shape = self.get("shape")
        if shape.ndim != 1 or shape.dtype.kind not in "iu" or (shape < 0).any():
            raise FileFormatError(f"{self.name}: field 'shape' must be non-negative integers, got {shape!r}")
        return tuple(int(s) for s in shape)


def _meta(archive) -> dict:
    if _META_KEY not in archive:
        return {}
    try:
        meta = json.loads(archive.text(_META_KEY))
    except json.JSONDecodeError as exc:
        raise FileFormatError(f"{archive.name}: field {_META_KEY!r} is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") not in ("coo", "csr", "csc"):
        raise FileFormatError(f"{archive.name}: field {_META_KEY!r} has no valid 'format': {meta!r}")
    return meta


def _with_context(name, what, build):
    """``build()``, with a constructor's ValueError/IndexError re-raised naming the file."""
    try:
        return build()
    except (ValueError, IndexError, TypeError) as exc:
        raise FileFormatError(f"{name}: {what}: {exc}") from exc


def _fill(archive, dtype):
    if "fill_value" not in archive:
        return None
    fill = archive.get("fill_value")
    if fill.size != 1:
        raise FileFormatError(f"{archive.name}: field 'fill_value' must hold one value, got shape {fill.shape}")
    value = fill.reshape(())[()]
    if fill.dtype.kind not in "biufc":
        raise FileFormatError(f"{archive.name}: field 'fill_value' must be a number, got {value.item()!r} "
                              f"(dtype {fill.dtype})")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cast = np.asarray(value).astype(dtype)[()]
        kept = bool(cast == value) or bool(np.isnan(cast)) and bool(np.isnan(value))
    if not kept:
        raise FileFormatError(f"{archive.name}: field 'fill_value' {value.item()!r} is not a value of the dtype "
                              f"{dtype} of field 'data'")
    return cast


def _read(archive, check):
    from gpusparse.containers import COO, CSC, CSR
    from gpusparse.ops.convert import coo_to_compressed

    name = archive.name
    fmt = archive.text("format").lower()
    meta = _meta(archive)
    shape = archive.shape()
    data = archive.get("data")
    fill = _fill(archive, data.dtype)
    if fmt in ("csr", "csc", "gcxs") and "compressed_axes" in archive:  # pydata's GCXS/CSR/CSC
        axes = archive.get("compressed_axes")
        if axes.ndim != 1 or axes.dtype.kind not in "iu":
            raise FileFormatError(f"{name}: field 'compressed_axes' must be a 1-d integer array, got {axes.dtype} "
                                  f"{axes.shape}")
        axes = tuple(int(a) for a in axes)
        if len(shape) != 2 or axes not in ((0,), (1,)):
            raise FileFormatError(
                f"{name}: a pydata GCXS array of shape {shape} compressed along {axes} has no "
                f"gpusparse format; only 2-d CSR (axes (0,)) and CSC (axes (1,)) are read"
            )
        fmt = "csr" if axes == (0,) else "csc"
    if fmt in ("csr", "csc"):
        cls = CSR if fmt == "csr" else CSC
        indptr, indices = archive.index("indptr"), archive.index("indices")
        return _with_context(name, f"fields 'indptr'/'indices' of a {fmt.upper()} array",
                             lambda: cls(indptr, indices, data, shape, fill_value=fill, device="cpu", check=check))
    if fmt != "coo":
        if fmt in _FOREIGN_FORMATS:
            raise FileFormatError(
                f"{name}: field 'format' is {fmt!r}, which gpusparse does not store; read it with "
                f"scipy.sparse.load_npz and convert with gpusparse.from_scipy(m.tocsr())"
            )
        raise FileFormatError(f"{name}: field 'format' is {fmt!r}; expected 'coo', 'csr' or 'csc'")
    if "coords" in archive:
        coords = archive.index("coords")
    elif "row" in archive and "col" in archive:
        row, col = archive.index("row"), archive.index("col")
        if row.shape != col.shape or row.ndim != 1:
            raise FileFormatError(f"{name}: fields 'row' and 'col' must be 1-d of one length, got {row.shape} and {col.shape}")
        coords = np.stack((row, col)) if row.size else np.zeros((2, 0), dtype=np.int64)
    else:
        raise FileFormatError(f"{name}: a COO array needs field 'coords' or fields 'row' and 'col'")
    if coords.ndim != 2:
        raise FileFormatError(f"{name}: field 'coords' must be 2-d (ndim, nnz), got shape {coords.shape}")
    x = _with_context(name, "fields 'coords'/'data' of a COO array",
                      lambda: COO(coords, data, shape, fill_value=fill, device="cpu", check=check))
    sorted_, unique = bool(meta.get("sorted", False)), bool(meta.get("unique", False))
    if check and not sorted_:
        unique = False  # check() verifies "sorted" and "coalesced" claims only: keep the flags honest
    if sorted_ or unique:
        x = COO._from_parts(x._coords, x._data, x.shape, x.fill_value, x.device, sorted=sorted_, unique=unique)
        if check:
            _with_context(name, f"field {_META_KEY!r} claims sorted={sorted_}, unique={unique}", x.check)
    target = meta.get("format", "coo")
    if target == "coo":
        return x
    index_dtype = meta.get("index_dtype")
    if index_dtype not in (None, "int32", "int64"):
        raise FileFormatError(f"{name}: field {_META_KEY!r} has index_dtype {index_dtype!r}; expected int32 or int64")
    cls = CSR if target == "csr" else CSC
    if x.sparse_dim == 2:  # else coo_to_compressed refuses it; the file holds no indptr: its size is the shape's
        require_index_pointer(name, x.shape, cls._major_axis, x.nnz, x.device, index_dtype)
    return _with_context(name, f"field {_META_KEY!r} claims format {target!r}",
                         lambda: coo_to_compressed(x, cls, index_dtype and np.dtype(index_dtype)))


def load_npz(file, device=None, check=True):
    """Read a sparse array from an ``.npz`` file of gpusparse, SciPy or pydata sparse.

    Parameters
    ----------
    file : str, os.PathLike or binary file object
        A file written by :func:`save_npz`, ``scipy.sparse.save_npz`` (CSR,
        CSC or COO; ``*_array`` or ``*_matrix``; 2-D ``row``/``col`` or N-d
        ``coords``) or ``sparse.save_npz`` (COO, and 2-D GCXS compressed
        along one axis).
    device : {"cpu", "cuda", "cuda:N"}, optional
        Where to put the array (default: the CPU). The file is read into
        host memory and each component is copied to the device once.
    check : bool, default True
        Validate the components (indices in bounds, ``indptr`` monotone,
        the order the stored flags claim) as the constructors do.

    Returns
    -------
    COO, CSR or CSC
        The format, dtype, fill value and COO flags stored by
        :func:`save_npz`; for other writers' files the format of the file,
        fill value 0 unless the file has ``fill_value``, and COO flags False.

    Raises
    ------
    FileFormatError
        A ``ValueError`` naming the file and the field at fault: not an
        ``.npz``, a missing or malformed field, indices out of range.

    Examples
    --------
    >>> import io, numpy as np, scipy.sparse as sp, gpusparse as gs
    >>> buffer = io.BytesIO()
    >>> sp.save_npz(buffer, sp.coo_array(np.array([[0, 3], [4, 0]])))
    >>> _ = buffer.seek(0)
    >>> x = gs.load_npz(buffer)
    >>> x.format, x.todense()
    ('coo', array([[0, 3],
           [4, 0]]))
    """
    name = describe(file)
    try:
        npz = np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise FileFormatError(f"{name}: not an .npz archive: {exc}") from exc
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise FileFormatError(f"{name}: not an .npz archive (it holds a single array)")
    with npz:
        try:
            x = _read(_Archive(npz, name), check)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise FileFormatError(f"{name}: the archive is damaged or truncated: {exc}") from exc
    return place(x, device)
