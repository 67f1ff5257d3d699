"""gpusparse.autograd against torch.sparse: the same results and the same gradients, torch tensors in and out.

Operands are torch sparse tensors that require grad (the tensor form);
the gradient of an uncoalesced operand is coalesced, as torch's is, and is
compared with torch's at each coordinate.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402
from _autograd_cases import as_layout, dense_of, leaf, parts, random_coo, tdev  # noqa: E402,F401

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _sparse(layout, shape, nnz, dev, seed=0, dense_shape=()):
    return as_layout(random_coo(shape, nnz, _gen(seed), dense_shape=dense_shape), layout).to(dev)


def _dense(*shape, dev, seed=1):
    return torch.randn(shape, generator=_gen(seed), dtype=F64).to(dev)


def _pair(*tensors):
    """Two independent leaf copies of each tensor: one for gpusparse, one for torch."""
    mine = tuple(leaf(t) if t.layout != torch.strided else t.clone().requires_grad_() for t in tensors)
    theirs = tuple(leaf(t) if t.layout != torch.strided else t.clone().requires_grad_() for t in tensors)
    return mine, theirs


def _backward(out, seed=7):
    d = dense_of(out)
    w = torch.randn(d.shape, generator=_gen(seed), dtype=d.dtype).to(d.device)
    (d * w).sum().backward()
    return d.detach()


def _assert_grad(mine, theirs):
    if theirs.grad is None:
        assert mine.grad is None or not dense_of(mine.grad).any()
        return
    g = mine.grad
    expected = theirs.grad.to_dense() if theirs.grad.layout != torch.strided else theirs.grad
    expected = expected.to(g.device)  # (a reference computed on the CPU)
    assert g.layout == mine.layout
    if g.layout == torch.strided:
        torch.testing.assert_close(g, expected)
        return
    # a sparse gradient lies on the operand's pattern (coalesced, as torch gives it: each coordinate
    # once, carrying the gradient at its position; torch gives some gradients densely: compare on the pattern)
    if g.layout == torch.sparse_coo:
        assert torch.equal(g._indices(), mine.detach().coalesce()._indices())
    else:
        assert torch.equal(g.to_sparse_coo()._indices(), mine.detach().to_sparse_coo()._indices())
    coo = g.to_sparse_coo() if g.layout != torch.sparse_coo else g
    torch.testing.assert_close(coo._values(), expected[tuple(coo._indices())])


def _compare(mine_fn, theirs_fn, tensors, seed=7, reference_on_cpu=False):
    """Forward values and gradients of ``mine_fn`` equal torch's ``theirs_fn``.

    ``reference_on_cpu``: torch runs ``theirs_fn`` on CPU copies (for what it
    implements on the CPU alone, such as ``torch.sparse.mm`` with ``reduce``).
    """
    mine, theirs = _pair(*tensors)
    if reference_on_cpu:
        theirs = _pair(*(t.detach().cpu() for t in tensors))[1]
    a = _backward(mine_fn(*mine), seed)
    b = _backward(theirs_fn(*theirs), seed)
    torch.testing.assert_close(a, b.to(a.device))
    for m, t in zip(mine, theirs):
        _assert_grad(m, t)


@pytest.mark.parametrize("layout", ["coo_dup", "coo", "csr"])
def test_mm_addmm_mv(layout, tdev):
    a, b = _sparse(layout, (6, 5), 12, tdev), _dense(5, 3, dev=tdev)
    _compare(ga.mm, torch.sparse.mm, (a, b))
    inp, x = _dense(6, 3, dev=tdev, seed=2), _dense(5, dev=tdev, seed=3)
    _compare(lambda i, a, b: ga.addmm(i, a, b, beta=0.5, alpha=2.0),
             lambda i, a, b: torch.sparse.addmm(i, a, b, beta=0.5, alpha=2.0), (inp, a, b))
    _compare(ga.mv, torch.mv, (a, x))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce(reduce, tdev):
    a, b = _sparse("csr", (6, 5), 14, tdev), _dense(5, 3, dev=tdev)
    # torch implements the reduced product for CSR on the CPU only (NotImplementedError on CUDA)
    _compare(lambda a, b: ga.mm(a, b, reduce=reduce), lambda a, b: torch.sparse.mm(a, b, reduce), (a, b),
             reference_on_cpu=True)


def test_sparse_dense_matmul_and_dense_left(tdev):
    a, b = _sparse("coo", (6, 5), 12, tdev), _dense(3, 6, dev=tdev)
    _compare(lambda a, b: ga.sparse_dense_matmul(a, b, adjoint_a=True, adjoint_b=True),
             lambda a, b: torch.sparse.mm(a.t(), b.t()), (a, b))
    d = _dense(2, 6, dev=tdev)
    _compare(ga.mm, lambda d, a: torch.sparse.mm(a.t(), d.t()).t(), (d, a))


def test_bmm(tdev):
    a, b = _sparse("coo", (3, 4, 5), 20, tdev), _dense(3, 5, 2, dev=tdev)
    _compare(ga.bmm, torch.bmm, (a, b))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_spgemm(layout, tdev):
    a, b = _sparse(layout, (6, 5), 12, tdev), _sparse(layout, (5, 4), 9, tdev, seed=3)
    out = ga.spgemm(a, b)
    assert out.layout == a.layout
    _compare(ga.spgemm, lambda a, b: torch.sparse.mm(a.to_sparse_coo(), b.to_sparse_coo()), (a, b))


def test_sampled_addmm(tdev):
    a = _sparse("csr", (6, 5), 12, tdev)
    m1, m2 = _dense(6, 2, dev=tdev), _dense(2, 5, dev=tdev, seed=2)
    _compare(lambda a, x, y: ga.sampled_addmm(a, x, y, beta=0.5, alpha=2.0),
             lambda a, x, y: torch.sparse.sampled_addmm(a, x, y, beta=0.5, alpha=2.0), (a, m1, m2))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), 2, (0, 2)])
def test_sum(dim, tdev):
    a = _sparse("coo_dup", (6, 5), 12, tdev, dense_shape=(2,))
    _compare(lambda a: ga.sum(a, dim), lambda a: torch.sparse.sum(a) if dim is None else torch.sparse.sum(a, dim),
             (a,))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax(dim, log, tdev):
    a = _sparse("coo_dup", (6, 5), 12, tdev)
    mine, theirs = (ga.log_softmax, torch.sparse.log_softmax) if log else (ga.softmax, torch.sparse.softmax)
    # torch's sparse softmax differentiates coalesced input only
    _compare(lambda a: mine(a, dim), lambda a: theirs(a, dim), (a.coalesce(),))
    out = mine(a, dim)
    assert out.is_coalesced()
    torch.testing.assert_close(out.to_dense(), theirs(a.coalesce(), dim).to_dense())


@pytest.mark.parametrize("layout", ["coo_dup", "coo", "csr", "csc"])
def test_to_dense_mask_mul_transpose(layout, tdev):
    a, d = _sparse(layout, (6, 5), 12, tdev), _dense(6, 5, dev=tdev)
    mask = a.detach()
    _compare(lambda d: ga.sparse_mask(d, mask), lambda d: d.sparse_mask(mask.to_sparse_coo().coalesce()), (d,))
    if layout == "csc":  # torch differentiates neither to_dense nor transpose of CSC tensors
        torch.testing.assert_close(ga.to_dense(a), a.to_dense())
        return
    _compare(ga.to_dense, lambda a: a.to_dense(), (a,))
    _compare(lambda a: ga.transpose(a, 0, 1), lambda a: a.to_dense().t(), (a,))
    if layout.startswith("coo"):
        _compare(ga.mul, lambda a, d: a * d, (a, d))
        _compare(ga.coalesce, lambda a: a.coalesce(), (a,))


def test_mul_broadcasts(tdev):
    a, row = _sparse("csr", (6, 5), 12, tdev), _dense(5, dev=tdev)
    _compare(ga.mul, lambda a, r: a.to_dense() * r * (a.to_dense() != 0), (a, row))


def test_transpose_layouts(tdev):
    a = _sparse("csr", (6, 5), 12, tdev)
    t = ga.transpose(a, 0, 1)
    assert t.layout == torch.sparse_csc and t.shape == (5, 6)
    p = ga.transpose(parts(a, a.values()), 1, 0)
    assert isinstance(p, ga.CSCParts)
    c = ga.transpose(_sparse("coo", (6, 5), 12, tdev), 0, 1)
    assert not c.is_coalesced()


@pytest.mark.parametrize("center", [False, True])
def test_lowrank(center, tdev):
    a = _sparse("coo", (7, 5), 20, tdev)

    def mine(a):
        torch.manual_seed(3)
        U, S, V = ga.pca_lowrank(a, q=3) if center else ga.svd_lowrank(a, q=3)
        return U @ torch.diag(S) @ V.T

    def theirs(a):
        torch.manual_seed(3)
        U, S, V = torch.pca_lowrank(a, q=3) if center else torch.svd_lowrank(a, q=3)
        return U @ torch.diag(S) @ V.T

    # torch differentiates sparse input of svd_lowrank, but not pca_lowrank's centring: compare with dense
    _compare(mine, theirs if not center else lambda a: theirs(a.to_dense()), (a,))


def test_parts_match_tensors(tdev):
    a, b = _sparse("coo_dup", (6, 5), 12, tdev), _dense(5, 3, dev=tdev)
    v = a._values().detach().clone().requires_grad_()
    out = ga.mm(ga.COOParts(a._indices(), v, tuple(a.shape)), b)
    out.sum().backward()
    t = leaf(a)
    torch.testing.assert_close(ga.mm(t, b), out)
    ga.mm(t, b).sum().backward()
    torch.testing.assert_close(t.grad.to_dense()[tuple(a._indices())], v.grad)
    plain = ga.softmax((a._indices(), v, tuple(a.shape)), 1)
    assert isinstance(plain, ga.COOParts) and plain.is_coalesced


@pytest.mark.parametrize("layout", ["coo_dup", "csr"])
def test_sparse_results_feed_torch_operations(layout, tdev):
    """Sparse results (torch tensors) differentiate through torch's own sparse operations too."""
    a = _sparse(layout, (6, 5), 12, tdev)
    w = _dense(5, dev=tdev)

    def through_torch(a):
        out = ga.softmax(a, 1)
        out = out if out.layout == torch.sparse_coo else out.to_sparse_coo()
        return (torch.sparse.sum(out * 3.0, 0).to_dense() * w).sum()

    def ours(a):
        return (ga.to_dense(ga.sum(ga.softmax(a, 1), 0)) * 3.0 * w).sum()

    (m1,), (m2,) = _pair(a)
    torch.testing.assert_close(through_torch(m1), ours(m2))
    through_torch(m1).backward()
    ours(m2).backward()
    assert m1.grad.layout == m2.grad.layout == a.layout
    torch.testing.assert_close(m1.grad.to_sparse_coo()._values(), m2.grad.to_sparse_coo()._values())


