"""Exchange with torch, SciPy, cupyx, pydata sparse and JAX.

For every peer: round trips of random arrays (N-d, hybrid, 0-size and 1-size
dimensions, duplicates, every dtype the peer holds) compared with the dense
NumPy oracle, the peer's own densification and our ``todense()``; zero copy
proven by comparing data pointers; ``copy=False`` raising exactly where a
copy is unavoidable and ``copy=True`` never sharing; ``asarray`` and
``from_foreign`` recognising each type without importing any library.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from _helpers import assert_dense_equal, assert_sparse_equal, check_invariants
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import coo_cases

import gpusparse
from gpusparse import COO, CSR, asarray
from gpusparse._device import Device, cuda_status
from gpusparse._dtypes import VALUE_DTYPES
from gpusparse.ops.interop import (
    from_cupyx,
    from_foreign,
    from_jax,
    from_pydata,
    from_scipy,
    from_torch,
    to_cupyx,
    to_jax,
    to_pydata,
    to_scipy,
    to_torch,
)

#: The number of examples comes from the Hypothesis profile (tests/conftest.py).
SETTINGS = settings(deadline=None)

#: What JAX holds while jax_enable_x64 is off: no 64-bit integers or floats (complex64 is two 32-bit floats).
WIDE_DTYPES = tuple(np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128))
NARROW_DTYPES = tuple(d for d in VALUE_DTYPES if d not in WIDE_DTYPES)
#: JAX holds bool sparse arrays but cannot densify them (its scatter-add refuses bool).
JAX_DENSIFIES = tuple(d for d in NARROW_DTYPES if d != np.bool_)
#: Dtypes torch stores in sparse tensors but cannot densify or coalesce.
TORCH_LIMITED = tuple(np.dtype(t) for t in (np.uint16, np.uint32, np.uint64))


def ptr(arr) -> int:
    """Address of the first element of a NumPy array."""
    return arr.__array_interface__["data"][0]


def at(arr, address: int) -> bool:
    """``arr`` is empty or starts at ``address``: zero copy of its memory."""
    return arr.size == 0 or ptr(arr) == address


def components(x) -> tuple:
    return (x.coords, x.data) if x.format == "coo" else (x.indptr, x.indices, x.data)


def assert_shared(x, y) -> None:
    """Every non-empty component of ``x`` starts where the one of ``y`` does."""
    for a, b in zip(components(x), components(y)):
        if a.size:
            assert ptr(a) == ptr(b)


def assert_disjoint(x, peer_arrays) -> None:
    """No component of ``x`` overlaps any of ``peer_arrays``."""
    for a in components(x):
        for b in peer_arrays:
            assert not np.may_share_memory(a, np.asarray(b))


# --------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def torch_coo(torch, coords, data, shape):
    return torch.sparse_coo_tensor(torch.from_numpy(coords), torch.from_numpy(data), shape,
                                   check_invariants=False)


@SETTINGS
@given(case=coo_cases(fill=False, max_dense_dim=2), coalesce=st.booleans())
def test_torch_coo_round_trip(torch, case, coalesce):
    t = torch_coo(torch, case.coords, case.data, case.shape)
    if coalesce and case.dtype not in TORCH_LIMITED:
        t = t.coalesce()
    expected = case.dense()
    x = from_torch(t)
    assert_sparse_equal(x, expected)
    assert x.is_coalesced() == t.is_coalesced()
    assert x.sparse_dim == t.sparse_dim() and x.dense_dim == t.dense_dim()
    if case.dtype not in TORCH_LIMITED:
        assert_dense_equal(t.to_dense().numpy(), expected)
    indices, values = t._indices(), t._values()
    if indices.is_contiguous() and values.is_contiguous():
        assert at(x.coords, indices.data_ptr()) and at(x.data, values.data_ptr())
        assert_shared(from_torch(t, copy=False), x)
    else:  # torch's coalesce() may leave the indices a strided view of a larger buffer
        with pytest.raises(ValueError, match="not C-contiguous"):
            from_torch(t, copy=False)
    back = to_torch(x, copy=False)
    assert back.layout == torch.sparse_coo and back.is_coalesced() == x.is_coalesced()
    assert tuple(back.shape) == case.shape and back.dense_dim() == x.dense_dim
    assert at(x.coords, back._indices().data_ptr()) and at(x.data, back._values().data_ptr())
    if case.dtype not in TORCH_LIMITED:
        assert_dense_equal(back.to_dense().numpy(), expected)
    again = from_torch(back, copy=False)
    assert_shared(again, x)
    assert again.is_coalesced() == x.is_coalesced()


@SETTINGS
@given(case=coo_cases(sparse_dim=2, max_dense_dim=1, fill=False), fmt=st.sampled_from(["csr", "csc"]))
def test_torch_compressed_round_trip(torch, case, fmt):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    t = to_torch(x, copy=False)
    assert t.layout == (torch.sparse_csr if fmt == "csr" else torch.sparse_csc)
    if fmt == "csr":
        pointers, indices = t.crow_indices(), t.col_indices()
    else:
        pointers, indices = t.ccol_indices(), t.row_indices()
    assert at(x.indptr, pointers.data_ptr()) and at(x.indices, indices.data_ptr())
    assert at(x.data, t.values().data_ptr())
    if case.dtype not in TORCH_LIMITED:
        assert_dense_equal(t.to_dense().numpy(), expected)
    back = from_torch(t, copy=False)
    assert type(back) is type(x)
    assert_shared(back, x)
    assert_sparse_equal(back, expected)


@pytest.mark.parametrize("layout", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_torch_made_compressed_is_shared(torch, layout, index_dtype, rng):
    dense = rng.random((5, 7)) * (rng.random((5, 7)) < 0.4)
    t = torch.from_numpy(dense)
    t = t.to_sparse_csr() if layout == "csr" else t.to_sparse_csc()
    if index_dtype == "int32":
        t = (torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor)(
            *(a.to(torch.int32) for a in (t.crow_indices() if layout == "csr" else t.ccol_indices(),
                                           t.col_indices() if layout == "csr" else t.row_indices())),
            t.values(), t.shape, check_invariants=True)
    x = from_torch(t, copy=False)
    assert x.format == layout and x.index_dtype == np.dtype(index_dtype)
    assert ptr(x.data) == t.values().data_ptr()
    assert_sparse_equal(x, dense)


def test_torch_uncoalesced_csr_is_made_canonical(torch):
    t = torch.sparse_csr_tensor(torch.tensor([0, 3, 3]), torch.tensor([2, 0, 2]),
                                torch.tensor([1.0, 2.0, 4.0]), (2, 3), check_invariants=False)
    x = from_torch(t)
    assert_sparse_equal(x, np.array([[2.0, 0.0, 5.0], [0.0, 0.0, 0.0]], dtype=np.float32))
    with pytest.raises(ValueError, match="copy=False.*canonical order"):
        from_torch(t, copy=False)


def test_torch_uncoalesced_hybrid_sums_duplicates(torch):
    t = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1]]), torch.arange(6.0).reshape(3, 2), (3, 2),
                                check_invariants=False)
    x = from_torch(t, copy=False)
    assert not x.is_coalesced() and x.sparse_dim == 1 and x.dense_dim == 1
    expected = t.to_dense().numpy()
    assert_sparse_equal(x, expected)
    assert_dense_equal(to_torch(x).to_dense().numpy(), expected)
    y = to_torch(x.coalesce())
    assert y.is_coalesced()
    assert_dense_equal(y.to_dense().numpy(), expected)


def test_torch_no_sparse_dim_with_several_blocks(torch):
    t = torch.sparse_coo_tensor(torch.zeros((0, 3), dtype=torch.int64), torch.ones(3, 2), (2,),
                                check_invariants=False)
    x = from_torch(t)
    assert x.nnz == 1
    assert_sparse_equal(x, t.to_dense().numpy())
    with pytest.raises(ValueError, match="copy=False"):
        from_torch(t, copy=False)


def test_torch_requires_grad_is_detached(torch):
    values = torch.tensor([1.0, 2.0], requires_grad=True)
    t = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), values, (3,), check_invariants=False)
    x = from_torch(t, copy=False)
    assert ptr(x.data) == values.data_ptr()
    assert_sparse_equal(x, np.array([1.0, 0.0, 2.0], dtype=np.float32))


def test_torch_copy_true_shares_nothing(torch, rng):
    dense = (rng.random((4, 5)) < 0.5) * rng.random((4, 5))
    for t in (torch.from_numpy(dense).to_sparse(), torch.from_numpy(dense).to_sparse_csr()):
        x = from_torch(t, copy=True)
        if x.format == "coo":
            peer = (t._indices(), t._values())
        else:
            peer = (t.crow_indices(), t.col_indices(), t.values())
        assert_disjoint(x, [p.numpy() for p in peer])
        assert_sparse_equal(x, dense)
        back = to_torch(x, copy=True)
        values = back._values() if x.format == "coo" else back.values()
        assert values.data_ptr() != ptr(x.data)
        assert_dense_equal(back.to_dense().numpy(), dense)


def test_torch_other_layouts_go_through_coo(torch, rng):
    dense = (rng.random((4, 6)) < 0.5) * rng.random((4, 6))
    bsr = torch.from_numpy(dense).to_sparse_bsr((2, 2))
    x = from_torch(bsr)
    assert x.format == "coo"
    assert_sparse_equal(x, dense)
    with pytest.raises(ValueError, match="copy=False"):
        from_torch(bsr, copy=False)
    batched = torch.from_numpy(np.stack([np.eye(3), 2 * np.eye(3)])).to_sparse_csr()
    y = from_torch(batched)
    assert_sparse_equal(y, np.stack([np.eye(3), 2 * np.eye(3)]))


def test_torch_lazy_conjugate_bit(torch):
    from gpusparse.ops.interop._torch import _strided
    lazy = torch.tensor([1 + 2j, 3j]).conj()
    assert lazy.is_conj()
    np.testing.assert_array_equal(_strided(lazy, "values", None), [1 - 2j, -3j])
    with pytest.raises(ValueError, match="conjugation"):
        _strided(lazy, "values", False)


def test_torch_errors(torch):
    with pytest.raises(TypeError, match="dense"):
        from_torch(torch.ones(3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        from_torch(np.ones(3))
    with pytest.raises(TypeError, match="copy"):
        from_torch(torch.ones(2).to_sparse(), copy="no")
    with pytest.raises(TypeError, match="bfloat16"):
        from_torch(torch.ones(2, dtype=torch.bfloat16).to_sparse())
    x = COO([[0]], [1.0], shape=(2,), fill_value=1.0, device="cpu")
    with pytest.raises(ValueError, match="fill value"):
        to_torch(x)


# Flags a peer claims falsely: duplicates flagged unique, unsorted coordinates
# flagged sorted. Each peer sums the duplicates in its own products and
# densification; a container that trusted the flags would skip the summation.
FALSE_CLAIMS = {
    "duplicates": (np.array([[0, 2, 0], [1, 0, 1]]), np.array([1.0, 5.0, 1.0]), (3, 2)),
    "unsorted": (np.array([[2, 0], [0, 1]]), np.array([5.0, 1.0]), (3, 2)),
    "unsorted duplicates": (np.array([[2, 0, 2, 1], [1, 1, 1, 0]]), np.array([3.0, 4.0, 4.0, 2.0]), (3, 2)),
}


def assert_like_peer(x, dense, product) -> None:
    """``x`` has honest flags, ``dense`` as its dense form and ``product`` as ``x @ ones``."""
    check_invariants(x)  # flags honest
    assert_dense_equal(x.todense(), dense)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpusparse.GpuSparseEfficiencyWarning)  # an unsorted COO product
        assert_dense_equal(x @ np.ones(x.shape[1], dtype=x.dtype), product)
    assert_dense_equal(x.coalesce().todense(), dense)


@pytest.mark.parametrize("case", list(FALSE_CLAIMS))
def test_torch_false_coalesced_claim_is_not_trusted(torch, case):
    coords, data, shape = FALSE_CLAIMS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that it takes is_coalesced on trust
        t = torch.sparse_coo_tensor(torch.from_numpy(coords), torch.from_numpy(data), shape, is_coalesced=True)
    assert t.is_coalesced()
    x = from_torch(t)
    assert not x.is_coalesced()
    ones = torch.ones(shape[1], 1, dtype=torch.float64)
    assert_like_peer(x, t.to_dense().numpy(), (t @ ones).numpy().ravel())
    assert_dense_equal(to_torch(x).to_dense().numpy(), t.to_dense().numpy())


def test_torch_true_coalesced_claim_is_kept(torch, rng):
    t = torch.from_numpy(rng.random((5, 4)) * (rng.random((5, 4)) < 0.5)).to_sparse()
    x = from_torch(t)
    assert x.is_coalesced() and at(x.coords, t._indices().data_ptr())
    assert_sparse_equal(x, t.to_dense().numpy())


# --------------------------------------------------------------------------
# SciPy
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sp():
    return pytest.importorskip("scipy.sparse")


@SETTINGS
@given(case=coo_cases(min_ndim=1, max_ndim=3, max_dense_dim=0, fill=False),
       kind=st.sampled_from(["array", "matrix"]), coalesce=st.booleans())
def test_scipy_coo_round_trip(sp, case, kind, coalesce):
    if len(case.shape) != 2:
        kind = "array"
    x = case.build("cpu")
    x = x.coalesce() if coalesce else x
    expected = case.dense()
    m = to_scipy(x, kind=kind, copy=False)
    assert m.format == "coo" and isinstance(m, sp.sparray) == (kind == "array")
    assert m.shape == case.shape and m.dtype == case.dtype
    assert m.has_canonical_format == x.is_coalesced()
    assert_dense_equal(m.toarray(), expected)
    assert at(x.coords, ptr(m.coords[0])) and at(x.data, ptr(m.data))
    back = from_scipy(m, copy=False)  # the coordinate rows lie back to back: still shared
    assert_shared(back, x)
    assert_sparse_equal(back, expected)
    assert back.is_coalesced() or not x.is_coalesced()


@SETTINGS
@given(case=coo_cases(sparse_dim=2, max_dense_dim=0, fill=False),
       fmt=st.sampled_from(["csr", "csc"]), kind=st.sampled_from(["array", "matrix"]))
def test_scipy_compressed_round_trip(sp, case, fmt, kind):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    m = to_scipy(x, kind=kind, copy=False)
    assert m.format == fmt and isinstance(m, sp.sparray) == (kind == "array")
    assert m.has_canonical_format and m.has_sorted_indices
    assert ptr(m.indptr) == ptr(x.indptr)
    assert_dense_equal(m.toarray(), expected)
    assert at(x.indices, ptr(m.indices)) and at(x.data, ptr(m.data))
    back = from_scipy(m, copy=False)
    assert_shared(back, x)
    assert_sparse_equal(back, expected)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [(6, 5), (1, 7), (0, 3), (4, 1)])
def test_scipy_made_arrays(sp, fmt, dtype, shape, rng):
    values = rng.integers(1, 9, size=shape) + (1j if dtype == "complex128" else 0)
    dense = ((rng.random(shape) < 0.4) * values).astype(dtype)
    m = sp.csr_array(dense).asformat(fmt)
    x = from_scipy(m)
    assert x.format == fmt
    assert_sparse_equal(x, m.toarray())
    if fmt != "coo":
        y = from_scipy(m, copy=False)
        assert ptr(y.indptr) == ptr(m.indptr)
        if m.nnz:
            assert ptr(y.data) == ptr(m.data) and ptr(y.indices) == ptr(m.indices)
    elif m.nnz:  # SciPy made the rows separately: stacking them copies
        with pytest.raises(ValueError, match="one index array per dimension"):
            from_scipy(m, copy=False)
        assert ptr(x.data) == ptr(m.data)


def test_scipy_int64_indices_are_kept(sp):
    m = sp.csr_array(np.eye(4))
    m.indptr, m.indices = m.indptr.astype(np.int64), m.indices.astype(np.int64)
    x = from_scipy(m, copy=False)
    assert x.index_dtype == np.int64 and ptr(x.indices) == ptr(m.indices)
    back = to_scipy(x, copy=False)
    assert back.indices.dtype == np.int64 and ptr(back.indices) == ptr(x.indices)


def test_scipy_non_canonical_compressed(sp):
    m = sp.csr_matrix((np.array([1.0, 2.0, 4.0]), np.array([2, 0, 2]), np.array([0, 3, 3])), shape=(2, 3))
    assert not m.has_canonical_format
    x = from_scipy(m)
    assert_sparse_equal(x, m.toarray())
    with pytest.raises(ValueError, match="canonical order"):
        from_scipy(m, copy=False)


def test_scipy_mixed_index_dtypes_are_cast(sp):
    m = sp.csr_array(np.eye(2))
    m.indptr, m.indices = m.indptr.astype(np.int64), m.indices.astype(np.int32)
    x = from_scipy(m)
    assert x.indptr.dtype == x.indices.dtype
    assert_sparse_equal(x, np.eye(2))
    with pytest.raises(ValueError, match="dtype"):
        from_scipy(m, copy=False)


def test_scipy_uncoalesced_coo_flags(sp):
    m = sp.coo_array((np.array([1, 2, 3]), (np.array([1, 0, 1]), np.array([0, 2, 0]))), shape=(2, 3))
    x = from_scipy(m)
    assert not x.is_coalesced()
    assert_sparse_equal(x, m.toarray())
    m.sum_duplicates()
    y = from_scipy(m)
    assert y.is_coalesced()
    assert_sparse_equal(y, m.toarray())


@pytest.mark.parametrize("fmt", ["dia", "lil", "dok", "bsr"])
def test_scipy_other_formats(sp, fmt, rng):
    dense = (rng.random((4, 6)) < 0.5) * rng.random((4, 6))
    m = sp.csr_array(dense).asformat(fmt)
    x = from_scipy(m)
    assert x.format == "csr"
    assert_sparse_equal(x, dense)
    with pytest.raises(ValueError, match="copy=False"):
        from_scipy(m, copy=False)


def test_scipy_copy_true_shares_nothing(sp, rng):
    dense = (rng.random((4, 5)) < 0.5) * rng.random((4, 5))
    m = sp.csr_array(dense)
    x = from_scipy(m, copy=True)
    assert_disjoint(x, [m.indptr, m.indices, m.data])
    back = to_scipy(x, copy=True)
    assert_disjoint(x, [back.indptr, back.indices, back.data])
    assert_dense_equal(back.toarray(), dense)


def test_scipy_errors(sp):
    hybrid = COO([[0, 1]], np.ones((2, 3)), device="cpu")
    with pytest.raises(ValueError, match="dense dimensions"):
        to_scipy(hybrid)
    with pytest.raises(ValueError, match="fill value"):
        to_scipy(COO([[0]], [1.0], shape=(2,), fill_value=np.nan, device="cpu"))
    with pytest.raises(ValueError, match="kind"):
        to_scipy(COO([[0]], [1.0], device="cpu"), kind="list")
    with pytest.raises(ValueError, match="2-d"):
        to_scipy(COO([[0], [0], [0]], [1.0], device="cpu"), kind="matrix")
    with pytest.raises(TypeError, match="scipy.sparse"):
        from_scipy(np.eye(2))


@pytest.mark.gpu
def test_scipy_refuses_device_arrays(sp):
    if cuda_status().device_count == 0:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    x = COO([[0, 1]], [1.0, 2.0], device="cuda")
    with pytest.raises(ValueError, match=r"x.to\('cpu'\)"):
        to_scipy(x)


# --------------------------------------------------------------------------
# pydata sparse
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sparse():
    return pytest.importorskip("sparse")


def same_fill(a, b) -> bool:
    """Equal fill values, NaN matching NaN."""
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


@SETTINGS
@given(case=coo_cases(max_dense_dim=1), coalesce=st.booleans())
def test_pydata_coo_round_trip(sparse, case, coalesce):
    x = case.build("cpu")
    x = x.coalesce() if coalesce else x
    expected = case.dense()
    needs_copy = x.dense_dim > 0 or not x.is_coalesced()
    s = to_pydata(x)
    assert isinstance(s, sparse.COO) and s.shape == case.shape
    assert same_fill(s.fill_value, x.fill_value) and s.dtype == case.dtype
    assert_dense_equal(s.todense(), expected)
    if needs_copy:
        with pytest.raises(ValueError, match="copy=False"):
            to_pydata(x, copy=False)
    else:
        shared = to_pydata(x, copy=False)
        if x.nnz:  # pydata replaces empty coordinates by its own
            assert at(x.coords, ptr(shared.coords)) and at(x.data, ptr(shared.data))
    back = from_pydata(s, copy=False)
    assert back.is_coalesced() and same_fill(back.fill_value, x.fill_value)
    assert at(back.coords, ptr(s.coords)) and at(back.data, ptr(s.data))
    assert_sparse_equal(back, expected)


@SETTINGS
@given(case=coo_cases(sparse_dim=2, max_dense_dim=0), fmt=st.sampled_from(["csr", "csc"]))
def test_pydata_gcxs_round_trip(sparse, case, fmt):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    s = to_pydata(x, copy=False)
    assert isinstance(s, sparse.GCXS) and s.compressed_axes == ((0,) if fmt == "csr" else (1,))
    assert same_fill(s.fill_value, x.fill_value)
    assert_dense_equal(s.todense(), expected)
    assert ptr(s.indptr) == ptr(x.indptr)
    back = from_pydata(s, copy=False)
    assert type(back) is type(x)
    assert_shared(back, x)
    assert_sparse_equal(back, expected)


def test_pydata_hybrid_compressed_becomes_coo(sparse):
    x = COO([[0, 1, 1], [1, 0, 2]], np.arange(6.0).reshape(3, 2), shape=(2, 3, 2), device="cpu").tocsr()
    s = to_pydata(x)
    assert isinstance(s, sparse.COO)
    assert_dense_equal(s.todense(), x.todense())
    with pytest.raises(ValueError, match="dense dimensions"):
        to_pydata(x, copy=False)


def test_pydata_other_arrays_go_through_coo(sparse, rng):
    dense = (rng.random((3, 4, 5)) < 0.3) * rng.random((3, 4, 5))
    for s in (sparse.GCXS.from_numpy(dense, compressed_axes=(0, 1)), sparse.DOK.from_numpy(dense)):
        x = from_pydata(s)
        assert x.format == "coo"
        assert_sparse_equal(x, dense)
        with pytest.raises(ValueError, match="copy=False"):
            from_pydata(s, copy=False)


def test_pydata_narrow_coordinates_are_cast(sparse):
    s = sparse.COO(np.array([[0, 2]], dtype=np.int32), np.array([1.0, 2.0]), shape=(3,))
    x = from_pydata(s)
    assert x.coords.dtype == np.int64 and ptr(x.data) == ptr(s.data)
    assert_sparse_equal(x, s.todense())
    with pytest.raises(ValueError, match="int32"):
        from_pydata(s, copy=False)


def test_pydata_copy_true_shares_nothing(sparse, rng):
    dense = (rng.random((4, 5)) < 0.5) * rng.random((4, 5))
    s = sparse.COO.from_numpy(dense)
    x = from_pydata(s, copy=True)
    assert_disjoint(x, [s.coords, s.data])
    back = to_pydata(x, copy=True)
    assert_disjoint(x, [back.coords, back.data])
    assert_dense_equal(back.todense(), dense)


@pytest.mark.parametrize("case", list(FALSE_CLAIMS))
def test_pydata_false_canonical_claim_is_not_trusted(sparse, case):
    coords, data, shape = FALSE_CLAIMS[case]
    s = sparse.COO(coords, data, shape=shape, has_duplicates=False, sorted=True)  # taken on trust
    peer = sparse.COO(coords, data, shape=shape)  # pydata's own reading: sorted, duplicates summed
    x = from_pydata(s)
    assert not x.is_coalesced()
    assert_like_peer(x, peer.todense(), s @ np.ones(shape[1]))
    assert_dense_equal(to_pydata(x).todense(), peer.todense())


# --------------------------------------------------------------------------
# JAX
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jsparse():
    pytest.importorskip("jax")
    return pytest.importorskip("jax.experimental.sparse")


def jax_pointer(arr) -> int:
    return arr.unsafe_buffer_pointer()


@SETTINGS
@given(case=coo_cases(dtypes=NARROW_DTYPES, fill=False, max_dense_dim=1), coalesce=st.booleans())
def test_jax_coo_round_trip(jsparse, case, coalesce):
    x = case.build("cpu")
    x = x.coalesce() if coalesce else x
    expected = case.dense()
    b = to_jax(x)
    assert isinstance(b, jsparse.BCOO)
    assert b.n_batch == 0 and b.n_dense == x.dense_dim and tuple(b.shape) == case.shape
    assert b.indices_sorted == x.sorted and b.unique_indices == x.unique
    if case.dtype in JAX_DENSIFIES:
        assert_dense_equal(np.asarray(b.todense()), expected)
    assert_disjoint(x, [np.asarray(b.data), np.asarray(b.indices)])
    back = from_jax(b)
    assert back.sorted == x.sorted and back.unique == x.unique
    assert_sparse_equal(back, expected)
    assert at(back.data, jax_pointer(b.data))
    if x.nnz and x.sparse_dim:  # int32 indices, transposed
        with pytest.raises(ValueError, match="copy=False"):
            from_jax(b, copy=False)


@SETTINGS
@given(case=coo_cases(dtypes=NARROW_DTYPES, sparse_dim=2, max_dense_dim=1, fill=False),
       fmt=st.sampled_from(["csr", "csc"]))
def test_jax_compressed_round_trip(jsparse, case, fmt):
    x = case.build("cpu").asformat(fmt)
    expected = case.dense()
    b = to_jax(x)
    assert isinstance(b, jsparse.BCSR if fmt == "csr" else jsparse.BCOO)
    if case.dtype in JAX_DENSIFIES:
        assert_dense_equal(np.asarray(b.todense()), expected)
    back = from_jax(b, copy=None if fmt == "csc" else False)
    assert_sparse_equal(back, expected)
    if fmt == "csr":
        assert at(back.indptr, jax_pointer(b.indptr)) and at(back.indices, jax_pointer(b.indices))
        assert at(back.data, jax_pointer(b.data))


def test_jax_one_sparse_dim_int64_is_shared(jsparse):
    import jax
    import jax.numpy as jnp
    with jax.enable_x64(True) if hasattr(jax, "enable_x64") else jax.experimental.enable_x64():
        b = jsparse.BCOO((jnp.array([1.0, 2.0]), jnp.array([[0], [3]], dtype=jnp.int64)), shape=(4,))
        x = from_jax(b, copy=False)
        assert ptr(x.coords) == jax_pointer(b.indices) and ptr(x.data) == jax_pointer(b.data)
        assert_sparse_equal(x, np.array([1.0, 0.0, 0.0, 2.0]))
        y = to_jax(x)  # with x64 on, 64-bit values are fine
        assert y.data.dtype == np.float64


def test_jax_padding_is_dropped(jsparse):
    import jax.numpy as jnp
    dense = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], dtype=np.float32)
    b = jsparse.BCOO.fromdense(jnp.asarray(dense), nse=6)
    assert (np.asarray(b.indices) >= np.array([2, 3])).any()  # JAX padded it
    x = from_jax(b)
    assert x.nnz == 3
    assert_sparse_equal(x, dense)
    with pytest.raises(ValueError, match="padding"):
        from_jax(b, copy=False)
    bcsr = jsparse.BCSR.fromdense(jnp.asarray(dense), nse=5)
    y = from_jax(bcsr, copy=False)
    assert_sparse_equal(y, dense)


def test_jax_batch_dimensions_become_sparse(jsparse, rng):
    import jax.numpy as jnp
    dense = ((rng.random((2, 3, 4)) < 0.5) * rng.random((2, 3, 4))).astype(np.float32)
    for b in (jsparse.BCOO.fromdense(jnp.asarray(dense), n_batch=1),
              jsparse.BCSR.fromdense(jnp.asarray(dense), n_batch=1)):
        x = from_jax(b)
        assert x.sparse_dim == 3
        assert_sparse_equal(x, dense)
        with pytest.raises(ValueError, match="batch"):
            from_jax(b, copy=False)


def test_jax_errors(jsparse):
    import jax.numpy as jnp
    x = COO([[0, 1]], [1.0, 2.0], device="cpu")
    with pytest.raises(TypeError, match="jax_enable_x64"):
        to_jax(x)
    with pytest.raises(ValueError, match="immutable"):
        to_jax(x.astype(np.float32), copy=False)
    with pytest.raises(ValueError, match="fill value"):
        to_jax(COO([[0]], np.float32([1.0]), shape=(2,), fill_value=2.0, device="cpu"))
    with pytest.raises(TypeError, match="BCOO or BCSR"):
        from_jax(jsparse.CSR.fromdense(jnp.eye(2)))
    with pytest.raises(TypeError, match="jax.experimental.sparse"):
        from_jax(jnp.eye(2))


@pytest.mark.parametrize("case", list(FALSE_CLAIMS))
@pytest.mark.parametrize("claims", [(True, True), (True, False), (False, True)])
def test_jax_false_order_claims_are_not_trusted(jsparse, case, claims):
    import jax.numpy as jnp
    coords, data, shape = FALSE_CLAIMS[case]
    b = jsparse.BCOO((jnp.asarray(data.astype(np.float32)), jnp.asarray(coords.T.astype(np.int32))), shape=shape,
                     indices_sorted=claims[0], unique_indices=claims[1])
    x = from_jax(b)
    assert not x.is_coalesced()
    ones = jnp.ones(shape[1], dtype=jnp.float32)
    assert_like_peer(x, np.asarray(b.todense()), np.asarray(b @ ones))


@pytest.mark.parametrize("case", ["sorted unique", "sorted", "duplicates", "unsorted"])
def test_verified_flags_on_every_device(device, case):
    """The pass behind every importer's flags, on the device the data lives on."""
    from _helpers import put
    from gpusparse.ops.interop._common import verified_flags
    coords = {"sorted unique": [[0, 0, 2], [0, 1, 1]], "sorted": [[0, 0, 2], [1, 1, 1]],
              "duplicates": [[0, 2, 0], [1, 0, 1]], "unsorted": [[2, 0], [0, 1]]}[case]
    coords = np.array(coords, dtype=np.int64)
    keys = coords[0] * 2 + coords[1]
    expected = (bool((np.diff(keys) >= 0).all()), bool((np.diff(keys) > 0).all()))
    assert verified_flags(put(coords, device), (3, 2), device, sorted=True, unique=True) == expected
    assert verified_flags(put(coords, device), (3, 2), device, sorted=False, unique=False) == (False, False)


