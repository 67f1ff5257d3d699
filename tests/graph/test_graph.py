"""gpusparse.graph against scipy.sparse.csgraph and networkx on random graphs, on every device.

Graphs: empty, one vertex, self loops, disconnected pieces, duplicate edges
(summed), int32 and int64 index dtypes; positive weights (csgraph reads a
stored zero as a missing edge, gpusparse as an edge).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import gpusparse as gs
from _helpers import put
from gpusparse._device import to_host

pytestmark = pytest.mark.filterwarnings("ignore::gpusparse._errors.GpuSparseEfficiencyWarning")


def random_graph(rng, n, density, *, self_loops=True, duplicates=True, pieces=1):
    """A scipy CSR (duplicates summed) and the edge list it came from, with positive integer weights."""
    rows, cols = [], []
    size = max(n // pieces, 1)
    for start in range(0, n, size):
        stop = min(start + size, n)
        k = stop - start
        m = int(rng.integers(0, int(density * k * k) + 2)) if k else 0
        rows.append(rng.integers(start, stop, m))
        cols.append(rng.integers(start, stop, m))
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    if not self_loops:
        keep = r != c
        r, c = r[keep], c[keep]
    if duplicates and r.size > 2:
        r, c = np.concatenate([r, r[:2]]), np.concatenate([c, c[:2]])
    w = rng.integers(1, 10, r.size).astype(np.float64)
    return sp.coo_matrix((w, (r, c)), shape=(n, n)).tocsr(), (r, c, w)


def to_gs(device, edges, n, fmt, index_dtype=np.int64):
    r, c, w = edges
    x = gs.COO(put(np.stack([r, c]).astype(np.int64), device), put(w, device), (n, n))
    if fmt == "coo":
        return x
    y = x.asformat(fmt)
    if index_dtype == np.int32 or y.index_dtype == np.int32:
        cls = gs.CSR if fmt == "csr" else gs.CSC
        y = cls(y.indptr.astype(index_dtype), y.indices.astype(index_dtype), y.data, (n, n))
    return y


CASES = [(0, 0.0, 1), (1, 1.0, 1), (7, 0.25, 1), (12, 0.15, 3), (20, 0.1, 2)]


def _cases(rng):
    for i, (n, density, pieces) in enumerate(CASES):
        fmt = ("coo", "csr", "csc")[i % 3]
        index_dtype = (np.int32, np.int64)[i % 2]
        yield (n, *random_graph(rng, n, density, pieces=pieces), fmt, index_dtype)


def test_bfs(device, rng):
    for n, S, edges, fmt, idx in _cases(rng):
        if n == 0:
            continue
        A = to_gs(device, edges, n, fmt, idx)
        for source in sorted({0, n - 1, n // 2}):
            levels, parents = (to_host(x) for x in gs.graph.bfs(A, source))
            hops = csgraph.shortest_path(S, unweighted=True, indices=source)
            expected = np.where(np.isinf(hops), -1, hops).astype(np.int64)
            np.testing.assert_array_equal(levels, expected)
            order = csgraph.breadth_first_order(S, source, return_predecessors=False)
            assert set(np.flatnonzero(levels >= 0)) == set(order.tolist())
            dense = S.toarray() != 0
            for v in range(n):
                if levels[v] <= 0:
                    assert parents[v] == (source if v == source else -1)
                else:
                    assert levels[parents[v]] == levels[v] - 1 and dense[parents[v], v]


def test_sssp(device, rng):
    for n, S, edges, fmt, idx in _cases(rng):
        if n == 0:
            continue
        A = to_gs(device, edges, n, fmt, idx)
        for source in sorted({0, n - 1}):
            got = to_host(gs.graph.sssp(A, source))
            np.testing.assert_allclose(got, csgraph.shortest_path(S, indices=source))


def test_sssp_negative_weights_and_cycles(device):
    A = gs.fromdense(put(np.array([[0, 4.0, 0], [0, 0, -2.0], [0, 0, 0]]), device))
    np.testing.assert_array_equal(to_host(gs.graph.sssp(A, 0)), [0.0, 4.0, 2.0])
    cyc = gs.fromdense(put(np.array([[0, 1.0, 0], [0, 0, -2.0], [0.5, 0, 0]]), device))
    with pytest.raises(ValueError, match="negative cycle"):
        gs.graph.sssp(cyc, 0)
    with pytest.raises(IndexError, match="source"):
        gs.graph.sssp(A, 3)


def test_pagerank_matches_networkx(device, rng):
    nx = pytest.importorskip("networkx")
    for n, S, edges, fmt, idx in _cases(rng):
        A = to_gs(device, edges, n, fmt, idx)
        G = nx.from_scipy_sparse_array(S, create_using=nx.DiGraph)
        expected = nx.pagerank(G, alpha=0.85, tol=1e-10, max_iter=500)
        got = to_host(gs.graph.pagerank(A, alpha=0.85, tol=1e-10, max_iter=500))
        np.testing.assert_allclose(got, [expected[v] for v in range(n)], rtol=1e-7, atol=1e-12)


def _same_partition(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    pairs = set(zip(a.tolist(), b.tolist()))
    assert len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("connection", ["weak", "strong"])
def test_connected_components(device, connection, rng):
    for n, S, edges, fmt, idx in _cases(rng):
        A = to_gs(device, edges, n, fmt, idx)
        count, labels = gs.graph.connected_components(A, directed=True, connection=connection)
        expected_count, expected = csgraph.connected_components(S, directed=True, connection=connection)
        assert count == expected_count
        _same_partition(to_host(labels), expected)
    count, labels = gs.graph.connected_components(A, directed=False)
    expected_count, expected = csgraph.connected_components(S, directed=False)
    assert count == expected_count
    _same_partition(to_host(labels), expected)


def test_triangle_count_matches_networkx(device, rng):
    nx = pytest.importorskip("networkx")
    for n, S, edges, fmt, idx in _cases(rng):
        A = to_gs(device, edges, n, fmt, idx)
        G = nx.from_scipy_sparse_array(S + S.T)
        G.remove_edges_from(nx.selfloop_edges(G))
        want = sum(nx.triangles(G).values()) // 3
        assert gs.graph.triangle_count(A) == want
        r, c, w = edges  # the symmetrised graph: its halves match, so no union is formed
        both = (np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([w, w]))
        assert gs.graph.triangle_count(to_gs(device, both, n, fmt, idx)) == want
    k4 = gs.fromdense(put(np.ones((4, 4)) - np.eye(4), device))
    assert gs.graph.triangle_count(k4) == 4
