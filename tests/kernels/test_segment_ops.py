"""The reductions ``segment_reduce`` gained for the reduction operations, case by case, on every device.

``test_primitives.py`` checks every op against a loop reference on random
data; these tests pin down the semantics the reductions rely on: argmin /
argmax return the row of the first extreme element *in segment order*
(through ``perm``), the first NaN when there is one; any / all treat NaN as
true; complex numbers order lexicographically; empty segments give -1,
False, True.
"""

from __future__ import annotations

import numpy as np
import pytest

from _helpers import put
from gpusparse._device import device_scope, kernels_for, to_host


@pytest.fixture
def k(device):
    with device_scope(device):
        yield kernels_for(device)


def reduce(k, device, values, starts, op, perm=None):
    values = np.asarray(values)
    values = values.reshape(values.shape[0], -1)
    out = k.segment_reduce(put(values, device), put(np.asarray(starts, np.int64), device), op,
                           None if perm is None else put(np.asarray(perm, np.int64), device))
    return to_host(out)


def test_argmin_argmax_first_extreme_in_segment_order(device, k):
    values = [3.0, 1.0, 3.0, 1.0, 2.0]
    # Segment order visits rows 4, 3, 1, 0, 2: the first minimum met is row 3.
    perm = [4, 3, 1, 0, 2]
    assert reduce(k, device, values, [0, 5], "argmin", perm)[0, 0] == 3
    assert reduce(k, device, values, [0, 5], "argmax", perm)[0, 0] == 0
    assert reduce(k, device, values, [0, 5], "argmin")[0, 0] == 1
    assert reduce(k, device, values, [0, 2, 2, 5], "argmax").ravel().tolist() == [0, -1, 2]


def test_argmin_argmax_nan_wins_first(device, k):
    values = [1.0, np.nan, -5.0, np.nan, 9.0]
    assert reduce(k, device, values, [0, 5], "argmin")[0, 0] == 1
    assert reduce(k, device, values, [0, 5], "argmax")[0, 0] == 1
    assert reduce(k, device, values, [0, 5], "argmax", [4, 3, 2, 1, 0])[0, 0] == 3


def test_any_all_nan_is_true_and_empty_segments(device, k):
    values = [0.0, np.nan, 0.0, 0.0]
    assert reduce(k, device, values, [0, 1, 2, 4, 4], "any").ravel().tolist() == [False, True, False, False]
    assert reduce(k, device, values, [0, 1, 2, 4, 4], "all").ravel().tolist() == [False, True, False, True]


def test_complex_order_is_lexicographic(device, k):
    values = np.array([1 + 5j, 2 - 1j, 2 + 0j, 1 + 7j], dtype=np.complex128)
    assert reduce(k, device, values, [0, 4], "max")[0, 0] == 2 + 0j
    assert reduce(k, device, values, [0, 4], "min")[0, 0] == 1 + 5j
    assert reduce(k, device, values, [0, 4], "argmax")[0, 0] == 2
    assert reduce(k, device, values, [0, 4], "argmin")[0, 0] == 0


def test_dense_trailing_columns_reduce_independently(device, k):
    values = np.array([[1, 9], [5, 2], [3, 3]], dtype=np.int32)
    np.testing.assert_array_equal(reduce(k, device, values, [0, 3], "argmax"), [[1, 0]])
    np.testing.assert_array_equal(reduce(k, device, values, [0, 3], "max"), [[5, 9]])
    np.testing.assert_array_equal(reduce(k, device, values, [0, 1, 3], "all"), [[True, True], [True, True]])


@pytest.mark.parametrize("op", ["argmin", "argmax", "any", "all", "min", "max"])
def test_one_huge_segment_and_many_tiny_ones(device, k, rng, op):
    n = 200_000
    values = rng.integers(-50, 50, size=(n, 1)).astype(np.float64)
    values[rng.integers(0, n, 3)] = 0.0
    perm = rng.permutation(n)
    for starts in (np.array([0, n]), np.arange(0, n + 1, 3), np.array([0, 5, n - 5, n])):
        got = reduce(k, device, values, starts, op, perm)
        for j in range(0, starts.size - 1, max(1, (starts.size - 1) // 50)):
            rows = perm[starts[j]:starts[j + 1]]
            seg = values[rows, 0]
            if op in ("argmin", "argmax"):
                want = rows[getattr(np, op)(seg)]
            elif op in ("any", "all"):
                want = getattr(np, op)(seg != 0)
            else:
                want = getattr(np, op)(seg)
            assert got[j, 0] == want, (op, j)


# --------------------------------------------------------------------------
# reduce_by_key
# --------------------------------------------------------------------------

_BY_KEY = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def ref_reduce_by_key(keys, values, n_out, op):
    out_dtype = np.bool_ if op in ("any", "all") else values.dtype
    out = np.empty((n_out, values.shape[1]), dtype=out_dtype)
    counts = np.bincount(keys, minlength=n_out).astype(np.int64)
    for j in range(n_out):
        seg = values[keys == j]
        if op in ("any", "all"):
            out[j] = getattr(seg != 0, op)(axis=0)
        elif not len(seg):
            out[j] = _empty_value(op, values.dtype)
        else:
            with np.errstate(all="ignore"):
                out[j] = _BY_KEY[op].reduce(seg, axis=0, dtype=values.dtype)
    return out, counts


def _empty_value(op, dtype):
    from gpusparse._kernels.cpu._segment import _identity
    return _identity(op, np.dtype(dtype))


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "any", "all"])
@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.uint8, np.complex64, np.bool_])
def test_reduce_by_key_against_reference(device, k, rng, op, dtype):
    cases = [(0, 5, 1), (7, 3, 2), (300, 40, 1), (50_000, 1000, 1), (50_000, 7, 3)]
    for (n, n_out, width), key_dtype in zip(cases, [np.int64, np.int32, np.int64, np.int32, np.int64]):
        keys = rng.integers(0, n_out, n).astype(key_dtype)
        values = rng.integers(-3, 4, size=(n, width)).astype(dtype)
        if np.dtype(dtype).kind == "f" and n:
            values[rng.integers(0, n, 3)] = np.nan
        got_out, got_counts = k.reduce_by_key(put(keys, device), put(values, device), n_out, op)
        want_out, want_counts = ref_reduce_by_key(keys, values, n_out, op)
        np.testing.assert_array_equal(to_host(got_counts), want_counts)
        got = to_host(got_out)
        assert got.dtype == want_out.dtype and got.shape == want_out.shape
        if op == "sum" and np.dtype(dtype).kind in "fc":
            np.testing.assert_allclose(got, want_out, rtol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want_out)
