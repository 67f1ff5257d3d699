"""Imports whose order flags are true or false: every outcome equals the peer's own dense result.

Each peer takes its flags on trust -- torch's ``is_coalesced``, JAX BCOO's
``indices_sorted``/``unique_indices``, pydata's ``sorted``/``has_duplicates``,
SciPy's ``has_canonical_format``/``has_sorted_indices``, cupyx's
``has_canonical_format`` -- while each sums duplicate entries in its own
densification and products. Random triplets (repeated and unsorted
coordinates included) go in with random claims; the imported array must
have honest flags and give the peer's dense array and product.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusparse as gs
from _helpers import assert_dense_equal, check_invariants
from gpusparse._device import cuda_status, to_host
from gpusparse.ops.interop import from_cupyx, from_jax, from_pydata, from_scipy, from_torch

SETTINGS = settings(deadline=None)


@st.composite
def triplets(draw):
    """``(rows, cols, values, shape)`` with repeats and any order; small integer values (exact sums)."""
    shape = draw(st.tuples(st.integers(1, 4), st.integers(1, 4)))
    nnz = draw(st.integers(0, 8))
    rows = np.array(draw(st.lists(st.integers(0, shape[0] - 1), min_size=nnz, max_size=nnz)), dtype=np.int64)
    cols = np.array(draw(st.lists(st.integers(0, shape[1] - 1), min_size=nnz, max_size=nnz)), dtype=np.int64)
    if draw(st.booleans()):  # sorted input half of the time, so that true claims occur
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
    values = np.array(draw(st.lists(st.integers(-4, 4), min_size=nnz, max_size=nnz)), dtype=np.float32)
    return rows, cols, values, shape


def _oracle(rows, cols, values, shape):
    dense = np.zeros(shape, dtype=values.dtype)
    np.add.at(dense, (rows, cols), values)
    return dense


def _assert_like(x, dense, product):
    check_invariants(x)  # the flags are honest
    assert_dense_equal(to_host(x.todense()), dense)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gs.GpuSparseEfficiencyWarning)  # (an unsorted COO product)
        ones = np.ones(x.shape[1], dtype=x.dtype)
        if x.device.is_cuda:
            from _helpers import put
            ones = put(ones, x.device)
        assert_dense_equal(to_host(x @ ones), product)
    assert_dense_equal(to_host(x.coalesce().todense()), dense)


@SETTINGS
@given(case=triplets(), claim=st.booleans())
def test_torch_is_coalesced_claims(case, claim):
    torch = pytest.importorskip("torch")
    rows, cols, values, shape = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that it takes is_coalesced on trust
        t = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), torch.from_numpy(values), shape,
                                    is_coalesced=claim)
    dense = _oracle(rows, cols, values, shape)
    keys = rows * shape[1] + cols
    honest = not claim or bool(np.all(keys[1:] > keys[:-1]))
    if honest:  # torch's own results are the peer's word; a false claim makes them undefined (and varying)
        assert_dense_equal(t.to_dense().numpy(), dense)
        product = (t @ torch.ones(shape[1], 1, dtype=torch.float32)).numpy().ravel()
    else:  # what torch gives for the same entries told honestly (coalesce() trusts the flag too)
        told = torch.sparse_coo_tensor(t._indices(), t._values(), shape).coalesce()
        product = (told @ torch.ones(shape[1], 1, dtype=torch.float32)).numpy().ravel()
    _assert_like(from_torch(t), dense, product)


@SETTINGS
@given(case=triplets(), sorted_claim=st.booleans(), unique_claim=st.booleans())
def test_jax_bcoo_claims(case, sorted_claim, unique_claim):
    pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jsparse = pytest.importorskip("jax.experimental.sparse")
    rows, cols, values, shape = case
    b = jsparse.BCOO((jnp.asarray(values), jnp.asarray(np.stack([rows, cols], axis=1).astype(np.int32))),
                     shape=shape, indices_sorted=sorted_claim, unique_indices=unique_claim)
    dense = np.asarray(b.todense())
    assert_dense_equal(dense, _oracle(rows, cols, values, shape))
    _assert_like(from_jax(b), dense, np.asarray(b @ jnp.ones(shape[1], dtype=jnp.float32)))


@SETTINGS
@given(case=triplets(), sorted_claim=st.booleans(), duplicates_claim=st.booleans())
def test_pydata_coo_claims(case, sorted_claim, duplicates_claim):
    sparse = pytest.importorskip("sparse")
    rows, cols, values, shape = case
    s = sparse.COO(np.stack([rows, cols]), values, shape=shape, sorted=sorted_claim,
                   has_duplicates=duplicates_claim)
    peer = sparse.COO(np.stack([rows, cols]), values, shape=shape)  # pydata's canonical reading of the triplets
    dense = peer.todense()
    assert_dense_equal(dense, _oracle(rows, cols, values, shape))
    _assert_like(from_pydata(s), dense, peer @ np.ones(shape[1], dtype=np.float32))


@SETTINGS
@given(case=triplets(), fmt=st.sampled_from(["coo", "csr", "csc"]), canonical_claim=st.booleans(),
       sorted_claim=st.booleans())
def test_scipy_format_claims(case, fmt, canonical_claim, sorted_claim):
    sp = pytest.importorskip("scipy.sparse")
    rows, cols, values, shape = case
    m = _scipy_like(sp, fmt, rows, cols, values, shape)
    dense = m.toarray()  # before the claims: SciPy's own reading of the triplets
    product = m @ np.ones(shape[1], dtype=np.float32)
    assert_dense_equal(dense, _oracle(rows, cols, values, shape))
    m.has_canonical_format = canonical_claim
    if fmt != "coo":
        m.has_sorted_indices = sorted_claim
    _assert_like(from_scipy(m), dense, product)


def _scipy_like(module, fmt, rows, cols, values, shape):
    """A SciPy (or cupyx) matrix of ``fmt`` holding the triplets as given: unsorted, duplicates kept."""
    xp = np if module.__name__.startswith("scipy") else __import__("cupy")
    rows, cols, values = xp.asarray(rows), xp.asarray(cols), xp.asarray(values)
    if fmt == "coo":
        return module.coo_matrix((values, (rows, cols)), shape=shape)
    major, minor, n_major = (rows, cols, shape[0]) if fmt == "csr" else (cols, rows, shape[1])
    order = xp.argsort(major, kind="stable") if xp is np else xp.argsort(major)
    indptr = xp.concatenate([xp.zeros(1, dtype=np.int64),
                             xp.cumsum(xp.bincount(major, minlength=n_major))]).astype(np.int32)
    make = module.csr_matrix if fmt == "csr" else module.csc_matrix
    return make((values[order], minor[order].astype(np.int32), indptr), shape=shape)


@pytest.mark.gpu
@SETTINGS
@given(case=triplets(), fmt=st.sampled_from(["coo", "csr", "csc"]), canonical_claim=st.booleans())
def test_cupyx_format_claims(case, fmt, canonical_claim):
    csp = pytest.importorskip("cupyx.scipy.sparse")
    if cuda_status().device_count == 0:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    rows, cols, values, shape = case
    m = _scipy_like(csp, fmt, rows, cols, values, shape)
    dense = to_host(m.toarray())
    assert_dense_equal(dense, _oracle(rows, cols, values, shape))
    m.has_canonical_format = canonical_claim
    _assert_like(from_cupyx(m), dense, _oracle(rows, cols, values, shape).sum(axis=1))
