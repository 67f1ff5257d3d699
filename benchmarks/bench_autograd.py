"""Forward + backward of graph layers: gpusparse.autograd against torch.sparse, on an R-MAT graph.

Cases (float32, ``F = 32`` features, the adjacency a canonical CSR of the
Graph500 R-MAT graph of :mod:`benchmarks.bench_linalg`: ``2**20`` nodes and
edge factor 16 at full size, ``2**10`` with ``--quick``, ``--size`` nodes
otherwise):

``gcn``
    One GCN layer ``relu(A @ (X @ W))`` and its backward (gradients for
    ``X`` and ``W``): an SpMM forward, a transposed SpMM backward.
``gat``
    A dot-product graph-attention layer: ``H = X @ W``, scores
    ``sampled_addmm(A, H, H^T)`` (SDDMM), ``softmax`` over each row's
    stored scores, ``out = P @ H`` (SpMM), and its backward (SDDMM,
    softmax backward, three SpMMs).

Implementations, timed in alternating rounds on the same tensors after a
check of the loss and of ``W``'s gradient against ``torch_edges``'s:

* ``gpusparse``: :mod:`gpusparse.autograd` with the adjacency as a
  :class:`~gpusparse.autograd.CSRParts` tuple.
* ``torch``: ``torch.sparse.mm`` on a CSR tensor (``gcn``);
  ``torch.sparse.sampled_addmm`` (CSR), ``to_sparse_coo``,
  ``torch.sparse.softmax`` (COO only) and ``torch.sparse.mm`` (``gat``).
  The backward of ``torch.sparse.mm`` for a sparse operand that requires
  grad forms the dense ``n x n`` gradient before masking it, so the ``gat``
  peer is skipped where that matrix exceeds ``DENSE_BUDGET`` (2 GiB: above
  ``2**14`` nodes); run ``--size 16384`` to compare.
* ``torch_edges``: the same layers on the edge list with ``index_select``,
  ``index_add`` and ``scatter_reduce`` (the PyTorch Geometric way), dense
  free at any size; the reference of the check.

Rows carry the median of one forward + backward and ``speedup`` (torch's
time / gpusparse's: above 1, gpusparse is faster).

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run)
'gpusparse ok in 2 of 2 cases'
"""

from __future__ import annotations

import numpy as np

from benchmarks import _report
from benchmarks._report import Skip

__all__ = ["run", "summarize"]

NAME = "autograd"
FEATURES = 32
SEED = 20240611
#: The largest dense ``n x n`` matrix (bytes) the torch peer of ``gat`` may form in its backward.
DENSE_BUDGET = 2**31
NODES = {(False, False): 2**20, (False, True): 2**10, (True, False): 2**20, (True, True): 2**10}


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise Skip(f"torch is not installed: {exc}") from None
    return torch


class _Case:
    """The graph and dense operands of one case, as torch tensors on the run's device."""

    def __init__(self, kind, nodes, ctx):
        from benchmarks.bench_linalg import matrix
        torch = _torch()
        if ctx.is_cuda and not torch.cuda.is_available():
            raise Skip("torch has no CUDA (the autograd layer takes CUDA tensors)")
        self.kind = kind
        a = matrix("rmat", nodes)
        dev = torch.device("cuda" if ctx.is_cuda else "cpu")
        self.n, self.nnz = a.shape[0], a.nnz
        self.crow = torch.from_numpy(a.indptr.astype(np.int64)).to(dev)
        self.col = torch.from_numpy(a.indices.astype(np.int64)).to(dev)
        values = a.data / np.sqrt(np.maximum(np.asarray(a.sum(axis=1)).ravel(), 1.0))[a.nonzero()[0]]
        self.values = torch.from_numpy(values.astype(np.float32)).to(dev)
        gen = torch.Generator().manual_seed(SEED)
        self.x = torch.randn(self.n, FEATURES, generator=gen).to(dev)
        self.w = (torch.randn(FEATURES, FEATURES, generator=gen) / FEATURES**0.5).to(dev)
        self.upstream = torch.randn(self.n, FEATURES, generator=gen).to(dev)
        self.device = dev


def _layer(case, spmm, attention):
    """A callable running one forward + backward; returns ``(loss, W.grad)``."""
    torch = _torch()

    def fn():
        w = case.w.detach().requires_grad_()
        x = case.x.detach().requires_grad_()
        h = x @ w
        out = attention(h) if attention is not None else torch.relu(spmm(h))
        loss = (out * case.upstream).sum()
        loss.backward()
        return loss.detach(), w.grad

    return fn


