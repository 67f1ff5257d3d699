"""CSR and CSC: construction (canonical, index dtypes), accessors, dense output, against NumPy and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given
from hypothesis import strategies as st

from _helpers import (
    assert_dense_equal,
    assert_sparse_equal,
    check_invariants,
    coalesce_oracle,
    put,
)
from gpusparse import CSC, CSR
from gpusparse._device import to_host
from gpusparse.ops.interop._common import pointer
from strategies import coo_cases, fill_values

CLASSES = {"csr": CSR, "csc": CSC}


def compressed_parts(case, major, index_dtype=np.int64):
    """``(indptr, indices, data)`` grouped by the major axis but, within a
    major slice, in the case's order: unsorted, duplicates kept."""
    majors, minors = case.coords[major], case.coords[1 - major]
    order = np.argsort(majors, kind="stable")
    n_major = case.shape[major]
    indptr = np.zeros(n_major + 1, dtype=np.int64)
    np.cumsum(np.bincount(majors, minlength=n_major), out=indptr[1:])
    return indptr.astype(index_dtype), minors[order].astype(index_dtype), case.data[order]


def canonical_parts(case, major):
    """The canonical components a compressed array of ``case`` must hold."""
    pairs = case.coords[[major, 1 - major]]
    coords, data = coalesce_oracle(pairs, case.data)
    indptr = np.searchsorted(coords[0], np.arange(case.shape[major] + 1))
    return indptr, coords[1], data


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), fmt=st.sampled_from(["csr", "csc"]),
       index_dtype=st.sampled_from([np.int32, np.int64]))
def test_construction_is_canonical(device, case, fmt, index_dtype):
    cls, major = CLASSES[fmt], 0 if fmt == "csr" else 1
    indptr, indices, data = compressed_parts(case, major, index_dtype)
    x = cls(indptr, indices, data, case.shape, fill_value=case.fill_value, device=device)
    assert x.format == fmt and x.device == device and x.shape == case.shape
    assert x.index_dtype == index_dtype  # int32 and int64 indices are kept
    assert_sparse_equal(x, case.dense())
    expected_indptr, expected_indices, expected_data = canonical_parts(case, major)
    np.testing.assert_array_equal(to_host(x.indptr), expected_indptr)
    np.testing.assert_array_equal(to_host(x.indices), expected_indices)
    assert_dense_equal(x.data, expected_data)


@given(case=coo_cases(sparse_dim=2, max_dense_dim=0, fill=False, nan=False), fmt=st.sampled_from(["csr", "csc"]))
def test_construction_matches_scipy(device, case, fmt):
    cls, major = CLASSES[fmt], 0 if fmt == "csr" else 1
    indptr, indices, data = compressed_parts(case, major, np.int32)
    x = cls(indptr, indices, data, case.shape, device=device)
    ref = (sps.csr_matrix if fmt == "csr" else sps.csc_matrix)((data, indices, indptr), shape=case.shape)
    ref.sum_duplicates()  # sorts the indices and sums duplicates
    np.testing.assert_array_equal(to_host(x.indptr), ref.indptr)
    np.testing.assert_array_equal(to_host(x.indices), ref.indices)
    assert_dense_equal(x.data, ref.data)


def test_csr_example(device):
    # Row 0 holds columns 2, 0, 2 (unsorted, one duplicate); row 1 is empty.
    x = CSR(np.array([0, 3, 3, 4]), np.array([2, 0, 2, 1]), np.array([1.0, 2.0, 3.0, 4.0]),
            shape=(3, 3), device=device)
    np.testing.assert_array_equal(to_host(x.crow_indices()), [0, 2, 2, 3])
    np.testing.assert_array_equal(to_host(x.col_indices()), [0, 2, 1])
    assert_dense_equal(x.data, [2.0, 4.0, 4.0])
    assert x.crow_indices() is x.indptr and x.col_indices() is x.indices
    assert_sparse_equal(x, [[2.0, 0.0, 4.0], [0.0, 0.0, 0.0], [0.0, 4.0, 0.0]])