# --------------------------------------------------------------------------
# cupyx (needs a CUDA device)
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def csp():
    module = pytest.importorskip("cupyx.scipy.sparse")
    if cuda_status().device_count == 0:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    return module


def cupy_ptr(arr) -> int:
    return arr.data.ptr


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", ["bool", "float32", "float64", "complex64", "complex128"])
def test_cupyx_round_trip(csp, fmt, dtype, rng):
    import cupy
    dense = ((rng.random((6, 5)) < 0.4) * rng.integers(1, 9, size=(6, 5))).astype(dtype)
    where = np.nonzero(dense)
    x = COO(np.array(where), dense[where], shape=dense.shape, device="cuda").coalesce().asformat(fmt)
    m = to_cupyx(x, copy=False, kind="array") if fmt == "coo" else to_cupyx(x, copy=False)
    assert m.format == fmt and bool(m.has_canonical_format)
    assert_dense_equal(cupy.asnumpy(m.toarray()), dense)
    back = from_cupyx(m, copy=False)
    for a, b in zip(components(back), components(x)):
        if a.size:
            assert cupy_ptr(a) == cupy_ptr(b)
    assert_sparse_equal(back, dense)
    made = csp.csr_matrix(cupy.asarray(dense)).asformat(fmt)
    y = from_cupyx(made)
    assert y.device == Device("cuda", 0)
    assert_sparse_equal(y, dense)
    if fmt != "coo":
        assert cupy_ptr(from_cupyx(made, copy=False).data) == cupy_ptr(made.data)
    copied = from_cupyx(made, copy=True)
    assert cupy_ptr(copied.data) != cupy_ptr(made.data)


