"""gpusparse.io's Matrix Market files against scipy.io.mmread/mmwrite."""

from __future__ import annotations

import bz2
import gzip
import io
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import RTOL, assert_sparse_equal
from gpusparse.io import FileFormatError, mminfo, mmread, mmwrite
from strategies import coo_cases

pytest.importorskip("fast_matrix_market")

#: What each value dtype reads back as (Matrix Market has fields, not dtypes), as scipy.io.mmread.
_READ_DTYPE = {"b": np.int64, "i": np.int64, "u": np.int64, "f": np.float64, "c": np.complex128}


def _bytes(x, **kwargs) -> io.BytesIO:
    buffer = io.BytesIO()
    mmwrite(buffer, x, **kwargs)
    buffer.seek(0)
    return buffer


@given(case=coo_cases(min_ndim=2, max_ndim=2, sparse_dim=2, max_dense_dim=0, fill=False, nan=False),
       format=st.sampled_from(["coo", "csr", "csc"]), symmetry=st.sampled_from([None, "general"]))
def test_round_trip_and_scipy_agree(device, case, format, symmetry):
    x = case.build(device)
    buffer = _bytes(x, symmetry=symmetry)
    y = mmread(buffer, device=device, format=format)
    assert y.format == format and y.device == x.device
    big_unsigned = case.dtype == np.uint64 and case.nnz and int(case.data.max()) > np.iinfo(np.int64).max
    assert y.dtype == (np.uint64 if big_unsigned else _READ_DTYPE[case.dtype.kind])
    expected = case.dense()
    dense = y.todense()
    dense = dense.get() if hasattr(dense, "get") else dense
    # duplicates are summed in float64/complex128 after reading, in the value dtype by the oracle
    rtol = RTOL.get(case.dtype, 0)
    np.testing.assert_allclose(dense.astype(case.dtype), expected, rtol=rtol)
    buffer.seek(0)
    theirs = scipy.io.mmread(buffer)
    np.testing.assert_allclose(theirs.toarray().astype(case.dtype), expected, rtol=rtol)


def _symmetric_cases(rng):
    a = rng.integers(-5, 5, size=(6, 6)) * (rng.random((6, 6)) < 0.4)
    c = a + 1j * rng.integers(-5, 5, size=(6, 6)) * (rng.random((6, 6)) < 0.4)
    skew = np.tril(a, -1) - np.tril(a, -1).T
    return {
        "symmetric": (a + a.T).astype(np.float64),
        "skew-symmetric": skew.astype(np.float64),
        "hermitian": np.tril(c, -1) + np.tril(c, -1).conj().T + np.diag(np.diag(a)),
        "general": (a + np.triu(a, 1)).astype(np.float64) + np.eye(6, k=1) * 7,
    }


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric", "hermitian", "general"])
def test_symmetries_detected_and_read_by_scipy(tmp_path, rng, symmetry):
    dense = _symmetric_cases(rng)[symmetry]
    x = gs.fromdense(dense, device="cpu")
    path = tmp_path / "x.mtx"
    mmwrite(path, x)
    assert mminfo(path)[5] == symmetry
    np.testing.assert_array_equal(scipy.io.mmread(path).toarray(), dense)
    assert_sparse_equal(mmread(path), dense)
    mmwrite(path, x, symmetry=symmetry)  # chosen (and verified) instead of detected
    assert mminfo(path)[5] == symmetry


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric", "hermitian"])
def test_reads_scipy_symmetric_files(tmp_path, rng, symmetry):
    dense = _symmetric_cases(rng)[symmetry]
    path = tmp_path / "x.mtx"
    scipy.io.mmwrite(path, sp.coo_array(dense), symmetry=symmetry)
    assert mminfo(path)[5] == symmetry
    assert_sparse_equal(mmread(path), dense)


def test_chosen_symmetry_is_verified(tmp_path):
    path = tmp_path / "x.mtx"
    x = gs.fromdense(np.array([[1.0, 2.0], [0.0, 1.0]]), device="cpu")
    with pytest.raises(ValueError, match="symmetry='symmetric', but x is 'general'"):
        mmwrite(path, x, symmetry="symmetric")
    assert not path.exists()


def test_pattern_both_ways(tmp_path, rng):
    dense = (rng.random((5, 7)) < 0.3).astype(np.float64)
    path = tmp_path / "p.mtx"
    mmwrite(path, gs.fromdense(dense * 3, device="cpu"), field="pattern")
    assert mminfo(path)[4] == "pattern"
    assert_sparse_equal(mmread(path), dense)
    scipy.io.mmwrite(tmp_path / "q.mtx", sp.coo_array(dense), field="pattern")
    assert_sparse_equal(mmread(tmp_path / "q.mtx"), dense)


