"""torch.autograd.gradcheck (float64) of every gpusparse.autograd operator in every layout it takes.

Sparse operands are parts tuples over a values tensor that gradcheck
perturbs; the layouts are COO with duplicates (shuffled), coalesced COO,
CSR and CSC, with an empty row, plus hybrid COO where the operator takes
dense dimensions.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402
from _autograd_cases import LAYOUTS, as_layout, out_values, parts, random_coo, tdev, values_of  # noqa: E402,F401

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _sparse(layout, shape, nnz, dev, seed=0, dense_shape=()):
    t = as_layout(random_coo(shape, nnz, _gen(seed), dense_shape=dense_shape), layout).to(dev)
    return t, values_of(t).requires_grad_()


def _dense(*shape, dev, seed=1):
    return torch.randn(shape, generator=_gen(seed), dtype=F64).to(dev).requires_grad_()


def _check(fn, *inputs):
    assert torch.autograd.gradcheck(fn, inputs, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mm(layout, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    b = _dense(4, 3, dev=tdev)
    _check(lambda v, b: ga.mm(parts(a, v), b), v, b)
    d = _dense(2, 5, dev=tdev)
    _check(lambda v, d: ga.mm(d, parts(a, v)), v, d)


@pytest.mark.parametrize("reduce", ["mean", "max", "min"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mm_reduce(layout, reduce, tdev):
    a, v = _sparse(layout, (5, 4), 10, tdev)
    b = _dense(4, 3, dev=tdev)
    _check(lambda v, b: ga.mm(parts(a, v), b, reduce=reduce), v, b)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_addmm_mv(layout, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    b, inp, x = _dense(4, 3, dev=tdev), _dense(1, 3, dev=tdev, seed=2), _dense(4, dev=tdev, seed=3)
    _check(lambda i, v, b: ga.addmm(i, parts(a, v), b, beta=0.5, alpha=2.0), inp, v, b)
    _check(lambda v, x: ga.mv(parts(a, v), x), v, x)


@pytest.mark.parametrize("adjoint", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sparse_dense_matmul(layout, adjoint, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    b = _dense(*((3, 5) if adjoint == (True, True) else (5, 3) if adjoint[0] else (3, 4)), dev=tdev)
    _check(lambda v, b: ga.sparse_dense_matmul(parts(a, v), b, *adjoint), v, b)


@pytest.mark.parametrize("layout", ["coo_dup", "coo"])
def test_bmm(layout, tdev):
    a, v = _sparse(layout, (2, 3, 4), 10, tdev)
    b = _dense(2, 4, 2, dev=tdev)
    _check(lambda v, b: ga.bmm(parts(a, v), b), v, b)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_spgemm(layout, tdev):
    a, va = _sparse(layout, (5, 4), 9, tdev)
    b, vb = _sparse(layout, (4, 3), 7, tdev, seed=5)
    _check(lambda va, vb: ga.to_dense(ga.spgemm(parts(a, va), parts(b, vb))), va, vb)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sampled_addmm(layout, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    m1, m2 = _dense(5, 2, dev=tdev), _dense(2, 4, dev=tdev, seed=2)
    _check(lambda v, m1, m2: out_values(ga.sampled_addmm(parts(a, v), m1, m2, beta=0.5, alpha=2.0)), v, m1, m2)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sum(layout, dim, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    _check(lambda v: out_values(ga.sum(parts(a, v), dim)), v)


@pytest.mark.parametrize("dim", [0, 2, (1, 2), (0, 1)])
def test_sum_hybrid(dim, tdev):
    a, v = _sparse("coo_dup", (5, 4), 9, tdev, dense_shape=(2,))
    _check(lambda v: out_values(ga.sum(parts(a, v), dim)), v)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax(layout, dim, log, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    f = ga.log_softmax if log else ga.softmax
    _check(lambda v: out_values(f(parts(a, v), dim)), v)


@pytest.mark.parametrize("dim", [0, 2])
def test_softmax_hybrid(dim, tdev):
    a, v = _sparse("coo_dup", (5, 4), 9, tdev, dense_shape=(3,))
    _check(lambda v: out_values(ga.softmax(parts(a, v), dim)), v)


@pytest.mark.parametrize("layout", LAYOUTS + ("hybrid",))
def test_to_dense_sparse_mask_mul(layout, tdev):
    dense_shape = (2,) if layout == "hybrid" else ()
    a, v = _sparse("coo_dup" if layout == "hybrid" else layout, (5, 4), 9, tdev, dense_shape=dense_shape)
    d = _dense(5, 4, *dense_shape, dev=tdev)
    row = _dense(4, *dense_shape, dev=tdev, seed=4)
    _check(lambda v: ga.to_dense(parts(a, v)), v)
    _check(lambda d: out_values(ga.sparse_mask(d, parts(a, v.detach()))), d)
    _check(lambda v, r: out_values(ga.mul(parts(a, v), r)), v, row)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_coalesce_transpose(layout, tdev):
    a, v = _sparse(layout, (5, 4), 9, tdev)
    _check(lambda v: out_values(ga.coalesce(parts(a, v))), v)
    _check(lambda v: ga.to_dense(ga.transpose(parts(a, v), 0, 1)), v)


def test_empty_operand(tdev):
    a, v = _sparse("coo", (3, 4), 0, tdev)
    b = _dense(4, 2, dev=tdev)
    _check(lambda v, b: ga.mm(parts(a, v), b), v, b)
    _check(lambda v: out_values(ga.softmax(parts(a, v), 1)), v)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("layout", ["coo_dup", "csr"])
def test_lowrank(layout, center, tdev):
    a, v = _sparse(layout, (6, 5), 16, tdev)

    def singular_values(v):
        torch.manual_seed(0)
        if center:
            return ga.pca_lowrank(parts(a, v), q=3, niter=2)[1]
        return ga.svd_lowrank(parts(a, v), q=3, niter=2)[1]

    _check(singular_values, v)


@pytest.mark.parametrize("layout", ["coo_dup", "csr"])
def test_second_derivatives(layout, tdev):
    """The backward of the products, the masks and coalesce is differentiable itself."""
    a, v = _sparse(layout, (5, 4), 9, tdev)
    b, d = _dense(4, 3, dev=tdev), _dense(5, 4, dev=tdev, seed=2)
    m1, m2 = _dense(5, 2, dev=tdev, seed=3), _dense(2, 4, dev=tdev, seed=4)
    assert torch.autograd.gradgradcheck(lambda v, b: ga.mm(parts(a, v), b), (v, b))
    assert torch.autograd.gradgradcheck(lambda v, d: out_values(ga.mul(parts(a, v), d)), (v, d))
    assert torch.autograd.gradgradcheck(
        lambda v, m1, m2: out_values(ga.sampled_addmm(parts(a, v), m1, m2, beta=0.5)), (v, m1, m2))
