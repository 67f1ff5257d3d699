"""topk against a NumPy model of the dense rule (fill value included, ties to the smaller index) and torch.topk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import put
from gpusparse._device import to_host
from gpusparse._dtypes import VALUE_DTYPES
from strategies import coo_cases

REAL = tuple(d for d in VALUE_DTYPES if d.kind != "c")
EXAMPLES = settings(deadline=None)


def _rank(v, largest):
    """The sort key of one value: NaN above every number, -0.0 equal to 0.0 (torch's order)."""
    v = v.item()
    if isinstance(v, float) and v != v:
        return (0,) if largest else (1,)
    v = int(v) if isinstance(v, (bool, int)) else v
    return (1, -v) if largest else (0, v)


def topk_model(dense, k, axis, largest):
    """``(values, indices)`` of a stable sort of every slice, best first: the first ``k``."""
    moved = np.moveaxis(dense, axis, -1)
    rows = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
    idx = np.array([sorted(range(rows.shape[1]), key=lambda i, r=r: (_rank(r[i], largest), i))[:k]
                    for r in rows], dtype=np.int64).reshape(rows.shape[0], k)
    vals = np.take_along_axis(rows, idx, axis=1)
    shape = moved.shape[:-1] + (k,)
    return np.moveaxis(vals.reshape(shape), -1, axis), np.moveaxis(idx.reshape(shape), -1, axis)


def _build(case, device, fmt):
    x = case.build(device)
    return x.asformat(fmt) if fmt != "coo" and x.sparse_dim == 2 else x


@EXAMPLES
@given(case=coo_cases(dtypes=REAL, min_ndim=1, max_dense_dim=1), data=st.data())
def test_topk_matches_the_dense_model(device, case, data):
    ndim = len(case.shape)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    n = case.shape[axis]
    k = data.draw(st.integers(0, n))
    largest = data.draw(st.booleans())
    fmt = data.draw(st.sampled_from(["coo", "csr", "csc"]))
    x = _build(case, device, fmt)
    values, indices = gs.topk(x, k, axis=axis, largest=largest)
    expected_values, expected_indices = topk_model(case.dense(), k, axis, largest)
    values, indices = to_host(values), to_host(indices)
    assert values.dtype == case.dtype and indices.dtype == np.int64
    assert values.shape == indices.shape == expected_values.shape
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)  # NaN == NaN here


_TORCH_DTYPES = (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8)


@EXAMPLES
@given(case=coo_cases(dtypes=_TORCH_DTYPES, min_ndim=1, max_dense_dim=1), data=st.data())
def test_topk_values_match_torch(device, case, data):
    torch = pytest.importorskip("torch")
    ndim = len(case.shape)
    axis = data.draw(st.integers(0, ndim - 1))
    k = data.draw(st.integers(0, case.shape[axis]))
    largest = data.draw(st.booleans())
    dense = case.dense()
    ref = torch.topk(torch.from_numpy(dense), k, dim=axis, largest=largest)
    values, indices = gs.topk(case.build(device), k, axis=axis, largest=largest)
    values, indices = to_host(values), to_host(indices)
    np.testing.assert_array_equal(values, ref.values.numpy())
    # torch breaks ties its own way; the indices must point at the values all the same
    np.testing.assert_array_equal(np.take_along_axis(dense, indices, axis=axis), values)
    moved = np.moveaxis(indices, axis, -1)
    rows = moved.reshape(int(np.prod(moved.shape[:-1])), k)
    assert all(len(set(row)) == k for row in rows.tolist())  # distinct positions


