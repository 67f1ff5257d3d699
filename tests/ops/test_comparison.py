"""isclose, allclose, array_equal, array_equiv against NumPy, without densifying.

Operands are sparse arrays of any format, fill value and dtype (with NaN),
dense arrays and scalars, of equal or broadcasting shapes; every function
runs as ``gs.f`` and as ``np.f`` (``__array_function__``) and agrees with
NumPy on the dense oracles. A monkeypatched ``todense`` proves that no
sparse operand is densified, and arrays of a trillion elements compare in
the time their few entries take.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import assert_sparse_equal, put
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import SparseArray
from strategies import elements, fill_values, shapes

EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else \
    settings(max_examples=30, deadline=None)


def quiet(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


@st.composite
def dense_of_shape(draw, shape, dtype, fill):
    """A dense array of ``shape`` in which many elements equal ``fill`` (or a near value)."""
    values = [fill.item(), fill.item(), elements(dtype)]
    if dtype.kind in "fc":
        near = quiet(lambda: fill + dtype.type(1e-9) * (1 + abs(fill)))  # close, not equal
        values.append(near.item())
    return draw(hnp.arrays(dtype, shape, elements=st.one_of(*(
        v if isinstance(v, st.SearchStrategy) else st.just(v) for v in values))))


@st.composite
def operand(draw, device, shape, dtype=None, kinds=("sparse", "dense")):
    """``(operand, dense oracle)``: a sparse array (COO with duplicates, CSR or CSC) or a dense one."""
    dtype = np.dtype(draw(st.sampled_from(VALUE_DTYPES)) if dtype is None else dtype)
    fill = draw(fill_values(dtype))
    dense = draw(dense_of_shape(shape, dtype, fill))
    kind = draw(st.sampled_from(kinds))
    if kind == "dense":
        return put(dense, device), dense
    stored_fill = draw(st.sampled_from([fill, dtype.type(0)]))
    x = gs.fromdense(put(dense, device), fill_value=stored_fill)
    if x.ndim == 2 and draw(st.booleans()):
        x = x.asformat(draw(st.sampled_from(["csr", "csc"])))
    elif x.nnz and x.sparse_dim and draw(st.booleans()):
        x = with_duplicates(x)
    return x, dense


def with_duplicates(x):
    """``x`` with every entry stored twice: its value, then a zero (duplicates are summed)."""
    from gpusparse._device import device_scope, xp_for
    with device_scope(x.device):
        xp = xp_for(x.device)
        coords = xp.concatenate([x.coords, x.coords], axis=1)
        data = xp.concatenate([x.data, xp.zeros_like(x.data)])
    return gs.COO(coords, data, x.shape, fill_value=x.fill_value, device=x.device)


@st.composite
def pair(draw, device, kinds=("sparse", "dense")):
    """Two operands of broadcasting shapes, at least one sparse."""
    shape = draw(shapes(max_ndim=3))
    other = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in shape)[draw(st.integers(0, len(shape))):]
    if draw(st.booleans()):
        shape, other = other, shape
    first_kinds = ("sparse",) if draw(st.booleans()) else kinds
    a = draw(operand(device, shape, kinds=first_kinds))
    b = draw(operand(device, other, kinds=("sparse",) if first_kinds != ("sparse",) else kinds))
    return a, b


@pytest.fixture
def no_densify(monkeypatch):
    """Fail the test if any sparse operand is densified."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse operand was densified")
    monkeypatch.setattr(SparseArray, "todense", refuse)
    monkeypatch.setattr(SparseArray, "to_dense", refuse)


def oracle(f, a, b, **kwargs):
    return quiet(f, a, b, **kwargs)


