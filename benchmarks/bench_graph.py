"""Graph benchmarks: semiring products with masks and the graph algorithms, against SuiteSparse:GraphBLAS.

Two graphs of ``n`` vertices (``--size``; quick runs use 64): an R-MAT
power-law graph (scale ``log2 n``, 8 edges per vertex, Graph500's
probabilities 0.57 / 0.19 / 0.19, duplicates merged, no self loops) and a
2-D grid (4-neighbour, both directions), each with weights uniform in
[0.1, 1). The cases on each graph:

* ``mxv min_plus ~mask`` -- one Bellman-Ford relaxation ``A.T min.+ x``
  computed only at the vertices outside a random half (a complemented
  mask), dense ``x``;
* ``mxm plus_pair <L>`` -- ``L plus.pair L`` masked by ``L`` (the strictly
  lower triangle of the undirected pattern): the triangle-counting kernel;
* ``bfs``, ``sssp`` (from vertex 0), ``pagerank``, ``connected components``
  (weak), ``triangle count``: :mod:`gpusparse.graph`.

Implementations: ``gpusparse`` (on ``--device``), ``graphblas``
(python-graphblas, the same algorithms written with GraphBLAS operations as
LAGraph writes them: masked ``mxv`` / ``mxm`` over the same semirings, as
many threads as gpusparse, :mod:`benchmarks._graphblas`), ``scipy``
(``scipy.sparse.csgraph`` where it has the algorithm: shortest paths for
bfs and sssp, connected components; SciPy's products for the masked
``mxm``) and ``cugraph`` (RAPIDS cuGraph: not installable from PyPI here, so
its rows are ``skipped`` with the reason). Every result is checked against
an oracle computed with NumPy / SciPy outside the timed region: bfs levels
and smallest parents, distances, PageRank scores within 1e-6 relative,
partitions, counts.
"""

from __future__ import annotations

import functools

import numpy as np

from benchmarks import _graphblas, _report
from benchmarks._report import Skip, host, need

NAME = "graph"

#: default vertex counts by (cuda, quick)
SIZES = {(False, False): 2**16, (False, True): 64, (True, False): 2**20, (True, True): 64}
CASES = ("mxv min_plus ~mask", "mxm plus_pair <L>", "bfs", "sssp", "pagerank", "connected components",
         "triangle count")
ALPHA, TOL, MAX_ITER = 0.85, 1e-6, 100


# --------------------------------------------------------------------------
# graphs
# --------------------------------------------------------------------------

def rmat(n: int, seed: int = 0):
    """A SciPy CSR R-MAT graph of ``2**ceil(log2 n)`` vertices, 8 edges per vertex before merging.

    >>> a = rmat(64)
    >>> a.shape, a.diagonal().any()
    ((64, 64), np.False_)
    """
    import scipy.sparse as sp
    scale = max(1, int(np.ceil(np.log2(max(n, 2)))))
    n = 2**scale
    rng = np.random.default_rng(seed)
    m = 8 * n
    rows = np.zeros(m, dtype=np.int64)
    cols = np.zeros(m, dtype=np.int64)
    for bit in range(scale):  # each level picks a quadrant: a 0.57, b 0.19, c 0.19, d 0.05
        r = rng.random(m)
        down = r >= 0.57 + 0.19
        right = ((r >= 0.57) & (r < 0.57 + 0.19)) | (r >= 0.57 + 0.19 + 0.19)
        rows |= down.astype(np.int64) << bit
        cols |= right.astype(np.int64) << bit
    keep = rows != cols
    a = sp.coo_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    a.sum_duplicates()
    a.data = rng.uniform(0.1, 1.0, a.nnz)
    return a


def grid(n: int, seed: int = 0):
    """A SciPy CSR 2-D grid of ``side**2 >= n`` vertices, edges to the 4 neighbours both ways.

    >>> grid(9).nnz
    24
    """
    import scipy.sparse as sp
    side = max(2, int(np.ceil(np.sqrt(n))))
    ids = np.arange(side * side).reshape(side, side)
    pairs = [(ids[:, :-1], ids[:, 1:]), (ids[:-1, :], ids[1:, :])]
    src = np.concatenate([p.ravel() for p, q in pairs] + [q.ravel() for p, q in pairs])
    dst = np.concatenate([q.ravel() for p, q in pairs] + [p.ravel() for p, q in pairs])
    rng = np.random.default_rng(seed)
    a = sp.csr_matrix((rng.uniform(0.1, 1.0, src.size), (src, dst)), shape=(side * side,) * 2)
    a.sum_duplicates()
    return a


