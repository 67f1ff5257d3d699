"""Oracles and assertions shared by the tests.

* :func:`assert_sparse_equal` compares a sparse array with a dense NumPy
  oracle *and* checks the container invariants (:func:`check_invariants`).
* :func:`dense_oracle` and :func:`coalesce_oracle` say in NumPy what COO
  components mean: duplicates are summed (OR-ed for bool), every unstored
  element is the fill value.
* :func:`layouts` walks every (sparse_dim, dense_dim) split of a shape.
* :func:`assert_same_on_devices` runs a function on the CPU and on every
  CUDA device and compares the results.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gpusparse._device import Device, array_device, cuda_status, device_scope, to_host, xp_for
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import SparseArray

CPU = Device("cpu", 0)

#: Relative tolerance per dtype; exact comparison for every dtype not listed.
RTOL = {
    np.dtype(np.float32): 1e-5,
    np.dtype(np.complex64): 1e-5,
    np.dtype(np.float64): 1e-11,
    np.dtype(np.complex128): 1e-11,
}

#: Dtypes of the real numbers (the ones ``min``/``max`` are defined for).
REAL_DTYPES = tuple(d for d in VALUE_DTYPES if d.kind in "iuf")
#: Dtypes of the numbers (everything but bool).
NUMBER_DTYPES = tuple(d for d in VALUE_DTYPES if d.kind != "b")


def dtype_id(dtype) -> str:
    return np.dtype(dtype).name


# --------------------------------------------------------------------------
# Moving test data onto a device
# --------------------------------------------------------------------------

def put(arr, device: Device):
    """``arr`` (NumPy) as an array of ``device``'s module."""
    arr = np.asarray(arr)
    if not device.is_cuda:
        return arr
    with device_scope(device):
        return xp_for(device).asarray(arr)


def cuda_devices() -> list:
    """Every CUDA device CuPy can see (empty without one)."""
    return [Device("cuda", i) for i in range(cuda_status().device_count)]


# --------------------------------------------------------------------------
# NumPy oracles
# --------------------------------------------------------------------------

def layouts(shape):
    """Every ``(sparse_dim, dense_dim)`` split of ``shape``, from all-dense to all-sparse."""
    ndim = len(shape)
    for sparse_dim in range(ndim + 1):
        yield sparse_dim, ndim - sparse_dim


def _accumulate(dtype):
    return np.logical_or if np.dtype(dtype) == np.bool_ else np.add


def dense_oracle(coords, data, shape, fill=0):
    """The dense array COO ``(coords, data)`` of ``shape`` stands for.

    Duplicate coordinates are summed (OR-ed for bool) starting from zero, not
    from ``fill``; a stored entry replaces its whole dense block; every
    element that is not stored equals ``fill``.
    """
    coords = np.asarray(coords, dtype=np.int64)
    data = np.asarray(data)
    sparse_dim = coords.shape[0]
    sparse_shape, dense_shape = tuple(shape[:sparse_dim]), tuple(shape[sparse_dim:])
    nnz = data.shape[0]
    size = math.prod(sparse_shape)
    out = np.full((size,) + dense_shape, fill, dtype=data.dtype)
    if nnz:
        flat = (np.ravel_multi_index(tuple(coords), sparse_shape) if sparse_dim
                else np.zeros(nnz, dtype=np.intp))
        acc = np.zeros((size,) + dense_shape, dtype=data.dtype)
        with np.errstate(all="ignore"):
            _accumulate(data.dtype).at(acc, flat, data)
        hit = np.zeros(size, dtype=bool)
        hit[flat] = True
        out[hit] = acc[hit]
    return out.reshape(tuple(shape))


def lexsort_columns(coords):
    """The stable permutation sorting the columns of ``coords`` (row 0 most significant)."""
    coords = np.asarray(coords)
    if coords.shape[0] == 0:
        return np.arange(coords.shape[1])
    return np.lexsort(coords[::-1])


def coalesce_oracle(coords, data):
    """Sorted unique coordinates and the summed data, without linear keys (any shape)."""
    coords = np.asarray(coords, dtype=np.int64)
    data = np.asarray(data)
    order = lexsort_columns(coords)
    c, d = coords[:, order], data[order]
    n = c.shape[1]
    if n == 0:
        return c, d
    new = np.ones(n, dtype=bool)
    new[1:] = (c[:, 1:] != c[:, :-1]).any(axis=0)
    ids = np.cumsum(new) - 1
    summed = np.zeros((int(ids[-1]) + 1,) + d.shape[1:], dtype=d.dtype)
    with np.errstate(all="ignore"):
        _accumulate(d.dtype).at(summed, ids, d)
    return c[:, new], summed


