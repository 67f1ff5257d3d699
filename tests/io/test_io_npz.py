"""gpusparse.io's ``.npz`` files against SciPy's and pydata sparse's readers and writers."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import assert_same_components, assert_sparse_equal
from gpusparse.io import FileFormatError
from strategies import coo_cases

sparse = pytest.importorskip("sparse")


def _expected(x):
    """What a round trip gives: the array itself, coalesced where pydata's layout stores it."""
    scipy_only = x.ndim == 2 and x.dense_dim == 0 and not np.asarray(x.fill_value).any()
    return x if scipy_only or x.format != "coo" else x.coalesce()


def _round_trip(x, device, compressed=True):
    buffer = io.BytesIO()
    gs.save_npz(buffer, x, compressed=compressed)
    buffer.seek(0)
    return gs.load_npz(buffer, device=device)


@given(case=coo_cases(), format=st.sampled_from(["coo", "csr", "csc"]), compressed=st.booleans())
def test_round_trip_keeps_format_dtype_fill_and_flags(device, case, format, compressed):
    x = case.build(device)
    if format != "coo" and x.sparse_dim == 2:
        x = x.asformat(format)
    elif case.nnz and np.random.default_rng(case.nnz).random() < 0.5:
        x = x.coalesce()
    y = _round_trip(x, device, compressed)
    assert y.device == x.device
    assert_same_components(y, _expected(x))
    assert_sparse_equal(y, case.dense())


def test_top_level_names_are_the_io_functions():
    assert gs.save_npz is gs.io.save_npz and gs.load_npz is gs.io.load_npz
    assert "save_npz" in gs.__all__ and "load_npz" in gs.__all__


@pytest.mark.parametrize("kind", ["array", "matrix"])
@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_reads_scipy_files(tmp_path, rng, kind, format):
    dense = rng.random((7, 5)) * (rng.random((7, 5)) < 0.4)
    m = getattr(sp, f"{format}_{kind}")(dense)
    path = tmp_path / "m.npz"
    sp.save_npz(path, m)
    x = gs.load_npz(path)
    assert x.format == format
    assert_sparse_equal(x, dense)


@pytest.mark.parametrize("shape", [(6,), (3, 4, 2), (0, 3)])
def test_reads_scipy_nd_coo(tmp_path, rng, shape):
    dense = rng.integers(-3, 3, size=shape) * (rng.random(shape) < 0.5)
    path = tmp_path / "m.npz"
    sp.save_npz(path, sp.coo_array(dense))
    assert_sparse_equal(gs.load_npz(path), dense)


@pytest.mark.parametrize("kind", ["array", "matrix"])
@pytest.mark.parametrize("format", ["csr", "csc", "coo"])
def test_scipy_reads_ours(tmp_path, rng, kind, format):
    dense = (rng.random((6, 9)) < 0.3) * rng.integers(1, 9, size=(6, 9)).astype(np.int32)
    x = gs.fromdense(dense, format=format, device="cpu")
    path = tmp_path / "x.npz"
    gs.save_npz(path, x)
    m = sp.load_npz(path)
    assert m.format == format and m.dtype == np.int32
    np.testing.assert_array_equal(m.toarray(), dense)


def test_scipy_reads_ours_nd(tmp_path, rng):
    dense = rng.random((3, 4, 5)) * (rng.random((3, 4, 5)) < 0.3)
    path = tmp_path / "x.npz"
    gs.save_npz(path, gs.fromdense(dense, device="cpu"))
    np.testing.assert_array_equal(sp.load_npz(path).toarray(), dense)


@pytest.mark.parametrize("fill", [0.0, 2.5])
@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 5)])
def test_pydata_both_ways(tmp_path, shape, fill):
    s = sparse.random(shape, density=0.3, fill_value=fill, random_state=7)
    theirs = tmp_path / "theirs.npz"
    sparse.save_npz(theirs, s)
    x = gs.load_npz(theirs)
    assert x.fill_value == fill
    assert_sparse_equal(x, s.todense())
    ours = tmp_path / "ours.npz"
    y = gs.COO(x.coords[:, ::-1].copy(), x.data[::-1].copy(), x.shape, fill_value=fill, device="cpu")
    if y.ndim == 2 and fill == 0:
        y = y.coalesce()  # an uncoalesced 2-d COO with fill value 0 is stored in SciPy's layout
    gs.save_npz(ours, y)  # unsorted: stored coalesced, as pydata's reader assumes
    back = sparse.load_npz(ours)
    assert back.fill_value == fill
    np.testing.assert_array_equal(back.todense(), s.todense())


