"""TF's sparse toolbox: every example of TF's page reproduced exactly, then NumPy oracles and errors.

TF's examples use letters for values; here ``a, b, c, ...`` are ``1, 2, 3, ...``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import CPU, assert_same_on_devices, assert_sparse_equal, check_invariants, put
from gpusparse._device import to_host
from gpusparse.ops import shape as mp
from gpusparse.ops import masks, softmax, tf_ops
from strategies import coo_cases

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else settings(
    max_examples=25, deadline=None)


def listing(x):
    """TF's listing of a sparse tensor: ``([index tuples], [values], shape)`` in storage order."""
    coo = x.tocoo()
    return ([tuple(int(v) for v in c) for c in coo.coords.T], coo.data.tolist(), coo.shape)


def tf_sparse(indices, values, shape, **kwargs):
    """TF's ``SparseTensor(indices=[N, ndims], values, shape)`` as a COO."""
    return gs.COO(np.asarray(indices, dtype=np.int64).T.reshape(len(shape), -1), values, shape=shape,
                  device="cpu", **kwargs)


# --------------------------------------------------------------------------
# The examples of TF's page, in page order
# --------------------------------------------------------------------------

def test_tf_sparse_tensor_example():
    x = tf_sparse([[0, 0], [1, 2]], [1, 2], [3, 4])
    np.testing.assert_array_equal(x.todense(), [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])


def test_tf_sparse_tensor_to_dense_example():
    x = tf_sparse([[0, 1], [0, 3], [2, 0]], [1, 2, 3], [3, 5])
    np.testing.assert_array_equal(x.to_dense(default_value=9),
                                  [[9, 1, 9, 2, 9], [9, 9, 9, 9, 9], [3, 9, 9, 9, 9]])


def test_tf_to_indicator_example():
    # the page lists [1, 1, 4] in a tensor of shape [2, 3, 4]: TF never checks the last index,
    # which to_indicator drops, so the exact example is built without the bounds check
    x = tf_sparse([[0, 0, 0], [0, 1, 0], [1, 0, 3], [1, 1, 2], [1, 1, 3], [1, 1, 4], [1, 2, 1]],
                  [0, 10, 103, 150, 149, 150, 121], [2, 3, 4], check=False)
    out = tf_ops.to_indicator(x, 200)
    assert out.shape == (2, 3, 200) and out.dtype == np.bool_
    assert [tuple(int(v) for v in t) for t in np.argwhere(out)] == [
        (0, 0, 0), (0, 1, 10), (1, 0, 103), (1, 1, 149), (1, 1, 150), (1, 2, 121)]


def test_tf_merge_example():
    ids = tf_sparse([[0, 0], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1]], [0, 1, 4, 3, 0, 3], [3, 3])
    values = tf_sparse([[0, 0], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1]], [-3.0, 1, 1, 4, 5, 9], [3, 3])
    out = tf_ops.merge(ids, values, 6)
    assert listing(out) == ([(0, 0), (1, 1), (1, 3), (1, 4), (2, 0), (2, 3)], [-3, 1, 4, 1, 5, 9], (3, 6))
    np.testing.assert_array_equal(out.todense(), [[-3, 0, 0, 0, 0, 0], [0, 1, 0, 4, 1, 0], [5, 0, 0, 9, 0, 0]])


def test_tf_concat_examples():
    a = tf_sparse([[0, 2], [1, 0], [1, 1]], [1, 2, 3], [2, 3]).reorder()
    b = tf_sparse([[0, 1], [0, 2]], [4, 5], [2, 4]).reorder()
    assert listing(mp.concatenate([a, b], axis=1)) == (
        [(0, 2), (0, 4), (0, 5), (1, 0), (1, 1)], [1, 4, 5, 2, 3], (2, 7))
    a = tf_sparse([[0, 2], [1, 0], [2, 1]], [1, 2, 3], [3, 3]).reorder()
    with pytest.raises(ValueError, match="must match exactly"):
        mp.concatenate([a, b], axis=1)
    assert listing(mp.concatenate([a, b], axis=1, expand_nonconcat_dim=True)) == (
        [(0, 2), (0, 4), (0, 5), (1, 0), (2, 1)], [1, 4, 5, 2, 3], (3, 7))


