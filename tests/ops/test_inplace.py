"""In-place operations, ``out=``, torch's in-place methods and ``bool(x)``.

Every in-place operator is checked against NumPy's in-place operator on the
dense oracle (the same result, or the same kind of error with the target
unchanged), torch's in-place methods against torch sparse COO tensors on the
same data, and identity: the target stays the same object, seen by every
holder, while components taken out before keep the old values.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import assert_dense_equal, assert_sparse_equal, check_invariants, components_on_host, dense_oracle, put
from gpusparse._device import to_host, xp_for
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.containers import COO
from strategies import coo_cases, elements
from test_elementwise import EXAMPLES, _int_safe, broadcast_pair, build, coo_of_shape, dense_of, quiet, same_value

#: ``x op= y`` and NumPy's ufunc behind it.
INPLACE = {
    "iadd": np.add, "isub": np.subtract, "imul": np.multiply, "itruediv": np.true_divide,
    "ifloordiv": np.floor_divide, "ipow": np.power, "imod": np.remainder, "iand": np.bitwise_and,
    "ior": np.bitwise_or, "ixor": np.bitwise_xor, "ilshift": np.left_shift, "irshift": np.right_shift,
}
FORMATS = ["coo", "csr", "csc"]


def snapshot(x):
    """Everything that makes up ``x``, on the host (to prove a failed operation changed nothing)."""
    parts = components_on_host(x)
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in parts.items()}


def assert_unchanged(x, before):
    after = snapshot(x)
    assert after.keys() == before.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value, err_msg=key)
        elif key == "fill_value":
            assert same_value(after[key], value)
        else:
            assert after[key] == value, key


def fmt_of(data, x):
    return data.draw(st.sampled_from(FORMATS if x.sparse_dim == 2 else ["coo"]), label="format")


# --------------------------------------------------------------------------
# Identity
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_inplace_operator_updates_the_same_object(device, fmt):
    x = gs.fromdense(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), format=fmt, device=device)
    alias, holders = x, [x]
    data_before = x.data
    old_data = to_host(data_before).copy()
    x += 1
    assert x is alias and holders[0] is x and x.format == fmt
    assert_sparse_equal(alias, np.array([[2.0, 1.0, 3.0], [1.0, 4.0, 1.0]]))
    assert same_value(holders[0].fill_value, 1.0)
    # A component taken out before keeps the old values (nothing is written into it).
    np.testing.assert_array_equal(to_host(data_before), old_data)
    x *= x
    assert x is alias
    assert_sparse_equal(holders[0], np.array([[4.0, 1.0, 9.0], [1.0, 16.0, 1.0]]))


def test_components_shared_with_a_foreign_array_are_not_written(device):
    data = gs._device.xp_for(device).asarray(np.array([1.0, 2.0])) if device.is_cuda else np.array([1.0, 2.0])
    x = COO(np.array([[0, 2]]), data, shape=(3,), device=device)
    x -= 5
    np.testing.assert_array_equal(to_host(data), [1.0, 2.0])
    assert_sparse_equal(x, np.array([-4.0, -5.0, -3.0]))


# --------------------------------------------------------------------------
# Every in-place operator against NumPy's
# --------------------------------------------------------------------------

def _numpy_inplace(name, target, other):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(operator, name)(target, other)
    return target


@EXAMPLES
@given(data=st.data(), name=st.sampled_from(sorted(INPLACE)), sparse_other=st.booleans())
def test_inplace_operators_match_numpy(device, data, name, sparse_other):
    func = INPLACE[name]
    x_shape, y_shape = data.draw(broadcast_pair(), label="shapes")
    a = _int_safe(func, data.draw(coo_of_shape(x_shape), label="x"))
    x = build(a, device, data.draw(st.sampled_from(FORMATS), label="format"))
    if sparse_other:
        b = _int_safe(func, data.draw(coo_of_shape(y_shape), label="y"))
        other, other_dense, other_fill = build(b, device), dense_of(b), np.asarray(b[3])
    else:
        dt = a[1].dtype
        other = data.draw(st.one_of(st.integers(0, 4), st.floats(-3, 3), st.booleans(),
                                    elements(dt, nan=False).map(dt.type)), label="scalar")
        if func in (np.power, np.left_shift, np.right_shift) and dt.kind in "iub":
            other = data.draw(st.integers(0, 4), label="small int")
        other_dense = other_fill = other
    expected = dense_of(a).copy()
    fill = np.asarray(a[3]).copy()
    alias, before, fmt = x, snapshot(x), x.format
    try:
        _numpy_inplace(name, expected, other_dense)
        _numpy_inplace(name, fill, other_fill)
    except (TypeError, ValueError, OverflowError) as exc:
        kind = TypeError if isinstance(exc, TypeError) else type(exc)
        with pytest.raises(kind):
            _numpy_inplace(name, x, other)
        assert x is alias
        assert_unchanged(x, before)
        return
    _numpy_inplace(name, x, other)
    assert x is alias and x.format == fmt
    assert_sparse_equal(x, expected)
    assert same_value(x.fill_value, fill) and x.fill_value.dtype == expected.dtype


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex128])
def test_inplace_hybrid_arrays(device, fmt, dtype):
    dense = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    x = gs.fromdense(dense, sparse_dim=2, format=fmt, device=device)
    assert x.dense_dim == 1
    expected = dense.copy()
    x *= 3
    expected *= 3
    x -= x.copy()
    expected -= expected
    x += gs.fromdense(dense[:, :1, :], device=device)
    expected += dense[:, :1, :]
    assert_sparse_equal(x, expected)
    assert x.format == fmt


def test_power_two_uses_square_in_place_too(device):
    x = gs.fromdense(np.array([0, 3, -2], dtype=np.int8), device=device)
    x **= 2
    assert_sparse_equal(x, np.array([0, 9, 4], dtype=np.int8))


# --------------------------------------------------------------------------
# NumPy's errors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, other", [(np.int64, 1.5), (np.bool_, 1), (np.float32, 1j), (np.int32, np.float32(2))])
def test_casting_errors_like_numpy(device, dtype, other):
    dense = np.array([1, 0, 1], dtype=dtype)
    x = gs.fromdense(dense, device=device)
    before = snapshot(x)
    with pytest.raises(TypeError) as numpy_error:
        d = dense.copy()
        d += other
    with pytest.raises(TypeError) as ours:
        x += other
    assert str(ours.value) == str(numpy_error.value)
    assert_unchanged(x, before)


def test_same_kind_casts_are_allowed(device):
    x = gs.fromdense(np.array([1, 0, 200], dtype=np.int16), device=device)
    x += np.int64(100)  # int64 result cast to int16 (same kind)
    assert_sparse_equal(x, np.array([101, 100, 300], dtype=np.int16))
    y = gs.fromdense(np.array([1.5, 0.0], dtype=np.float32), device=device)
    y *= gs.fromdense(np.array([2.0, 0.0]), device=device)  # float64 result cast to float32
    assert_sparse_equal(y, np.array([3.0, 0.0], dtype=np.float32))


def test_non_broadcastable_output_like_numpy(device):
    x = gs.fromdense(np.array([1.0, 0.0, 2.0]), device=device)
    before = snapshot(x)
    y = gs.fromdense(np.ones((2, 3)), device=device)
    with pytest.raises(ValueError) as numpy_error:
        d = np.array([1.0, 0.0, 2.0])
        d += np.ones((2, 3))
    with pytest.raises(ValueError) as ours:
        x += y
    assert str(ours.value) == str(numpy_error.value)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        x *= np.ones((2, 3))  # a dense operand that would also densify: the output's error first
    assert_unchanged(x, before)


def test_dense_operand(device):
    xp = gs._device.xp_for(device)
    x = gs.fromdense(np.array([[1.0, 0.0], [0.0, 2.0]]), device=device)
    x *= xp.asarray(np.array([3.0, 4.0]))  # fill 0 stays 0: sparse result
    assert_sparse_equal(x, np.array([[3.0, 0.0], [0.0, 8.0]]))
    before = snapshot(x)
    with pytest.raises(ValueError, match="dense result"):
        x += xp.asarray(np.array([3.0, 4.0]))
    with gs.set_options(auto_densify=True), pytest.raises(ValueError, match="cannot hold"):
        x += xp.asarray(np.array([3.0, 4.0]))
    assert_unchanged(x, before)


def test_item_assignment_still_raises(device):
    x = gs.fromdense(np.array([1.0, 0.0]), device=device)
    with pytest.raises(TypeError):
        x[0] = 5.0


def test_unsupported_operand_falls_back_to_python(device):
    x = gs.fromdense(np.array([1.0, 0.0]), device=device)
    with pytest.raises(TypeError):
        x += "a"


def test_matmul_in_place(device):
    a = np.array([[1.0, 0.0], [2.0, 3.0]])
    x = gs.fromdense(a, format="csr", device=device)
    alias = x
    x @= gs.fromdense(a, format="csr", device=device)
    assert x is alias and x.format == "csr"
    assert_sparse_equal(x, a @ a)
    before = snapshot(x)
    with pytest.raises(ValueError, match="shape"):
        x @= gs.fromdense(np.ones((2, 1)), device=device)
    assert_unchanged(x, before)


# --------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_ufunc_out_is_updated_and_returned(device, fmt):
    dense = np.array([[1.0, 0.0], [4.0, 9.0]])
    x = gs.fromdense(dense, format=fmt, device=device)
    assert np.add(x, 1, out=x) is x
    assert np.sqrt(x, out=(x,)) is x
    assert x.format == fmt
    assert_sparse_equal(x, np.sqrt(dense + 1))


def test_ufunc_out_of_another_format_and_shape(device):
    x = gs.fromdense(np.array([[0.0, 2.0], [3.0, 0.0]]), device=device)  # COO
    out = gs.zeros((2, 2), format="csc", device=device)
    assert np.multiply(x, 2, out=out) is out and out.format == "csc"
    assert_sparse_equal(out, np.array([[0.0, 4.0], [6.0, 0.0]]))
    row = gs.fromdense(np.array([1.0, 0.0]), device=device)
    big = gs.zeros((3, 2), device=device)
    np.negative(row, out=big)  # inputs broadcast to the output, as NumPy's
    assert_sparse_equal(big, np.broadcast_to(-np.array([1.0, 0.0]), (3, 2)))
    with pytest.raises(ValueError, match="non-broadcastable"):
        np.negative(big, out=row)


def test_ufunc_out_casting(device):
    x = gs.fromdense(np.array([1, 0, 3]), device=device)
    with pytest.raises(TypeError, match="same_kind"):
        np.true_divide(x, 2, out=x)
    assert np.true_divide(x, 2, out=x, casting="unsafe") is x
    assert_sparse_equal(x, np.array([0, 0, 1]))


def test_ufunc_two_outputs(device):
    x = gs.fromdense(np.array([7, 0, -3]), device=device)
    q, r = gs.zeros_like(x), gs.zeros_like(x)
    got = np.divmod(x, 2, out=(q, r))
    assert got[0] is q and got[1] is r
    assert_sparse_equal(q, np.array([3, 0, -2]))
    assert_sparse_equal(r, np.array([1, 0, 1]))
    got = np.divmod(x, 2, out=(None, r))
    assert got[1] is r and got[0] is not q
    assert_sparse_equal(got[0], np.array([3, 0, -2]))


def test_ufunc_dense_out_raises(device):
    xp = gs._device.xp_for(device)
    x = gs.fromdense(np.array([1.0, 0.0]), device=device)
    with pytest.raises(TypeError, match="out= must be gpusparse arrays"):
        np.add(x, 1, out=xp.zeros(2))
    if not device.is_cuda:
        dense = np.zeros(2)
        with pytest.raises(TypeError, match="todense"):
            dense += x


def test_ufunc_reduce_out(device):
    x = gs.fromdense(np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), sparse_dim=2, device=device)
    out = gs.zeros((2,), device=device)
    assert np.add.reduce(x, axis=0, out=out) is out
    assert_sparse_equal(out, np.array([3.0, 0.0]))


# --------------------------------------------------------------------------
# bool(x) and len(x)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (1, 1, 1)])
def test_bool_of_one_element(device, shape):
    ndim = len(shape)
    stored = COO(np.zeros((ndim, 1), np.int64), [2.5], shape, device=device)
    assert bool(stored) is True
    if ndim:
        cancelled = COO(np.zeros((ndim, 2), np.int64), [1.0, -1.0], shape, device=device)  # duplicates sum to 0
        assert bool(cancelled) is False
    assert bool(COO(np.zeros((ndim, 0), np.int64), np.zeros(0), shape, device=device)) is False
    assert bool(COO(np.zeros((ndim, 0), np.int64), np.zeros(0), shape, fill_value=3.0, device=device)) is True
    if ndim:
        hybrid = COO(np.zeros((ndim - 1, 1), np.int64), np.zeros((1, 1)) + 4, shape, device=device)
        assert hybrid.dense_dim == 1 and bool(hybrid) is True


@pytest.mark.parametrize("shape", [(0,), (2,), (2, 3), (0, 1)])
def test_bool_raises_as_numpy(device, shape):
    x = gs.zeros(shape, device=device)
    with pytest.raises(ValueError) as numpy_error:
        bool(np.zeros(shape))
    with pytest.raises(ValueError) as ours:
        bool(x)
    assert str(ours.value) == str(numpy_error.value)


def test_comparisons_are_not_truth_values(device):
    a = gs.fromdense(np.array([1.0, 0.0, 2.0]), device=device)
    b = gs.fromdense(np.array([1.0, 0.0, 3.0]), device=device)
    with pytest.raises(ValueError, match="ambiguous"):
        if a == b:
            pass
    with pytest.raises(ValueError, match="ambiguous"):
        a in [b]  # noqa: B015
    assert a in [a]  # identity first, as for NumPy arrays
    assert not bool((a == b).all())


def test_len(device):
    assert len(gs.zeros((3, 2), device=device)) == 3
    with pytest.raises(TypeError):
        len(gs.zeros((), device=device))


# --------------------------------------------------------------------------
# torch's in-place methods against torch
# --------------------------------------------------------------------------

TORCH_DTYPES = [np.float64, np.float32, np.int64, np.int32]


def torch_of(x_case):
    return torch.sparse_coo_tensor(torch.from_numpy(x_case.coords).clone(), torch.from_numpy(x_case.data).clone(),
                                   x_case.shape)


def torch_dense(result):
    return result.to_dense().numpy()


def _compare(x, t, before_alias):
    assert x is before_alias
    check_invariants(x)
    assert tuple(x.shape) == tuple(t.shape)
    got = to_host(x.todense())
    expected = torch_dense(t)
    assert_dense_equal(got, expected.astype(got.dtype), rtol=1e-5 if got.dtype.kind == "f" else None)


def _torch_call(method, t, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(t, method)(*args, **kwargs)


@EXAMPLES
@given(case=coo_cases(min_ndim=1, max_ndim=3, dtypes=TORCH_DTYPES, fill=False, nan=False), data=st.data())
def test_torch_methods_match_torch(device, case, data):
    assume(case.sparse_dim >= 1)  # torch's to_sparse needs a sparse dimension
    dtype = case.dtype
    method = data.draw(st.sampled_from(["add_", "sub_", "mul_", "div_", "floor_divide_", "neg_", "asin_",
                                        "log1p_", "deg2rad_", "rad2deg_", "zero_", "copy_"]), label="method")
    x = case.build(device)
    t = torch_of(case).coalesce() if method in ("asin_", "log1p_", "deg2rad_", "rad2deg_") else torch_of(case)
    args, kwargs, targs = (), {}, ()
    if method in ("add_", "sub_", "mul_", "copy_"):
        other = case.dense() * 2 + 1 if dtype.kind == "f" else case.dense() + 1
        o_case = gs.fromdense(other.astype(dtype), fill_value=0, device=device)
        args = targs = (o_case,)
        targs = (torch.from_numpy(to_host(o_case.todense())).to_sparse(case.sparse_dim),)
        if method in ("add_", "sub_"):
            alpha = data.draw(st.sampled_from([1, 2, -3] + ([0.5] if dtype.kind == "f" else [])), label="alpha")
            kwargs = {"alpha": alpha}
    elif method in ("div_", "floor_divide_"):
        divisor = data.draw(st.sampled_from([2, -3, 4]), label="divisor")
        args = targs = (divisor,)
        if method == "div_":
            mode = data.draw(st.sampled_from([None, "trunc", "floor"]), label="rounding_mode")
            kwargs = {"rounding_mode": mode}
    alias = x
    try:
        expected = _torch_call(method, t, *targs, **kwargs)
    except RuntimeError:  # torch refuses (integer results of true division, asin_ of ints, ...)
        with pytest.raises((TypeError, ValueError)):
            quiet(getattr(x, method), *args, **kwargs)
        return
    assert expected is t
    got = quiet(getattr(x, method), *args, **kwargs)
    assert got is x
    _compare(x, expected, alias)


@pytest.mark.parametrize("fmt", FORMATS)
def test_torch_t_and_transpose(device, fmt):
    dense = np.arange(6.0).reshape(2, 3) % 4
    x = gs.fromdense(dense, format=fmt, device=device)
    t = torch.from_numpy(dense).to_sparse()
    assert x.t_() is x and x.format == fmt
    _compare(x, t.t_(), x)
    assert x.transpose_(0, 1) is x
    _compare(x, t.transpose_(0, 1), x)
    v = gs.fromdense(np.array([1.0, 0.0]), device=device)
    assert v.t_() is v and v.shape == (2,)
    with pytest.raises(ValueError, match="at most 2"):
        gs.zeros((2, 2, 2), device=device).t_()
    y = gs.fromdense(np.arange(24.0).reshape(2, 3, 4), sparse_dim=2, device=device)
    ty = torch.from_numpy(np.arange(24.0).reshape(2, 3, 4)).to_sparse(2)
    _compare(y.transpose_(0, 1), ty.transpose_(0, 1), y)


RESIZES = [  # (size, sparse_dim, dense_dim) from a (2, 3) array with sparse_dim 2, and a hybrid (2, 3, 2)
    ((3, 4), 2, 0), ((2, 3), 2, 0), ((1, 4), 2, 0), ((2, 3, 4), 3, 0), ((2, 3, 4), 2, 1),
    ((2, 3, 4), 2, 0), ((6,), 1, 0),
]
HYBRID_RESIZES = [((4, 5, 2), 2, 1), ((2, 3, 3), 2, 1), ((2, 3, 1), 2, 1), ((2, 3), 2, 0)]


def _resize_case(device, hybrid, empty):
    if hybrid:
        coords, vals, shape = np.array([[0, 1], [2, 0]]), np.array([[1.0, 2.0], [3.0, 4.0]]), (2, 3, 2)
    else:
        coords, vals, shape = np.array([[0, 1, 1], [2, 0, 2]]), np.array([3.0, 4.0, 5.0]), (2, 3)
    if empty:
        coords, vals = coords[:, :0], vals[:0]
    x = COO(coords, vals, shape, device=device)
    t = torch.sparse_coo_tensor(torch.from_numpy(coords), torch.from_numpy(vals).clone(), shape)
    return x, t


@pytest.mark.parametrize("empty", [False, True])
@pytest.mark.parametrize("hybrid, resize", [(False, r) for r in RESIZES] + [(True, r) for r in HYBRID_RESIZES])
def test_sparse_resize_matches_torch(device, hybrid, resize, empty):
    x, t = _resize_case(device, hybrid, empty)
    size, sd, dd = resize
    before = snapshot(x)
    try:
        expected = t.sparse_resize_(size, sd, dd)
    except RuntimeError:
        with pytest.raises(ValueError, match="sparse_resize_|len\\(size\\)"):
            x.sparse_resize_(size, sd, dd)
        assert_unchanged(x, before)
        return
    assert x.sparse_resize_(size, sd, dd) is x
    assert x.shape == tuple(expected.shape) and x.sparse_dim == expected.sparse_dim()
    assert x.nnz == expected._nnz()
    if hybrid and not empty and size[2:] != before["shape"][2:]:
        # torch reinterprets the values' storage (blocks shift); here each block keeps its
        # elements and grown ones hold the fill value.
        old = dense_oracle(before["coords"], before["data"], before["shape"])
        grown = np.pad(old, [(0, n - o) for n, o in zip(size, old.shape)])
        np.testing.assert_array_equal(to_host(x.todense()), grown)
    else:
        _compare(x, expected, x)
    check_invariants(x)


@pytest.mark.parametrize("hybrid", [False, True])
def test_sparse_resize_and_clear_and_resize_as(device, hybrid):
    x, t = _resize_case(device, hybrid, False)
    assert x.sparse_resize_and_clear_((1, 1, 5), 2, 1) is x
    expected = t.clone().sparse_resize_and_clear_((1, 1, 5), 2, 1)
    assert x.nnz == 0 and x.shape == tuple(expected.shape) and x.sparse_dim == expected.sparse_dim()
    x, t = _resize_case(device, hybrid, False)
    other, t_other = _resize_case(device, hybrid, True)
    other.sparse_resize_(tuple(n + 1 for n in other.shape), other.sparse_dim, other.dense_dim)
    t_other.sparse_resize_(tuple(n + 1 for n in t_other.shape), t_other.sparse_dim(), t_other.dense_dim())
    assert x.resize_as_(other) is x
    t.resize_as_(t_other)
    assert x.shape == tuple(t.shape)
    with pytest.raises(ValueError, match="len\\(size\\)"):
        x.sparse_resize_((2, 2), 1, 0)
    with pytest.raises(TypeError, match="integers"):
        x.sparse_resize_((2, 2), 1.5, 0)


def test_compressed_resize_keeps_the_format(device):
    x = gs.fromdense(np.eye(2), format="csr", device=device)
    assert x.sparse_resize_((3, 4), 2, 0) is x and x.format == "csr"
    assert_sparse_equal(x, np.pad(np.eye(2), ((0, 1), (0, 2))))


def test_zero_and_copy(device):
    x = gs.fromdense(np.array([[1.0, 7.0], [7.0, 2.0]]), fill_value=7.0, format="csc", device=device)
    assert x.zero_() is x and x.nnz == 0 and x.fill_value == 0 and x.format == "csc"
    assert_sparse_equal(x, np.zeros((2, 2)))
    src = gs.fromdense(np.array([[0, 5], [6, 0]], dtype=np.int32), device=device)
    alias = x
    assert x.copy_(src) is alias and x.dtype == np.float64 and x.format == "csc"
    assert_sparse_equal(x, np.array([[0.0, 5.0], [6.0, 0.0]]))
    assert x.copy_(gs.fromdense(np.array([1.5, 0.0]), device=device)) is x  # broadcast along rows
    assert_sparse_equal(x, np.array([[1.5, 0.0], [1.5, 0.0]]))
    y = gs.zeros((2,), dtype=np.int64, device=device)
    y.copy_(gs.fromdense(np.array([2.9, -1.5]), device=device))  # torch casts unsafely
    assert_sparse_equal(y, np.array([2, -1]))
    with pytest.raises(TypeError, match="sparse"):
        y.copy_(np.ones(2))
    with pytest.raises(ValueError, match="non-broadcastable"):
        y.copy_(gs.zeros((3,), device=device))
    if device.is_cuda:  # copy_ moves across devices, as torch's
        z = gs.zeros((2,), device=device)
        z.copy_(gs.fromdense(np.array([1.0, 2.0]), device="cpu"))
        assert z.device == device
        assert_sparse_equal(z, np.array([1.0, 2.0]))


def test_copy_does_not_share_components(device):
    src = gs.fromdense(np.array([1.0, 0.0, 2.0]), device=device)
    x = gs.zeros((3,), device=device)
    x.copy_(src)
    assert x.data is not src.data
    assert to_host(x.coords).ctypes.data != to_host(src.coords).ctypes.data or device.is_cuda


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_inplace_keeps_every_dtype(device, dtype):
    dense = (np.arange(4) % 2).astype(dtype)
    x = gs.fromdense(dense, device=device)
    expected = dense.copy()
    if dtype.kind in "biu":
        x |= x
        expected |= expected
    else:
        x += x
        expected += expected
    assert x.dtype == dtype
    assert_sparse_equal(x, expected)


def test_div_rounding_modes_on_integers_match_torch(device):
    vals = np.array([7, -7, 6, -1], dtype=np.int64)
    x = COO(np.array([[0, 1, 2, 3]]), vals, (5,), device=device)
    for mode in ("trunc", "floor"):
        y = x.copy()
        t = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2, 3]]), torch.tensor(vals), (5,))
        assert y.div_(-2, rounding_mode=mode) is y
        _compare(y, t.div_(-2, rounding_mode=mode), y)
    with pytest.raises(ValueError, match="rounding_mode"):
        x.div_(2, rounding_mode="round")
    with pytest.raises(TypeError, match="Cannot cast"):
        x.div_(2)


# --------------------------------------------------------------------------
# Threads: readers see the old state or the new one, writers serialise
# --------------------------------------------------------------------------

def _race(writers, readers, rounds):
    """Run each of ``writers`` ``rounds`` times in a thread of its own while each of ``readers`` loops in another.

    Returns the exceptions raised in any thread. A short switch interval makes
    the threads interleave between bytecodes, not only where the GIL is released.
    """
    import sys
    import threading

    errors, start = [], threading.Barrier(len(writers) + len(readers))
    pending = [len(writers)]
    lock = threading.Lock()

    def write(writer):
        try:
            start.wait()
            for _ in range(rounds):
                writer()
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            errors.append(exc)
        finally:
            with lock:
                pending[0] -= 1

    def read(reader):
        try:
            start.wait()
            while pending[0] and not errors:
                reader()
            reader()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=read, args=(r,)) for r in readers]
        threads += [threading.Thread(target=write, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(interval)
    return errors


def _one_of(got, candidates, what):
    got = to_host(got)
    for c in candidates:
        if np.shape(got) == np.shape(c) and np.array_equal(got, c, equal_nan=True):
            return
    raise AssertionError(f"{what} is neither the old nor the new value: {got!r}")


def _dense(r):
    return r.todense() if isinstance(r, gs.SparseArray) else r


@pytest.mark.parametrize("fmt", FORMATS)
def test_readers_see_old_or_new_state(device, fmt):
    """``t_()`` (new shape, new components) in one thread; todense, sum, indexing, products in others."""
    rng = np.random.default_rng(7)
    rect = rng.integers(1, 5, (5, 3)).astype(np.float64) * (rng.random((5, 3)) < 0.5)
    square = rng.integers(1, 5, (4, 4)).astype(np.float64) * (rng.random((4, 4)) < 0.5)
    x = gs.fromdense(rect, format=fmt, device=device)
    s = gs.fromdense(square, format=fmt, device=device)
    xs, ss, v = [rect, rect.T], [square, square.T], np.arange(4.0)
    v_here = xp_for(device).asarray(v)
    readers = [
        lambda: _one_of(x.todense(), xs, "todense"),
        lambda: _one_of(_dense(x.sum(axis=0)), [d.sum(axis=0) for d in xs], "sum(axis=0)"),
        lambda: _one_of(_dense(x[1]), [d[1] for d in xs], "x[1]"),
        lambda: _one_of(x.nbytes * 0 + x.sparse_dim + x.density * 0, [2], "sparse_dim"),
        lambda: _one_of(_dense(s @ s), [d @ d for d in ss], "s @ s"),
        lambda: _one_of(_dense(s @ v_here), [d @ v for d in ss], "s @ v"),
    ]

    def write():
        x.t_()
        s.t_()

    errors = _race([write], readers, rounds=10 if device.is_cuda else 60)
    assert not errors, errors[:3]
    _one_of(x.todense(), xs, "final x")
    _one_of(s.todense(), ss, "final s")


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_concurrent_writers_serialise(device, fmt):
    """Two threads adding to one array: no addition is lost, as in a serial order of the two."""
    x = gs.fromdense(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), format=fmt, device=device)
    expected = to_host(x.todense()) + 2 * 30

    def add():
        assert operator.iadd(x, 1.0) is x  # x += 1.0
        x.add_(x, alpha=0)

    errors = _race([add, add], [], rounds=30)
    assert not errors, errors[:3]
    assert_dense_equal(to_host(x.todense()), expected)


def test_no_loop_for_the_dtypes_is_reported_before_the_output_shape(device):
    # NumPy's order: ``bool &= float32`` has no loop (TypeError) even where the output's shape would
    # also be refused (a (1,) output for a (1, 1) broadcast).
    x = gs.COO(put(np.zeros((1, 0), np.int64), device), put(np.zeros(0, bool), device), shape=(1,))
    y = gs.COO(put(np.zeros((2, 0), np.int64), device), put(np.zeros(0, np.float32), device), shape=(1, 1))
    a = np.zeros(1, bool)
    with pytest.raises(TypeError) as numpy_error:
        a &= np.zeros((1, 1), np.float32)
    with pytest.raises(TypeError, match="not supported for the input types") as ours:
        x &= y
    assert str(ours.value) == str(numpy_error.value)