def test_csc_example(device):
    x = CSC(np.array([0, 1, 1, 3]), np.array([1, 2, 0]), np.array([1, 2, 3], dtype=np.int8),
            shape=(3, 3), device=device)
    np.testing.assert_array_equal(to_host(x.ccol_indices()), [0, 1, 1, 3])
    np.testing.assert_array_equal(to_host(x.row_indices()), [1, 0, 2])
    assert x.ccol_indices() is x.indptr and x.row_indices() is x.indices
    assert_sparse_equal(x, np.array([[0, 0, 3], [1, 0, 0], [0, 0, 2]], dtype=np.int8))


def test_hybrid_csr(device):
    data = np.arange(12.0).reshape(3, 2, 2)
    x = CSR(np.array([0, 1, 3]), np.array([1, 1, 0]), data, shape=(2, 2, 2, 2), fill_value=-1.0,
            device=device)
    expected = np.full((2, 2, 2, 2), -1.0)
    expected[0, 1] = data[0]
    expected[1, 1] = data[1]
    expected[1, 0] = data[2]
    assert x.sparse_dim == 2 and x.dense_dim == 2
    assert_sparse_equal(x, expected)
    np.testing.assert_array_equal(to_host(x.indices), [1, 0, 1])  # sorted within row 1


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (4, 5)])
def test_empty(device, fmt, shape):
    major = 0 if fmt == "csr" else 1
    x = CLASSES[fmt](np.zeros(shape[major] + 1, np.int32), np.zeros(0, np.int32), np.zeros(0), shape,
                     device=device)
    assert x.nnz == 0
    assert_sparse_equal(x, np.zeros(shape))


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_always_coalesced(device, fmt):
    x = CLASSES[fmt](np.array([0, 1, 2]), np.array([1, 0]), np.array([1.0, 2.0]), (2, 2), device=device)
    assert x.is_coalesced()
    assert x.coalesce() is x and x.reorder() is x


# --------------------------------------------------------------------------
# Index dtypes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("given_dtype, expected", [
    (np.int32, np.int32), (np.int64, np.int64), (np.int16, np.int32), (np.uint8, np.int32),
    (np.uint32, np.int32), (np.uint64, np.int32),
])
def test_index_dtype_kept_or_chosen(device, given_dtype, expected):
    x = CSR(np.array([0, 1, 3], dtype=given_dtype), np.array([2, 0, 1], dtype=given_dtype),
            np.array([1.0, 2.0, 3.0]), shape=(2, 3), device=device)
    assert x.indptr.dtype == expected and x.indices.dtype == expected
    assert_sparse_equal(x, [[0.0, 0.0, 1.0], [2.0, 3.0, 0.0]])


@pytest.mark.parametrize("given_dtype", [np.uint32, np.int32, np.int64])
def test_index_dtype_grows_where_int32_cannot_hold_the_sizes(device, given_dtype):
    n_cols = 2**31 + 5  # more columns than int32 can index
    col = 2**31 - 1 if given_dtype == np.int32 else 2**31 + 2
    x = CSR(np.array([0, 1, 1], dtype=given_dtype), np.array([col], dtype=given_dtype),
            np.array([7.0]), shape=(2, n_cols), device=device)
    assert x.index_dtype == np.int64
    check_invariants(x)
    assert int(to_host(x.indices)[0]) == col


# Index values the storage dtype cannot hold: validated as given, never wrapped.
# Each would wrap into [0, 4) (2**63 + 5 -> 5 -> the last column, 2**64 - 1 -> -1
# -> column 0, 2**32 + 1 -> 1) if it were cast before the check.
_WRAPPING_INDICES = [
    (np.uint64, 2**63 + 5), (np.uint64, 2**64 - 1), (np.uint64, 2**32 + 1), (np.uint32, 2**32 - 1),
    (np.uint32, 2**31 + 1), (np.uint16, 2**16 - 1), (np.uint8, 255),
]


