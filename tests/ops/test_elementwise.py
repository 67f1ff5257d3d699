"""Elementwise operations against a dense NumPy oracle (and pydata sparse for fill values).

Every ufunc family (math, comparisons, logic, bitwise, divmod), the Python
operators, ``elemwise`` with arbitrary functions, broadcasting between
sparse, dense and scalar operands, COO (uncoalesced, unsorted, N-d,
hybrid), CSR, CSC and mixed formats, 0-size dimensions, every value dtype,
on every device the ``device`` fixture yields.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import assert_dense_equal, assert_sparse_equal, dense_oracle, put
from gpusparse._device import to_host
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import COO, SparseArray
from gpusparse.ops import elementwise as ew
from gpusparse._options import set_options
from strategies import coo_cases, elements, fill_values

#: 25 examples by default; GPUSPARSE_HYPOTHESIS_PROFILE (conftest) chooses otherwise.
EXAMPLES = settings(deadline=None) if os.environ.get("GPUSPARSE_HYPOTHESIS_PROFILE") else \
    settings(max_examples=25, deadline=None)

UNARY = [np.negative, np.positive, np.absolute, np.sign, np.sqrt, np.exp, np.log1p, np.sin, np.cos,
         np.tanh, np.floor, np.ceil, np.rint, np.square, np.isnan, np.isfinite, np.isinf, np.logical_not,
         np.invert, np.conjugate, np.signbit, np.expm1, np.arctan, np.cbrt, np.trunc, np.fabs, np.reciprocal]

BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder, np.power,
          np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.hypot, np.bitwise_and, np.bitwise_or,
          np.bitwise_xor, np.left_shift, np.right_shift, np.logical_and, np.logical_or, np.logical_xor,
          np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal, np.copysign,
          np.heaviside, np.gcd, np.logaddexp, np.divmod]


# --------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------

def quiet(func, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def oracle(func, *args, **kwargs):
    """``func`` on dense NumPy arrays; float16 results computed in float32 as gpusparse does."""
    out = quiet(func, *args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    if any(np.asarray(o).dtype == np.float16 for o in outs):
        if isinstance(func, np.ufunc) and len(outs) == 1:
            outs = (quiet(func, *args, dtype=np.float32, **kwargs),)
        else:
            outs = tuple(np.asarray(o).astype(np.float32) for o in outs)
    return tuple(np.asarray(o) for o in outs)


def same_value(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.all(a == b))


def stores_no_fill(x):
    """A coalesced result stores no block equal to its fill value (pydata's rule)."""
    if x.format == "coo" and not x.unique:
        return
    if x.nnz == 0 or math.prod(x.shape[x.sparse_dim:]) == 0:
        return
    data = to_host(x.data).reshape(x.nnz, -1)
    fill = x.fill_value
    eq = np.isnan(data) if (data.dtype.kind in "fc" and np.isnan(fill)) else data == fill
    if data.dtype.kind == "f" and fill == 0:  # -0.0 and 0.0 are told apart (pydata)
        eq &= np.signbit(data) == np.signbit(fill)
    if data.dtype.kind == "c" and fill == 0:
        eq &= (np.signbit(data.real) == np.signbit(fill.real)) & (np.signbit(data.imag) == np.signbit(fill.imag))
    assert not eq.all(axis=1).any() or data.shape[1] == 0, "a stored block equals the fill value"


def check_result(result, expected_outputs, fills=None):
    results = result if isinstance(result, tuple) else (result,)
    assert len(results) == len(expected_outputs)
    for r, e in zip(results, expected_outputs):
        assert isinstance(r, SparseArray), type(r)
        assert_sparse_equal(r, e)
        stores_no_fill(r)
    if fills is not None:
        for r, f in zip(results, fills):
            assert same_value(r.fill_value, f), (r.fill_value, f)


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

@st.composite
def coo_of_shape(draw, shape, dtypes=VALUE_DTYPES, max_nnz=12):
    """A COO case (coords, data, shape, fill) of a given shape: any split, duplicates, any order."""
    dtype = draw(st.sampled_from([np.dtype(d) for d in dtypes]))
    ndim = len(shape)
    sd = draw(st.integers(max(0, ndim - 2), ndim))
    sparse_shape, dense_shape = shape[:sd], shape[sd:]
    size = math.prod(sparse_shape)
    if size == 0:
        keys = []
    elif sd == 0:
        keys = [0] * draw(st.integers(0, 1))
    else:
        keys = draw(st.lists(st.integers(0, size - 1), max_size=max_nnz))
        if draw(st.booleans()):
            keys = sorted(set(keys))
    nnz = len(keys)
    coords = (np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), sparse_shape), dtype=np.int64)
              .reshape(sd, nnz) if sd else np.zeros((0, nnz), np.int64))
    data = draw(hnp.arrays(dtype, (nnz,) + tuple(dense_shape), elements=elements(dtype)))
    fill = draw(fill_values(dtype))
    return np.ascontiguousarray(coords), data, tuple(shape), fill