def _ours(case, ctx):
    import gpusparse.autograd as ga
    adj = ga.CSRParts(case.crow, case.col, case.values, (case.n, case.n))

    def attention(h):
        scores = ga.sampled_addmm(adj, h, h.T, beta=0.0)
        return ga.mm(ga.softmax(scores, 1), h)

    return _layer(case, lambda h: ga.mm(adj, h), attention if case.kind == "gat" else None), None


def _theirs(case, ctx):
    torch = _torch()
    if case.kind == "gat" and ctx is not None and case.n**2 * case.values.element_size() > DENSE_BUDGET:
        raise Skip(f"torch.sparse.mm's backward for a sparse operand forms the dense {case.n} x {case.n} "
                   f"gradient ({case.n**2 * case.values.element_size() / 2**30:.0f} GiB)")
    adj = torch.sparse_csr_tensor(case.crow, case.col, case.values, (case.n, case.n), check_invariants=False)

    def attention(h):
        scores = torch.sparse.sampled_addmm(adj, h, h.T, beta=0.0)
        return torch.sparse.mm(torch.sparse.softmax(scores.to_sparse_coo(), 1), h)

    return _layer(case, lambda h: torch.sparse.mm(adj, h), attention if case.kind == "gat" else None), None


def _edges(case, ctx):
    """The layers on the edge list with torch's gather / scatter operations (as PyTorch Geometric does)."""
    torch = _torch()
    rows = torch.repeat_interleave(torch.arange(case.n, device=case.device), case.crow.diff())
    cols, weights = case.col, case.values

    def spmm(values, h):
        return torch.zeros_like(h).index_add_(0, rows, values[:, None] * h.index_select(0, cols))

    def attention(h):
        scores = (h.index_select(0, rows) * h.index_select(0, cols)).sum(1)
        top = torch.full((case.n,), -torch.inf, device=h.device).scatter_reduce(0, rows, scores, "amax")
        e = torch.exp(scores - top.index_select(0, rows).detach())
        total = torch.zeros(case.n, device=h.device).index_add(0, rows, e)
        return spmm(e / total.index_select(0, rows), h)

    return _layer(case, lambda h: spmm(weights, h), attention if case.kind == "gat" else None), None


def _check(case, got, row):
    torch = _torch()
    if not hasattr(case, "reference"):
        case.reference = _edges(case, None)[0]()
    loss, grad = got
    ref_loss, ref_grad = case.reference
    tol = 1e-3 * max(1.0, float(ref_loss.abs()))
    if abs(float(loss) - float(ref_loss)) > tol:
        return f"loss {float(loss)} differs from torch's {float(ref_loss)}"
    if not torch.allclose(grad, ref_grad, rtol=1e-3, atol=1e-3 * float(ref_grad.abs().max())):
        return f"W's gradient differs from torch's by {float((grad - ref_grad).abs().max())}"
    return None


def _progress(row) -> str:
    if row["status"] != "ok":
        return f"  {row['case']:<8} {row['impl']:<10} {row['status']}: {row.get('error', '')}"
    speed = f"  x{row['speedup']:.2f}" if "speedup" in row else ""
    return f"  {row['case']:<8} {row['impl']:<10} {row['median_s'] * 1e3:9.3f} ms{speed}"


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring."""
    nodes = ctx.size or NODES[(ctx.is_cuda, ctx.quick)]
    impls = [("gpusparse", _ours, "ours"), ("torch", _theirs, "peer"), ("torch_edges", _edges, "peer")]
    for kind in ("gcn", "gat"):
        try:
            case = _Case(kind, nodes, ctx)
        except Skip as exc:
            for name, _, k in impls:
                yield {"bench": NAME, "case": kind, "impl": name, "kind": k, "status": "skipped", "error": str(exc)}
            continue
        base = {"bench": NAME, "case": kind, "rows": case.n, "nnz": case.nnz, "features": FEATURES}
        yield from _report.run_case(ctx, case, base, impls, _check, _progress)


def summarize(rows) -> str:
    """One line per case: every implementation's forward + backward time, and the peers' speedups."""
    cases, _ = _report.by_case(rows)
    impls = ("gpusparse", "torch", "torch_edges")
    body = []
    for case, by_impl in cases.items():
        ours = by_impl.get("gpusparse", {})
        cells = [case, str(ours.get("rows", "")), str(ours.get("nnz", ""))]
        for name in impls:
            r = by_impl.get(name, {})
            cell = _report.ms(r.get("median_s")) if r.get("status") == "ok" else r.get("status", "-")
            cells.append(cell + (f" ({r['speedup']:.2f}x)" if "speedup" in r else ""))
        body.append(cells)
    head = ["case", "nodes", "edges", "gpusparse fwd+bwd", "torch.sparse (vs)", "torch edge list (vs)"]
    return _report.table(head, body) + ("\n\n*(vs)*: the peer's time / gpusparse's time "
                                        "(above 1: gpusparse is faster).")
