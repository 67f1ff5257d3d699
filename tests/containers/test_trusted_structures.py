"""Trusted structures: the structure check in front of cuSPARSE runs exactly for structures that need it.

cuSPARSE trusts the ``indptr`` and ``indices`` it is handed, so the CUDA
path checks a structure (``gs_csr_check``: one pass and one synchronisation)
before a cuSPARSE product unless the structure is trusted: validated or
produced by the library, in buffers only the library holds (see
:attr:`gpusparse.CSR.structure_trusted`). cuSPARSE is not emulated, so the
tests that reach the product replace it with a recorder
(``_cusparse.supports`` answers True) and count the check's launches with
the emulated cost counters.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpusparse as gs
from _helpers import put
from gpusparse._device import device_scope, to_host

INDPTR, INDICES, DATA = [0, 2, 3, 5], [0, 2, 1, 0, 2], [1.0, 2.0, 3.0, 4.0, 5.0]
SHAPE = (3, 3)
DENSE = np.array([[1.0, 0, 2], [0, 3, 0], [4, 0, 5]])


def _csr(device, **kw):
    return gs.CSR(INDPTR, INDICES, DATA, shape=SHAPE, device=str(device), **kw)


def test_built_from_host_input_and_checked_is_trusted(device):
    assert _csr(device).structure_trusted
    assert gs.CSC(INDPTR, INDICES, DATA, shape=SHAPE, device=str(device)).structure_trusted


def test_check_false_is_untrusted_until_checked(device):
    x = _csr(device, check=False)
    assert not x.structure_trusted
    x.check()
    assert x.structure_trusted


def test_non_canonical_input_becomes_a_trusted_canonical_copy(device):
    indptr = put(np.array([0, 2, 3, 5]), device)
    indices = put(np.array([2, 0, 1, 2, 0]), device)  # unsorted rows: the constructor sorts into new arrays
    with device_scope(device):
        x = gs.CSR(indptr, indices, put(np.array(DATA), device), shape=SHAPE)
    assert x.indices is not indices and x.structure_trusted


def test_shared_caller_buffers_stay_untrusted_even_after_check(device):
    indptr = put(np.array(INDPTR, np.int64), device)
    indices = put(np.array(INDICES, np.int64), device)
    with device_scope(device):
        x = gs.CSR(indptr, indices, put(np.array(DATA), device), shape=SHAPE)
    assert x.indptr is indptr or not x.structure_trusted  # kept without a copy ...
    assert not x.structure_trusted  # ... so the caller can still write them
    x.check()
    assert not x.structure_trusted


def test_a_view_of_a_caller_buffer_is_shared_too(device):
    buf = put(np.array(INDPTR + INDICES, np.int64), device)
    with device_scope(device):
        x = gs.CSR(buf[:4], buf[4:], put(np.array(DATA), device), shape=SHAPE)
    assert not x.structure_trusted


def test_a_cast_copy_of_caller_buffers_is_owned(device):
    indptr = put(np.array(INDPTR, np.int16), device)  # int16: cast to int32, a new array
    indices = put(np.array(INDICES, np.int16), device)
    with device_scope(device):
        x = gs.CSR(indptr, indices, put(np.array(DATA), device), shape=SHAPE)
    assert x.structure_trusted


def test_host_arrays_moved_to_the_device_are_owned(device):
    if not device.is_cuda:
        pytest.skip("a NumPy array on the CPU is the caller's buffer")
    x = gs.CSR(np.array(INDPTR), np.array(INDICES), np.array(DATA), shape=SHAPE, device=str(device))
    assert x.structure_trusted
    y = gs.CSR(np.array(INDPTR), np.array(INDICES), np.array(DATA), shape=SHAPE, device="cpu")
    assert not y.structure_trusted


def test_transposes_and_conversions_of_trusted_arrays_are_trusted(device):
    x = _csr(device)
    assert x.T.structure_trusted
    assert x.T.tocsr().structure_trusted
    assert x.tocsc().structure_trusted
    assert x.tocsr().structure_trusted


def test_untrusted_arrays_do_not_lend_trust_to_their_transposes(device):
    x = _csr(device, check=False)
    assert not x.T.structure_trusted


def test_trust_is_for_the_shape_it_was_established_for(device):
    x = _csr(device)
    wider = gs.CSR(x.indptr, x.indices, x.data, shape=(3, 4), check=False)
    assert not wider.structure_trusted


def test_pickled_arrays_start_untrusted_and_owned(device):
    x = pickle.loads(pickle.dumps(_csr(device)))
    assert not x.structure_trusted
    x.check()
    assert x.structure_trusted


def test_product_outputs_are_trusted(device):
    if not device.is_cuda:
        pytest.skip("the CUDA SpGEMM records its output; trust matters to cuSPARSE only")
    x = _csr(device)
    y = x @ x
    assert y.format == "csr" and y.structure_trusted
    np.testing.assert_allclose(to_host(y.todense()), DENSE @ DENSE)


def test_in_place_operation_takes_the_new_states_trust(device):
    if not device.is_cuda:
        pytest.skip("the CUDA SpGEMM records its output; trust matters to cuSPARSE only")
    x = _csr(device, check=False)
    assert not x.structure_trusted
    x @= _csr(device)  # the state of a product result replaces x's
    assert x.structure_trusted
    np.testing.assert_allclose(to_host(x.todense()), DENSE @ DENSE)
    y = _csr(device)
    y += _csr(device, check=False)
    assert y.structure_trusted == gs.CSR._from_parts(y.indptr, y.indices, y.data, y.shape, y.fill_value,
                                                     y.device).structure_trusted


def test_the_record_dies_with_the_arrays():
    from gpusparse.containers import compressed
    before = len(compressed._TRUSTED)
    x = gs.CSR(INDPTR, INDICES, DATA, shape=SHAPE, device="cpu")
    assert len(compressed._TRUSTED) == before + 1
    del x
    assert len(compressed._TRUSTED) == before


# --------------------------------------------------------------------------
# The CUDA decision: check or not, cuSPARSE or the bounds-safe kernels
# --------------------------------------------------------------------------

@pytest.fixture
def cusparse(device, monkeypatch):
    """cuSPARSE replaced by a recorder of the structures it is handed (it computes nothing)."""
    if not device.is_cuda:
        pytest.skip("the check guards cuSPARSE, a CUDA library")
    from gpusparse._kernels.cuda import _cusparse
    handed = []

    def run(indptr, indices, data, shape, b, out, alpha, beta, trans):
        handed.append((indptr, indices))  # (read later: a read here would be a sync)
        out[...] = 0

    monkeypatch.setattr(_cusparse, "supports", lambda *args, **kwargs: True)
    monkeypatch.setattr(_cusparse, "spmv", run)
    monkeypatch.setattr(_cusparse, "spmm", run)
    with device_scope(device):
        yield handed


def _counted(fn):
    from gpusparse._kernels.cuda import _backend
    if not _backend.EMULATED:
        pytest.skip("the launch counters are the emulated device's")
    from gpusparse._kernels.cuda_emulation import _counting
    with _counting.counting() as c:
        fn()
    checks = sum(n for name, n in c.launch_names.items() if "gs_csr_check" in name)
    return checks, c.syncs


def test_trusted_structures_skip_the_check(device, cusparse):
    x = _csr(device)
    v, b = put(np.ones(3), device), put(np.ones((3, 2)), device)
    assert _counted(lambda: x @ v) == (0, 0)
    assert _counted(lambda: x @ b) == (0, 0)
    assert _counted(lambda: x.T @ v) == (0, 0)
    assert len(cusparse) == 3


def test_untrusted_structures_are_checked_on_every_product(device, cusparse):
    x = _csr(device, check=False)
    v = put(np.ones(3), device)
    for _ in range(2):
        checks, syncs = _counted(lambda: x @ v)
        assert checks == 1 and syncs == 1
    assert len(cusparse) == 2  # valid: cuSPARSE after the check


def test_a_malformed_check_false_structure_takes_the_bounds_safe_kernel(device, cusparse):
    x = gs.CSR([0, 2, 9, 5], INDICES, DATA, shape=SHAPE, device=str(device), check=False)  # pointer past nnz
    checks, _ = _counted(lambda: x @ put(np.ones(3), device))
    assert checks == 1 and cusparse == []


def test_changed_shared_buffers_are_caught_before_the_product(device, cusparse):
    indptr = put(np.array(INDPTR, np.int64), device)
    indices = put(np.array(INDICES, np.int64), device)
    x = gs.CSR(indptr, indices, put(np.array(DATA), device), shape=SHAPE)
    v = put(np.ones(3), device)
    assert _counted(lambda: x @ v)[0] == 1 and len(cusparse) == 1
    indptr[2] = 99  # the caller writes behind the validation
    indices[0] = 10**6
    assert _counted(lambda: x @ v)[0] == 1 and len(cusparse) == 1  # checked again: the bounds-safe kernel ran


def test_the_decision_function(device, cusparse):
    from gpusparse._kernels.cuda._linalg import _structure_for_cusparse
    trusted, untrusted = _csr(device), _csr(device, check=False)
    assert _counted(lambda: _structure_for_cusparse(trusted.indptr, trusted.indices, 3, 3))[0] == 0
    assert _structure_for_cusparse(trusted.indptr, trusted.indices, 3, 3)[0] is trusted.indptr
    assert _counted(lambda: _structure_for_cusparse(untrusted.indptr, untrusted.indices, 3, 3))[0] == 1
    # The same arrays for another shape, or copies of them, are checked.
    assert _counted(lambda: _structure_for_cusparse(trusted.indptr, trusted.indices, 3, 4))[0] == 1
    assert _counted(lambda: _structure_for_cusparse(trusted.indptr.copy(), trusted.indices, 3, 3))[0] == 1


def test_a_failed_check_after_writing_through_an_accessor_withdraws_trust(device, cusparse):
    x = _csr(device)
    assert x.structure_trusted
    x.indices[0] = 7  # CuPy arrays are not read-only: outside the API, check() is the way back
    with pytest.raises(ValueError):
        x.check()
    assert not x.structure_trusted
    checks, _ = _counted(lambda: x @ put(np.ones(3), device))
    assert checks == 1 and cusparse == []  # checked again, and the bounds-safe kernel ran