def test_cupyx_refuses_host_arrays():
    pytest.importorskip("cupyx.scipy.sparse")
    x = CSR([0, 1], [0], [1.0], shape=(1, 1), device="cpu")
    with pytest.raises(ValueError, match=r"x.to\('cuda'\)"):
        to_cupyx(x)


# --------------------------------------------------------------------------
# asarray and from_foreign
# --------------------------------------------------------------------------

def foreign_examples():
    """(library, factory) pairs; each factory makes a sparse array of 2x3 with 2 entries."""
    dense = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], dtype=np.float32)

    def torch_coo():
        torch = pytest.importorskip("torch")
        return torch.from_numpy(dense).to_sparse()

    def torch_csr():
        torch = pytest.importorskip("torch")
        return torch.from_numpy(dense).to_sparse_csr()

    def scipy_csc():
        return pytest.importorskip("scipy.sparse").csc_matrix(dense)

    def pydata_coo():
        return pytest.importorskip("sparse").COO.from_numpy(dense)

    def jax_bcoo():
        pytest.importorskip("jax")
        return pytest.importorskip("jax.experimental.sparse").BCOO.fromdense(dense)

    return dense, {"torch-coo": torch_coo, "torch-csr": torch_csr, "scipy-csc": scipy_csc,
                   "pydata-coo": pydata_coo, "jax-bcoo": jax_bcoo}