def build(case, device, fmt="coo"):
    coords, data, shape, fill = case
    x = COO(coords, data, shape, fill_value=fill, device=device)
    if fmt != "coo" and x.sparse_dim == 2:
        x = x.asformat(fmt)
    return x


def dense_of(case):
    coords, data, shape, fill = case
    return dense_oracle(coords, data, shape, fill)


@st.composite
def broadcast_pair(draw, max_ndim=3, max_side=3):
    """Two shapes that broadcast together (dims dropped from the front, or set to 1)."""
    base = draw(st.lists(st.integers(0, max_side), min_size=0, max_size=max_ndim))
    shapes = []
    for _ in range(2):
        drop = draw(st.integers(0, len(base)))
        dims = [1 if draw(st.integers(0, 3)) == 0 else d for d in base[drop:]]
        shapes.append(tuple(dims))
    return shapes


def _int_safe(func, case):
    """Keep integer powers and shifts in range (NumPy refuses negative integer powers)."""
    coords, data, shape, fill = case
    if func in (np.power, np.left_shift, np.right_shift) and data.dtype.kind in "iu":
        data = (data.astype(np.int64) % 5).astype(data.dtype)
        fill = data.dtype.type(int(fill) % 5)
    return coords, data, shape, fill


# --------------------------------------------------------------------------
# Ufunc families
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=coo_cases(max_ndim=3), func=st.sampled_from(UNARY))
def test_unary_ufuncs(device, case, func):
    x = case.build(device)
    dense = case.dense()
    try:
        expected = oracle(func, dense)
    except TypeError:
        with pytest.raises(TypeError):
            quiet(func, x)
        return
    result = quiet(func, x)
    check_result(result, expected, fills=[oracle(func, np.asarray(case.fill_value))[0]])


@EXAMPLES
@given(data=st.data(), func=st.sampled_from(BINARY))
def test_binary_ufuncs_sparse_sparse(device, data, func):
    shape_a, shape_b = data.draw(broadcast_pair())
    a = _int_safe(func, data.draw(coo_of_shape(shape_a)))
    b = _int_safe(func, data.draw(coo_of_shape(shape_b)))
    try:
        expected = oracle(func, dense_of(a), dense_of(b))
    except TypeError:
        with pytest.raises(TypeError):
            quiet(func, build(a, device), build(b, device))
        return
    result = quiet(func, build(a, device), build(b, device))
    check_result(result, expected, fills=oracle(func, np.asarray(a[3]), np.asarray(b[3])))


