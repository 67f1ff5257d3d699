"""Gradients through the semiring products ``gpusparse.autograd.mxm`` / ``mxv``, with and without masks.

* ``plus_times`` against ``torch.sparse.mm`` (values, the sparse operand's
  gradient on its pattern, the dense operand's ``A.T @ G``), masked or not;
* ``gradcheck`` (float64, finite differences) from the values leaf through
  ``torch.sparse_coo_tensor`` (duplicates) / ``sparse_csr_tensor`` /
  ``sparse_csc_tensor``, for ``plus_times`` and the tropical / max-product
  semirings at random continuous values (away from ties);
* the tropical subgradient against a dense oracle that loops over the
  terms, on small-integer values where ties are common: each output's
  gradient goes to the tied term of lowest inner index;
* forward-only semirings, and the errors.

Hypothesis draws the shapes (0- and 1-size dimensions included), patterns
with duplicates, masks and the semiring; every test runs on each device of
the ``device`` fixture that torch has (the CUDA parametrisation is skipped
where torch sees no GPU, as under the CPU emulation).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import gpusparse as gs  # noqa: E402
import gpusparse.autograd as ga  # noqa: E402
from _autograd_cases import as_layout, random_coo, tdev  # noqa: E402,F401
from test_autograd_constructors import build, components, scattered, stored  # noqa: E402

F64 = torch.float64
LAYOUTS = ("coo_dup", "coo", "csr", "csc")
TROPICAL = ("max_plus", "min_plus", "max_times", "min_times")
#: ``tdev`` only names a device: nothing to reset between examples.
EXAMPLES = settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _finite(x):
    """``x`` with the monoid identities (outputs without a term) replaced by 0, for finite differences."""
    return torch.where(x.isinf(), 0, x)


# --------------------------------------------------------------------------
# The dense oracle: a loop over the terms
# --------------------------------------------------------------------------

def oracle(semiring, a, present, b, allowed, g):
    """``(out, grad_a, grad_b)`` of ``semiring`` for dense ``a`` with stored positions ``present``.

    ``out[i, j]`` reduces ``mul(a[i, k], b[k, j])`` over the stored
    ``(i, k)`` (the identity where none, or where ``allowed`` is False);
    the gradient ``g[i, j]`` goes to every term for ``plus``, to the first
    term (lowest ``k``) reaching the extreme for ``min`` / ``max``.
    """
    add, mul = semiring.split("_")
    a, b, g = (np.asarray(x, dtype=np.float64) for x in (a, b, g))
    m, n = a.shape[0], b.shape[1]
    identity = {"plus": 0.0, "min": np.inf, "max": -np.inf}[add]
    out = np.full((m, n), identity)
    ga_, gb_ = np.zeros_like(a), np.zeros_like(b)
    for i in range(m):
        ks = np.flatnonzero(present[i])
        for j in range(n):
            if not allowed[i, j] or not len(ks):
                continue
            terms = [a[i, k] * b[k, j] if mul == "times" else a[i, k] + b[k, j] for k in ks]
            if add == "plus":
                out[i, j] = sum(terms)
                chosen = ks
            else:
                out[i, j] = max(terms) if add == "max" else min(terms)
                chosen = [ks[terms.index(out[i, j])]]
            for k in chosen:
                ga_[i, k] += g[i, j] * (b[k, j] if mul == "times" else 1.0)
                gb_[k, j] += g[i, j] * (a[i, k] if mul == "times" else 1.0)
    return out, ga_ * present, gb_


@st.composite
def _cases(draw, semirings=("plus_times",) + TROPICAL):
    m, k, n = draw(st.integers(0, 5)), draw(st.integers(0, 5)), draw(st.integers(0, 3))
    nnz = draw(st.integers(0, 12))
    layout = draw(st.sampled_from(LAYOUTS))
    semiring = draw(st.sampled_from(semirings))
    mask = draw(st.sampled_from([None, "dense", "sparse"]))
    complement = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return m, k, n, nnz, layout, semiring, mask, complement, seed


def _small_integers(shape, gen):
    """float64 values in -3..3: ties between terms are common."""
    return torch.randint(-3, 4, shape, generator=gen).to(F64)


def _operand(layout, shape, nnz, seed, integers):
    t = random_coo(shape, nnz, _gen(seed)) if all(shape) else \
        torch.sparse_coo_tensor(torch.zeros((2, 0), dtype=torch.int64), torch.zeros(0, dtype=F64), shape,
                                check_invariants=True)
    if integers:
        t = torch.sparse_coo_tensor(t._indices(), _small_integers(t._values().shape, _gen(seed + 1)), shape)
    return as_layout(t, layout)


def _mask_of(kind, shape, seed, device):
    """A mask of ``kind`` (None, a dense bool tensor or a sparse COO tensor) and its dense selection."""
    if kind is None:
        return None, torch.ones(shape, dtype=torch.bool)
    selected = torch.rand(shape, generator=_gen(seed + 2)) < 0.6
    if kind == "dense":
        return selected.to(device), selected
    return selected.to(F64).to_sparse().to(device), selected


def _index_and_values(t):
    """The index tensors and the values of torch sparse ``t`` (COO, CSR or CSC)."""
    if t.layout == torch.sparse_coo:
        return [t._indices()], t._values()
    if t.layout == torch.sparse_csr:
        return [t.crow_indices(), t.col_indices()], t.values()
    return [t.ccol_indices(), t.row_indices()], t.values()


def _coords(layout, index):
    """``(rows, cols)`` of each stored entry in storage order."""
    if layout.startswith("coo"):
        return tuple(index[0])
    compressed, plain = index
    major = torch.repeat_interleave(torch.arange(compressed.shape[0] - 1), compressed.diff())
    return (major, plain) if layout == "csr" else (plain, major)


@EXAMPLES
@given(case=_cases())
def test_against_dense_oracle(case, tdev):
    """Values and (sub)gradients of every differentiable semiring, ties included, masks and complements."""
    m, k, n, nnz, layout, semiring, mask_kind, complement, seed = case
    index, values = _index_and_values(_operand(layout, (m, k), nnz, seed, integers=True))
    b = _small_integers((k, n), _gen(seed + 3))
    mask, selected = _mask_of(mask_kind, (m, n), seed, tdev)
    allowed = ~selected if (complement and mask is not None) else selected
    g = _small_integers((m, n), _gen(seed + 4))
    want_out, want_ga, want_gb = oracle(semiring, scattered(layout, index, values, (m, k)),
                                        stored(layout, index, (m, k)).numpy(), b, allowed.numpy(), g)

    v = values.to(tdev).requires_grad_()
    bt = b.to(tdev).requires_grad_()
    out = ga.mxm(build(layout, [i.to(tdev) for i in index], v, (m, k)), bt, semiring, mask=mask,
                 complement=complement)
    (out * g.to(tdev)).sum().backward()
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want_out)
    rows, cols = _coords(layout, index)  # each duplicate receives the derivative at its coordinate
    np.testing.assert_array_equal(v.grad.cpu().numpy(), want_ga[rows.numpy(), cols.numpy()])
    np.testing.assert_array_equal(bt.grad.cpu().numpy(), want_gb)


@EXAMPLES
@given(case=_cases(semirings=("plus_times",)))
def test_plus_times_matches_torch_sparse_mm(case, tdev):
    """plus_times is torch.sparse.mm: the same values and gradients (a mask multiplies the output by 0/1)."""
    m, k, n, nnz, layout, _, mask_kind, complement, seed = case
    if layout == "csc":
        layout = "csr"  # torch.sparse.mm has no CSC gradient
    a = _operand(layout, (m, k), nnz, seed, integers=False).to(tdev)
    b = torch.randn((k, n), generator=_gen(seed + 3), dtype=F64).to(tdev)
    mask, selected = _mask_of(mask_kind, (m, n), seed, tdev)
    allowed = (~selected if (complement and mask is not None) else selected).to(tdev)
    w = torch.randn((m, n), generator=_gen(seed + 4), dtype=F64).to(tdev)

    def run(product):
        leaf, bl = a.detach().clone().requires_grad_(), b.clone().requires_grad_()
        out = product(leaf, bl)
        (out * w).sum().backward()
        return out.detach(), leaf.grad.to_dense(), bl.grad

    mine = run(lambda x, y: ga.mxm(x, y, "plus_times", mask=mask, complement=complement))
    theirs = run(lambda x, y: torch.where(allowed, torch.sparse.mm(x, y), 0))
    for got, want in zip(mine, theirs):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("semiring", ("plus_times",) + TROPICAL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_through_constructors(layout, semiring, tdev):
    """Finite differences from the values leaf through torch's constructors (random values: no ties)."""
    index, values = components(layout, (6, 5), 12)
    index = [i.to(tdev) for i in index]
    v = values.to(tdev).requires_grad_()
    b = torch.randn((5, 3), generator=_gen(3), dtype=F64).to(tdev).requires_grad_()
    mask = (torch.rand((6, 3), generator=_gen(4)) < 0.7).to(tdev)

    def fn(v, b):
        return _finite(ga.mxm(build(layout, index, v, (6, 5)), b, semiring, mask=mask))

    assert torch.autograd.gradcheck(fn, (v, b), atol=1e-6, rtol=1e-5)
    x = torch.randn(5, generator=_gen(5), dtype=F64).to(tdev).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda v, x: _finite(ga.mxv(build(layout, index, v, (6, 5)), x, semiring)), (v, x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("semiring", TROPICAL)
def test_tie_goes_to_lowest_inner_index(semiring, tdev):
    """Equal terms: the whole gradient goes to the first (lowest k), not split as torch's amax splits it."""
    i = torch.tensor([[0, 0, 0], [0, 1, 2]], device=tdev)
    v = torch.tensor([2.0, 2.0, 2.0], dtype=F64, device=tdev, requires_grad=True)
    b = torch.ones((3, 1), dtype=F64, device=tdev, requires_grad=True)
    ga.mxm(torch.sparse_coo_tensor(i, v, (1, 3)).to(tdev), b, semiring).sum().backward()
    torch.testing.assert_close(v.grad, torch.tensor([1.0, 0.0, 0.0], dtype=F64, device=tdev))
    torch.testing.assert_close(b.grad[:, 0], torch.tensor([1.0 if semiring.endswith("plus") else 2.0, 0.0, 0.0],
                                                          dtype=F64, device=tdev))


@EXAMPLES
@given(m=st.integers(0, 5), k=st.integers(0, 5), nnz=st.integers(0, 10), seed=st.integers(0, 2**16),
       semiring=st.sampled_from(("plus_times",) + TROPICAL), masked=st.booleans())
def test_mxv_is_mxm_of_a_column(m, k, nnz, seed, semiring, masked, tdev):
    """mxv(a, v) is mxm(a, v[:, None])[:, 0], values and gradients, a 1-D mask as the column's mask."""
    a = _operand("coo_dup", (m, k), nnz, seed, integers=True).to(tdev)
    x = _small_integers((k,), _gen(seed + 3)).to(tdev)
    selected = (torch.rand((m,), generator=_gen(seed)) < 0.5).to(tdev)
    mask = selected.to(F64).to_sparse() if masked else None

    def run(product):
        leaf, xl = a.detach().clone().requires_grad_(), x.clone().requires_grad_()
        out = product(leaf, xl)
        _finite(out).sum().backward()
        return out.detach(), leaf.grad.to_dense(), xl.grad

    mine = run(lambda s, y: ga.mxv(s, y, semiring, mask=mask))
    column_mask = None if mask is None else selected[:, None]
    theirs = run(lambda s, y: ga.mxm(s, y[:, None], semiring, mask=column_mask)[:, 0])
    for got, want in zip(mine, theirs):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("semiring", ["lor_land", "any_pair", "plus_pair", "min_first", "max_second", "plus_plus"])
def test_no_gradient_raises_type_error_naming_the_semiring(semiring, tdev):
    a = torch.tensor([[1.0, 0.0], [2.0, 3.0]], dtype=F64, device=tdev).to_sparse()
    b = torch.ones((2, 2), dtype=F64, device=tdev)
    if semiring == "lor_land":
        a, b = a.bool(), b.bool()
        with torch.no_grad():
            out = ga.mxm(a, b, semiring)
        want = gs.mxm(gs.fromdense(a.cpu().to_dense().numpy(), format="csr"), b.cpu().numpy(), semiring)
        np.testing.assert_array_equal(out.cpu().numpy(), want)
        return
    with pytest.raises(TypeError, match=semiring):
        ga.mxm(a.requires_grad_(), b, semiring)
    with pytest.raises(TypeError, match=semiring):
        ga.mxv(a.detach(), b[:, 0].requires_grad_(), semiring)
    with torch.no_grad():  # forward only: as gpusparse.mxm computes it
        out = ga.mxm(a, b, semiring)
    want = gs.mxm(gs.fromdense(a.detach().cpu().to_dense().numpy(), format="csr"), b.cpu().numpy(), semiring)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_errors(tdev):
    a = torch.eye(3, dtype=F64, device=tdev).to_sparse()
    b = torch.ones((3, 2), dtype=F64, device=tdev)
    with pytest.raises(ValueError, match="unknown semiring"):
        ga.mxm(a, b, "plus_nothing")
    with pytest.raises(ValueError, match="do not align"):
        ga.mxm(a, torch.ones((2, 2), dtype=F64, device=tdev))
    with pytest.raises(ValueError, match="mask has shape"):
        ga.mxm(a, b, mask=torch.ones((3, 3), dtype=torch.bool, device=tdev))
    with pytest.raises(TypeError, match="dtype"):
        ga.mxm(a, b.float())
    with pytest.raises(TypeError, match="dense"):
        ga.mxm(a, a)
    with pytest.raises(ValueError, match="2-D"):
        ga.mxm(torch.ones((2, 2, 2), dtype=F64, device=tdev).to_sparse(), b)
    with pytest.raises(ValueError, match="1-D"):
        ga.mxv(a, b)


def test_sparse_gradient_keeps_layout_and_pattern(tdev):
    """A torch sparse leaf gets a sparse gradient of its layout on its pattern (CSR here), masked outputs none."""
    a = torch.tensor([[0.0, 2.0, 1.0], [4.0, 0.0, 0.0]], dtype=F64, device=tdev).to_sparse_csr().requires_grad_()
    b = torch.arange(6.0, dtype=F64, device=tdev).reshape(3, 2)
    mask = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=F64, device=tdev).to_sparse()
    ga.mxm(a, b, "max_plus", mask=mask).sum().backward()
    assert a.grad.layout == torch.sparse_csr
    assert torch.equal(a.grad.crow_indices(), a.crow_indices()) and torch.equal(a.grad.col_indices(), a.col_indices())
    # out[0, 0] = max(2 + b[1, 0], 1 + b[2, 0]) = 1 + 4: the gradient goes to a[0, 2]
    torch.testing.assert_close(a.grad.to_dense(), torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=F64,
                                                               device=tdev))