def test_tf_reorder_example():
    x = tf_sparse([[0, 3], [0, 1], [3, 1], [2, 0]], [2, 1, 4, 3], [4, 5])
    out = tf_ops.reorder(x)
    assert listing(out) == ([(0, 1), (0, 3), (2, 0), (3, 1)], [1, 2, 3, 4], (4, 5))
    assert out.sorted


def test_tf_split_example():
    x = tf_sparse([[0, 2], [0, 4], [0, 5], [1, 0], [1, 1]], [1, 4, 5, 2, 3], [2, 7])
    first, second = mp.array_split(x, 2, axis=1)
    assert listing(first) == ([(0, 2), (1, 0), (1, 1)], [1, 2, 3], (2, 4))
    assert listing(second) == ([(0, 0), (0, 1)], [4, 5], (2, 3))


def test_tf_retain_example():
    x = tf_sparse([[0, 1], [0, 3], [2, 0], [3, 1]], [1, 2, 3, 4], [4, 5])
    out = tf_ops.retain(x, [True, False, False, True])
    assert listing(out) == ([(0, 1), (3, 1)], [1, 4], (4, 5))


def test_tf_reset_shape_examples():
    x = tf_sparse([[0, 0, 1], [0, 1, 0], [0, 2, 2], [1, 0, 3]], [1, 2, 3, 4], [2, 3, 5])
    with pytest.raises(ValueError, match="rank"):
        tf_ops.reset_shape(x, [3, 7])
    out = tf_ops.reset_shape(x, [2, 3, 6])
    assert listing(out) == (listing(x)[0], listing(x)[1], (2, 3, 6))
    with pytest.raises(ValueError, match="smaller"):
        tf_ops.reset_shape(x, [2, 3, 4])
    assert tf_ops.reset_shape(x).shape == (2, 3, 4)


def test_tf_fill_empty_rows_example():
    x = tf_sparse([[0, 1], [0, 3], [2, 0], [3, 1]], [1, 2, 3, 4], [5, 6])
    out, empty = tf_ops.fill_empty_rows(x, 7)
    assert listing(out) == ([(0, 1), (0, 3), (1, 0), (2, 0), (3, 1), (4, 0)], [1, 2, 7, 3, 4, 7], (5, 6))
    assert out.is_coalesced()
    np.testing.assert_array_equal(empty, [False, True, False, False, True])


def test_tf_softmax_example():
    values = np.asarray([[[0., np.e], [1., 0.]], [[np.e, 0.], [np.e, np.e]]])
    indices = np.vstack(np.where(values)).astype(np.int64).T
    x = tf_sparse(indices, values[values != 0], [2, 2, 2])
    out = softmax.softmax(x, axis=-1)
    assert listing(out)[0] == [tuple(i) for i in indices]
    np.testing.assert_allclose(out.todense(), [[[0, 1], [1, 0]], [[1, 0], [.5, .5]]], rtol=1e-15)


# --------------------------------------------------------------------------
# Against NumPy, and errors
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=coo_cases(min_ndim=1, max_ndim=3, max_side=4), data=st.data())
def test_reset_shape(case, data):
    x = case.build(CPU)
    tight = tuple((int(case.coords[d].max()) + 1 if case.nnz else 0) for d in range(case.sparse_dim))
    out = tf_ops.reset_shape(x)
    assert out.shape == tight + case.shape[case.sparse_dim:]
    np.testing.assert_array_equal(out.coords, x.coords)
    grow = tuple(d + data.draw(st.integers(0, 2)) for d in case.shape)
    out = tf_ops.reset_shape(x, grow)
    expected = np.full(grow, case.fill_value, dtype=case.dtype)
    expected[tuple(slice(0, d) for d in case.shape)] = case.dense()
    assert_sparse_equal(out, expected)


