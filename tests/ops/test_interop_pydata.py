"""Exchange with pydata sparse: COO and GCXS arrays.

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
from _interop_checks import FALSE_CLAIMS, SETTINGS, assert_disjoint, assert_like_peer, assert_shared, at, ptr
from hypothesis import given
from hypothesis import strategies as st
from strategies import coo_cases

from gpusparse import COO
from gpusparse.ops.interop import from_pydata, to_pydata


# --------------------------------------------------------------------------
# pydata sparse
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sparse():
    return pytest.importorskip("sparse")


def same_fill(a, b) -> bool:
    """Equal fill values, NaN matching NaN."""
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


@SETTINGS
@given(case=coo_cases(max_dense_dim=1), coalesce=st.booleans())
def test_pydata_coo_round_trip(sparse, case, coalesce):
    x = case.build("cpu")
    x = x.coalesce() if coalesce else x
    expected = case.dense()
    needs_copy = x.dense_dim > 0 or not x.is_coalesced()
    s = to_pydata(x)
    assert isinstance(s, sparse.COO) and s.shape == case.shape
    assert same_fill(s.fill_value, x.fill_value) and s.dtype == case.dtype
    assert_dense_equal(s.todense(), expected)
    if needs_copy:
        with pytest.raises(ValueError, match="copy=False"):
            to_pydata(x, copy=False)
    else:
        shared = to_pydata(x, copy=False)
        if x.nnz:  # pydata replaces empty coordinates by its own
            assert at(x.coords, ptr(shared.coords)) and at(x.data, ptr(shared.data))
    back = from_pydata(s, copy=False)
    assert back.is_coalesced() and same_fill(back.fill_value, x.fill_value)
    assert at(back.coords, ptr(s.coords)) and at(back.data, ptr(s.data))
    assert_sparse_equal(back, expected)


@SETTINGS
@given(case=coo_cases(sparse_dim=2, max_dense_dim=0), fmt=st.sampled_from(["csr", "csc"]))
def test_pydata_gcxs_round_trip(sparse, case, fmt):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    s = to_pydata(x, copy=False)
    assert isinstance(s, sparse.GCXS) and s.compressed_axes == ((0,) if fmt == "csr" else (1,))
    assert same_fill(s.fill_value, x.fill_value)
    assert_dense_equal(s.todense(), expected)
    assert ptr(s.indptr) == ptr(x.indptr)
    back = from_pydata(s, copy=False)
    assert type(back) is type(x)
    assert_shared(back, x)
    assert_sparse_equal(back, expected)


def test_pydata_hybrid_compressed_becomes_coo(sparse):
    x = COO([[0, 1, 1], [1, 0, 2]], np.arange(6.0).reshape(3, 2), shape=(2, 3, 2), device="cpu").tocsr()
    s = to_pydata(x)
    assert isinstance(s, sparse.COO)
    assert_dense_equal(s.todense(), x.todense())
    with pytest.raises(ValueError, match="dense dimensions"):
        to_pydata(x, copy=False)


def test_pydata_other_arrays_go_through_coo(sparse, rng):
    dense = (rng.random((3, 4, 5)) < 0.3) * rng.random((3, 4, 5))
    for s in (sparse.GCXS.from_numpy(dense, compressed_axes=(0, 1)), sparse.DOK.from_numpy(dense)):
        x = from_pydata(s)
        assert x.format == "coo"
        assert_sparse_equal(x, dense)
        with pytest.raises(ValueError, match="copy=False"):
            from_pydata(s, copy=False)


def test_pydata_narrow_coordinates_are_cast(sparse):
    s = sparse.COO(np.array([[0, 2]], dtype=np.int32), np.array([1.0, 2.0]), shape=(3,))
    x = from_pydata(s)
    assert x.coords.dtype == np.int64 and ptr(x.data) == ptr(s.data)
    assert_sparse_equal(x, s.todense())
    with pytest.raises(ValueError, match="int32"):
        from_pydata(s, copy=False)


def test_pydata_copy_true_shares_nothing(sparse, rng):
    dense = (rng.random((4, 5)) < 0.5) * rng.random((4, 5))
    s = sparse.COO.from_numpy(dense)
    x = from_pydata(s, copy=True)
    assert_disjoint(x, [s.coords, s.data])
    back = to_pydata(x, copy=True)
    assert_disjoint(x, [back.coords, back.data])
    assert_dense_equal(back.todense(), dense)


@pytest.mark.parametrize("case", list(FALSE_CLAIMS))
def test_pydata_false_canonical_claim_is_not_trusted(sparse, case):
    coords, data, shape = FALSE_CLAIMS[case]
    s = sparse.COO(coords, data, shape=shape, has_duplicates=False, sorted=True)  # taken on trust
    peer = sparse.COO(coords, data, shape=shape)  # pydata's own reading: sorted, duplicates summed
    x = from_pydata(s)
    assert not x.is_coalesced()
    assert_like_peer(x, peer.todense(), s @ np.ones(shape[1]))
    assert_dense_equal(to_pydata(x).todense(), peer.todense())
