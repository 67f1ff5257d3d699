"""Indexing ``x[key]``, index_select, narrow, take, nonzero, argwhere against NumPy.

Every key is applied to the sparse array and to its dense NumPy oracle: the
results must agree in value, shape and dtype, scalars where NumPy returns
scalars, and ``IndexError`` where NumPy raises one.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import CPU, assert_dense_equal, assert_same_on_devices, assert_sparse_equal, check_invariants, put
from gpusparse._device import to_host
from gpusparse.ops import indexing as ix
from strategies import coo_cases

# ~25 examples by default; a GPUSPARSE_HYPOTHESIS_PROFILE (conftest) takes over when set.
EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else settings(
    max_examples=25, deadline=None)


# --------------------------------------------------------------------------
# A strategy for NumPy keys
# --------------------------------------------------------------------------

@st.composite
def keys(draw, shape, *, allow_bad=True):
    """A NumPy index for ``shape``: ints, slices, None, ..., int arrays, bool masks, 0-d bools."""
    ndim = len(shape)
    m = draw(st.integers(0, ndim))
    use_ellipsis = draw(st.booleans())
    e = draw(st.integers(0, m)) if use_ellipsis else m
    dims = list(range(e)) + list(range(e + ndim - m, ndim))
    bshape = draw(st.sampled_from([(2,), (3,), (1,), (0,), (2, 2), (1, 3)]))
    items, i, mask_count = [], 0, None
    while i < len(dims):
        d = dims[i]
        n = shape[d]
        kind = draw(st.sampled_from(["int", "slice", "slice", "intarr", "boolarr"]))
        if kind == "int":
            if n == 0:
                kind = "slice"
            else:
                lo, hi = (-n - 2, n + 1) if allow_bad and draw(st.integers(0, 15)) == 0 else (-n, n - 1)
                items.append(draw(st.integers(lo, hi)))
        if kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))
            items.append(slice(draw(bound), draw(bound), step))
        elif kind == "intarr":
            if mask_count is not None:
                ashape = draw(st.sampled_from([(1,), (mask_count,)]))
            else:
                ashape = bshape[draw(st.integers(0, len(bshape))):]
                ashape = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in ashape)
            lo, hi = (-n, n - 1) if n else (0, -1)
            if hi < lo:
                values = np.zeros(ashape, dtype=np.int64)
                if values.size and not allow_bad:
                    items.append(slice(None))
                    i += 1
                    continue
            else:
                values = np.asarray(draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(ashape)),
                                                  max_size=int(np.prod(ashape)))), dtype=np.int64)
                values = values.reshape(ashape)
            dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8])) if (values >= 0).all() and (values < 256).all() else np.int64
            items.append(values.astype(dtype))
        elif kind == "boolarr":
            span = 2 if i + 1 < len(dims) and dims[i + 1] == d + 1 and draw(st.booleans()) else 1
            mshape = tuple(shape[d: d + span])
            size = int(np.prod(mshape))
            mask = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
            mask = mask.reshape(mshape)
            if mask_count is None and not any(isinstance(t, np.ndarray) and t.dtype != bool for t in items):
                mask_count = int(mask.sum())
            items.append(mask)
            i += span
            continue
        i += 1
    for _ in range(draw(st.integers(0, 2))):
        extra = draw(st.sampled_from([None, None, True, False]))
        items.insert(draw(st.integers(0, len(items))), extra)
    if use_ellipsis:
        consumed = 0
        for at, item in enumerate(items):
            if consumed == e:
                break
            if item is None or isinstance(item, bool):
                continue
            consumed += item.ndim if isinstance(item, np.ndarray) and item.dtype == bool else 1
        else:
            at = len(items)
        items.insert(at, Ellipsis)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def _apply(dense, key):
    try:
        return dense[key], None
    except IndexError as exc:
        return None, exc


def _check_key(x, dense, key):
    expected, error = _apply(dense, key)
    if error is not None:
        with pytest.raises(IndexError):
            x[key]
        return
    got = x[key]
    if isinstance(key, tuple) and key == () and x.ndim == 0:  # the array itself, as CuPy, torch and the array API (NumPy: a scalar)
        assert got is x
        return
    if np.ndim(expected) == 0 and not isinstance(expected, np.ndarray):
        assert not isinstance(got, gs.SparseArray), f"expected a scalar for key {key!r}"
        got_host = to_host(got)
        assert got_host.shape == ()
        assert_dense_equal(np.asarray(got_host), np.asarray(expected))
        return
    assert_sparse_equal(got, expected)


def _formats_for(case):
    return ["coo", "csr", "csc"] if case.sparse_dim == 2 else ["coo"]


@EXAMPLES
@given(data=st.data())
def test_getitem_matches_numpy(data):
    case = data.draw(coo_cases(max_ndim=4, max_side=4), label="case")
    dense = case.dense()
    fmt = data.draw(st.sampled_from(_formats_for(case)), label="format")
    x = case.build(CPU)
    x = x if fmt == "coo" else x.asformat(fmt)
    if data.draw(st.booleans(), label="coalesce") and fmt == "coo":
        x = x.coalesce()
    key = data.draw(keys(case.shape), label="key")
    _check_key(x, dense, key)


@EXAMPLES
@given(data=st.data())
def test_getitem_2d_compressed_matches_numpy(data):
    case = data.draw(coo_cases(sparse_dim=2, max_dense_dim=1, max_side=6), label="case")
    dense = case.dense()
    for fmt in ("csr", "csc"):
        x = case.build(CPU).asformat(fmt)
        key = data.draw(keys(case.shape, allow_bad=False), label=f"key {fmt}")
        _check_key(x, dense, key)


# --------------------------------------------------------------------------
# The documented examples of pydata sparse and torch
# --------------------------------------------------------------------------

@pytest.fixture
def z(rng):
    dense = rng.integers(-3, 4, size=(5, 6, 7)) * (rng.random((5, 6, 7)) < 0.4)
    return gs.fromdense(dense, device="cpu"), dense


@pytest.mark.parametrize("key", [
    (1, 3), (1, 4, 3), (slice(None, 3), slice(None, 2), 3), (slice(None, None, -1), 1, 3),
    ([0, 1, 2],), (1, [3]), (1, 4, [3, 6]), (slice(None, 3), slice(None, 2), [1, 5]),
    ([0, 1], [2, 3], [4, 5]), ([[0], [4]], slice(1, 5, 2), [1, 6]), ([0, 1], slice(None), [2, 3]),
    (Ellipsis, None, [1, 1, 0]), (np.array([True, False, True, False, True]), 2),
])
def test_pydata_examples(z, key):
    x, dense = z
    _check_key(x, dense, key)


@pytest.mark.parametrize("key", [(3, 6), (1, 4, 8), (0, 0, 0, 0), (slice(None), [6])])
def test_pydata_index_errors(z, key):
    x, dense = z
    with pytest.raises(IndexError):
        dense[key]
    with pytest.raises(IndexError):
        x[key]


def test_torch_hybrid_examples():
    s = gs.COO([[0, 1, 1], [2, 0, 2]], [[3, 4], [5, 6], [7, 8]], shape=(2, 3, 2), device="cpu")
    row = s[1]
    assert row.sparse_dim == 1 and row.dense_dim == 1
    np.testing.assert_array_equal(row.coalesce().coords, [[0, 2]])
    np.testing.assert_array_equal(row.coalesce().data, [[5, 6], [7, 8]])
    assert s[1, 0, 1] == 6 and isinstance(s[1, 0, 1], np.integer)
    assert_sparse_equal(s[1, 0, 1:], np.array([6]))
    assert_sparse_equal(s[:, :, ::-1], s.todense()[:, :, ::-1])


def test_uncoalesced_scalar_sums_duplicates():
    x = gs.COO([[1, 1, 0]], [2.0, 3.0, 1.0], shape=(3,), device="cpu")
    assert x[1] == 5.0
    assert x[2] == 0.0
    y = gs.COO([[1, 1]], [2, 3], shape=(3,), fill_value=7, device="cpu")
    assert y[0] == 7 and y[1] == 5


# --------------------------------------------------------------------------
# Bad keys
# --------------------------------------------------------------------------

@pytest.mark.parametrize("key, match", [
    ((0, 0, 0), "too many indices"),
    ((5,), "out of bounds for axis 0 with size 4"),
    ((slice(None), -6), "out of bounds for axis 1 with size 5"),
    ((np.array([0, 4]),), "out of bounds for axis 0"),
    ((np.array([0.0]),), "integer"),
    ((1.5,), "only integers"),
    (("a",), "only integers"),
    ((Ellipsis, Ellipsis), "single ellipsis"),
    ((np.array([True, False]),), "boolean index did not match"),
    (([0, 1], [0, 1, 2]), "shape mismatch"),
])
def test_bad_keys_raise_index_error(key, match):
    x = gs.fromdense(np.arange(20).reshape(4, 5), device="cpu")
    with pytest.raises(IndexError, match=match):
        x[key]


def test_sparse_integer_index_selects_and_sparse_mask_is_rejected(device):
    dense = np.arange(4) * 10
    x = gs.fromdense(put(dense, device))
    index = gs.fromdense(put(np.array([3, 0, 0, 2]), device))  # an index list is dense in nature
    assert_dense_equal(x[index].todense(), dense[[3, 0, 0, 2]])
    assert_dense_equal(gs.take(x, index).todense(), dense[[3, 0, 0, 2]])
    with pytest.raises(IndexError, match="sparse boolean mask cannot be used"):
        x[x > 10]


@pytest.mark.parametrize("shape, key", [
    ((4,), (np.array([], bool),)),
    ((2, 3), (np.array([], bool),)),
    ((2, 3), (slice(None), np.array([], bool))),
    ((0, 4, 4, 6), (Ellipsis, np.array([], bool), slice(None), 2, None)),
])
def test_empty_boolean_index_is_an_empty_integer_index(device, shape, key):
    # NumPy takes a 1-d boolean index of size 0 as an empty integer index whatever the axis' size.
    dense = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(np.int64)
    x = gs.fromdense(put(dense, device))
    key = tuple(put(k, device) if isinstance(k, np.ndarray) else k for k in key)
    expected = dense[tuple(to_host(k) if not isinstance(k, (slice, int, type(None), type(Ellipsis))) else k
                           for k in key)]
    assert_dense_equal(x[key].todense(), expected)


def test_slice_step_zero():
    x = gs.fromdense(np.arange(4), device="cpu")
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]


# --------------------------------------------------------------------------
# Fast paths keep the format and the canonical order
# --------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [[3, 0, 3, 1], [], slice(1, 4), slice(None, None, -2), np.array([True, False, True, True, False])])
def test_csr_row_selection_fast_path(rng, rows):
    dense = rng.random((5, 6)) * (rng.random((5, 6)) < 0.5)
    x = gs.fromdense(dense, format="csr", device="cpu")
    got = x[rows]
    assert got.format == "csr"
    assert_sparse_equal(got, dense[rows])
    got = x[rows, 1:5:2]
    assert got.format == "csr"
    assert_sparse_equal(got, dense[rows, 1:5:2])


@pytest.mark.parametrize("cols", [[3, 0, 3, 1], slice(1, 4), slice(None, None, -2)])
def test_csc_column_selection_fast_path(rng, cols):
    dense = rng.random((6, 5, 2)) * (rng.random((6, 5, 1)) < 0.5)
    x = gs.fromdense(dense, format="csc", sparse_dim=2, device="cpu")
    got = x[:, cols]
    assert got.format == "csc"
    assert_sparse_equal(got, dense[:, cols])
    got = x[::2, cols, 1]
    assert got.format == "csc"
    assert_sparse_equal(got, dense[::2, cols, 1])


def test_sorted_coo_row_gather_stays_sorted(rng):
    dense = rng.random((6, 4, 3)) * (rng.random((6, 4, 3)) < 0.4)
    x = gs.fromdense(dense, device="cpu")
    got = x[np.array([5, 0, 5, 2])]
    assert got.is_coalesced()
    assert_sparse_equal(got, dense[[5, 0, 5, 2]])


def test_large_key_range_uses_binary_search(rng):
    shape = (3_000_000, 50)
    coords = np.stack([rng.integers(0, shape[0], 500), rng.integers(0, shape[1], 500)])
    x = gs.COO(coords, rng.random(500), shape=shape, device="cpu")
    index = np.concatenate([coords[0, :20], rng.integers(0, shape[0], 20), coords[0, :5]])
    got = x[index, 3:40]
    dense_rows = {}
    ref = np.zeros((index.size, 37))
    for i, r in enumerate(index):
        hit = (coords[0] == r) & (coords[1] >= 3) & (coords[1] < 40)
        np.add.at(ref[i], coords[1, hit] - 3, x.data[hit])
    assert_sparse_equal(got, ref)
    del dense_rows


def test_huge_dimensions_match_without_overflow():
    shape = (2**40, 2**40, 3)
    coords = np.array([[5, 2**40 - 1, 5], [7, 2**39, 7], [0, 2, 1]])
    x = gs.COO(coords, [1.0, 2.0, 4.0], shape=shape, device="cpu")
    got = x[[5, 2**40 - 1, 5, 4], [7, 2**39, 7, 7]]
    assert got.shape == (4, 3)
    assert_sparse_equal(got, np.array([[1.0, 4.0, 0], [0, 0, 2.0], [1.0, 4.0, 0], [0, 0, 0]]))


def test_negative_step_on_every_dimension(rng):
    dense = rng.integers(0, 3, (4, 5, 3)) * (rng.random((4, 5, 3)) < 0.5)
    for sparse_dim in (1, 2, 3):
        x = gs.fromdense(dense, sparse_dim=sparse_dim, device="cpu")
        assert_sparse_equal(x[::-1, -1:0:-2, ::-2], dense[::-1, -1:0:-2, ::-2])


# --------------------------------------------------------------------------
# index_select, narrow, take, nonzero, argwhere
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_index_select(rng, fmt, axis):
    dense = rng.random((5, 4)) * (rng.random((5, 4)) < 0.5)
    x = gs.fromdense(dense, format=fmt, device="cpu")
    index = np.array([3, 0, 3, 1])
    got = gs.ops.indexing.index_select(x, axis, index)
    assert_sparse_equal(got, np.take(dense, index, axis=axis))


def test_index_select_errors():
    x = gs.fromdense(np.eye(3), device="cpu")
    with pytest.raises(IndexError, match="1-D integer"):
        ix.index_select(x, 0, np.array([[0]]))
    with pytest.raises(IndexError, match="1-D integer"):
        ix.index_select(x, 0, np.array([True, False, True]))
    with pytest.raises(IndexError, match="out of bounds"):
        ix.index_select(x, 1, [3])
    with pytest.raises(np.exceptions.AxisError):
        ix.index_select(x, 2, [0])


def test_narrow(rng):
    dense = rng.random((4, 6)) * (rng.random((4, 6)) < 0.5)
    x = gs.fromdense(dense, format="csr", device="cpu")
    assert_sparse_equal(ix.narrow(x, 1, 2, 3), dense[:, 2:5])
    assert_sparse_equal(ix.narrow(x, 0, -3, 2), dense[1:3])
    with pytest.raises(IndexError, match="exceeds dimension size"):
        ix.narrow(x, 1, 4, 3)
    with pytest.raises(IndexError, match="out of range"):
        ix.narrow(x, 0, 9, 0)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take(rng, axis):
    dense = rng.integers(0, 4, (3, 4)) * (rng.random((3, 4)) < 0.5)
    x = gs.fromdense(dense, device="cpu")
    index = np.array([[1, 2], [0, 2]])
    assert_sparse_equal(ix.take(x, index, axis=axis), np.take(dense, index, axis=axis))
    got = ix.take(x, 2, axis=axis)
    expected = np.take(dense, 2, axis=axis)
    if np.ndim(expected) == 0:
        assert got == expected
    else:
        assert_sparse_equal(got, expected)


@EXAMPLES
@given(case=coo_cases(fill=False, max_ndim=3, min_ndim=1))
def test_nonzero_and_argwhere(case):
    x = case.build(CPU)
    dense = case.dense()
    got = ix.nonzero(x)
    expected = np.nonzero(dense)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(ix.argwhere(x), np.argwhere(dense))


def test_nonzero_needs_zero_fill():
    x = gs.fromdense(np.array([1, 2, 2]), fill_value=2, device="cpu")
    with pytest.raises(ValueError, match="zero fill value"):
        ix.nonzero(x)


def test_argwhere_0d():
    x = gs.fromdense(np.array(3.0), device="cpu")
    assert ix.argwhere(x).shape == np.argwhere(np.array(3.0)).shape


# --------------------------------------------------------------------------
# Every dtype, and the same result on every device
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float32, np.complex128])
def test_every_dtype(rng, dtype):
    dense = (rng.integers(0, 3, (4, 3, 2)) * (rng.random((4, 3, 2)) < 0.5)).astype(dtype)
    x = gs.fromdense(dense, sparse_dim=2, device="cpu")
    for key in [(1,), ([2, 0], slice(None), 1), (slice(None), [True, False, True]), (2, 1, 0)]:
        _check_key(x, dense, key)


def test_same_on_devices(rng):
    dense = rng.random((6, 5, 2)) * (rng.random((6, 5, 2)) < 0.4)

    def run(device):
        x = gs.fromdense(put(dense, device), sparse_dim=2)
        out = [x[put(np.array([4, 0, 4]), device), ::-2], x[1:5, [0, 3]], x[x.todense() > 0.5]]
        csr = x.asformat("csr")
        out += [csr[put(np.array([5, 1]), device)], csr[::2, 1:4], ix.index_select(csr, 1, put(np.array([3, 1]), device))]
        for o in out:
            check_invariants(o)
        return [o.todense() for o in out]

    assert_same_on_devices(run)


# --------------------------------------------------------------------------
# The primitives behind the fast paths (_kernels/*/_select.py), on every device
# --------------------------------------------------------------------------

def _kernels(device):
    from gpusparse._device import kernels_for, xp_for
    return kernels_for(device), xp_for(device)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.float64, np.complex128])
@pytest.mark.parametrize("width", [1, 3])
def test_copy_segments_primitive(device, rng, dtype, width):
    k, xp = _kernels(device)
    m = 50
    values = (rng.integers(0, 5, (m, width)) + (1j if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    lengths = rng.integers(0, 6, 12)
    src = np.array([rng.integers(0, m - n + 1) for n in lengths], dtype=np.int64)
    dst = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    n = int(lengths.sum())
    expected = np.concatenate([values[s: s + l] for s, l in zip(src, lengths)] + [values[:0]])
    args = [put(a, device) for a in (values, src, dst, lengths.astype(np.int64))]
    out = xp.zeros((n, width), dtype=dtype)
    k.copy_segments(args[0], args[1], args[2], args[3], out)
    np.testing.assert_array_equal(to_host(out), expected)
    # a second array moved by the same runs
    other = rng.random((m, 2))
    out1, out2 = xp.zeros((n, width), dtype=dtype), xp.zeros((n, 2))
    k.copy_segments(args[0], args[1], args[2], args[3], out1, put(other, device), out2)
    np.testing.assert_array_equal(to_host(out1), expected)
    np.testing.assert_array_equal(to_host(out2), np.concatenate([other[s: s + l] for s, l in zip(src, lengths)]))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_segment_search_primitive(device, rng, index_dtype):
    k, _ = _kernels(device)
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 7, 20))]).astype(np.int64)
    keys = np.concatenate([np.sort(rng.integers(0, 10, b - a)) for a, b in zip(indptr[:-1], indptr[1:])])
    keys = keys.astype(index_dtype)
    values = rng.integers(-1, 12, 20).astype(np.int64)
    for side in ("left", "right"):
        expected = [a + np.searchsorted(keys[a:b], v, side=side) for a, b, v in zip(indptr[:-1], indptr[1:], values)]
        got = k.segment_search(put(keys, device), put(indptr[:-1], device), put(indptr[1:], device),
                               put(values, device), side)
        np.testing.assert_array_equal(to_host(got), expected)


@pytest.mark.parametrize("n, n_buckets", [(0, 3), (200, 9), (100_000, 9), (100_000, 70_000), (100_000, 400_000)])
def test_bucket_order_primitive(device, rng, n, n_buckets):
    k, _ = _kernels(device)
    keys = rng.integers(0, n_buckets, n).astype(np.int64)
    dest, indptr = k.bucket_order(put(keys, device), n_buckets)
    order = np.argsort(keys, kind="stable")
    expected = np.empty_like(order)
    expected[order] = np.arange(keys.size)
    np.testing.assert_array_equal(to_host(dest), expected)
    np.testing.assert_array_equal(
        to_host(indptr), np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=n_buckets))]))