@EXAMPLES
@given(case=coo_cases(min_ndim=1, max_ndim=3, max_side=4, fill=False).filter(lambda c: c.sparse_dim),
       data=st.data())
def test_fill_empty_rows(case, data):
    x = case.build(CPU)
    fmt = data.draw(st.sampled_from(["coo", "csr"] if case.sparse_dim == 2 else ["coo"]))
    x = x if fmt == "coo" else x.asformat(fmt)
    dense = case.dense()
    rows_used = np.zeros(case.shape[0], dtype=bool)
    rows_used[case.coords[0]] = True
    if (~rows_used).any() and 0 in case.shape[1: case.sparse_dim]:
        with pytest.raises(ValueError, match="no position"):
            tf_ops.fill_empty_rows(x, 1)
        return
    out, empty = tf_ops.fill_empty_rows(x, 1)
    np.testing.assert_array_equal(empty, ~rows_used)
    expected = dense.copy()
    for r in np.nonzero(~rows_used)[0]:
        expected[(r,) + (0,) * (case.sparse_dim - 1)] = 1
    assert_sparse_equal(out, expected)
    assert out.format == fmt
    if out.format == "coo" and (~rows_used).any():
        assert out.sorted


def test_fill_empty_rows_needs_a_sparse_dimension():
    x = gs.fromdense(np.zeros(3), sparse_dim=0, device="cpu")
    with pytest.raises(ValueError, match="at least one sparse dimension"):
        tf_ops.fill_empty_rows(x, 1.0)


def test_fill_empty_rows_hybrid_block():
    x = gs.COO([[1]], [[1.0, 2.0]], shape=(3, 2), device="cpu")
    out, empty = tf_ops.fill_empty_rows(x, [7.0, 8.0])
    np.testing.assert_array_equal(out.todense(), [[7, 8], [1, 2], [7, 8]])
    np.testing.assert_array_equal(empty, [True, False, True])


