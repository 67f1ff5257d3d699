"""softmax / log_softmax over stored elements (unstored = -inf) against NumPy and torch.sparse."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import CPU, assert_same_on_devices, assert_sparse_equal, check_invariants, coalesce_oracle, put
from gpusparse.ops.softmax import log_softmax, softmax
from strategies import coo_cases

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else settings(
    max_examples=25, deadline=None)

REAL = [np.bool_, np.int8, np.int32, np.uint16, np.int64, np.float32, np.float64]


def oracle(case, axis, log):
    """Dense softmax with unstored elements at -inf; unstored results are 0 (-inf for log)."""
    coords, data = coalesce_oracle(case.coords, case.data)
    dtype = data.dtype if data.dtype.kind == "f" else np.dtype(np.float64)
    sd = case.sparse_dim
    values = np.zeros(case.shape, dtype=dtype)
    present = np.zeros(case.shape[:sd], dtype=bool)
    if coords.shape[1]:
        if sd:
            values[tuple(coords)] = data.astype(dtype)
            present[tuple(coords)] = True
        else:
            values[...] = data[0]
            present[...] = True
    present = np.broadcast_to(present.reshape(present.shape + (1,) * (len(case.shape) - sd)), case.shape)
    if values.size == 0:
        return values
    with np.errstate(all="ignore"):
        top = np.where(present, values, -np.inf).max(axis=axis, keepdims=True)
        top = np.where(np.isfinite(top), top, 0)
        shifted = values - top
        e = np.where(present, np.exp(shifted), 0)
        total = e.sum(axis=axis, keepdims=True)
        if log:
            return np.where(present, shifted - np.log(total), -np.inf).astype(dtype)
        return np.where(present, e / total, 0).astype(dtype)


@EXAMPLES
@given(case=coo_cases(dtypes=REAL, min_ndim=1, max_ndim=4, fill=False, nan=False), data=st.data())
def test_softmax_matches_masked_numpy(case, data):
    axis = data.draw(st.integers(-len(case.shape), len(case.shape) - 1))
    fmt = data.draw(st.sampled_from(["coo", "csr", "csc"] if case.sparse_dim == 2 else ["coo"]))
    x = case.build(CPU)
    x = x if fmt == "coo" else x.asformat(fmt)
    for log, fn in ((False, softmax), (True, log_softmax)):
        out = fn(x, axis)
        assert out.format == fmt
        assert out.fill_value == (-np.inf if log else 0)
        assert_sparse_equal(out, oracle(case, axis, log))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numerically_stable(dtype):
    x = gs.COO([[0, 0, 0, 1], [0, 1, 2, 0]], np.array([1000.0, 999.0, -1000.0, -5e3], dtype=dtype),
               shape=(2, 3), device="cpu")
    out = softmax(x, 1).todense()
    e = np.exp([0.0, -1.0])
    np.testing.assert_allclose(out[0, :2], e / e.sum(), rtol=1e-6)
    assert out[1, 0] == 1 and np.isfinite(out).all()
    np.testing.assert_allclose(log_softmax(x, 1).todense()[0, 2], -2000 - np.log(e.sum()), rtol=1e-6)


def test_all_minus_inf_line_is_nan():
    x = gs.COO([[0, 0, 1], [0, 1, 0]], [-np.inf, -np.inf, 1.0], shape=(2, 2), device="cpu")
    out = softmax(x, 1).todense()
    assert np.isnan(out[0]).all() and out[1, 0] == 1


def test_duplicates_add_before_softmax():
    x = gs.COO([[0, 0, 1]], [1.0, 1.0, 2.0], shape=(2,), device="cpu")
    np.testing.assert_allclose(softmax(x, 0).todense(), [0.5, 0.5])


def test_errors():
    x = gs.COO([[0]], [1j], shape=(2,), device="cpu")
    with pytest.raises(TypeError, match="complex"):
        softmax(x, 0)
    y = gs.COO([[0]], [1.0], shape=(2,), device="cpu")
    with pytest.raises(np.exceptions.AxisError):
        softmax(y, 1)
    with pytest.raises(TypeError, match="gpusparse array"):
        softmax(np.ones(3), 0)
    with pytest.raises(ValueError, match="at least one dimension"):
        softmax(gs.fromdense(np.array(1.0), device="cpu"), 0)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_against_torch(rng, dim):
    torch = pytest.importorskip("torch")
    dense = rng.normal(size=(4, 5, 3)) * 3
    dense[rng.random((4, 5)) < 0.5] = 0
    x = gs.fromdense(dense, sparse_dim=2, device="cpu")
    t = torch.from_numpy(dense).to_sparse(2)
    for fn, tfn in ((softmax, torch.sparse.softmax), (log_softmax, torch.sparse.log_softmax)):
        expected = tfn(t, dim).coalesce()
        got = fn(x, dim).coalesce()
        np.testing.assert_array_equal(got.coords, expected.indices().numpy())
        np.testing.assert_allclose(got.data, expected.values().numpy(), rtol=1e-12)


def test_same_on_devices(rng):
    dense = rng.normal(size=(6, 5, 2))
    dense[rng.random((6, 5)) < 0.5] = 0

    def run(device):
        x = gs.fromdense(put(dense, device), sparse_dim=2)
        outs = [softmax(x, 0), softmax(x, 1), log_softmax(x, 2), softmax(x.asformat("csr")[:, :, 0], 1)]
        for o in outs:
            check_invariants(o)
        return [o.todense() for o in outs]

    assert_same_on_devices(run, rtol=1e-12)
