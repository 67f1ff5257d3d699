"""Dask arrays of gpusparse chunks, on Dask's threaded scheduler: the operation matrix.

Every operation runs three ways -- on the Dask array of chunks, on the whole
gpusparse array, on the dense NumPy oracle -- and the Dask result must be
of the whole array's kind (sparse or dense) and dtype, with the oracle's
values. The same functions serve all three: NumPy's functions reach Dask
and gpusparse through their protocols.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import gpusparse as gs  # noqa: E402
from _helpers import assert_dense_equal, assert_sparse_equal, put  # noqa: E402
from gpusparse._device import to_host  # noqa: E402
from gpusparse.containers import SparseArray  # noqa: E402
from gpusparse.dask import from_array  # noqa: E402
from strategies import coo_cases  # noqa: E402


def _compute(value):
    return value.compute() if isinstance(value, da.Array) else value


def check_like_whole(fn, x, chunks, *, rtol=None, wrap=from_array):
    """``fn`` on the Dask array of ``x``'s chunks equals ``fn(x)`` and ``fn(dense)``."""
    dense = to_host(x.todense())
    X = wrap(x, chunks)
    try:
        whole = fn(x)
    except (ValueError, TypeError) as exc:  # what the whole array refuses, its chunks refuse
        with pytest.raises(type(exc)):
            _compute(fn(X))
        return None
    lazy = fn(X)
    result = _compute(lazy)
    with np.errstate(all="ignore"):
        oracle = fn(dense)
    if isinstance(whole, SparseArray):
        assert isinstance(result, SparseArray), f"dask gave {type(result).__name__}, the whole array sparse"
        assert result.device == x.device
        assert result.dtype == whole.dtype
        assert_sparse_equal(result, oracle, rtol=rtol, check_dtype=False)
    else:
        assert not isinstance(result, SparseArray), "dask gave a sparse array, the whole array a dense one"
        assert_dense_equal(to_host(result), np.asarray(oracle), rtol=rtol, check_dtype=False)
    if isinstance(lazy, da.Array):
        assert lazy.shape == np.shape(oracle)
        assert lazy.dtype == result.dtype, f"dask predicted {lazy.dtype}, computed {result.dtype}"
    return result


def _rechunk(a, chunks):
    return a.rechunk(chunks) if isinstance(a, da.Array) else a


def _split_every(name, **kwargs):
    """The reduction ``name`` with Dask's ``split_every=2`` (a tree of combines) where ``a`` is Dask."""
    def fn(a):
        if isinstance(a, da.Array):
            return getattr(da, name)(a, split_every=2, **kwargs)
        return getattr(np, name)(a, **kwargs)
    return fn


MASK = np.array([True, False, True, True, False, True])

#: (id, fn) on a (7, 6) array; fn works on Dask, gpusparse and NumPy arrays alike.
OPERATIONS = [
    # elementwise, with scalars, broadcasting and other arrays
    ("add_scalar", lambda a: a + 1),
    ("mul_scalar", lambda a: a * 2.5),
    ("neg_abs", lambda a: abs(-a)),
    ("sin", np.sin),
    ("add_self", lambda a: a + a),
    ("mul_shifted", lambda a: a * a[::-1]),
    ("broadcast_row", lambda a: a * a[:1]),
    ("broadcast_col", lambda a: a - a[:, 2:3]),
    ("compare", lambda a: a > 0.5),
    ("where", lambda a: np.where(a > 0.5, a, 0)),
    ("astype", lambda a: a.astype(np.float32)),
    ("maximum", lambda a: np.maximum(a, 0.3)),
    # reductions
    ("sum", np.sum),
    ("sum_0", lambda a: np.sum(a, axis=0)),
    ("sum_1_keepdims", lambda a: np.sum(a, axis=1, keepdims=True)),
    ("sum_split_every", _split_every("sum", axis=0)),
    ("max_1", lambda a: np.max(a, axis=1)),
    ("max_split_every", _split_every("max", axis=1)),
    ("min", np.min),
    ("prod_1", lambda a: np.prod(a, axis=1)),
    ("mean_0", lambda a: np.mean(a, axis=0)),
    ("var", np.var),
    ("std_1", lambda a: np.std(a, axis=1)),
    ("any_0", lambda a: np.any(a > 0.5, axis=0)),
    ("all_1", lambda a: np.all(a > 0.1, axis=1)),
    ("argmax", np.argmax),
    ("nansum_0", lambda a: np.nansum(a, axis=0)),
    ("count_nonzero_0", lambda a: np.count_nonzero(a, axis=0)),
    # indexing
    ("slice", lambda a: a[1:5, ::2]),
    ("slice_reversed", lambda a: a[::-1, 1:]),
    ("integer", lambda a: a[2]),
    ("integer_list", lambda a: a[[0, 3, 5, 3]]),
    ("boolean", lambda a: a[:, MASK]),
    ("newaxis", lambda a: a[None, :, 1]),
    ("ellipsis", lambda a: a[..., -1]),
    # shape
    ("T", lambda a: a.T),
    ("transpose", lambda a: np.transpose(a, (1, 0))),
    ("reshape", lambda a: a.reshape(42)),
    ("reshape_2d", lambda a: a.reshape(7, 2, 3)),
    ("moveaxis", lambda a: np.moveaxis(a, 0, 1)),
    ("squeeze", lambda a: np.squeeze(a[None], axis=0)),
    ("expand_dims", lambda a: np.expand_dims(a, 1)),
    ("concatenate_0", lambda a: np.concatenate([a, a[:2]], axis=0)),
    ("concatenate_1", lambda a: np.concatenate([a, a], axis=1)),
    ("stack", lambda a: np.stack([a, a], axis=1)),
    ("rechunk", lambda a: _rechunk(a, (2, 5))),
    ("rechunk_one", lambda a: _rechunk(a, -1)),
    # products with sparse operands
    ("matmul_self_T", lambda a: a @ a.T),
    ("tensordot", lambda a: np.tensordot(a, a, axes=((0,), (0,)))),
    ("einsum", lambda a: np.einsum("ij,ij->i", a, a)),
]


