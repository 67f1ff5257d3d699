"""Products against a dense NumPy oracle: matmul/@/dot/tensordot/outer/kron, torch and TF names, errors.

Every product is checked on every device the ``device`` fixture yields,
for COO (uncoalesced, unsorted, hybrid), CSR and CSC operands, every value
dtype, N-d operands with broadcast batch axes, and 0-size dimensions.
Floating-point results are compared within a bound scaled by
``|a| @ |b|`` (the summation order differs from NumPy's BLAS); integer and
bool results exactly (both wrap modulo 2**bits).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpusparse as gs
from _helpers import check_invariants, dense_oracle, put
from _products import (
    EXAMPLES, NUMERIC, _abs64, _dense, _operand, _values, assert_product, build, dense_of, matmul_cases,
    matmul_oracle, sparse_parts,
)
from gpusparse._device import cuda_module, to_host
from gpusparse._errors import GpuSparseEfficiencyWarning
from gpusparse.containers import COO, SparseArray
from gpusparse.ops import linalg
from strategies import elements

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")



# --------------------------------------------------------------------------
# matmul, @, np.matmul: every kind of operand
# --------------------------------------------------------------------------

@EXAMPLES
@given(case=matmul_cases())
def test_matmul_matches_numpy(device, case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A, B = _operand(a, sa, fmt_a, device), _operand(b, sb, fmt_b, device)
    result = linalg.matmul(A, B)
    assert isinstance(result, SparseArray) == (sa and sb and np.ndim(expected) > 0)
    assert_product(result, expected, bound)
    assert_product(A @ B, expected, bound)


@EXAMPLES
@given(case=matmul_cases(kinds=("sd", "ds")))
def test_numpy_protocols_on_cpu(case):
    kind, a, b, fmt_a, fmt_b = case
    sa, sb = kind[0] == "s", kind[1] == "s"
    expected, bound = matmul_oracle(_dense(a, sa), _dense(b, sb))
    A, B = _operand(a, sa, fmt_a, gs.Device("cpu")), _operand(b, sb, fmt_b, gs.Device("cpu"))
    assert_product(np.matmul(A, B), expected, bound)
    assert_product(A @ B, expected, bound)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_dense_array_at_sparse_uses_rmatmul(device, fmt, rng):
    x = gs.random((6, 5), density=0.4, format=fmt, seed=1, device=device)
    d = rng.standard_normal((3, 6))
    expected = d @ to_host(x.todense())
    assert_product(put(d, device) @ x, expected, np.abs(d) @ np.abs(to_host(x.todense())))
    assert_product(d.tolist() @ x, expected, np.abs(d) @ np.abs(to_host(x.todense())))


def test_matmul_formats_of_sparse_results(device):
    x = gs.random((5, 5), density=0.4, seed=2, device=device)
    for fa, fb, expected in [("csr", "csr", "csr"), ("csc", "csc", "csc"), ("coo", "csr", "coo"),
                             ("csr", "coo", "csr"), ("csc", "csr", "csc")]:
        out = x.asformat(fa) @ x.asformat(fb)
        assert out.format == expected
        check_invariants(out)
    vec = gs.COO([[1, 3]], [1.0, 2.0], shape=(5,), device=device)
    assert (x @ vec).format == "coo" and (x @ vec).shape == (5,)
    assert (vec @ vec).shape == () and float(to_host(vec @ vec)) == 5.0


def test_batched_broadcasting_both_ways(device, rng):
    """Batch axes only the left, only the right, and both operands have, in every order."""
    for a_shape, b_shape in [((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 1, 4, 2)), ((3, 2, 4), (4, 6)),
                             ((4,), (2, 3, 4, 2)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (1, 3, 4, 2))]:
        a = rng.standard_normal(a_shape) * (rng.random(a_shape) < 0.4)
        b = rng.standard_normal(b_shape) * (rng.random(b_shape) < 0.4)
        expected, bound = matmul_oracle(a, b)
        A = gs.fromdense(a, device=device)
        B = gs.fromdense(b, device=device)
        assert_product(A @ put(b, device), expected, bound)
        assert_product(put(a, device) @ B, expected, bound)
        assert_product(A @ B, expected, bound)


def test_hybrid_operands(device, rng):
    """Dense trailing dimensions: contraction inside the blocks, and across sparse/dense axes."""
    dense = rng.standard_normal((3, 4, 5)) * (rng.random((3, 4, 1)) < 0.6)
    for sparse_dim in (1, 2):
        x = gs.fromdense(dense, sparse_dim=sparse_dim, device=device)
        assert x.dense_dim == 3 - sparse_dim
        for other in (rng.standard_normal(5), rng.standard_normal((5, 2))):
            expected, bound = matmul_oracle(dense, other)
            with warnings.catch_warnings():  # the blocks are multiplied as they are
                warnings.simplefilter("error", GpuSparseEfficiencyWarning)
                assert_product(x @ put(other, device), expected, bound)
        other = rng.standard_normal((3, 5, 2))
        expected, bound = matmul_oracle(dense, other)
        with pytest.warns(GpuSparseEfficiencyWarning, match="dense dimensions of a"):
            got = x @ put(other, device)
        assert_product(got, expected, bound)
        left = rng.standard_normal((2, 4))
        expected, bound = matmul_oracle(left, dense)
        assert_product(put(left, device) @ x, expected, bound)
        expected, bound = matmul_oracle(dense, dense.swapaxes(1, 2))
        assert_product(x @ gs.fromdense(dense.swapaxes(1, 2), device=device), expected, bound)


def test_matmul_zero_size_and_empty(device):
    for a_shape, b_shape in [((0, 3), (3, 2)), ((2, 0), (0, 4)), ((2, 3), (3, 0)), ((0, 2, 3), (3, 1))]:
        a = gs.zeros(a_shape, device=device)
        b = np.ones(b_shape)
        expected = np.matmul(np.zeros(a_shape), b)
        assert_product(a @ put(b, device), expected)
        assert_product(a @ gs.zeros(b_shape, device=device), expected)


@EXAMPLES
@given(case=matmul_cases(kinds=("sd",), max_batch=0), trans_a=st.booleans(), trans_b=st.booleans())
def test_sparse_dense_matmul_adjoints(device, case, trans_a, trans_b):
    kind, a, b, fmt_a, _ = case
    a_dense = dense_of(a)
    if a_dense.ndim != 2 or np.ndim(b) != 2 or COO(*a[:2], a[2]).dense_dim:
        return
    b = np.asarray(b)
    # adjoint operands must still line up: build shapes that do
    A_op = a_dense.conj().T if trans_a else a_dense
    B = b.conj().T if trans_b else b
    if A_op.shape[1] != B.shape[0]:
        B = (np.ones((A_op.shape[1], 2), dtype=b.dtype))
        b = B.conj().T if trans_b else B
    expected, bound = matmul_oracle(A_op, B)
    got = linalg.sparse_dense_matmul(build(a, device, fmt_a), put(b, device), adjoint_a=trans_a, adjoint_b=trans_b)
    assert_product(got, expected, bound)


def test_sparse_dense_matmul_complex_conjugates(device):
    a = np.array([[1 + 2j, 0], [3j, 4 - 1j]])
    b = np.array([[1 - 1j, 2], [0.5j, 1]])
    for fmt in ("coo", "csr", "csc"):
        A = gs.fromdense(a, format=fmt, device=device)
        for ta in (False, True):
            for tb in (False, True):
                expected = (a.conj().T if ta else a) @ (b.conj().T if tb else b)
                got = linalg.sparse_dense_matmul(A, put(b, device), adjoint_a=ta, adjoint_b=tb)
                assert_product(got, expected, np.full(expected.shape, 10.0))
                got = linalg.sparse_dense_matmul(put(b, device), A, adjoint_a=tb, adjoint_b=ta)
                expected = (b.conj().T if tb else b) @ (a.conj().T if ta else a)
                assert_product(got, expected, np.full(expected.shape, 10.0))


# --------------------------------------------------------------------------
# dot, tensordot, inner, outer, kron
# --------------------------------------------------------------------------

@EXAMPLES
@given(data=st.data())
def test_tensordot_any_axes(device, data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    a_shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4)))
    n = data.draw(st.integers(0, len(a_shape)))
    axes_a = data.draw(st.permutations(range(len(a_shape))))[:n]
    free_b = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    b_axes_order = data.draw(st.permutations(range(n + len(free_b))))
    b_shape = [0] * (n + len(free_b))
    contracted_positions = b_axes_order[:n]
    for j, pos in enumerate(contracted_positions):
        b_shape[pos] = a_shape[axes_a[j]]
    free_positions = [p for p in range(len(b_shape)) if p not in contracted_positions]
    for p, size in zip(free_positions, free_b):
        b_shape[p] = size
    a = data.draw(sparse_parts(a_shape, dtype))
    kind = data.draw(st.sampled_from(["sd", "ds", "ss"]))
    b_dense = data.draw(hnp.arrays(dtype, tuple(b_shape), elements=elements(dtype, nan=False)))
    b = data.draw(sparse_parts(tuple(b_shape), dtype)) if kind == "ss" else b_dense
    b_full = dense_of(b) if kind == "ss" else b_dense
    axes = (list(axes_a), list(contracted_positions))
    with np.errstate(all="ignore"):
        expected = np.tensordot(dense_of(a), b_full, axes=axes)
        bound = np.tensordot(_abs64(dense_of(a)), _abs64(b_full), axes=axes)
    if kind == "ds":
        got = linalg.tensordot(put(b_full, device), build(a, device), axes=axes[::-1])
        with np.errstate(all="ignore"):
            expected = np.tensordot(b_full, dense_of(a), axes=axes[::-1])
            bound = np.tensordot(_abs64(b_full), _abs64(dense_of(a)), axes=axes[::-1])
    else:
        other = build(b, device) if kind == "ss" else put(b_dense, device)
        got = linalg.tensordot(build(a, device), other, axes=axes)
    assert_product(got, expected.astype(dtype), bound)


def test_tensordot_integer_axes_and_np_tensordot(device, rng):
    a = rng.standard_normal((2, 3, 4)) * (rng.random((2, 3, 4)) < 0.5)
    b = rng.standard_normal((3, 4, 5))
    x = gs.fromdense(a, device=device)
    for axes in (0, 1, 2):
        bb = b if axes != 1 else rng.standard_normal((4, 2))
        expected = np.tensordot(a, bb, axes)
        assert_product(linalg.tensordot(x, put(bb, device), axes), expected,
                       np.tensordot(np.abs(a), np.abs(bb), axes))
    if device.kind == "cpu":
        assert_product(np.tensordot(x, b, 2), np.tensordot(a, b, 2), np.tensordot(np.abs(a), np.abs(b), 2))


def test_dot_inner_outer_kron(device, rng):
    a = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    v = rng.standard_normal(4) * (rng.random(4) < 0.6)
    t = rng.standard_normal((2, 4, 3))
    x, sv = gs.fromdense(a, device=device), gs.fromdense(v, device=device)
    bound = np.abs(a) @ np.abs(v)
    assert_product(linalg.dot(x, put(v, device)), a @ v, bound)
    assert_product(x.dot(put(v, device)), a @ v, bound)
    assert_product(linalg.dot(x, put(t, device)), np.dot(a, t), np.dot(np.abs(a), np.abs(t)))
    assert_product(linalg.dot(x, 2.0), a * 2.0)
    assert_product(linalg.dot(sv, sv), np.dot(v, v), np.dot(np.abs(v), np.abs(v)))
    assert_product(linalg.inner(x, put(a, device)), np.inner(a, a), np.inner(np.abs(a), np.abs(a)))
    assert_product(linalg.outer(x, put(v, device)), np.outer(a, v))
    assert_product(linalg.outer(sv, x), np.outer(v, a))
    for other in (a, v, t, np.eye(2)):
        assert_product(linalg.kron(x, gs.fromdense(other, device=device)), np.kron(a, other))
        assert_product(linalg.kron(put(other, device), x), np.kron(other, a))
    if device.kind == "cpu":
        assert_product(np.dot(x, v), a @ v, bound)
        assert_product(np.dot(v, x.T), v @ a.T, np.abs(v) @ np.abs(a.T))
        assert_product(np.outer(x, v), np.outer(a, v))
        assert_product(np.kron(x, v), np.kron(a, v))
        assert_product(np.inner(x, a), np.inner(a, a), np.inner(np.abs(a), np.abs(a)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.bool_, np.complex64], ids=lambda d: np.dtype(d).name)
def test_integer_bool_complex_products_exact(device, dtype, rng):
    dtype = np.dtype(dtype)
    a = _values(rng, 7, dtype, (6,)) * (rng.random((7, 6)) < 0.5).astype(dtype)
    b = _values(rng, 6, dtype, (5,))
    x = gs.fromdense(a, device=device)
    for fmt in ("coo", "csr", "csc"):
        y = x.asformat(fmt)
        expected, bound = matmul_oracle(a, b)
        assert_product(y @ put(b, device), expected, bound)
        assert_product(put(b.T, device) @ y.T, expected.T, bound.T)
        assert_product(y @ gs.fromdense(b, format=fmt, device=device), expected, bound)


# --------------------------------------------------------------------------
# torch names
# --------------------------------------------------------------------------

def test_mm_mv_bmm(device, rng):
    a = rng.standard_normal((4, 5)) * (rng.random((4, 5)) < 0.5)
    b = rng.standard_normal((5, 3))
    x = gs.fromdense(a, format="csr", device=device)
    assert_product(linalg.mm(x, put(b, device)), a @ b, np.abs(a) @ np.abs(b))
    assert_product(linalg.mm(x, put(b, device), reduce="sum"), a @ b, np.abs(a) @ np.abs(b))
    assert_product(linalg.mv(x, put(b[:, 0], device)), a @ b[:, 0], np.abs(a) @ np.abs(b[:, 0]))
    s3 = rng.standard_normal((2, 4, 5)) * (rng.random((2, 4, 5)) < 0.5)
    d3 = rng.standard_normal((2, 5, 3))
    assert_product(linalg.bmm(gs.fromdense(s3, device=device), put(d3, device)), s3 @ d3, np.abs(s3) @ np.abs(d3))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_mm_reduce_matches_torch(device, reduce, fmt, rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < 0.4)
    a[2] = 0  # an empty row
    b = rng.standard_normal((5, 3))
    expected = torch.sparse.mm(torch.from_numpy(a).to_sparse_csr(), torch.from_numpy(b),
                               {"max": "amax", "min": "amin"}.get(reduce, reduce)).numpy()
    got = linalg.mm(gs.fromdense(a, format=fmt, device=device), put(b, device), reduce=reduce)
    assert_product(got, expected, np.abs(a) @ np.abs(b))


def test_mm_reduce_integers(device):
    a = np.array([[2, 0, -1], [0, 0, 0], [1, 3, 0]], dtype=np.int32)
    b = np.array([[1, -2], [4, 5], [3, 3]], dtype=np.int32)
    x = gs.fromdense(a, format="csr", device=device)
    assert_product(linalg.mm(x, put(b, device), reduce="max"), np.array([[2, -3], [0, 0], [12, 15]], np.int32))
    mean = linalg.mm(x, put(b, device), reduce="mean")
    assert_product(mean, np.array([[-0.5, -3.5], [0, 0], [6.5, 6.5]]))
    with pytest.raises(TypeError, match="complex"):
        linalg.mm(x.astype(np.complex64), put(b, device), reduce="max")


def test_addmm_sspaddmm_hspmm_smm_match_torch(device, rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.4)
    a[1] = 0
    a[1, 2] = 1.5
    a[3] = 0
    m2 = rng.standard_normal((4, 3))
    inp = rng.standard_normal((5, 3))
    ta, tm2, tin = torch.from_numpy(a).to_sparse(), torch.from_numpy(m2), torch.from_numpy(inp)
    x = gs.fromdense(a, device=device)
    assert_product(linalg.addmm(put(inp, device), x, put(m2, device), beta=0.5, alpha=2.0),
                   torch.addmm(tin, ta, tm2, beta=0.5, alpha=2.0).numpy(), 4 * np.abs(a) @ np.abs(m2) + 1)
    assert_product(linalg.addmm(put(inp[0], device), x.tocsc(), put(m2, device)),
                   torch.addmm(tin[0], ta, tm2).numpy(), np.abs(a) @ np.abs(m2) + 1)
    nan_input = np.full((5, 3), np.nan)
    assert_product(linalg.addmm(put(nan_input, device), x, put(m2, device), beta=0), a @ m2, np.abs(a) @ np.abs(m2))
    h = linalg.hspmm(x, put(m2, device))
    th = torch.hspmm(ta, tm2).coalesce()
    assert h.sparse_dim == 1 and h.dense_dim == 1
    np.testing.assert_array_equal(to_host(h.coords), th.indices().numpy())
    assert_product(h, th.to_dense().numpy(), np.abs(a) @ np.abs(m2))
    s = linalg.smm(x, put(m2, device))
    assert s.sparse_dim == 2 and s.nnz == torch.smm(ta, tm2).coalesce()._nnz()
    assert_product(s, torch.smm(ta, tm2).to_dense().numpy(), np.abs(a) @ np.abs(m2))
    sp_in = gs.fromdense(inp * (rng.random((5, 3)) < 0.3), device=device)
    expected = torch.sspaddmm(torch.from_numpy(to_host(sp_in.todense())).to_sparse(), ta, tm2,
                              beta=0.5, alpha=2.0).to_dense().numpy()
    got = linalg.sspaddmm(sp_in, x, put(m2, device), beta=0.5, alpha=2.0)
    assert isinstance(got, SparseArray)
    assert_product(got, expected, 4 * np.abs(a) @ np.abs(m2) + 1)
    sp_b = gs.fromdense(m2 * (rng.random((4, 3)) < 0.5), device=device)
    got = linalg.addmm(sp_in, x, sp_b, beta=2.0, alpha=-1.0)
    expected = 2.0 * to_host(sp_in.todense()) - a @ to_host(sp_b.todense())
    assert isinstance(got, SparseArray)
    assert_product(got, expected, 4 * np.abs(a) @ np.abs(m2) + 4)


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
def test_sampled_addmm_matches_torch(device, fmt, rng):
    torch = pytest.importorskip("torch")
    mask = rng.random((6, 7)) < 0.4
    inp = rng.standard_normal((6, 7)) * mask
    m1, m2 = rng.standard_normal((6, 3)), rng.standard_normal((3, 7))
    expected = torch.sparse.sampled_addmm(torch.from_numpy(inp).to_sparse_csr(), torch.from_numpy(m1),
                                          torch.from_numpy(m2), beta=0.5, alpha=2.0).to_dense().numpy()
    x = gs.fromdense(inp, format=fmt, device=device)
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=0.5, alpha=2.0)
    assert got.format == fmt and got.nnz == x.nnz
    assert_product(got, expected, 2 * np.abs(m1) @ np.abs(m2) + 1)


def test_sampled_addmm_batched_and_uncoalesced(device, rng):
    coords = np.array([[0, 0, 1, 1, 1], [0, 2, 1, 1, 3], [1, 0, 2, 2, 0]])  # (1, 1, 2) twice
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    x = gs.COO(coords, data, shape=(2, 4, 3), device=device)
    m1, m2 = rng.standard_normal((2, 4, 5)), rng.standard_normal((5, 3))
    dense = dense_oracle(coords, data, (2, 4, 3))
    expected = 2.0 * (m1 @ m2) * (dense != 0) - 1.0 * dense
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=-1.0, alpha=2.0)
    assert_product(got, expected, 2 * np.abs(m1) @ np.abs(m2) + 10)
    assert got.nnz == 4



@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("shape", [(2, 3), (0, 3), (2, 0), (0, 0)])
def test_sampled_addmm_with_empty_inner_dimension(device, fmt, shape, rng):
    """k = 0: the product term is 0, so the result is beta * input (also for 0-size inputs)."""
    inp = rng.standard_normal(shape) * (rng.random(shape) < 0.5)
    x = gs.fromdense(inp, format=fmt, device=device)
    m1, m2 = np.ones((shape[0], 0)), np.ones((0, shape[1]))
    got = linalg.sampled_addmm(x, put(m1, device), put(m2, device), beta=3.0, alpha=2.0)
    assert got.format == fmt and got.nnz == x.nnz
    assert_product(got, 3.0 * inp, np.abs(inp) + 1)

# --------------------------------------------------------------------------
# Bad input: clear errors naming the argument
# --------------------------------------------------------------------------

def test_errors_name_the_argument(device):
    x = gs.random((3, 4), density=0.5, format="csr", seed=0, device=device)
    with pytest.raises(ValueError, match=r"inner dimensions differ: a has shape \(3, 4\)"):
        linalg.matmul(x, put(np.ones((3, 2)), device))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        x @ x
    with pytest.raises(ValueError, match="a is 0-d"):
        linalg.matmul(gs.zeros((), device=device), put(np.ones(2), device))
    with pytest.raises(ValueError, match="b is 0-d"):
        linalg.matmul(x, put(np.float64(2.0), device))
    with pytest.raises(ValueError, match="batch dimensions of a .* and b .* cannot be broadcast"):
        linalg.matmul(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((3, 4, 2)), device))
    with pytest.raises(TypeError, match="b has unsupported dtype"):
        linalg.matmul(x, np.array([["a"] * 2] * 4))
    with pytest.raises(TypeError, match="b must be array-like|b has unsupported dtype"):
        linalg.matmul(x, object())
    with pytest.raises(ValueError, match="reduce must be one of"):
        linalg.mm(x, put(np.ones((4, 2)), device), reduce="median")
    with pytest.raises(ValueError, match="mm: a must be 2-D"):
        linalg.mm(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((4, 2)), device))
    with pytest.raises(ValueError, match="bmm: batch sizes differ"):
        linalg.bmm(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((3, 4, 2)), device))
    with pytest.raises(ValueError, match="mv: v must be 1-D"):
        linalg.mv(x, put(np.ones((4, 1)), device))
    filled = gs.COO([[0]], [1.0], shape=(3,), fill_value=2.0, device=device)
    with pytest.raises(ValueError, match="a has fill value 2.0"):
        linalg.matmul(filled, put(np.ones(3), device))
    with pytest.raises(ValueError, match="tensordot: shape mismatch"):
        linalg.tensordot(x, put(np.ones((3, 4)), device), axes=([0], [1]))
    with pytest.raises(ValueError, match="axes: a lists 2 axes but b lists 1"):
        linalg.tensordot(x, put(np.ones((3, 4)), device), axes=([0, 1], [0]))
    with pytest.raises(ValueError, match="sparse_dense_matmul: sp_a must be 2-D"):
        linalg.sparse_dense_matmul(gs.random((2, 3, 4), density=0.5, seed=0, device=device), put(np.ones((4, 2)), device))
    with pytest.raises(TypeError, match="hspmm: mat2 must be dense"):
        linalg.hspmm(x, x.T)
    with pytest.raises(ValueError, match="sampled_addmm: shapes do not line up"):
        linalg.sampled_addmm(x, put(np.ones((3, 2)), device), put(np.ones((2, 5)), device))


def test_operands_on_different_devices_are_refused():
    from _helpers import cuda_devices
    if not cuda_devices():
        pytest.skip("needs a CUDA device")
    x = gs.random((3, 3), density=0.5, seed=0, device="cpu")
    y = gs.random((3, 3), density=0.5, seed=0, device="cuda")
    with pytest.raises(ValueError, match="different devices: a is on cpu and b is on cuda:0"):
        linalg.matmul(x, y)
    with pytest.raises(ValueError, match="different devices"):
        linalg.matmul(x, cuda_module().ones((3, 2)))


def test_unsorted_coo_operand_warns(device):
    x = gs.COO([[1, 0], [0, 1]], [1.0, 2.0], shape=(2, 2), device=device)
    with pytest.warns(GpuSparseEfficiencyWarning, match=r"\.tocsr\(\)"):
        x @ put(np.ones(2), device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuSparseEfficiencyWarning)
        x.tocsr() @ put(np.ones(2), device)
        x.coalesce() @ put(np.ones(2), device)


def test_exported_names_are_the_ops():
    """Where gpusparse exports a product, it is the function tested here."""
    for name in linalg.__all__:
        exported = getattr(gs, name, None)
        assert exported is None or exported is getattr(linalg, name), name


def test_cusparse_support_table():
    """What the CUDA twin sends to cuSPARSE (the table needs no GPU to read)."""
    pytest.importorskip("cupy")
    from gpusparse._kernels.cuda import _cusparse
    assert _cusparse.supports("spmm", np.float32, np.int32, np.int32, trans="T")
    assert _cusparse.supports("spmv", np.complex128, np.int64, np.int64, trans="H")
    assert not _cusparse.supports("spmm", np.int32, np.int32, np.int32)
    assert not _cusparse.supports("spmv", np.float64, np.int32, np.int64)  # mixed index types
    assert _cusparse.supports("spgemm", np.complex64, np.int32)
    assert not _cusparse.supports("spgemm", np.float64, np.int32, trans="T")
    assert not _cusparse.supports("spgemm", np.int64, np.int32)


def test_integer_spgemm_on_cuda_warns_and_is_exact(device):
    if not device.is_cuda:
        pytest.skip("the cuSPARSE dispatch exists on CUDA only")
    dense = (np.arange(400, dtype=np.int32).reshape(20, 20) % 7) * (np.eye(20, k=3, dtype=np.int32) + 1)
    x = gs.fromdense(dense, format="csr", device=device)
    with pytest.warns(GpuSparseEfficiencyWarning, match="no cuSPARSE SpGEMM"):
        y = x @ x
    assert_product(y, dense @ dense)
