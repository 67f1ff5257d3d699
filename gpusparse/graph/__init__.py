"""Graph algorithms on sparse adjacency matrices, written with the semiring products (GraphBLAS style).

Every algorithm takes an adjacency matrix ``A`` (any format, on any device;
``A[i, j]`` is the weight of the edge ``i -> j``; a stored entry is an edge,
whatever its value; a COO's duplicates are summed first) and runs where
``A`` lives, returning arrays of that device's array module. Each step is a
masked ``mxv`` / ``mxm`` (:mod:`gpusparse.ops.semiring`), so the same code
runs on the CPU and on CUDA devices; a step synchronises once to test
convergence.

* :func:`bfs` -- levels and parents (``min_second`` over the frontier, masked
  by the complement of the visited set);
* :func:`sssp` -- Bellman-Ford on ``min_plus``;
* :func:`pagerank` -- networkx's power iteration (``plus_times``);
* :func:`connected_components` -- weak: min-label propagation with pointer
  jumping on the symmetrised pattern; strong: forward colouring and backward
  reachability within each colour (``min_second`` / ``max_second``);
* :func:`triangle_count` -- ``sum(L plus_pair L, mask=L)`` with ``L`` the
  strictly lower triangle of the undirected pattern.
"""

from __future__ import annotations

import numpy as np

from gpusparse._backend import backend
from gpusparse._device import to_host
from gpusparse.ops import convert
from gpusparse.ops.linalg.core import transpose_2d
from gpusparse.ops.semiring import apply, mxm, mxv, select
from gpusparse.ops.semiring.products import RepeatedMxv
from gpusparse.ops.semiring._operands import as_csr, need_sparse

__all__ = ["bfs", "connected_components", "pagerank", "sssp", "triangle_count"]

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def _square(A, what):
    need_sparse(A, "A", what)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{what}: the adjacency matrix must be square; got shape {tuple(A.shape)}")
    return A.shape[0]


def _source(source, n, what):
    s = int(source)
    if not 0 <= s < n:
        raise IndexError(f"{what}: source {source} is not a vertex of a graph with {n} vertices")
    return s


def _pattern(A):
    """The CSR of A's structure with int64 ones (duplicates merged)."""
    return as_csr(convert.astype(apply(A, "one"), np.int64, copy=False))


def _union_pattern(a, b, be):
    """The CSR of the union of two canonical CSR structures of one shape, with int64 ones, on ``be``."""
    from gpusparse.containers import CSR
    with be.scope():
        indptr, indices, _, _ = be.kernels.merge_rows(a.indptr, a.indices, b.indptr, b.indices, a.shape[1], "union")
        ones = be.xp.ones(indices.shape[0], dtype=np.int64)
        return CSR._from_parts(indptr.astype(indices.dtype, copy=False), indices, ones, a.shape, np.int64(0),
                               a.device)


def _same_structure(a, b, be) -> bool:
    """Whether two canonical CSR matrices of one shape on ``be`` store the same positions (a symmetric graph's halves)."""
    if a.nnz != b.nnz:
        return False
    with be.scope():
        xp = be.xp
        same = xp.logical_and(xp.array_equal(a.indptr, b.indptr), xp.array_equal(a.indices, b.indices))
        return bool(to_host(same))  # sync: which plan


def _transposed(x):
    return as_csr(transpose_2d(x))


def _same(xp, a, b) -> bool:
    return bool(to_host(xp.all(a == b)))  # sync: converged?