def _compressed_with_column(fmt, bad, dtype, device, check):
    """The 3 x 4 matrix with entries (0, 0), (1, ``bad``), (2, 1) in ``fmt`` (CSC: its transpose, 4 x 3)."""
    indices = np.array([0, bad, 1], dtype=dtype)
    shape = (3, 4) if fmt == "csr" else (4, 3)
    return CLASSES[fmt](put(np.array([0, 1, 2, 3], dtype=dtype), device), put(indices, device),
                        put(np.array([1.0, 2.0, 3.0]), device), shape=shape, device=device, check=check)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype, bad", _WRAPPING_INDICES)
def test_indices_beyond_the_shape_are_refused_in_their_own_dtype(device, fmt, dtype, bad):
    sp_cls = sps.csr_array if fmt == "csr" else sps.csc_array
    shape = (3, 4) if fmt == "csr" else (4, 3)
    with pytest.raises(ValueError):  # the peer refuses them too
        sp_cls((np.array([1.0, 2.0, 3.0]), np.array([0, bad, 1], dtype=dtype),
                np.array([0, 1, 2, 3], dtype=dtype)), shape=shape).check_format(full_check=True)
    with pytest.raises(ValueError, match=r"^indices out of range \[0, 4\): found "):
        _compressed_with_column(fmt, bad, dtype, device, check=True)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype, bad", _WRAPPING_INDICES)
def test_unchecked_indices_beyond_the_shape_act_clipped_never_wrapped(device, fmt, dtype, bad):
    x = _compressed_with_column(fmt, bad, dtype, device, check=False)
    assert x.index_dtype == np.int32
    expected = np.zeros((3, 4))
    expected[[0, 1, 2], [0, 3, 1]] = [1.0, 2.0, 3.0]  # the out-of-range column acts as the last one
    expected = expected if fmt == "csr" else expected.T
    assert_dense_equal(x.todense(), expected)
    stored = to_host(x.indices)
    assert stored[1] >= 4  # still out of range: x.check() finds it
    with pytest.raises(ValueError, match="indices out of range"):
        x.check()


def test_pointers_beyond_int32_are_refused_before_the_narrowing_cast(device):
    # int32 indices make the array int32; the int64 pointer 2**32 + 3 would wrap to 3 (= nnz).
    indptr = put(np.array([0, 1, 2, 2**32 + 3], dtype=np.int64), device)
    indices, data = put(np.array([0, 1, 2], np.int32), device), put(np.array([1.0, 2.0, 3.0]), device)
    with pytest.raises(ValueError, match=r"^indptr must start at 0 and end at nnz=3; got 0 \.\.\. 4294967299"):
        CSR(indptr, indices, data, shape=(3, 4), device=device)
    x = CSR(indptr, indices, data, shape=(3, 4), device=device, check=False)
    assert int(to_host(x.indptr)[-1]) == np.iinfo(np.int32).max  # saturated, not 3
    with pytest.raises(ValueError, match="indptr must start at 0 and end at nnz"):
        x.check()


def test_mixed_indptr_and_indices_dtypes_agree(device):
    x = CSR(np.array([0, 1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int32), np.array([1, 2]),
            shape=(2, 2), device=device)
    assert x.indptr.dtype == x.indices.dtype == np.int32


# --------------------------------------------------------------------------
# Components, check=False, metadata, dense output
# --------------------------------------------------------------------------

def test_canonical_components_are_not_copied(device):
    indptr, indices = put(np.array([0, 2, 3], np.int32), device), put(np.array([0, 2, 1], np.int32), device)
    data = put(np.array([1.0, 2.0, 3.0]), device)
    x = CSR(indptr, indices, data, shape=(2, 3))
    assert x.device == device
    assert all(pointer(ours) == pointer(theirs) and ours.shape == theirs.shape
               for ours, theirs in [(x.indptr, indptr), (x.indices, indices), (x.data, data)])


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), fmt=st.sampled_from(["csr", "csc"]))
def test_check_false_trusts_canonical_input(device, case, fmt):
    major = 0 if fmt == "csr" else 1
    indptr, indices, data = canonical_parts(case, major)
    x = CLASSES[fmt](indptr, indices, data, case.shape, fill_value=case.fill_value, device=device,
                     check=False)
    assert_sparse_equal(x, case.dense())


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), fmt=st.sampled_from(["csr", "csc"]), data=st.data())
def test_to_dense_default_value(device, case, fmt, data):
    major = 0 if fmt == "csr" else 1
    x = CLASSES[fmt](*compressed_parts(case, major), case.shape, fill_value=case.fill_value, device=device)
    default = data.draw(fill_values(case.dtype))
    assert_dense_equal(x.to_dense(default_value=default), case.dense(fill=default))
    assert_dense_equal(x.todense(), case.dense())


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_nbytes_density_len_repr(device, fmt):
    major = 0 if fmt == "csr" else 1
    indptr = np.array([0, 1, 3, 3], dtype=np.int32)
    x = CLASSES[fmt](indptr, np.array([1, 0, 1], np.int32), np.ones((3, 2)),
                     shape=(3, 2, 2) if major == 0 else (2, 3, 2), device=device)
    assert x.nbytes == 4 * 4 + 3 * 4 + 3 * 2 * 8
    assert x.density == pytest.approx(6 / 12)
    assert len(x) == x.shape[0]
    assert type(x).__name__ in repr(x) and "nnz=3" in repr(x)


