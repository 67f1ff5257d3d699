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

from gpusparse.io._common import FileFormatError, atomic_path, describe, engine, host, is_path, place

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


def _decode(name, key, declared, raw, expected=None):
    """The NumPy array of buffer ``key`` stored as ``raw`` with binsparse type ``declared``."""
    iso = re.fullmatch(r"iso\[(.*)\]", declared)
    if iso:
        one = _decode(name, key, iso.group(1), raw)
        if one.size != 1:
            raise FileFormatError(f"{name}: field {key!r} is iso but holds {one.size} values")
        return np.full(expected or 0, one[0], dtype=one.dtype)
    cplx = re.fullmatch(r"complex\[(float32|float64)\]", declared)
    if cplx:
        part = _decode(name, key, cplx.group(1), raw)
        if part.size % 2:
            raise FileFormatError(f"{name}: field {key!r} of type {declared} has an odd number of parts")
        return np.ascontiguousarray(part).view(np.complex64 if part.dtype == np.float32 else np.complex128)
    if declared not in _TYPES:
        raise FileFormatError(f"{name}: field 'data_types.{key}' is {declared!r}, not a binsparse type")
    arr = np.asarray(raw)
    if arr.dtype.kind not in "biuf":
        raise FileFormatError(f"{name}: field {key!r} has dtype {arr.dtype}, declared {declared}")
    if declared == "bint8":
        return arr.astype(np.uint8, copy=False).view(np.bool_) if arr.dtype.itemsize == 1 else arr != 0
    return arr.astype(_TYPES[declared], copy=False)


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


def from_binsparse(descriptor, read, name="<binsparse>", check=True):
    """The gpusparse array (on the host) of a binsparse ``descriptor``; ``read(key)`` returns a stored array."""
    from gpusparse.containers import COO, CSC, CSR

    for key in ("version", "format", "shape", "number_of_stored_values", "data_types"):
        if key not in descriptor:
            raise FileFormatError(f"{name}: the descriptor has no field {key!r}")
    if not str(descriptor["version"]).startswith("0."):
        raise FileFormatError(f"{name}: field 'version' is {descriptor['version']!r}; version 0.x is read")
    shape = descriptor["shape"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise FileFormatError(f"{name}: field 'shape' must be a list of non-negative ints, got {shape!r}")
    nnz = descriptor["number_of_stored_values"]
    if not isinstance(nnz, int) or nnz < 0:
        raise FileFormatError(f"{name}: field 'number_of_stored_values' must be a non-negative int, got {nnz!r}")
    types = descriptor["data_types"]
    if not isinstance(types, dict):
        raise FileFormatError(f"{name}: field 'data_types' must be an object")

    def buffer(key, expected=None):
        if key not in types:
            raise FileFormatError(f"{name}: field 'data_types' has no entry for {key!r}")
        arr = _decode(name, key, types[key], read(key), expected)
        if expected is not None and arr.size != expected:
            raise FileFormatError(f"{name}: field {key!r} has {arr.size} values, expected {expected} "
                                  f"(number_of_stored_values {nnz})")
        return arr

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
            if fmt == "csr" and list(transpose) == [1, 0, *range(2, ndim)]:
                fmt = "csc"
            elif list(transpose) != list(range(ndim)):
                raise FileFormatError(f"{name}: field 'custom.transpose' {transpose!r} is not read for this level tree")
    else:
        raise FileFormatError(f"{name}: field 'format' is {fmt!r}; CSR, CSC, COO, COOR, CVEC and custom "
                              f"sparse levels are read")
    dense_shape = tuple(shape[sparse_dim:])
    if fmt in ("csr", "csc"):
        indptr, indices = buffer("pointers_to_1"), buffer("indices_1")
        entries = indices.size
    else:
        rows = [buffer(f"indices_{i}") for i in range(sparse_dim)]
        entries = rows[0].size
        for i, r in enumerate(rows):
            if r.size != entries:
                raise FileFormatError(f"{name}: field 'indices_{i}' has {r.size} values, 'indices_0' {entries}")
    block = math.prod(dense_shape)
    if entries * block != nnz:
        raise FileFormatError(f"{name}: field 'number_of_stored_values' is {nnz}, but the indices hold "
                              f"{entries} entries of {block} values each")
    values = buffer("values", nnz).reshape((entries, *dense_shape))
    fill = None
    if descriptor.get("fill") is True and "fill_value" in types:
        fill = buffer("fill_value", 1).reshape(())[()]
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

        def read(key):
            if key not in root:
                raise FileFormatError(f"{where}: no dataset {key!r}")
            try:
                return root[key][()]
            except OSError as exc:
                raise FileFormatError(f"{where}: dataset {key!r} cannot be read: {exc}") from exc

        x = from_binsparse(descriptor, read, where, check)
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
