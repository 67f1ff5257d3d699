"""The Python array API standard's namespace (``gpusparse`` itself) against NumPy's.

Every name of the standard (2025.12) exists; the namespace's functions,
called as ``xp.f(...)`` with ``xp = x.__array_namespace__()``, agree with
NumPy's namespace on the dense oracle of Hypothesis-drawn arrays (N-d,
hybrid, duplicates, fill values, CSR/CSC) on every device; a consumer
written against ``array_api_compat`` runs on gpusparse arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _differential import EXAMPLES, differential, inputs
from _helpers import NUMBER_DTYPES, REAL_DTYPES, assert_dense_equal, put
from gpusparse._device import to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import SparseArray

array_api_compat = pytest.importorskip("array_api_compat")

#: The standard's (2025.12) functions, constants and dtypes of the main namespace.
NAMES = """
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu zeros
zeros_like astype can_cast finfo iinfo isdtype result_type abs acos acosh add asin asinh atan atan2 atanh
bitwise_and bitwise_left_shift bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign
cos cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less
less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply
negative not_equal positive pow real remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
take __array_namespace_info__ matmul matrix_transpose tensordot vecdot broadcast_arrays broadcast_to concat
expand_dims flip moveaxis permute_dims repeat reshape roll squeeze stack tile unstack argmax argmin nonzero
searchsorted where unique_all unique_counts unique_inverse unique_values argsort sort cumulative_sum max mean min
prod std sum var all any e inf nan newaxis pi bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32
float64 complex64 complex128 count_nonzero cumulative_prod diff nextafter reciprocal take_along_axis
broadcast_shapes isin
""".split()

#: The ``linalg`` and ``fft`` extensions' names.
LINALG_NAMES = ("diagonal matmul matrix_norm matrix_transpose outer tensordot trace vecdot vector_norm cholesky cross "
                "det eig eigh eigvals eigvalsh inv matrix_power matrix_rank pinv qr slogdet solve svd svdvals").split()
FFT_NAMES = ("fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift "
             "ifftshift").split()

#: Dtypes without the 8-bit ones, whose floating results NumPy makes float16 (no sparse value dtype: float32).
WIDE_DTYPES = tuple(d for d in NUMBER_DTYPES if d.itemsize > 1)

UNARY = ("abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 floor imag isfinite "
         "isinf isnan log log1p log2 log10 logical_not negative positive real round sign signbit sin sinh "
         "square sqrt tan tanh trunc").split()
BINARY = ("add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor copysign divide "
          "equal floor_divide greater greater_equal hypot less less_equal logaddexp logical_and logical_or "
          "logical_xor maximum minimum multiply not_equal pow remainder subtract").split()


def test_has_names():
    missing = [n for n in NAMES if not hasattr(gs, n)]
    assert not missing, missing
    assert not [n for n in LINALG_NAMES if not hasattr(gs.linalg, n)]
    assert not [n for n in FFT_NAMES if not hasattr(gs.fft, n)]
    assert all(np.dtype(getattr(gs, n)) == np.dtype(n) for n in
               ("bool", "int8", "uint64", "float32", "complex128"))
    assert (gs.e, gs.pi, gs.inf, gs.newaxis) == (np.e, np.pi, np.inf, None) and gs.nan != gs.nan


def test_namespace(device):
    x = gs.asarray(put(np.array([0.0, 2.0]), device))
    assert x.__array_namespace__() is gs
    for version in ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12"):
        assert x.__array_namespace__(api_version=version) is gs
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2020.10")
    assert array_api_compat.array_namespace(x) is gs
    assert array_api_compat.is_array_api_obj(x)
    assert x.device == device and x.to_device(device) is x
    assert gs.reshape(x, (1, 2)).mT.shape == (2, 1)
    with pytest.raises(ValueError, match="stream"):
        x.to_device("cpu", stream=1)
    with pytest.raises(BufferError, match="DLPack"):
        x.__dlpack__()
    assert x.__dlpack_device__()[0] == (2 if device.is_cuda else 1)
    with pytest.raises(TypeError, match="item assignment"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="searchsorted"):
        gs.searchsorted(x, x)
    assert float(x[1]) == 2.0 and int(gs.asarray(put(np.array(3), device))) == 3
    assert complex(x[1]) == 2.0 and [10, 20, 30][gs.asarray(put(np.array(2), device))] == 30
    with pytest.raises(TypeError, match="one-element"):
        float(x)


def test_info(device):
    info = gs.__array_namespace_info__()
    assert set(info.capabilities()) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert gs.Device("cpu") in info.devices()
    assert device in info.devices()
    assert info.default_device() in info.devices()
    assert info.default_dtypes()["real floating"] == np.float64
    assert info.default_dtypes()["indexing"] == np.int64
    assert set(info.dtypes()) == {np.dtype(d).name for d in VALUE_DTYPES}
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64", "complex128"}
    with pytest.raises(ValueError, match="kind"):
        info.dtypes(kind="floats")


def test_dtype_functions():
    x = gs.zeros((2,), dtype=gs.float32, device="cpu")
    assert gs.isdtype(x.dtype, "real floating") and not gs.isdtype(gs.int8, "real floating")
    assert gs.finfo(x).eps == np.finfo(np.float32).eps and gs.iinfo(gs.int16).max == 2**15 - 1
    assert gs.result_type(x, gs.float64) == np.float64 and gs.result_type(gs.int8, gs.uint8) == np.int16
    assert gs.can_cast(x, gs.float64) and not gs.can_cast(gs.float64, gs.int32)


# --------------------------------------------------------------------------
# Differential: the same code on xp = gpusparse and xp = numpy
# --------------------------------------------------------------------------

def run(func, x, dense, **kwargs):
    """``func(xp, a)`` with ``xp`` the namespace of ``x`` agrees with NumPy's on ``dense``."""
    xp = x.__array_namespace__()
    assert xp is gs
    return differential(lambda a: func(gs if isinstance(a, SparseArray) else np, a), x, dense, sparse=None,
                        **kwargs)


