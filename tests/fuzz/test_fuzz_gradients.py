"""Gradients of random uncoalesced operands against torch.sparse's and a dense oracle's.

Each example draws a sparse operand -- shape with 0- and 1-size dimensions,
entries with duplicates in shuffled order, dense (hybrid) dimensions where
the operator takes them, COO through ``torch.sparse_coo_tensor`` or CSR
through ``torch.sparse_csr_tensor`` over a values leaf -- and runs one
operator of :mod:`gpusparse.autograd` forward and backward under a random
weighting of its result. The result and the gradients of the values leaf and
of every dense argument must equal those torch.sparse's own operator gives
(where torch runs it) and those of the dense oracle: the operand scattered
with ``index_put(accumulate=True)``, so a duplicate's gradient is the
derivative at its coordinate.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402

F64 = torch.float64
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def operands(draw, ndim=2, hybrid=False, csr=False, rows=None):
    """``(layout, index, values, size)``: uncoalesced COO (duplicates, shuffled), or CSR where ``csr``.

    ``rows`` fixes the first dimension.
    """
    shape = tuple(draw(st.integers(0, 4)) if d or rows is None else rows for d in range(ndim))
    dense_shape = (draw(st.integers(0, 2)),) if hybrid and draw(st.booleans()) else ()
    n = math.prod(shape)
    keys = draw(st.lists(st.integers(0, n - 1), max_size=8)) if n else []
    if keys:  # duplicates of drawn entries, in a shuffled order
        keys += draw(st.lists(st.sampled_from(keys), max_size=4))
        keys = draw(st.permutations(keys))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    coords = torch.tensor(np.array(np.unravel_index(np.array(keys, dtype=np.int64), shape)).reshape(ndim, -1),
                          dtype=torch.int64)
    layout = "csr" if csr and draw(st.booleans()) else "coo"
    if layout == "csr":  # torch's CSR holds each position once
        coords = torch.unique(coords[0] * shape[1] + coords[1]) if keys else coords[0]
        coords = torch.stack([coords // max(shape[1], 1), coords % max(shape[1], 1)]).reshape(2, -1)
        rows, cols = coords
        crow = torch.searchsorted(rows, torch.arange(shape[0] + 1))
        index = [crow, cols]
    else:
        index = [coords]
    values = torch.randn((coords.shape[1], *dense_shape), generator=gen, dtype=F64)
    return layout, index, values, (*shape, *dense_shape)


def build(layout, index, values, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if layout == "coo":
            return torch.sparse_coo_tensor(index[0], values, size, check_invariants=True)
        return torch.sparse_csr_tensor(index[0], index[1], values, size, check_invariants=True)


def scattered(layout, index, values, size):
    """The dense oracle of the operand (differentiable, duplicates adding up)."""
    if layout == "coo":
        coords = tuple(index[0])
    else:
        crow, cols = index
        coords = (torch.repeat_interleave(torch.arange(crow.shape[0] - 1), crow.diff()), cols)
    return torch.zeros(size, dtype=values.dtype).index_put(coords, values, accumulate=True)


def _dense_of(x):
    return x.to_dense() if x.layout != torch.strided else x


def _run(fn, values, dense, seed):
    """``fn(values leaf, *dense leaves)`` as a dense tensor, and the gradients of every leaf."""
    leaves = [values.clone().requires_grad_()] + [d.clone().requires_grad_() for d in dense]
    out = _dense_of(fn(*leaves))
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=F64)
    if out.requires_grad:
        (out * w).sum().backward()
    grads = [torch.zeros_like(x) if x.grad is None else _dense_of(x.grad) for x in leaves]
    return out.detach(), grads


def check(operand, dense, mine, theirs, oracle, seed=5):
    """Ours against torch's (unless torch refuses the case) and the oracle's: results and every gradient."""
    layout, index, values, size = operand
    got = _run(lambda v, *d: mine(build(layout, index, v, size), *d), values, dense, seed)
    references = [_run(lambda v, *d: oracle(scattered(layout, index, v, size), *d), values, dense, seed)]
    if theirs is not None:
        try:
            references.append(_run(lambda v, *d: theirs(build(layout, index, v, size), *d), values, dense, seed))
        except (RuntimeError, NotImplementedError, IndexError):
            pass  # torch does not run this case (some 0-size shapes): the oracle defines it
    for want in references:
        torch.testing.assert_close(got[0], want[0])
        for g, w in zip(got[1], want[1]):
            torch.testing.assert_close(g, w)


def _randn(*shape, seed=1):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


@FUZZ
@given(a=operands(csr=True), n=st.integers(0, 3))
def test_fuzz_mm_addmm(a, n):
    m, k = a[3]
    b, inp = _randn(k, n), _randn(m, n, seed=2)
    check(a, [b], ga.mm, torch.sparse.mm, lambda d, b: d @ b)
    check(a, [inp, b], lambda s, i, b: ga.addmm(i, s, b, beta=0.5, alpha=2.0),
          lambda s, i, b: torch.sparse.addmm(i, s, b, beta=0.5, alpha=2.0), lambda d, i, b: 0.5 * i + 2.0 * (d @ b))
    check(a, [b.T.contiguous()], lambda s, b: ga.sparse_dense_matmul(s, b, adjoint_b=True), None,
          lambda d, b: d @ b.T)
    left = _randn(n, m, seed=3)
    check(a, [left], lambda s, x: ga.mm(x, s), None, lambda d, x: x @ d)


@FUZZ
@given(a=operands(csr=True))
def test_fuzz_mv_to_dense(a):
    x = _randn(a[3][1])
    check(a, [x], ga.mv, torch.mv if a[0] == "coo" else None, lambda d, x: d @ x)
    check(a, [], ga.to_dense, lambda s: s.to_dense(), lambda d: d)


@FUZZ
@given(a=operands(ndim=2, hybrid=True), data=st.data())
def test_fuzz_sum(a, data):
    ndim = len(a[3])
    dims = data.draw(st.none() | st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    dim = None if dims is None else tuple(dims)
    check(a, [], lambda s: ga.sum(s, dim), (lambda s: torch.sparse.sum(s)) if dim is None else
          (lambda s: torch.sparse.sum(s, dim)), lambda d: d.sum() if dim is None else d.sum(dim))


@FUZZ
@given(a=operands(ndim=2, hybrid=True))
def test_fuzz_mul_coalesce_transpose(a):
    other = _randn(*a[3])
    check(a, [other], ga.mul, lambda s, d: s * d, lambda x, d: x * d)
    check(a, [], ga.coalesce, lambda s: s.coalesce(), lambda d: d)
    check(a, [], lambda s: ga.transpose(s, 0, 1), lambda s: s.transpose(0, 1), lambda d: d.transpose(0, 1))


@FUZZ
@given(a=operands(ndim=2, hybrid=True), dim=st.integers(0, 1), log=st.booleans())
def test_fuzz_softmax(a, dim, log):
    mine, theirs = (ga.log_softmax, torch.sparse.log_softmax) if log else (ga.softmax, torch.sparse.softmax)
    layout, index, values, size = a
    stored = scattered(layout, index, torch.ones(values.shape[0], dtype=F64), size[:2]) != 0
    stored = stored.reshape(stored.shape + (1,) * (len(size) - 2)).expand(size)

    def oracle(d):
        x = torch.where(stored, d, float("-inf"))
        y = torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
        return torch.where(stored, y, 0.0)

    # torch differentiates the softmax of coalesced operands: its peer coalesces first
    check(a, [], lambda s: mine(s, dim), lambda s: theirs(s.coalesce(), dim), oracle)


@FUZZ
@given(a=operands(), data=st.data())
def test_fuzz_spgemm(a, data):
    k = a[3][1]
    b = data.draw(operands(rows=k))
    vb = b[2]

    def mine(s, w):
        return ga.spgemm(s, build(*b[:2], w, b[3]))

    def theirs(s, w):
        return torch.sparse.mm(s, build(*b[:2], w, b[3]))

    def oracle(d, w):
        return d @ scattered(*b[:2], w, b[3])

    check(a, [vb], mine, theirs, oracle)


@FUZZ
@given(a=operands(ndim=3), n=st.integers(0, 2))
def test_fuzz_bmm(a, n):
    B, _, K = a[3]
    x = _randn(B, K, n)
    check(a, [x], ga.bmm, torch.bmm, lambda d, x: d @ x)


@FUZZ
@given(a=operands(csr=True), n=st.integers(0, 2), reduce=st.sampled_from(["sum", "mean", "amax", "amin"]))
def test_fuzz_mm_reduce(a, n, reduce):
    """torch reduces CSR operands only: its peer of a COO operand is the CSR of its coalesced value."""
    b = _randn(a[3][1], n)
    stored = scattered(a[0], a[1], torch.ones(a[2].shape[0], dtype=F64), a[3]) != 0

    def oracle(d, b):
        products = torch.where(stored[:, :, None], d[:, :, None] * b[None], float("nan"))
        out = {"sum": torch.nansum, "mean": torch.nanmean}.get(reduce)
        if out is not None:
            return torch.nan_to_num(out(products, 1), nan=0.0)
        # max / min: the gradient reaches the first stored entry of each row at the extreme (as torch's)
        if d.shape[1] == 0:  # no columns: every row is empty
            return d.new_zeros((d.shape[0], b.shape[1]))
        sign = 1.0 if reduce == "amax" else -1.0
        keyed = torch.where(stored[:, :, None], sign * products, float("-inf"))
        first = keyed.argmax(1, keepdim=True)
        picked = products.gather(1, first)[:, 0]
        return torch.where(stored.any(1)[:, None], picked, 0.0)

    def theirs(s, b):
        return torch.sparse.mm(s if s.layout == torch.sparse_csr else s.coalesce().to_sparse_csr(), b, reduce)

    check(a, [b], lambda s, b: ga.mm(s, b, reduce=reduce), theirs, oracle)


@FUZZ
@given(a=operands(csr=True), k=st.integers(0, 2))
def test_fuzz_sampled_addmm(a, k):
    m, n = a[3]
    x, y = _randn(m, k), _randn(k, n, seed=2)
    stored = scattered(a[0], a[1], torch.ones(a[2].shape[0], dtype=F64), a[3]) != 0
    check(a, [x, y], lambda s, x, y: ga.sampled_addmm(s, x, y, beta=0.5, alpha=2.0),
          (lambda s, x, y: torch.sparse.sampled_addmm(s, x, y, beta=0.5, alpha=2.0)) if a[0] == "csr" else None,
          lambda d, x, y: torch.where(stored, 0.5 * d + 2.0 * (x @ y), 0.0))