# --------------------------------------------------------------------------
# Shape inference (torch's sparse_csr_tensor / sparse_csc_tensor without size)
# --------------------------------------------------------------------------

def _torch_inferred_shape(fmt, indptr, indices, data):
    torch = pytest.importorskip("torch")
    make = torch.sparse_csr_tensor if fmt == "csr" else torch.sparse_csc_tensor
    t = make(torch.from_numpy(np.asarray(indptr, np.int64)), torch.from_numpy(np.asarray(indices, np.int64)),
             torch.from_numpy(np.ascontiguousarray(data, np.float64)), check_invariants=False)
    return tuple(t.shape)


@given(case=coo_cases(sparse_dim=2, max_dense_dim=2, fill=False), fmt=st.sampled_from(["csr", "csc"]))
def test_shape_inferred_as_torch_does(device, case, fmt):
    cls, major = CLASSES[fmt], 0 if fmt == "csr" else 1
    indptr, indices, data = compressed_parts(case, major)
    x = cls(indptr, indices, data, device=device)
    n_minor = int(indices.max()) + 1 if indices.size else 0
    implied = (case.shape[major], n_minor) if major == 0 else (n_minor, case.shape[major])
    expected_shape = implied + case.shape[2:]
    assert x.shape == expected_shape
    assert x.shape == _torch_inferred_shape(fmt, indptr, indices, np.zeros(data.shape))
    minor_slices = (slice(None), slice(0, n_minor)) if major == 0 else (slice(0, n_minor), slice(None))
    assert_sparse_equal(x, case.dense()[minor_slices])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_shape_inferred_examples(device, fmt):
    cls = CLASSES[fmt]
    x = cls(np.array([0, 2, 3]), np.array([0, 4, 1]), np.ones((3, 2)), device=device)
    assert x.shape == ((2, 5, 2) if fmt == "csr" else (5, 2, 2))
    empty = cls(np.zeros(4, np.int32), np.zeros(0, np.int32), np.zeros(0), device=device)
    assert empty.shape == ((3, 0) if fmt == "csr" else (0, 3)) and empty.nnz == 0
    none = cls(np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0), device=device)
    assert none.shape == (0, 0)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("indptr, indices, match", [
    ([], [], "indptr must have at least one entry"),
    ([0, 1, 2], [0, -1], "indices out of range"),
    ([0, 2, 1, 2], [0, 1], "non-decreasing"),
    ([1, 2, 2], [0, 1], "start at 0"),
    ([[0, 1]], [0], "indptr must be 1-d"),
])
def test_shape_inference_keeps_validation(device, fmt, indptr, indices, match):
    data = np.ones(len(indices))
    with pytest.raises(ValueError, match=match):
        CLASSES[fmt](np.array(indptr, np.int64), np.array(indices, np.int64), data, device=device)


def test_shape_inference_type_errors(device):
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        CSR(np.array([0, 1]), np.array([0.5]), np.ones(1), device=device)