@EXAMPLES
@given(data=st.data(), func=st.sampled_from(BINARY), scalar_first=st.booleans())
def test_binary_ufuncs_sparse_scalar(device, data, func, scalar_first):
    shape = data.draw(broadcast_pair())[0]
    a = _int_safe(func, data.draw(coo_of_shape(shape)))
    kind = a[1].dtype.kind
    scalar = data.draw(st.one_of(st.integers(0, 4), st.floats(-3, 3), st.booleans(),
                                 elements(a[1].dtype, nan=False).map(a[1].dtype.type)))
    if func in (np.power, np.left_shift, np.right_shift, np.gcd) and kind in "iub":
        scalar = data.draw(st.integers(0, 4))
    args_dense = (scalar, dense_of(a)) if scalar_first else (dense_of(a), scalar)
    x = build(a, device)
    args = (scalar, x) if scalar_first else (x, scalar)
    try:
        expected = oracle(func, *args_dense)
    except (TypeError, OverflowError) as exc:
        with pytest.raises(type(exc)):
            quiet(func, *args)
        return
    result = quiet(func, *args)
    fill_args = (scalar, np.asarray(a[3])) if scalar_first else (np.asarray(a[3]), scalar)
    check_result(result, expected, fills=oracle(func, *fill_args))


@EXAMPLES
@given(data=st.data(), func=st.sampled_from([np.add, np.multiply, np.subtract, np.maximum, np.true_divide,
                                             np.logical_and, np.where]))
def test_sparse_with_dense(device, data, func):
    shape_a, shape_b = data.draw(broadcast_pair())
    a = data.draw(coo_of_shape(shape_a, dtypes=[np.float64, np.int32, np.bool_]))
    b_dtype = data.draw(st.sampled_from([np.float64, np.int64]))
    b_dense = data.draw(hnp.arrays(b_dtype, shape_b, elements=st.sampled_from([0, 0, 1, 2, -1])))
    x = build(a, device)
    bd = put(b_dense, device)
    if func is np.where:
        args, dense_args, fill_args = (x, bd, 0.0), (dense_of(a), b_dense, 0.0), (np.asarray(a[3]), b_dense, 0.0)
    else:
        args, dense_args, fill_args = (x, bd), (dense_of(a), b_dense), (np.asarray(a[3]), b_dense)
    try:
        expected = oracle(func, *dense_args)
    except TypeError:
        with pytest.raises(TypeError):
            quiet(func, *args)
        return
    probe = oracle(func, *fill_args)[0]
    constant = probe.size == 0 or same_value(probe, probe.reshape(-1)[0])
    full_size = math.prod(expected[0].shape)
    if constant or full_size == 0:
        check_result(quiet(func, *args), expected)
    else:
        with pytest.raises(ValueError, match="todense"):
            quiet(func, *args)
        with set_options(auto_densify=True):
            dense_result = quiet(func, *args)
        assert_dense_equal(dense_result, expected[0])


@EXAMPLES
@given(case=coo_cases(sparse_dim=2, max_dense_dim=1, dtypes=[np.float64, np.int16, np.complex64, np.bool_]),
       fmt=st.sampled_from(["csr", "csc"]), other=st.sampled_from(["csr", "csc", "coo"]),
       func=st.sampled_from([np.add, np.multiply, np.maximum, np.not_equal, np.sqrt]))
def test_compressed_formats(device, case, fmt, other, func):
    x = case.build(device).asformat(fmt)
    dense = case.dense()
    if func is np.sqrt:
        result, expected = quiet(func, x), oracle(func, dense)
        assert isinstance(result, SparseArray) and result.format == fmt
        check_result(result, expected)
        return
    # The other operand: the same array scaled (or itself for bool), in another format.
    scale = 1 if case.dtype == np.bool_ else 2
    y = quiet(np.multiply, case.build(device), scale).asformat(other)
    try:
        expected = oracle(func, dense, dense * scale)
    except TypeError:
        return
    result = quiet(func, x, y)
    assert result.format == (fmt if other == fmt else "coo")
    check_result(result, expected)


@EXAMPLES
@given(case=coo_cases(sparse_dim=2, max_dense_dim=1, max_side=6, max_nnz=24,
                      dtypes=[np.float64, np.int32, np.complex128, np.bool_]),
       fmt=st.sampled_from(["csr", "csc"]), shift=st.integers(1, 3),
       func=st.sampled_from([np.add, np.subtract, np.multiply, np.maximum, np.greater, np.logical_and]))
