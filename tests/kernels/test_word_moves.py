"""CPU kernels that only move values see them as words of their item size: bits unchanged, one compilation per size."""

import numpy as np
import pytest

from gpusparse._kernels import cpu
from gpusparse._kernels.cpu import _common, _layout, _select

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.float32, np.int64, np.float64, np.complex64, np.complex128]


def _values(rng, shape, dtype):
    """Random bits of ``dtype``, with NaNs of several payloads and negative zeros among floats."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    out = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(shape)
    if dtype.kind in "fc":
        flat = out.reshape(-1)
        flat[::7] = -0.0
        flat[3::11] = np.nan
    return out


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [0, 1, 3])
def test_moves_keep_bits(dtype, width):
    rng = np.random.default_rng(7)
    values = _values(rng, (40, width), dtype)
    index = rng.integers(0, 40, 30)
    assert np.array_equal(_bits(cpu.gather(values, index)), _bits(values[index]))
    filled = cpu.gather(values, np.where(index > 20, -1, index), fill=values.dtype.type(1))
    expect = np.where((index > 20)[:, None], values.dtype.type(1), values[index])
    assert np.array_equal(_bits(filled), _bits(expect))
    out = np.zeros((50, width), dtype)
    keys = rng.permutation(50)[:40]
    cpu.scatter_dense(keys, values, out)
    expect = np.zeros((50, width), dtype)
    expect[keys] = values
    assert np.array_equal(_bits(out), _bits(expect))
    out = np.zeros((12, width), dtype)
    cpu.copy_segments(values, np.array([0, 30]), np.array([0, 6]), np.array([6, 6]), out)
    assert np.array_equal(_bits(out), _bits(np.concatenate([values[0:6], values[30:36]])))
    rows = np.ascontiguousarray(values.T)
    if rows.shape[1]:
        clipped = np.array([-3, 0, 39, 99])
        assert np.array_equal(_bits(cpu.take_columns(rows, np.concatenate([index, clipped]))),
                              _bits(rows[:, np.concatenate([index, [0, 0, 39, 39]])]))


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("op", ["add", "multiply"])
def test_merge_rows_values_moves_values_as_words(dtype, op):
    sp = pytest.importorskip("scipy.sparse")
    n = 200
    a, b = (sp.random(n, n, density=0.05, random_state=s, format="csr", dtype=np.float64) for s in (1, 2))
    a.data = (a.data * 8).astype(dtype) + (1j if np.dtype(dtype).kind == "c" else 0)
    b.data = (b.data * 8).astype(dtype)
    a, b = a.astype(dtype), b.astype(dtype)
    indptr, indices, data = cpu.merge_rows_values(a.indptr, a.indices, a.data, b.indptr, b.indices, b.data, op)
    expect = (a + b if op == "add" else a.multiply(b)).tocsr()
    got = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    assert data.dtype == dtype and abs(got - expect).max() == 0


def test_as_words_views():
    for dtype, word in [(np.bool_, np.uint8), (np.float32, np.uint32), (np.int64, np.uint64),
                        (np.complex64, np.uint64), (np.float16, np.uint16)]:
        a = np.zeros((3, 2), dtype)
        w = _common.as_words(a)
        assert w.dtype == word and w.shape == (3, 2) and np.shares_memory(w, a)
    c = np.arange(6, dtype=np.complex128).reshape(3, 2)
    w = _common.as_words(c)
    assert w.shape == (3, 4) and np.shares_memory(w, c)
    assert np.array_equal(w.view(c.dtype), c)
    assert _common.as_words(np.zeros((0, 2), np.complex128)).shape == (0, 4)
    assert _common.as_words(np.zeros((4, 0), np.complex128)).shape == (4, 0)
    ro = np.zeros(3)
    ro.flags.writeable = False
    assert _common.read_only(ro) is ro
    view = _common.read_only(np.zeros(3))
    assert not view.flags.writeable


def test_one_specialisation_per_item_size():
    # Every 8-byte dtype (and complex128, as pairs of words) shares one
    # compiled gather, writable or read-only values alike.
    rng = np.random.default_rng(0)
    index = rng.integers(0, 8, 5)
    for dtype in (np.float64, np.int64, np.uint64, np.complex64, np.complex128):
        values = _values(rng, (8, 2), dtype)
        cpu.gather(values, index)
        values.flags.writeable = False
        cpu.gather(values, index)
    words = {sig[0].dtype for sig in _layout._gather_rows.dispatcher.signatures}
    eight = [sig for sig in _layout._gather_rows.dispatcher.signatures if sig[0].dtype.bitwidth == 64]
    assert all(str(w).startswith("uint") for w in words)
    assert len(eight) == 1, eight
    assert len(_select._rows.signatures) <= 1  # sizes, not arrays