# --------------------------------------------------------------------------
# isclose / allclose
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_isclose(device, data):
    (a, da), (b, db) = data.draw(pair(device))
    rtol = data.draw(st.sampled_from([1e-5, 0.0, 0.5]))
    atol = data.draw(st.sampled_from([1e-8, 0.0, 1.0]))
    equal_nan = data.draw(st.booleans())
    expected = oracle(np.isclose, da, db, rtol=rtol, atol=atol, equal_nan=equal_nan)
    for f in (gs.isclose, np.isclose):
        result = quiet(f, a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        assert isinstance(result, SparseArray) and result.dtype == np.bool_
        assert_sparse_equal(result, expected)
    assert oracle(np.allclose, a, b, rtol=rtol, atol=atol, equal_nan=equal_nan) is \
        oracle(np.allclose, da, db, rtol=rtol, atol=atol, equal_nan=equal_nan)


@EXAMPLES
@given(data=st.data())
def test_isclose_fill_value(device, data):
    (a, da), (b, db) = data.draw(pair(device, kinds=("sparse",)))
    equal_nan = data.draw(st.booleans())
    result = quiet(gs.isclose, a, b, equal_nan=equal_nan)
    assert result.fill_value == oracle(np.isclose, np.asarray(a.fill_value), np.asarray(b.fill_value),
                                       equal_nan=equal_nan)
    assert_sparse_equal(result, oracle(np.isclose, da, db, equal_nan=equal_nan))


@EXAMPLES
@given(data=st.data())
def test_scalars(device, data):
    x, dense = data.draw(operand(device, data.draw(shapes(max_ndim=3)), kinds=("sparse",)))
    scalar = data.draw(st.sampled_from([0, 1, 2.5, float("nan"), 1 + 1j, True]))
    for args in ((x, scalar), (scalar, x)):
        oracle_args = tuple(dense if arg is x else arg for arg in args)
        assert_sparse_equal(quiet(np.isclose, *args, equal_nan=True),
                            oracle(np.isclose, *oracle_args, equal_nan=True))
        assert quiet(np.allclose, *args) is oracle(np.allclose, *oracle_args)


def test_isclose_semantics(device):
    x = gs.COO([[0, 1, 2]], [1.0, np.nan, np.inf], shape=(5,), fill_value=0.0, device=device)
    y = gs.COO([[0, 1, 2, 3]], [1.0 + 1e-6, np.nan, np.inf, 1e-9], shape=(5,), device=device)
    assert_sparse_equal(gs.isclose(x, y), [True, False, True, True, True])
    assert_sparse_equal(gs.isclose(x, y, equal_nan=True), [True, True, True, True, True])
    assert_sparse_equal(gs.isclose(x, y, rtol=0, atol=0), [False, False, True, False, True])
    assert not gs.allclose(x, y) and gs.allclose(x, y, equal_nan=True)
    with pytest.raises(ValueError):
        gs.isclose(x, gs.zeros((3,), device=device))  # shapes that do not broadcast


# --------------------------------------------------------------------------
# array_equal / array_equiv
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_array_equal(device, data):
    (a, da), (b, db) = data.draw(pair(device))
    for equal_nan in (False, True):
        expected = oracle(np.array_equal, da, db, equal_nan=equal_nan)
        assert gs.array_equal(a, b, equal_nan=equal_nan) is expected
        assert np.array_equal(a, b, equal_nan=equal_nan) is expected
    assert np.array_equiv(a, b) is oracle(np.array_equiv, da, db)


@EXAMPLES
@given(data=st.data())
def test_array_equal_to_itself_and_its_copies(device, data):
    x, dense = data.draw(operand(device, data.draw(shapes(max_ndim=3)), kinds=("sparse",)))
    has_nan = bool(np.isnan(dense).any()) if dense.dtype.kind in "fc" else False
    assert np.array_equal(x, x) is (not has_nan)
    assert np.array_equal(x, x, equal_nan=True)
    for y in (x.copy(), x.coalesce(), gs.fromdense(put(dense, device), fill_value=x.fill_value),
              gs.fromdense(put(dense, device)), put(dense, device)):
        assert np.array_equal(x, y, equal_nan=True) and np.array_equal(y, x, equal_nan=True)
    if x.ndim == 2:
        assert np.array_equal(x.tocsr(), x.tocsc(), equal_nan=True)
    if x.size:
        other = dense.copy()
        other.flat[0] = not other.flat[0] if x.dtype == np.bool_ else quiet(lambda: other.flat[0] + 1)
        y = gs.fromdense(put(other, device), fill_value=x.fill_value)
        assert np.array_equal(x, y, equal_nan=True) is oracle(np.array_equal, dense, other, equal_nan=True)


def test_array_equal_shapes_and_nan(device):
    x = gs.COO([[0]], [np.nan], shape=(3,), device=device)
    assert not np.array_equal(x, x) and np.array_equal(x, x, equal_nan=True)
    assert not np.array_equal(x, x[:2]) and not np.array_equal(x, np.expand_dims(x, 0))
    assert not np.array_equal(x, 0.0)
    z = gs.COO([[0]], [complex(0, np.nan)], shape=(3,), device=device)
    w = gs.COO([[0]], [complex(np.nan, 1)], shape=(3,), device=device)
    assert np.array_equal(z, w, equal_nan=True) is np.array_equal(
        np.array([complex(0, np.nan), 0, 0]), np.array([complex(np.nan, 1), 0, 0]), equal_nan=True)
    assert np.array_equiv(gs.fromdense(put(np.ones((2, 3)), device)), 1.0)
    assert not np.array_equiv(x, gs.zeros((2,), device=device))


def test_nothing_is_densified(device, no_densify):
    big = (10**6, 10**6)  # 10**12 elements: any densification would fail
    x = gs.COO([[0, 5], [7, 999_999]], [1.0, 2.0], shape=big, device=device)
    y = gs.COO([[5, 0], [999_999, 7]], [2.0 + 1e-12, 1.0], shape=big, device=device)
    assert gs.array_equal(x, x) and not gs.array_equal(x, y) and gs.allclose(x, y)
    assert np.array_equal(x.tocsr(), x) and np.allclose(x, y.tocsc())
    close = np.isclose(x, y, rtol=0, atol=0)
    assert close.fill_value and close.nnz <= 2
    assert gs.array_equal(x, gs.COO([[0, 5], [7, 999_999]], [1.0, 2.0], shape=big, fill_value=0.0,
                                    device=device))
    assert not gs.array_equal(x, gs.full(big, 0.0, device=device))
    small = gs.fromdense(put(np.array([[0.0, 1.0], [0.0, 0.0]]), device))
    assert np.array_equal(small, put(np.array([[0.0, 1.0], [0.0, 0.0]]), device))
    close = np.isclose(small, put(np.array([[0.0, 1.0], [0.0, 0.5]]), device))
    assert isinstance(close, SparseArray) and close.nnz == 1 and close.fill_value
