"""Byte-level mutations and truncations of valid npz, Matrix Market and binsparse files.

Every mutated file is read by gpusparse and by the peer that defines the
format (``scipy.sparse.load_npz``, ``scipy.io.mmread``, the binsparse
reference implementation) in a child process whose address space is
limited, with tracemalloc measuring what the read allocated. Every outcome
must be either

* ``FileFormatError`` whose message starts with the file's name, or
* a valid array (``check()`` passes) that equals what was written, or what
  the peer reads from the same bytes (stored entries and shape; a peer that
  refuses the file leaves only validity to check),

and no read may allocate much more than the file holds. Mutations act on
the raw bytes, and also one layer down -- on a member of the zip archive
(rezipped, so its CRC holds), on the text inside a ``.gz``/``.bz2`` stream,
on the descriptor or a dataset of an HDF5 file -- where a raw flip would
almost always be caught by a checksum or the container's own parser.
"""

from __future__ import annotations

import base64
import bz2
import functools
import gzip
import io
import json
import os
import subprocess
import sys
import threading
import tempfile
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

#: Address space the child may add to what its imports take.
_AS_HEADROOM = 2 * 2**30
#: What a read may allocate (tracemalloc peak) beyond a multiple of the file's size.
_PEAK_SLACK = 32 * 2**20
_PEAK_PER_BYTE = 64


# --------------------------------------------------------------------------
# the child: reads files, reports outcomes as JSON lines
# --------------------------------------------------------------------------

def _canonical(rows, cols, values, shape):
    """Stored entries summed per position, zeros dropped, as sorted lists (NaN as a string)."""
    rows, cols, values = (np.asarray(a) for a in (rows, cols, values))
    if values.ndim != 1:
        values = values.reshape(len(rows), -1)[:, 0] if values.size else values.reshape(0)
    out = {}
    for r, c, v in zip(rows.tolist(), cols.tolist(), values.tolist()):
        out[(r, c)] = out.get((r, c), 0) + v
    entries = sorted((r, c, repr(v)) for (r, c), v in out.items() if v != 0)
    return {"shape": [int(s) for s in shape], "entries": entries}


def _ours(kind, path):
    import gpusparse as gs
    if kind == "npz":
        x = gs.load_npz(path)
    elif kind == "mtx":
        x = gs.io.mmread(path)
    else:
        x = gs.io.read_binsparse(path)
    x.check()
    if x.ndim != 2 or x.dense_dim:
        return {"shape": list(x.shape), "nd": True}
    coo = x.tocoo()
    return _canonical(coo.coords[0], coo.coords[1], coo.data, x.shape)


def _peer(kind, path):
    import scipy.io
    import scipy.sparse as sp
    if kind == "npz":
        m = sp.load_npz(path)
    elif kind == "mtx":
        m = scipy.io.mmread(path)
        if isinstance(m, np.ndarray):
            m = sp.coo_array(m) if m.size <= 2**20 else None
    else:
        import binsparse
        from binsparse.conversions.scipy import to_scipy
        m = to_scipy(binsparse.load_binsparse(path))
    if m is None:
        return None
    m = sp.coo_array(m)
    m.check_format() if hasattr(m, "check_format") else None
    if (m.row < 0).any() or (m.col < 0).any() or (m.row >= m.shape[0]).any() or (m.col >= m.shape[1]).any():
        return None
    return _canonical(m.row, m.col, m.data, m.shape)