def test_topk_fill_rule_examples(device):
    # row 0 has 2 stored entries; the fill (0) ranks above the stored -5 and comes at the first unstored index
    x = gs.COO(put(np.array([[0, 0, 1], [1, 3, 0]]), device), put(np.array([4.0, -5.0, -1.0]), device),
               shape=(2, 5))
    values, indices = gs.topk(x, 3)
    np.testing.assert_array_equal(to_host(values), [[4.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(to_host(indices), [[1, 0, 2], [1, 2, 3]])
    values, indices = gs.topk(x, 2, largest=False)
    np.testing.assert_array_equal(to_host(values), [[-5.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_array_equal(to_host(indices), [[3, 0], [0, 1]])
    filled = gs.COO(put(np.array([[0, 1]]), device), put(np.array([3.0, 1.0]), device), shape=(4,),
                    fill_value=2.0)
    values, indices = gs.topk(filled, 4)
    np.testing.assert_array_equal(to_host(values), [3.0, 2.0, 2.0, 1.0])
    np.testing.assert_array_equal(to_host(indices), [0, 2, 3, 1])


def test_topk_duplicates_are_summed_first(device):
    x = gs.COO(put(np.array([[2, 2, 0]]), device), put(np.array([1, 5, 4], np.int64), device), shape=(3,))
    values, indices = gs.topk(x, 2)
    np.testing.assert_array_equal(to_host(values), [6, 4])
    np.testing.assert_array_equal(to_host(indices), [2, 0])


def test_topk_nan_and_signed_zero_as_torch(device):
    torch = pytest.importorskip("torch")
    dense = np.array([[0.0, np.nan, -0.0, 3.0, np.nan], [-0.0, 1.0, 0.0, -np.inf, np.inf]])
    x = gs.COO(put(np.array(np.nonzero(~np.isnan(dense) | np.isnan(dense))), device), put(dense.ravel(), device),
               shape=dense.shape)
    for largest in (True, False):
        values, indices = gs.topk(x, 5, largest=largest)
        ref = torch.topk(torch.from_numpy(dense), 5, largest=largest)
        np.testing.assert_array_equal(to_host(values), ref.values.numpy())
        np.testing.assert_array_equal(to_host(indices), topk_model(dense, 5, -1, largest)[1])


def test_topk_k_zero_full_and_hybrid_axis(device):
    dense = np.arange(24.0).reshape(2, 3, 4) % 5
    x = gs.fromdense(put(dense, device)).tocoo()
    for axis in range(3):
        values, indices = gs.topk(x, 0, axis=axis)
        assert to_host(values).shape == dense.shape[:axis] + (0,) + dense.shape[axis + 1:]
        values, indices = gs.topk(x, dense.shape[axis], axis=axis)
        expected = topk_model(dense, dense.shape[axis], axis, True)
        np.testing.assert_array_equal(to_host(values), expected[0])
        np.testing.assert_array_equal(to_host(indices), expected[1])
    hybrid = gs.COO(put(np.array([[0, 1]]), device), put(dense[:, :, 0].T[:2], device), shape=(3, 2))
    hybrid_dense = to_host(hybrid.todense())
    assert hybrid.dense_dim == 1
    for axis in (0, 1):
        values, indices = gs.topk(hybrid, 2, axis=axis, largest=False)
        np.testing.assert_array_equal(to_host(values), topk_model(hybrid_dense, 2, axis, False)[0])
        np.testing.assert_array_equal(to_host(indices), topk_model(hybrid_dense, 2, axis, False)[1])


@pytest.mark.parametrize("dtype", [np.bool_, np.uint64, np.int64, np.float32], ids=lambda d: np.dtype(d).name)
def test_topk_extreme_values(device, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        dense = np.array([info.max, info.min, 0, info.max - 1, info.min + 1], dtype=dtype)
    elif dtype == np.bool_:
        dense = np.array([True, False, True, False, False])
    else:
        f = np.finfo(dtype)
        dense = np.array([f.max, -f.max, f.smallest_subnormal, -f.smallest_subnormal, 0], dtype=dtype)
    x = gs.fromdense(put(dense, device))
    for largest in (True, False):
        values, indices = gs.topk(x, 5, largest=largest)
        expected = topk_model(dense, 5, 0, largest)
        np.testing.assert_array_equal(to_host(values), expected[0])
        np.testing.assert_array_equal(to_host(indices), expected[1])


def test_topk_errors(device):
    x = gs.fromdense(put(np.eye(3), device))
    with pytest.raises(ValueError, match=r"k must lie in \[0, 3\]"):
        gs.topk(x, 4)
    with pytest.raises(ValueError, match="k must lie"):
        gs.topk(x, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        gs.topk(x, 1.5)
    with pytest.raises(np.exceptions.AxisError):
        gs.topk(x, 1, axis=2)
    with pytest.raises(TypeError, match="complex"):
        gs.topk(x.astype(np.complex64), 1)
    with pytest.raises(TypeError, match="gpusparse array"):
        gs.topk(np.eye(3), 1)
    with pytest.raises(ValueError, match="0-d"):
        gs.topk(gs.fromdense(put(np.array(1.0), device)), 1)