def lower_pattern(a):
    """The strictly lower triangle of the undirected pattern of ``a`` (float64 ones, SciPy CSR)."""
    import scipy.sparse as sp
    u = (a + a.T).tocsr()
    u.data[:] = 1.0
    low = sp.tril(u, -1, format="csr")
    low.sort_indices()
    return low


# --------------------------------------------------------------------------
# oracles (NumPy / SciPy, untimed)
# --------------------------------------------------------------------------

def _bfs_oracle(a, source):
    from scipy.sparse import csgraph
    dist = csgraph.shortest_path(a, unweighted=True, indices=source)
    levels = np.where(np.isinf(dist), -1, dist).astype(np.int64)
    coo = a.tocoo()
    u, v = coo.row.astype(np.int64), coo.col.astype(np.int64)
    tree = (levels[u] >= 0) & (levels[v] == levels[u] + 1)
    parents = np.full(a.shape[0], np.iinfo(np.int64).max)
    np.minimum.at(parents, v[tree], u[tree])
    parents = np.where(levels < 0, -1, parents)
    parents[source] = source
    return levels, parents


def _pagerank_oracle(a):
    n = a.shape[0]
    out_weight = np.asarray(a.sum(axis=1)).ravel()
    dangling = out_weight == 0
    scale = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_weight))
    qt = a.multiply(scale[:, None]).T.tocsr()
    p = np.full(n, 1.0 / n)
    x = p.copy()
    for _ in range(MAX_ITER):
        last = x
        x = ALPHA * (qt @ x + x[dangling].sum() * p) + (1 - ALPHA) * p
        if np.abs(x - last).sum() < n * TOL:
            return x
    raise RuntimeError("pagerank oracle did not converge")


