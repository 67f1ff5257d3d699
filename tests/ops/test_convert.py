"""Conversions between formats, dtypes and devices, against NumPy and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given
from hypothesis import strategies as st

from _helpers import (
    assert_dense_equal,
    assert_same_components,
    assert_same_on_devices,
    assert_sparse_equal,
    check_invariants,
    cuda_devices,
    put,
    quiet_cast,
)
from gpusparse import COO
from gpusparse._device import to_host
from gpusparse.ops.interop._common import shares
from strategies import coo_cases, value_dtypes

FORMATS = ("coo", "csr", "csc")


def same_value(a, b) -> bool:
    return bool(a == b) or bool(a != a and b != b)


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), src=st.sampled_from(FORMATS),
       dst=st.sampled_from(FORMATS))
def test_asformat_round_trips(device, case, src, dst):
    x = case.build(device).asformat(src)
    y = x.asformat(dst)
    assert y.format == dst and y.device == device and y.shape == case.shape
    assert same_value(y.fill_value, case.fill_value)
    assert_sparse_equal(y, case.dense())
    if src == dst:
        assert y is x
    back = y.asformat(src)
    assert back.format == src
    assert_sparse_equal(back, case.dense())


@given(case=coo_cases(sparse_dim=2, max_dense_dim=0, fill=False, nan=False))
def test_tocsr_tocsc_match_scipy(device, case):
    x = case.build(device)
    ref = sps.coo_matrix((case.data, tuple(case.coords)), shape=case.shape)
    for got, expected in ((x.tocsr(), ref.tocsr()), (x.tocsc(), ref.tocsc())):
        expected.sum_duplicates()  # canonical: sorted indices, duplicates summed (zeros kept)
        assert got.index_dtype == np.int32  # small sizes: int32, as cuSPARSE prefers
        np.testing.assert_array_equal(to_host(got.indptr), expected.indptr)
        np.testing.assert_array_equal(to_host(got.indices), expected.indices)
        assert_dense_equal(got.data, expected.data)


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1))
def test_tocoo_flags(device, case):
    x = case.build(device)
    from_csr = x.tocsr().tocoo()
    assert from_csr.sorted and from_csr.unique  # row-major, canonical
    assert_sparse_equal(from_csr, case.dense())
    from_csc = x.tocsc().tocoo()
    assert from_csc.unique  # column-major order: sorted only if it happens to be
    assert_sparse_equal(from_csc, case.dense())
    np.testing.assert_array_equal(to_host(from_csr.coords), to_host(x.coalesce().coords))


def test_tocsc_example(device):
    x = COO(np.array([[1, 0, 1, 0], [0, 2, 0, 0]]), np.array([1, 2, 3, 4]), shape=(2, 3), device=device)
    c = x.tocsc()
    np.testing.assert_array_equal(to_host(c.indptr), [0, 2, 2, 3])
    np.testing.assert_array_equal(to_host(c.indices), [0, 1, 0])
    np.testing.assert_array_equal(to_host(c.data), [4, 4, 2])
    assert_sparse_equal(c, [[4, 0, 2], [4, 0, 0]])


def test_asformat_is_case_insensitive(device):
    x = COO(np.array([[0], [1]]), np.array([1.0]), shape=(2, 2), device=device)
    assert x.asformat("CSR").format == "csr" and x.asformat("Coo") is x


def test_conversions_pick_int64_indices_for_large_sizes(device):
    x = COO(np.array([[1, 0], [2**31 + 1, 3]]), np.array([1.0, 2.0]), shape=(2, 2**31 + 2), device=device)
    y = x.tocsr()
    assert y.index_dtype == np.int64
    check_invariants(y)
    np.testing.assert_array_equal(to_host(y.indices), [3, 2**31 + 1])
    np.testing.assert_array_equal(to_host(y.tocoo().coords), to_host(x.coalesce().coords))


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # NumPy warns on complex -> real
@given(case=coo_cases(sparse_dim=2, max_dense_dim=1, nan=False), fmt=st.sampled_from(["csr", "csc"]),
       dtype=value_dtypes())
def test_astype_compressed(device, case, fmt, dtype):
    if case.dtype.kind in "fc" and np.dtype(dtype).kind in "biu":  # keep casts device-independent
        case.data = (np.abs(case.data) % 100).astype(case.dtype)
        case.fill_value = case.dtype.type(abs(case.fill_value) % 100)
    x = case.build(device).asformat(fmt)
    y = x.astype(dtype)
    assert y.format == fmt and y.dtype == dtype and y.index_dtype == x.index_dtype
    assert_sparse_equal(y, quiet_cast(case.dense(), dtype))


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), fmt=st.sampled_from(FORMATS))
def test_copy_every_format(device, case, fmt):
    x = case.build(device).asformat(fmt)
    y = x.copy()
    assert type(y) is type(x)
    assert_same_components(y, x, rtol=0)
    assert_sparse_equal(y, case.dense())
    assert not shares(y.data, x.data)


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), fmt=st.sampled_from(FORMATS))
def test_to_device_every_format(device, case, fmt):
    x = case.build(device).asformat(fmt)
    assert x.to(device) is x
    for target in cuda_devices():
        y = x.to(target)
        assert y.device == target and y.format == fmt
        assert_sparse_equal(y, case.dense())
        assert_same_components(y.to(device), x, rtol=0)


# --------------------------------------------------------------------------
# The same components on every device
# --------------------------------------------------------------------------

@given(case=coo_cases())
def test_coalesce_same_on_every_device(case):
    assert_same_on_devices(lambda dev: case.build(dev).coalesce())


@given(case=coo_cases(sparse_dim=2, max_dense_dim=1))
def test_formats_same_on_every_device(case):
    assert_same_on_devices(lambda dev: (case.build(dev).tocsr(), case.build(dev).tocsc(),
                                        case.build(dev).tocsr().tocsc().tocoo(), case.build(dev).todense()))


def test_large_coalesce_same_on_every_device():
    rng = np.random.default_rng(3)
    coords = rng.integers(0, 300, size=(2, 200_000))
    data = rng.integers(-5, 5, size=200_000).astype(np.int32)
    assert_same_on_devices(lambda dev: COO(put(coords, dev), put(data, dev), shape=(300, 300)).coalesce())


# --------------------------------------------------------------------------
# The direct transpose (CSR <-> CSC, sorted unique COO -> CSC)
# --------------------------------------------------------------------------

def _via_coalesce(x, cls):
    """The conversion the way it went before the direct transpose: through COO and its canonical form."""
    from gpusparse.ops import convert
    coo = x if x.format == "coo" else convert.compressed_to_coo(x)
    return convert.coo_to_compressed(coo, cls, other_order=x.format != "coo")


def _assert_bit_identical(a, b):
    assert type(a) is type(b) and a.shape == b.shape
    for name in ("indptr", "indices", "data"):
        u, v = to_host(getattr(a, name)), to_host(getattr(b, name))
        assert u.dtype == v.dtype and u.shape == v.shape, name
        assert u.tobytes() == v.tobytes(), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int8, np.bool_, np.uint16])
@pytest.mark.parametrize("dense_shape", [(), (3,), (0,)])
@pytest.mark.parametrize("src", ["csr", "csc", "coo"])
def test_direct_transpose_is_bit_identical_to_the_coalescing_path(device, dtype, dense_shape, src):
    from gpusparse.containers import CSC, CSR
    rng = np.random.default_rng(11)
    shape = (37, 23)
    mask = rng.random(shape) < 0.15
    rows, cols = np.nonzero(mask)
    values = rng.standard_normal((rows.size,) + dense_shape) * 5
    values = (values + 1j * values if np.dtype(dtype).kind == "c" else values).astype(dtype)
    coo = COO(put(np.stack([rows, cols]), device), put(values, device), shape=shape + dense_shape)
    coo = coo.coalesce()
    x = coo.asformat(src)
    targets = [CSC] if src == "coo" else [CSR, CSC]
    for cls in targets:
        if cls.format == src:
            continue
        got = x.asformat(cls.format)
        _assert_bit_identical(got, _via_coalesce(x, cls))
        check_invariants(got)


def test_direct_transpose_keeps_a_wide_index_dtype_rule(device):
    from gpusparse.containers import CSR
    a = sps.random(50, 40, density=0.1, format="csr", random_state=5)
    x = CSR(put(a.indptr.astype(np.int64), device), put(a.indices.astype(np.int64), device),
            put(a.data, device), shape=a.shape)
    y = x.tocsc()
    b = a.tocsc()
    assert to_host(y.indptr).dtype == np.int32  # the sizes decide, as on the coalescing path
    np.testing.assert_array_equal(to_host(y.indptr), b.indptr)
    np.testing.assert_array_equal(to_host(y.indices), b.indices)
    np.testing.assert_array_equal(to_host(y.data), b.data)


def test_empty_and_degenerate_shapes_transpose(device):
    for shape in [(0, 0), (0, 5), (5, 0), (1, 1), (3, 4)]:
        x = COO(put(np.zeros((2, 0), np.int64), device), put(np.zeros(0), device), shape=shape)
        csr = x.tocsr()
        for y in (csr.tocsc(), csr.tocsc().tocsr(), x.tocsc()):
            assert y.nnz == 0 and y.shape == shape
            np.testing.assert_array_equal(to_host(y.indptr), np.zeros(y.indptr.shape[0], dtype=y.indptr.dtype))


@pytest.mark.parametrize("parallel", [False, True])
def test_cpu_transpose_kernel_matches_a_stable_sort(monkeypatch, parallel):
    from gpusparse._kernels.cpu import _transpose
    if parallel:
        monkeypatch.setattr(_transpose, "PARALLEL_TRANSPOSE_MIN", 1)
        monkeypatch.setattr(_transpose, "PARALLEL_TRANSPOSE_THREADS", 1)
    rng = np.random.default_rng(2)
    for m, n, density in [(300, 40, 0.3), (2000, 7, 0.5), (1, 50, 1.0), (64, 64, 0.05)]:
        a = sps.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
        a.sort_indices()
        values = np.stack([a.data, -a.data], axis=1)
        ip, ix, v = _transpose.transpose_compressed(a.indptr, a.indices, values, n, np.int32)
        rows = np.repeat(np.arange(m), np.diff(a.indptr))
        perm = np.argsort(a.indices, kind="stable")
        np.testing.assert_array_equal(ip, np.searchsorted(a.indices[perm], np.arange(n + 1)))
        np.testing.assert_array_equal(ix, rows[perm])
        np.testing.assert_array_equal(v, values[perm])
        assert ip.dtype == ix.dtype == np.int32


@pytest.mark.parametrize("parallel", [False, True])
def test_cpu_transpose_kernel_stays_in_bounds_on_hostile_structure(monkeypatch, parallel):
    from gpusparse._kernels.cpu import _transpose
    if parallel:
        monkeypatch.setattr(_transpose, "PARALLEL_TRANSPOSE_MIN", 1)
        monkeypatch.setattr(_transpose, "PARALLEL_TRANSPOSE_THREADS", 1)
    big = np.iinfo(np.int64)
    indptr = np.array([0, 2**62, -5, 3, big.max, 1, 1, big.min, 40], np.int64)
    indices = np.resize(np.array([-1, 2**40, 3, big.min, big.max, 0], np.int64), 40)
    values = np.arange(80.0).reshape(40, 2)
    for n_minor in (0, 1, 5):
        ip, ix, v = _transpose.transpose_compressed(indptr, indices, values, n_minor, np.int64)
        assert ip.shape == (n_minor + 1,) and ix.shape == (40,) and v.shape == (40, 2)