def test_compressed_pairs_with_different_patterns(device, case, fmt, shift, func):
    # Two CSR (CSC) operands whose patterns overlap in part: the second is the
    # first with its columns rolled, so rows merge with and without matches.
    x = case.build(device).asformat(fmt)
    coords = case.coords.copy()
    coords[1] = (coords[1] + shift) % max(case.shape[1], 1)
    y = COO(coords, case.data, case.shape, fill_value=case.fill_value, device=device).asformat(fmt)
    dense = case.dense()
    try:
        expected = oracle(func, dense, np.roll(dense, shift, axis=1))
    except TypeError:
        return
    result = quiet(func, x, y)
    assert result.format == fmt
    check_result(result, expected)


@EXAMPLES
@given(case=coo_cases(min_ndim=1, max_ndim=3, max_dense_dim=0, dtypes=[np.float64, np.int64, np.bool_]),
       func=st.sampled_from([np.add, np.multiply, np.maximum, np.logical_or, np.greater]))
def test_fill_values_and_coordinates_match_pydata(case, func):
    sparse = pytest.importorskip("sparse")
    other = np.array(case.dense()[::-1] if case.shape else case.dense(), copy=True)
    try:
        expected = oracle(func, case.dense(), other)
    except TypeError:
        return
    px = sparse.COO.from_numpy(case.dense(), fill_value=case.fill_value)
    py = sparse.COO.from_numpy(other, fill_value=case.fill_value)
    pr = quiet(func, px, py)
    x = gs.fromdense(case.dense(), fill_value=case.fill_value, device="cpu")
    y = gs.fromdense(other, fill_value=case.fill_value, device="cpu")
    r = quiet(func, x, y)
    check_result(r, expected, fills=[pr.fill_value])
    # The same stored positions, except zeros of the other sign than a zero fill value,
    # which pydata keeps and an intersection (x * 0 with x finite) leaves out.
    keep = ~((pr.data == pr.fill_value) & (np.asarray(pr.fill_value) == 0))
    pr_coords = pr.coords[:, keep]
    pr_coords = pr_coords[:, np.lexsort(pr_coords[::-1])] if pr_coords.size else pr_coords
    ours = to_host(r.coords)
    ours = ours[:, ~((to_host(r.data) == r.fill_value) & (r.fill_value == 0))]
    np.testing.assert_array_equal(ours.reshape(pr_coords.shape), pr_coords)