def bfs(A, source):
    """Breadth-first search from ``source``: ``(levels, parents)``.

    ``levels[v]`` is the number of edges on a shortest path from the source
    (0 at the source, -1 where unreachable); ``parents[v]`` a vertex one
    level up with an edge to ``v`` (the smallest such; the source is its own
    parent, -1 where unreachable). Edge weights are ignored.

    Each level is one ``mxv(A.T, ids, "min_second")`` masked by the
    unvisited set, ``ids`` holding the frontier's vertex numbers (the
    monoid's identity elsewhere); the product is prepared once
    (:class:`~gpusparse.ops.semiring.products.RepeatedMxv`) and the level's
    results are written in place.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> A = gs.fromdense(np.array([[0, 1, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]]))
    >>> gs.graph.bfs(A, 0)
    (array([0, 1, 1, 2]), array([0, 0, 0, 1]))
    """
    what = "bfs"
    n = _square(A, what)
    s = _source(source, n, what)
    be = backend(A.device)
    xp = be.xp
    step = RepeatedMxv(_transposed(_pattern(A)), "min_second", np.int64)
    with be.scope():
        ids = xp.arange(n, dtype=np.int64)
        levels = xp.full(n, -1, dtype=np.int64)
        parents = xp.full(n, -1, dtype=np.int64)
        unvisited = xp.ones(n, dtype=np.bool_)
        frontier = xp.full(n, _MAX, dtype=np.int64)
        levels[s] = 0
        parents[s] = s
        unvisited[s] = False
        frontier[s] = s
        for level in range(1, n):
            p = step(frontier, unvisited)
            new = p != _MAX
            if not bool(to_host(new.any())):  # sync: is the frontier empty?
                break
            xp.copyto(levels, np.int64(level), where=new)
            xp.copyto(parents, p, where=new)
            unvisited ^= new  # the new vertices were unvisited: the mask computed only there
            frontier = xp.where(new, ids, _MAX)
    return levels, parents


def sssp(A, source):
    """Single-source shortest path lengths from ``source`` (Bellman-Ford on the ``min_plus`` semiring).

    Returns float64 distances, ``inf`` where unreachable. Weights may be
    negative; a negative cycle reachable from the source raises
    ``ValueError``.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> A = gs.fromdense(np.array([[0, 4, 1], [0, 0, 0], [0, 2, 0]]))
    >>> gs.graph.sssp(A, 0)
    array([0., 3., 1.])
    """
    what = "sssp"
    n = _square(A, what)
    s = _source(source, n, what)
    be = backend(A.device)
    xp = be.xp
    step = RepeatedMxv(_transposed(as_csr(convert.astype(A, np.float64, copy=False))), "min_plus", np.float64)
    with be.scope():
        d = xp.full(n, np.inf)
        d[s] = 0.0
        for _ in range(n):
            new = xp.minimum(d, step(d))
            if _same(xp, new, d):
                return d
            d = new
    raise ValueError(f"{what}: the graph has a negative cycle reachable from vertex {s}")


def pagerank(A, alpha=0.85, tol=1e-6, max_iter=100):
    """PageRank scores, as ``networkx.pagerank`` computes them on the weighted graph of ``A``.

    Each row of ``A`` is normalised by its weight sum; the score of
    dangling vertices (no out-weight) is spread uniformly; iteration stops
    when the L1 change is below ``n * tol`` and raises ``RuntimeError``
    after ``max_iter`` iterations without convergence (networkx's
    ``PowerIterationFailedConvergence``). Returns float64 scores summing to 1.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> A = gs.fromdense(np.array([[0, 1.0], [1.0, 0]]))
    >>> gs.graph.pagerank(A)
    array([0.5, 0.5])
    """
    what = "pagerank"
    n = _square(A, what)
    be = backend(A.device)
    dev, xp = be.device, be.xp
    W = as_csr(convert.astype(A, np.float64, copy=False))
    if n == 0:
        with be.scope():
            return xp.zeros(0)
    with be.scope():
        out_weight = mxv(W, xp.ones(n), "plus_times")
        dangling = out_weight == 0
        scale = xp.where(dangling, 0.0, 1.0 / xp.where(dangling, 1.0, out_weight))
        rows = be.kernels.expand(W.indptr, W.nnz)
        from gpusparse.containers import CSR
        Q = CSR._from_parts(W.indptr, W.indices, xp.ascontiguousarray(W.data * scale[rows]), W.shape,
                            np.float64(0), dev)
        QT = _transposed(Q)
        p = xp.full(n, 1.0 / n)
        is_dangling = dangling.astype(np.float64)  # x @ is_dangling: their score, without a boolean index's sync
        x = p.copy()
        for _ in range(int(max_iter)):
            last = x
            x = alpha * (mxv(QT, x, "plus_times") + (x @ is_dangling) * p) + (1 - alpha) * p
            err = float(to_host(xp.abs(x - last).sum()))  # sync: converged?
            if err < n * tol:
                return x
    raise RuntimeError(f"{what}: power iteration failed to converge within {max_iter} iterations")