def _canonical_labels(labels):
    """Component labels renumbered by first occurrence: equal partitions give equal arrays."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse.ravel()]


def _masked_min_plus_oracle(at, x, allowed):
    """Dense ``at min.+ x`` (inf without a term) where ``allowed``, inf elsewhere."""
    terms = at.data + x[at.indices]
    out = np.full(at.shape[0], np.inf)
    rows = np.repeat(np.arange(at.shape[0]), np.diff(at.indptr))
    np.minimum.at(out, rows, terms)
    return np.where(allowed, out, np.inf)


def _triangle_products(low):
    """SciPy CSR of ``L plus.pair L`` masked by ``L`` (entries without a term dropped)."""
    c = (low @ low).multiply(low).tocsr()
    c.eliminate_zeros()
    c.sort_indices()
    return c


class _Case:
    """One (graph, case): the SciPy operands, the oracle, and what the implementations share."""

    def __init__(self, graph_name, a, case, seed=0):
        from scipy.sparse import csgraph
        self.graph, self.a, self.case = graph_name, a, case
        self.name = f"{graph_name} {case}"
        self.n = a.shape[0]
        self.at = a.T.tocsr()
        self.at.sort_indices()
        rng = np.random.default_rng(seed)
        if case == "mxv min_plus ~mask":
            self.x = rng.uniform(0.0, 1.0, self.n)
            self.visited = rng.random(self.n) < 0.5
            self.want = _masked_min_plus_oracle(self.at, self.x, ~self.visited)
        elif case in ("mxm plus_pair <L>", "triangle count"):
            self.low = lower_pattern(a)
            products = _triangle_products(self.low)
            self.want = products if case.startswith("mxm") else int(products.sum())
        elif case == "bfs":
            self.want = _bfs_oracle(a, 0)
        elif case == "sssp":
            self.want = csgraph.dijkstra(a, indices=0)
        elif case == "pagerank":
            self.want = _pagerank_oracle(a)
        else:
            self.want = _canonical_labels(csgraph.connected_components(a, directed=True, connection="weak")[1])


def _check(case, got, row):
    """None when ``got`` (NumPy / SciPy, as each implementation's ``result`` gives it) is the oracle's."""
    want = case.want
    if case.case == "mxm plus_pair <L>":
        same = got.shape == want.shape and np.array_equal(got.indptr, want.indptr) \
            and np.array_equal(got.indices, want.indices) and np.array_equal(got.data, want.data)
        return None if same else f"{got.nnz} entries, want {want.nnz} (or other values)"
    if case.case == "bfs":
        if got[1] is None:  # scipy's predecessors are any parent: checked through the levels
            return None if np.array_equal(got[0], want[0]) else "levels differ"
        return None if np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) else \
            "levels or parents differ"
    if case.case == "triangle count":
        return None if int(got) == want else f"{int(got)} triangles, want {want}"
    if case.case == "connected components":
        return None if np.array_equal(_canonical_labels(got), want) else "partition differs"
    if case.case == "pagerank":
        return None if np.allclose(got, want, rtol=1e-6, atol=1e-12) else \
            f"max difference {np.abs(np.asarray(got) - want).max():.3g}"
    ok = np.array_equal(np.isinf(got), np.isinf(want)) and np.allclose(
        np.where(np.isinf(want), 0, got), np.where(np.isinf(want), 0, want), rtol=1e-12, atol=1e-12)
    return None if ok else "values differ"


# --------------------------------------------------------------------------
# implementations: factory(case, ctx) -> (fn, result)
# --------------------------------------------------------------------------

def _impl_gpusparse(case, ctx):
    import gpusparse as gs

    def csr(m):
        return gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device=ctx.device)

    a = csr(case.a)
    which = case.case
    if which == "mxv min_plus ~mask":
        at, x, visited = csr(case.at), ctx.xp.asarray(case.x), ctx.xp.asarray(case.visited)
        return (lambda: gs.mxv(at, x, "min_plus", mask=visited, complement=True)), host
    if which == "mxm plus_pair <L>":
        import scipy.sparse as sp
        low = csr(case.low)

        def as_scipy(c):
            return sp.csr_matrix((host(c.data), host(c.indices), host(c.indptr)), shape=c.shape)

        return (lambda: gs.mxm(low, low, "plus_pair", mask=low)), as_scipy
    if which == "bfs":
        return (lambda: gs.graph.bfs(a, 0)), (lambda r: (host(r[0]), host(r[1])))
    if which == "sssp":
        return (lambda: gs.graph.sssp(a, 0)), host
    if which == "pagerank":
        return (lambda: gs.graph.pagerank(a, ALPHA, TOL, MAX_ITER)), host
    if which == "connected components":
        return (lambda: gs.graph.connected_components(a, directed=True, connection="weak")), \
            (lambda r: host(r[1]))
    return (lambda: gs.graph.triangle_count(a)), int


def _gb_bfs(gb, at, n, source):
    levels, parents = gb.Vector(int, n), gb.Vector(int, n)
    levels[source] = 0
    parents[source] = source
    q = gb.Vector.from_coo([source], [source], size=n)  # the frontier, each vertex holding its number
    level = 0
    while q.nvals:
        level += 1
        q(~parents.S, replace=True) << at.mxv(q, gb.semiring.min_second)
        parents(q.S) << q
        levels(q.S) << level
        q << q.apply(gb.indexunary.index)
    return levels, parents


def _gb_sssp(gb, at, n, source):
    d = gb.Vector(float, n)
    d[source] = 0.0
    for _ in range(n):
        new = d.ewise_add(at.mxv(d, gb.semiring.min_plus).new(), gb.binary.min).new()
        if new.isequal(d):
            return d
        d = new
    raise ValueError("negative cycle")


def _gb_pagerank(gb, a, n):
    out_weight = a.reduce_rowwise(gb.monoid.plus).new()
    qt = out_weight.apply(gb.unary.minv).new().diag().mxm(a, gb.semiring.plus_times).new().T.new()
    x = gb.Vector(float, n)
    x[:] << 1.0 / n
    for _ in range(MAX_ITER):
        dangling = gb.Vector(float, n)
        dangling(~out_weight.S) << x
        new = gb.Vector(float, n)
        new[:] << (1 - ALPHA) / n + ALPHA * (dangling.reduce(gb.monoid.plus).new().value or 0.0) / n
        new(accum=gb.binary.plus) << qt.mxv(x, gb.semiring.plus_times).apply(gb.binary.times, ALPHA)
        err = new.ewise_add(x, gb.binary.minus).apply(gb.unary.abs).reduce(gb.monoid.plus).new().value
        x = new
        if err < n * TOL:
            return x
    raise RuntimeError("pagerank did not converge")


def _gb_components(gb, a, n):
    u = a.ewise_add(a.T, gb.binary.pair).new()
    labels = _graphblas.dense(np.arange(n, dtype=np.int64))
    while True:  # min-label propagation with pointer jumping, as gpusparse.graph (LAGraph's FastSV extracts f[f] so)
        grand = labels[labels.to_coo()[1]].new()
        new = grand.ewise_add(u.mxv(grand, gb.semiring.min_second).new(), gb.binary.min).new()
        if new.isequal(labels):
            return labels
        labels = new


def _gb_triangles(gb, a, n):
    u = a.ewise_add(a.T, gb.binary.pair).new()
    low = gb.select.tril(u, -1).new()
    c = gb.Matrix(float, n, n)
    c(low.S) << low.mxm(low, gb.semiring.plus_pair)
    return c.reduce_scalar(gb.monoid.plus).new().value or 0


def _impl_graphblas(case, ctx):
    gb = _graphblas.module()
    a, at, n = _graphblas.from_csr(case.a), _graphblas.from_csr(case.at), case.n
    which = case.case
    wait = _graphblas.wait

    def full(v, fill):
        idx, values = v.to_coo()
        out = np.full(n, fill, dtype=values.dtype if values.size else type(fill))
        out[idx] = values
        return out

    if which == "mxv min_plus ~mask":
        x = _graphblas.dense(case.x)
        visited = gb.Vector.from_coo(np.flatnonzero(case.visited), True, size=n)

        def fn():
            w = gb.Vector(float, n)
            w(~visited.S) << at.mxv(x, gb.semiring.min_plus)
            return wait(w)

        return fn, lambda w: full(w, np.inf)
    if which == "mxm plus_pair <L>":
        low = _graphblas.from_csr(case.low)

        def fn():
            c = gb.Matrix(float, n, n)
            c(low.S) << low.mxm(low, gb.semiring.plus_pair)
            return wait(c)

        return fn, _graphblas.to_csr
    if which == "bfs":
        return (lambda: _gb_bfs(gb, at, n, 0)), (lambda r: (full(r[0], -1), full(r[1], -1)))
    if which == "sssp":
        return (lambda: wait(_gb_sssp(gb, at, n, 0))), lambda d: full(d, np.inf)
    if which == "pagerank":
        return (lambda: wait(_gb_pagerank(gb, a, n))), lambda x: full(x, 0.0)
    if which == "connected components":
        return (lambda: wait(_gb_components(gb, a, n))), lambda labels: full(labels, -1)
    return (lambda: _gb_triangles(gb, a, n)), int


def _impl_scipy(case, ctx):
    from scipy.sparse import csgraph
    which = case.case
    a = case.a
    if which == "mxm plus_pair <L>":
        low = case.low
        return (lambda: _triangle_products(low)), None
    if which == "bfs":
        def levels(dist):
            return np.where(np.isinf(dist), -1, dist).astype(np.int64), None
        return (lambda: csgraph.shortest_path(a, unweighted=True, indices=0)), levels
    if which == "sssp":
        return (lambda: csgraph.dijkstra(a, indices=0)), None
    if which == "connected components":
        return (lambda: csgraph.connected_components(a, directed=True, connection="weak")), lambda r: r[1]
    raise Skip(f"scipy.sparse.csgraph has no {which}")


def _impl_cugraph(case, ctx):
    need("cugraph", "cuGraph (RAPIDS; not installable from PyPI here)")
    raise Skip("cuGraph is installed but its rows are not written yet")


def _implementations(case):
    impls = [("gpusparse", _impl_gpusparse, "ours"), ("graphblas", _impl_graphblas, "peer")]
    if case.case not in ("mxv min_plus ~mask", "pagerank", "triangle count"):
        impls.append(("scipy", _impl_scipy, "peer"))
    if not case.case.startswith("mx"):
        impls.append(("cugraph", _impl_cugraph, "peer"))
    return impls


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------

def _add_rates(case, row, t):
    row["edges_per_s"] = case.a.nnz / t


def run(ctx):
    """Yield one row per (graph, case, implementation); ``ctx.size`` sets the vertex count."""
    n = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    describe = functools.partial(_report.progress, case_width=30, impl_width=10)
    for graph_name, make in (("rmat", rmat), ("grid", grid)):
        a = make(n)
        for which in CASES:
            case = _Case(graph_name, a, which)
            base = {"bench": NAME, "case": case.name, "graph": graph_name, "op": which,
                    "vertices": int(a.shape[0]), "edges": int(a.nnz)}
            yield from _report.run_case(ctx, case, base, _implementations(case), _check, describe, _add_rates)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def summarize(rows) -> str:
    """One line per case, one column per peer (peer time / gpusparse time)."""
    return _report.summary_table(
        rows, [("vertices", lambda r: f"{r['vertices']:,}"), ("edges", lambda r: f"{r['edges']:,}")],
        [("edges/s", lambda r: f"{r['edges_per_s']:.3g}")],
        "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), the peer's median in "
        "parentheses. graphblas: python-graphblas (SuiteSparse:GraphBLAS) running the same algorithms "
        "as masked semiring products; scipy: scipy.sparse.csgraph where it has the algorithm.")


def details(rows) -> str:
    """A Markdown table with every row."""
    return _report.details_table(rows, [
        ("case", lambda r: r["case"]), ("impl", lambda r: r["impl"]), ("status", lambda r: r["status"]),
        ("median", lambda r: _report.ms(r.get("median_s"))),
        ("first call", lambda r: _report.ms(r.get("first_call_s"))),
        ("note", lambda r: r.get("error", "")),
    ])