@EXAMPLES
@given(data=st.data())
def test_unary(device, data):
    x, dense = data.draw(inputs(device, dtypes=WIDE_DTYPES))
    name = data.draw(st.sampled_from(UNARY))
    run(lambda xp, a: getattr(xp, name)(a), x, dense)


@EXAMPLES
@given(data=st.data())
def test_binary(device, data):
    x, dense = data.draw(inputs(device, dtypes=WIDE_DTYPES, min_ndim=1))
    name = data.draw(st.sampled_from(BINARY))
    if name == "pow" and x.dtype.kind in "iu":  # a negative integer power raises (on a 0-size array too)
        run(lambda xp, a: xp.pow(a, xp.abs(xp.flip(a, axis=0))), x, dense)
    else:
        run(lambda xp, a: getattr(xp, name)(a, xp.flip(a, axis=0)), x, dense)


@EXAMPLES
@given(data=st.data())
def test_logical(device, data):
    x, dense = data.draw(inputs(device, dtypes=(np.dtype(np.bool_),), min_ndim=1))
    name = data.draw(st.sampled_from(["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                                      "bitwise_xor", "equal", "not_equal", "less", "greater_equal"]))
    run(lambda xp, a: getattr(xp, name)(a, xp.flip(a, axis=0)), x, dense)
    run(lambda xp, a: xp.logical_not(a), x, dense)
    run(lambda xp, a: xp.bitwise_invert(a), x, dense)


@EXAMPLES
@given(data=st.data())
def test_statistics(device, data):
    x, dense = data.draw(inputs(device, dtypes=REAL_DTYPES, min_ndim=1))
    axis = data.draw(st.sampled_from([None, 0, -1, (0, -1)] if x.ndim > 1 else [None, 0]))
    keepdims = data.draw(st.booleans())
    run(lambda xp, a: xp.sum(a, axis=axis, keepdims=keepdims), x, dense)
    # one axis: a product over many elements may overflow to inf before NumPy's meets a 0
    run(lambda xp, a: xp.prod(a, axis=-1, dtype=xp.float64), x, dense)
    run(lambda xp, a: xp.max(a, axis=axis, keepdims=keepdims), x, dense)
    run(lambda xp, a: xp.min(a, axis=axis), x, dense)
    run(lambda xp, a: xp.mean(xp.astype(a, xp.float64), axis=axis, keepdims=keepdims), x, dense)
    run(lambda xp, a: xp.var(xp.astype(a, xp.float64), axis=axis, correction=1), x, dense, rtol=1e-8)
    run(lambda xp, a: xp.std(xp.astype(a, xp.float64), axis=axis, correction=0), x, dense, rtol=1e-8)
    run(lambda xp, a: xp.argmax(a, axis=-1, keepdims=keepdims), x, dense)
    run(lambda xp, a: xp.argmin(a), x, dense)
    run(lambda xp, a: xp.cumulative_sum(a, axis=-1, include_initial=keepdims), x, dense)
    run(lambda xp, a: xp.cumulative_prod(a, axis=-1, dtype=xp.float64, include_initial=keepdims)
        if xp is gs else np.cumulative_prod(a, axis=-1, dtype=np.float64, include_initial=keepdims), x, dense)
    run(lambda xp, a: xp.count_nonzero(a, axis=axis, keepdims=keepdims), x, dense)
    run(lambda xp, a: xp.any(a, axis=axis), x, dense)
    run(lambda xp, a: xp.all(a, axis=axis), x, dense)


def np_sort(a, axis, descending):
    """The standard's ``sort`` on NumPy (NumPy 2.4 has no ``descending``)."""
    return np.flip(np.sort(np.flip(a, axis), axis, stable=True), axis) if descending else np.sort(a, axis)


def np_argsort(a, axis, descending):
    if not descending:
        return np.argsort(a, axis, stable=True)
    return a.shape[axis] - 1 - np.flip(np.argsort(np.flip(a, axis), axis, stable=True), axis)


@EXAMPLES
@given(data=st.data())
def test_sorting_and_sets(device, data):
    x, dense = data.draw(inputs(device, dtypes=REAL_DTYPES, min_ndim=1, nan=False))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    descending = data.draw(st.booleans())
    run(lambda xp, a: xp.sort(a, axis=axis, descending=descending) if xp is gs else
        np_sort(a, axis, descending), x, dense)
    run(lambda xp, a: xp.argsort(a, axis=axis, descending=descending) if xp is gs else
        np_argsort(a, axis, descending), x, dense)
    run(lambda xp, a: xp.sort(xp.unique_values(a)), x, dense)  # the order is unspecified
    run(lambda xp, a: tuple(xp.unique_counts(a)), x, dense)
    run(lambda xp, a: tuple(xp.unique_inverse(a)), x, dense)
    run(lambda xp, a: tuple(xp.unique_all(a)), x, dense)


@EXAMPLES
@given(data=st.data())
def test_manipulation(device, data):
    x, dense = data.draw(inputs(device, min_ndim=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    run(lambda xp, a: xp.concat([a, xp.flip(a, axis=axis)], axis=axis), x, dense)
    run(lambda xp, a: xp.concat([a, a], axis=None), x, dense)
    run(lambda xp, a: xp.stack([a, a], axis=-1), x, dense)
    run(lambda xp, a: xp.permute_dims(a, tuple(range(a.ndim))[::-1]), x, dense)
    run(lambda xp, a: xp.reshape(a, (-1,), copy=True), x, dense)
    run(lambda xp, a: xp.expand_dims(a, axis=-1), x, dense)
    run(lambda xp, a: xp.squeeze(xp.expand_dims(a, axis=0), axis=0), x, dense)
    run(lambda xp, a: xp.roll(a, 1, axis=axis), x, dense)
    run(lambda xp, a: xp.moveaxis(a, axis, 0), x, dense)
    run(lambda xp, a: xp.broadcast_to(a, (2,) + a.shape), x, dense)
    run(lambda xp, a: list(xp.broadcast_arrays(a, xp.expand_dims(a, axis=0))), x, dense)
    run(lambda xp, a: xp.repeat(a, 2, axis=axis), x, dense)
    run(lambda xp, a: xp.repeat(a, [i % 3 for i in range(n)], axis=axis), x, dense)
    run(lambda xp, a: xp.repeat(a, 3), x, dense)
    run(lambda xp, a: xp.tile(a, (2,) * (a.ndim + 1)), x, dense)
    run(lambda xp, a: xp.tile(a, (0, 1)), x, dense)
    run(lambda xp, a: xp.unstack(a, axis=axis), x, dense)
    run(lambda xp, a: xp.take(a, xp.asarray([0, n - 1]) if n else xp.asarray([], dtype=xp.int64), axis=axis)
        if isinstance(a, np.ndarray) else xp.take(a, np.array([0, n - 1] if n else [], np.int64), axis=axis),
        x, dense)
    run(lambda xp, a: xp.clip(a, min=a.dtype.type(1), max=a.dtype.type(5)), x, dense) \
        if x.dtype.kind in "iuf" else None
    run(lambda xp, a: xp.astype(a, xp.complex128), x, dense)
    steps = data.draw(st.integers(0, 3), label="n")
    run(lambda xp, a: xp.diff(a, axis=axis, n=steps), x, dense)
    run(lambda xp, a: xp.diff(a, axis=axis, prepend=a, append=xp.flip(a, axis=axis)), x, dense)
    order = data.draw(st.lists(st.integers(-n, n - 1), max_size=4), label="take_along_axis positions") if n else []
    picks = np.broadcast_to(np.expand_dims(np.array(order, dtype=np.int64), tuple(
        d for d in range(x.ndim) if d != axis % x.ndim)), dense.shape[:axis % x.ndim] + (len(order),)
        + dense.shape[axis % x.ndim + 1:])
    run(lambda xp, a: xp.take_along_axis(a, gs.asarray(put(np.ascontiguousarray(picks), device)), axis=axis)
        if xp is gs else np.take_along_axis(a, picks, axis=axis), x, dense)


@EXAMPLES
@given(data=st.data())
def test_membership(device, data):
    x, dense = data.draw(inputs(device, dtypes=(np.dtype(np.int64), np.dtype(np.int32)), min_ndim=1))
    y, ydense = data.draw(inputs(device, dtypes=(x.dtype,), min_ndim=1))
    invert = data.draw(st.booleans())
    assert_dense_equal(gs.isin(x, y, invert=invert).todense(), np.isin(dense, ydense, invert=invert))
    value = data.draw(st.integers(-3, 3))
    assert_dense_equal(gs.isin(x, value, invert=invert).todense(), np.isin(dense, value, invert=invert))
    assert_dense_equal(gs.isin(value, y).todense(), np.isin(value, ydense))


@EXAMPLES
@given(data=st.data())
def test_elementwise_additions(device, data):
    x, dense = data.draw(inputs(device, dtypes=(np.dtype(np.float32), np.dtype(np.float64)), min_ndim=1))
    run(lambda xp, a: xp.reciprocal(a), x, dense)
    run(lambda xp, a: xp.nextafter(a, xp.flip(a, axis=0)), x, dense)


def test_zero_d_results_feed_back(device):
    """Full reductions give dense 0-d arrays of the device; the namespace's functions take them back."""
    dense = np.array([[0.0, np.nan], [2.0, 0.0]])
    x = gs.asarray(put(dense, device))
    total = gs.sum(x)
    assert gs.isnan(total).todense()[()]
    assert gs.equal(gs.max(x), gs.max(x)).todense()[()] == np.equal(np.max(dense), np.max(dense))
    picked = gs.stack([x[1, 0], x[0, 0]])
    assert_dense_equal(picked.todense(), np.stack([dense[1, 0], dense[0, 0]]))
    assert x[()] is x and gs.asarray(put(np.array(3.0), device))[()].shape == ()
    with pytest.raises(TypeError, match="no sparse operand"):
        gs.isnan(1.0)


def test_standard_scalars_and_limits():
    info = gs.finfo(gs.complex64)
    assert (info.bits, info.dtype) == (32, np.dtype(np.float32))
    assert all(type(v) is float for v in (info.eps, info.max, info.min, info.smallest_normal))
    assert info.eps == float(np.finfo(np.float32).eps)
    assert gs.broadcast_shapes((2, 1, 3), (4, 1)) == np.broadcast_shapes((2, 1, 3), (4, 1))
    with pytest.raises(ValueError):
        gs.broadcast_shapes((2,), (3,))
    x = gs.asarray(np.array([1, 0, 3], dtype=np.uint8))
    y = gs.asarray(np.array([[2], [1]], dtype=np.uint8))
    assert gs.vecdot(x, gs.ones((3,), dtype=gs.uint8)).dtype == np.uint8
    with pytest.raises(ValueError, match="same length along axis"):
        gs.vecdot(x, y)  # the contracted axis does not broadcast (3 vs 1)
    assert_dense_equal(gs.clip(x).todense(), x.todense())
    with pytest.raises(ValueError, match="n must be non-negative"):
        gs.diff(x, n=-1)
    with pytest.raises(IndexError, match="indices must be integers"):
        gs.take_along_axis(x, np.array([0.5]), axis=0)


def test_empty_result_computes_no_element(device):
    """An integer to a negative power raises in NumPy only for an element it computes: not for 0 elements."""
    dense = np.full((0, 3), -1, dtype=np.int64)
    x = gs.full((0, 3), -1, dtype=gs.int64, device=device)
    expected = np.power(dense, dense)
    got = gs.pow(x, x)
    assert got.dtype == expected.dtype
    assert_dense_equal(got.todense(), expected)
    with pytest.raises(ValueError, match="negative integer powers"):
        gs.pow(gs.full((2,), -1, dtype=gs.int64, device=device), -1)


@EXAMPLES
@given(data=st.data())
def test_linear_algebra(device, data):
    # no NaN: a product skips the unstored zeros (0 * nan is taken as 0, as SciPy does)
    x, dense = data.draw(inputs(device, dtypes=(np.float64, np.complex128, np.int64), min_ndim=2, fill=False,
                                nan=False))
    run(lambda xp, a: xp.matrix_transpose(a), x, dense)
    run(lambda xp, a: a.mT, x, dense)
    run(lambda xp, a: xp.matmul(a, a.mT), x, dense, rtol=1e-9)
    run(lambda xp, a: xp.vecdot(a, a, axis=-1), x, dense, rtol=1e-9)
    run(lambda xp, a: xp.tensordot(a, a, axes=a.ndim), x, dense, rtol=1e-9)
    run(lambda xp, a: xp.tril(a, k=1), x, dense)
    run(lambda xp, a: xp.triu(a, k=-1), x, dense)
    run(lambda xp, a: xp.linalg.vector_norm(a, axis=-1), x, dense, rtol=1e-9)
    run(lambda xp, a: xp.linalg.matrix_norm(a), x, dense, rtol=1e-9)
    run(lambda xp, a: xp.linalg.trace(a, offset=1), x, dense)
    run(lambda xp, a: xp.linalg.diagonal(a), x, dense)
    run(lambda xp, a: xp.linalg.vecdot(a, a), x, dense, rtol=1e-9)


def test_searching(device):
    dense = np.array([[0.0, 3.0, 0.0], [-1.0, 0.0, 2.0]])
    x = gs.asarray(put(dense, device))
    for a, e in zip(gs.nonzero(x), np.nonzero(dense)):
        assert_dense_equal(a, e)
    assert_dense_equal(gs.where(x > 0, x, -x).todense(), np.where(dense > 0, dense, -dense))
    assert int(gs.argmax(x)) == 1


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------

def test_creation(device):
    xp = gs
    checks = [
        (xp.arange(5, device=device), np.arange(5)),
        (xp.arange(1.0, 2.0, 0.25, device=device), np.arange(1.0, 2.0, 0.25)),
        (xp.arange(10, 0, -3, dtype=xp.int32, device=device), np.arange(10, 0, -3, dtype=np.int32)),
        (xp.linspace(0, 1, 5, device=device), np.linspace(0, 1, 5)),
        (xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float32, device=device),
         np.linspace(0, 1, 4, endpoint=False, dtype=np.float32)),
        (xp.zeros((2, 3), dtype=xp.int8, device=device), np.zeros((2, 3), np.int8)),
        (xp.ones((3,), dtype=xp.bool, device=device), np.ones(3, bool)),
        (xp.full((2,), 7, device=device), np.full(2, 7)),
        (xp.empty((2, 2), device=device), np.zeros((2, 2))),
        (xp.eye(3, 4, k=1, dtype=xp.float32, device=device), np.eye(3, 4, k=1, dtype=np.float32)),
        (xp.asarray([[1, 0], [0, 2]], dtype=xp.float32, device=device), np.array([[1, 0], [0, 2]], np.float32)),
        (xp.asarray(2.5, device=device), np.asarray(2.5)),
        (xp.asarray(True, device=device), np.asarray(True)),
        (xp.from_dlpack(put(np.array([0.0, 1.5]), device)), np.array([0.0, 1.5])),
    ]
    for actual, expected in checks:
        assert isinstance(actual, SparseArray) and actual.device == device
        assert_dense_equal(actual.todense(), expected)
    x = checks[0][0]
    assert x.nnz == 4 and x.fill_value == 0
    for a, e in zip(xp.meshgrid(x, checks[3][0]), np.meshgrid(np.arange(5), np.linspace(0, 1, 5))):
        assert_dense_equal(a.todense(), e)
    for a, e in zip(xp.meshgrid(x, checks[3][0], indexing="ij"),
                    np.meshgrid(np.arange(5), np.linspace(0, 1, 5), indexing="ij")):
        assert_dense_equal(a.todense(), e)
    assert_dense_equal(xp.ones_like(x, dtype=xp.float32).todense(), np.ones(5, np.float32))
    assert_dense_equal(xp.full_like(x, 3).todense(), np.full(5, 3))
    assert xp.zeros_like(x).nnz == 0 and xp.empty_like(x).shape == (5,)
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(x, dtype=xp.float64, copy=False)
    with pytest.raises(ValueError, match="indexing"):
        xp.meshgrid(x, indexing="yx")
    with pytest.raises(BufferError):
        xp.from_dlpack(x)


# --------------------------------------------------------------------------
# A consumer written against array_api_compat
# --------------------------------------------------------------------------

def standardize(x):
    """Columns scaled to mean 0 and standard deviation 1: any array API library's arrays."""
    xp = array_api_compat.array_namespace(x)
    mean = xp.mean(x, axis=0)
    std = xp.std(x, axis=0, correction=1)
    return (x - mean) / xp.where(std == 0, xp.ones_like(std), std)


@EXAMPLES
@given(data=st.data())
def test_compat_consumer(device, data):
    dense = data.draw(st.sampled_from([
        np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [4.0, 0.0, 0.0]]),
        np.arange(12.0).reshape(4, 3) % 3,
    ]))
    fill = data.draw(st.sampled_from([0.0, 1.0]))
    x = gs.asarray(put(dense, device), fill_value=fill)
    out = standardize(x)
    assert isinstance(out, SparseArray) and out.device == device
    assert_dense_equal(out.todense(), standardize(dense), rtol=1e-12)


def _spd(n, rng):
    a = rng.standard_normal((n, n))
    a[rng.random((n, n)) < 0.5] = 0.0  # sparse-ish, kept well conditioned by the diagonal
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 3, 6])
def test_dense_in_nature_linalg(device, n):
    """The decompositions and solvers: NumPy's results (up to sign and phase), returned sparse."""
    rng = np.random.default_rng(n)
    dense = _spd(n, rng)
    x = gs.asarray(put(dense, device))
    b = gs.asarray(put(rng.standard_normal(n), device))
    lg = gs.linalg

    def close(got, expected):
        assert isinstance(got, SparseArray) and got.fill_value == 0
        np.testing.assert_allclose(to_host(got.todense()), expected, rtol=1e-9, atol=1e-9)

    close(lg.cholesky(x), np.linalg.cholesky(dense))
    close(lg.cholesky(x, upper=True), np.linalg.cholesky(dense).T)
    close(lg.det(x), np.linalg.det(dense))
    close(lg.inv(x), np.linalg.inv(dense))
    close(lg.solve(x, b), np.linalg.solve(dense, to_host(b.todense())))
    close(lg.matrix_power(x, 3), np.linalg.matrix_power(dense, 3))
    close(lg.eigvalsh(x), np.linalg.eigvalsh(dense))
    close(lg.svdvals(x), np.linalg.svd(dense, compute_uv=False))
    close(lg.pinv(x), np.linalg.pinv(dense))
    assert int(lg.matrix_rank(x).todense()) == np.linalg.matrix_rank(dense)
    sign, logabsdet = lg.slogdet(x)
    close(sign, 1.0)
    close(logabsdet, np.linalg.slogdet(dense).logabsdet)
    w, v = lg.eigh(x)
    close(lg.matmul(x, v), to_host((v * w[None, :]).todense()))
    q, r = lg.qr(x)
    close(lg.matmul(q, r), dense)
    u, s, vh = lg.svd(x, full_matrices=False)
    close(lg.matmul(u * s[None, :], vh), dense)
    assert lg.eig(x).eigenvalues.dtype == np.complex128
    np.testing.assert_allclose(np.sort(to_host(lg.eigvals(x).todense()).real), np.linalg.eigvalsh(dense),
                               rtol=1e-9)
    three = gs.asarray(put(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]), device))
    close(lg.cross(three, gs.flip(three, axis=1)), np.cross([[1.0, 0, 0], [0, 2.0, 0]], [[0, 0, 1.0], [0, 2.0, 0]]))
    with pytest.raises(TypeError, match="x must be a gpusparse array"):
        lg.inv(dense)
    with pytest.raises(ValueError, match="mode"):
        lg.qr(x, mode="r")


