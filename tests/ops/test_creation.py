"""Creation functions: fromdense, asarray, zeros, zeros_like, empty_like, eye, random."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import (
    assert_dense_equal,
    assert_same_components,
    assert_sparse_equal,
    check_invariants,
    dtype_id,
    layouts,
    put,
    quiet_cast,
)
from gpusparse._device import array_device, to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.ops.interop._common import shares
from strategies import coo_cases, dense_cases, shapes, value_dtypes


def same_value(a, b) -> bool:
    return bool(a == b) or bool(a != a and b != b)


def differs_from_fill(arr, fill):
    """Elements of ``arr`` that are not the fill value (NaN matches NaN, part by part for complex)."""
    def differs(a, f):
        out = a != f
        if a.dtype.kind == "f" and f != f:
            out = ~np.isnan(a)
        return out
    if arr.dtype.kind == "c":
        fill = complex(fill)
        return differs(arr.real, fill.real) | differs(arr.imag, fill.imag)
    return differs(arr, fill)


# --------------------------------------------------------------------------
# fromdense
# --------------------------------------------------------------------------

@given(case=dense_cases(), data=st.data())
def test_fromdense_stores_the_blocks_that_differ_from_the_fill(device, case, data):
    arr, fill = case
    sparse_dim = data.draw(st.integers(0, arr.ndim))
    x = gs.fromdense(arr, fill_value=fill, sparse_dim=sparse_dim, device=device)
    assert x.format == "coo" and x.device == device and x.sparse_dim == sparse_dim
    assert same_value(x.fill_value, fill) and x.is_coalesced()
    assert_sparse_equal(x, arr, rtol=0)
    stored = differs_from_fill(arr, fill).any(axis=tuple(range(sparse_dim, arr.ndim)))
    n = int(np.count_nonzero(stored))
    expected_coords = np.stack(np.nonzero(stored)) if sparse_dim else np.zeros((0, n), np.int64)
    np.testing.assert_array_equal(to_host(x.coords), expected_coords.reshape(sparse_dim, n))
    assert_dense_equal(x.data, arr[np.nonzero(stored)] if sparse_dim else arr[None][: int(stored)], rtol=0)


@given(case=dense_cases(min_ndim=2, max_ndim=3), fmt=st.sampled_from(["csr", "csc"]))
def test_fromdense_compressed(device, case, fmt):
    arr, fill = case
    x = gs.fromdense(arr, fill_value=fill, sparse_dim=2, format=fmt, device=device)
    assert x.format == fmt
    assert_sparse_equal(x, arr, rtol=0)


@given(case=dense_cases(min_ndim=2, max_ndim=2, fill=False, nan=False), fmt=st.sampled_from(["csr", "csc"]))
def test_fromdense_matches_scipy(device, case, fmt):
    arr, _ = case
    x = gs.fromdense(arr, format=fmt, device=device)
    ref = sps.csr_matrix(arr) if fmt == "csr" else sps.csc_matrix(arr)
    np.testing.assert_array_equal(to_host(x.indptr), ref.indptr)
    np.testing.assert_array_equal(to_host(x.indices), ref.indices)
    assert_dense_equal(x.data, ref.data, rtol=0)


def test_fromdense_from_the_device_stays_there(device):
    arr = put(np.array([[0.0, 1.5], [0.0, 0.0]]), device)
    x = gs.fromdense(arr)
    assert x.device == device
    assert_sparse_equal(x, [[0.0, 1.5], [0.0, 0.0]])


@pytest.mark.parametrize("value", [3.0, np.nan, 1 + 1j])
def test_fromdense_does_not_alias_its_input(device, value):
    for arr in (np.array(value), np.array([[value, 0], [0, value]])):
        arr = put(arr, device)
        x = gs.fromdense(arr, device=device)
        expected = to_host(arr).copy()
        arr[...] = 7
        assert_dense_equal(x.todense(), expected, rtol=0)


def test_fromdense_nan_fill(device):
    arr = np.array([[np.nan, 1.0], [np.nan, np.nan]])
    x = gs.fromdense(arr, fill_value=np.nan, device=device)
    assert x.nnz == 1
    assert_sparse_equal(x, arr)
    z = np.array([np.nan + 0j, complex(np.nan, 2.0), 0j])
    y = gs.fromdense(z, fill_value=complex(np.nan, 0.0), device=device)
    np.testing.assert_array_equal(to_host(y.coords), [[1, 2]])  # nan+2j is not nan+0j
    assert_sparse_equal(y, z)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_fromdense_stores_subnormal_numbers(device, dtype):
    # On a GPU, CuPy's float32 comparisons flush subnormals to zero (-ftz=true): the
    # decision to store must not depend on it, and neither must the fill-value rule.
    tiny = np.finfo(np.float32).smallest_subnormal
    arr = np.array([tiny, 0.0, -0.0, -tiny, 1.0], dtype=dtype)
    x = gs.fromdense(put(arr, device))
    np.testing.assert_array_equal(to_host(x.coords), [[0, 3, 4]])  # -0.0 == 0.0: not stored
    assert_sparse_equal(x, arr, rtol=0)
    y = gs.fromdense(put(arr, device), fill_value=tiny)
    np.testing.assert_array_equal(to_host(y.coords), [[1, 2, 3, 4]])
    assert_sparse_equal(y, arr, rtol=0)


@pytest.mark.parametrize("shape", [(3, 4, 2), (2, 0, 3), (1, 1, 1)])
def test_fromdense_every_layout(device, rng, shape):
    arr = np.where(rng.random(shape) < 0.4, rng.standard_normal(shape), 0.0)
    for sparse_dim, dense_dim in layouts(shape):
        x = gs.fromdense(arr, sparse_dim=sparse_dim, device=device)
        assert (x.sparse_dim, x.dense_dim) == (sparse_dim, dense_dim)
        assert_sparse_equal(x, arr)


# --------------------------------------------------------------------------
# asarray
# --------------------------------------------------------------------------

def test_asarray_of_dense(device):
    arr = np.array([[0, 2], [3, 0]], dtype=np.int16)
    x = gs.asarray(arr, device=device)
    assert x.format == "coo" and x.device == device
    assert_sparse_equal(x, arr)
    y = gs.asarray(arr, format="csr", device=device, fill_value=2)
    assert y.format == "csr" and y.nnz == 3
    assert_sparse_equal(y, arr)
    with gs.device(device):
        z = gs.asarray([[0.0, 1.0]])
    assert z.device == device
    assert_sparse_equal(z, [[0.0, 1.0]])


def test_asarray_of_a_sparse_array(device):
    x = gs.COO(np.array([[0, 1], [1, 0]]), np.array([1.0, 2.0]), device=device)
    assert gs.asarray(x) is x
    assert gs.asarray(x, format="coo", device=device, copy=False) is x
    y = gs.asarray(x, copy=True)
    assert y is not x and not shares(y.data, x.data)
    assert_same_components(y, x, rtol=0)
    z = gs.asarray(x, format="csc")
    assert z.format == "csc"
    assert_sparse_equal(z, [[0.0, 1.0], [2.0, 0.0]])


# --------------------------------------------------------------------------
# zeros, zeros_like, empty_like
# --------------------------------------------------------------------------

@given(shape=shapes(), dtype=value_dtypes())
def test_zeros(device, shape, dtype):
    x = gs.zeros(shape, dtype=dtype, device=device)
    assert x.nnz == 0 and x.shape == shape and x.dtype == dtype and x.device == device
    assert x.sparse_dim == len(shape) and x.is_coalesced()
    assert_sparse_equal(x, np.zeros(shape, dtype))


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_zeros_formats_and_fill(device, fmt):
    x = gs.zeros((3, 4), dtype=np.int32, format=fmt, device=device, fill_value=5)
    assert x.format == fmt
    assert_sparse_equal(x, np.full((3, 4), 5, np.int32))
    assert gs.zeros(5, device=device).shape == (5,)


def test_zeros_on_the_default_device(device):
    with gs.device(device):
        assert gs.zeros((2, 2)).device == device
        assert gs.eye(2).device == device
        assert gs.random((3, 3), density=0.5, seed=0).device == device


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # NumPy warns on complex -> real
@given(case=coo_cases(), fmt=st.sampled_from(["coo", "csr", "csc"]), dtype=st.none() | value_dtypes())
def test_zeros_like_and_empty_like(device, case, fmt, dtype):
    x = case.build(device)
    if fmt != "coo":
        if x.sparse_dim != 2:
            return
        x = x.asformat(fmt)
    expected_dtype = x.dtype if dtype is None else np.dtype(dtype)
    for make, fill in ((gs.zeros_like, np.zeros((), expected_dtype)[()]),
                       (gs.empty_like, quiet_cast(x.fill_value, expected_dtype)[()])):
        y = make(x, dtype=dtype)
        assert y.format == fmt and y.device == device and y.nnz == 0
        assert y.shape == x.shape and (y.sparse_dim, y.dense_dim) == (x.sparse_dim, x.dense_dim)
        assert y.dtype == expected_dtype
        assert same_value(y.fill_value, fill)
        assert_sparse_equal(y, np.full(x.shape, fill, dtype=expected_dtype))


def test_zeros_like_format_override(device):
    x = gs.zeros((2, 3), device=device)
    assert gs.zeros_like(x, format="csr").format == "csr"


# --------------------------------------------------------------------------
# eye
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_, np.complex64], ids=dtype_id)
def test_eye(device, fmt, dtype):
    for n in (0, 1, 3, 4):
        for m in (None, 0, 2, 5):
            for k in (-5, -2, -1, 0, 1, 3, 6):
                x = gs.eye(n, m, k=k, dtype=dtype, format=fmt, device=device)
                assert x.format == fmt and x.dtype == dtype
                assert_sparse_equal(x, np.eye(n, m, k=k, dtype=dtype))


# --------------------------------------------------------------------------
# random
# --------------------------------------------------------------------------

def _check_random(x, shape, density, dtype):
    size = math.prod(shape)
    assert x.shape == shape and x.dtype == dtype
    assert x.nnz == int(round(density * size))
    check_invariants(x)  # in bounds; flags honest
    assert x.is_coalesced()
    values = to_host(x.data)
    if np.dtype(dtype).kind == "b":
        assert values.all()
    elif np.dtype(dtype).kind in "iu":
        assert ((values >= 1) & (values < 100)).all()
    elif np.dtype(dtype).kind == "c":
        assert ((values.real >= 0) & (values.real < 1) & (values.imag >= 0) & (values.imag < 1)).all()
    else:
        assert ((values >= 0) & (values < 1)).all()


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=dtype_id)
def test_random_every_dtype(device, dtype):
    x = gs.random((7, 5, 3), density=0.3, dtype=dtype, seed=1, device=device)
    _check_random(x, (7, 5, 3), 0.3, dtype)


@given(shape=shapes(max_side=6), density=st.floats(0, 1), seed=st.integers(0, 2**32))
def test_random_properties(device, shape, density, seed):
    x = gs.random(shape, density=density, seed=seed, device=device)
    _check_random(x, shape, density, np.float64)


@pytest.mark.parametrize("shape, density", [((1000, 1000), 0.01), ((50, 40, 30), 0.2), ((10, 10), 0.9)])
def test_random_sparse_and_dense_paths(device, shape, density):
    x = gs.random(shape, density=density, seed=7, device=device)
    _check_random(x, shape, density, np.float64)


def test_random_seed_reproducibility(device):
    a = gs.random((30, 40), density=0.1, seed=123, device=device)
    b = gs.random((30, 40), density=0.1, seed=123, device=device)
    assert_same_components(a, b, rtol=0)
    c = gs.random((30, 40), density=0.1, seed=124, device=device)
    assert not np.array_equal(to_host(a.coords), to_host(c.coords))


@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 2), (6,), ()])
def test_random_density_zero_and_one(device, shape):
    empty = gs.random(shape, density=0, seed=0, device=device)
    assert empty.nnz == 0
    assert_sparse_equal(empty, np.zeros(shape))
    full = gs.random(shape, density=1, seed=0, device=device)
    assert full.nnz == math.prod(shape)
    dense = to_host(full.todense())
    assert ((dense >= 0) & (dense < 1)).all()
    every = np.stack(np.unravel_index(np.arange(dense.size), shape)) if shape else np.zeros((0, 1), np.int64)
    np.testing.assert_array_equal(to_host(full.coords), every)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_random_compressed(device, fmt):
    x = gs.random((20, 30), density=0.2, format=fmt, seed=0, device=device, fill_value=-1.0)
    assert x.format == fmt and x.nnz == 120
    check_invariants(x)
    assert x.fill_value == -1.0
    dense = to_host(x.todense())
    assert (dense == -1.0).sum() == 600 - 120


def test_random_result_is_on_the_requested_device(device):
    x = gs.random((10, 10), density=0.5, seed=0, device=device)
    assert array_device(x.coords) == device and array_device(x.data) == device