# --------------------------------------------------------------------------
# Comparing dense arrays
# --------------------------------------------------------------------------

def assert_dense_equal(actual, expected, *, rtol=None, check_dtype=True):
    """Host arrays equal: exactly for bool/integers, within ``RTOL`` for floats; NaN == NaN."""
    actual, expected = to_host(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if check_dtype:
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != expected {expected.dtype}"
    tol = RTOL.get(actual.dtype, 0.0) if rtol is None else rtol
    if tol == 0.0 or actual.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected)
        return
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale, equal_nan=True)


# --------------------------------------------------------------------------
# Container invariants
# --------------------------------------------------------------------------

def _lex_order_state(coords):
    """2 if the columns of ``coords`` strictly increase, 1 if non-decreasing, 0 otherwise."""
    if coords.shape[1] <= 1:
        return 2
    if coords.shape[0] == 0:  # every column is the empty coordinate
        return 1
    diff = coords[:, 1:] - coords[:, :-1]  # both in [0, 2**63): no overflow
    differs = diff != 0
    first = differs.argmax(axis=0)
    sign = diff[first, np.arange(diff.shape[1])]
    if (sign < 0).any():
        return 0
    return 2 if differs.any(axis=0).all() else 1


def _check_component(arr, name, device):
    assert array_device(arr) == device, f"{name} is on {array_device(arr)}, container on {device}"
    assert arr.flags.c_contiguous, f"{name} is not C-contiguous"


def check_invariants(x) -> None:
    """Assert everything a container promises about its components."""
    assert isinstance(x, SparseArray)
    assert isinstance(x.device, Device)
    assert all(isinstance(s, int) and s >= 0 for s in x.shape), x.shape
    assert x.dtype in VALUE_DTYPES, x.dtype
    assert isinstance(x.fill_value, np.generic) and x.fill_value.dtype == x.dtype, repr(x.fill_value)
    assert x.sparse_dim + x.dense_dim == x.ndim
    assert x.data.shape == (x.nnz,) + x.shape[x.sparse_dim:], (x.data.shape, x.shape)
    _check_component(x.data, "data", x.device)
    if x.format == "coo":
        _check_coo(x)
    else:
        _check_compressed(x)


def _check_coo(x) -> None:
    _check_component(x.coords, "coords", x.device)
    coords = to_host(x.coords)
    assert coords.dtype == np.int64, coords.dtype
    assert coords.shape == (x.sparse_dim, x.nnz), (coords.shape, x.sparse_dim, x.nnz)
    if x.sparse_dim == 0:
        assert x.nnz <= 1
    sparse_shape = x.shape[: x.sparse_dim]
    assert (coords >= 0).all(), "negative coordinate"
    if all(s < 2**63 for s in sparse_shape):
        bounds = np.asarray(sparse_shape, dtype=np.int64).reshape(-1, 1)
        assert (coords < bounds).all(), "coordinate out of bounds"
    else:  # dimensions beyond int64: compare as Python ints
        bounds = np.asarray(sparse_shape, dtype=object).reshape(-1, 1)
        assert (coords.astype(object) < bounds).all(), "coordinate out of bounds"
    state = _lex_order_state(coords)
    if x.sorted:
        assert state >= 1, "sorted flag set but coordinates are not in row-major order"
    if x.unique:
        n_unique = np.unique(coords, axis=1).shape[1] if x.sparse_dim else min(x.nnz, 1)
        assert n_unique == x.nnz, "unique flag set but coordinates repeat"
    assert x.is_coalesced() == (x.sorted and x.unique)
    if x.sorted and x.unique:
        assert state == 2


