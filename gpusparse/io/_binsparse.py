"""binsparse files in HDF5, through h5py.

The `binsparse specification <https://graphblas.org/binsparse-specification/>`_
stores a sparse array as named binary arrays plus a JSON descriptor. In HDF5
the descriptor is the text attribute ``binsparse`` of a group, holding
``{"binsparse": {"version", "format", "shape", "number_of_stored_values",
"data_types", ["fill"], ["custom"]}}``, and every array is a dataset of that
group; this is also what the reference implementation (the ``binsparse``
package) reads and writes.

========  =========================  =========================================
gpusparse binsparse format           arrays
========  =========================  =========================================
CSR       ``CSR``                    ``pointers_to_1``, ``indices_1``, ``values``
CSC       ``CSC``                    the same, of the transpose
2-D COO   ``COO``                    ``indices_0``, ``indices_1``, ``values``
N-d COO   ``custom``: one sparse     ``indices_0`` ... ``indices_{n-1}``,
          level of rank n            ``values``
hybrid    the level above, then a    ``values`` holds ``nnz * prod(dense)``
          dense level of rank d      elements, C order
========  =========================  =========================================

Values take the spec's types: ``bint8`` for bool, ``int8`` ... ``uint64``,
``float32``/``float64`` and ``complex[float32]``/``complex[float64]``; ``iso[...]``
values are read (one value for every entry). A nonzero fill value is stored
as ``"fill": true`` and a one-element ``fill_value`` array. binsparse's COO
holds sorted, unique coordinates (the reference implementation's readers
assume them), so an uncoalesced COO is coalesced before it is written, and a
COO read back is flagged coalesced (verified when ``check=True``).
Zarr and ``.npz`` containers of the reference implementation are not read.
"""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np

from gpusparse.io._common import (
    FileFormatError,
    as_index_array,
    atomic_path,
    describe,
    engine,
    host,
    is_path,
    place,
)
from gpusparse.io._hdf5_heaps import check_global_heaps

__all__ = ["read_binsparse", "write_binsparse"]