def _child() -> None:
    import resource
    import tracemalloc
    import warnings

    import gpusparse  # noqa: F401  (imports before the limit)
    import scipy.io  # noqa: F401
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + _AS_HEADROOM, resource.RLIM_INFINITY))
    warnings.simplefilter("ignore")
    from gpusparse.io import FileFormatError
    directory = tempfile.mkdtemp()
    _warm_up(directory)
    for line in sys.stdin:
        case = json.loads(line)
        path = os.path.join(directory, f"case{case['suffix']}")
        with open(path, "wb") as f:
            f.write(base64.b64decode(case["payload"]))
        out = {}
        tracemalloc.start()
        try:
            out["ours"] = _ours(case["kind"], path)
        except FileFormatError as exc:
            out["raised"], out["message"] = "FileFormatError", str(exc)
        except BaseException as exc:  # noqa: BLE001 (reported to the parent, which fails the test)
            out["raised"], out["message"] = type(exc).__name__, str(exc)[:500]
        out["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out["path"] = path
        out["peer_follows"] = "ours" in out and not out["ours"].get("nd")
        # ours is reported before the peer runs, so that a peer killing the process is told from ours doing so
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
        if out["peer_follows"]:
            try:
                peer = _peer(case["kind"], path)
            except BaseException:  # noqa: BLE001 (the peer refusing the file is an answer too)
                peer = None
            sys.stdout.write(json.dumps({"peer": peer}) + "\n")
            sys.stdout.flush()


def _warm_up(directory) -> None:
    """Read one valid file of each kind, by gpusparse and by the peer, before anything is measured.

    The first read of a kind imports modules (h5py, the binsparse reader)
    and fills caches; tracemalloc would count that against the first case
    read by a new child, e.g. the one after a case killed the previous child.
    """
    for (kind, suffix, _), payload in _bases().items():
        path = os.path.join(directory, f"warm{suffix}")
        with open(path, "wb") as f:
            f.write(payload)
        for read in (_ours, _peer):
            try:
                read(kind, path)
            except Exception:  # noqa: BLE001 (a missing peer: its tests skip)
                pass


#: Seconds one read may take in the child before it counts as a hang (a reader must never loop without bound).
READ_TIMEOUT = 120


class _Reader:
    """The parent's side of one child process, restarted when a case kills it."""

    def __init__(self):
        self.proc = None

    def _readline(self):
        """The child's next line, and whether it was killed for taking more than :data:`READ_TIMEOUT`."""
        proc = self.proc
        watchdog = threading.Timer(READ_TIMEOUT, proc.kill)
        watchdog.start()
        try:
            line = proc.stdout.readline()
        finally:
            watchdog.cancel()
        if line:
            return line, False
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return line, proc.returncode == -9  # our watchdog's SIGKILL (a crash gives its own signal)

    def run(self, case):
        """The child's report on ``case``; ``peer`` None where the peer refused the file or killed the child."""
        if self.proc is None or self.proc.poll() is not None:
            tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"], text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tests)
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        line, hung = self._readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            if hung:
                pytest.fail(f"reading a mutated {case['kind']} file ({case['suffix']}) hung: no answer in "
                            f"{READ_TIMEOUT} s")
            pytest.fail(f"reading a mutated {case['kind']} file ({case['suffix']}) killed the reader: status {code}")
        out = json.loads(line)
        if out.pop("peer_follows"):
            line, _ = self._readline()  # a peer that hangs is killed: it refused the file
            if line:
                out.update(json.loads(line))
            else:  # the peer crashed (SciPy's mmread does on some files): only validity is left to check
                out["peer"], out["peer_status"] = None, self.proc.wait()
                self.proc = None
        return out

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None


@pytest.fixture(scope="module")
def reader():
    r = _Reader()
    yield r
    r.close()


# --------------------------------------------------------------------------
# valid files and their mutations
# --------------------------------------------------------------------------

def _array(format="csr", dtype=np.float64):
    import gpusparse as gs
    dense = np.zeros((5, 6), dtype=dtype)
    dense[0, 1], dense[2, 3], dense[4, 0], dense[4, 5] = 1, 3, 7, 2
    return gs.fromdense(dense, format=format, device="cpu")


@functools.lru_cache(maxsize=None)
def _bases():
    """Valid files: ``{(kind, suffix, variant): bytes}``."""
    import gpusparse as gs
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for fmt in ("csr", "coo"):
            for compressed in (False, True):
                path = os.path.join(d, f"{fmt}{compressed}.npz")
                gs.save_npz(path, _array(fmt), compressed=compressed)
                out["npz", ".npz", f"{fmt}-{compressed}"] = open(path, "rb").read()
        for fmt, dtype in (("coo", np.float64), ("csr", np.int64)):
            path = os.path.join(d, f"{fmt}.mtx")
            gs.io.mmwrite(path, _array(fmt, dtype), comment="fuzz")
            out["mtx", ".mtx", fmt] = open(path, "rb").read()
        path = os.path.join(d, "sym.mtx")
        gs.io.mmwrite(path, gs.fromdense(np.array([[1.0, 2.0], [2.0, 0.0]]), device="cpu"))
        out["mtx", ".mtx", "symmetric"] = open(path, "rb").read()
        for fmt in ("csr", "coo"):
            path = os.path.join(d, f"{fmt}.h5")
            gs.io.write_binsparse(path, _array(fmt))
            out["h5", ".h5", fmt] = open(path, "rb").read()
    return out


_EDITS = st.lists(st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 2**31), st.integers(1, 255)),
    st.tuples(st.just("set"), st.integers(0, 2**31), st.sampled_from(b"09-+.e \n%\x00\xff9")),
    st.tuples(st.just("delete"), st.integers(0, 2**31), st.integers(1, 16)),
    st.tuples(st.just("insert"), st.integers(0, 2**31), st.sampled_from([b"9", b"99999999999", b"0", b" ", b"\n",
                                                                       b"-1", b"1e23", b"\xff" * 8])),
    st.tuples(st.just("truncate"), st.integers(0, 2**31), st.just(0)),
), min_size=1, max_size=4)