@pytest.mark.parametrize("name", sorted(foreign_examples()[1]))
def test_asarray_recognises_foreign_arrays(name):
    dense, factories = foreign_examples()
    obj = factories[name]()
    x = asarray(obj)
    check_invariants(x)
    assert_sparse_equal(x, dense)
    assert x.format == name.split("-")[1].replace("bcoo", "coo")
    y = from_foreign(obj)
    assert type(y) is type(x)
    assert_dense_equal(asarray(obj, format="csr").todense(), dense)


def test_asarray_copy_is_passed_to_the_converter():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    shared = asarray(m, copy=False)
    assert ptr(shared.data) == ptr(m.data) and ptr(shared.indptr) == ptr(m.indptr)
    copied = asarray(m, copy=True)
    assert_disjoint(copied, [m.indptr, m.indices, m.data])
    with pytest.raises(ValueError, match="copy=False"):
        asarray(m.tocoo(), copy=False)


def test_from_foreign_ignores_dense_input():
    assert from_foreign(np.eye(2)) is None
    assert from_foreign([[1, 0], [0, 1]]) is None
    assert from_foreign(3.0) is None
    torch = pytest.importorskip("torch")
    assert from_foreign(torch.eye(2)) is None
    jnp = pytest.importorskip("jax.numpy")
    assert from_foreign(jnp.eye(2)) is None


