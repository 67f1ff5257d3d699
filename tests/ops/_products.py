"""The oracles, comparisons and operand strategies of the product tests (``test_linalg*.py``).

Floating-point products are compared within a bound scaled by
``|a| @ |b|`` (the summation order differs from NumPy's BLAS); integer and
bool results exactly (both wrap modulo 2**bits).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from _helpers import check_invariants, dense_oracle, put
from gpusparse._device import to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import COO, SparseArray
from strategies import elements

NUMERIC = tuple(d for d in VALUE_DTYPES if d.kind != "b")
INEXACT = tuple(d for d in VALUE_DTYPES if d.kind in "fc")
EXAMPLES = settings(deadline=None)  # max_examples from the profile (conftest.py)


# --------------------------------------------------------------------------
# Oracles and comparisons
# --------------------------------------------------------------------------

def _tol(dtype) -> float:
    dtype = np.dtype(dtype)
    return 2e-5 if dtype in (np.float32, np.complex64) else 1e-12


def _abs64(x):
    x = np.asarray(x)
    return np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))


def assert_product(actual, expected, bound=None):
    """``actual`` (dense, sparse or device array) equals ``expected``: exactly, or within ``tol * (bound + 1)``."""
    if isinstance(actual, SparseArray):
        check_invariants(actual)
        actual = actual.todense()
    actual = to_host(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected)
        return
    bound = np.zeros(expected.shape) if bound is None else np.asarray(bound, dtype=np.float64)
    err = np.abs(actual.astype(np.complex128) - expected.astype(np.complex128))
    both_nan = np.isnan(actual) & np.isnan(expected)
    ok = (err <= _tol(expected.dtype) * (bound + 1.0)) | both_nan | (actual == expected)
    assert ok.all(), f"max error {err[~ok].max()} at {np.argwhere(~ok)[:3].tolist()}"


def matmul_oracle(a, b):
    """``(np.matmul(a, b), np.matmul(|a|, |b|))``, quietly (integer overflow wraps)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.matmul(a, b), np.matmul(_abs64(a), _abs64(b))


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

@st.composite
def sparse_parts(draw, shape, dtype, *, hybrid=True, max_nnz=12):
    """``(coords, data, shape)`` of a COO with ``shape``: duplicates, any order, maybe dense trailing dims."""
    ndim = len(shape)
    sd = draw(st.integers(max(0, ndim - 2), ndim)) if hybrid else ndim
    sparse_shape, dense_shape = shape[:sd], shape[sd:]
    size = math.prod(sparse_shape)
    if size == 0:
        keys = []
    elif sd == 0:
        keys = [0] * draw(st.integers(0, 1))
    else:
        keys = draw(st.lists(st.integers(0, size - 1), max_size=max_nnz))
        if keys and draw(st.booleans()):
            keys += draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3))
        if draw(st.booleans()):
            keys = sorted(keys)
    coords = (np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), sparse_shape), dtype=np.int64)
              .reshape(sd, len(keys)) if sd else np.zeros((0, len(keys)), dtype=np.int64))
    data = draw(hnp.arrays(dtype, (len(keys),) + dense_shape, elements=elements(dtype, nan=False)))
    return np.ascontiguousarray(coords), data, tuple(shape)


def build(parts, device, fmt="coo"):
    coords, data, shape = parts
    x = COO(coords, data, shape, device=device)
    if fmt != "coo" and x.sparse_dim == 2:
        x = x.asformat(fmt)
    return x


def dense_of(parts):
    coords, data, shape = parts
    return dense_oracle(coords, data, shape, 0)


def _values(rng, n, dtype, shape=()):
    dtype = np.dtype(dtype)
    size = (n,) + tuple(shape)
    if dtype.kind == "c":
        return (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(size).astype(dtype)
    if dtype.kind == "b":
        return rng.random(size) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)


@st.composite
def matmul_cases(draw, kinds=("sd", "ds", "ss"), max_batch=2):
    """Operand shapes that multiply (with broadcasting), dtypes, which operands are sparse, formats."""
    kind = draw(st.sampled_from(kinds))
    dt_a = draw(st.sampled_from(VALUE_DTYPES))
    dt_b = dt_a if draw(st.booleans()) else draw(st.sampled_from(VALUE_DTYPES))
    M, K, N = (draw(st.integers(0, 4)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=max_batch)))

    def operand_batch():
        dims = [1 if draw(st.booleans()) else d for d in batch]
        return tuple(dims[draw(st.integers(0, len(dims))):])

    a_shape = (K,) if draw(st.integers(0, 4)) == 0 else operand_batch() + (M, K)
    b_shape = (K,) if draw(st.integers(0, 4)) == 0 else operand_batch() + (K, N)
    a_sparse, b_sparse = kind[0] == "s", kind[1] == "s"
    a = (draw(sparse_parts(a_shape, dt_a)) if a_sparse
         else draw(hnp.arrays(dt_a, a_shape, elements=elements(dt_a, nan=False))))
    b = (draw(sparse_parts(b_shape, dt_b)) if b_sparse
         else draw(hnp.arrays(dt_b, b_shape, elements=elements(dt_b, nan=False))))
    fmt_a = draw(st.sampled_from(["coo", "csr", "csc"]))
    fmt_b = draw(st.sampled_from(["coo", "csr", "csc"]))
    return kind, a, b, fmt_a, fmt_b


def _operand(x, sparse, fmt, device):
    return build(x, device, fmt) if sparse else put(x, device)


def _dense(x, sparse):
    return dense_of(x) if sparse else x