@pytest.fixture(autouse=True)
def _threads(device):
    """Dask's threaded scheduler with two threads.

    One thread on the emulated CUDA device: the emulator compiles ``__shared__``
    memory as function-local statics, so two host threads launching one kernel
    at once would share it (a GPU gives every block its own).
    """
    from gpusparse._kernels import cuda_emulation
    workers = 1 if device.is_cuda and cuda_emulation.enabled() else 2
    with dask.config.set(scheduler="threads", num_workers=workers):
        yield


def _matrix(device, kind):
    x = gs.random((7, 6), density=0.4, device=device, seed=3)
    if kind == "fill":
        return gs.COO(x.coords, x.data, x.shape, fill_value=1.5, device=device)
    return x if kind == "coo" else x.asformat(kind)


KINDS = ["coo", "csr", "csc", "fill"]


#: (operation, kind) pairs Dask cannot compute on sparse chunks (see docs/dask.md): var and std
#: with a nonzero fill value, where Dask divides partial sums by dense per-chunk counts.
DENSE_INTERMEDIATES = {("std_1", "fill")}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,fn", OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_operation_matrix(device, kind, name, fn):
    x = _matrix(device, kind)
    if (name, kind) in DENSE_INTERMEDIATES:
        fn(x)  # the whole array computes; the chunks raise, naming the way out
        with pytest.raises(ValueError, match="dense result.*auto_densify"):
            fn(from_array(x, (3, 4))).compute()
        return
    check_like_whole(fn, x, (3, 4))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_reductions(device, kind, axis):
    """``argmax``/``argmin`` over every axis work; along one axis they raise (a documented limitation).

    Dask keeps per-chunk (value, index) records that sparse chunks cannot
    hold; the refusal says so and names the functions, instead of an error
    about concatenation or indexing from inside Dask.
    """
    x = _matrix(device, kind)
    check_like_whole(np.argmax, x, (3, 4))
    check_like_whole(lambda a: np.argmin(a.T), x, (3, 4))
    np.argmax(x, axis=axis)
    refusal = "argmax/argmin .*along an axis is not supported on Dask arrays of gpusparse chunks"
    for func in (np.argmax, np.argmin, da.nanargmax):
        with pytest.raises(ValueError, match=refusal):
            func(from_array(x, (3, 4)), axis=axis).compute()


@pytest.mark.parametrize("kind", ["coo", "csr"])
def test_dask_from_array_chunks_agree(device, kind):
    """``dask.array.from_array(x, asarray=False)`` slices in tasks; the operations agree with it too."""
    x = _matrix(device, kind)

    def wrap(x, chunks):
        return da.from_array(x, chunks=chunks, asarray=False, meta=gs.zeros((0, 0), device=x.device))
    for name in ("sum_0", "T", "slice", "concatenate_1", "matmul_self_T"):
        check_like_whole(dict(OPERATIONS)[name], x, (4, 3), wrap=wrap)


@pytest.mark.parametrize("kind", KINDS)
def test_products_with_dense_dask(device, kind):
    x = _matrix(device, kind)
    rng = np.random.default_rng(0)
    v = put(rng.random(6), device)
    m = put(rng.random((3, 7)), device)
    X = from_array(x, (3, 4))
    V = da.from_array(v, chunks=4)
    M = da.from_array(m, chunks=(3, 3))
    dense = to_host(x.todense())
    if kind == "fill":  # as for the whole array: products need a zero fill value
        with pytest.raises(ValueError, match="fill value"):
            (X @ V).compute()
        return
    assert_dense_equal(to_host((X @ V).compute()), dense @ to_host(v), check_dtype=False)
    assert_dense_equal(to_host((M @ X).compute()), to_host(m) @ dense, check_dtype=False)
    from gpusparse._kernels import cuda_emulation
    if device.is_cuda and cuda_emulation.enabled():
        return  # da.tensordot reads __array_priority__ of the chunks: CuPy has it, the emulated arrays not
    assert_dense_equal(to_host(da.tensordot(X, V, axes=1).compute()), dense @ to_host(v), check_dtype=False)


