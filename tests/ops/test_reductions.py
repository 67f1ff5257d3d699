"""Reductions against a dense NumPy oracle: every reduction, any axes, fill values, every dtype.

Each reduction runs as a gpusparse function, as a method and through
NumPy's ``np.<name>`` (``__array_function__``), on COO (uncoalesced,
unsorted, N-d, hybrid), CSR and CSC inputs with 0-size dimensions, on every
device the ``device`` fixture yields. A result over kept sparse dimensions
is a sparse array that stores no entry equal to its fill value; reducing
every sparse dimension gives a dense array.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import assert_dense_equal, assert_sparse_equal, dense_oracle
from gpusparse._device import array_device, to_host
from gpusparse.containers import COO, SparseArray
from gpusparse.ops import reductions as red
from strategies import coo_cases

#: 25 examples by default; GPUSPARSE_HYPOTHESIS_PROFILE (conftest) chooses otherwise.
EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else \
    settings(max_examples=25, deadline=None)

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "count_nonzero",
              "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"]
ARG_REDUCTIONS = ["argmax", "argmin", "nanargmax", "nanargmin"]
INEXACT = [np.float32, np.float64, np.complex64, np.complex128]
#: Tolerances for reductions whose summation order differs from NumPy's.
LOOSE = {np.dtype(np.float32): 2e-4, np.dtype(np.complex64): 2e-4,
         np.dtype(np.float64): 1e-9, np.dtype(np.complex128): 1e-9}


def quiet(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


@st.composite
def axes_for(draw, ndim):
    """None, one axis (maybe negative) or a tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None if kind != "tuple" else ()
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def tame(case, name):
    """Keep products in range (float products are rounded in another order than NumPy's)."""
    data, fill = case.data, case.fill_value
    if name in ("prod", "nanprod") and data.dtype.kind in "fc":
        data = np.clip(data.real, -2, 2).astype(data.dtype) if data.dtype.kind == "f" else \
            (np.clip(data.real, -2, 2) + 1j * np.clip(data.imag, -1, 1)).astype(data.dtype)
        fill = data.dtype.type(np.clip(fill.real, -2, 2))
    return type(case)(case.coords, data, case.shape, fill)


def compare(result, expected):
    expected = np.asarray(expected)
    tol = LOOSE.get(expected.dtype)
    if isinstance(result, SparseArray):
        assert_sparse_equal(result, expected, rtol=tol)
        data = to_host(result.data)
        fill = result.fill_value
        if result.nnz and data.size:
            eq = np.isnan(data) if data.dtype.kind in "fc" and np.isnan(fill) else data == fill
            if data.dtype.kind in "fc" and fill == 0:
                eq &= np.signbit(data.real) == np.signbit(np.real(fill))
            assert not eq.reshape(result.nnz, -1).all(axis=1).any(), "stores an entry equal to the fill value"
    else:
        assert not hasattr(result, "fill_value")
        assert_dense_equal(result, expected, rtol=tol)


def with_nans(case, draw):
    """``case`` with some stored values (maybe every one) made NaN: all-NaN selections now and then."""
    if case.dtype.kind not in "fc" or not case.data.size:
        return case
    hit = draw(st.lists(st.booleans(), min_size=case.data.size, max_size=case.data.size))
    data = case.data.copy()
    data.reshape(-1)[np.asarray(hit)] = np.nan
    return type(case)(case.coords, data, case.shape, case.fill_value)


def run_case(device, case, name, axis, keepdims, fmt="coo", **extra):
    x = case.build(device)
    if fmt != "coo":
        x = x.asformat(fmt)
    dense = case.dense()
    kwargs = {"axis": axis, "keepdims": keepdims, **extra}
    try:
        expected = quiet(getattr(np, name), dense, **kwargs)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            quiet(getattr(red, name), x, **kwargs)
        return
    result = quiet(getattr(red, name), x, **kwargs)
    compare(result, expected)
    sparse_axes = range(x.sparse_dim)
    reduced = set(range(x.ndim) if axis in (None,) else
                  ([axis % x.ndim] if isinstance(axis, int) else [a % x.ndim for a in axis]))
    if all(a in reduced for a in sparse_axes):
        assert not isinstance(result, SparseArray), "reducing every sparse axis gives a dense array"
        assert array_device(result) == device
    else:
        assert isinstance(result, SparseArray)


@EXAMPLES
@given(case=coo_cases(max_ndim=4), name=st.sampled_from(REDUCTIONS), data=st.data(), keepdims=st.booleans())
def test_reductions_match_numpy(device, case, name, data, keepdims):
    axis = data.draw(axes_for(len(case.shape)))
    run_case(device, tame(case, name), name, axis, keepdims)