def test_to_indicator_and_merge_errors():
    ids = tf_sparse([[0, 0], [1, 0]], [3, 7], [2, 2])
    with pytest.raises(ValueError, match="vocab_size=5 must be larger than the largest id 7"):
        tf_ops.to_indicator(ids, 5)
    with pytest.raises(ValueError, match="negative id"):
        tf_ops.to_indicator(tf_sparse([[0, 0]], [-1], [1, 1]), 5)
    with pytest.raises(TypeError, match="integer ids"):
        tf_ops.to_indicator(tf_sparse([[0, 0]], [1.0], [1, 1]), 5)
    values = tf_sparse([[0, 0], [1, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="vocab_size=7"):
        tf_ops.merge(ids, values, 7)
    with pytest.raises(ValueError, match="same entries"):
        tf_ops.merge(ids, tf_sparse([[0, 0]], [1.0], [2, 2]), 8)
    with pytest.raises(TypeError, match="sp_values"):
        tf_ops.merge(ids, np.zeros((2, 2)), 8)


def test_merge_with_several_id_arrays():
    ids1 = tf_sparse([[0, 0], [1, 0]], [2, 0], [2, 1])
    ids2 = tf_sparse([[0, 0], [1, 0]], [1, 3], [2, 1])
    values = tf_sparse([[0, 0], [1, 0]], [5.0, 6.0], [2, 1])
    out = tf_ops.merge([ids1, ids2], values, [3, 4])
    assert listing(out) == ([(0, 2, 1), (1, 0, 3)], [5.0, 6.0], (2, 3, 4))


def test_to_indicator_against_numpy(rng):
    coords = np.stack(np.nonzero(rng.random((3, 4, 5)) < 0.4))
    ids = rng.integers(0, 9, coords.shape[1])
    x = gs.COO(coords, ids, shape=(3, 4, 5), device="cpu")
    expected = np.zeros((3, 4, 9), dtype=bool)
    expected[coords[0], coords[1], ids] = True
    np.testing.assert_array_equal(tf_ops.to_indicator(x, 9), expected)


def test_retain_errors_and_formats(rng):
    dense = rng.random((4, 5)) * (rng.random((4, 5)) < 0.5)
    x = gs.fromdense(dense, format="csr", device="cpu")
    keep = rng.random(x.nnz) < 0.5
    out = tf_ops.retain(x, keep)
    assert out.format == "csr"
    expected = np.zeros_like(dense)
    r, c = np.nonzero(dense)
    expected[r[keep], c[keep]] = dense[r[keep], c[keep]]
    assert_sparse_equal(out, expected)
    with pytest.raises(ValueError, match=r"shape \(nnz,\)"):
        tf_ops.retain(x, keep[:-1])
    with pytest.raises(TypeError, match="bool"):
        tf_ops.retain(x, keep.astype(int))


def test_reset_shape_errors():
    x = tf_sparse([[0, 1]], [1], [2, 2])
    with pytest.raises(ValueError, match="rank 1"):
        tf_ops.reset_shape(x, (3,))
    with pytest.raises(ValueError, match=r"dimension 1 \(1 < 2\)"):
        tf_ops.reset_shape(x, (3, 1))
    with pytest.raises(TypeError, match="x must be a gpusparse array"):
        tf_ops.reset_shape(np.zeros(2))


# --------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=coo_cases(max_ndim=3), data=st.data())
def test_sparse_mask(case, data):
    mask = case.build(CPU)
    fmt = data.draw(st.sampled_from(["coo", "csr", "csc"] if case.sparse_dim == 2 else ["coo"]))
    mask = mask if fmt == "coo" else mask.asformat(fmt)
    dense = np.arange(1, 1 + int(np.prod(case.shape)), dtype=np.float64).reshape(case.shape)
    out = masks.sparse_mask(dense, mask)
    present = np.zeros(case.shape[: case.sparse_dim], dtype=bool)
    if case.nnz and case.sparse_dim:
        present[tuple(case.coords)] = True
    elif case.nnz:
        present = np.ones((), dtype=bool)
    expected = np.where(present.reshape(present.shape + (1,) * (len(case.shape) - case.sparse_dim)), dense, 0)
    assert_sparse_equal(out, expected)
    assert out.format == fmt and out.nnz == int(present.sum())


def test_sparse_mask_errors():
    mask = tf_sparse([[0, 1]], [1], [2, 2])
    with pytest.raises(ValueError, match="shape"):
        masks.sparse_mask(np.zeros((2, 3)), mask)
    with pytest.raises(TypeError, match="mask must be"):
        masks.sparse_mask(np.zeros((2, 2)), np.zeros((2, 2)))


@EXAMPLES
@given(case=coo_cases(max_ndim=3))
def test_prune(case):
    x = case.build(CPU)
    out = gs.prune(x)
    assert_sparse_equal(out, case.dense())
    data = out.data.reshape(out.nnz, int(np.prod(out.shape[out.sparse_dim:])))
    fill = case.fill_value
    same = np.isnan(data) if fill != fill else data == fill
    assert not (same.all(axis=1) & (data.shape[1] > 0)).any()


def test_same_on_devices(rng):
    dense = rng.random((5, 4)) * (rng.random((5, 4)) < 0.4)

    def run(device):
        x = gs.fromdense(put(dense, device))
        filled, empty = tf_ops.fill_empty_rows(x, -1.0)
        outs = [filled, tf_ops.reset_shape(x, (6, 6)), tf_ops.retain(x, put(np.arange(x.nnz) % 2 == 0, device)),
                masks.sparse_mask(put(dense + 1, device), x), gs.prune(x)]
        for o in outs:
            check_invariants(o)
        return [o.todense() for o in outs] + [empty]

    assert_same_on_devices(run)


# --------------------------------------------------------------------------
# concat: TF's row-major output from sorted inputs, flagged or not
# --------------------------------------------------------------------------

@st.composite
def concat_cases(draw):
    """``(parts, axis, expand)``: COO cases to join, sorted (unflagged) or not, TF-style (no dense dims)."""
    ndim = draw(st.integers(1, 3))
    axis = draw(st.integers(0, ndim - 1))
    expand = draw(st.booleans())
    base = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    dtype = draw(st.sampled_from([np.float64, np.int32, np.bool_, np.complex64]))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = [draw(st.integers(0, 4)) if d == axis or expand else base[d] for d in range(ndim)]
        size = int(np.prod(shape))
        keys = draw(st.lists(st.integers(0, size - 1), max_size=8)) if size else []
        coords = np.array(np.unravel_index(np.asarray(keys, np.intp), shape), np.int64).reshape(ndim, len(keys))
        data = np.arange(1, len(keys) + 1).astype(dtype) if dtype != np.bool_ else np.ones(len(keys), bool)
        parts.append((coords, data, tuple(shape)))
    sort = draw(st.sampled_from(["all", "all", "some"]))
    if sort == "all":
        parts = [(c[:, np.lexsort(c[::-1])], d, s) for c, d, s in parts]
    return parts, axis, expand


def tf_concat_order(parts, axis):
    """A NumPy model of ``tf.sparse.concat`` of sorted inputs: shifted coordinates, stably sorted row-major."""
    coords, datas, offset = [], [], 0
    for c, d, s in parts:
        c = c.copy()
        c[axis] += offset
        offset += s[axis]
        coords.append(c)
        datas.append(d)
    c, d = np.concatenate(coords, axis=1), np.concatenate(datas)
    order = np.lexsort(c[::-1]) if c.shape[0] else np.arange(c.shape[1])
    return c[:, order], d[order]


def _is_row_major(c):
    return all(tuple(c[:, i]) <= tuple(c[:, i + 1]) for i in range(c.shape[1] - 1))


@EXAMPLES
@given(case=concat_cases())
def test_concat_of_sorted_unflagged_inputs_is_row_major(device, case):
    parts, axis, expand = case
    ndim = parts[0][0].shape[0]
    out_shape = [max(s[d] for _, _, s in parts) for d in range(ndim)]
    out_shape[axis] = sum(s[axis] for _, _, s in parts)
    arrays = [gs.COO(put(c, device), put(d, device), shape=s) for c, d, s in parts]
    assert not any(a.sorted for a in arrays)  # nothing is flagged: the order has to be found
    out = mp.concatenate(arrays, axis=axis, expand_nonconcat_dim=expand)
    check_invariants(out)  # flags honest
    dense = np.zeros(out_shape, parts[0][1].dtype)
    for (c, d, s), off in zip(parts, np.cumsum([0] + [s[axis] for _, _, s in parts])):
        shifted = c.copy()
        shifted[axis] += off
        np.add.at(dense, tuple(shifted), d)
    assert_sparse_equal(out, dense)
    inputs_sorted = all(_is_row_major(c) for c, _, _ in parts)
    if inputs_sorted:
        expected_coords, expected_data = tf_concat_order(parts, axis)
        assert out.sorted
        np.testing.assert_array_equal(np.asarray(to_host(out.coords)), expected_coords)
        np.testing.assert_array_equal(np.asarray(to_host(out.data)), expected_data)


def test_tf_concat_examples_without_reorder(device):
    a = gs.COO(put(np.array([[0, 1, 1], [2, 0, 1]]), device), put(np.array([1, 2, 3]), device), shape=(2, 3))
    b = gs.COO(put(np.array([[0, 0], [1, 2]]), device), put(np.array([4, 5]), device), shape=(2, 4))
    out = mp.concatenate([a, b], axis=1)
    assert out.sorted and out.is_coalesced() and out.shape == (2, 7)
    np.testing.assert_array_equal(to_host(out.coords), [[0, 0, 0, 1, 1], [2, 4, 5, 0, 1]])
    np.testing.assert_array_equal(to_host(out.data), [1, 4, 5, 2, 3])
