"""gpusparse.io's binsparse HDF5 files against the reference implementation (the binsparse package)."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import assert_same_components, assert_sparse_equal
from gpusparse.io import FileFormatError, read_binsparse, write_binsparse
from strategies import coo_cases

h5py = pytest.importorskip("h5py")
binsparse = pytest.importorskip("binsparse")
from binsparse.conversions.scipy import from_scipy as bs_from_scipy, to_scipy as bs_to_scipy  # noqa: E402
from binsparse.conversions.sparse import from_sparse as bs_from_sparse, to_sparse as bs_to_sparse  # noqa: E402


@given(case=coo_cases(min_ndim=1), format=st.sampled_from(["coo", "csr", "csc"]),
       compression=st.sampled_from([None, "gzip"]))
def test_round_trip(device, case, format, compression):
    x = case.build(device)
    if x.sparse_dim == 0:
        x = gs.COO(np.zeros((1, 0), np.int64), np.zeros((0,) + x.shape[1:], x.dtype), x.shape, device=device)
    if format != "coo" and x.sparse_dim == 2:
        x = x.asformat(format)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.h5")
        write_binsparse(path, x, compression=compression)
        y = read_binsparse(path, device=device)
    assert y.device == x.device
    expected = x.coalesce() if x.format == "coo" else x
    assert_same_components(y, expected)


def _dense(rng, shape, dtype=np.float64):
    return (rng.random(shape) < 0.4) * rng.integers(1, 9, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.int64, np.float32, np.float64,
                                   np.complex64, np.complex128])
@pytest.mark.parametrize("format", ["coo", "csr", "csc"])
def test_reference_reads_ours(tmp_path, rng, format, dtype):
    dense = _dense(rng, (5, 7), dtype)
    path = tmp_path / "x.h5"
    write_binsparse(path, gs.fromdense(dense, format=format, device="cpu"))
    tensor = binsparse.load_binsparse(path)
    assert tensor.format == {"coo": "COOR", "csr": "CSR", "csc": "CSC"}[format]
    m = bs_to_scipy(tensor)
    assert m.dtype == dtype
    np.testing.assert_array_equal(m.toarray(), dense)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint16, np.float32, np.complex128])
@pytest.mark.parametrize("format", ["coo", "csr", "csc"])
def test_we_read_the_reference(tmp_path, rng, format, dtype):
    import scipy.sparse as sp
    dense = _dense(rng, (6, 4), dtype)
    path = tmp_path / "x.h5"
    binsparse.save_binsparse(bs_from_scipy(getattr(sp, f"{format}_array")(dense)), path)
    x = read_binsparse(path)
    assert x.format == format and x.dtype == dtype
    assert_sparse_equal(x, dense)


@pytest.mark.parametrize("fill", [0.0, -1.5])
@pytest.mark.parametrize("shape", [(9,), (4, 5), (3, 4, 5)])
def test_nd_and_fill_values_with_the_reference(tmp_path, shape, fill):
    sparse = pytest.importorskip("sparse")
    s = sparse.random(shape, density=0.3, fill_value=fill, random_state=5)
    theirs = tmp_path / "theirs.h5"
    binsparse.save_binsparse(bs_from_sparse(s), theirs)
    x = read_binsparse(theirs)
    assert x.fill_value == fill
    assert_sparse_equal(x, s.todense())
    ours = tmp_path / "ours.h5"
    write_binsparse(ours, x)
    np.testing.assert_array_equal(bs_to_sparse(binsparse.load_binsparse(ours)).todense(), s.todense())


def test_hybrid_arrays_are_custom_levels_the_reference_parses(tmp_path):
    x = gs.COO([[0, 2], [1, 0]], np.arange(6.0).reshape(2, 3), shape=(3, 2, 3), device="cpu")
    path = tmp_path / "h.h5"
    write_binsparse(path, x)
    tensor = binsparse.load_binsparse(path)
    assert tensor.format == "custom" and tensor.level.level.level_desc == "dense"
    assert_same_components(read_binsparse(path), x.coalesce())
    y = gs.CSC([0, 1, 1, 2], [1, 0], np.arange(4).reshape(2, 2), shape=(2, 3, 2), device="cpu")
    write_binsparse(path, y)
    assert binsparse.load_binsparse(path).transpose == (1, 0, 2)
    assert_same_components(read_binsparse(path), y)


def test_datasets_share_a_file(tmp_path):
    path = tmp_path / "many.h5"
    a = gs.eye(4, format="csr", device="cpu")
    b = gs.random((3, 4, 5), density=0.2, device="cpu", seed=2)
    write_binsparse(path, a, dataset="a")
    write_binsparse(path, b, dataset="group/b", compression=4)
    assert_same_components(read_binsparse(path, "a"), a)
    assert_sparse_equal(read_binsparse(path, "group/b"), b.todense())
    with pytest.raises(ValueError, match="already exists"):
        write_binsparse(path, a, dataset="a")
    with h5py.File(path) as f:
        assert f["group/b/values"].compression == "gzip"
        tensor = binsparse.BinsparseTensor.parse(binsparse.HDF5BinsparseContainer(f["a"]))
    assert tensor.format == "CSR"


# --------------------------------------------------------------------------
# bad files, bad arguments, failed writes
# --------------------------------------------------------------------------

def _tamper(path, key, change):
    with h5py.File(path, "r+") as f:
        if key == "descriptor":
            wrapped = json.loads(f.attrs["binsparse"])
            change(wrapped["binsparse"])
            f.attrs["binsparse"] = json.dumps(wrapped)
        else:
            data = f[key][()]
            del f[key]
            f.create_dataset(key, data=change(data))


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "x.h5"
    write_binsparse(path, gs.COO([[0, 1, 2], [2, 0, 1]], [1.0, 2.0, 3.0], shape=(3, 3), device="cpu"))
    return path


def test_index_out_of_range(good_file):
    _tamper(good_file, "indices_1", lambda a: a + 5)
    with pytest.raises(FileFormatError, match=f"{good_file}: the COO arrays are not valid.*out of bounds"):
        read_binsparse(good_file)


def test_wrong_entry_count(good_file):
    _tamper(good_file, "descriptor", lambda d: d.update(number_of_stored_values=4))
    with pytest.raises(FileFormatError, match=f"{good_file}: field 'number_of_stored_values' is 4"):
        read_binsparse(good_file)


def test_wrong_header(good_file):
    _tamper(good_file, "descriptor", lambda d: d.update(format="ELL"))
    with pytest.raises(FileFormatError, match=f"{good_file}: field 'format' is 'ELL'"):
        read_binsparse(good_file)
    _tamper(good_file, "descriptor", lambda d: d.pop("shape"))
    with pytest.raises(FileFormatError, match=f"{good_file}: the descriptor has no field 'shape'"):
        read_binsparse(good_file)


def test_unsorted_coo_is_refused(good_file):
    _tamper(good_file, "indices_0", lambda a: a[::-1].copy())
    with pytest.raises(FileFormatError, match="coalesced"):
        read_binsparse(good_file)


def test_truncated_and_foreign_files(tmp_path, good_file):
    truncated = tmp_path / "t.h5"
    truncated.write_bytes(good_file.read_bytes()[:200])
    with pytest.raises(FileFormatError, match=str(truncated)):
        read_binsparse(truncated)
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(FileFormatError, match="no attribute 'binsparse'"):
        read_binsparse(tmp_path / "plain.h5")
    with pytest.raises(FileFormatError, match="no group 'nope'"):
        read_binsparse(good_file, "nope")


def test_bad_arguments(tmp_path):
    x = gs.eye(2, device="cpu")
    with pytest.raises(ValueError, match="compression must be"):
        write_binsparse(tmp_path / "x.h5", x, compression="zip")
    with pytest.raises(TypeError, match="x must be"):
        write_binsparse(tmp_path / "x.h5", np.eye(2))
    with pytest.raises(ValueError, match="without sparse dimensions"):
        write_binsparse(tmp_path / "x.h5", gs.fromdense(np.ones(3), sparse_dim=0, device="cpu"))
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    from gpusparse.io import _binsparse

    def broken(group, descriptor, arrays, compression):
        group.create_dataset("values", data=np.zeros(3))
        raise OSError("disk full")

    monkeypatch.setattr(_binsparse, "_write_group", broken)
    with pytest.raises(OSError, match="disk full"):
        write_binsparse(tmp_path / "x.h5", gs.eye(2, device="cpu"))
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    write_binsparse(tmp_path / "x.h5", gs.eye(2, device="cpu"), dataset="a")
    monkeypatch.setattr(_binsparse, "_write_group", broken)
    with pytest.raises(OSError, match="disk full"):
        write_binsparse(tmp_path / "x.h5", gs.eye(2, device="cpu"), dataset="b")
    with h5py.File(tmp_path / "x.h5") as f:
        assert list(f) == ["a"]  # the partial group is gone


# --------------------------------------------------------------------------
# file modes and symbolic links: as h5py.File(path, "w")
# --------------------------------------------------------------------------

def _mode(path):
    return os.stat(path).st_mode & 0o7777


def _peer(path):
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(3)


def _ours(path):
    write_binsparse(path, gs.eye(3, device="cpu"))


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o027])
def test_new_file_mode_is_h5pys(tmp_path, umask):
    old = os.umask(umask)
    try:
        _peer(tmp_path / "peer.h5")
        _ours(tmp_path / "ours.h5")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "ours.h5") == _mode(tmp_path / "peer.h5") == 0o666 & ~umask


@pytest.mark.parametrize("mode", [0o640, 0o604])
def test_overwrite_keeps_mode_and_writes_through_symlinks(tmp_path, mode):
    seen = {}
    for who, write in (("peer", _peer), ("ours", _ours)):
        target = tmp_path / f"{who}.h5"
        write(target)
        os.chmod(target, mode)
        link = tmp_path / f"{who}-link.h5"
        link.symlink_to(target.name)
        write(link)
        seen[who] = (_mode(target), link.is_symlink(), os.readlink(link))
    assert seen["ours"] == (mode, True, "ours.h5")
    assert seen["peer"][:2] == seen["ours"][:2]
    assert_sparse_equal(read_binsparse(tmp_path / "ours-link.h5"), np.eye(3))
    assert len(os.listdir(tmp_path)) == 4


# --------------------------------------------------------------------------
# hostile files: every dataset checked against the descriptor before it is read
# --------------------------------------------------------------------------

def _rewrite(path, key, make):
    """Replace dataset (or group) ``key`` of the file by what ``make(group)`` creates."""
    with h5py.File(path, "r+") as f:
        del f[key]
        make(f)


@pytest.mark.parametrize("key", ["values", "indices_0", "indices_1"])
def test_group_where_a_dataset_belongs(good_file, key):
    _rewrite(good_file, key, lambda f: f.create_group(key))
    with pytest.raises(FileFormatError, match=f"{good_file}: '{key}' is a group, not a dataset"):
        read_binsparse(good_file)


@pytest.mark.parametrize("transpose", [5, "10", [1, "0"], {"a": 1}, [1.0, 0.0]])
def test_malformed_transpose(tmp_path, transpose):
    path = tmp_path / "x.h5"
    write_binsparse(path, gs.random((3, 4), density=0.5, format="csc", device="cpu", seed=1))
    level = {"level_desc": "dense", "rank": 1,
             "level": {"level_desc": "sparse", "rank": 1, "level": {"level_desc": "element"}}}
    _tamper(path, "descriptor", lambda d: d.update(format="custom", custom={"level": level, "transpose": transpose}))
    with pytest.raises(FileFormatError, match=f"{path}: field 'custom.transpose' must be a list of ints"):
        read_binsparse(path)
    _tamper(path, "descriptor", lambda d: d["custom"].update(transpose=[1, 0]))
    assert read_binsparse(path).format == "csc"


@pytest.mark.parametrize("key, stored, declared", [
    ("values", np.array([300, 2, 3], np.int64), "uint8"),  # would wrap to 44
    ("values", np.array([1.5, 2, 3]), "int64"),
    ("values", np.array([0, 1, 2], np.uint8), "bint8"),
    ("indices_1", np.array([2, 0, 1], np.uint64), "int64"),
    ("values", np.array([1.0, 2.0]), "float64"),
    ("values", np.ones((3, 1)), "float64"),
    ("indices_0", np.array([0, 1]), "int64"),
    ("indices_0", np.array([0.0, 1.0, 2.0]), "float64"),
])
def test_dataset_disagreeing_with_the_descriptor(good_file, key, stored, declared):
    _rewrite(good_file, key, lambda f: f.create_dataset(key, data=stored))
    _tamper(good_file, "descriptor", lambda d: d["data_types"].update({key: declared}))
    with pytest.raises(FileFormatError, match=f"{good_file}: (dataset '|field 'data_types\\.){key}"):
        read_binsparse(good_file)


def test_fill_flag_without_fill_value(good_file):
    _tamper(good_file, "descriptor", lambda d: d.update(fill=True))
    with pytest.raises(FileFormatError, match=f"{good_file}: field 'data_types' has no entry for 'fill_value'"):
        read_binsparse(good_file)
    _tamper(good_file, "descriptor", lambda d: d.update(fill="yes"))
    with pytest.raises(FileFormatError, match=f"{good_file}: field 'fill' must be true or false"):
        read_binsparse(good_file)


@pytest.mark.parametrize("format", ["coo", "csr"])
@pytest.mark.parametrize("bad", [2**63, 2**64 - 1, 2**32, 3])
def test_unsigned_indices_are_checked_before_any_cast(tmp_path, format, bad):
    dense = np.array([[0, 1.0, 0], [0, 0, 2.0]])
    path = tmp_path / "x.h5"
    write_binsparse(path, gs.fromdense(dense, format=format, device="cpu"))
    key = "indices_1"
    with h5py.File(path) as f:
        indices = f[key][()].astype(np.uint64)
    indices[-1] = bad
    _rewrite(path, key, lambda f: f.create_dataset(key, data=indices))
    _tamper(path, "descriptor", lambda d: d["data_types"].update({key: "uint64"}))
    with pytest.raises(FileFormatError, match=str(path)):
        read_binsparse(path)
    indices[-1] = 2  # the same file with the index fixed reads as the oracle, and as the reference reads it
    _rewrite(path, key, lambda f: f.create_dataset(key, data=indices))
    assert_sparse_equal(read_binsparse(path), dense)
    np.testing.assert_array_equal(bs_to_scipy(binsparse.load_binsparse(path)).toarray(), dense)


_LIMITED = """
import resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
import gpusparse as gs
tracemalloc.start()
try:
    gs.io.read_binsparse(sys.argv[1])
    print("read")