@EXAMPLES
@given(case=coo_cases(max_ndim=3))
def test_python_operators(device, case):
    x = case.build(device)
    dense = case.dense()
    kind = case.dtype.kind
    ops = [(lambda a: -a, kind != "b"), (lambda a: +a, kind != "b"), (lambda a: abs(a), True),
           (lambda a: ~a, kind in "iub"), (lambda a: a + a, True), (lambda a: a - 1, kind != "b"),
           (lambda a: 2 * a, True), (lambda a: a / 2, True), (lambda a: a // 3, kind != "c"),
           (lambda a: a % 3, kind != "c"), (lambda a: a ** 2, True), (lambda a: a & 1, kind in "iub"),
           (lambda a: a | 2, kind in "iub"), (lambda a: a ^ 3, kind in "iub"), (lambda a: a << 1, kind in "iu"),
           (lambda a: a >> 1, kind in "iu"), (lambda a: a == 0, True), (lambda a: a != a, True),
           (lambda a: a < 1, kind != "c"), (lambda a: a <= 1, kind != "c"), (lambda a: 1 > a, kind != "c"),
           (lambda a: a >= a, kind != "c")]
    for op, ok in ops:
        if not ok:
            continue
        expected = oracle(op, dense)
        check_result(quiet(op, x), expected)


def test_divmod_operator(device):
    x = COO([[0, 2]], [7.0, -3.0], shape=(4,), fill_value=1.0, device=device)
    q, r = divmod(x, 2)
    assert_sparse_equal(q, np.array([3.0, 0.0, -2.0, 0.0]))
    assert_sparse_equal(r, np.array([1.0, 1.0, 1.0, 1.0]))
    assert q.fill_value == 0 and r.fill_value == 1


def test_elemwise_with_any_function(device):
    x = COO([[0, 2]], [1.0, 2.0], shape=(4,), device=device)
    y = COO([[2, 3]], [10.0, 20.0], shape=(4,), device=device)
    z = ew.elemwise(lambda a, b, c: a * b + c, x, y, 1.0)
    assert_sparse_equal(z, np.array([1.0, 1.0, 21.0, 1.0]))
    assert z.fill_value == 1.0
    w = ew.elemwise(np.where, x > 1, x, y)
    assert_sparse_equal(w, np.array([0.0, 0.0, 2.0, 20.0]))


# --------------------------------------------------------------------------
# Broadcasting and fill values
# --------------------------------------------------------------------------

def test_broadcasting_between_two_sparse_arrays(device):
    a = COO([[0, 2]], [1.0, 2.0], shape=(4,), device=device)
    b = COO([[0, 4], [0, 0]], [10.0, 20.0], shape=(5, 1), device=device)
    r = a + b
    assert r.shape == (5, 4)
    assert_sparse_equal(r, dense_oracle([[0, 2]], [1.0, 2.0], (4,)) + dense_oracle([[0, 4], [0, 0]], [10.0, 20.0], (5, 1)))
    c = COO([[0], [1]], [3.0], shape=(1, 4), device=device)
    assert (c * b).shape == (5, 4)


def test_incompatible_shapes_raise_naming_the_operands(device):
    a = COO([[0], [0]], [1.0], shape=(4, 1), device=device)
    b = COO([[0], [0]], [1.0], shape=(5, 1), device=device)
    with pytest.raises(ValueError, match=r"operand 0 \(4, 1\).*operand 1 \(5, 1\)"):
        a + b
    with pytest.raises(ValueError, match="broadcast"):
        a * put(np.ones((3, 2)), device)


def test_fill_value_of_the_result(device):
    x = COO([[1]], [5], shape=(3,), device=device)
    y = x + 1
    assert y.fill_value == 1 and y.dtype == np.int64
    assert_sparse_equal(y, np.array([1, 6, 1]))
    b = COO([[0]], [True], shape=(3,), device=device)
    nb = ~b
    assert nb.fill_value == np.True_ and nb.nnz == 1
    assert_sparse_equal(nb, np.array([False, True, True]))
    assert (x * 0).nnz == 0


def test_auto_densify_option_and_environment(device, monkeypatch):
    x = COO([[0, 2]], [1.0, 2.0], shape=(3,), device=device)
    d = put(np.arange(3.0), device)
    with pytest.raises(ValueError, match="auto_densify"):
        x + d
    with set_options(auto_densify=True):
        assert_dense_equal(x + d, np.array([1.0, 1.0, 4.0]))
    with pytest.raises(ValueError):
        x + d
    monkeypatch.setenv("GPUSPARSE_AUTO_DENSIFY", "1")
    assert_dense_equal(x + d, np.array([1.0, 1.0, 4.0]))
    with set_options(auto_densify=False):
        with pytest.raises(ValueError):
            x + d
    monkeypatch.setenv("GPUSPARSE_AUTO_DENSIFY", "maybe")
    with pytest.raises(ValueError, match="GPUSPARSE_AUTO_DENSIFY"):
        x + d


def test_set_options_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown option"):
        set_options(auto_densfy=True)
    with pytest.raises(TypeError, match="auto_densify"):
        set_options(auto_densify="yes")


def test_dense_operand_mapping_fill_to_one_value_stays_sparse(device):
    x = COO([[0, 1], [1, 2]], [2.0, 3.0], shape=(2, 3), device=device)
    d = put(np.array([1.0, 2.0, 4.0]), device)
    r = x * d
    assert isinstance(r, SparseArray)
    assert_sparse_equal(r, x.todense() * np.array([1.0, 2.0, 4.0]) if not device.is_cuda else to_host(x.todense()) * [1, 2, 4])
    with pytest.raises(ValueError):
        x * put(np.array([1.0, np.inf, 1.0]), device)  # 0 * inf is NaN: not one value


# --------------------------------------------------------------------------
# Uncoalesced inputs: linear operations keep duplicates, others coalesce
# --------------------------------------------------------------------------

def test_add_of_uncoalesced_arrays_concatenates(device):
    a = COO([[2, 0, 2]], [1.0, 2.0, 3.0], shape=(3,), device=device)
    b = COO([[1, 2]], [5.0, 6.0], shape=(3,), device=device)
    r = a + b
    assert r.nnz == 5 and not r.sorted and not r.unique
    assert_sparse_equal(r, np.array([2.0, 5.0, 10.0]))
    s = a - b
    assert s.nnz == 5
    assert_sparse_equal(s, np.array([2.0, -5.0, -2.0]))


def test_linear_unary_keeps_duplicates_nonlinear_coalesces(device):
    a = COO([[2, 0, 2]], [1.0, 2.0, 3.0], shape=(3,), device=device)
    assert (a * 0.5).nnz == 3 and (-a).nnz == 3 and (a / 2).nnz == 3
    assert COO([[2, 0, 2]], [1, 2, 3], shape=(3,), device=device).__mul__(7).nnz == 3  # integers wrap alike
    assert_sparse_equal(a * 2, np.array([4.0, 0.0, 8.0]))
    sq = a ** 2
    assert sq.is_coalesced()
    assert_sparse_equal(sq, np.array([4.0, 0.0, 16.0]))


@pytest.mark.parametrize("values, op, scalar", [
    ([5.0, 0.0, 1.0], "truediv", 0.0),     # one by one: inf + nan = nan; the value 5 / 0 is inf
    ([5.0, 0.0, 1.0], "truediv", -0.0),
    ([1e300, -1e300, 2.0], "mul", 1e10),   # one by one: inf - inf = nan; the value 0 * 1e10 is 0
    ([5.0, 0.0, 1.0], "mul", np.inf),      # one by one: inf + nan; the value 5 * inf is inf
    ([1e300, -1e300, 2.0], "truediv", 1e-10),
])
def test_scaling_duplicates_one_by_one_only_where_their_sum_gives_the_same(device, values, op, scalar):
    """Duplicates are scaled one by one only by scalars that cannot overflow or make a NaN."""
    import operator
    a = COO([[0, 0, 1]], values, shape=(2,), device=device)
    with np.errstate(all="ignore"):
        expected = getattr(operator, op)(to_host(a.todense()), scalar)
        got = getattr(operator, op)(a, scalar)
    assert_sparse_equal(got, expected)


def test_multiply_uses_the_intersection_unless_values_are_not_finite(device):
    a = COO([[0, 1, 2]], [1.0, 2.0, 3.0], shape=(4,), device=device).coalesce()
    b = COO([[1, 3]], [4.0, 5.0], shape=(4,), device=device).coalesce()
    r = a * b
    assert r.nnz == 1
    assert_sparse_equal(r, np.array([0.0, 8.0, 0.0, 0.0]))
    c = COO([[0, 1]], [np.inf, 2.0], shape=(4,), device=device)
    # inf * 0: NumPy warns on the CPU; CuPy never warns about floating-point errors
    warns = pytest.warns(RuntimeWarning, match="invalid value") if device.kind == "cpu" else \
        contextlib.nullcontext()
    with warns:
        r2 = c * b
    assert_sparse_equal(r2, np.array([np.nan, 8.0, 0.0, 0.0]))


# --------------------------------------------------------------------------
# Named functions
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=coo_cases(max_ndim=3))
def test_named_functions(device, case):
    x = case.build(device)
    dense = case.dense()
    kind = case.dtype.kind
    checks = [
        (ew.abs, np.absolute, True),
        (ew.isnan, np.isnan, True),
        (ew.isfinite, np.isfinite, True),
        (ew.conj, np.conjugate, True),
        (ew.real, np.real, True),
        (ew.imag, np.imag, True),
        (lambda a: ew.round(a, 1), lambda a: np.round(a, 1), kind != "b"),
        (lambda a: ew.nan_to_num(a, nan=-1.0), lambda a: np.nan_to_num(a, nan=-1.0), True),
        (lambda a: ew.clip(a, 0, 5), lambda a: np.clip(a, 0, 5), kind not in "bc"),
        (lambda a: ew.maximum(a, 1), lambda a: np.maximum(a, 1), True),
        (lambda a: ew.minimum(a, 1), lambda a: np.minimum(a, 1), True),
        (lambda a: ew.where(a, 1, 2), lambda a: np.where(a, 1, 2), True),
        (lambda a: a.real, np.real, True),
        (lambda a: a.imag, np.imag, True),
        (lambda a: a.conj(), np.conj, True),
        (lambda a: a.round(), np.round, kind != "b"),
        (lambda a: np.clip(a, 1, 3), lambda a: np.clip(a, 1, 3), kind not in "bc"),
        (lambda a: np.where(a, a, 7), lambda a: np.where(a, a, 7), True),
        (lambda a: np.round(a, 2), lambda a: np.round(a, 2), kind != "b"),
        (lambda a: np.real(a), np.real, True),
    ]
    for ours, theirs, ok in checks:
        if not ok:
            continue
        expected = oracle(theirs, dense)
        check_result(quiet(ours, x), expected)


