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