def test_errors_name_the_argument():
    a = torch.eye(3, dtype=F64).to_sparse()
    with pytest.raises(TypeError, match="b must be a dense"):
        ga.mm(a, a)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        ga.mm(a, torch.ones(2, 2, dtype=F64))
    with pytest.raises(TypeError, match="dtype"):
        ga.mm(a, torch.ones(3, 2, dtype=torch.float32))
    with pytest.raises(TypeError, match="x must be a torch sparse tensor"):
        ga.softmax([1, 2], 0)
    with pytest.raises(TypeError, match="as a tuple"):
        ga.to_dense((1, 2))
    with pytest.raises(ValueError, match="reduce"):
        ga.mm(a, torch.ones(3, 2, dtype=F64), reduce="prod")
    with pytest.raises(IndexError, match="dim"):
        ga.sum(a, 5)
    with pytest.raises(ValueError, match="sparse and"):
        ga.transpose(torch.ones(2, 2, 2, dtype=F64).to_sparse(1), 0, 1)
    with pytest.raises(TypeError, match="floating"):
        ga.softmax(torch.eye(2, dtype=torch.int64).to_sparse(), 0)
    with pytest.raises(ValueError, match="CSC leaf"):
        ga.mm(torch.eye(2, dtype=F64).to_sparse_csc().requires_grad_(), torch.ones(2, 1, dtype=F64))
    with pytest.raises(ValueError, match="q must be"):
        ga.svd_lowrank(a, q=5)