def _check_compressed(x) -> None:
    assert x.sparse_dim == 2, x.sparse_dim
    _check_component(x.indptr, "indptr", x.device)
    _check_component(x.indices, "indices", x.device)
    indptr, indices = to_host(x.indptr), to_host(x.indices)
    assert indptr.dtype == indices.dtype, (indptr.dtype, indices.dtype)
    assert indices.dtype in (np.int32, np.int64), indices.dtype
    assert x.index_dtype == indices.dtype
    major = 0 if x.format == "csr" else 1
    n_major, n_minor = x.shape[major], x.shape[1 - major]
    assert indptr.shape == (n_major + 1,), indptr.shape
    assert indices.shape == (x.nnz,), indices.shape
    assert indptr[0] == 0 and indptr[-1] == x.nnz, (indptr[0], indptr[-1], x.nnz)
    steps = np.diff(indptr.astype(np.int64))
    assert (steps >= 0).all(), "indptr decreases"
    if x.nnz:
        assert indices.min() >= 0 and indices.max() < n_minor, "index out of range"
    majors = np.repeat(np.arange(n_major), steps)
    same = majors[1:] == majors[:-1]
    assert (np.diff(indices.astype(np.int64))[same] > 0).all(), "not canonical: unsorted or repeated indices"
    assert x.is_coalesced()


# --------------------------------------------------------------------------
# The main assertion
# --------------------------------------------------------------------------

def assert_sparse_equal(actual, expected_dense, *, rtol=None, check_dtype=True) -> None:
    """``actual`` is a valid container whose dense form equals ``expected_dense``."""
    check_invariants(actual)
    expected = np.asarray(expected_dense)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    dense = actual.todense()
    assert array_device(dense) == actual.device, "todense() left the container's device"
    assert dense.dtype == actual.dtype
    assert_dense_equal(dense, expected, rtol=rtol, check_dtype=check_dtype)


def components_on_host(x) -> dict:
    """Every component and piece of metadata of a container, on the host."""
    out = {"format": x.format, "shape": x.shape, "dtype": x.dtype, "fill_value": x.fill_value,
           "data": to_host(x.data)}
    if x.format == "coo":
        out.update(coords=to_host(x.coords), sorted=x.sorted, unique=x.unique)
    else:
        out.update(indptr=to_host(x.indptr), indices=to_host(x.indices))
    return out


def assert_same_components(actual, expected, *, rtol=None) -> None:
    """Two containers with identical metadata and index arrays and equal data."""
    a, e = components_on_host(actual), components_on_host(expected)
    data_a, data_e = a.pop("data"), e.pop("data")
    fill_a, fill_e = a.pop("fill_value"), e.pop("fill_value")
    assert fill_a.dtype == fill_e.dtype and (fill_a == fill_e or (fill_a != fill_a and fill_e != fill_e))
    for name in a:
        if isinstance(a[name], np.ndarray):
            assert a[name].dtype == e[name].dtype, name
            np.testing.assert_array_equal(a[name], e[name], err_msg=name)
        else:
            assert a[name] == e[name], (name, a[name], e[name])
    assert_dense_equal(data_a, data_e, rtol=rtol)


# --------------------------------------------------------------------------
# The same computation on every device
# --------------------------------------------------------------------------

def _to_host_tree(value):
    if isinstance(value, SparseArray):
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_to_host_tree(v) for v in value)
    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        return to_host(value)
    return value


def _assert_tree_equal(actual, expected, rtol):
    if isinstance(expected, SparseArray):
        assert isinstance(actual, SparseArray)
        assert_same_components(actual, expected, rtol=rtol)
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_tree_equal(a, e, rtol)
    elif isinstance(expected, np.ndarray):
        assert_dense_equal(actual, expected, rtol=rtol)
    else:
        assert actual == expected


def assert_same_on_devices(fn, *, rtol=None) -> None:
    """``fn(device)`` gives the same result on the CPU and on every CUDA device.

    Results may be arrays, containers, scalars or tuples of them. Skips
    where there is no CUDA device.
    """
    devices = cuda_devices()
    if not devices:
        pytest.skip(f"needs a CUDA device: {cuda_status().reason}")
    expected = _to_host_tree(fn(CPU))
    for dev in devices:
        actual = _to_host_tree(fn(dev))
        _assert_tree_equal(actual, expected, rtol)


def quiet_cast(arr, dtype):
    """``arr.astype(dtype)`` without NumPy's complex/overflow warnings."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(arr).astype(dtype)


__all__ = [
    "CPU",
    "NUMBER_DTYPES",
    "REAL_DTYPES",
    "RTOL",
    "assert_dense_equal",
    "assert_same_components",
    "assert_same_on_devices",
    "assert_sparse_equal",
    "check_invariants",
    "coalesce_oracle",
    "components_on_host",
    "cuda_devices",
    "dense_oracle",
    "dtype_id",
    "layouts",
    "lexsort_columns",
    "put",
    "quiet_cast",
]