def _relabel(xp, labels):
    uniq, inverse = xp.unique(labels, return_inverse=True)
    return int(uniq.shape[0]), inverse.reshape(-1).astype(np.int64)


def connected_components(A, directed=True, connection="weak"):
    """``(n_components, labels)`` as ``scipy.sparse.csgraph.connected_components``.

    ``connection="weak"`` (or ``directed=False``) ignores edge directions;
    ``"strong"`` finds strongly connected components. Labels are
    ``0 .. n_components - 1``, numbered by each component's smallest vertex
    (weak) or by its colour (strong); the partition is scipy's.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> A = gs.fromdense(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]))
    >>> gs.graph.connected_components(A)
    (2, array([0, 0, 1]))
    """
    what = "connected_components"
    if connection not in ("weak", "strong"):
        raise ValueError(f"{what}: connection must be 'weak' or 'strong'; got {connection!r}")
    n = _square(A, what)
    be = backend(A.device)
    xp = be.xp
    P = _pattern(A)
    with be.scope():
        ids = xp.arange(n, dtype=np.int64)
        if not directed or connection == "weak":
            neighbours = RepeatedMxv(_union_pattern(P, _transposed(P), be), "min_second", np.int64)
            labels = ids
            while True:
                # each vertex takes the smallest grandparent label around it (min-label propagation
                # with pointer jumping: a chain of labels halves every step instead of moving one edge)
                grand = labels[labels]
                new = xp.minimum(grand, neighbours(grand))
                if _same(xp, new, labels):
                    break
                labels = new
            return _relabel(xp, labels)
        forward = RepeatedMxv(_transposed(P), "min_second", np.int64)
        backward = RepeatedMxv(P, "max_second", np.int64)
        labels = xp.full(n, -1, dtype=np.int64)
        remaining = xp.ones(n, dtype=np.bool_)
        while bool(to_host(remaining.any())):  # sync: vertices left?
            # forward: the smallest vertex number that reaches each remaining vertex
            color = xp.where(remaining, ids, _MAX)
            while True:
                new = xp.where(remaining, xp.minimum(color, forward(color, remaining)), _MAX)
                if _same(xp, new, color):
                    break
                color = new
            # backward: the vertices of each colour that reach its root (its component)
            member = remaining & (color == ids)
            while True:
                reach = backward(xp.where(member, color, _MIN), remaining & ~member)
                joins = remaining & ~member & (reach == color)
                if not bool(to_host(joins.any())):  # sync: converged?
                    break
                member = member | joins
            labels = xp.where(member, color, labels)
            remaining = remaining & ~member
        return _relabel(xp, labels)


def triangle_count(A):
    """The number of triangles of the undirected graph of ``A`` (directions, weights and self loops ignored).

    ``sum(mxm(L, L, "plus_pair", mask=L))`` with ``L`` the strictly lower
    triangle of the symmetrised pattern: each triangle ``i > j > k`` is
    counted once, at ``(i, k)``, and only masked outputs are computed.

    Examples
    --------
    >>> import numpy as np, gpusparse as gs
    >>> A = gs.fromdense(np.array([[0, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]]))
    >>> gs.graph.triangle_count(A)
    1
    """
    what = "triangle_count"
    _square(A, what)
    be = backend(A.device)
    P = _pattern(A)
    # tril(P | P.T, -1) from the halves: only the upper half is transposed, and an undirected
    # graph's halves match, so that no union is formed
    lower, upper = select(P, "tril", -1), _transposed(select(P, "triu", 1))
    L = lower if _same_structure(lower, upper, be) else _union_pattern(lower, upper, be)
    C = mxm(L, L, "plus_pair", mask=L)
    with be.scope():
        return int(to_host(C.data.sum()))  # sync: the count
