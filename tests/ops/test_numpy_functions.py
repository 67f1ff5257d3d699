"""NumPy's functions on sparse arrays (``__array_function__``, NEP 18) against NumPy on the dense oracle.

Every dispatched function runs as ``np.f(sparse, ...)`` and ``np.f(dense, ...)``
on Hypothesis-drawn COO arrays (N-d, hybrid, duplicates, fill values, every
dtype) and CSR/CSC matrices, on every device: where NumPy answers, the
results agree (a sparse array wherever the operation keeps sparsity); where
NumPy raises, so does gpusparse. NumPy functions gpusparse does not
implement raise ``TypeError`` naming themselves; the few run by NumPy's own
implementation (:data:`NUMPY_SAFE`) give NumPy's answer.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusparse as gs
from _differential import EXAMPLES, compare, differential, inputs, quiet
from _helpers import REAL_DTYPES, assert_sparse_equal, put
from gpusparse.containers import SparseArray
from gpusparse.ops.linalg import numpy_names as _linalg_numpy
from gpusparse.ops.numpy.functions import FUNCTIONS, NUMPY_SAFE

FLOATS = (np.float32, np.float64, np.complex64, np.complex128)


# --------------------------------------------------------------------------
# Inputs and the differential check: tests/_differential.py
# --------------------------------------------------------------------------

def axis_of(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


# --------------------------------------------------------------------------
# Shapes and axes
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_reshape_and_ravel(device, data):
    x, dense = data.draw(inputs(device))
    shape = data.draw(st.sampled_from([(-1,), dense.shape[::-1], (1,) + dense.shape, dense.shape + (1, -1)]))
    order = data.draw(st.sampled_from(["C", "F", "A"]))
    differential(lambda a: np.reshape(a, shape, order=order), x, dense)
    differential(lambda a: np.ravel(a, order=order), x, dense)
    if differential(lambda a: np.reshape(a, shape, copy=True), x, dense) is None:  # NumPy could reshape
        assert not np.may_share_memory(np.reshape(x, shape, copy=True), x)


def test_reshape_copy(device):
    """copy=False keeps the stored values (reshape never copies them); copy=True copies them."""
    for x in (gs.fromdense(put(np.arange(6.0).reshape(2, 3), device), format="csr"),
              gs.fromdense(put(np.arange(6.0).reshape(2, 3), device), sparse_dim=1)):
        for shape in ((6,), (3, 2), (1, 6)):
            assert np.may_share_memory(np.reshape(x, shape, copy=False).data, x.data)
            assert not np.may_share_memory(np.reshape(x, shape, copy=True), x)
    with pytest.raises(ValueError, match="order"):
        np.reshape(x, (6,), order="X")


@EXAMPLES
@given(data=st.data())
def test_axes(device, data):
    x, dense = data.draw(inputs(device))
    n = dense.ndim
    new = data.draw(st.integers(-n - 1, n))
    differential(lambda a: np.expand_dims(a, new), x, dense)
    axis = data.draw(st.none() | st.integers(-max(n, 1), max(n, 1) - 1))
    differential(lambda a: np.squeeze(a, axis=axis), x, dense)
    differential(lambda a: np.transpose(a), x, dense)
    if n:
        perm = data.draw(st.permutations(range(n)))
        differential(lambda a: np.transpose(a, perm), x, dense)
        src, dst, start = axis_of(data.draw, n), axis_of(data.draw, n), data.draw(st.integers(-n, n))
        differential(lambda a: np.moveaxis(a, src, dst), x, dense)
        differential(lambda a: np.swapaxes(a, src, dst), x, dense)
        differential(lambda a: np.rollaxis(a, src, start), x, dense)
    if n >= 2:
        differential(np.matrix_transpose, x, dense)
        differential(np.linalg.matrix_transpose, x, dense)
    for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
        differential(f, x, dense)
        differential(lambda a: f(a, a), x, dense)


@EXAMPLES
@given(data=st.data())
def test_broadcast(device, data):
    x, dense = data.draw(inputs(device, max_ndim=3))
    shape = (2,) + tuple(3 if s == 1 and data.draw(st.booleans()) else s for s in dense.shape)
    differential(lambda a: np.broadcast_to(a, shape), x, dense)
    differential(lambda a: np.broadcast_arrays(a, np.broadcast_to(a, shape)), x, dense)


# --------------------------------------------------------------------------
# Joining and splitting
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_join(device, data):
    x, dense = data.draw(inputs(device, max_ndim=3))
    n = dense.ndim
    axis = data.draw(st.integers(-max(n, 1), max(n, 1) - 1))
    dtype = data.draw(st.none() | st.sampled_from([np.float64, np.complex128]))

    def pair(a):
        return [a, np.flip(a)]  # the same fill value, another pattern

    differential(lambda a: np.concatenate(pair(a), axis=axis, dtype=dtype), x, dense)
    differential(lambda a: np.concatenate(pair(a), axis=None), x, dense)
    differential(lambda a: np.concat(pair(a), axis=axis), x, dense)
    new = data.draw(st.integers(-n - 1, n))
    differential(lambda a: np.stack(pair(a), axis=new, dtype=dtype), x, dense)
    for f in (np.vstack, np.hstack):
        differential(lambda a: f(pair(a), dtype=dtype), x, dense)
    for f in (np.dstack, np.column_stack):
        differential(lambda a: f(pair(a)), x, dense)


@EXAMPLES
@given(data=st.data())
def test_split(device, data):
    x, dense = data.draw(inputs(device, max_ndim=3))
    n = dense.ndim
    sections = data.draw(st.integers(1, 3) | st.lists(st.integers(0, 5), max_size=3).map(sorted))
    axis = data.draw(st.integers(-max(n, 1), max(n, 1) - 1))
    differential(lambda a: np.split(a, sections, axis=axis), x, dense)
    differential(lambda a: np.array_split(a, sections, axis=axis), x, dense)
    for f in (np.hsplit, np.vsplit, np.dsplit):
        differential(lambda a: f(a, sections), x, dense)
    if n:
        differential(lambda a: np.unstack(a, axis=axis), x, dense)


def test_concatenate_joins_chunks_back(device):
    """What Dask does to compute a chunked array: ``np.concatenate`` of the chunks."""
    dense = np.arange(24.0).reshape(4, 6) % 5
    x = gs.fromdense(put(dense, device), format="csr")
    rows = [np.concatenate(np.array_split(r, 3, axis=1), axis=1) for r in np.array_split(x, 2, axis=0)]
    joined = np.concatenate(rows, axis=0)
    assert isinstance(joined, SparseArray)
    assert np.array_equal(joined, x)
    assert_sparse_equal(joined, dense)


def test_join_mixes_dense_members_without_densifying(device):
    x = gs.fromdense(put(np.array([[0.0, 1.0]]), device))
    joined = np.concatenate([x, put(np.array([[0.0, 2.0]]), device)])
    assert isinstance(joined, SparseArray) and joined.nnz == 2
    assert_sparse_equal(joined, [[0.0, 1.0], [0.0, 2.0]])


def test_join_casting_and_mixed_members(device):
    a = gs.fromdense(put(np.array([0, 1], np.int32), device))
    b = gs.fromdense(put(np.array([0.5, 0.0]), device))
    with pytest.raises(TypeError, match="'no'"):
        np.concatenate([a, b], casting="no")
    with pytest.raises(TypeError, match="same_kind"):
        np.stack([a, b], dtype=np.int32)  # float64 to int32 is not a same-kind cast
    assert_sparse_equal(np.concatenate([a, b]), [0.0, 1.0, 0.5, 0.0])
    assert_sparse_equal(np.hstack([a, b], dtype=np.int64, casting="unsafe"), np.array([0, 1, 0, 0]))
    sparse, dense = np.atleast_2d(a, put(np.ones(2), device))
    assert isinstance(sparse, SparseArray) and sparse.shape == (1, 2)
    assert not isinstance(dense, SparseArray) and dense.shape == (1, 2)


# --------------------------------------------------------------------------
# Rearranging
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_rearrange(device, data):
    x, dense = data.draw(inputs(device))
    n = dense.ndim
    shift = data.draw(st.integers(-5, 5))
    axis = data.draw(st.none() | st.integers(-max(n, 1), max(n, 1) - 1))
    differential(lambda a: np.roll(a, shift, axis=axis), x, dense)
    differential(lambda a: np.flip(a, axis=axis), x, dense)
    differential(np.fliplr, x, dense)
    differential(np.flipud, x, dense)
    if n >= 2:
        axes = data.draw(st.sampled_from([(0, 1), (1, 0), (-1, 0), (0, -1)]))
        k = data.draw(st.integers(-4, 5))
        differential(lambda a: np.rot90(a, k, axes=axes), x, dense)


@EXAMPLES
@given(data=st.data())
def test_pad(device, data):
    x, dense = data.draw(inputs(device, max_ndim=3))
    widths = data.draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                                min_size=dense.ndim, max_size=dense.ndim))
    fill = x.fill_value
    differential(lambda a: np.pad(a, widths, constant_values=fill), x, dense)
    differential(lambda a: np.pad(a, widths, mode="constant", constant_values=[(fill, fill)] * a.ndim),
                 x, dense)
    if fill == 0:
        differential(lambda a: np.pad(a, widths), x, dense)  # NumPy's default: zeros
    elif any(w != (0, 0) for w in widths):
        with pytest.raises(ValueError, match="fill value"):
            np.pad(x, widths)  # zeros are not the fill value: refused, not padded with the fill
    with pytest.raises(ValueError, match="mode"):
        np.pad(x, 1, mode="edge")
    with pytest.raises(TypeError, match="reflect_type"):
        np.pad(x, 1, reflect_type="odd")


@EXAMPLES
@given(data=st.data())
def test_triangles_and_diagonals(device, data):
    x, dense = data.draw(inputs(device, min_ndim=2, max_ndim=3, fill=False))
    k = data.draw(st.integers(-2, 2))
    differential(lambda a: np.tril(a, k), x, dense)
    differential(lambda a: np.triu(a, k=k), x, dense)
    a1, a2 = data.draw(st.sampled_from([(0, 1), (1, 0), (0, -1), (-2, -1)]))
    differential(lambda a: np.diagonal(a, k, a1, a2), x, dense)
    differential(lambda a: np.linalg.diagonal(a, offset=k), x, dense)
    differential(lambda a: np.trace(a, k, a1, a2), x, dense, sparse=dense.ndim > 2)
    differential(lambda a: np.linalg.trace(a, offset=k), x, dense, sparse=dense.ndim > 2)
    if dense.ndim == 2:
        differential(lambda a: np.diag(a, k), x, dense)
        differential(lambda a: np.diag(np.diag(a), k=k), x, dense)
        differential(lambda a: np.diagflat(a, k), x, dense)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_nonzero_argwhere_where(device, data):
    x, dense = data.draw(inputs(device, fill=False))
    if dense.ndim:
        differential(np.nonzero, x, dense, sparse=False)
        differential(np.where, x, dense, sparse=False)
    differential(np.argwhere, x, dense, sparse=False)
    differential(np.flatnonzero, x, dense, sparse=False)


@EXAMPLES
@given(data=st.data())
def test_where_three_arguments(device, data):
    x, dense = data.draw(inputs(device))
    differential(lambda a: np.where(a.astype(bool), a, a.dtype.type(x.fill_value)), x, dense)
    with pytest.raises(ValueError, match="both or neither"):
        np.where(x, x)


@EXAMPLES
@given(data=st.data())
def test_take(device, data):
    x, dense = data.draw(inputs(device, min_ndim=1))
    axis = data.draw(st.none() | st.integers(-dense.ndim, dense.ndim - 1))
    n = dense.size if axis is None else dense.shape[axis]
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    bound = max(n, 1) * (3 if mode != "raise" else 1)
    indices = data.draw(st.integers(-bound, bound - 1) | st.lists(st.integers(-bound, bound - 1), max_size=4))
    if isinstance(indices, list) and data.draw(st.booleans()):  # an index array on the device
        indices = put(np.asarray(indices, dtype=np.int64), device)
        host = np.asarray(indices) if not device.is_cuda else indices.get()
    else:
        host = indices
    try:
        expected = np.take(dense, host, axis=axis, mode=mode)
    except IndexError:
        with pytest.raises(IndexError):
            np.take(x, indices, axis=axis, mode=mode)
        return
    actual = np.take(x, indices, axis=axis, mode=mode)
    compare(actual, expected, sparse=True)
    with pytest.raises(ValueError, match="mode"):
        np.take(x, 0, mode="bogus")


# --------------------------------------------------------------------------
# Elementwise and reductions
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_elementwise(device, data):
    x, dense = data.draw(inputs(device))
    if x.dtype in REAL_DTYPES:
        lo = data.draw(st.integers(-5, 5))
        differential(lambda a: np.clip(a, lo, lo + 3), x, dense)
        differential(lambda a: np.clip(a, min=lo), x, dense)
    if x.dtype != np.bool_:
        differential(lambda a: np.round(a, 1), x, dense)
        differential(lambda a: np.around(a), x, dense)
    differential(np.iscomplex, x, dense)
    differential(np.isreal, x, dense)
    with pytest.raises(TypeError, match="out="):
        np.round(x, out=put(np.empty(dense.shape, dense.dtype), device))


@EXAMPLES
@given(data=st.data())
def test_reductions_dispatch(device, data):
    x, dense = data.draw(inputs(device, min_ndim=2, max_ndim=2, dtypes=REAL_DTYPES))
    axis = data.draw(st.sampled_from([0, 1, -1]))
    differential(lambda a: np.count_nonzero(a, axis=axis), x, dense, sparse=None)
    differential(lambda a: np.ptp(a, axis=axis), x, dense, sparse=None)
    differential(lambda a: np.ptp(a, axis=axis, keepdims=True), x, dense, sparse=None)
    differential(lambda a: np.sum(a, axis=axis), x, dense, sparse=None, rtol=1e-4)
    ddof = data.draw(st.integers(0, 1))
    differential(lambda a: np.var(a, axis=axis, correction=ddof), x, dense, sparse=None, rtol=1e-4)
    differential(lambda a: np.nanstd(a, axis=axis, ddof=ddof), x, dense, sparse=None, rtol=1e-4)
    with pytest.raises(TypeError, match="mean="):
        np.var(x, mean=put(np.zeros(()), device))


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_like(device, data):
    x, dense = data.draw(inputs(device))
    dtype = data.draw(st.none() | st.sampled_from([np.int32, np.float64, np.complex128, np.bool_]))
    shape = data.draw(st.none() | st.just((2, 3)))
    for f, args in ((np.zeros_like, ()), (np.ones_like, ()), (np.full_like, (3,))):
        result = quiet(f, x, *args, dtype=dtype, shape=shape)
        assert isinstance(result, SparseArray) and result.nnz == 0 and result.device == x.device
        compare(result, quiet(f, dense, *args, dtype=dtype, shape=shape), sparse=True)
    empty = np.empty_like(x, dtype=dtype, shape=shape)
    assert isinstance(empty, SparseArray) and empty.nnz == 0
    assert empty.shape == np.empty_like(dense, shape=shape).shape
    assert empty.dtype == np.empty_like(dense, dtype=dtype).dtype
    copied = np.copy(x)
    assert copied is not x and not np.may_share_memory(copied, x)
    compare(copied, dense, sparse=True)
    with pytest.raises(ValueError, match="order"):
        np.zeros_like(x, order="X")


def test_creation_functions(device):
    x = gs.full((2, 3), 7, device=device)
    assert x.dtype == np.int64 and x.nnz == 0 and x.fill_value == 7
    assert_sparse_equal(x, np.full((2, 3), 7))
    assert_sparse_equal(gs.full(4, 2.5, dtype=np.int32, device=device), np.full(4, 2.5, dtype=np.int32))
    assert_sparse_equal(gs.ones((2, 2), format="csr", device=device), np.ones((2, 2)))
    assert gs.ones((2, 2), format="csr", device=device).format == "csr"
    y = gs.fromdense(put(np.array([[0, 1], [2, 0]], np.int32), device), format="csc")
    assert gs.full_like(y, 9).format == "csc" and gs.full_like(y, 9, shape=(4,)).format == "coo"
    assert_sparse_equal(gs.full_like(y, 9.7), np.full((2, 2), 9, np.int32))  # cast as NumPy casts
    assert_sparse_equal(gs.ones_like(y, dtype=np.float32), np.ones((2, 2), np.float32))
    assert_sparse_equal(gs.copy(y), np.array([[0, 1], [2, 0]], np.int32))
    with pytest.raises(ValueError, match="scalar"):
        gs.full((2,), [1, 2], device=device)
    with pytest.raises(ValueError, match="scalar"):
        gs.full_like(y, np.ones(2))


# --------------------------------------------------------------------------
# Dtypes and memory
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_dtype_functions(device, data):
    x, dense = data.draw(inputs(device))
    other = data.draw(st.sampled_from([np.int8, np.float32, np.complex64, np.bool_]))
    scalar = data.draw(st.sampled_from([1, 1.5, 2j, True]))
    assert np.result_type(x, other, scalar) == np.result_type(dense, other, scalar)
    assert np.result_type(x, quiet(x.astype, other)) == np.result_type(dense, quiet(dense.astype, other))
    for casting in ("no", "safe", "same_kind", "unsafe"):
        assert np.can_cast(x, other, casting) == np.can_cast(dense, other, casting)


def test_memory_sharing(device):
    x = gs.fromdense(put(np.array([[0.0, 1.0], [2.0, 0.0]]), device), format="csr")
    for f in (np.may_share_memory, np.shares_memory):
        assert f(x, x) and f(x, x.data) and f(x.indptr, x)
        assert f(x, x.T)  # a transpose is a view of the same arrays
        assert not f(x, np.copy(x)) and not f(x, gs.copy(x).data)
        assert not f(x, put(np.zeros(3), device)) and not f(x, 1.0)


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_products(device, data):
    dtypes = (np.float64, np.complex128, np.int64)
    x, dense = data.draw(inputs(device, sparse_dim=2, max_dense_dim=0, fill=False, nan=False, dtypes=dtypes))
    tol = 1e-9
    differential(lambda a: np.dot(a, a.T), x, dense, rtol=tol)
    differential(lambda a: np.matmul(a.T, a), x, dense, rtol=tol)
    differential(lambda a: np.tensordot(a, np.flip(a), axes=2), x, dense, sparse=False, rtol=tol)
    differential(lambda a: np.kron(a, np.flip(a)), x, dense, rtol=tol)
    for f in (np.outer, np.linalg.outer):
        differential(lambda a: f(np.ravel(a), np.ravel(np.flip(a))), x, dense, rtol=tol)
    differential(lambda a: np.inner(a, a), x, dense, rtol=tol)
    differential(lambda a: np.vdot(a, np.flip(a)), x, dense, sparse=False, rtol=tol)
    differential(lambda a: np.linalg.vecdot(a, np.flip(a)), x, dense, rtol=tol)
    differential(lambda a: np.linalg.tensordot(a, np.flip(a), axes=([0], [0])), x, dense, rtol=tol)
    differential(lambda a: np.linalg.matmul(a, a.T), x, dense, rtol=tol)
    differential(lambda a: np.einsum("ij,kj->ik", a, np.flip(a)), x, dense, rtol=tol)


@EXAMPLES
@given(data=st.data())
def test_norms(device, data):
    x, dense = data.draw(inputs(device, min_ndim=1, max_ndim=2, fill=False, nan=False,
                                dtypes=(np.float64, np.complex128, np.int32)))
    ords = [None, 1, np.inf] if dense.ndim == 2 else [None, 1, 2, np.inf, 3]
    order = data.draw(st.sampled_from(ords))
    if dense.ndim == 2 and dense.size == 0 and order in (1, np.inf):
        # NumPy 2 gives 0.0 for the max over no columns (rows); gs.linalg.norm refuses instead
        try:
            result = np.linalg.norm(x, ord=order)
        except ValueError as exc:
            assert "zero-size" in str(exc)
            return
        compare(result, np.linalg.norm(dense, ord=order), sparse=False)
        return
    differential(lambda a: np.linalg.norm(a, ord=order), x, dense, sparse=False, rtol=1e-9)
    vector_ord = data.draw(st.sampled_from([1, 2, np.inf]))
    differential(lambda a: np.linalg.vector_norm(a, ord=vector_ord), x, dense, sparse=False, rtol=1e-9)
    if dense.ndim == 2:
        differential(lambda a: np.linalg.vector_norm(a, axis=1, keepdims=True), x, dense,
                     sparse=False, rtol=1e-9)
        matrix_ord = data.draw(st.sampled_from(["fro", 1, np.inf] if dense.size else ["fro"]))
        differential(lambda a: np.linalg.matrix_norm(a, ord=matrix_ord), x, dense, sparse=False, rtol=1e-9)


# --------------------------------------------------------------------------
# The protocol itself
# --------------------------------------------------------------------------

def _parameters(func):
    return inspect.signature(func).parameters


@pytest.mark.parametrize("func", sorted(FUNCTIONS, key=lambda f: f.__name__), ids=lambda f: f.__name__)
def test_signatures_follow_numpy(func):
    """Every adapter accepts NumPy's parameters under NumPy's names."""
    impl = FUNCTIONS[func]
    ours = _parameters(impl)
    if any(p.kind is p.VAR_KEYWORD for p in ours.values()):
        return
    for name, param in _parameters(func).items():
        if param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD):
            assert name in ours or param.kind is param.POSITIONAL_OR_KEYWORD and \
                list(_parameters(func)).index(name) == 0, f"{func.__name__}: no parameter {name!r}"
        elif param.kind is param.VAR_POSITIONAL:
            assert any(p.kind is p.VAR_POSITIONAL for p in ours.values()), func.__name__


def test_out_is_refused(device):
    x = gs.fromdense(put(np.eye(3), device))
    out = put(np.empty((3, 3)), device)
    calls = [lambda: np.concatenate([x], out=out), lambda: np.stack([x], out=out),
             lambda: np.take(x, [0], out=out), lambda: np.clip(x, 0, 1, out=out),
             lambda: np.trace(x, out=out), lambda: np.ptp(x, out=out),
             lambda: np.einsum("ij->ji", x, out=out), lambda: np.sum(x, out=out)]
    for call in calls:
        with pytest.raises(TypeError, match="out"):
            call()


#: Common NumPy functions without a sparse implementation, with the arguments they need.
NOT_IMPLEMENTED = [
    (np.cumsum, ()), (np.cumprod, ()), (np.nancumsum, ()), (np.sort, ()), (np.argsort, ()),
    (np.unique, ()), (np.diff, ()), (np.repeat, (2,)), (np.tile, (2,)), (np.append, ([1.0],)),
    (np.insert, (0, 1.0)), (np.delete, (0,)), (np.resize, ((4, 4),)), (np.searchsorted, (1.0,)),
    (np.median, ()), (np.percentile, (50,)), (np.quantile, (0.5,)), (np.average, ()),
    (np.cov, ()), (np.corrcoef, ()), (np.histogram, ()), (np.convolve, ([1.0],)),
    (np.gradient, ()), (np.isin, ([1.0],)), (np.partition, (1,)), (np.argpartition, (1,)),
    (np.compress, ([True],)), (np.put, ([0], [1.0])), (np.copyto, (1.0,)), (np.fill_diagonal, (1.0,)),
    (np.array2string, ()), (np.array_repr, ()), (np.array_str, ()), (np.min_scalar_type, ()),
    (np.einsum_path, ()), (np.block, ()), (np.trim_zeros, ()), (np.real_if_close, ()),
    (np.apply_along_axis, ()), (np.linalg.inv, ()), (np.linalg.solve, (np.ones(3),)),
    (np.linalg.det, ()), (np.linalg.svd, ()), (np.linalg.eigh, ()), (np.linalg.qr, ()),
    (np.linalg.matrix_power, (2,)), (np.linalg.multi_dot, ()), (np.fft.fft, ()),
]


@pytest.mark.parametrize("func, args", NOT_IMPLEMENTED, ids=lambda v: getattr(v, "__name__", ""))
def test_unimplemented_functions_raise_type_error(func, args):
    x = gs.fromdense(np.eye(3))
    name = f"{func.__module__}.{func.__name__}"
    assert func not in FUNCTIONS and func not in _linalg_numpy.FUNCTIONS and func not in NUMPY_SAFE
    if func is np.apply_along_axis:
        call = lambda: func(np.sum, 0, x)  # noqa: E731
    elif func in (np.block, np.linalg.multi_dot):
        call = lambda: func([x, x])  # noqa: E731
    elif func is np.einsum_path:
        call = lambda: func("ij->ji", x)  # noqa: E731
    else:
        call = lambda: func(x, *args)  # noqa: E731
    with pytest.raises(TypeError, match=rf"^{name.replace('.', '[.]')} is not implemented .*todense\(\)"):
        call()


def test_unimplemented_message_names_the_nearest_call():
    x = gs.fromdense(np.eye(2))
    with pytest.raises(TypeError, match="gpusparse.concatenate"):
        np.append(x, x)
    with pytest.raises(TypeError, match="svd_lowrank"):
        np.linalg.svd(x)


@EXAMPLES
@given(data=st.data())
def test_numpy_safe_functions(device, data):
    """The functions run by NumPy's own implementation give NumPy's answer."""
    x, dense = data.draw(inputs(device))
    assert NUMPY_SAFE == {np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.common_type}
    assert np.shape(x) == np.shape(dense) and np.ndim(x) == np.ndim(dense)
    assert np.size(x) == np.size(dense)
    for axis in range(dense.ndim):
        assert np.size(x, axis) == np.size(dense, axis)
    assert np.iscomplexobj(x) == np.iscomplexobj(dense) and np.isrealobj(x) == np.isrealobj(dense)
    if x.dtype != np.bool_:
        assert np.common_type(x) is np.common_type(dense)
        assert np.common_type(x, np.ones(1, np.float32)) is np.common_type(dense, np.ones(1, np.float32))


def test_foreign_types_are_not_claimed():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

    x = gs.fromdense(np.eye(2))
    assert np.concatenate([x, Other()]) == "other"


def _dispatched_functions():
    """Every NumPy function that takes part in ``__array_function__`` (numpy, numpy.linalg, numpy.fft)."""
    found = {}
    for module in (np, np.linalg, np.fft):
        for name in dir(module):
            f = getattr(module, name)
            if type(f).__name__ == "_ArrayFunctionDispatcher":
                found[f"{f.__module__}.{f.__name__}"] = f
    return [found[k] for k in sorted(found)]


def test_every_numpy_function_is_implemented_safe_or_refused():
    """No NumPy function reaches NumPy's implementation (and ``__array__``) unless it is on the allow-list."""
    from gpusparse.ops.numpy.functions import array_function
    x = gs.fromdense(np.eye(2))
    functions = _dispatched_functions()
    assert len(functions) > 200
    refused = 0
    for func in functions:
        if func in FUNCTIONS or func in _linalg_numpy.FUNCTIONS or func in NUMPY_SAFE:
            continue
        name = f"{func.__module__}.{func.__name__}"
        with pytest.raises(TypeError, match=rf"^{name.replace('.', '[.]')} is not implemented"):
            array_function(func, (type(x),), (x,), {})
        refused += 1
    assert refused < len(functions) - 100  # more than 100 are implemented or safe
