"""Shape manipulation and softmax against SciPy, pydata sparse, torch and CuPy.

Input: the matrix of :mod:`benchmarks.bench_indexing` (``n x n``, ``k``
entries, 16 per row, coalesced; ``k`` = 2**22 on the CPU, 2**26 on the GPU).
Cases:

``transpose+coalesce``
    ``x.T.coalesce()`` of the COO vs torch ``t.t().coalesce()`` and SciPy /
    cupyx ``csr.T.tocsr()`` (the same canonical result) and GraphBLAS
    ``A.T.new()`` (SuiteSparse:GraphBLAS, by rows, as many threads as
    gpusparse; :mod:`benchmarks._graphblas`).
``tocsc``
    format conversion of the canonical CSR: ``csr.tocsc()`` vs SciPy
    ``tocsc()`` and GraphBLAS ``A.ss.export("csc")`` (a copy turned to
    column order).
``reshape``
    ``(n, n) -> (n / 16, 16 n)`` of the COO vs pydata ``reshape`` and SciPy
    ``coo_array.reshape`` (torch has no sparse reshape).
``concatenate-0-coo``, ``concatenate-1-coo``
    two copies along each axis vs torch ``cat`` (whose result is uncoalesced:
    it skips the ordering gpusparse and pydata keep) and pydata ``concatenate``.
``vstack-csr``, ``hstack-csr``
    two CSR copies vs SciPy / cupyx ``vstack`` / ``hstack`` with ``format="csr"``.
``softmax-1``, ``softmax-0``
    ``gs.softmax(x, axis)`` of the COO vs ``torch.sparse.softmax(t, dim)``.

Results are checked against gpusparse's before timing, as in ``bench_indexing``.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=512)
'gpusparse ok in 9 of 9 cases'
"""

from __future__ import annotations

from benchmarks._graphblas import hold_torch
from benchmarks._report import Skip, need, summary_table
from benchmarks.bench_indexing import COUNTS, SIZES, Inputs, run_cases

__all__ = ["run", "summarize"]

NAME = "manipulation"


def _cases(ctx, inp):
    from gpusparse.ops import shape as mp
    from gpusparse.ops import softmax as sm
    gpu = ctx.is_cuda
    n = inp.n
    csr_peer = "cupyx_csr" if gpu else "scipy_csr"
    csr_name = "cupyx" if gpu else "scipy"
    new_shape = (max(n // 16, 1), n * n // max(n // 16, 1))

    def ours(fn):
        return lambda i: fn

    def torch_fn(make):
        def factory(i):
            torch = need("torch")
            if not gpu:
                hold_torch(torch)
            t = i.peer("torch")
            return make(torch, t)
        return factory

    def peer(name, make):
        def factory(i):
            return make(i.peer(name))
        return factory

    def stack_peer(how):
        def factory(i):
            mod = need("cupyx.scipy.sparse" if gpu else "scipy.sparse")
            m = i.peer(csr_peer)
            fn = getattr(mod, how)
            return lambda: fn([m, m], format="csr")
        return factory

    def scipy_reshape(i):
        if gpu:
            raise Skip("cupyx has no reshape")
        m = i.peer("scipy_coo")
        return lambda: m.reshape(new_shape)

    def pydata(make):
        def factory(i):
            if gpu:
                raise Skip("pydata sparse runs on the CPU")
            sparse = need("sparse")
            return make(sparse, i.peer("pydata"))
        return factory

    def graphblas(make):
        def factory(i):
            if gpu:
                raise Skip("GraphBLAS runs on the CPU")
            from benchmarks import _graphblas
            gb = _graphblas.module()
            return make(gb, _graphblas.wait(_graphblas.from_csr(i.peer("scipy_csr"))))
        return factory

    def graphblas_transpose(gb, a):
        from benchmarks._graphblas import Result, wait
        return lambda: Result(wait(a.T.new()))

    def graphblas_tocsc(gb, a):
        from benchmarks._graphblas import Result
        return lambda: Result(a.ss.export("csc"), a.shape)

    coo, csr = inp.coo, inp.csr
    return [
        ("transpose+coalesce", [("gpusparse", "ours", ours(lambda: coo.T.coalesce())),
                                ("torch", "peer", torch_fn(lambda torch, t: lambda: t.t().coalesce())),
                                (csr_name, "peer", peer(csr_peer, lambda m: lambda: m.T.tocsr())),
                                ("graphblas", "peer", graphblas(graphblas_transpose))], {}),
        ("tocsc", [("gpusparse", "ours", ours(lambda: csr.tocsc())),
                   (csr_name, "peer", peer(csr_peer, lambda m: lambda: m.tocsc())),
                   ("graphblas", "peer", graphblas(graphblas_tocsc))], {}),
        ("reshape", [("gpusparse", "ours", ours(lambda: mp.reshape(coo, new_shape))),
                     ("pydata", "peer", pydata(lambda sparse, p: lambda: p.reshape(new_shape))),
                     ("scipy", "peer", scipy_reshape)], {}),
        ("concatenate-0-coo", [("gpusparse", "ours", ours(lambda: mp.concatenate([coo, coo], 0))),
                               ("torch", "peer", torch_fn(lambda torch, t: lambda: torch.cat([t, t], 0))),
                               ("pydata", "peer", pydata(lambda sparse, p: lambda: sparse.concatenate([p, p], 0)))],
         {}),
        ("concatenate-1-coo", [("gpusparse", "ours", ours(lambda: mp.concatenate([coo, coo], 1))),
                               ("torch", "peer", torch_fn(lambda torch, t: lambda: torch.cat([t, t], 1))),
                               ("pydata", "peer", pydata(lambda sparse, p: lambda: sparse.concatenate([p, p], 1)))],
         {}),
        ("vstack-csr", [("gpusparse", "ours", ours(lambda: mp.concatenate([csr, csr], 0))),
                        (csr_name, "peer", stack_peer("vstack"))], {}),
        ("hstack-csr", [("gpusparse", "ours", ours(lambda: mp.concatenate([csr, csr], 1))),
                        (csr_name, "peer", stack_peer("hstack"))], {}),
        ("softmax-1", [("gpusparse", "ours", ours(lambda: sm.softmax(coo, 1))),
                       ("torch", "peer", torch_fn(lambda torch, t: lambda: torch.sparse.softmax(t, 1)))], {}),
        ("softmax-0", [("gpusparse", "ours", ours(lambda: sm.softmax(coo, 0))),
                       ("torch", "peer", torch_fn(lambda torch, t: lambda: torch.sparse.softmax(t, 0)))], {}),
    ]


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    inp = Inputs(ctx, k)
    yield from run_cases(ctx, NAME, _cases(ctx, inp), inp)


def summarize(rows) -> str:
    return summary_table(rows, COUNTS, [],
                         "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), "
                         "the peer's median in parentheses. torch's `cat` leaves its result "
                         "uncoalesced; gpusparse and pydata keep row-major order.")
