"""Models built on gpusparse.autograd: torch.compile(fullgraph=True) tracing and a GCN trained against torch.sparse."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gpusparse.autograd as ga  # noqa: E402
from _autograd_cases import as_layout, random_coo, tdev  # noqa: E402,F401

F64 = torch.float64


class _Attention(torch.nn.Module):
    """A small graph layer using most operators, its sparse operands given as parts tuples."""

    def __init__(self, n, features):
        super().__init__()
        self.n = n
        self.lin = torch.nn.Linear(features, 4, dtype=F64)
        self.scale = torch.nn.Parameter(torch.ones(4, dtype=F64))

    def forward(self, indices, weights, crow, col, x):
        n = self.n
        adj = ga.COOParts(indices, weights, (n, n))  # uncoalesced: coalesced inside, dynamic size
        h = ga.mm(adj, self.lin(x))
        h = ga.addmm(h, ga.CSRParts(crow, col, ga.coalesce(adj).values, (n, n)), h, beta=0.5)
        pattern = ga.CSRParts(crow, col, torch.zeros_like(col, dtype=F64), (n, n))
        scores = ga.sampled_addmm(pattern, h * self.scale, h.T, beta=0.0)
        att = ga.softmax(scores, 1)
        out = ga.mm(att, h) + ga.mm(att, h, reduce="max")
        rows = ga.sum(ga.COOParts(indices, weights, (n, n)), 1)
        return out.sum(1) + ga.to_dense(rows) + ga.mv(att, h[:, 0])


def test_compile_fullgraph(tdev):
    gen = torch.Generator().manual_seed(0)
    n, f = 12, 5
    a = random_coo((n, n), 30, gen).to(tdev)
    c = a.coalesce().to_sparse_csr()
    x = torch.randn(n, f, generator=gen, dtype=F64).to(tdev)
    torch.manual_seed(0)
    model = _Attention(n, f).to(tdev)
    w = a._values().detach().clone()
    args = (a._indices(), w, c.crow_indices(), c.col_indices(), x)

    def run(fn):
        weights = w.clone().requires_grad_()
        model.zero_grad()
        out = fn(args[0], weights, *args[2:])
        (out * torch.arange(n, dtype=F64, device=tdev)).sum().backward()
        return out.detach(), weights.grad, [p.grad.clone() for p in model.parameters()]

    eager = run(model)
    torch._dynamo.reset()
    compiled = run(torch.compile(model, fullgraph=True, backend="aot_eager"))
    torch.testing.assert_close(compiled[0], eager[0])
    torch.testing.assert_close(compiled[1], eager[1])
    for got, want in zip(compiled[2], eager[2]):
        torch.testing.assert_close(got, want)


def _normalized_adjacency(n, edges, gen, dev):
    """``D^-1/2 (A + I) D^-1/2`` of a random symmetric graph as a CSR tensor."""
    src = torch.randint(0, n, (edges // 2,), generator=gen)
    dst = torch.randint(0, n, (edges // 2,), generator=gen)
    loops = torch.arange(n)
    idx = torch.stack([torch.cat([src, dst, loops]), torch.cat([dst, src, loops])])
    a = torch.sparse_coo_tensor(idx, torch.ones(idx.shape[1], dtype=F64), (n, n), check_invariants=True).coalesce()
    a = torch.sparse_coo_tensor(a.indices(), torch.ones_like(a.values()), (n, n), check_invariants=True).coalesce()
    deg = torch.sparse.sum(a, 1).to_dense()
    r, c = a.indices()
    vals = a.values() / torch.sqrt(deg[r] * deg[c])
    return torch.sparse_coo_tensor(a.indices(), vals, (n, n), check_invariants=True).coalesce().to_sparse_csr().to(dev)


class _GCN(torch.nn.Module):
    def __init__(self, features, hidden, classes, adj, spmm):
        super().__init__()
        self.w1 = torch.nn.Linear(features, hidden, dtype=F64)
        self.w2 = torch.nn.Linear(hidden, classes, dtype=F64)
        self.crow, self.col = adj.crow_indices(), adj.col_indices()
        self.edge = torch.nn.Parameter(adj.values().clone())  # learnable edge weights: sparse gradients
        self.shape, self.spmm = tuple(adj.shape), spmm

    def forward(self, x):
        h = torch.relu(self.spmm(self, self.w1(x)))
        return self.spmm(self, self.w2(h))


def _ours(m, x):
    return ga.mm(ga.CSRParts(m.crow, m.col, m.edge, m.shape), x)


def _torch(m, x):
    return torch.sparse.mm(torch.sparse_csr_tensor(m.crow, m.col, m.edge, m.shape, check_invariants=False), x)


def test_gcn_trains_like_torch_sparse(tdev):
    gen = torch.Generator().manual_seed(0)
    n, edges, features, classes = 2708, 10_000, 1433, 7
    adj = _normalized_adjacency(n, edges, gen, tdev)
    x = (torch.rand(n, features, generator=gen) < 0.01).to(F64).to(tdev)
    y = torch.randint(0, classes, (n,), generator=gen).to(tdev)
    curves = []
    for spmm in (_ours, _torch):
        torch.manual_seed(0)
        model = _GCN(features, 16, classes, adj, spmm).to(tdev)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        curves.append((losses, model.edge.detach().clone()))
    (ours, edge_ours), (theirs, edge_theirs) = curves
    assert ours[-1] < ours[0]
    # CUDA products sum in a different order from torch's (atomics): a looser bound there
    rtol, atol = (1e-10, 1e-12) if tdev.type == "cpu" else (1e-6, 1e-8)
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs), rtol=rtol, atol=atol)
    torch.testing.assert_close(edge_ours, edge_theirs, rtol=rtol * 100, atol=atol * 100)


def test_gcn_layer_autograd_coo_matches_csr(tdev):
    """The same layer from COO (uncoalesced) and CSR operands gives the same gradients."""
    gen = torch.Generator().manual_seed(1)
    a = random_coo((50, 50), 300, gen).to(tdev)
    x = torch.randn(50, 8, generator=gen, dtype=F64).to(tdev)
    grads = []
    for layout in ("coo_dup", "csr"):
        t = as_layout(a, layout).detach().clone().requires_grad_()
        xx = x.clone().requires_grad_()
        ga.mm(t, xx).square().sum().backward()
        if layout == "coo_dup":  # torch's form: coalesced, one element per coordinate
            assert torch.equal(t.grad._indices(), a.coalesce()._indices())
        grads.append((t.grad.to_dense(), xx.grad))
    torch.testing.assert_close(grads[1][1], grads[0][1])
    # the gradient at a duplicated coordinate is its derivative, as for the coalesced operand
    torch.testing.assert_close(grads[0][0], grads[1][0])