@EXAMPLES
@given(case=coo_cases(max_ndim=3), name=st.sampled_from(ARG_REDUCTIONS), data=st.data(),
       keepdims=st.booleans())
def test_argmin_argmax_match_numpy(device, case, name, data, keepdims):
    ndim = len(case.shape)
    axis = None if ndim == 0 or data.draw(st.booleans()) else data.draw(st.integers(-ndim, ndim - 1))
    run_case(device, case, name, axis, keepdims)


@EXAMPLES
@given(case=coo_cases(max_ndim=3, dtypes=INEXACT + [np.int16]), name=st.sampled_from(["nanargmax", "nanargmin"]),
       data=st.data(), keepdims=st.booleans())
def test_nanargmin_nanargmax_match_numpy(device, case, name, data, keepdims):
    # Many NaN: NumPy's ValueError for an all-NaN selection must be raised too.
    case = with_nans(case, data.draw)
    ndim = len(case.shape)
    axis = None if ndim == 0 or data.draw(st.booleans()) else data.draw(st.integers(-ndim, ndim - 1))
    run_case(device, case, name, axis, keepdims)


@EXAMPLES
@given(case=coo_cases(max_ndim=4, dtypes=INEXACT + [np.int32, np.bool_]), name=st.sampled_from(["nanvar", "nanstd"]),
       data=st.data(), keepdims=st.booleans(), ddof=st.sampled_from([0, 1, 2, 1.5]))
def test_nanvar_nanstd_match_numpy(device, case, name, data, keepdims, ddof):
    case = with_nans(case, data.draw)
    axis = data.draw(axes_for(len(case.shape)))
    run_case(device, case, name, axis, keepdims, ddof=ddof)
    # Through NumPy's __array_function__; float data with a wider dtype (NumPy's nanvar of
    # complex data with a complex dtype= returns complex values: gpusparse's stay real, as var's).
    extra = {"dtype": np.float64} if case.dtype.kind == "f" else {}
    x = case.build(device)
    # The oracle computes in float64 from float64 data: NumPy's nanvar of float32 data with
    # dtype=float64 subtracts the mean inside the float32 input (68.2237244 for var([0, 16.51953125]),
    # whose exact value, which float64 gives, is 68.2237282).
    dense = case.dense().astype(np.float64) if case.dtype.kind == "f" else case.dense()
    expected = quiet(getattr(np, name), dense, axis=axis, ddof=ddof, **extra)
    compare(quiet(getattr(np, name), x, axis=axis, ddof=ddof, **extra), expected)


@EXAMPLES
@given(case=coo_cases(sparse_dim=2, max_dense_dim=1), name=st.sampled_from(REDUCTIONS + ["argmax"]),
       fmt=st.sampled_from(["csr", "csc"]), data=st.data())
def test_compressed_inputs(device, case, name, fmt, data):
    axis = data.draw(axes_for(len(case.shape))) if name != "argmax" else data.draw(st.sampled_from([None, 0, 1]))
    run_case(device, tame(case, name), name, axis, False, fmt)


@EXAMPLES
@given(case=coo_cases(max_ndim=3, dtypes=[np.int8, np.uint32, np.int64, np.float64, np.bool_]),
       ufunc=st.sampled_from([np.add, np.multiply, np.maximum, np.minimum, np.bitwise_or, np.bitwise_xor,
                              np.bitwise_and, np.logical_or, np.logical_and, np.fmax, np.logaddexp]),
       data=st.data())
def test_reduce_with_any_ufunc(device, case, ufunc, data):
    x = case.build(device)
    axis = data.draw(axes_for(len(case.shape)))
    try:
        expected = quiet(ufunc.reduce, case.dense(), axis=axis)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            quiet(x.reduce, ufunc, axis=axis)
        return
    if expected.dtype == np.float16:
        return
    result = quiet(x.reduce, ufunc, axis=axis)
    compare(result, expected)
    if len(case.shape):  # through __array_ufunc__, with NumPy's default axis=0
        try:
            expected0 = quiet(ufunc.reduce, case.dense())
        except ValueError:
            with pytest.raises(ValueError):
                quiet(ufunc.reduce, x)
            return
        compare(quiet(ufunc.reduce, x), expected0)


@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
def test_methods_and_numpy_functions(device, name):
    x = COO([[0, 0, 1, 2], [1, 3, 0, 3]], [1.0, -2.0, 4.0, np.nan], shape=(3, 4), fill_value=0.5, device=device)
    dense = dense_oracle([[0, 0, 1, 2], [1, 3, 0, 3]], [1.0, -2.0, 4.0, np.nan], (3, 4), 0.5)
    for axis in (None, 0, 1, -1):
        expected = quiet(getattr(np, name), dense, axis=axis)
        compare(quiet(getattr(np, name), x, axis=axis), expected)
        method = getattr(x, name, None)
        if method is not None:
            compare(quiet(method, axis=axis), expected)


