"""The memory-safety contract of the product primitives: hostile structures never leave the buffers.

spmv, spmm (and their transposes), spmm_reduce, sddmm and spgemm on CSR
structures whose ``indptr`` and ``indices`` break the precondition in
every way (see ``test_bounds_safety.py`` for the contract). They run with
integer values (the hand-written kernels, which clip) and with float
values: on a GPU those reach cuSPARSE, which does not check its operands,
so a malformed structure must be caught by the check in front of it and
take the hand-written kernels too (same results).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _helpers import put
from _hostile import I64, INDPTR_CASES, MONOTONE_CASES, clipped_ranges, hostile_index, hostile_indptrs, ref_expand
from gpusparse._device import device_scope, kernels_for, to_host


@pytest.fixture
def k(device):
    """The primitive implementation of ``device`` (CUDA calls run with it current)."""
    with device_scope(device):
        yield kernels_for(device)


# --------------------------------------------------------------------------
# products (the hand-written kernels: integer values for spmv / spmm / spgemm)
# --------------------------------------------------------------------------

def _csr(rng, case, m=7, k_dim=5, nnz=30):
    indptr = hostile_indptrs(rng, m, nnz)[case]
    indices = hostile_index(rng, nnz, k_dim)
    data = rng.integers(-9, 10, size=nnz).astype(I64)
    return indptr, indices, data


def ref_spmm(indptr, indices, data, b):
    lo, hi = clipped_ranges(indptr, len(indices))
    cols = np.clip(indices, 0, b.shape[0] - 1)
    return np.stack([(data[a:e, None] * b[cols[a:e]]).sum(axis=0) for a, e in zip(lo, hi)])


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("dtype", [I64, np.float64])
def test_spmv_and_spmm_clip_rows_and_columns(device, k, rng, case, dtype):
    indptr, indices, data = _csr(rng, case)
    data = data.astype(dtype)
    m, k_dim = indptr.size - 1, 5
    b = rng.integers(-9, 10, size=(k_dim, 3)).astype(dtype)
    out = put(np.zeros((m, 3), dtype), device)
    k.spmm(put(indptr, device), put(indices, device), put(data, device), (m, k_dim), put(b, device), out)
    np.testing.assert_array_equal(to_host(out), ref_spmm(indptr, indices, data, b))
    x = b[:, 0].copy()
    y = put(np.ones(m, dtype), device)
    k.spmv(put(indptr, device), put(indices, device), put(data, device), (m, k_dim), put(x, device), y,
           alpha=2, beta=3)
    np.testing.assert_array_equal(to_host(y), 2 * ref_spmm(indptr, indices, data, x[:, None])[:, 0] + 3)


@pytest.mark.parametrize("case", ["decreasing", "wild", "monotone past nnz"])
@pytest.mark.parametrize("dtype", [I64, np.float64])
def test_transposed_products_of_hostile_structures(device, k, rng, case, dtype):
    indptr, indices, data = _csr(rng, case)
    data = data.astype(dtype)
    m, k_dim = indptr.size - 1, 5
    x = put(rng.integers(-9, 10, size=m).astype(dtype), device)
    y = put(np.zeros(k_dim, dtype), device)
    k.spmv(put(indptr, device), put(indices, device), put(data, device), (m, k_dim), x, y, trans="T")
    assert to_host(y).shape == (k_dim,)


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_spmm_reduce_clips_rows_and_columns(device, k, rng, case, op, chunk, monkeypatch):
    if chunk is not None:  # the CUDA kernels' chunks of rows (default 128: one chunk a row here)
        if not device.is_cuda:
            pytest.skip("the CPU kernels do not cut rows into chunks")
        from gpusparse._kernels.cuda import _linalg as cuda_linalg
        monkeypatch.setattr(cuda_linalg, "SPMM_REDUCE_CHUNK", chunk)
    indptr, indices, data = _csr(rng, case)
    data = data.astype(np.float64)
    m, k_dim = indptr.size - 1, 5
    b = rng.standard_normal((k_dim, 2))
    got = k.spmm_reduce(put(indptr, device), put(indices, device), put(data, device), (m, k_dim),
                        put(b, device), op)
    assert got.shape == (m, 2) and got.dtype == np.float64
    lo, hi = clipped_ranges(indptr, len(indices))
    cols = np.clip(indices, 0, k_dim - 1)
    expected = np.zeros((m, 2))
    for r, (a, e) in enumerate(zip(lo, hi)):
        if e > a:
            terms = data[a:e, None] * b[cols[a:e]]
            expected[r] = {"sum": np.sum, "mean": np.mean, "max": np.max}[op](terms, axis=0)
    np.testing.assert_allclose(to_host(got), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", INDPTR_CASES)
def test_sddmm_clips_rows_and_columns(device, k, rng, case):
    indptr, indices, _ = _csr(rng, case)
    m, n, width = indptr.size - 1, 5, 3
    a = rng.integers(-9, 10, size=(m, width)).astype(I64)
    bt = rng.integers(-9, 10, size=(n, width)).astype(I64)
    got = k.sddmm(put(indptr, device), put(indices, device), put(a, device), put(bt, device), alpha=2)
    assert got.shape == indices.shape and got.dtype == I64
    ptr = np.clip(indptr, 0, indices.size)
    if case in MONOTONE_CASES and ptr[0] == 0 and ptr[-1] == indices.size:  # every position in some row
        rows = ref_expand(indptr, indices.size)
        expected = 2 * (a[rows] * bt[np.clip(indices, 0, n - 1)]).sum(axis=1)
        np.testing.assert_array_equal(to_host(got), expected)


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("dtype", [I64, np.float64])
def test_spgemm_of_hostile_structures_is_a_csr_inside_its_shape(device, k, rng, case, dtype):
    m, k_dim, n = 6, 5, 4
    a_indptr, a_indices, a_data = _csr(rng, case, m=m, k_dim=k_dim, nnz=20)
    b_indptr, b_indices, b_data = _csr(rng, case, m=k_dim, k_dim=n, nnz=15)
    a_data, b_data = a_data.astype(dtype), b_data.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # integer values take the expand-sort-compress product
        indptr, indices, data = k.spgemm(*(put(x, device) for x in (a_indptr, a_indices, a_data, b_indptr,
                                                                      b_indices, b_data)), (m, k_dim, n))
    indptr, indices, data = to_host(indptr), to_host(indices), to_host(data)
    assert indptr.shape == (m + 1,) and indices.shape == data.shape and data.dtype == dtype
    assert indptr[0] == 0 and indptr[-1] == indices.size and (np.diff(indptr) >= 0).all()
    assert ((indices >= 0) & (indices < n)).all()


@pytest.mark.parametrize("case", INDPTR_CASES)
@pytest.mark.parametrize("dtype", [I64, np.float64])
def test_spgemm_output_of_hostile_structures_is_canonical_and_recorded_trusted(device, k, rng, case, dtype):
    """The CUDA SpGEMM records its output as trusted (later products skip the check): it must be canonical."""
    if not device.is_cuda:
        pytest.skip("the CUDA SpGEMM records its output for cuSPARSE")
    from gpusparse.containers.compressed import is_trusted_structure
    m, k_dim, n = 6, 5, 4
    a_indptr, a_indices, a_data = _csr(rng, case, m=m, k_dim=k_dim, nnz=20)
    b_indptr, b_indices, b_data = _csr(rng, case, m=k_dim, k_dim=n, nnz=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        indptr, indices, _ = k.spgemm(*(put(x, device) for x in (a_indptr, a_indices, a_data.astype(dtype),
                                                                  b_indptr, b_indices, b_data.astype(dtype))),
                                      (m, k_dim, n))
    assert is_trusted_structure(indptr, indices, (m, n))
    assert not is_trusted_structure(indptr, indices, (m, n + 1))
    assert _structure_model(to_host(indptr), to_host(indices), n)


def _structure_model(indptr, indices, n_cols) -> bool:
    """Whether cuSPARSE may read ``(indptr, indices)``: a canonical CSR structure.

    Pointers from 0 to nnz, never decreasing, indices in range and strictly
    increasing within each row (sorted, unique: SpGEMM assumes it).
    """
    indptr, indices = np.asarray(indptr, dtype=I64), np.asarray(indices, dtype=I64)
    if not (indptr[0] == 0 and indptr[-1] == indices.size and (np.diff(indptr) >= 0).all()
            and ((indices >= 0) & (indices < n_cols)).all()):
        return False
    return all((np.diff(indices[lo:hi]) > 0).all() for lo, hi in zip(indptr[:-1], indptr[1:]))


def _canonical_structure(rng, m, n_cols, nnz):
    """A random canonical CSR structure of ``m`` rows with about ``nnz`` entries (sorted unique columns)."""
    rows = [np.sort(rng.choice(n_cols, size=rng.integers(0, n_cols + 1), replace=False)) for _ in range(m)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(I64)
    return indptr, np.concatenate(rows).astype(I64)


STRUCTURE_CASES = ["valid", "index out of range", "index negative", "unsorted within a row",
                   "duplicate within a row"] + INDPTR_CASES


@pytest.mark.parametrize("case", STRUCTURE_CASES)
@pytest.mark.parametrize("index_dtype", [np.int32, I64])
def test_structure_check_in_front_of_cusparse(device, k, rng, case, index_dtype):
    if not device.is_cuda:
        pytest.skip("the check guards cuSPARSE, a CUDA library")
    from gpusparse._kernels.cuda._linalg import _checked_structure
    m, n_cols = 7, 5
    indptr, indices = _canonical_structure(rng, m, n_cols, 30)
    nnz = indices.size
    long_row = int(np.argmax(np.diff(indptr)))  # a row with at least two entries
    lo = int(indptr[long_row])
    if case == "index out of range":
        indices[rng.integers(nnz)] = n_cols
    elif case == "index negative":
        indices[rng.integers(nnz)] = -1
    elif case == "unsorted within a row":
        indices[lo], indices[lo + 1] = indices[lo + 1], indices[lo]
    elif case == "duplicate within a row":
        indices[lo + 1] = indices[lo]
    elif case != "valid":
        indptr = hostile_indptrs(rng, m, nnz)[case]
        if index_dtype == np.int32:
            indptr = np.clip(indptr, -(2**31), 2**31 - 1)
    indptr, indices = indptr.astype(index_dtype), indices.astype(index_dtype)
    expected = _structure_model(indptr, indices, n_cols)
    if case not in INDPTR_CASES:  # (a hostile pointer array is valid by chance at most)
        assert expected == (case == "valid")
    checked = _checked_structure(put(indptr, device), put(indices, device), m, n_cols)
    assert (checked is not None) == expected
    if checked is not None:
        np.testing.assert_array_equal(to_host(checked[0]), indptr)
        np.testing.assert_array_equal(to_host(checked[1]), indices)
    assert _checked_structure(put(indptr[:-1], device), put(indices, device), m, n_cols) is None  # too short


def test_row_boundaries_between_decreasing_indices_are_allowed(device, k):
    if not device.is_cuda:
        pytest.skip("the check guards cuSPARSE, a CUDA library")
    from gpusparse._kernels.cuda._linalg import _checked_structure
    # Rows [3, 4], [], [0, 1], [], [] : indices decrease across the boundaries only.
    indptr, indices = np.array([0, 2, 2, 4, 4, 4]), np.array([3, 4, 0, 1])
    assert _structure_model(indptr, indices, 5)
    assert _checked_structure(put(indptr, device), put(indices, device), 5, 5) is not None
    indptr = np.array([0, 1, 1, 4, 4, 4])  # now [3], [], [4, 0, 1]: decreasing inside a row
    assert not _structure_model(indptr, indices, 5)
    assert _checked_structure(put(indptr, device), put(indices, device), 5, 5) is None


def test_cusparse_is_handed_the_arrays_that_were_checked(device, k, monkeypatch):
    """A strided view is checked as the copy cuSPARSE reads, never the copy checked and the view handed on."""
    if not device.is_cuda:
        pytest.skip("the check guards cuSPARSE, a CUDA library")
    from gpusparse._kernels.cuda import _cusparse, _linalg
    handed = {}

    def fake(routine):
        def run(indptr, indices, data, shape, b, out, alpha, beta, trans):
            handed[routine] = (indptr, indices)
            out[...] = 0  # (the result is not what this test checks)
        return run

    monkeypatch.setattr(_cusparse, "supports", lambda *args, **kwargs: True)
    monkeypatch.setattr(_cusparse, "spmv", fake("spmv"))
    monkeypatch.setattr(_cusparse, "spmm", fake("spmm"))
    # Every other entry of the buffers: the views hold a canonical structure, the memory they start at does not.
    indptr = put(np.array([0, 99, 2, 99, 3, 99, 4], np.int32), device)[::2]
    indices = put(np.array([0, -5, 2, -5, 1, -5, 0, -5], np.int32), device)[::2]
    data = put(np.ones(4), device)
    _linalg.spmv(indptr, indices, data, (3, 3), put(np.ones(3), device), put(np.zeros(3), device))
    _linalg.spmm(indptr, indices, data, (3, 3), put(np.ones((3, 2)), device), put(np.zeros((3, 2)), device))
    for routine in ("spmv", "spmm"):
        got_indptr, got_indices = handed[routine]
        assert got_indptr.flags.c_contiguous and got_indices.flags.c_contiguous
        np.testing.assert_array_equal(to_host(got_indptr), [0, 2, 3, 4])
        np.testing.assert_array_equal(to_host(got_indices), [0, 2, 1, 0])