@pytest.mark.parametrize("kind", ["coo", "csr"])
def test_compute_persist_and_meta(device, kind):
    x = _matrix(device, kind)
    X = from_array(x, (3, 4))
    meta = X._meta
    assert isinstance(meta, SparseArray) and meta.format == x.format
    assert (meta.ndim, meta.dtype, meta.device, meta.size) == (2, x.dtype, x.device, 0)
    y = X.persist().compute()
    assert type(y) is type(x) and y.fill_value == x.fill_value
    assert_sparse_equal(y, to_host(x.todense()))
    # the chunks are the blocks, not densified
    assert all(isinstance(b, SparseArray) for b in dask.compute(*X.to_delayed().ravel()))


def test_hybrid_and_3d(device):
    """Dense trailing dimensions and N-d COO through reductions, slicing and transposition."""
    x = gs.random((5, 4, 3), density=0.3, device=device, seed=1)
    hybrid = gs.COO(x.coords[:2], put(np.arange(x.nnz * 3.0).reshape(x.nnz, 3), device), (5, 4, 3),
                    device=device)
    for arr in (x, hybrid, hybrid.tocsr()):  # the hybrid CSR keeps its layout in the meta too
        for fn in (lambda a: np.sum(a, axis=(0, 2)), lambda a: np.max(a, axis=1), lambda a: a.T,
                   lambda a: a[1:4, :, ::2], lambda a: np.concatenate([a, a], axis=2), lambda a: a * 2 + 1):
            check_like_whole(fn, arr, (2, 3, 2))


_ELEMENTWISE = [lambda a: a * 2, lambda a: a + a[::-1], lambda a: a == a, lambda a: abs(a) - 1]
_REDUCTIONS = ["sum", "max", "min", "prod", "any", "all"]


@given(case=coo_cases(min_ndim=1, max_ndim=3, max_side=5, dtypes=[np.dtype(t) for t in
                      ("bool", "int64", "float32", "float64", "complex128")]),
       data=st.data())
def test_random_cases(device, case, data):
    """Random shapes (0- and 1-size dims), dtypes, duplicates, fill values and chunks."""
    x = case.build(device)
    chunks = tuple(data.draw(st.integers(1, max(side, 1)), label=f"chunk {d}") for d, side in enumerate(case.shape))
    fmt = data.draw(st.sampled_from(["coo", "csr", "csc"] if x.sparse_dim == 2 else ["coo"]), label="format")
    x = x.asformat(fmt)
    op = data.draw(st.integers(0, len(_ELEMENTWISE) + len(_REDUCTIONS) + 1), label="operation")
    if op < len(_ELEMENTWISE):
        fn = _ELEMENTWISE[op]
    elif op < len(_ELEMENTWISE) + len(_REDUCTIONS):
        name = _REDUCTIONS[op - len(_ELEMENTWISE)]
        if name in ("max", "min") and (x.dtype.kind == "c" or 0 in x.shape):
            name = "sum"
        axis = data.draw(st.sampled_from([None] + list(range(x.ndim))), label="axis")
        keepdims = data.draw(st.booleans(), label="keepdims")

        def fn(a, name=name, axis=axis, keepdims=keepdims):
            if isinstance(a, da.Array):
                return getattr(da, name)(a, axis=axis, keepdims=keepdims, split_every=2)
            return getattr(np, name)(a, axis=axis, keepdims=keepdims)
    elif op == len(_ELEMENTWISE) + len(_REDUCTIONS):
        def fn(a):
            return a[::-1] if a.ndim == 1 else a[::-1, ...].T
    else:
        def fn(a):
            return np.concatenate([a, a], axis=a.ndim - 1)
    check_like_whole(fn, x, chunks)


def test_concatenate_unequal_fill_values(device):
    """Chunks whose fill values differ are joined (``da.concatenate`` of ``x + 1`` and ``x``)."""
    x = _matrix(device, "coo")
    X = from_array(x, (3, 4))
    result = da.concatenate([X + 1, X], axis=0).compute()
    assert isinstance(result, SparseArray)
    dense = to_host(x.todense())
    assert_sparse_equal(result, np.concatenate([dense + 1, dense]))


def test_chunk_to_dense(device):
    """``map_blocks(todense)`` is the explicit way to a dense Dask array."""
    x = _matrix(device, "fill")
    X = from_array(x, (3, 4))
    dense_meta = put(np.empty((0, 0)), device)
    Y = X.map_blocks(lambda b: b.todense(), meta=dense_meta)
    assert_dense_equal(to_host(Y.compute()), to_host(x.todense()))


def test_unsupported_operations_raise(device):
    """What gpusparse does not do on chunks raises TypeError naming it, instead of densifying."""
    X = from_array(_matrix(device, "coo"), (3, 4))
    with pytest.raises(TypeError, match="cumsum"):
        X.cumsum(axis=0).compute()
    with pytest.raises(TypeError, match="item assignment"):
        da.percentile(X[:, 0], 50).compute()
