"""Gradients from the values leaf through torch's sparse constructors, against torch.sparse and a dense oracle.

The sparse operand is built inside the differentiated function --
``torch.sparse_coo_tensor(indices, v)`` (uncoalesced with duplicates, or
flagged coalesced), ``torch.sparse_csr_tensor`` or ``torch.sparse_csc_tensor``
over a leaf ``v`` -- so the gradient every operator hands back for its sparse
operand passes through torch's own backward of the constructor. ``v.grad``
must be the derivative of each stored value: the one torch.sparse's operator
gives where torch defines it, and always the one of a dense oracle (the
operand scattered with ``index_put(accumulate=True)``, duplicates adding up).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402
from _autograd_cases import random_coo, tdev  # noqa: E402,F401

F64 = torch.float64
LAYOUTS = ("coo_dup", "coo", "csr", "csc")


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def components(layout, shape, nnz, seed=0, dense_shape=()):
    """``(index, values)`` of a random operand: COO indices with duplicates (shuffled), coalesced, CSR or CSC."""
    t = random_coo(shape, nnz, _gen(seed), dense_shape=dense_shape)
    if layout == "coo_dup":
        return [t._indices()], t._values()
    c = t.coalesce()
    if layout == "coo":
        return [c._indices()], c._values()
    if layout == "csr":
        c = c.to_sparse_csr()
        return [c.crow_indices(), c.col_indices()], c.values()
    c = c.to_sparse_csc()
    return [c.ccol_indices(), c.row_indices()], c.values()


def build(layout, index, values, shape):
    """The torch sparse tensor over ``values`` (differentiable: torch's constructors)."""
    if layout.startswith("coo"):
        return torch.sparse_coo_tensor(index[0], values, shape, is_coalesced=layout == "coo")
    make = torch.sparse_csr_tensor if layout == "csr" else torch.sparse_csc_tensor
    return make(index[0], index[1], values, shape)


def scattered(layout, index, values, shape):
    """The dense oracle of the operand: its values added at their coordinates (differentiable)."""
    if layout.startswith("coo"):
        coords = tuple(index[0])
    else:
        compressed, plain = index
        major = torch.repeat_interleave(torch.arange(compressed.shape[0] - 1), compressed.diff())
        coords = (major, plain) if layout == "csr" else (plain, major)
    return torch.zeros(shape, dtype=values.dtype).index_put(coords, values, accumulate=True)


def stored(layout, index, shape):
    """Boolean mask of the stored positions (sparse dimensions)."""
    ones = torch.ones(index[-1].shape[-1], dtype=F64)
    return scattered(layout, index, ones, shape) != 0


def _dense_of(x):
    return x.to_dense() if x.layout != torch.strided else x


def _value_and_grads(fn, operand, dense, seed=7):
    """``fn``'s result (dense) and the gradients of the values leaf and of the dense arguments."""
    v = operand[1].clone().requires_grad_()
    ds = [d.clone().requires_grad_() for d in dense]
    out = _dense_of(fn(v, *ds))
    w = torch.randn(out.shape, generator=_gen(seed), dtype=out.dtype)
    (out * w).sum().backward()
    return out.detach(), v.grad, [d.grad for d in ds]


def _assert_same(mine, theirs):
    torch.testing.assert_close(mine[0], theirs[0])
    for a, b in zip((mine[1], *mine[2]), (theirs[1], *theirs[2])):
        if b is None or a is None:
            assert a is None or not a.any(), "a gradient where the reference has none"
            assert b is None or not b.any(), "no gradient where the reference has one"
        else:
            torch.testing.assert_close(_dense_of(a), _dense_of(b))  # (torch gives some gradients sparse)


def _dense(*shape, seed=1):
    return torch.randn(shape, generator=_gen(seed), dtype=F64)


def _case(name, layout):
    """``(shape, operand spec, dense args, ours, torch's or None, dense oracle)`` of operator ``name``.

    Each function takes ``(sparse-or-dense operand, *dense)``: ours and torch's get the operand built
    by :func:`build`, the oracle its dense scatter.
    """
    coo = layout.startswith("coo")
    if name == "mm":
        return ((6, 5), 12, (), [_dense(5, 3)], ga.mm, torch.sparse.mm if layout != "csc" else None,
                lambda d, b: d @ b)
    if name == "mm_dense_left":
        return ((6, 5), 12, (), [_dense(2, 6)], lambda s, d: ga.mm(d, s),
                (lambda s, d: torch.sparse.mm(s.t(), d.t()).t()) if coo else None, lambda a, d: d @ a)
    if name == "addmm":
        return ((6, 5), 12, (), [_dense(6, 3, seed=2), _dense(5, 3)],
                lambda s, i, b: ga.addmm(i, s, b, beta=0.5, alpha=2.0),
                (lambda s, i, b: torch.sparse.addmm(i, s, b, beta=0.5, alpha=2.0)) if layout != "csc" else None,
                lambda d, i, b: 0.5 * i + 2.0 * (d @ b))
    if name == "mv":
        return ((6, 5), 12, (), [_dense(5)], ga.mv, torch.mv if coo else None, lambda d, x: d @ x)
    if name == "sparse_dense_matmul":
        return ((6, 5), 12, (), [_dense(3, 6)], lambda s, b: ga.sparse_dense_matmul(s, b, True, True),
                (lambda s, b: torch.sparse.mm(s.t(), b.t())) if coo else None, lambda d, b: d.T @ b.T)
    if name.startswith("mm_"):
        reduce = name[3:]
        # torch reduces CSR only; the peer of a COO operand is the CSR of its coalesced value
        peer = {"csr": lambda s, b: torch.sparse.mm(s, b, reduce),
                "coo_dup": lambda s, b: torch.sparse.mm(s.coalesce().to_sparse_csr(), b, reduce),
                "coo": lambda s, b: torch.sparse.mm(s.to_sparse_csr(), b, reduce),
                "csc": lambda s, b: torch.sparse.mm(s.to_sparse_csr(), b, reduce)}[layout]
        return ((6, 5), 14, (), [_dense(5, 3)], lambda s, b: ga.mm(s, b, reduce=reduce), peer, None)
    if name == "bmm":
        return ((3, 4, 5), 20, (), [_dense(3, 5, 2)], ga.bmm, torch.bmm, lambda d, b: d @ b)
    if name == "spgemm":
        other = build("coo", *components("coo", (5, 4), 9, seed=3), (5, 4)).detach()
        if layout == "csr":
            other = other.to_sparse_csr()
        elif layout == "csc":
            other = other.to_sparse_csc()
        return ((6, 5), 12, (), [], lambda s: ga.spgemm(s, other),
                (lambda s: torch.sparse.mm(s, other)) if coo else None, lambda d: d @ other.to_dense())
    if name == "sampled_addmm":
        def oracle(d, x, y):
            return torch.where(d != 0, 0.5 * d + 2.0 * (x @ y), 0.0)  # the stored positions (values nonzero)
        return ((6, 5), 12, (), [_dense(6, 2), _dense(2, 5, seed=2)],
                lambda s, x, y: ga.sampled_addmm(s, x, y, beta=0.5, alpha=2.0),
                (lambda s, x, y: torch.sparse.sampled_addmm(s, x, y, beta=0.5, alpha=2.0))
                if layout == "csr" else None, oracle)
    if name.startswith("sum"):
        dim = {"sum": None, "sum0": 0, "sum1": 1, "sum01": (0, 1), "sum2": 2, "sum02": (0, 2)}[name]
        dense_shape = (2,) if coo else ()
        if not coo and dim in (2, (0, 2)):
            dim = (1,) if dim == 2 else (0,)
        return ((6, 5), 12, dense_shape, [], lambda s: ga.sum(s, dim),
                (lambda s: torch.sparse.sum(s) if dim is None else torch.sparse.sum(s, dim)) if coo else None,
                lambda d: d.sum() if dim is None else d.sum(dim))
    if name in ("softmax", "log_softmax"):
        mine, theirs = (ga.softmax, torch.sparse.softmax) if name == "softmax" else \
            (ga.log_softmax, torch.sparse.log_softmax)
        # torch differentiates the softmax of coalesced operands: its peer of an uncoalesced one coalesces
        return ((6, 5), 12, (2,) if coo else (), [], lambda s: mine(s, 1),
                (lambda s: theirs(s.coalesce() if coo else s.to_sparse_coo(), 1)), None)
    if name == "to_dense":
        return ((6, 5), 12, (2,) if coo else (), [], ga.to_dense,
                (lambda s: s.to_dense()) if layout != "csc" else None, lambda d: d)
    if name == "mul":
        return ((6, 5), 12, (), [_dense(6, 5)], ga.mul, (lambda s, d: s * d) if coo else None,
                lambda a, d: a * d)
    if name == "coalesce":
        return ((6, 5), 12, (2,) if coo else (), [], ga.coalesce, (lambda s: s.coalesce()) if coo else None,
                lambda d: d)
    if name == "transpose":
        return ((6, 5), 12, (), [], lambda s: ga.transpose(s, 0, 1),
                (lambda s: s.transpose(0, 1)) if coo else None, lambda d: d.T)
    if name == "svd_lowrank":
        def lowrank(f):
            def run(s):
                torch.manual_seed(3)
                U, S, V = f(s, q=3)
                return U @ torch.diag(S) @ V.T
            return run
        return ((7, 5), 20, (), [], lowrank(ga.svd_lowrank), lowrank(torch.svd_lowrank) if coo else None,
                lowrank(torch.svd_lowrank))
    raise AssertionError(name)


OPERATORS = ("mm", "mm_dense_left", "addmm", "mv", "sparse_dense_matmul", "mm_mean", "mm_amax", "mm_amin",
             "bmm", "spgemm", "sampled_addmm", "sum", "sum0", "sum1", "sum01", "sum2", "sum02", "softmax",
             "log_softmax", "to_dense", "mul", "coalesce", "transpose", "svd_lowrank")


def _applies(name, layout):
    return not (name == "bmm" and not layout.startswith("coo"))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", OPERATORS)
def test_values_gradient_matches_torch(name, layout, tdev):
    """``v.grad`` through the constructor equals torch.sparse's and the dense oracle's."""
    if tdev.type != "cpu":
        pytest.skip("the references run on the CPU")
    if not _applies(name, layout):
        pytest.skip(f"{name} takes COO operands only")
    shape, nnz, dense_shape, dense, mine, theirs, oracle = _case(name, layout)
    index, values = components(layout, shape, nnz, dense_shape=dense_shape)
    full = (*shape, *dense_shape)
    got = _value_and_grads(lambda v, *d: mine(build(layout, index, v, full), *d), (index, values), dense)
    if theirs is not None:
        want = _value_and_grads(lambda v, *d: theirs(build(layout, index, v, full), *d), (index, values), dense)
        _assert_same(got, want)
    if oracle is not None:
        want = _value_and_grads(lambda v, *d: oracle(scattered(layout, index, v, full), *d), (index, values), dense)
        _assert_same(got, want)
    assert theirs is not None or oracle is not None


def test_duplicates_get_the_derivative_once():
    """Coordinate (0, 1) stored twice: each copy's gradient is the derivative there, [1, 1, 1] for mm (torch's)."""
    ones, weights = torch.ones(2, 1, dtype=F64), torch.arange(4.0, dtype=F64).reshape(2, 2)
    cases = ((lambda s: ga.mm(s, ones).sum(), lambda s: torch.sparse.mm(s, ones).sum(), [1.0, 1.0, 1.0]),
             (ga.sum, torch.sparse.sum, [1.0, 1.0, 1.0]),
             (lambda s: (ga.to_dense(s) * weights).sum(), lambda s: (s.to_dense() * weights).sum(), [1.0, 2.0, 1.0]))
    for mine, theirs, expected in cases:
        grads = []
        for f in (mine, theirs):
            v = torch.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
            f(torch.sparse_coo_tensor([[0, 1, 0], [1, 0, 1]], v, (2, 2))).backward()
            grads.append(v.grad)
        torch.testing.assert_close(grads[0], grads[1])
        torch.testing.assert_close(grads[0], torch.tensor(expected, dtype=F64))


def test_results_feed_back_with_duplicates():
    """An uncoalesced sparse result (COO transpose) differentiated by our operators and by torch's alike."""
    index, values = components("coo_dup", (6, 5), 12)

    def ours(v):
        return ga.sum(ga.transpose(build("coo_dup", index, v, (6, 5)), 0, 1), 1).to_dense()

    def theirs(v):
        return torch.sparse.sum(build("coo_dup", index, v, (6, 5)).transpose(0, 1), 1).to_dense()

    _assert_same(_value_and_grads(ours, (index, values), []), _value_and_grads(theirs, (index, values), []))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", OPERATORS)
def test_gradcheck_through_constructor(name, layout, tdev):
    """torch.autograd.gradcheck from the values leaf through torch's constructor (float64)."""
    if tdev.type != "cpu":
        pytest.skip("gradcheck runs on the CPU")
    if not _applies(name, layout) or name in ("mm_amax", "mm_amin"):  # max/min: not smooth at ties
        pytest.skip(f"{name} in {layout}: not differentiable here")
    shape, nnz, dense_shape, dense, mine, _, _ = _case(name, layout)
    index, values = components(layout, shape, nnz, dense_shape=dense_shape)
    full = (*shape, *dense_shape)
    v = values.clone().requires_grad_()
    ds = [d.clone().requires_grad_() for d in dense]
    assert torch.autograd.gradcheck(lambda v, *d: _dense_of(mine(build(layout, index, v, full), *d)), (v, *ds),
                                    atol=1e-6, rtol=1e-5)


def test_uncoalesced_output_gradient_adds_up():
    """A gradient handed to an uncoalesced sparse result with its own duplicates means their sum (as in torch)."""
    index, values = components("coo_dup", (6, 5), 12)
    got, want = [], []
    for f, out in ((lambda s: ga.transpose(s, 0, 1), got), (lambda s: s.transpose(0, 1), want)):
        v = values.clone().requires_grad_()
        result = f(build("coo_dup", index, v, (6, 5)))
        g = torch.sparse_coo_tensor(result._indices(), torch.arange(1.0, 1.0 + result._nnz(), dtype=F64),
                                    result.shape)  # the result's own (duplicated) pattern, uncoalesced
        out.append(torch.autograd.grad(result, v, g)[0])
    torch.testing.assert_close(got[0], want[0])


@pytest.mark.parametrize("layout", ["coo_dup", "coo"])
def test_gradgradcheck_through_constructor(layout, tdev):
    """Second derivatives of ``mm`` from the values leaf through ``sparse_coo_tensor`` (duplicates included).

    Only there: torch's own double backward through its constructors fails for ``to_dense`` of COO
    and for CSR tensors (torch.sparse.mm included); the parts tuples cover the other operators.
    """
    name = "mm"
    if tdev.type != "cpu":
        pytest.skip("gradgradcheck runs on the CPU")
    shape, nnz, dense_shape, dense, mine, _, _ = _case(name, layout)
    index, values = components(layout, shape, nnz, dense_shape=dense_shape)
    full = (*shape, *dense_shape)
    v = values.clone().requires_grad_()
    ds = [d.clone().requires_grad_() for d in dense]
    assert torch.autograd.gradgradcheck(lambda v, *d: _dense_of(mine(build(layout, index, v, full), *d)),
                                        (v, *ds), atol=1e-6, rtol=1e-5)