def test_array_files_both_ways(tmp_path, rng):
    dense = rng.random((4, 3)) * (rng.random((4, 3)) < 0.5)
    scipy.io.mmwrite(tmp_path / "a.mtx", dense)
    assert mminfo(tmp_path / "a.mtx")[3] == "array"
    assert_sparse_equal(mmread(tmp_path / "a.mtx", format="csr"), dense)
    mmwrite(tmp_path / "b.mtx", dense)
    np.testing.assert_array_equal(scipy.io.mmread(tmp_path / "b.mtx"), dense)


@pytest.mark.parametrize("suffix,opener", [(".gz", gzip.open), (".bz2", bz2.open)])
def test_compressed_files(tmp_path, rng, suffix, opener):
    dense = rng.random((8, 6)) * (rng.random((8, 6)) < 0.4)
    x = gs.fromdense(dense, format="csr", device="cpu")
    path = tmp_path / f"x.mtx{suffix}"
    mmwrite(path, x, comment="two\nlines")
    with opener(path, "rb") as f:
        text = f.read().decode()
    assert text.startswith("%%MatrixMarket matrix coordinate real general\n%two\n%lines\n")
    assert_sparse_equal(mmread(path), dense)
    np.testing.assert_array_equal(scipy.io.mmread(path).toarray(), dense)
    assert mminfo(path)[:3] == (8, 6, x.nnz)


def test_values_of_every_dtype(device):
    for dtype in [np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float32, np.complex64, np.complex128]:
        dense = (np.arange(12).reshape(3, 4) % 3 == 1) * np.arange(12).reshape(3, 4)
        x = gs.fromdense(dense.astype(dtype), device=device)
        y = mmread(_bytes(x), device=device)
        np.testing.assert_array_equal(gs.to_scipy(y.to("cpu")).toarray().astype(dtype), dense.astype(dtype))
    big = gs.COO([[0], [0]], np.array([2**64 - 1], dtype=np.uint64), shape=(1, 1), device="cpu")
    buffer = _bytes(big)
    assert b"unsigned-integer" in buffer.getvalue().splitlines()[0]
    assert mmread(buffer).data[0] == 2**64 - 1


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (4, 0), (3, 3)])
def test_empty(tmp_path, shape):
    x = gs.zeros(shape, device="cpu")
    mmwrite(tmp_path / "e.mtx", x)
    y = mmread(tmp_path / "e.mtx")
    assert y.shape == shape and y.nnz == 0
    assert scipy.io.mmread(tmp_path / "e.mtx").shape == shape


def test_64_bit_indices(tmp_path):
    n = 2**31 + 10
    x = gs.COO([[n - 1, 5], [2, n - 2]], [1.5, -2.0], shape=(n, n), device="cpu")
    mmwrite(tmp_path / "big.mtx", x, symmetry="general")
    y = mmread(tmp_path / "big.mtx")
    assert y.shape == (n, n)
    np.testing.assert_array_equal(y.coords, [[n - 1, 5], [2, n - 2]])
    np.testing.assert_array_equal(y.data, [1.5, -2.0])


def test_precision(tmp_path):
    x = gs.COO([[0], [0]], [np.pi], shape=(1, 1), device="cpu")
    text = _bytes(x, precision=3).getvalue().decode()
    assert float(text.split()[-1]) == 3.14


def test_progress_bar(tmp_path, capsys):
    pytest.importorskip("tqdm")
    x = gs.random((30, 30), density=0.2, device="cpu", seed=1)
    for suffix in (".mtx", ".mtx.gz"):
        path = tmp_path / f"x{suffix}"
        mmwrite(path, x, progress=True)
        y = mmread(path, progress=True)
        np.testing.assert_array_equal(y.todense(), x.todense())
    assert "reading x.mtx" in capsys.readouterr().err


# --------------------------------------------------------------------------
# bad files, bad arguments, failed writes
# --------------------------------------------------------------------------