def _mutate(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for op, where, arg in edits:
        if not b and op != "insert":
            break
        i = where % (len(b) + (op == "insert"))
        if op == "flip":
            b[i] ^= arg
        elif op == "set":
            b[i] = arg
        elif op == "delete":
            del b[i:i + arg]
        elif op == "insert":
            b[i:i] = arg
        else:
            del b[i:]
    return bytes(b)


def _rezip(data: bytes, member: int, edits) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        items = [(info, z.read(info)) for info in z.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for k, (info, payload) in enumerate(items):
            z.writestr(info, _mutate(payload, edits) if k == member % len(items) else payload)
    return out.getvalue()


def _mutate_h5(data: bytes, layer: str, which: int, edits) -> bytes:
    import h5py
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.h5")
        with open(path, "wb") as f:
            f.write(data)
        with h5py.File(path, "r+") as f:
            if layer == "descriptor":
                text = _mutate(f.attrs["binsparse"].encode(), edits)
                f.attrs["binsparse"] = text.decode("utf-8", "replace").replace("\0", " ")  # HDF5 text ends at NUL
            else:
                key = sorted(f)[which % len(f)]
                arr = f[key][()]
                raw = _mutate(arr.tobytes(), edits)
                raw = raw[:len(raw) - len(raw) % arr.dtype.itemsize]
                del f[key]
                f[key] = np.frombuffer(raw, dtype=arr.dtype)
        return open(path, "rb").read()


# --------------------------------------------------------------------------
# the oracle
# --------------------------------------------------------------------------

def _check(reader, kind, suffix, payload, original):
    out = reader.run({"kind": kind, "suffix": suffix, "payload": base64.b64encode(payload).decode()})
    assert out["peak"] < _PEAK_SLACK + _PEAK_PER_BYTE * len(payload), (
        f"reading {len(payload)} bytes allocated {out['peak']} bytes")
    if "raised" in out:
        assert out["raised"] == "FileFormatError", f"{out['raised']}: {out['message']}"
        assert out["message"].startswith(out["path"] + ": ") or out["message"].startswith(out["path"] + "["), \
            out["message"]
        return "refused"
    ours = out["ours"]
    if ours == original or ours.get("nd"):
        return "read"
    peer = out.get("peer")
    if peer is not None:
        assert ours == peer, f"gpusparse read {ours}, the peer {peer}"
    return "read"


@pytest.fixture(scope="module")
def checked(reader):
    """The names of the valid files, once each has been read as the peer reads it."""
    _originals(reader)
    return sorted(_bases())


_ORIGINALS = {}


def _originals(reader):
    """What each valid file reads as (checked against the peer)."""
    if _ORIGINALS:
        return _ORIGINALS
    out = _ORIGINALS
    bases = _bases()
    for (kind, suffix, variant), payload in bases.items():
        got = reader.run({"kind": kind, "suffix": suffix, "payload": base64.b64encode(payload).decode()})
        assert "ours" in got and got["peer"] == got["ours"], got
        out[kind, suffix, variant] = got["ours"]
    return out


def _pick(kind, index):
    keys = sorted(k for k in _bases() if k[0] == kind)
    return keys[index % len(keys)]


@given(index=st.integers(0, 7), member=st.integers(0, 15), layer=st.sampled_from(["archive", "member"]),
       edits=_EDITS)
def test_mutated_npz(reader, checked, index, member, layer, edits):
    key = _pick("npz", index)
    data = _bases()[key]
    payload = _mutate(data, edits) if layer == "archive" else _rezip(data, member, edits)
    _check(reader, "npz", ".npz", payload, _ORIGINALS[key])


@given(index=st.integers(0, 7), suffix=st.sampled_from([".mtx", ".mtx.gz", ".mtx.bz2"]),
       layer=st.sampled_from(["text", "stream"]), edits=_EDITS)
def test_mutated_matrix_market(reader, checked, index, suffix, layer, edits):
    key = _pick("mtx", index)
    text = _bases()[key]
    pack = {".mtx": bytes, ".mtx.gz": lambda b: gzip.compress(b, mtime=0), ".mtx.bz2": bz2.compress}[suffix]
    payload = pack(_mutate(text, edits)) if layer == "text" or suffix == ".mtx" else _mutate(pack(text), edits)
    _check(reader, "mtx", suffix, payload, _ORIGINALS[key])


@given(index=st.integers(0, 7), which=st.integers(0, 15), layer=st.sampled_from(["file", "descriptor", "dataset"]),
       edits=_EDITS)
def test_mutated_binsparse(reader, checked, index, which, layer, edits):
    pytest.importorskip("binsparse")
    key = _pick("h5", index)
    data = _bases()[key]
    payload = _mutate(data, edits) if layer == "file" else _mutate_h5(data, layer, which, edits)
    _check(reader, "h5", ".h5", payload, _ORIGINALS[key])


@pytest.mark.parametrize("kind, suffix", [("npz", ".npz"), ("mtx", ".mtx"), ("mtx", ".mtx.gz"),
                                          ("mtx", ".mtx.bz2"), ("h5", ".h5")])
def test_every_truncation_of_a_small_file(reader, checked, kind, suffix):
    key = sorted(k for k in checked if k[0] == kind)[0]
    data = _bases()[key]
    if suffix == ".mtx.gz":
        data = gzip.compress(data, mtime=0)
    elif suffix == ".mtx.bz2":
        data = bz2.compress(data)
    step = max(1, len(data) // 40)
    outcomes = {_check(reader, kind, suffix, data[:n], _ORIGINALS[key]) for n in range(0, len(data), step)}
    assert "refused" in outcomes


def test_a_peer_killing_the_reader_is_not_blamed_on_gpusparse(reader, checked):
    # scipy.io.mmread (fast_matrix_market 1.7) segfaults on a last line without newline with anything after its
    # last number -- here the final newline flipped to a vertical tab; gpusparse's mmread reads the file
    key = ("mtx", ".mtx", "symmetric")
    payload = _bases()[key][:-1] + b"\x0b"
    out = reader.run({"kind": "mtx", "suffix": ".mtx", "payload": base64.b64encode(payload).decode()})
    assert out["ours"] == _ORIGINALS[key], out
    assert out["peer"] == out["ours"] or out["peer_status"] < 0, out
    assert _check(reader, "mtx", ".mtx", payload, _ORIGINALS[key]) == "read"  # on a new child


@pytest.mark.parametrize("kind", ["npz", "mtx", "h5"])
def test_a_new_reader_is_warm(reader, checked, kind):
    # the first read of a kind imports modules (h5py: about 36 MB traced), which the oracle would count as
    # allocated by the first case read after a crash restarted the child
    if kind == "h5":
        pytest.importorskip("binsparse")
    reader.close()
    key = _pick(kind, 0)
    out = reader.run({"kind": kind, "suffix": key[1], "payload": base64.b64encode(_bases()[key]).decode()})
    assert out["ours"] == _ORIGINALS[key]
    assert out["peak"] < 2**20, out


if __name__ == "__main__" and sys.argv[1:] == ["--child"]:
    sys.path.insert(0, os.getcwd())
    _child()