except gs.io.FileFormatError as exc:
    print("FileFormatError", exc)
except BaseException as exc:
    print(type(exc).__name__, exc)
print("peak", tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.parametrize("storage", ["contiguous", "chunked", "gzip"])
@pytest.mark.parametrize("count", [40_000_000, 2**34])
def test_datasets_claiming_more_than_the_file_stores(tmp_path, storage, count):
    import subprocess
    import sys
    path = tmp_path / "x.h5"
    options = {"contiguous": {}, "chunked": {"chunks": (2**20,)}, "gzip": {"chunks": (2**20,), "compression": "gzip"}}
    with h5py.File(path, "w") as f:  # declared and never written: HDF5 reads such datasets as zeros
        for key, dtype in (("indices_0", np.int64), ("indices_1", np.int64), ("values", np.float64)):
            f.create_dataset(key, shape=(count,), dtype=dtype, **options[storage])
        f.attrs["binsparse"] = json.dumps({"binsparse": {
            "version": "0.1", "format": "COO", "shape": [2**40, 2**40], "number_of_stored_values": count,
            "data_types": {"indices_0": "int64", "indices_1": "int64", "values": "float64"}}})
    assert os.path.getsize(path) < 2**20
    out = subprocess.run([sys.executable, "-c", _LIMITED, str(path)], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines and lines[0].startswith(f"FileFormatError {path}: dataset"), out.stdout + out.stderr
    assert int(lines[-1].split()[1]) < 2**24  # bytes: nothing near the claim was allocated


def _global_heap(path):
    """The byte offset of the file's one global heap collection (the descriptor attribute's)."""
    data = path.read_bytes()
    assert data.count(b"GCOL") == 1, "the test expects one global heap collection"
    return data.find(b"GCOL")


def _damaged_copy(good_file, tmp_path, object_index, object_size):
    """``good_file`` with the first object of its global heap rewritten to (index, size)."""
    data = bytearray(good_file.read_bytes())
    start = _global_heap(good_file)
    data[start + 16:start + 18] = object_index.to_bytes(2, "little")
    data[start + 24:start + 32] = object_size.to_bytes(8, "little")
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(bytes(data))
    return damaged


@pytest.mark.parametrize("object_index, object_size, fault", [
    (0, 0, "has size 0"),              # libhdf5's decoder stands still: the read never returned
    (1, 2**20, "past the collection"),  # an object running out of its collection
    (0, 2**63, "past the collection"),
])
def test_damaged_global_heap_is_refused_before_hdf5_reads_it(good_file, tmp_path, object_index, object_size, fault):
    import subprocess
    import sys
    damaged = _damaged_copy(good_file, tmp_path, object_index, object_size)
    # in a child with a deadline: before the check, the first case made libhdf5 spin forever
    out = subprocess.run([sys.executable, "-c", _LIMITED, str(damaged)], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines and lines[0].startswith(f"FileFormatError {damaged}: damaged HDF5 global heap"), out.stdout + out.stderr
    assert fault in lines[0]
    with h5py.File(damaged, "r") as f:  # the same refusal when the caller opened the file
        with pytest.raises(FileFormatError, match="damaged HDF5 global heap"):
            read_binsparse(f)


def test_valid_global_heaps_pass_the_check(tmp_path, rng):
    from gpusparse.io._hdf5_heaps import check_global_heaps
    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:  # many variable-length strings: several objects, free space at the end
        for i in range(50):
            f.attrs[f"a{i}"] = "x" * int(rng.integers(0, 300))
        f.create_dataset("strings", data=np.array(["a" * i for i in range(100)], dtype=h5py.string_dtype()))
    check_global_heaps(path)
    for name in ("empty.h5", "text.txt"):  # no heap at all: nothing to say
        (tmp_path / name).write_bytes(b"" if name == "empty.h5" else b"GCOL\x01")
        check_global_heaps(tmp_path / name)
