"""Exchange with SciPy: sparse arrays and matrices of every format.

Round trips of random arrays (N-d, hybrid, 0-size and 1-size dimensions,
duplicates, every dtype the peer holds) are compared with the dense NumPy
oracle, the peer's own densification and our ``todense()``; zero copy is
proven by comparing data pointers; ``copy=False`` raises exactly where a
copy is unavoidable and ``copy=True`` never shares.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import assert_dense_equal, assert_sparse_equal
from _interop_checks import SETTINGS, assert_disjoint, assert_shared, at, ptr
from hypothesis import given
from hypothesis import strategies as st
from strategies import coo_cases

from gpusparse import COO
from gpusparse._device import cuda_status
from gpusparse.ops.interop import from_scipy, to_scipy


# --------------------------------------------------------------------------
# SciPy
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sp():
    return pytest.importorskip("scipy.sparse")


@SETTINGS
@given(case=coo_cases(min_ndim=1, max_ndim=3, max_dense_dim=0, fill=False),
       kind=st.sampled_from(["array", "matrix"]), coalesce=st.booleans())
def test_scipy_coo_round_trip(sp, case, kind, coalesce):
    if len(case.shape) != 2:
        kind = "array"
    x = case.build("cpu")
    x = x.coalesce() if coalesce else x
    expected = case.dense()
    m = to_scipy(x, kind=kind, copy=False)
    assert m.format == "coo" and isinstance(m, sp.sparray) == (kind == "array")
    assert m.shape == case.shape and m.dtype == case.dtype
    assert m.has_canonical_format == x.is_coalesced()
    assert_dense_equal(m.toarray(), expected)
    assert at(x.coords, ptr(m.coords[0])) and at(x.data, ptr(m.data))
    back = from_scipy(m, copy=False)  # the coordinate rows lie back to back: still shared
    assert_shared(back, x)
    assert_sparse_equal(back, expected)
    assert back.is_coalesced() or not x.is_coalesced()


@SETTINGS
@given(case=coo_cases(sparse_dim=2, max_dense_dim=0, fill=False),
       fmt=st.sampled_from(["csr", "csc"]), kind=st.sampled_from(["array", "matrix"]))
def test_scipy_compressed_round_trip(sp, case, fmt, kind):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    m = to_scipy(x, kind=kind, copy=False)
    assert m.format == fmt and isinstance(m, sp.sparray) == (kind == "array")
    assert m.has_canonical_format and m.has_sorted_indices
    assert ptr(m.indptr) == ptr(x.indptr)
    assert_dense_equal(m.toarray(), expected)
    assert at(x.indices, ptr(m.indices)) and at(x.data, ptr(m.data))
    back = from_scipy(m, copy=False)
    assert_shared(back, x)
    assert_sparse_equal(back, expected)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [(6, 5), (1, 7), (0, 3), (4, 1)])
def test_scipy_made_arrays(sp, fmt, dtype, shape, rng):
    values = rng.integers(1, 9, size=shape) + (1j if dtype == "complex128" else 0)
    dense = ((rng.random(shape) < 0.4) * values).astype(dtype)
    m = sp.csr_array(dense).asformat(fmt)
    x = from_scipy(m)
    assert x.format == fmt
    assert_sparse_equal(x, m.toarray())
    if fmt != "coo":
        y = from_scipy(m, copy=False)
        assert ptr(y.indptr) == ptr(m.indptr)
        if m.nnz:
            assert ptr(y.data) == ptr(m.data) and ptr(y.indices) == ptr(m.indices)
    elif m.nnz:  # SciPy made the rows separately: stacking them copies
        with pytest.raises(ValueError, match="one index array per dimension"):
            from_scipy(m, copy=False)
        assert ptr(x.data) == ptr(m.data)


def test_scipy_int64_indices_are_kept(sp):
    m = sp.csr_array(np.eye(4))
    m.indptr, m.indices = m.indptr.astype(np.int64), m.indices.astype(np.int64)
    x = from_scipy(m, copy=False)
    assert x.index_dtype == np.int64 and ptr(x.indices) == ptr(m.indices)
    back = to_scipy(x, copy=False)
    assert back.indices.dtype == np.int64 and ptr(back.indices) == ptr(x.indices)


def test_scipy_non_canonical_compressed(sp):
    m = sp.csr_matrix((np.array([1.0, 2.0, 4.0]), np.array([2, 0, 2]), np.array([0, 3, 3])), shape=(2, 3))
    assert not m.has_canonical_format
    x = from_scipy(m)
    assert_sparse_equal(x, m.toarray())
    with pytest.raises(ValueError, match="canonical order"):
        from_scipy(m, copy=False)


def test_scipy_mixed_index_dtypes_are_cast(sp):
    m = sp.csr_array(np.eye(2))
    m.indptr, m.indices = m.indptr.astype(np.int64), m.indices.astype(np.int32)
    x = from_scipy(m)
    assert x.indptr.dtype == x.indices.dtype
    assert_sparse_equal(x, np.eye(2))
    with pytest.raises(ValueError, match="dtype"):
        from_scipy(m, copy=False)


def test_scipy_uncoalesced_coo_flags(sp):
    m = sp.coo_array((np.array([1, 2, 3]), (np.array([1, 0, 1]), np.array([0, 2, 0]))), shape=(2, 3))
    x = from_scipy(m)
    assert not x.is_coalesced()
    assert_sparse_equal(x, m.toarray())
    m.sum_duplicates()
    y = from_scipy(m)
    assert y.is_coalesced()
    assert_sparse_equal(y, m.toarray())


@pytest.mark.parametrize("fmt", ["dia", "lil", "dok", "bsr"])
def test_scipy_other_formats(sp, fmt, rng):
    dense = (rng.random((4, 6)) < 0.5) * rng.random((4, 6))
    m = sp.csr_array(dense).asformat(fmt)
    x = from_scipy(m)
    assert x.format == "csr"
    assert_sparse_equal(x, dense)
    with pytest.raises(ValueError, match="copy=False"):
        from_scipy(m, copy=False)


def test_scipy_copy_true_shares_nothing(sp, rng):
    dense = (rng.random((4, 5)) < 0.5) * rng.random((4, 5))
    m = sp.csr_array(dense)
    x = from_scipy(m, copy=True)
    assert_disjoint(x, [m.indptr, m.indices, m.data])
    back = to_scipy(x, copy=True)
    assert_disjoint(x, [back.indptr, back.indices, back.data])
    assert_dense_equal(back.toarray(), dense)


def test_scipy_errors(sp):
    hybrid = COO([[0, 1]], np.ones((2, 3)), device="cpu")
    with pytest.raises(ValueError, match="dense dimensions"):
        to_scipy(hybrid)
    with pytest.raises(ValueError, match="fill value"):
        to_scipy(COO([[0]], [1.0], shape=(2,), fill_value=np.nan, device="cpu"))
    with pytest.raises(ValueError, match="kind"):
        to_scipy(COO([[0]], [1.0], device="cpu"), kind="list")
    with pytest.raises(ValueError, match="2-d"):
        to_scipy(COO([[0], [0], [0]], [1.0], device="cpu"), kind="matrix")
    with pytest.raises(TypeError, match="scipy.sparse"):
        from_scipy(np.eye(2))


@pytest.mark.gpu
def test_scipy_refuses_device_arrays(sp):
    if cuda_status().device_count == 0:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    x = COO([[0, 1]], [1.0, 2.0], device="cuda")
    with pytest.raises(ValueError, match=r"x.to\('cpu'\)"):
        to_scipy(x)