def test_from_foreign_tolerates_unrelated_modules_named_like_peers(monkeypatch):
    import types
    monkeypatch.setitem(sys.modules, "sparse", types.ModuleType("sparse"))
    assert from_foreign(np.eye(2)) is None


def test_from_foreign_imports_nothing():
    """gpusparse never imports a peer library to recognise an object."""
    script = textwrap.dedent(
        """
        import importlib.abc, os, sys, traceback
        import numpy as np

        PEERS = ("torch", "jax", "jaxlib", "sparse", "scipy.sparse", "cupyx", "cupyx.scipy.sparse")
        importers = {}

        class Watch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name in PEERS and name not in importers:
                    frames = [f for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename]
                    importers[name] = frames[-1].filename if frames else "?"
                return None

        sys.meta_path.insert(0, Watch())
        import gpusparse as gs
        from gpusparse.ops.interop import from_foreign
        x = gs.asarray(np.eye(3))
        assert x.nnz == 3
        assert all(from_foreign(o) is None for o in (np.eye(2), [1, 2], 3.0, "text", None))
        package = os.path.dirname(gs.__file__)
        print("peers imported by gpusparse:",
              sorted(n for n, f in importers.items() if f.startswith(package)))
        print("torch" in sys.modules, "jax" in sys.modules)
        """
    )
    root = os.path.dirname(os.path.dirname(gpusparse.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "peers imported by gpusparse: []", out.stdout + out.stderr
    assert lines[-1] == "False False", out.stdout + out.stderr