_VERSION = "0.1.0"
_ATTRIBUTE = "binsparse"
_TYPES = {
    "bint8": np.dtype(np.bool_),
    **{name: np.dtype(name) for name in (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")},
}


def _h5py():
    return engine("h5py", "binsparse input/output")


# --------------------------------------------------------------------------
# descriptor and buffers (the array-API interchange draft's shape of the data)
# --------------------------------------------------------------------------

def _type_name(arr: np.ndarray) -> "tuple[np.ndarray, str]":
    """``(stored array, binsparse type)`` for a NumPy array."""
    if arr.dtype == np.bool_:
        return arr.view(np.uint8), "bint8"
    if arr.dtype.kind == "c":
        part = np.float32 if arr.dtype == np.complex64 else np.float64
        return np.ascontiguousarray(arr).view(part), f"complex[{np.dtype(part).name}]"
    return arr, arr.dtype.name


def _levels(sparse_rank, dense_dim, compressed):
    """The custom level tree of a gpusparse array."""
    level = {"level_desc": "element"}
    if dense_dim:
        level = {"level_desc": "dense", "rank": dense_dim, "level": level}
    if compressed:
        return {"level_desc": "dense", "rank": 1, "level": {"level_desc": "sparse", "rank": 1, "level": level}}
    return {"level_desc": "sparse", "rank": sparse_rank, "level": level}


def to_binsparse(x) -> "tuple[dict, dict]":
    """The binsparse descriptor and named arrays of ``x`` (on the host).

    Returns ``(descriptor, arrays)``: ``descriptor`` is the content of the
    ``binsparse`` namespace (``data_types`` included), ``arrays`` maps each
    name to a NumPy array in the stored type.
    """
    x = host(x)
    if x.sparse_dim == 0:
        raise ValueError(f"binsparse has no level for an array without sparse dimensions (x has shape {x.shape} "
                         f"and sparse_dim 0); store a dense array with h5py, or make a dimension sparse")
    if x.format == "coo" and not x.is_coalesced():
        x = x.coalesce()
    arrays = {}
    if x.format == "coo":
        for i in range(x.sparse_dim):
            arrays[f"indices_{i}"] = x.coords[i]
    else:
        arrays.update(pointers_to_1=x.indptr, indices_1=x.indices)
    arrays["values"] = x.data.reshape(-1)
    descriptor = {
        "version": _VERSION,
        "shape": list(x.shape),  # the logical shape; a CSC's arrays are those of its transpose
        "number_of_stored_values": int(arrays["values"].size),  # every value, dense blocks included
    }
    if x.dense_dim == 0 and x.format in ("csr", "csc"):
        descriptor["format"] = x.format.upper()
    elif x.dense_dim == 0 and x.format == "coo" and x.ndim == 2:
        descriptor["format"] = "COO"
    else:
        descriptor["format"] = "custom"
        descriptor["custom"] = {"level": _levels(x.sparse_dim, x.dense_dim, x.format != "coo")}
        if x.format == "csc":
            descriptor["custom"]["transpose"] = [1, 0, *range(2, x.ndim)]
    fill = np.asarray(x.fill_value, dtype=x.dtype)
    if fill.any():
        descriptor["fill"] = True
        arrays["fill_value"] = fill.reshape(1)
    stored, types = {}, {}
    for key, arr in arrays.items():
        stored[key], types[key] = _type_name(np.ascontiguousarray(arr))
    descriptor["data_types"] = types
    return descriptor, stored


def _layout(name, key, declared):
    """``(stored element dtype, parts per value, iso)`` of a buffer of binsparse type ``declared``."""
    if not isinstance(declared, str):
        raise FileFormatError(f"{name}: field 'data_types.{key}' is {declared!r}, not a binsparse type")
    iso = re.fullmatch(r"iso\[(.*)\]", declared)
    if iso:
        dtype, parts, inner_iso = _layout(name, key, iso.group(1))
        if inner_iso:
            raise FileFormatError(f"{name}: field 'data_types.{key}' is {declared!r}, not a binsparse type")
        return dtype, parts, True
    cplx = re.fullmatch(r"complex\[(float32|float64)\]", declared)
    if cplx:
        return np.dtype(cplx.group(1)), 2, False
    if declared not in _TYPES:
        raise FileFormatError(f"{name}: field 'data_types.{key}' is {declared!r}, not a binsparse type")
    return _TYPES[declared], 1, False


def _check_stored(name, key, declared, shape, dtype, length):
    """FileFormatError unless a dataset of ``shape`` and ``dtype`` holds ``length`` values of type ``declared``.

    Checked from the dataset's metadata, before a byte is read: one
    dimension, the length the descriptor implies (``iso`` types: one value;
    complex types: two parts per value) and a stored dtype that converts to
    the declared type without changing a value.
    """
    target, parts, iso = _layout(name, key, declared)
    want = parts * (1 if iso else length)
    if len(shape) != 1 or shape[0] != want:
        raise FileFormatError(f"{name}: dataset {key!r} has shape {tuple(shape)}; the descriptor implies ({want},)"
                              f" ({'one value' if iso else f'{length} values'} of type {declared})")
    dtype = np.dtype(dtype)
    if target == np.bool_:
        fits = dtype.kind in "biu" and dtype.itemsize == 1
    else:
        fits = dtype.kind in "biuf" and np.can_cast(dtype, target, "safe")
    if not fits:
        raise FileFormatError(f"{name}: dataset {key!r} stores {dtype}, which is not the declared type {declared}")
    return target, parts, iso


def _decode(name, key, declared, raw, expected):
    """The NumPy array of buffer ``key`` (checked by :func:`_check_stored`) stored as ``raw``."""
    target, parts, iso = _layout(name, key, declared)
    arr = np.asarray(raw)
    if target == np.bool_:
        arr = arr.astype(np.uint8, copy=False).view(np.bool_) if arr.dtype.kind in "iu" else arr.astype(np.bool_)
        if arr.view(np.uint8).max(initial=0) > 1:
            raise FileFormatError(f"{name}: dataset {key!r} of type bint8 holds values other than 0 and 1")
    else:
        arr = arr.astype(target, copy=False)
    if parts == 2:
        arr = np.ascontiguousarray(arr).view(np.complex64 if target == np.float32 else np.complex128)
    return np.full(expected, arr[0], dtype=arr.dtype) if iso else arr


def _parse_levels(name, level, ndim):
    """``(format, sparse_dim, dense_dim)`` of a custom level tree gpusparse has a container for."""
    def desc(node, what):
        if not isinstance(node, dict) or "level_desc" not in node:
            raise FileFormatError(f"{name}: field 'custom.level' has no 'level_desc' at {what}")
        return node["level_desc"], node.get("rank"), node.get("level")

    kind, rank, child = desc(level, "the root")
    if kind == "dense" and rank == 1:
        kind2, rank2, child2 = desc(child, "level 2")
        if kind2 != "sparse" or rank2 != 1:
            raise FileFormatError(f"{name}: only a dense level of rank 1 over a sparse level of rank 1 (CSR) "
                                  f"is read, got {level!r}")
        fmt, sparse_rank, tail = "csr", 2, child2
    elif kind == "sparse" and isinstance(rank, int) and rank >= 1:
        fmt, sparse_rank, tail = "coo", rank, child
    else:
        raise FileFormatError(f"{name}: field 'custom.level' {level!r} has no gpusparse format")
    kind, rank, child = desc(tail, "the values")
    dense_dim = 0
    if kind == "dense":
        dense_dim = rank if isinstance(rank, int) and rank >= 1 else -1
        kind, _, _ = desc(child, "the values")
    if kind != "element" or dense_dim < 0 or sparse_rank + dense_dim != ndim:
        raise FileFormatError(f"{name}: field 'custom.level' {level!r} has no gpusparse format for {ndim} dims")
    return fmt, sparse_rank, dense_dim


def from_binsparse(descriptor, read, name="<binsparse>", check=True, inspect=None):
    """The gpusparse array (on the host) of a binsparse ``descriptor``.

    ``read(key)`` returns a stored array; ``inspect(key)`` its
    ``(shape, dtype)`` without reading it (default: read it). Every
    buffer's shape and dtype is checked against the descriptor and against
    the other buffers before any buffer is read, so a descriptor or a
    dataset claiming more than the file holds is refused before it costs
    memory.
    """
    from gpusparse.containers import COO, CSC, CSR

    if inspect is None:
        def inspect(key):
            arr = np.asarray(read(key))
            return arr.shape, arr.dtype

    for key in ("version", "format", "shape", "number_of_stored_values", "data_types"):
        if key not in descriptor:
            raise FileFormatError(f"{name}: the descriptor has no field {key!r}")
    if not str(descriptor["version"]).startswith("0."):
        raise FileFormatError(f"{name}: field 'version' is {descriptor['version']!r}; version 0.x is read")
    shape = descriptor["shape"]
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise FileFormatError(f"{name}: field 'shape' must be a list of non-negative ints, got {shape!r}")
    nnz = descriptor["number_of_stored_values"]
    if type(nnz) is not int or nnz < 0:
        raise FileFormatError(f"{name}: field 'number_of_stored_values' must be a non-negative int, got {nnz!r}")
    types = descriptor["data_types"]
    if not isinstance(types, dict):
        raise FileFormatError(f"{name}: field 'data_types' must be an object")
    fill_flag = descriptor.get("fill", False)
    if not isinstance(fill_flag, bool):
        raise FileFormatError(f"{name}: field 'fill' must be true or false, got {fill_flag!r}")

    def declared(key):
        if key not in types:
            raise FileFormatError(f"{name}: field 'data_types' has no entry for {key!r}")
        return types[key]

    def length(key):
        """The number of values dataset ``key`` holds, from its metadata (iso and complex types unfolded)."""
        stored_shape, _ = inspect(key)
        _, parts, iso = _layout(name, key, declared(key))
        if len(stored_shape) != 1 or iso:
            return None
        return stored_shape[0] // parts

    fmt, transpose = descriptor["format"], None
    ndim = len(shape)
    if fmt in ("CSR", "CSC") and ndim == 2:
        fmt, sparse_dim, dense_dim = fmt.lower(), 2, 0
    elif fmt in ("COO", "COOR") and ndim == 2 or fmt == "CVEC" and ndim == 1:
        fmt, sparse_dim, dense_dim = "coo", ndim, 0
    elif fmt == "custom":
        custom = descriptor.get("custom")
        if not isinstance(custom, dict) or "level" not in custom:
            raise FileFormatError(f"{name}: format 'custom' needs field 'custom.level'")
        fmt, sparse_dim, dense_dim = _parse_levels(name, custom["level"], ndim)
        transpose = custom.get("transpose")
        if transpose is not None:
            if not isinstance(transpose, list) or not all(type(t) is int for t in transpose):
                raise FileFormatError(f"{name}: field 'custom.transpose' must be a list of ints, got {transpose!r}")
            if fmt == "csr" and transpose == [1, 0, *range(2, ndim)]:
                fmt = "csc"
            elif transpose != list(range(ndim)):
                raise FileFormatError(f"{name}: field 'custom.transpose' {transpose!r} is not read for this level tree")
    else:
        raise FileFormatError(f"{name}: field 'format' is {fmt!r}; CSR, CSC, COO, COOR, CVEC and custom "
                              f"sparse levels are read")
    dense_shape = tuple(shape[sparse_dim:])
    block = math.prod(dense_shape)
    index_keys = ["pointers_to_1", "indices_1"] if fmt in ("csr", "csc") else [f"indices_{i}" for i in range(sparse_dim)]
    entries = length(index_keys[-1])
    if entries is None:
        entries = -1  # not 1-d: _check_stored names the dataset below
    expected = {key: entries for key in index_keys}
    if fmt in ("csr", "csc"):
        expected["pointers_to_1"] = shape[0 if fmt == "csr" else 1] + 1
    if entries >= 0 and entries * block != nnz:
        raise FileFormatError(f"{name}: field 'number_of_stored_values' is {nnz}, but dataset {index_keys[-1]!r} "
                              f"holds {entries} entries of {block} values each")
    expected["values"] = nnz
    if fill_flag:
        expected["fill_value"] = 1
    layouts = {}
    for key, want in expected.items():  # every dataset checked before any is read
        type_name = declared(key)
        stored_shape, stored_dtype = inspect(key)
        layouts[key] = _check_stored(name, key, type_name, stored_shape, stored_dtype, want)
        if key in index_keys and layouts[key][0].kind not in "iu":
            raise FileFormatError(f"{name}: field 'data_types.{key}' is {types[key]!r}; indices must be integers")

    def buffer(key):
        arr = _decode(name, key, types[key], read(key), expected[key])
        if key in index_keys:
            try:
                arr = as_index_array(arr)
            except ValueError as exc:
                raise FileFormatError(f"{name}: dataset {key!r}: {exc}") from exc
        return arr

    if fmt in ("csr", "csc"):
        indptr, indices = buffer("pointers_to_1"), buffer("indices_1")
    else:
        rows = [buffer(key) for key in index_keys]
    values = buffer("values").reshape((entries, *dense_shape))
    fill = buffer("fill_value").reshape(())[()] if fill_flag else None
    try:
        if fmt in ("csr", "csc"):
            cls = CSR if fmt == "csr" else CSC
            return cls(indptr, indices, values, tuple(shape), fill_value=fill, device="cpu", check=check)
        coords = np.stack([r.astype(np.int64, copy=False) for r in rows])
        x = COO(coords, values, tuple(shape), fill_value=fill, device="cpu", check=check)
        x = COO._from_parts(x._coords, x._data, x.shape, x.fill_value, x.device, sorted=True, unique=True)
        if check:
            x.check()
        return x
    except (ValueError, IndexError, TypeError) as exc:
        if isinstance(exc, FileFormatError):
            raise
        raise FileFormatError(f"{name}: the {fmt.upper()} arrays are not valid: {exc}") from exc


# --------------------------------------------------------------------------
# HDF5
# --------------------------------------------------------------------------

#: The most a deflate stream expands (1032:1); no dataset filter gpusparse writes expands more.
_FILTER_RATIO = 1032


def _check_storage(h5py, where, key, ds):
    """FileFormatError unless dataset ``ds`` has storage for every byte its shape claims.

    HDF5 lets a small file declare a dataset of any size whose storage was
    never written (it reads as the fill value), or whose chunks expand far
    beyond the file; reading such a dataset would allocate what the claim
    says. The claim is checked against the storage the file has for it:
    all of it for unfiltered data, a fraction no deflate stream can beat for
    filtered chunks, and every chunk present.
    """
    if ds.dtype.itemsize == 0 or ds.dtype.kind not in "biuf":
        return  # _check_stored refuses it before it is read
    claimed = ds.size * ds.dtype.itemsize
    if claimed == 0:
        return
    plist = ds.id.get_create_plist()
    layout = plist.get_layout()
    if layout not in (h5py.h5d.CONTIGUOUS, h5py.h5d.CHUNKED, h5py.h5d.COMPACT) or plist.get_external_count():
        raise FileFormatError(f"{where}: dataset {key!r} keeps its data outside the file (a virtual or external "
                              f"dataset), which is not read")
    stored = ds.id.get_storage_size()
    filtered = layout == h5py.h5d.CHUNKED and plist.get_nfilters() > 0
    if layout == h5py.h5d.CHUNKED:
        chunks = math.prod(-(-n // c) for n, c in zip(ds.shape, ds.chunks))
        if ds.id.get_num_chunks() != chunks:
            raise FileFormatError(f"{where}: dataset {key!r} has {ds.id.get_num_chunks()} of its {chunks} chunks "
                                  f"in the file")
    least = -(-claimed // _FILTER_RATIO) if filtered else claimed
    if stored < least:
        raise FileFormatError(f"{where}: dataset {key!r} claims {ds.shape} values of {ds.dtype} ({claimed} bytes), "
                              f"but the file stores {stored} bytes of it")


def read_binsparse(path, dataset=None, device=None, *, check=True):
    """Read a sparse array from a binsparse HDF5 file.

    Parameters
    ----------
    path : str, os.PathLike or h5py file object
        A file written by :func:`write_binsparse` or by the binsparse
        reference implementation (``binsparse.save_binsparse``).
    dataset : str, optional
        The HDF5 group holding the array; default the file's root group.
    device : {"cpu", "cuda", "cuda:N"}, optional
        Where to put the array (default: the CPU); the arrays are read into
        host memory and each is copied to the device once.
    check : bool, default True
        Validate indices and the sorted, unique order binsparse's COO has.

    Returns
    -------
    COO, CSR or CSC
        With the stored value and index types and fill value.

    Raises
    ------
    FileFormatError
        A ``ValueError`` naming the file and the field at fault.

    Examples
    --------
    >>> import os, tempfile, gpusparse as gs
    >>> x = gs.CSR([0, 1, 2], [1, 0], [1.0, 2.0], shape=(2, 2), device="cpu")
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> gs.io.write_binsparse(path, x)
    >>> y = gs.io.read_binsparse(path)
    >>> y.format, y.todense()
    ('csr', array([[0., 1.],
           [2., 0.]]))
    """
    h5py = _h5py()
    name = describe(getattr(path, "filename", path))
    on_disk = os.fspath(path) if is_path(path) else getattr(path, "filename", None)
    if isinstance(on_disk, str) and os.path.isfile(on_disk):
        check_global_heaps(on_disk, name)
    try:
        f = h5py.File(path, "r") if not isinstance(path, h5py.Group) else None
    except FileNotFoundError:
        raise
    except OSError as exc:
        if is_path(path) and not os.path.exists(os.fspath(path)):
            raise
        raise FileFormatError(f"{name}: not an HDF5 file: {exc}") from exc
    try:
        root = f if f is not None else path
        where = name if dataset is None else f"{name}[{dataset}]"
        if dataset is not None:
            if dataset not in root or not isinstance(root[dataset], h5py.Group):
                raise FileFormatError(f"{name}: no group {dataset!r}")
            root = root[dataset]
        if _ATTRIBUTE not in root.attrs:
            raise FileFormatError(f"{where}: no attribute {_ATTRIBUTE!r} (not a binsparse group)")
        try:
            wrapped = json.loads(root.attrs[_ATTRIBUTE])
            descriptor = wrapped[_ATTRIBUTE]
        except (TypeError, KeyError, json.JSONDecodeError) as exc:
            raise FileFormatError(f"{where}: attribute {_ATTRIBUTE!r} is not a binsparse descriptor: {exc}") from exc
        if not isinstance(descriptor, dict):
            raise FileFormatError(f"{where}: field {_ATTRIBUTE!r} of the descriptor must be an object")

        def dataset_of(key):
            if key not in root:
                raise FileFormatError(f"{where}: no dataset {key!r}")
            node = root.get(key, getclass=True)
            if node is not h5py.Dataset:
                kind = "a group" if node is h5py.Group else f"a {getattr(node, '__name__', node)}"
                raise FileFormatError(f"{where}: {key!r} is {kind}, not a dataset")
            return root[key]

        def inspect(key):
            ds = dataset_of(key)
            _check_storage(h5py, where, key, ds)
            return ds.shape, ds.dtype

        def read(key):
            try:
                return dataset_of(key)[()]
            except OSError as exc:
                raise FileFormatError(f"{where}: dataset {key!r} cannot be read: {exc}") from exc

        x = from_binsparse(descriptor, read, where, check, inspect)
    except (OSError, KeyError, RuntimeError) as exc:  # HDF5 structures damaged inside a file that opened
        if isinstance(exc, FileFormatError):
            raise
        raise FileFormatError(f"{name}: the HDF5 file is damaged: {type(exc).__name__}: {exc}") from exc
    finally:
        if f is not None:
            f.close()
    return place(x, device)


def _write_group(group, descriptor, arrays, compression):
    options = {} if compression is None else {"compression": compression}
    for key, arr in arrays.items():
        group.create_dataset(key, data=arr, **(options if arr.size > 1 else {}))
    group.attrs[_ATTRIBUTE] = json.dumps({_ATTRIBUTE: descriptor}, indent=2, sort_keys=True)


def write_binsparse(path, x, dataset=None, compression=None):
    """Write the sparse array ``x`` to a binsparse HDF5 file.

    Parameters
    ----------
    path : str or os.PathLike
        With ``dataset=None`` the file is written atomically (to a temporary
        file beside it, renamed once complete). With a ``dataset`` the group
        is added to the file (created if missing); a failed write removes
        the group again.
    x : COO, CSR or CSC
        Any device, dtype, fill value, number of dimensions and dense
        dimensions (see the module's table of layouts).
    dataset : str, optional
        The HDF5 group to write; default the root group of a new file.
    compression : {None, "gzip", "lzf"} or int, optional
        h5py's dataset compression (an int is a gzip level 0-9).

    Examples
    --------
    >>> import os, tempfile, gpusparse as gs
    >>> x = gs.COO([[0, 2], [1, 0], [3, 3]], [1, 2], shape=(3, 2, 4), device="cpu")
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> gs.io.write_binsparse(path, x, compression="gzip")
    >>> gs.io.read_binsparse(path).shape
    (3, 2, 4)
    """
    from gpusparse.containers import SparseArray

    if not isinstance(x, SparseArray):
        raise TypeError(f"x must be a gpusparse COO, CSR or CSC array, got {type(x).__name__}")
    if compression is not None and compression not in ("gzip", "lzf") and not (
            isinstance(compression, int) and 0 <= compression <= 9):
        raise ValueError(f"compression must be None, 'gzip', 'lzf' or a gzip level 0-9, got {compression!r}")
    if dataset is not None and (not isinstance(dataset, str) or not dataset.strip("/")):
        raise ValueError(f"dataset must be a non-empty group name or None, got {dataset!r}")
    h5py = _h5py()
    descriptor, arrays = to_binsparse(x)
    if dataset is None or not os.path.exists(os.fspath(path)):
        with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
            _write_group(f if dataset is None else f.create_group(dataset), descriptor, arrays, compression)
        return
    with h5py.File(path, "a") as f:
        if dataset in f:
            raise ValueError(f"dataset {dataset!r} already exists in {os.fspath(path)}; pick another name")
        group = f.create_group(dataset)
        try:
            _write_group(group, descriptor, arrays, compression)
        except BaseException:
            del f[dataset]
            raise