def test_astype_casting_rules(device):
    x = COO([[0]], [1.5], shape=(2,), device=device)
    assert_sparse_equal(x.astype(np.int32), np.array([1, 0], dtype=np.int32))
    with pytest.raises(TypeError, match="casting='safe'"):
        x.astype(np.int32, casting="safe")
    with pytest.raises(TypeError, match="same_kind"):
        ew.astype(x, np.int8, casting="same_kind")
    y = ew.astype(x, np.float32, casting="same_kind")
    assert y.dtype == np.float32 and y.fill_value.dtype == np.float32
    with pytest.raises(ValueError, match="casting"):
        ew.astype(x, np.float32, casting="sometimes")
    if hasattr(np, "astype"):
        assert np.astype(x, np.complex128).dtype == np.complex128


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_prune_and_eliminate_zeros(device, fmt):
    x = COO([[0, 0, 1, 1], [0, 1, 1, 2]], [1.0, 0.0, 0.0, 2.0], shape=(2, 3), device=device).asformat(fmt)
    p = x.prune()
    assert p.nnz == 2 and p.format == fmt
    assert_sparse_equal(p, np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]))
    assert x.eliminate_zeros().nnz == 2
    assert p.prune() is p
    n = COO([[0, 1]], [np.nan, 3.0], shape=(3,), fill_value=np.nan, device=device)
    assert ew.prune(n).nnz == 1
    u = COO([[0, 0]], [5.0, 5.0], shape=(2,), fill_value=5.0, device=device)  # duplicates sum to 10
    assert_sparse_equal(ew.prune(u), np.array([10.0, 5.0]))