_BAD = {
    "truncated": ("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.5\n3 2 2.0\n",
                  r"Truncated file.*declares 3 entries"),
    "wrong header": ("%%MatrixMarket matrix coordinate reel general\n3 3 1\n1 1 1.5\n",
                     r"line 1: Invalid MatrixMarket header element: reel"),
    "no banner": ("3 3 1\n1 1 1.5\n", r"line 1: Not a Matrix Market file"),
    "index out of range": ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n4 2 2.0\n",
                           r"line 4: Row index out of bounds"),
    "too many entries": ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1.5\n3 2 2.0\n",
                         r"line 4: Too many lines"),
    "bad value": ("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 x\n", r"line 3: "),
}


@pytest.mark.parametrize("what", list(_BAD))
def test_bad_files_name_file_and_line(tmp_path, what):
    text, message = _BAD[what]
    path = tmp_path / "bad.mtx"
    path.write_text(text)
    with pytest.raises(FileFormatError, match=f"{path}: {message}"):
        mmread(path)
    gz = tmp_path / "bad.mtx.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(FileFormatError, match=str(gz)):
        mmread(gz)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        mmread("no-such-file.mtx")


def test_bad_arguments(rng):
    x = gs.random((3, 3), density=0.5, device="cpu", seed=0)
    with pytest.raises(ValueError, match="format must be"):
        mmread(io.BytesIO(b""), format="dense")
    with pytest.raises(ValueError, match="field must be"):
        _bytes(x, field="text")
    with pytest.raises(ValueError, match="symmetry must be"):
        _bytes(x, symmetry="upper")
    with pytest.raises(ValueError, match="fill value"):
        _bytes(gs.COO([[0], [0]], [1.0], shape=(2, 2), fill_value=1.0, device="cpu"))
    with pytest.raises(ValueError, match="2-d"):
        _bytes(gs.random((2, 2, 2), density=0.5, device="cpu"))
    with pytest.raises(TypeError, match="x must be"):
        _bytes([[1, 2]])


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    import fast_matrix_market

    def broken(target, a, **kwargs):
        partial = b"%%MatrixMarket matrix coordinate real general\n3 3 "
        if isinstance(target, (str, os.PathLike)):
            with open(target, "wb") as f:
                f.write(partial)
        else:
            target.write(partial)
        raise OSError("disk full")

    monkeypatch.setattr(fast_matrix_market, "mmwrite", broken)
    monkeypatch.setattr(scipy.io, "mmwrite", broken)
    with pytest.raises(OSError, match="disk full"):
        mmwrite(tmp_path / "x.mtx", gs.eye(3, device="cpu"))
    with pytest.raises(OSError, match="disk full"):
        mmwrite(tmp_path / "x.mtx.gz", gs.eye(3, device="cpu"))
    assert os.listdir(tmp_path) == []


def test_target_name_is_kept(tmp_path):
    mmwrite(tmp_path / "x.txt", gs.eye(3, device="cpu"))
    assert os.listdir(tmp_path) == ["x.txt"]
    assert mmread(tmp_path / "x.txt").nnz == 3


# --------------------------------------------------------------------------
# file modes and symbolic links: as scipy.io.mmwrite
# --------------------------------------------------------------------------

def _mode(path):
    return os.stat(path).st_mode & 0o7777


@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz", ".mtx.bz2"])
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o027])
def test_new_file_mode_is_scipys(tmp_path, umask, suffix):
    old = os.umask(umask)
    try:
        scipy.io.mmwrite(tmp_path / "peer.mtx", sp.eye(3))
        mmwrite(tmp_path / f"ours{suffix}", gs.eye(3, device="cpu"))
    finally:
        os.umask(old)
    assert _mode(tmp_path / f"ours{suffix}") == _mode(tmp_path / "peer.mtx") == 0o666 & ~umask


@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
@pytest.mark.parametrize("mode", [0o640, 0o604])
def test_overwrite_keeps_mode_and_writes_through_symlinks(tmp_path, mode, suffix):
    seen = {}
    writers = {"peer": lambda p: scipy.io.mmwrite(p, sp.eye(3)), "ours": lambda p: mmwrite(p, gs.eye(3, device="cpu"))}
    for who, write in writers.items():
        suffix_here = suffix if who == "ours" else ".mtx"
        target = tmp_path / f"{who}{suffix_here}"
        write(target)
        os.chmod(target, mode)
        link = tmp_path / f"{who}-link{suffix_here}"
        link.symlink_to(target.name)
        write(link)
        seen[who] = (_mode(target), link.is_symlink(), os.readlink(link) == target.name)
    assert seen["ours"] == seen["peer"] == (mode, True, True)
    assert_sparse_equal(mmread(tmp_path / f"ours-link{suffix}"), np.eye(3))
    assert len(os.listdir(tmp_path)) == 4


