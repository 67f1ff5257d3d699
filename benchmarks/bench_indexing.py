"""Indexing: index_select and 2-D slicing, against SciPy, pydata sparse, torch and CuPy.

Input: a random ``n x n`` float64 matrix with ``k`` stored entries, 16 per
row on average (``k`` = 2**22 on the CPU, 2**26 on the GPU, 2**14 with
``--quick``; ``--size`` sets ``k``), coalesced, in every peer's native form
built once outside the timing. Cases:

``index_select-rows-csr``
    10**5 random rows (with repeats) of a CSR: ``gs.index_select(x, 0, rows)``
    vs SciPy / cupyx ``csr[rows]``.
``index_select-rows-coo``
    the same rows of a coalesced COO vs torch ``index_select(0, rows)``.
``index_select-cols-coo``
    10**5 random columns of the COO vs torch ``index_select(1, cols)``.
``index_select-cols-csc``
    10**5 random columns of a CSC vs SciPy / cupyx ``csc[:, cols]``.
``slice-csr``, ``slice-coo``
    ``x[n/4 : 3n/4, n/8 : 7n/8]`` of the CSR (vs SciPy / cupyx) and of the
    COO (vs pydata sparse; torch cannot slice sparse dimensions).

Every peer's result is compared with gpusparse's (coordinates exactly,
values allclose) before it is timed; a disagreement is a ``mismatch`` row.
``speedup`` is peer time / gpusparse time (above 1: gpusparse is faster).

The machinery (inputs, checks, rows) is shared with ``bench_manipulation``.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=512)
'gpusparse ok in 6 of 6 cases'
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from benchmarks._report import Skip, host, need, progress, run_sequential, summary_table

__all__ = ["run", "summarize"]

NAME = "indexing"
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
PER_ROW = 16
N_SELECT = 10**5
SEED = 20240607


# --------------------------------------------------------------------------
# Inputs: one matrix in every peer's form
# --------------------------------------------------------------------------

class Inputs:
    """The benchmark matrix as gpusparse COO/CSR/CSC and as each available peer's object."""

    def __init__(self, ctx, k):
        import gpusparse as gs
        xp = ctx.xp
        self.ctx = ctx
        n = max(k // PER_ROW, 2)
        rng = np.random.default_rng([SEED, k])
        keys = xp.unique(xp.asarray(rng.integers(0, n * n, int(k * 1.02), dtype=np.int64)))[:k]
        rows, cols = keys // n, keys % n
        self.n, self.k = n, int(keys.shape[0])
        self.rows, self.cols = rows, cols
        self.values = xp.asarray(rng.random(self.k))
        self.coords = xp.stack([rows, cols])
        self.coo = gs.COO(self.coords, self.values, shape=(n, n), check=False).coalesce()
        self.csr = self.coo.tocsr()
        self.csc = self.coo.tocsc()
        self.select = xp.asarray(rng.integers(0, n, min(N_SELECT, n), dtype=np.int64))
        self._peers = {}

    def peer(self, name):
        """The matrix as ``name`` ("scipy_csr", "scipy_csc", "torch", "pydata", "cupyx_csr", ...)."""
        if name not in self._peers:
            self._peers[name] = _build_peer(name, self)
        return self._peers[name]


def _build_peer(name, inp):
    shape = (inp.n, inp.n)
    if name.startswith("scipy"):
        sp = need("scipy.sparse")
        m = sp.csr_array((host(inp.values), (host(inp.rows), host(inp.cols))), shape=shape)
        return m if name == "scipy_csr" else m.tocsc() if name == "scipy_csc" else m.tocoo()
    if name.startswith("cupyx"):
        csp = need("cupyx.scipy.sparse")
        m = csp.csr_matrix((inp.values, (inp.rows, inp.cols)), shape=shape)
        return m if name == "cupyx_csr" else m.tocsc()
    if name == "pydata":
        sparse = need("sparse")
        return sparse.COO(host(inp.coords), host(inp.values), shape=shape, has_duplicates=False,
                          sorted=True)
    if name == "torch":
        torch = need("torch")
        if inp.ctx.is_cuda:
            if not torch.cuda.is_available():
                raise Skip("torch has no CUDA")
            idx, val = torch.from_dlpack(inp.coords), torch.from_dlpack(inp.values)
        else:
            idx, val = torch.from_numpy(host(inp.coords)), torch.from_numpy(host(inp.values))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.sparse_coo_tensor(idx, val, shape, check_invariants=False).coalesce()
    raise ValueError(name)


def torch_index(inp, arr):
    torch = need("torch")
    return torch.from_dlpack(arr) if inp.ctx.is_cuda else torch.from_numpy(host(arr))


# --------------------------------------------------------------------------
# Results in one canonical form, for the checks
# --------------------------------------------------------------------------

def canonical(obj):
    """``(shape, coords (d, u) sorted row-major, values)`` on the host, duplicates summed."""
    import gpusparse as gs
    if isinstance(obj, gs.SparseArray):
        c = obj.tocoo().coalesce()
        return tuple(c.shape), host(c.coords), host(c.data)
    mod = type(obj).__module__
    if mod.startswith("torch"):
        if obj.layout != __import__("torch").sparse_coo:
            obj = obj.to_sparse_coo()
        obj = obj.coalesce()
        return tuple(obj.shape), host(obj.indices()), host(obj.values())
    if mod.startswith("sparse"):
        coords, data = np.asarray(obj.coords, dtype=np.int64), np.asarray(obj.data)
    else:  # scipy / cupyx matrices and arrays
        c = obj.tocoo()
        coords = np.stack([host(c.row), host(c.col)]).astype(np.int64)
        data = host(c.data)
    order = np.lexsort(coords[::-1]) if coords.shape[0] else np.arange(coords.shape[1])
    coords, data = coords[:, order], data[order]
    if coords.shape[1] > 1:
        new = np.ones(coords.shape[1], dtype=bool)
        new[1:] = (coords[:, 1:] != coords[:, :-1]).any(axis=0)
        ids = np.cumsum(new) - 1
        summed = np.zeros((int(ids[-1]) + 1,) + data.shape[1:], dtype=data.dtype)
        np.add.at(summed, ids, data)
        coords, data = coords[:, new], summed
    return tuple(obj.shape), coords, data


def compare(got, expected) -> str | None:
    """None when two canonical results agree, else what differs."""
    (s1, c1, v1), (s2, c2, v2) = got, expected
    if s1 != s2:
        return f"shape {s1} != {s2}"
    if c1.shape != c2.shape or not np.array_equal(c1, c2):
        return f"coordinates differ ({c1.shape[1]} vs {c2.shape[1]} entries)"
    if not np.allclose(v1.astype(np.float64), v2.astype(np.float64), rtol=1e-9, atol=1e-12, equal_nan=True):
        return "values differ"
    return None


# --------------------------------------------------------------------------
# Running cases
# --------------------------------------------------------------------------

def _against_first():
    """A check (:func:`benchmarks._report.measure`) of canonical results against the first one, gpusparse's.

    It records ``out_entries`` in every row.
    """
    first = []

    def check(got, row):
        row["out_entries"] = int(got[1].shape[1])
        if not first:
            first.append(got)
            return None
        return compare(got, first[0])

    return check


def _canonical_of(factory, inp):
    return factory(inp), canonical


def _entries_per_s(k, row, t):
    row["entries_per_s"] = k / t


def run_cases(ctx, bench, cases, inp):
    """Yield rows for ``cases``: ``(case, [(impl, kind, factory)], extra)``; the first impl is gpusparse.

    ``factory(inp)`` returns a callable (or raises :class:`benchmarks._report.Skip`).
    Each peer's first result is checked against gpusparse's before timing.
    """
    describe = functools.partial(progress, case_width=24, impl_width=10)
    rates = functools.partial(_entries_per_s, inp.k)
    for case, impls, extra in cases:
        rows = (({"bench": bench, "case": case, "impl": impl, "kind": kind, "status": "ok",
                  "entries": inp.k, "n": inp.n, **extra}, functools.partial(_canonical_of, factory, inp))
                for impl, kind, factory in impls)
        yield from run_sequential(ctx, rows, _against_first(), describe, rates)


def _cases(ctx, inp):
    from gpusparse.ops import indexing as ix
    n = inp.n
    a, b, c, d = n // 4, 3 * n // 4, n // 8, 7 * n // 8
    sel = inp.select

    def ours(fn):
        return lambda i: fn

    gpu = ctx.is_cuda
    csr_peer = "cupyx_csr" if gpu else "scipy_csr"
    csc_peer = "cupyx_csc" if gpu else "scipy_csc"
    csr_name = "cupyx" if gpu else "scipy"
    host_sel = host(sel)

    def peer_rows(i):
        m = i.peer(csr_peer)
        s = sel if gpu else host_sel
        return lambda: m[s]

    def peer_cols(i):
        m = i.peer(csc_peer)
        s = sel if gpu else host_sel
        return lambda: m[:, s]

    def torch_select(axis):
        def factory(i):
            t, idx = i.peer("torch"), torch_index(i, sel)
            return lambda: t.index_select(axis, idx)
        return factory

    def peer_slice(name):
        def factory(i):
            m = i.peer(name)
            return lambda: m[a:b, c:d]
        return factory

    return [
        ("index_select-rows-csr", [("gpusparse", "ours", ours(lambda: ix.index_select(inp.csr, 0, sel))),
                                   (csr_name, "peer", peer_rows)], {"selected": int(sel.shape[0])}),
        ("index_select-rows-coo", [("gpusparse", "ours", ours(lambda: ix.index_select(inp.coo, 0, sel))),
                                   ("torch", "peer", torch_select(0))], {"selected": int(sel.shape[0])}),
        ("index_select-cols-coo", [("gpusparse", "ours", ours(lambda: ix.index_select(inp.coo, 1, sel))),
                                   ("torch", "peer", torch_select(1))], {"selected": int(sel.shape[0])}),
        ("index_select-cols-csc", [("gpusparse", "ours", ours(lambda: ix.index_select(inp.csc, 1, sel))),
                                   (csr_name, "peer", peer_cols)], {"selected": int(sel.shape[0])}),
        ("slice-csr", [("gpusparse", "ours", ours(lambda: inp.csr[a:b, c:d])),
                       (csr_name, "peer", peer_slice(csr_peer))], {}),
        ("slice-coo", [("gpusparse", "ours", ours(lambda: inp.coo[a:b, c:d]))]
         + ([] if gpu else [("pydata", "peer", peer_slice("pydata"))]), {}),
    ]


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    inp = Inputs(ctx, k)
    yield from run_cases(ctx, NAME, _cases(ctx, inp), inp)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

# the count columns of the summary, shared with bench_manipulation
COUNTS = [("entries", lambda r: f"{r.get('entries', 0):,}"),
          ("out entries", lambda r: f"{r.get('out_entries', 0):,}")]


def summarize(rows) -> str:
    return summary_table(rows, COUNTS, [],
                         "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), "
                         "the peer's median in parentheses. Selections take 10**5 random rows or "
                         "columns with repeats; slices keep the middle half of the rows and 3/4 "
                         "of the columns.")