def test_tf_sparse_add(device):
    # tf.sparse.add's documentation example: the sum [[, 2], [.1, 0], [6, -.2]].
    a = COO([[0, 1, 1, 2, 2], [1, 0, 1, 0, 1]], [2.0, 0.1, 1.0, 6.0, -0.2], shape=(3, 2), device=device)
    b = COO([[1], [1]], [-1.0], shape=(3, 2), device=device)
    assert gs_add(a, b).nnz == 5
    assert gs_add(a, b, thresh=0.11).nnz == 3
    assert gs_add(a, b, thresh=0.21).nnz == 2
    assert_sparse_equal(gs_add(a, b, thresh=0.21), np.array([[0.0, 2.0], [0.0, 0.0], [6.0, 0.0]]))
    dense = gs_add(a, put(np.ones((3, 2)), device))
    assert not isinstance(dense, SparseArray)
    assert_dense_equal(dense, to_host(a.todense()) + 1)
    with pytest.raises(TypeError, match="at least one"):
        gs_add(np.ones(2), np.ones(2))


def gs_add(a, b, thresh=0):
    return ew.add(a, b, thresh=thresh)


def test_foreign_sparse_on_the_right():
    sp = pytest.importorskip("scipy.sparse")
    x = COO([[0, 1], [1, 2]], [1.0, 2.0], shape=(2, 3), device="cpu")
    m = sp.csr_matrix(np.array([[0.0, 1.0, 0.0], [4.0, 0.0, 0.0]]))
    r = x + m
    assert isinstance(r, SparseArray)
    assert_sparse_equal(r, np.array([[0.0, 2.0, 0.0], [4.0, 0.0, 2.0]]))
    assert_sparse_equal(x * sp.coo_array(m), np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------

def test_dtype_combinations_numpy_rejects(device):
    x = COO([[0]], [1.5], shape=(2,), device=device)
    with pytest.raises(TypeError):
        x & 1
    b = COO([[0]], [True], shape=(2,), device=device)
    with pytest.raises(TypeError):
        b - b
    with pytest.raises(TypeError):
        np.left_shift(x, 1)


def test_unsupported_ufunc_forms(device):
    x = COO([[0]], [1.5], shape=(2,), device=device)
    with pytest.raises(TypeError):
        np.add(x, x, out=np.empty(2))
    with pytest.raises(TypeError):
        np.add.accumulate(x)
    with pytest.raises(TypeError, match="unsupported operand"):
        ew.elemwise(np.add, x, "a string")
    assert x.__add__(object()) is NotImplemented


def test_result_dtype_sparse_arrays_cannot_hold(device):
    x = COO([[0]], [1], shape=(2,), device=device)
    r = np.sin(x.astype(np.int8))  # NumPy gives float16; sparse arrays hold float32
    assert r.dtype == np.float32
    with pytest.raises(TypeError, match="dtype"):
        ew.elemwise(lambda a: np.asarray(a).astype("datetime64[s]"), x)


def test_sparse_arrays_are_unhashable_and_compare_elementwise(device):
    x = COO([[0]], [1.0], shape=(2,), device=device)
    with pytest.raises(TypeError):
        hash(x)
    assert_sparse_equal(x == x, np.array([True, True]))


@pytest.mark.parametrize("func", [np.add, np.multiply, np.maximum])
def test_shapes_beyond_int64_keys(device, func):
    # 2**40 x 2**40 elements: linear keys do not fit in int64, so the merge
    # falls back to a lexicographic sort of the concatenated coordinates.
    shape = (2**40, 2**40)
    a = COO([[0, 2**39, 2**40 - 1], [5, 0, 2**40 - 1]], [1.0, 2.0, 3.0], shape=shape, device=device)
    b = COO([[2**39, 7], [0, 7]], [10.0, -4.0], shape=shape, device=device)
    r = quiet(func, a, b)
    assert r.shape == shape and r.fill_value == 0
    expected = {(0, 5): func(1.0, 0.0), (2**39, 0): func(2.0, 10.0), (2**40 - 1, 2**40 - 1): func(3.0, 0.0),
                (7, 7): func(0.0, -4.0)}
    expected = {key: v for key, v in expected.items() if v != 0}
    coo = r.tocoo().coalesce()  # x + y of uncoalesced arrays concatenates
    got = {tuple(int(c) for c in col): float(v) for col, v in zip(to_host(coo.coords).T, to_host(coo.data))}
    assert {key: v for key, v in got.items() if v != 0} == expected  # (-0.0 may be stored)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.uint64])
@pytest.mark.parametrize("bounds", [(-1, 5), (-(2**70), 2**70), (3, 2**64), (-1, None), (None, 2**64), (None, -1), (2**65, None)])
def test_clip_with_python_int_bounds_past_the_dtype(device, dtype, bounds):
    """NumPy takes a lower bound below the range as none (and an upper one above it); CuPy raises for both."""
    info = np.iinfo(dtype)
    data = np.array([info.min, 0, 3, info.max], dtype=dtype)
    x = COO([[0, 1, 2, 3]], data, shape=(5,), fill_value=dtype(2), device=device)
    try:
        expected = np.clip(to_host(x.todense()), *bounds)
    except OverflowError:  # a lower bound above the range, or an upper one below it
        with pytest.raises(OverflowError):
            gs.clip(x, *bounds)
        return
    got = gs.clip(x, *bounds)
    assert got.dtype == expected.dtype
    assert_sparse_equal(got, expected)
