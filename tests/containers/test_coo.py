"""COO: construction, coalesce, reorder, dense output, dtype/device/copy, against a NumPy oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import (
    assert_dense_equal,
    assert_same_components,
    assert_sparse_equal,
    check_invariants,
    coalesce_oracle,
    cuda_devices,
    dense_oracle,
    lexsort_columns,
    put,
    quiet_cast,
)
from gpusparse import COO
from gpusparse._device import cuda_module, to_host
from gpusparse.ops.interop._common import pointer
from strategies import coo_cases, fill_values, value_dtypes


def same_value(a, b) -> bool:
    """Scalars equal, NaN equal to NaN."""
    return bool(a == b) or bool(a != a and b != b)


def shares_memory(a, b) -> bool:
    """Whether two arrays of one device overlap (False when either is empty)."""
    if a.size == 0 or b.size == 0:
        return False
    if isinstance(a, np.ndarray):
        return np.shares_memory(a, b)
    return bool(cuda_module().shares_memory(a, b))


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------

@given(case=coo_cases())
def test_construction_keeps_the_entries(device, case):
    x = case.build(device)
    assert x.format == "coo" and x.device == device
    assert x.shape == case.shape and x.ndim == len(case.shape)
    assert x.nnz == case.nnz and x.sparse_dim == case.sparse_dim
    assert x.dense_dim == len(case.shape) - case.sparse_dim
    assert x.dtype == case.dtype and x.size == math.prod(case.shape)
    assert same_value(x.fill_value, case.fill_value)
    np.testing.assert_array_equal(to_host(x.coords), case.coords)  # stored as given: no sorting
    assert_dense_equal(x.data, case.data, rtol=0)
    assert pointer(x.indices()) == pointer(x.coords) and pointer(x.values()) == pointer(x.data)
    assert_sparse_equal(x, case.dense())


@given(case=coo_cases(fill=False))
def test_shape_is_inferred_from_the_coordinates(device, case):
    x = COO(case.coords, case.data, device=device)
    sparse_shape = tuple(int(row.max()) + 1 if case.nnz else 0 for row in case.coords)
    assert x.shape == sparse_shape + case.data.shape[1:]
    assert_sparse_equal(x, dense_oracle(case.coords, case.data, x.shape))


def test_components_on_the_device_stay_there(device):
    coords = put(np.array([[0, 1, 1], [2, 0, 0]]), device)
    data = put(np.array([1.0, 2.0, 3.0]), device)
    x = COO(coords, data)
    assert x.device == device
    assert shares_memory(x.coords, coords) and shares_memory(x.data, data)  # int64, contiguous: no copy
    assert_sparse_equal(x, [[0.0, 0.0, 1.0], [5.0, 0.0, 0.0]])


def test_lists_go_to_the_default_device(device):
    with gs.device(device):
        x = COO([[0, 2], [1, 1]], [True, True], shape=(3, 2))
    assert x.device == device
    assert x.dtype == np.bool_
    assert_sparse_equal(x, [[False, True], [False, False], [False, True]])


@pytest.mark.parametrize("coords_dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_coordinates_become_int64(device, coords_dtype):
    coords = np.array([[3, 0, 3]], dtype=coords_dtype)
    x = COO(coords, np.array([1, 2, 3], dtype=np.int16), shape=(4,), device=device)
    assert x.coords.dtype == np.int64
    assert_sparse_equal(x, np.array([2, 0, 0, 4], dtype=np.int16))


# uint64 coordinates of 2**63 or more: read as given (a cast to int64 first would
# wrap 2**63 + 5 to a negative value and 2**64 - 1 to -1).
_UINT64_BEYOND = [2**63 + 5, 2**64 - 1, 2**63]


@pytest.mark.parametrize("bad", _UINT64_BEYOND)
def test_uint64_coordinates_are_checked_as_given(device, bad):
    coords = put(np.array([[0, 1, 2], [0, bad, 1]], dtype=np.uint64), device)
    data = put(np.array([1.0, 2.0, 3.0]), device)
    with pytest.raises(ValueError, match=rf"^coords out of bounds for shape \(3, 4\): dimension 1 has coordinate "
                                         rf"{bad} >= 4"):
        COO(coords, data, shape=(3, 4), device=device)
    with pytest.raises(ValueError, match=r"^the shape coords imply .* beyond the int64 limit"):
        COO(coords, data, device=device)


@pytest.mark.parametrize("bad", _UINT64_BEYOND)
def test_unchecked_uint64_coordinates_act_clipped_never_wrapped(device, bad):
    coords = put(np.array([[0, 1, 2], [0, bad, 1]], dtype=np.uint64), device)
    x = COO(coords, put(np.array([1.0, 2.0, 3.0]), device), shape=(3, 4), device=device, check=False)
    assert int(to_host(x.coords)[1, 1]) == 2**63 - 1  # saturated: still out of bounds
    expected = np.zeros((3, 4))
    expected[[0, 1, 2], [0, 3, 1]] = [1.0, 2.0, 3.0]  # acts as the last column (never column 0 or 5 % 4)
    assert_dense_equal(x.todense(), expected)
    with pytest.raises(ValueError, match="coords out of bounds"):
        x.check()


def test_one_dimensional_coordinates_are_one_sparse_dimension(device):
    x = COO(np.array([0, 2, 2]), np.array([1.0, 2.0, 3.0]), device=device)
    assert x.coords.shape == (1, 3) and x.shape == (3,)
    assert_sparse_equal(x, [1.0, 0.0, 5.0])


@pytest.mark.parametrize("value", [2.5, np.float32(2.5), np.array(2.5), 7, True, 1 + 2j])
def test_scalar_data_is_broadcast(device, value):
    x = COO(np.array([[0, 1, 1]]), value, shape=(3,), device=device)
    expected_dtype = np.asarray(value).dtype
    assert x.data.shape == (3,) and x.dtype == expected_dtype
    assert_dense_equal(x.data, np.full(3, value, dtype=expected_dtype))
    expected = dense_oracle(np.array([[0, 1, 1]]), np.full(3, value, dtype=expected_dtype), (3,))
    assert_sparse_equal(x, expected)


@pytest.mark.parametrize("shape", [(3, 4), (0, 0), (5, 0, 2), ()])
def test_empty(device, shape):
    sparse_dim = min(len(shape), 2)
    dense_shape = shape[sparse_dim:]
    x = COO(np.zeros((sparse_dim, 0), np.int64), np.zeros((0,) + dense_shape), shape=shape, device=device)
    assert x.nnz == 0 and x.shape == shape
    assert_sparse_equal(x, np.zeros(shape))
    assert x.coalesce().nnz == 0
    inferred = COO(np.zeros((sparse_dim, 0), np.int64), np.zeros((0,) + dense_shape), device=device)
    assert inferred.shape == (0,) * sparse_dim + dense_shape


def test_zero_sparse_dimensions_hold_one_dense_block(device):
    x = COO(np.zeros((0, 1), np.int64), np.array([[1.0, 2.0]]), fill_value=-1.0, device=device)
    assert x.shape == (2,) and x.sparse_dim == 0 and x.dense_dim == 1
    assert_sparse_equal(x, [1.0, 2.0])
    empty = COO(np.zeros((0, 0), np.int64), np.zeros((0, 2)), fill_value=-1.0, device=device)
    assert_sparse_equal(empty, [-1.0, -1.0])


@given(case=coo_cases())
def test_check_false_trusts_valid_input(device, case):
    x = COO(case.coords, case.data, case.shape, fill_value=case.fill_value, device=device, check=False)
    assert_sparse_equal(x, case.dense())


# --------------------------------------------------------------------------
# coalesce / reorder
# --------------------------------------------------------------------------

@given(case=coo_cases())
def test_coalesce_sorts_and_sums_duplicates(device, case):
    x = case.build(device)
    y = x.coalesce()
    assert y.is_coalesced() and y.sorted and y.unique
    expected_coords, expected_data = coalesce_oracle(case.coords, case.data)
    np.testing.assert_array_equal(to_host(y.coords), expected_coords)
    assert_dense_equal(y.data, expected_data)
    assert_sparse_equal(y, case.dense())
    assert same_value(y.fill_value, case.fill_value) and y.device == device and y.shape == x.shape
    # x itself is untouched
    np.testing.assert_array_equal(to_host(x.coords), case.coords)
    assert_dense_equal(x.data, case.data, rtol=0)
    assert y.coalesce() is y


@given(case=coo_cases())
def test_reorder_is_a_stable_sort_that_keeps_duplicates(device, case):
    x = case.build(device)
    y = x.reorder()
    order = lexsort_columns(case.coords)
    assert y.sorted and y.nnz == case.nnz
    np.testing.assert_array_equal(to_host(y.coords), case.coords[:, order])
    assert_dense_equal(y.data, case.data[order], rtol=0)  # stable: duplicates keep their order
    assert_sparse_equal(y, case.dense())
    z = y.reorder()
    np.testing.assert_array_equal(to_host(z.coords), to_host(y.coords))
    assert_dense_equal(z.data, to_host(y.data), rtol=0)


@given(case=coo_cases(duplicates=False))
def test_coalesce_of_unique_input_keeps_every_entry(device, case):
    y = case.build(device).coalesce()
    assert y.nnz == case.nnz
    order = lexsort_columns(case.coords)
    np.testing.assert_array_equal(to_host(y.coords), case.coords[:, order])
    assert_dense_equal(y.data, case.data[order], rtol=0)


def test_coalesce_keeps_explicit_zeros_and_sums_in_order(device):
    coords = np.array([[2, 0, 2, 1, 0]])
    data = np.array([1.5, 0.0, -1.5, 4.0, 2.0])
    y = COO(coords, data, shape=(4,), device=device).coalesce()
    np.testing.assert_array_equal(to_host(y.coords), [[0, 1, 2]])
    assert_dense_equal(y.data, [2.0, 4.0, 0.0])  # the zero sum is kept, as in torch


def test_coalesce_bool_is_or(device):
    x = COO(np.array([[0, 0, 1, 1, 2]]), np.array([True, True, False, False, True]), device=device)
    y = x.coalesce()
    assert y.dtype == np.bool_
    assert_dense_equal(y.data, [True, False, True])


def test_coalesce_integer_sums_wrap_like_numpy(device):
    x = COO(np.array([[0, 0, 0]]), np.array([100, 100, 100], dtype=np.int8), device=device)
    assert_dense_equal(x.coalesce().data, np.array([100, 100, 100], dtype=np.int8).sum(dtype=np.int8).reshape(1))


def test_is_coalesced_is_honest(device):
    x = COO(np.array([[1, 0, 1]]), np.array([1, 2, 3]), device=device)
    assert not x.is_coalesced()
    r = x.reorder()
    assert r.sorted and not r.unique and not r.is_coalesced()
    c = r.coalesce()
    assert c.is_coalesced()


@pytest.mark.parametrize(
    "shape",
    [(2**40, 2**40, 5), (2**32, 2**31), (2**32, 2**31 + 1), (3, 2**62, 2**62), (2**63 - 1, 2**63 - 1)],
    ids=str,
)
def test_coalesce_beyond_63_bit_keys(device, rng, shape):
    # prod(shape) does not fit in a linear int64 key: the lexicographic path
    # must still sort and sum exactly (compared with np.lexsort, no keys).
    n_distinct, n = 40, 300
    pool = np.stack([rng.integers(0, min(s, 3) if k == 0 else s, size=n_distinct, dtype=np.int64)
                     for k, s in enumerate(shape)])  # few first coordinates: later dims break ties
    pool[:, 0] = [s - 1 for s in shape]  # the largest coordinate of every dim
    coords = pool[:, rng.integers(0, n_distinct, size=n)]
    data = rng.integers(-50, 50, size=n).astype(np.int64)
    x = COO(coords, data, shape, device=device)
    y = x.coalesce()
    check_invariants(y)
    expected_coords, expected_data = coalesce_oracle(coords, data)
    np.testing.assert_array_equal(to_host(y.coords), expected_coords)
    np.testing.assert_array_equal(to_host(y.data), expected_data)
    r = x.reorder()
    check_invariants(r)
    order = lexsort_columns(coords)
    np.testing.assert_array_equal(to_host(r.coords), coords[:, order])
    np.testing.assert_array_equal(to_host(r.data), data[order])


def test_coalesce_beyond_63_bit_keys_hybrid(device, rng):
    shape = (2**40, 2**40, 3)
    coords = np.stack([rng.integers(0, 2, 50), rng.integers(0, 2**40, 50)])
    coords = coords[:, rng.integers(0, 50, 200)]
    data = rng.standard_normal((200, 3))
    y = COO(coords, data, shape, device=device).coalesce()
    check_invariants(y)
    expected_coords, expected_data = coalesce_oracle(coords, data)
    np.testing.assert_array_equal(to_host(y.coords), expected_coords)
    assert_dense_equal(y.data, expected_data)


# --------------------------------------------------------------------------
# Dense output
# --------------------------------------------------------------------------

@given(case=coo_cases(), data=st.data())
def test_to_dense_default_value(device, case, data):
    default = data.draw(fill_values(case.dtype))
    x = case.build(device)
    # Every unstored element -- whole dense blocks of hybrid arrays too -- is the default.
    assert_dense_equal(x.to_dense(default_value=default), case.dense(fill=default))
    assert_dense_equal(x.to_dense(), case.dense())
    assert_dense_equal(x.todense(), case.dense())


def test_to_dense_keeps_stored_values_equal_to_the_default(device):
    x = COO(np.array([[1]]), np.array([[0.0, 7.0]]), shape=(3, 2), device=device)
    assert_dense_equal(x.to_dense(default_value=np.nan), [[np.nan, np.nan], [0.0, 7.0], [np.nan, np.nan]])


# --------------------------------------------------------------------------
# astype, copy, to(device), metadata
# --------------------------------------------------------------------------

def _castable(case, dtype):
    """``case`` with values every device casts to ``dtype`` the same way."""
    if case.dtype.kind in "fc" and np.dtype(dtype).kind in "biu":
        with np.errstate(all="ignore"):
            case.data = (np.abs(case.data) % 100).astype(case.dtype)
            case.fill_value = case.dtype.type(abs(case.fill_value) % 100)
    return case


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # NumPy warns on complex -> real
@given(case=coo_cases(nan=False), dtype=value_dtypes())
def test_astype(device, case, dtype):
    case = _castable(case, dtype)
    x = case.build(device)
    y = x.astype(dtype)
    assert y.dtype == dtype and y.format == "coo" and y.device == device
    assert same_value(y.fill_value, quiet_cast(case.fill_value, dtype)[()])
    # A cast is not linear: duplicates are summed in the old dtype first.
    assert_sparse_equal(y, quiet_cast(case.dense(), dtype))
    assert not shares_memory(y.data, x.data)


def test_astype_sums_duplicates_before_casting(device):
    x = COO(np.array([[0, 0, 1, 1]]), np.array([0.6, 0.6, 1.0, -1.0]), device=device)
    assert_sparse_equal(x.astype(np.int64), np.array([1, 0]))
    assert_sparse_equal(x.astype(np.bool_), np.array([True, False]))


def test_astype_same_dtype_without_copy_is_self(device):
    x = COO(np.array([[0, 1]]), np.array([1.0, 2.0]), device=device)
    assert x.astype(np.float64, copy=False) is x
    y = x.astype(np.float64)
    assert y is not x and not shares_memory(y.data, x.data) and not shares_memory(y.coords, x.coords)


@given(case=coo_cases())
def test_copy_has_new_buffers(device, case):
    x = case.build(device).reorder()
    y = x.copy()
    assert_same_components(y, x, rtol=0)
    assert (y.sorted, y.unique) == (x.sorted, x.unique)
    assert not shares_memory(y.coords, x.coords) and not shares_memory(y.data, x.data)


def test_to_same_device_is_self(device):
    x = COO(np.array([[0]]), np.array([1.0]), device=device)
    assert x.to(device) is x and x.to(str(device)) is x and x.to_device(device) is x


@given(case=coo_cases())
def test_to_every_device_and_back(device, case):
    x = case.build(device).reorder()
    targets = cuda_devices() + [gs.Device("cpu")]
    for target in targets:
        y = x.to(target)
        assert y.device == target
        check_invariants(y)
        back = y.to(device)
        assert back.device == device
        assert_same_components(back, x, rtol=0)


@given(case=coo_cases())
def test_nbytes_and_density(device, case):
    x = case.build(device)
    assert x.nbytes == case.coords.nbytes + case.data.nbytes
    size = math.prod(case.shape)
    stored = case.nnz * math.prod(case.shape[case.sparse_dim:])
    if size:
        assert x.density == pytest.approx(stored / size)
    else:
        assert math.isnan(x.density)


def test_len_and_repr(device):
    x = COO(np.array([[0, 2]]), np.array([1, 2]), shape=(5,), device=device)
    assert len(x) == 5
    text = repr(x)
    assert "COO" in text and "shape=(5,)" in text and f"device='{device}'" in text
    scalar = COO(np.zeros((0, 1), np.int64), np.array([3.0]), device=device)
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)


def test_coalesce_from_several_threads_at_once(device):
    """Threads coalescing their own arrays at once get the serial results (no shared kernel state)."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(6):
        coords = rng.integers(0, 300, size=(2, 20_000))
        cases.append(COO(put(coords, device), put(rng.standard_normal(20_000), device), shape=(300, 300)))
    serial = [to_host(c.coalesce().todense()) for c in cases]
    with ThreadPoolExecutor(max_workers=6) as pool:
        threaded = list(pool.map(lambda c: to_host(c.coalesce().todense()), cases))
    for got, expected in zip(threaded, serial):
        np.testing.assert_array_equal(got, expected)