def test_unspecified_elements_take_part_as_the_fill_value(device):
    x = COO([[0, 1], [0, 0]], [-3.0, -1.0], shape=(2, 3), device=device)
    assert_sparse_equal(x.max(axis=1), np.array([0.0, 0.0]))
    assert x.max(axis=1).nnz == 0
    y = COO([[0]], [5.0], shape=(3,), fill_value=1.0, device=device)
    assert_dense_equal(y.sum(), np.asarray(7.0))
    assert_dense_equal(y.prod(), np.asarray(5.0))
    z = COO([[0, 1], [0, 2]], [1, 2], shape=(2, 3), fill_value=2, device=device)
    s = z.sum(axis=1)
    assert s.fill_value == 6 and isinstance(s, SparseArray)
    assert_sparse_equal(s, np.array([5, 6]))


def test_tf_reduce_sum_and_torch_sparse_sum_semantics(device):
    # tf.sparse.reduce_sum's documentation: x = [[1, ?, 1], [?, 1, ?]].
    x = COO([[0, 0, 1], [0, 2, 1]], [1, 1, 1], shape=(2, 3), device=device)
    assert_dense_equal(red.sum(x), np.asarray(3))
    assert_sparse_equal(red.sum(x, 0), np.array([1, 1, 1]))
    assert_sparse_equal(red.sum(x, 1), np.array([2, 1]))
    assert_sparse_equal(red.sum(x, -1), np.array([2, 1]))
    assert_sparse_equal(red.sum(x, 1, keepdims=True), np.array([[2], [1]]))
    assert_dense_equal(red.sum(x, [0, 1]), np.asarray(3))
    # torch.sparse.sum over every sparse dim of a hybrid tensor: dense over the dense dims.
    h = COO([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], shape=(3, 2), device=device)
    out = red.sum(h, axis=0)
    assert not isinstance(out, SparseArray)
    assert_dense_equal(out, np.array([4.0, 6.0]))


def test_uncoalesced_sum_with_fill_zero_needs_no_coalesce(device):
    x = COO([[1, 0, 1], [2, 2, 2]], [1.0, 2.0, 3.0], shape=(2, 3), device=device)
    assert_sparse_equal(x.sum(axis=1), np.array([2.0, 4.0]))
    assert_dense_equal(x.sum(), np.asarray(6.0))
    assert_sparse_equal(x.max(axis=1), np.array([2.0, 4.0]))  # duplicates are summed first


def test_large_segments_uniform_and_power_law(device, rng):
    n_rows, n_cols = 300, 2000
    lengths = np.minimum((rng.pareto(1.2, n_rows) * 20).astype(int) + 1, n_cols)
    rows = np.repeat(np.arange(n_rows), lengths)
    cols = np.concatenate([rng.choice(n_cols, k, replace=False) for k in lengths])
    vals = rng.standard_normal(rows.size)
    order = rng.permutation(rows.size)
    x = COO(np.stack([rows[order], cols[order]]), vals[order], shape=(n_rows, n_cols), device=device)
    dense = dense_oracle(np.stack([rows, cols]), vals, (n_rows, n_cols))
    for name in ("sum", "max", "argmax", "mean"):
        for axis in (0, 1, None):
            compare(getattr(red, name)(x, axis=axis), getattr(np, name)(dense, axis=axis))


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------

def test_axis_errors(device):
    x = COO([[0], [0]], [1.0], shape=(2, 3), device=device)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        x.sum(axis=2)
    with pytest.raises(ValueError, match="axis -3"):
        red.max(x, axis=-3)
    with pytest.raises(ValueError, match="repeated axis"):
        x.sum(axis=(0, -2))
    with pytest.raises(TypeError, match="axis"):
        x.sum(axis=1.5)
    with pytest.raises(TypeError, match="axis"):
        x.argmax(axis=(0, 1))


def test_no_identity_over_empty_selection(device):
    x = COO(np.zeros((2, 0), np.int64), np.zeros(0), shape=(0, 3), device=device)
    with pytest.raises(ValueError, match="no identity"):
        x.max(axis=0)
    with pytest.raises(ValueError, match="empty sequence"):
        x.argmin(axis=0)
    with pytest.raises(ValueError, match="empty sequence"):
        x.argmax()
    assert x.max(axis=1).shape == (0,)  # nothing to reduce into: fine, as in NumPy
    assert_dense_equal(x.sum(), np.asarray(0.0))
    assert_dense_equal(x.max(initial=-1.0), np.asarray(-1.0))


