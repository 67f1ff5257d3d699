"""Exchange with torch: sparse COO and compressed tensors.

Round trips of random arrays (N-d, hybrid, 0-size and 1-size dimensions,
duplicates, every dtype the peer holds) are compared with the dense NumPy
oracle, the peer's own densification and our ``todense()``; zero copy is
proven by comparing data pointers; ``copy=False`` raises exactly where a
copy is unavoidable and ``copy=True`` never shares.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import assert_dense_equal, assert_sparse_equal
from _interop_checks import (
    FALSE_CLAIMS,
    SETTINGS,
    TORCH_LIMITED,
    assert_disjoint,
    assert_like_peer,
    assert_shared,
    at,
    ptr,
)
from hypothesis import given
from hypothesis import strategies as st
from strategies import coo_cases

from gpusparse import COO
from gpusparse.ops.interop import from_torch, to_torch


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
