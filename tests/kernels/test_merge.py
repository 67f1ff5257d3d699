"""``merge_sorted`` (union / intersection plans) against a ten-line NumPy reference, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import put
from gpusparse._device import device_scope, kernels_for, to_host


@pytest.fixture
def k(device):
    with device_scope(device):
        yield kernels_for(device)


def ref_merge(a, b, how):
    """Output keys and the position of each in ``a`` and ``b`` (-1 when absent)."""
    keys = np.union1d(a, b) if how == "union" else np.intersect1d(a, b)
    out = [keys]
    for side in (a, b):
        pos = np.searchsorted(side, keys)
        found = (pos < side.size) & (side[np.minimum(pos, max(side.size - 1, 0))] == keys) if side.size else \
            np.zeros(keys.size, dtype=bool)
        out.append(np.where(found, pos, -1).astype(np.int64))
    return out


def check(k, device, a, b, how):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    keys, ia, ib, count = k.merge_sorted(put(a, device), put(b, device), how)
    n = int(to_host(count))
    expected = ref_merge(a, b, how)
    assert n == expected[0].size
    for got, want, name in zip((keys, ia, ib), expected, ("keys", "a_index", "b_index")):
        assert got.dtype == np.int64 and got.shape[0] >= n, name
        np.testing.assert_array_equal(to_host(got)[:n], want, err_msg=name)


@pytest.mark.parametrize("how", ["union", "intersection"])
def test_small_cases(device, k, how):
    cases = [([], []), ([1], []), ([], [2]), ([1, 2, 3], [1, 2, 3]), ([1, 3, 5], [2, 4, 6]),
             ([0, 10], [1, 2, 3, 4, 5]), ([5], [5]), ([1, 2], [2, 3]), ([2**62, 2**63 - 1], [0, 2**63 - 1])]
    for a, b in cases:
        check(k, device, a, b, how)
        check(k, device, b, a, how)


@settings(max_examples=25, deadline=None)
@given(a=st.sets(st.integers(0, 300), max_size=120), b=st.sets(st.integers(0, 300), max_size=120),
       how=st.sampled_from(["union", "intersection"]))
def test_against_reference(device, a, b, how):
    with device_scope(device):
        check(kernels_for(device), device, sorted(a), sorted(b), how)


@pytest.mark.parametrize("layout", ["interleaved", "disjoint blocks", "equal", "one much longer"])
@pytest.mark.parametrize("how", ["union", "intersection"])
def test_large_inputs_split_across_threads_and_tiles(device, k, rng, layout, how):
    # Long enough for several CPU chunks and many CUDA tiles, with equal
    # pairs wherever a cut may fall.
    n = 150_000
    if layout == "interleaved":
        a = np.unique(rng.integers(0, 3 * n, n))
        b = np.unique(rng.integers(0, 3 * n, n))
    elif layout == "disjoint blocks":
        a = np.arange(n, dtype=np.int64)
        b = np.arange(n, 2 * n, dtype=np.int64)
    elif layout == "equal":
        a = b = np.arange(0, 2 * n, 2, dtype=np.int64)
    else:
        a = np.unique(rng.integers(0, 10 * n, 3 * n))
        b = np.unique(rng.integers(0, 10 * n, 50))
    check(k, device, a, b, how)
    check(k, device, b, a, how)


def test_rejects_unknown_how(device, k):
    with pytest.raises(ValueError, match="how"):
        k.merge_sorted(put(np.zeros(1, np.int64), device), put(np.zeros(1, np.int64), device), "outer")


# --------------------------------------------------------------------------
# merge_rows: the same merge row by row, checked against merge_sorted's reference on linear keys
# --------------------------------------------------------------------------

def _random_structure(rng, n_rows, n_minor, density, index_dtype):
    mask = rng.random((n_rows, n_minor)) < density
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(index_dtype)
    return indptr, np.nonzero(mask)[1].astype(index_dtype)


def check_rows(k, device, a, b, n_minor, how):
    (a_ptr, a_idx), (b_ptr, b_idx) = a, b
    n_rows = a_ptr.size - 1
    a_keys = np.repeat(np.arange(n_rows), np.diff(a_ptr)) * n_minor + a_idx
    b_keys = np.repeat(np.arange(n_rows), np.diff(b_ptr)) * n_minor + b_idx
    keys, ia, ib = ref_merge(a_keys, b_keys, how)
    indptr, indices, got_a, got_b = k.merge_rows(put(a_ptr, device), put(a_idx, device), put(b_ptr, device),
                                                 put(b_idx, device), n_minor, how)
    assert indptr.dtype == np.int64 and indptr.shape == (n_rows + 1,)
    assert indices.dtype == np.result_type(a_idx.dtype, b_idx.dtype)
    np.testing.assert_array_equal(to_host(indptr), np.searchsorted(keys // max(n_minor, 1), np.arange(n_rows + 1)))
    np.testing.assert_array_equal(to_host(indices), keys % max(n_minor, 1))
    np.testing.assert_array_equal(to_host(got_a), ia)
    np.testing.assert_array_equal(to_host(got_b), ib)


@pytest.mark.parametrize("how", ["union", "intersection"])
@pytest.mark.parametrize("index_dtypes", [(np.int32, np.int32), (np.int32, np.int64), (np.int64, np.int64)])
@pytest.mark.parametrize("n_rows, n_minor, density", [(0, 5, 0.5), (1, 1, 1.0), (7, 0, 0.5), (30, 40, 0.2),
                                                      (3000, 50, 0.1), (40, 3000, 0.3)])
def test_merge_rows(device, k, rng, how, index_dtypes, n_rows, n_minor, density):
    a = _random_structure(rng, n_rows, n_minor, density, index_dtypes[0])
    b = _random_structure(rng, n_rows, n_minor, density, index_dtypes[1])
    check_rows(k, device, a, b, n_minor, how)
    check_rows(k, device, b, a, n_minor, how)
    check_rows(k, device, a, a, n_minor, how)


def test_merge_rows_rejects_unknown_how(device, k):
    ptr, idx = np.zeros(2, np.int64), np.zeros(0, np.int64)
    with pytest.raises(ValueError, match="how"):
        k.merge_rows(put(ptr, device), put(idx, device), put(ptr, device), put(idx, device), 1, "outer")