def test_nan_reductions_all_nan_and_degrees_of_freedom(device):
    nan = np.nan
    x = COO([[0, 0, 1, 1], [0, 1, 0, 2]], [nan, nan, nan, 4.0], shape=(2, 3), fill_value=nan, device=device)
    dense = np.array([[nan, nan, nan], [nan, nan, 4.0]])
    for name in ("nanargmax", "nanargmin"):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(red, name)(x, axis=1)  # row 0 is all NaN
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(np, name)(x, axis=0)
        assert int(to_host(getattr(red, name)(x))) == 5
    # ddof leaves no degree of freedom: NaN, where NumPy warns.
    compare(quiet(red.nanvar, x, axis=1), quiet(np.nanvar, dense, axis=1))
    compare(quiet(red.nanstd, x, axis=(0, 1), ddof=1), quiet(np.nanstd, dense, axis=(0, 1), ddof=1))
    y = COO([[0, 2]], [nan, 3.0], shape=(4,), device=device)  # fill 0 counts: [nan, 0, 3, 0]
    assert_dense_equal(red.nanvar(y), np.asarray(np.nanvar([nan, 0.0, 3.0, 0.0])))
    assert_dense_equal(red.nanstd(y, ddof=1), np.asarray(np.nanstd([nan, 0.0, 3.0, 0.0], ddof=1)))
    assert_dense_equal(red.nanargmax(y, keepdims=True), np.array([2]))
    assert_dense_equal(red.nanargmin(y), np.asarray(1))
    with pytest.raises(TypeError, match="nanvar: dtype must be inexact"):
        red.nanvar(y, dtype=np.int64)


def test_unsupported_arguments(device):
    x = COO([[0]], [1.0], shape=(2,), device=device)
    with pytest.raises(TypeError, match="out="):
        np.sum(x, out=np.empty(()))
    with pytest.raises(TypeError, match="where="):
        red.sum(x, where=np.array([True, False]))
    with pytest.raises(TypeError):
        red.reduce(x, np.sin)


def test_dtype_argument(device):
    x = COO([[0, 1]], [200, 100], shape=(3,), device=device).astype(np.uint8)
    assert red.sum(x).dtype == np.uint64 and int(to_host(red.sum(x))) == 300
    assert red.sum(x, dtype=np.uint8).dtype == np.uint8 and int(to_host(red.sum(x, dtype=np.uint8))) == 44
    assert red.mean(x).dtype == np.float64
    assert red.mean(x.astype(np.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="dtype"):
        red.sum(x, dtype=np.float16)
    swapped = np.dtype(np.float64).newbyteorder("S")  # the other byte order: native float64 values
    assert red.sum(x, dtype=swapped).dtype == np.float64 and float(to_host(red.sum(x, dtype=swapped))) == 300.0
    for name in ("mean", "var", "std", "nanmean", "nanvar"):
        result = getattr(red, name)(x, dtype=swapped)
        assert result.dtype == np.float64 and result.dtype.isnative, name
        assert_dense_equal(result, getattr(np, name)(to_host(x.todense()), dtype=np.float64))
    with pytest.raises(TypeError, match=r"result dtype [<>]f2 is not supported"):
        red.sum(x, dtype=np.dtype(np.float16).newbyteorder("S"))


@pytest.mark.parametrize("ufunc", [np.bitwise_xor, np.gcd, np.fmax, np.logaddexp])
def test_folds_without_ufunc_methods_match_numpy(device, ufunc):
    """The folds that stand in for ``ufunc.reduce``/``reduceat`` where the array module lacks them (CuPy)."""
    from gpusparse._device import xp_for
    from gpusparse.ops.reductions.monoid import pairwise_fold, segmented_fold

    xp = xp_for(device)
    f = getattr(xp, ufunc.__name__) if xp is not np else ufunc
    rng = np.random.default_rng(7)
    values = rng.integers(1, 1000, (37, 3)) if ufunc in (np.bitwise_xor, np.gcd) else rng.normal(size=(37, 3))
    for starts in ([0, 1, 2, 5, 6, 13, 30, 37], [0, 37], list(range(38))):
        starts = np.array(starts)
        got = to_host(segmented_fold(f, xp.asarray(values), xp.asarray(starts), xp))
        np.testing.assert_allclose(got, ufunc.reduceat(values, starts[:-1], axis=0), rtol=1e-12)
    for axes in ((0,), (1,), (0, 1), (-1,)):
        got = to_host(pairwise_fold(f, ufunc.identity, xp.asarray(values), axes, None, xp))
        np.testing.assert_allclose(got, ufunc.reduce(values, axis=axes), rtol=1e-12)
    empty = xp.asarray(values[:0])
    if ufunc.identity is None:
        with pytest.raises(ValueError, match="no identity"):
            pairwise_fold(f, None, empty, (0,), None, xp)
    else:
        assert to_host(pairwise_fold(f, ufunc.identity, empty, (0,), None, xp)).tolist() == [ufunc.identity] * 3