def test_pydata_gcxs_2d(tmp_path):
    s = sparse.random((5, 6), density=0.4, random_state=3, format="gcxs", compressed_axes=(1,))
    path = tmp_path / "g.npz"
    sparse.save_npz(path, s)
    x = gs.load_npz(path)
    assert x.format == "csc"
    assert_sparse_equal(x, s.todense())


def test_nonzero_fill_csr_comes_back_csr(tmp_path):
    x = gs.CSR([0, 1, 2], [1, 0], [1.0, 2.0], shape=(2, 2), fill_value=-1.0, device="cpu")
    path = tmp_path / "x.npz"
    gs.save_npz(path, x)
    np.testing.assert_array_equal(sparse.load_npz(path).todense(), x.todense())
    y = gs.load_npz(path)
    assert y.format == "csr"
    assert_same_components(y, x)


def test_path_gets_npz_suffix(tmp_path):
    gs.save_npz(tmp_path / "x", gs.eye(3, device="cpu"))
    assert os.listdir(tmp_path) == ["x.npz"]


# --------------------------------------------------------------------------
# bad files and failed writes
# --------------------------------------------------------------------------

def _write(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


def test_not_an_archive(tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(b"this is not a zip file at all")
    with pytest.raises(FileFormatError, match=f"{path}.*not an .npz"):
        gs.load_npz(path)


def test_truncated_archive(tmp_path):
    path = tmp_path / "x.npz"
    gs.save_npz(path, gs.random((50, 50), density=0.2, device="cpu", seed=0))
    path.write_bytes(path.read_bytes()[:-300])
    with pytest.raises(FileFormatError, match=str(path)):
        gs.load_npz(path)


def test_missing_field(tmp_path):
    path = _write(tmp_path / "x.npz", format=np.bytes_(b"csr"), shape=np.array([2, 2]), data=np.ones(1),
                  indices=np.zeros(1, np.int32))
    with pytest.raises(FileFormatError, match=f"{path}: missing field 'indptr'"):
        gs.load_npz(path)


def test_unknown_format_field(tmp_path):
    path = _write(tmp_path / "x.npz", format=np.bytes_(b"dia"), shape=np.array([2, 2]), data=np.ones((1, 2)),
                  offsets=np.zeros(1, np.int32))
    with pytest.raises(FileFormatError, match=f"{path}: field 'format' is 'dia'"):
        gs.load_npz(path)


def test_index_out_of_range(tmp_path):
    path = _write(tmp_path / "x.npz", format=np.bytes_(b"coo"), shape=np.array([2, 2]), data=np.ones(2),
                  row=np.array([0, 5]), col=np.array([1, 1]))
    with pytest.raises(FileFormatError, match=f"{path}: fields 'coords'/'data'.*out of bounds"):
        gs.load_npz(path)
    path = _write(tmp_path / "y.npz", format=np.bytes_(b"csr"), shape=np.array([2, 2]), data=np.ones(2),
                  indices=np.array([0, 7], np.int32), indptr=np.array([0, 1, 2], np.int32))
    with pytest.raises(FileFormatError, match=f"{path}: fields 'indptr'/'indices'.*out of range"):
        gs.load_npz(path)


def test_wrong_entry_count(tmp_path):
    path = _write(tmp_path / "x.npz", format=np.bytes_(b"csr"), shape=np.array([2, 2]), data=np.ones(3),
                  indices=np.array([0, 1], np.int32), indptr=np.array([0, 1, 2], np.int32))
    with pytest.raises(FileFormatError, match=str(path)):
        gs.load_npz(path)


def test_unchecked_flags_are_verified(tmp_path):
    path = _write(tmp_path / "x.npz", format="coo", shape=np.array([4]), data=np.ones(2), coords=np.array([[3, 1]]),
                  fill_value=np.float64(0), gpusparse=np.str_('{"format": "coo", "sorted": true, "unique": true}'))
    with pytest.raises(FileFormatError, match=f"{path}: field 'gpusparse' claims sorted"):
        gs.load_npz(path)


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    target = tmp_path / "x.npz"

    def broken(file, **arrays):
        file.write(b"PK partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        gs.save_npz(target, gs.eye(3, device="cpu"))
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    gs.save_npz(target, gs.eye(2, device="cpu"))
    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError):
        gs.save_npz(target, gs.eye(3, device="cpu"))
    assert os.listdir(tmp_path) == ["x.npz"]  # the old file is untouched
    assert gs.load_npz(target).shape == (2, 2)


def test_bad_arguments():
    with pytest.raises(TypeError, match="x must be a gpusparse"):
        gs.save_npz(io.BytesIO(), np.eye(2))


def test_import_gpusparse_imports_no_io_engine():
    code = ("import sys, gpusparse, gpusparse.io; "
            "print(sorted(m for m in ('h5py', 'fast_matrix_market', 'tqdm', 'binsparse') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_engine_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r'pip install "gpusparse\[io\]"'):
        gs.io.read_binsparse("x.h5")


def test_zipfile_is_a_real_npz(tmp_path):
    path = tmp_path / "x.npz"
    gs.save_npz(path, gs.eye(2, device="cpu"), compressed=False)
    with zipfile.ZipFile(path) as z:
        assert "gpusparse.npy" in z.namelist() and "data.npy" in z.namelist()


# --------------------------------------------------------------------------
# file modes and symbolic links: as numpy.savez
# --------------------------------------------------------------------------

def _mode(path):
    return os.stat(path).st_mode & 0o7777


def _ours(path):
    gs.save_npz(path, gs.eye(3, device="cpu"))


def _numpys(path):
    np.savez(path, a=np.eye(3))


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002, 0o027])
def test_new_file_mode_is_numpys(tmp_path, umask):
    old = os.umask(umask)
    try:
        _numpys(tmp_path / "peer.npz")
        _ours(tmp_path / "ours.npz")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "ours.npz") == _mode(tmp_path / "peer.npz") == 0o666 & ~umask


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o755])
def test_overwrite_keeps_mode_and_writes_through_symlinks(tmp_path, mode):
    seen = {}
    for who, write in (("peer", _numpys), ("ours", _ours)):
        target = tmp_path / f"{who}.npz"
        write(target)
        os.chmod(target, mode)
        write(target)
        link = tmp_path / f"{who}-link.npz"
        link.symlink_to(target.name)
        chain = tmp_path / f"{who}-chain.npz"
        chain.symlink_to(link.name)
        write(chain)
        dangling = tmp_path / f"{who}-dangling.npz"
        dangling.symlink_to(f"{who}-new.npz")
        write(dangling)
        seen[who] = (_mode(target), link.is_symlink(), chain.is_symlink(), os.readlink(chain),
                     dangling.is_symlink(), (tmp_path / f"{who}-new.npz").is_file())
    assert seen["ours"] == (mode, True, True, "ours-link.npz", True, True)
    assert seen["peer"][:3] + seen["peer"][4:] == seen["ours"][:3] + seen["ours"][4:]
    assert_sparse_equal(gs.load_npz(tmp_path / "ours-chain.npz"), np.eye(3))
    assert sorted(os.listdir(tmp_path)) == sorted(f"{w}{s}.npz" for w in ("peer", "ours")
                                                  for s in ("", "-link", "-chain", "-dangling", "-new"))