# --------------------------------------------------------------------------
# hostile files
# --------------------------------------------------------------------------

_GOOD = b"%%MatrixMarket matrix coordinate real general\n%a comment\n4 5 3\n1 1 1.5\n4 2 -2.0\n2 5 3e10\n"
_COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress}


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_damaged_compressed_streams(tmp_path, suffix):
    packed = _COMPRESS[suffix](_GOOD)
    cases = {f"cut{n}": packed[:n] for n in (0, 3, 10, len(packed) // 2, len(packed) - 1)}
    cases["garbage"] = packed[:3] + b"\x00" * 5 + packed[8:]
    cases["flipped"] = packed[:20] + bytes([packed[20] ^ 0xFF]) + packed[21:]
    cases["appended"] = packed + b"junk"
    for what, payload in cases.items():
        path = tmp_path / f"{what}.mtx{suffix}"
        path.write_bytes(payload)
        for read in (mmread, mminfo):
            try:
                got = read(path)
            except FileFormatError as exc:
                assert str(exc).startswith(f"{path}: "), (what, exc)
                continue
            # read: only when the stream still decompresses to the file, as Python's own reader says
            opener = gzip.open if suffix == ".gz" else bz2.open
            with opener(path, "rb") as f:
                assert f.read() == _GOOD, what
            if read is mmread:
                assert_sparse_equal(got, scipy.io.mmread(io.BytesIO(_GOOD)).toarray())


@pytest.mark.parametrize("text", [
    b"%%MatrixMarket matrix coordinate real general\n3 3 1\n100000000000000000000000 1 1.0\n",
    b"%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 100000000000000000000000\n",
    b"%%MatrixMarket matrix coordinate real general\n100000000000000000000000 3 1\n1 1 1.0\n",
    b"%%MatrixMarket matrix coordinate real general\n3 3 100000000000000000000000\n1 1 1.0\n",
])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_integers_out_of_range(tmp_path, text, suffix):
    path = tmp_path / f"x.mtx{suffix}"
    path.write_bytes(_COMPRESS[suffix](text) if suffix else text)
    with pytest.raises((ValueError, OverflowError)):
        scipy.io.mmread(io.BytesIO(text))  # the peer refuses it too
    with pytest.raises(FileFormatError, match=f"{path}: .*Integer out of range"):
        mmread(path)
    if b"3 3 1\n" not in text:
        with pytest.raises(FileFormatError, match=f"{path}: Integer out of range"):
            mminfo(path)


_AS_LIMITED = """
import io, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import gpusparse as gs
path = sys.argv[1]
source = io.BytesIO(open(path, "rb").read()) if sys.argv[2] == "stream" else path
try:
    gs.io.mmread(source)
except gs.io.FileFormatError as exc:
    print("FileFormatError", exc)
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("how", ["", ".gz", ".bz2", "stream"])
@pytest.mark.parametrize("size_line", [b"coordinate real general\n3 3 1000000000000",
                                       b"coordinate pattern general\n3 3 1000000000",
                                       b"array real general\n1000000 1000000",
                                       b"array complex skew-symmetric\n100000 100000"])
def test_size_line_claiming_more_than_the_file_holds(tmp_path, size_line, how):
    import subprocess
    import sys
    text = b"%%MatrixMarket matrix " + size_line + b"\n1 1 1.0\n2 2 2.0\n" * 1000
    suffix = how if how != "stream" else ""
    path = tmp_path / f"x.mtx{suffix}"
    path.write_bytes(_COMPRESS[suffix](text) if suffix else text)
    out = subprocess.run([sys.executable, "-c", _AS_LIMITED, str(path), how], capture_output=True, text=True,
                         timeout=120)
    name = "<BytesIO>" if how == "stream" else str(path)
    assert out.stdout.startswith(f"FileFormatError {name}: the size line declares"), out.stdout + out.stderr


_SMALLEST = {  # the shortest bodies a size line allows: single-digit tokens, no newline at the end
    "coordinate real general": b"3 3 3\n1 1 1\n2 2 2\n3 1 3",
    "coordinate pattern general": b"3 3 2\n1 1\n3 2",
    "coordinate complex hermitian": b"2 2 2\n1 1 1 0\n2 1 2 3",
    "coordinate integer skew-symmetric": b"3 3 1\n3 1 5",
    "array real general": b"2 3\n1\n2\n3\n4\n5\n6",
    "array integer symmetric": b"2 2\n1\n2\n3",
    "array real skew-symmetric": b"3 3\n1\n2\n3",
    "array complex general": b"1 2\n1 2\n3 4",
}


@pytest.mark.parametrize("how", ["", ".gz", "stream"])
@pytest.mark.parametrize("kind", list(_SMALLEST))
def test_smallest_files_the_size_line_allows_still_read(tmp_path, kind, how):
    text = b"%%MatrixMarket matrix " + kind.encode() + b"\n" + _SMALLEST[kind]
    expected = scipy.io.mmread(io.BytesIO(text))
    expected = expected.toarray() if sp.issparse(expected) else expected
    suffix = how if how != "stream" else ""
    path = tmp_path / f"x.mtx{suffix}"
    path.write_bytes(_COMPRESS[suffix](text) if suffix else text)
    got = mmread(io.BytesIO(text) if how == "stream" else path)
    assert_sparse_equal(got, expected)
    short = text[:-1]  # one byte less: an entry fewer
    path.write_bytes(_COMPRESS[suffix](short) if suffix else short)
    try:
        got = mmread(io.BytesIO(short) if how == "stream" else path)
    except FileFormatError as exc:
        assert str(exc).startswith(f"{path}: " if how != "stream" else "<BytesIO>: ")
        return
    # the engine (and so SciPy) fills a short array file with zeros; where it reads one, both agree
    assert_sparse_equal(got, scipy.io.mmread(io.BytesIO(short)))


_CRASHERS = [b"2 1 2\x0c", b"2 1 2 ", b"2 1 2\t", b"2 1 2\r", b"2 1 2\x0b1", b"2 1 2\x0b", b"2 1 2x", b"2 1 2\x0b\x0b", b"2 1 2\x00", b"2\x00 1 2\n"]


@pytest.mark.parametrize("how", ["", ".gz", "stream"])
@pytest.mark.parametrize("last", _CRASHERS)
def test_last_lines_that_crash_the_engine(tmp_path, last, how):
    import subprocess
    import sys
    text = b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n" + last
    path = tmp_path / f"x.mtx{how if how != 'stream' else ''}"
    path.write_bytes(gzip.compress(text) if how == ".gz" else text)
    code = ("import io, sys, gpusparse as gs\n"
            "src = io.BytesIO(open(sys.argv[1], 'rb').read()) if sys.argv[2] == 'stream' else sys.argv[1]\n"
            "try:\n    print(gs.io.mmread(src).todense().tolist())\n"
            "except gs.io.FileFormatError as exc:\n    print('FileFormatError', exc)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path), how], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # fast_matrix_market 1.7 (and scipy.io.mmread) segfault here
    if b"\x00" in last:
        assert out.stdout.startswith("FileFormatError") and "NUL byte" in out.stdout
    else:
        assert out.stdout.strip() == "[[1.0, 0.0], [2.0, 0.0]]"


_AS_LIMITED_FORMAT = """
import io, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
import gpusparse as gs
path = sys.argv[1]
source = io.BytesIO(open(path, "rb").read()) if sys.argv[2] == "stream" else path
try:
    x = gs.io.mmread(source, format=sys.argv[3])
    print("read", x.format, x.shape)
except MemoryError as exc:
    print("MemoryError", exc)
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("how", ["", "stream"])
@pytest.mark.parametrize("format, size_line", [("csr", b"1099511627776 3 1"), ("csc", b"3 1099511627776 1"),
                                               ("csr", b"536870912 3 1")])
def test_compressed_read_checks_the_index_pointer_the_shape_implies(tmp_path, how, format, size_line):
    import subprocess
    import sys
    # a shape needs no bytes in the file, but rows + 1 (columns + 1) indptr entries in memory
    text = b"%%MatrixMarket matrix coordinate real general\n" + size_line + b"\n1 1 1.0\n"
    path = tmp_path / "x.mtx"
    path.write_bytes(text)
    out = subprocess.run([sys.executable, "-c", _AS_LIMITED_FORMAT, str(path), how, format], capture_output=True,
                         text=True, timeout=120)
    name = "<BytesIO>" if how == "stream" else str(path)
    n = max(int(s) for s in size_line.split()[:2])
    assert out.stdout.startswith(f"MemoryError {name}: the index pointer of its {n} "), out.stdout + out.stderr
    assert mmread(path).shape == tuple(int(s) for s in size_line.split()[:2])  # as COO it needs no more