@settings(max_examples=15)
@given(m=st.integers(0, 5), k=st.integers(0, 5), n=st.integers(0, 3), nnz=st.integers(0, 12),
       layout=st.sampled_from(["coo_dup", "coo", "csr", "csc"]), seed=st.integers(0, 2**16))
def test_mm_sum_softmax_against_dense_oracle(m, k, n, nnz, layout, seed):
    """Random shapes (0- and 1-size included): results and gradients against dense torch on the pattern."""
    gen = _gen(seed)
    a = as_layout(random_coo((m, k), nnz if m * k else 0, gen, empty_row=False), layout)
    if layout == "csc":  # torch accumulates no CSC gradient into a leaf: go through the parts
        a = a.to_sparse_csr()
    b = torch.randn(k, n, generator=gen, dtype=F64)
    dense = a.to_dense()
    on = torch.zeros(m, k, dtype=torch.bool)
    on[tuple(a.to_sparse_coo()._indices())] = True
    for op, oracle in ((lambda x: ga.mm(x, b), lambda d: d @ b),
                       (lambda x: ga.to_dense(ga.sum(x, 1)), lambda d: d.sum(1))):
        x = leaf(a)
        d = dense.clone().requires_grad_()
        w = torch.randn(oracle(dense).shape, generator=gen, dtype=F64)
        got = op(x)
        torch.testing.assert_close(got, oracle(d).detach())
        (got * w).sum().backward()
        (oracle(d) * w).sum().backward()
        if x.grad is not None:
            coo = x.grad.to_sparse_coo()
            torch.testing.assert_close(coo._values(), d.grad[tuple(coo._indices())])
    if m and k:
        soft = ga.softmax(a, 1).to_dense()
        masked = torch.where(on, dense, float("-inf")).softmax(1).nan_to_num(0.0)
        torch.testing.assert_close(soft, masked)
