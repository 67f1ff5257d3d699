"""Components that cannot be changed behind an array's back, and ``x.check()``.

Accessors hand out read-only views on the CPU; ``check()`` re-validates an
array whose shared buffers the caller changed (or that was built with
``check=False``); exporters validate before another library trusts the
components.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpusparse as gs

from _helpers import put

from gpusparse._device import as_device, to_host


def _coo(device, coords, shape=(4, 5), check=True):
    device = as_device(device)
    coords = put(np.asarray(coords, dtype=np.int64), device)
    data = put(np.arange(1.0, coords.shape[1] + 1.0), device)
    return gs.COO(coords, data, shape=shape, device=device, check=check)


def _csr(device, indptr, indices, shape=(3, 4), check=True):
    device = as_device(device)
    data = put(np.arange(1.0, len(indices) + 1.0), device)
    return gs.CSR(put(np.asarray(indptr), device), put(np.asarray(indices), device), data,
                  shape=shape, device=device, check=check)


# --------------------------------------------------------------------------
# read-only components
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["coords", "data"])
def test_coo_components_refuse_writes_on_the_cpu(name):
    x = _coo("cpu", [[0, 1, 3], [1, 2, 4]])
    component = getattr(x, name)
    assert not component.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        component[0] = 0
    assert not x.indices().flags.writeable


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("name", ["indptr", "indices", "data"])
def test_compressed_components_refuse_writes_on_the_cpu(fmt, name):
    x = _coo("cpu", [[0, 1, 3], [1, 2, 4]]).asformat(fmt)
    component = getattr(x, name)
    with pytest.raises(ValueError, match="read-only"):
        component[...] = 0
    accessors = ("crow_indices", "col_indices") if fmt == "csr" else ("ccol_indices", "row_indices")
    assert not any(getattr(x, a)().flags.writeable for a in accessors)


def test_read_only_views_share_memory_and_leave_the_callers_array_writable():
    coords = np.array([[0, 1], [2, 3]])
    x = gs.COO(coords, np.array([1.0, 2.0]), shape=(4, 4), device="cpu")
    assert np.shares_memory(x.coords, coords)
    assert coords.flags.writeable  # the caller's own array is not touched
    np.testing.assert_array_equal(x.todense(), [[0, 0, 1, 0], [0, 0, 0, 2], [0] * 4, [0] * 4])


# --------------------------------------------------------------------------
# exports: read-only where they share memory with the array, writable copies
# --------------------------------------------------------------------------

def _scipy_csr_with_a_stored_zero():
    return gs.CSR([0, 2, 3], [2, 0, 1], [1.0, 0.0, 3.0], shape=(2, 3), device="cpu")


def test_scipy_copy_is_writable_and_scipy_methods_work_on_it():
    sp = pytest.importorskip("scipy.sparse")
    x = _scipy_csr_with_a_stored_zero()
    before = x.todense()
    for fmt in ("csr", "csc", "coo"):
        y = x.asformat(fmt)
        m = gs.to_scipy(y, copy=True)
        peer = sp.csr_array(before).asformat(fmt)  # SciPy's own array of the same values
        for mine in (m, peer):
            mine.data *= 2
            mine.eliminate_zeros()
            mine.sum_duplicates()
            if fmt != "coo":
                mine.sort_indices()
        if fmt != "coo":  # (SciPy's COO has no item assignment)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)  # a new stored element
                m[1, 2] = peer[1, 2] = 7.0
        np.testing.assert_array_equal(m.toarray(), peer.toarray())
        np.testing.assert_array_equal(y.todense(), before)  # the copy is the peer's alone


def test_scipy_shared_export_is_read_only():
    pytest.importorskip("scipy.sparse")
    x = _scipy_csr_with_a_stored_zero()
    m = gs.to_scipy(x)
    assert np.shares_memory(m.data, x.data)
    assert not any(a.flags.writeable for a in (m.indptr, m.indices, m.data))
    with pytest.raises(ValueError, match="read-only"):
        m.data *= 2
    np.testing.assert_array_equal(x.todense(), [[0.0, 0.0, 1.0], [0.0, 3.0, 0.0]])


def test_pydata_copy_is_writable_and_shared_export_is_read_only():
    sparse = pytest.importorskip("sparse")
    x = gs.COO([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], shape=(2, 3), device="cpu").coalesce()
    s = gs.to_pydata(x, copy=True)
    assert all(a.flags.writeable for a in (s.coords, s.data))
    s.data *= 2
    np.testing.assert_array_equal(s.todense(), 2 * x.todense())
    np.testing.assert_array_equal(x.todense(), [[0.0, 0.0, 1.0], [2.0, 0.0, 3.0]])
    shared = gs.to_pydata(x)
    assert np.shares_memory(shared.data, x.data) and not shared.data.flags.writeable
    # A coalesced copy (an uncoalesced COO) is new memory: writable even with copy=None.
    fresh = gs.to_pydata(gs.COO([[1, 0, 1]], [1.0, 2.0, 3.0], shape=(3,), device="cpu"))
    assert fresh.data.flags.writeable and isinstance(fresh, sparse.COO)


def test_dlpack_of_an_accessor_carries_the_read_only_flag():
    x = _scipy_csr_with_a_stored_zero()
    assert not np.from_dlpack(x.data).flags.writeable  # DLPack 1.0 signals it; NumPy honours it


def test_torch_views_of_accessors_share_memory_and_check_is_the_remedy():
    # torch ignores DLPack's read-only flag (and has no read-only tensors): the
    # documented contract is that such views share memory, and check() finds
    # what a write through them broke.
    torch = pytest.importorskip("torch")
    x = gs.COO([[0, 1], [1, 2]], [1.0, 2.0], shape=(2, 3), device="cpu")
    coords = torch.from_dlpack(x.coords)
    assert coords.data_ptr() == x.coords.ctypes.data
    x.check()
    coords[1, 0] = 9
    with pytest.raises(ValueError, match="coords out of bounds"):
        x.check()


# --------------------------------------------------------------------------
# check()
# --------------------------------------------------------------------------

def test_check_passes_valid_arrays(device):
    x = _coo(device, [[3, 0, 1, 0], [4, 1, 2, 1]])
    assert x.check() is None
    assert x.coalesce().check() is None
    assert x.tocsr().check() is None and x.tocsc().check() is None
    assert _coo(device, np.zeros((2, 0))).check() is None


def test_check_finds_coordinates_changed_after_construction(device):
    device = as_device(device)
    coords = put(np.array([[0, 1, 3], [1, 2, 4]], dtype=np.int64), device)
    x = gs.COO(coords, put(np.ones(3), device), shape=(4, 5), device=device)
    coords += 10  # e.g. edge_index += offset, on the buffer x shares
    with pytest.raises(ValueError, match="out of bounds for shape"):
        x.check()
    coords -= 20
    with pytest.raises(ValueError, match="non-negative"):
        x.check()


def test_check_finds_a_coalesced_flag_that_no_longer_holds(device):
    device = as_device(device)
    coords = put(np.array([[0, 1, 3], [1, 2, 4]], dtype=np.int64), device)
    x = gs.COO(coords, put(np.ones(3), device), shape=(4, 5), device=device).coalesce()
    assert x.is_coalesced()
    coords[:, 0] = coords[:, 2]  # in bounds, but now out of order and repeated
    with pytest.raises(ValueError, match="coalesced"):
        x.check()


@pytest.mark.parametrize(
    "indptr, indices, message",
    [
        ([0, 2, 1, 3], [0, 1, 2], "non-decreasing"),
        ([0, 1, 2, 5], [0, 1, 2], "start at 0 and end at nnz"),
        ([1, 1, 2, 3], [0, 1, 2], "start at 0 and end at nnz"),
        ([0, 1, 2, 3], [0, 7, 2], "out of range"),
        ([0, 1, 2, 3], [0, -1, 2], "out of range"),
        ([0, 2, 2, 3], [1, 0, 2], "sorted and unique within each row"),
        ([0, 2, 2, 3], [1, 1, 2], "sorted and unique within each row"),
    ],
)
def test_check_names_what_is_wrong_in_a_compressed_array(device, indptr, indices, message):
    x = _csr(device, indptr, indices, check=False)
    with pytest.raises(ValueError, match=message):
        x.check()


def test_check_false_skips_validation_and_check_finds_it(device):
    x = _coo(device, [[0, 9], [1, 1]], check=False)
    with pytest.raises(ValueError, match="dimension 0 has coordinate 9 >= 4"):
        x.check()


# --------------------------------------------------------------------------
# defined results without validation
# --------------------------------------------------------------------------

def test_out_of_range_coordinates_are_clipped_into_the_shape(device):
    device = as_device(device)
    # Documented behaviour without validation: coordinates are clipped
    # (JAX's gathers), so the result is the array with clipped coordinates.
    raw = np.array([[0, 9, -3], [1, 2, 99]])
    x = _coo(device, raw, check=False)
    clipped = np.clip(raw, 0, np.array([[3], [4]]))
    expected = to_host(_coo(device, clipped).todense())
    np.testing.assert_array_equal(to_host(x.todense()), expected)
    np.testing.assert_array_equal(to_host(x.coalesce().todense()), expected)
    np.testing.assert_array_equal(to_host(x.sum(axis=0).todense()), expected.sum(axis=0))


def test_malformed_compressed_arrays_give_results_not_crashes(device):
    device = as_device(device)
    # indptr past nnz, decreasing, and column indices out of range: every
    # product and conversion returns something of the right shape.
    for indptr, indices in [([0, 10**6, 1, 3], [1, 2, 3]), ([0, 2, 1, 3], [1, 2, 3]),
                            ([0, 1, 3, 3], [5, 10**7, -9])]:
        x = _csr(device, indptr, indices, check=False)
        assert to_host(x @ put(np.ones(4), device)).shape == (3,)
        assert to_host(x @ put(np.ones((4, 2)), device)).shape == (3, 2)
        assert to_host(x.todense()).shape == (3, 4)
        assert to_host(x.tocoo().todense()).shape == (3, 4)
        assert to_host((x @ x.T).todense()).shape == (3, 3)
        assert to_host(x.sum(axis=1).todense()).shape == (3,)


def test_exporters_validate_first():
    coords = np.array([[0, 1], [2, 3]])
    x = gs.COO(coords, np.array([1.0, 2.0]), shape=(4, 4), device="cpu")
    coords += 100
    with pytest.raises(ValueError, match="cannot be handed to SciPy: coords out of bounds"):
        gs.to_scipy(x)
    y = _csr("cpu", [0, 1, 2, 3], [0, 9, 2], check=False)
    with pytest.raises(ValueError, match="SciPy.*out of range"):
        gs.to_scipy(y)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="torch"):
        gs.to_torch(y)
    assert torch is not None