def test_fft_extension(device):
    dense = np.zeros((4, 6))
    dense[1, 2], dense[3, 0] = 2.0, -1.0
    x = gs.asarray(put(dense, device))
    host = to_host
    for name in ("fft", "ifft", "rfft", "hfft", "ihfft"):
        got = getattr(gs.fft, name)(x, axis=0, norm="ortho")
        np.testing.assert_allclose(host(got.todense()), getattr(np.fft, name)(dense, axis=0, norm="ortho"),
                                   atol=1e-12)
    for name in ("fftn", "ifftn", "rfftn"):
        np.testing.assert_allclose(host(getattr(gs.fft, name)(x).todense()), getattr(np.fft, name)(dense),
                                   atol=1e-12)
    spectrum = gs.fft.rfftn(x)
    np.testing.assert_allclose(host(gs.fft.irfftn(spectrum, s=dense.shape, axes=(0, 1)).todense()), dense,
                               atol=1e-12)
    np.testing.assert_allclose(host(gs.fft.irfft(gs.fft.rfft(x), n=6).todense()), dense, atol=1e-12)
    for axes in (None, 0, (1,), (0, 1)):
        assert_dense_equal(gs.fft.fftshift(x, axes=axes).todense(), np.fft.fftshift(dense, axes=axes))
        assert_dense_equal(gs.fft.ifftshift(x, axes=axes).todense(), np.fft.ifftshift(dense, axes=axes))
    freq = gs.fft.fftfreq(5, d=0.5, device=device)
    assert freq.device == device and freq.dtype == np.float64
    np.testing.assert_allclose(host(freq.todense()), np.fft.fftfreq(5, d=0.5))
    np.testing.assert_allclose(host(gs.fft.rfftfreq(6, dtype=gs.float32, device=device).todense()),
                               np.fft.rfftfreq(6).astype(np.float32))
