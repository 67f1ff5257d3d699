"""Shape manipulation against NumPy: every function, any rank and sparse/dense split, every format."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import CPU, assert_same_on_devices, assert_sparse_equal, check_invariants, put
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.ops import shape as mp
from gpusparse.ops.interop._common import pointer
from strategies import CooCase, coo_cases, elements, fill_values

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else settings(
    max_examples=25, deadline=None)


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

@st.composite
def coo_of_shape(draw, shape, dtype=None, fill_value=None, sparse_dim=None):
    """A CooCase of ``shape`` with duplicates and any order (dtype, fill and split optional)."""
    dtype = np.dtype(draw(st.sampled_from(VALUE_DTYPES)) if dtype is None else dtype)
    ndim = len(shape)
    sd = draw(st.integers(max(0, ndim - 2), ndim)) if sparse_dim is None else sparse_dim
    size = math.prod(shape[:sd])
    if size == 0:
        keys = []
    elif sd == 0:
        keys = [0] * draw(st.integers(0, 1))
    else:
        keys = draw(st.lists(st.integers(0, size - 1), max_size=12))
        if keys and draw(st.booleans()):
            keys = keys + draw(st.lists(st.sampled_from(keys), max_size=3))
        keys = draw(st.permutations(keys)) if draw(st.booleans()) else sorted(keys)
    coords = (np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), shape[:sd]), dtype=np.int64).reshape(sd, -1)
              if sd else np.zeros((0, len(keys)), np.int64))
    data = draw(hnp.arrays(dtype, (len(keys),) + tuple(shape[sd:]), elements=elements(dtype)))
    fill = draw(fill_values(dtype)) if fill_value is None else dtype.type(fill_value)
    return CooCase(np.ascontiguousarray(coords), data, tuple(shape), fill)


def build(case, fmt="coo", coalesce=False):
    x = case.build(CPU)
    if coalesce:
        x = x.coalesce()
    return x if fmt == "coo" else x.asformat(fmt)


@st.composite
def arrays(draw, **kwargs):
    """``(x, dense)``: a container of any format and its dense oracle."""
    case = draw(coo_cases(**kwargs))
    fmt = draw(st.sampled_from(["coo", "csr", "csc"] if case.sparse_dim == 2 else ["coo"]))
    return build(case, fmt, draw(st.booleans())), case.dense()


# --------------------------------------------------------------------------
# Axis permutations
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_permute_dims(data):
    x, dense = data.draw(arrays(max_ndim=4))
    axes = data.draw(st.permutations(range(x.ndim)))
    assert_sparse_equal(mp.permute_dims(x, axes), np.transpose(dense, axes))
    assert_sparse_equal(x.T, dense.T)
    assert_sparse_equal(x.transpose(), dense.transpose())
    if x.ndim >= 2:
        assert_sparse_equal(x.mT, np.swapaxes(dense, -1, -2))
        a, b = data.draw(st.integers(-x.ndim, x.ndim - 1)), data.draw(st.integers(-x.ndim, x.ndim - 1))
        assert_sparse_equal(mp.swapaxes(x, a, b), np.swapaxes(dense, a, b))
        assert_sparse_equal(x.swapaxes(a, b), np.swapaxes(dense, a, b))
    if x.ndim:
        src = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim))
        dst = data.draw(st.permutations(range(x.ndim)))[: len(src)]
        assert_sparse_equal(mp.moveaxis(x, src, dst), np.moveaxis(dense, src, dst))


def test_transpose_of_csr_is_csc_over_the_same_arrays(rng):
    dense = rng.random((4, 3, 2)) * (rng.random((4, 3, 1)) < 0.5)
    x = gs.fromdense(dense, sparse_dim=2, format="csr", device="cpu")
    y = mp.permute_dims(x, (1, 0, 2))
    assert y.format == "csc" and pointer(y.indptr) == pointer(x.indptr) and pointer(y.data) == pointer(x.data)
    assert_sparse_equal(y, dense.transpose(1, 0, 2))
    assert mp.permute_dims(y, (1, 0, 2)).format == "csr"
    z = mp.permute_dims(x, (2, 0, 1))  # a dense axis in front: made sparse
    assert z.format == "coo"
    assert_sparse_equal(z, dense.transpose(2, 0, 1))


def test_permute_errors():
    x = gs.fromdense(np.zeros((2, 3)), device="cpu")
    with pytest.raises(ValueError, match="axes don't match"):
        mp.permute_dims(x, (0,))
    with pytest.raises(ValueError, match="repeated axis"):
        mp.permute_dims(x, (0, 0))
    with pytest.raises(np.exceptions.AxisError):
        mp.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        mp.matrix_transpose(gs.fromdense(np.zeros(3), device="cpu"))


# --------------------------------------------------------------------------
# reshape, squeeze, expand_dims, broadcast_to
# --------------------------------------------------------------------------

def _factorisations(n, parts):
    if parts == 1:
        return [(n,)]
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d,) + rest for rest in _factorisations(n // d, parts - 1)]
    return out


@EXAMPLES
@given(data=st.data())
def test_reshape(data):
    x, dense = data.draw(arrays(max_ndim=4, max_side=4))
    size = dense.size
    if size == 0:
        shape = data.draw(st.sampled_from([(0,), (0, 3), (2, 0, 1), (-1, 0) if False else (0, 5)]))
    else:
        shape = data.draw(st.sampled_from(_factorisations(size, data.draw(st.integers(1, 4)))))
        if data.draw(st.booleans()):
            shape = tuple(-1 if i == 0 else s for i, s in enumerate(shape))
    got = mp.reshape(x, shape)
    assert_sparse_equal(got, dense.reshape(shape))
    if x.format == "coo" and x.sorted:
        assert got.format != "coo" or got.sorted
    assert_sparse_equal(x.reshape(*shape) if shape else x.reshape(()), dense.reshape(shape))


def test_reshape_keeps_dense_dims_and_format(rng):
    dense = rng.random((4, 6, 3)) * (rng.random((4, 6, 1)) < 0.5)
    x = gs.fromdense(dense, sparse_dim=2, device="cpu")
    y = mp.reshape(x, (8, 3, 3))
    assert y.dense_dim == 1
    assert_sparse_equal(y, dense.reshape(8, 3, 3))
    c = gs.fromdense(dense[..., 0], format="csr", device="cpu")
    assert mp.reshape(c, (3, 8)).format == "csr"
    assert_sparse_equal(mp.reshape(c, (3, 8)), dense[..., 0].reshape(3, 8))


def test_reshape_beyond_int64():
    shape = (2**40, 2**40)
    coords = np.array([[3, 2**40 - 1], [5, 2**40 - 2]])
    x = gs.COO(coords, [1.0, 2.0], shape=shape, device="cpu")
    y = mp.reshape(x, (2**20, 2**20, 2**40))
    got = y.coords
    np.testing.assert_array_equal(got[:, 0], [0, 3 >> 0 if False else 0, 0][:0] or [3 // 2**20, 3 % 2**20, 5])
    np.testing.assert_array_equal(got[:, 1], [(2**40 - 1) // 2**20, (2**40 - 1) % 2**20, 2**40 - 2])
    z = mp.reshape(x, (2**30, 2**50))
    keys = [3 * 2**40 + 5, (2**40 - 1) * 2**40 + 2**40 - 2]
    np.testing.assert_array_equal(z.coords, [[k // 2**50 for k in keys], [k % 2**50 for k in keys]])
    assert_sparse_equal(mp.reshape(z, shape)[[3, 2**40 - 1]][:, [5, 2**40 - 2]], np.array([[1.0, 0], [0, 2.0]]))


@pytest.mark.parametrize("shape, match", [((4, 5), "cannot reshape array of size 6"), ((-1, -1), "one unknown"),
                                          ((4, -1), "cannot reshape"), ((-2, 3), "negative")])
def test_reshape_errors(shape, match):
    x = gs.fromdense(np.arange(6).reshape(2, 3), device="cpu")
    with pytest.raises(ValueError, match=match):
        mp.reshape(x, shape)


@EXAMPLES
@given(data=st.data())
def test_squeeze_and_expand_dims(data):
    shape = data.draw(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=4).map(tuple))
    case = data.draw(coo_of_shape(shape))
    x, dense = build(case), case.dense()
    assert_sparse_equal(mp.squeeze(x), np.squeeze(dense))
    ones = [a for a, d in enumerate(shape) if d == 1]
    if ones:
        axes = tuple(data.draw(st.lists(st.sampled_from(ones), unique=True, min_size=1)))
        assert_sparse_equal(x.squeeze(axes), np.squeeze(dense, axes))
    n_new = data.draw(st.integers(1, 2))
    axes = tuple(data.draw(st.lists(st.integers(-(x.ndim + n_new), x.ndim + n_new - 1), min_size=n_new,
                                    max_size=n_new, unique_by=lambda a: a % (x.ndim + n_new))))
    assert_sparse_equal(mp.expand_dims(x, axes), np.expand_dims(dense, axes))


def test_squeeze_errors():
    x = gs.fromdense(np.zeros((2, 1)), device="cpu")
    with pytest.raises(ValueError, match="size not equal to one"):
        mp.squeeze(x, 0)
    with pytest.raises(np.exceptions.AxisError):
        mp.squeeze(x, 2)


@EXAMPLES
@given(data=st.data())
def test_broadcast_to(data):
    shape = data.draw(st.lists(st.sampled_from([1, 2, 3]), max_size=3).map(tuple))
    case = data.draw(coo_of_shape(shape))
    x, dense = build(case), case.dense()
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(data.draw(st.sampled_from([d, 2])) if d == 1 else d for d in shape)
    assert_sparse_equal(mp.broadcast_to(x, target), np.broadcast_to(dense, target))


def test_broadcast_errors():
    x = gs.fromdense(np.zeros((2, 3)), device="cpu")
    with pytest.raises(ValueError, match="cannot broadcast"):
        mp.broadcast_to(x, (3, 3))
    with pytest.raises(ValueError, match="cannot broadcast"):
        mp.broadcast_to(x, (3,))


# --------------------------------------------------------------------------
# Joining and splitting
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_concatenate_and_stack(data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.integers(-ndim, ndim - 1))
    dtype = data.draw(st.sampled_from(VALUE_DTYPES))
    fill = data.draw(fill_values(dtype, nan=False))
    n = data.draw(st.integers(1, 3))
    cases = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        cases.append(data.draw(coo_of_shape(tuple(s), dtype, fill)))
    fmts = [data.draw(st.sampled_from(["coo", "csr", "csc"] if c.sparse_dim == 2 else ["coo"])) for c in cases]
    xs = [build(c, f, data.draw(st.booleans())) for c, f in zip(cases, fmts)]
    dense = [c.dense() for c in cases]
    got = mp.concatenate(xs, axis=axis)
    assert_sparse_equal(got, np.concatenate(dense, axis=axis))
    if all(x.format == "coo" and x.sorted for x in xs) and got.format == "coo" and axis % ndim < got.sparse_dim:
        assert got.sorted
    same = [build(cases[0], fmts[0])] * n
    stack_axis = data.draw(st.integers(-ndim - 1, ndim))
    assert_sparse_equal(mp.stack(same, axis=stack_axis), np.stack([dense[0]] * n, axis=stack_axis))


def test_hstack_vstack_dstack(rng):
    a = rng.random((2, 3)) * (rng.random((2, 3)) < 0.5)
    b = rng.random((2, 3)) * (rng.random((2, 3)) < 0.5)
    v = rng.random(3) * (rng.random(3) < 0.5)
    for fmt in ("coo", "csr", "csc"):
        xa, xb = gs.fromdense(a, format=fmt, device="cpu"), gs.fromdense(b, format=fmt, device="cpu")
        assert_sparse_equal(mp.hstack([xa, xb]), np.hstack([a, b]))
        assert_sparse_equal(mp.vstack([xa, xb]), np.vstack([a, b]))
        assert_sparse_equal(mp.dstack([xa, xb]), np.dstack([a, b]))
        assert mp.hstack([xa, xb]).format == fmt and mp.vstack([xa, xb]).format == fmt
    xv = gs.fromdense(v, device="cpu")
    assert_sparse_equal(mp.hstack([xv, xv]), np.hstack([v, v]))
    assert_sparse_equal(mp.vstack([xv, xv]), np.vstack([v, v]))
    assert_sparse_equal(mp.dstack([xv, xv]), np.dstack([v, v]))


def test_concatenate_errors():
    a = gs.fromdense(np.zeros((2, 3)), device="cpu")
    with pytest.raises(ValueError, match="along dimension 0, the array at index 0 has size 2"):
        mp.concatenate([a, gs.fromdense(np.zeros((3, 3)), device="cpu")], axis=1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        mp.concatenate([a, gs.fromdense(np.zeros(3), device="cpu")])
    with pytest.raises(ValueError, match="equal fill values"):
        mp.concatenate([a, gs.fromdense(np.zeros((2, 3)), fill_value=1, device="cpu")])
    with pytest.raises(ValueError, match="at least one array"):
        mp.concatenate([])
    with pytest.raises(TypeError, match=r"arrays\[1\]"):
        mp.concatenate([a, np.zeros((2, 3))])
    with pytest.raises(ValueError, match="zero-dimensional"):
        mp.concatenate([gs.fromdense(np.array(1.0), device="cpu")] * 2)
    with pytest.raises(ValueError, match="same shape"):
        mp.stack([a, gs.fromdense(np.zeros((2, 2)), device="cpu")])


def test_concatenate_dense_axis_with_duplicates_and_fill(rng):
    # a dense concatenation axis: entries at one coordinate add up their blocks
    a = gs.COO([[0, 0, 2]], [[1, 2], [3, 4], [5, 6]], shape=(3, 2), device="cpu")
    b = gs.COO([[0, 1]], [[7], [8]], shape=(3, 1), device="cpu")
    assert_sparse_equal(mp.concatenate([a, b], axis=1), np.concatenate([a.todense(), b.todense()], axis=1))
    a = gs.COO([[0, 0, 2]], [[1, 2], [3, 4], [5, 6]], shape=(3, 2), fill_value=9, device="cpu")
    b = gs.COO([[0, 1]], [[7], [8]], shape=(3, 1), fill_value=9, device="cpu")
    assert_sparse_equal(mp.concatenate([a, b], axis=1), np.concatenate([a.todense(), b.todense()], axis=1))


def _tf(x):
    return [tuple(int(v) for v in c) for c in x.coords.T], x.data.tolist(), x.shape


def test_tf_concat_examples():
    # a..e of TF's page as 1..5; TF assumes ordered inputs, which reorder() states
    a = gs.COO([[0, 1, 1], [2, 0, 1]], [1, 2, 3], shape=(2, 3), device="cpu").reorder()
    b = gs.COO([[0, 0], [1, 2]], [4, 5], shape=(2, 4), device="cpu").reorder()
    out = mp.concatenate([a, b], axis=1)
    assert _tf(out) == ([(0, 2), (0, 4), (0, 5), (1, 0), (1, 1)], [1, 4, 5, 2, 3], (2, 7))
    a = gs.COO([[0, 1, 2], [2, 0, 1]], [1, 2, 3], shape=(3, 3), device="cpu").reorder()
    with pytest.raises(ValueError, match="along dimension 0"):
        mp.concatenate([a, b], axis=1)
    out = mp.concatenate([a, b], axis=1, expand_nonconcat_dim=True)
    assert _tf(out) == ([(0, 2), (0, 4), (0, 5), (1, 0), (2, 1)], [1, 4, 5, 2, 3], (3, 7))


def test_tf_split_example():
    x = gs.COO([[0, 0, 0, 1, 1], [2, 4, 5, 0, 1]], [1, 4, 5, 2, 3], shape=(2, 7), device="cpu")
    first, second = mp.array_split(x, 2, axis=1)
    assert _tf(first) == ([(0, 2), (1, 0), (1, 1)], [1, 2, 3], (2, 4))
    assert _tf(second) == ([(0, 0), (0, 1)], [4, 5], (2, 3))


@EXAMPLES
@given(data=st.data())
def test_split_and_array_split(data):
    x, dense = data.draw(arrays(min_ndim=1, max_ndim=3, max_side=6))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = dense.shape[axis]
    sections = data.draw(st.integers(1, 4))
    for got, expected in zip(mp.array_split(x, sections, axis), np.array_split(dense, sections, axis)):
        assert_sparse_equal(got, expected)
    points = data.draw(st.lists(st.integers(-n - 1, n + 1), max_size=3))
    parts = mp.split(x, points, axis)
    expected = np.split(dense, points, axis)
    assert len(parts) == len(expected)
    for got, exp in zip(parts, expected):
        assert_sparse_equal(got, exp)
    if n and n % sections == 0:
        for got, exp in zip(mp.split(x, sections, axis), np.split(dense, sections, axis)):
            assert_sparse_equal(got, exp)


def test_split_errors():
    x = gs.fromdense(np.arange(6), device="cpu")
    with pytest.raises(ValueError, match="equal division"):
        mp.split(x, 4)
    with pytest.raises(ValueError, match="equal division"):
        mp.split(x, 7)
    with pytest.raises(ValueError, match="larger than 0"):
        mp.array_split(x, 0)


# --------------------------------------------------------------------------
# pad, roll, flip
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_pad_roll_flip(data):
    x, dense = data.draw(arrays(max_ndim=3))
    widths = [tuple(data.draw(st.lists(st.integers(0, 2), min_size=2, max_size=2))) for _ in range(x.ndim)]
    got = mp.pad(x, widths)
    assert_sparse_equal(got, np.pad(dense, widths, constant_values=x.fill_value) if x.ndim else dense)
    if x.ndim:
        axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
        shift = data.draw(st.integers(-5, 5))
        assert_sparse_equal(mp.roll(x, shift, axis), np.roll(dense, shift, axis))
        axes = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1))
        shifts = data.draw(st.lists(st.integers(-5, 5), min_size=len(axes), max_size=len(axes)))
        assert_sparse_equal(mp.roll(x, shifts, axes), np.roll(dense, shifts, axes))
    flip_axes = None if not x.ndim or data.draw(st.booleans()) else data.draw(
        st.lists(st.integers(0, x.ndim - 1), unique=True))
    assert_sparse_equal(mp.flip(x, flip_axes), np.flip(dense, flip_axes))


def test_pad_errors():
    x = gs.fromdense(np.ones(3), device="cpu")
    with pytest.raises(ValueError, match="constant_values must equal the fill value"):
        mp.pad(x, 1, constant_values=1)
    with pytest.raises(ValueError, match="mode"):
        mp.pad(x, 1, mode="edge")
    with pytest.raises(ValueError, match="negative"):
        mp.pad(x, -1)


# --------------------------------------------------------------------------
# Triangles, diagonals, resize
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_tril_triu_diagonal(data):
    x, dense = data.draw(arrays(min_ndim=2, max_ndim=4, fill=False))
    k = data.draw(st.integers(-3, 3))
    assert_sparse_equal(mp.tril(x, k), np.tril(dense, k))
    assert_sparse_equal(mp.triu(x, k), np.triu(dense, k))
    a1 = data.draw(st.integers(0, x.ndim - 1))
    a2 = data.draw(st.integers(0, x.ndim - 1).filter(lambda a: a != a1))
    assert_sparse_equal(mp.diagonal(x, k, a1, a2), np.diagonal(dense, k, a1, a2))


@EXAMPLES
@given(data=st.data())
def test_diag(data):
    x, dense = data.draw(arrays(min_ndim=1, max_ndim=2, fill=False))
    k = data.draw(st.integers(-3, 3))
    assert_sparse_equal(mp.diag(x, k), np.diag(dense, k))


def test_triangle_and_diag_errors():
    with pytest.raises(ValueError, match="zero fill"):
        mp.tril(gs.fromdense(np.ones((2, 2)), fill_value=1, device="cpu"))
    with pytest.raises(ValueError, match="at least 2"):
        mp.triu(gs.fromdense(np.ones(2), device="cpu"))
    with pytest.raises(ValueError, match="cannot be the same"):
        mp.diagonal(gs.fromdense(np.ones((2, 2)), device="cpu"), 0, 1, 1)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        mp.diag(gs.fromdense(np.ones((2, 2, 2)), device="cpu"))


@EXAMPLES
@given(data=st.data())
def test_resize(data):
    x, dense = data.draw(arrays(max_ndim=3))
    new_shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=3)))
    expected = np.full(new_shape, x.fill_value, dtype=dense.dtype)
    flat = dense.reshape(-1)
    m = min(flat.size, expected.size)
    expected.reshape(-1)[:m] = flat[:m]
    assert_sparse_equal(mp.resize(x, new_shape), expected)


# --------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------

def test_same_on_devices(rng):
    dense = rng.random((4, 6, 2)) * (rng.random((4, 6, 1)) < 0.5)

    def run(device):
        x = gs.fromdense(put(dense, device), sparse_dim=2)
        c = x.asformat("csr")
        outs = [mp.permute_dims(x, (1, 0, 2)), mp.reshape(x, (2, 12, 2)), mp.concatenate([x, x], 1),
                mp.concatenate([c, c], 1), mp.broadcast_to(x[:, :1], (4, 6, 2)), mp.pad(x, 1),
                mp.roll(x, 2, 1), mp.flip(x), mp.tril(x), mp.diagonal(x, 1), *mp.array_split(x, 3, 1),
                mp.squeeze(mp.expand_dims(x, 0), 0)]
        for o in outs:
            check_invariants(o)
        return [o.todense() for o in outs]

    assert_same_on_devices(run)