# --------------------------------------------------------------------------
# hostile files: FileFormatError naming the file and the field
# --------------------------------------------------------------------------

def _zip(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, payload in members.items():
            z.writestr(name, payload)
    return str(path)


def _npy(arr=None, header=None, payload=None):
    buffer = io.BytesIO()
    if header is None:
        np.lib.format.write_array(buffer, np.asarray(arr))
    else:
        np.lib.format.write_array_header_1_0(buffer, header)
        buffer.write(payload)
    return buffer.getvalue()


def _coo_members(**changes):
    members = {"format.npy": _npy(np.str_("coo")), "shape.npy": _npy(np.array([3, 4])),
               "coords.npy": _npy(np.array([[0, 2], [1, 3]])), "data.npy": _npy(np.array([1.0, 2.0]))}
    members.update(changes)
    return members


def test_member_without_npy_header(tmp_path):
    path = _zip(tmp_path / "x.npz", _coo_members(**{"format.npy": b"coo"}))
    with pytest.raises(FileFormatError, match=f"{path}: field 'format' .*no .npy header"):
        gs.load_npz(path)
    path = _zip(tmp_path / "y.npz", {**_coo_members(), "format": b"coo"})
    with pytest.raises(FileFormatError, match=f"{path}: field 'format' .*no .npy header"):
        gs.load_npz(path)


@pytest.mark.parametrize("field, value, message", [
    ("fill_value", np.str_("abc"), "field 'fill_value' must be a number, got 'abc'"),
    ("fill_value", np.float64(0.5), "field 'fill_value' 0.5 is not a value of the dtype int64"),
    ("format", np.bytes_("c\xf6o".encode("latin-1")), "field 'format' is not ASCII"),
    ("compressed_axes", np.str_("ab"), "field 'compressed_axes' must be a 1-d integer array"),
    ("coords", np.array([[0.0, 2.0], [1.0, 3.0]]), "field 'coords': indices must be integers"),
])
def test_malformed_fields(tmp_path, field, value, message):
    nodes = dict(format=np.str_("coo"), shape=np.array([3, 4]), coords=np.array([[0, 2], [1, 3]]),
                 data=np.array([1, 2]))
    if field == "compressed_axes":
        nodes.update(format=np.str_("csr"), indptr=np.array([0, 1, 1, 2]), indices=np.array([1, 3]))
    nodes[field] = value
    path = _write(tmp_path / "x.npz", **nodes)
    with pytest.raises(FileFormatError, match=f"{path}: {message}"):
        gs.load_npz(path)


_AS_LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import gpusparse as gs
try:
    gs.load_npz(sys.argv[1])
except gs.io.FileFormatError as exc:
    print("FileFormatError", exc)
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("compressed", [False, True])
def test_npy_header_claiming_more_than_the_member_holds(tmp_path, compressed):
    lie = _npy(header={"descr": "<f8", "fortran_order": False, "shape": (10**12,)}, payload=b"\0" * 16)
    path = str(tmp_path / "x.npz")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        for name, payload in _coo_members(**{"data.npy": lie}).items():
            z.writestr(name, payload)
    out = subprocess.run([sys.executable, "-c", _AS_LIMITED, path], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith(f"FileFormatError {path}: field 'data'"), out.stdout + out.stderr
    assert "claims shape (1000000000000,)" in out.stdout


def test_deflated_member_claiming_more_than_deflate_expands_to(tmp_path):
    path = str(tmp_path / "x.npz")
    gs.save_npz(path, gs.eye(3, device="cpu"))
    raw = bytearray(open(path, "rb").read())
    central = raw.index(b"PK\x01\x02")  # the central directory entry of data.npy; its size field at 24
    while raw[central + 46:central + 46 + 8] != b"data.npy":
        central = raw.index(b"PK\x01\x02", central + 4)
    raw[central + 24:central + 28] = (2**31).to_bytes(4, "little")
    open(path, "wb").write(bytes(raw))
    with pytest.raises(FileFormatError, match=f"{path}: field 'data'"):
        gs.load_npz(path)


@pytest.mark.parametrize("layout", ["coords", "row/col", "indices", "indptr"])
@pytest.mark.parametrize("bad", [2**63, 2**64 - 1, 2**32, 7])
def test_unsigned_indices_are_checked_before_any_cast(tmp_path, layout, bad):
    dense = np.zeros((3, 4))
    dense[0, 1], dense[2, 3] = 1.0, 2.0
    if layout in ("coords", "row/col"):
        row, col = np.array([0, 2], np.uint64), np.array([1, bad], np.uint64)
        nodes = dict(format=np.str_("coo"), coords=np.stack((row, col))) if layout == "coords" else dict(
            format=np.bytes_(b"coo"), row=row, col=col)
    else:
        indptr, indices = np.array([0, 1, 1, 2], np.uint64), np.array([1, 3], np.uint64)
        (indices if layout == "indices" else indptr)[-1] = bad
        nodes = dict(format=np.bytes_(b"csr"), indptr=indptr, indices=indices)
    path = _write(tmp_path / "x.npz", shape=np.array([3, 4]), data=np.array([1.0, 2.0]), **nodes)
    with pytest.raises(FileFormatError, match=str(path)):
        gs.load_npz(path)
    # the same file with the bad index fixed reads as the dense oracle
    for key in ("coords", "col", "indices", "indptr"):
        if key in nodes and nodes[key].ravel()[-1] == bad:
            nodes[key].reshape(-1)[-1] = 3 if key != "indptr" else 2
    good = _write(tmp_path / "good.npz", shape=np.array([3, 4]), data=np.array([1.0, 2.0]), **nodes)
    assert_sparse_equal(gs.load_npz(good), dense)
    np.testing.assert_array_equal(sp.load_npz(good).toarray(), dense)


def _beyond_unicode(text: str):
    """A 0-d ``<U`` array of ``text`` whose last UTF-32 unit has bit 24 set: beyond U+10FFFF."""
    raw = bytearray(np.array(text, dtype=f"<U{len(text)}").tobytes())
    raw[-1] ^= 1
    return np.frombuffer(bytes(raw), dtype=f"<U{len(text)}").reshape(())


@pytest.mark.parametrize("field", ["format", "gpusparse", "fill_value", "shape", "compressed_axes", "data"])
def test_utf32_units_beyond_unicode_are_refused(tmp_path, field):
    # NumPy turns such a unit into a str Python cannot hold; lower()/repr() on it raised SystemError
    members = _coo_members()
    if field == "format":
        members["format.npy"] = _npy(_beyond_unicode("coo"))
    elif field == "gpusparse":
        members["gpusparse.npy"] = _npy(_beyond_unicode('{"format": "coo", "version": 1}'))
    elif field == "compressed_axes":
        members.update({"format.npy": _npy(np.str_("csr")), "indptr.npy": _npy(np.array([0, 1, 1, 2])),
                        "indices.npy": _npy(np.array([1, 3])), "compressed_axes.npy": _npy(_beyond_unicode("0"))})
    else:
        members[f"{field}.npy"] = _npy(_beyond_unicode("ab"))
    path = _zip(tmp_path / "x.npz", members)
    with pytest.raises(FileFormatError, match=f"{path}: field '{field}' is not valid text: .*beyond U\\+10FFFF"):
        gs.load_npz(path)


_AS_LIMITED_MEMORY = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import gpusparse as gs
try:
    x = gs.load_npz(sys.argv[1])
    print("read", x.format, x.shape)
except MemoryError as exc:
    print("MemoryError", exc)
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("target, shape", [("csr", (2**40, 3)), ("csc", (3, 2**40)), ("csr", (2**29, 3))])
def test_compressed_array_stored_as_coo_checks_its_index_pointer_before_allocating(tmp_path, target, shape):
    # the pydata layout holds no indptr: its shape[major] + 1 entries come from the stored shape alone
    meta = np.str_(json.dumps({"format": target, "version": 1, "dense_dim": 0, "sorted": True, "unique": True}))
    path = _write(tmp_path / "x.npz", format=np.str_("coo"), shape=np.array(shape), coords=np.array([[0, 2], [1, 2]]),
                  data=np.array([1.0, 2.0]), fill_value=np.float64(1.0), gpusparse=meta)
    out = subprocess.run([sys.executable, "-c", _AS_LIMITED_MEMORY, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.startswith(f"MemoryError {path}: the index pointer of its {max(shape)} "), out.stdout + out.stderr
    assert "nothing was allocated" in out.stdout
    # the same file with a small shape reads
    small = _write(tmp_path / "small.npz", format=np.str_("coo"), shape=np.array([3, 3]),
                   coords=np.array([[0, 2], [1, 2]]), data=np.array([1.0, 2.0]), fill_value=np.float64(1.0),
                   gpusparse=meta)
    x = gs.load_npz(small)
    assert x.format == target and x.fill_value == 1.0
    assert_sparse_equal(x, np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 2.0]]))


def test_compressed_format_claimed_for_an_nd_coo(tmp_path):
    meta = np.str_(json.dumps({"format": "csr", "version": 1, "dense_dim": 0}))
    path = _write(tmp_path / "x.npz", format=np.str_("coo"), shape=np.array([3, 3, 3]),
                  coords=np.array([[0, 2], [1, 2], [0, 1]]), data=np.array([1.0, 2.0]), gpusparse=meta)
    with pytest.raises(FileFormatError, match=f"{path}: field 'gpusparse' claims format 'csr'"):
        gs.load_npz(path)