@pytest.mark.parametrize("semiring", ["plus_times", "max_plus", "min_times"])
@pytest.mark.parametrize("masked", [False, True])
def test_opcheck(semiring, masked):
    """``gpusparse::semiring_mm``: schema, fake implementation, autograd registration, AOT dispatch."""
    a = as_layout(random_coo((5, 4), 9, _gen(0)), "csr")
    index = [a.crow_indices().clone(), a.col_indices().clone()]
    v = a.values().clone().requires_grad_()
    b = torch.randn(4, 3, dtype=F64, generator=_gen(1), requires_grad=True)
    allowed = torch.rand((5, 3), generator=_gen(2)) < 0.5 if masked else None
    torch.library.opcheck(torch.ops.gpusparse.semiring_mm, ("csr", index, v, [5, 4], b, semiring, allowed),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))


def test_compiles_fullgraph():
    """A parts-tuple operand traces under ``torch.compile(fullgraph=True)``, forward and backward."""
    i = torch.tensor([[0, 1, 1], [1, 0, 2]])
    b = torch.randn(3, 2, generator=_gen(0), dtype=F64)
    mask = torch.tensor([[True, False], [True, True]])

    def f(v, b):
        return ga.mxm(ga.COOParts(i, v, (2, 3), True), b, "max_plus", mask=mask).sum()

    grads = []
    for fn in (f, torch.compile(f, fullgraph=True)):
        v, bl = torch.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True), b.clone().requires_grad_()
        out = fn(v, bl)
        out.backward()
        grads.append((out.detach(), v.grad, bl.grad))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want)
