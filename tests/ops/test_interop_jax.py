"""Exchange with JAX: BCOO and BCSR arrays.

Round trips of random arrays (N-d, hybrid, 0-size and 1-size dimensions,
duplicates, every dtype the peer holds) are compared with the dense NumPy
oracle, the peer's own densification and our ``todense()``; zero copy is
proven by comparing data pointers; ``copy=False`` raises exactly where a
copy is unavoidable and ``copy=True`` never shares.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import assert_dense_equal, assert_sparse_equal
from _interop_checks import (
    FALSE_CLAIMS,
    JAX_DENSIFIES,
    NARROW_DTYPES,
    SETTINGS,
    assert_disjoint,
    assert_like_peer,
    at,
    ptr,
)
from hypothesis import given
from hypothesis import strategies as st
from strategies import coo_cases

from gpusparse import COO
from gpusparse.ops.interop import from_jax, to_jax


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
