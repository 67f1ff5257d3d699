"""Elementwise add and multiply of two sparse arrays, against peers.

Cases: a 2-D shape (2**20, 2**20) and a 4-D shape (14371, 91, 109, 91),
two arrays of ``k`` distinct entries each (2**22 on the CPU, 2**26 on the
GPU; 2**14 / 2**16 with ``--quick``) of which half share their coordinates,
float64 values, ``op`` = add or multiply, and two input states:

``shuffled``
    COO coordinates in random order: every implementation must sort. The
    timed call starts from the components, including the constructor:
    gpusparse ``(COO(a) + COO(b)).coalesce()`` (addition of uncoalesced
    arrays concatenates, so the coalesce is what sorts) and
    ``COO(a) * COO(b)``; SciPy ``coo_array(a).tocsr() + coo_array(b).tocsr()``
    (``.multiply``); pydata ``COO(a, has_duplicates=False) + COO(b, ...)``
    (the constructor sorts); torch ``(a + b).coalesce()`` / ``(a * b)``
    from ``sparse_coo_tensor``; GraphBLAS ``Matrix.from_coo`` of each operand,
    then ``ewise_add(b, plus)`` / ``ewise_mult(b, times)``.
``canonical``
    Sorted, unique inputs built outside the timing: gpusparse CSR (2-D) or
    coalesced COO (4-D); SciPy CSR; pydata COO; coalesced torch tensors;
    GraphBLAS matrices (SuiteSparse:GraphBLAS through ``python-graphblas``,
    :mod:`benchmarks._graphblas`, as many threads as gpusparse).

The 4-D shape is linearised to the 2-D matrix ``(s0*s1, s2*s3)`` for SciPy,
GraphBLAS and cupyx (they are 2-D only). GPU peers: torch CUDA and cupyx CSR
(``+`` / ``.multiply``). Every result is checked against a NumPy oracle on
the linear keys before it is timed; implementations of one case are timed
in alternation (:func:`benchmarks._timing.time_interleaved`).

Bandwidth: the floor of a sorted merge, ``(nA + nB)(K + V) + nC(K + V)``
with 8-byte linear keys ``K`` and values ``V``, against the copy bandwidth
measured in the same run.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=512)
'gpusparse ok in 8 of 8 cases'
"""

from __future__ import annotations

import functools
import math

import numpy as np

from benchmarks import _report
from benchmarks._report import Skip, as_2d, delinearize, host, linearize, need

__all__ = ["details", "run", "summarize"]

NAME = "elementwise"
SHAPES = {"2d": (2**20, 2**20), "4d": (14371, 91, 109, 91)}
OPS = ("add", "multiply")
STATES = ("shuffled", "canonical")
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
SEED = 20240602


@functools.lru_cache(maxsize=1)
def _operands(shape, k):
    """``(keys, owner, a, b, (values_a, values_b))``: two operands of ``k`` entries, half of them shared.

    Sorted unique linear keys by construction (random gaps, no ``unique()``
    of a large draw, so a few seconds at most at any size); ``owner`` says
    whose each key is: 0 only a's, 1 both, 2 only b's. The cases of one
    shape (every op and state) share them.
    """
    rng = np.random.default_rng([SEED, len(shape), k])
    size = math.prod(shape)
    half, rest = k // 2, k - k // 2
    m = k + rest
    gap = max(1, size // (m + 4 * math.isqrt(m) + 1))  # mean gap; the last key stays below size
    keys = np.cumsum(rng.integers(1, 2 * gap, m, dtype=np.int64, endpoint=gap == 1)) - 1
    owner = rng.permutation(np.repeat(np.array([0, 1, 2], dtype=np.int8), [rest, half, rest]))
    a, b = keys[owner != 2], keys[owner != 0]
    return keys, owner, a, b, (rng.random(a.size) + 0.5, rng.random(b.size) + 0.5)


@functools.lru_cache(maxsize=2)
def _oracle(shape, k, op):
    """``(keys, values)`` of ``a op b`` (both states share it)."""
    keys, owner, _, _, values = _operands(shape, k)
    va, vb = np.zeros(keys.size), np.zeros(keys.size)
    va[owner != 2], vb[owner != 0] = values
    if op == "add":
        return keys, va + vb
    both = owner == 1
    return keys[both], va[both] * vb[both]


@functools.lru_cache(maxsize=1)
def _ordered(shape, k, state):
    """The operands' linear keys and values in the order of ``state`` (both ops share them).

    The coordinates are computed from the keys on the device (:class:`_Case`).
    """
    _, _, a, b, values = _operands(shape, k)
    if state != "shuffled":
        return (a, b), values
    rng = np.random.default_rng([SEED, len(shape), k, 1])
    order = (rng.permutation(a.size), rng.permutation(b.size))
    return (a[order[0]], b[order[1]]), (values[0][order[0]], values[1][order[1]])


class _Case:
    """Two operands as components on the device, and the oracle on the host."""

    def __init__(self, shape_label, shape, op, state, k, xp):
        self.shape_label, self.shape, self.op, self.state = shape_label, shape, op, state
        _, _, a, b, self.values = _operands(shape, k)
        self.keys = (a, b)
        self.ref_keys, self.ref_values = _oracle(shape, k, op)
        keys, data = _ordered(shape, k, state)
        self.coords = tuple(xp.ascontiguousarray(delinearize(xp.asarray(kk), shape, xp)) for kk in keys)
        self.data = tuple(xp.asarray(v) for v in data)

    @property
    def name(self):
        return f"{self.shape_label}-{self.op}-{self.state}"

    @property
    def n_in(self):
        return int(self.keys[0].size + self.keys[1].size)

    @property
    def n_out(self):
        return int(self.ref_keys.size)


def _check(case, got, row):
    """None if ``got``, a result's ``(keys, values)``, equals the oracle's (explicit zeros dropped)."""
    keys, values = host(got[0]).astype(np.int64, copy=False), host(got[1]).astype(np.float64)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    nonzero = values != 0
    keys, values = keys[nonzero], values[nonzero]
    if keys.size != case.ref_keys.size or not np.array_equal(keys, case.ref_keys):
        return f"{keys.size} stored entries or coordinates differ from the oracle ({case.ref_keys.size})"
    if not np.allclose(values, case.ref_values, rtol=1e-12, atol=0):
        return "values differ from the oracle"
    return None


def _keys_2d(rows, cols, ncols):
    return rows.astype(np.int64) * ncols + cols.astype(np.int64)


# --------------------------------------------------------------------------
# implementations: factory(case, ctx) -> (fn, result) ; result(out) -> (keys, values)
# --------------------------------------------------------------------------

def _impl_gpusparse(case, ctx):
    import gpusparse as gs
    (ca, cb), (da, db), shape = case.coords, case.data, case.shape

    if case.state == "shuffled":
        if case.op == "add":
            def fn():
                return (gs.COO(ca, da, shape, check=False) + gs.COO(cb, db, shape, check=False)).coalesce()
        else:
            def fn():
                return gs.COO(ca, da, shape, check=False) * gs.COO(cb, db, shape, check=False)
    else:
        fmt = "csr" if len(shape) == 2 else "coo"
        a = gs.COO(ca, da, shape, check=False).coalesce().asformat(fmt)
        b = gs.COO(cb, db, shape, check=False).coalesce().asformat(fmt)
        fn = (lambda: a + b) if case.op == "add" else (lambda: a * b)

    def result(y):
        y = y.tocoo()
        return linearize(host(y.coords), shape, np), y.data

    return fn, result


def _impl_scipy(case, ctx):
    sp = need("scipy.sparse", "scipy")
    parts = [as_2d(c, case.shape, np) for c in case.coords]
    shape2 = parts[0][2]

    def csr(i):
        r, c, _ = parts[i]
        return sp.coo_array((case.data[i], (r, c)), shape=shape2).tocsr()

    if case.state == "shuffled":
        if case.op == "add":
            def fn():
                return csr(0) + csr(1)
        else:
            def fn():
                return csr(0).multiply(csr(1))
    else:
        a, b = csr(0), csr(1)
        fn = (lambda: a + b) if case.op == "add" else (lambda: a.multiply(b))

    def result(m):
        m = m.tocsr()
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return _keys_2d(rows, m.indices, m.shape[1]), m.data

    return fn, result


def _impl_graphblas(case, ctx):
    from benchmarks import _graphblas
    gb = _graphblas.module()
    parts = [as_2d(c, case.shape, np) for c in case.coords]
    shape2 = parts[0][2]

    def matrix(i):
        r, c, _ = parts[i]
        return gb.Matrix.from_coo(r, c, case.data[i], nrows=shape2[0], ncols=shape2[1])

    def combine(a, b):
        if case.op == "add":
            return _graphblas.wait(a.ewise_add(b, gb.binary.plus).new())
        return _graphblas.wait(a.ewise_mult(b, gb.binary.times).new())

    if case.state == "shuffled":
        def fn():
            return combine(matrix(0), matrix(1))
    else:
        a, b = _graphblas.wait(matrix(0)), _graphblas.wait(matrix(1))

        def fn():
            return combine(a, b)

    def result(m):
        rows, cols, values = m.to_coo()
        return _keys_2d(rows, cols, shape2[1]), values

    return fn, result


def _impl_pydata(case, ctx):
    sparse = need("sparse", "pydata sparse")
    (ca, cb), (da, db), shape = case.coords, case.data, case.shape

    def make(c, d):
        return sparse.COO(c, d, shape=shape, has_duplicates=False, sorted=case.state == "canonical")

    if case.state == "shuffled":
        if case.op == "add":
            def fn():
                return make(ca, da) + make(cb, db)
        else:
            def fn():
                return make(ca, da) * make(cb, db)
    else:
        a, b = make(ca, da), make(cb, db)
        fn = (lambda: a + b) if case.op == "add" else (lambda: a * b)

    def result(s):
        return linearize(s.coords.astype(np.int64), shape, np), s.data

    return fn, result


def _impl_torch(case, ctx):
    torch = need("torch")
    if not ctx.is_cuda:
        from benchmarks._graphblas import hold_torch
        hold_torch(torch)
    if ctx.is_cuda and not torch.cuda.is_available():
        raise Skip("torch has no CUDA")
    if ctx.is_cuda and case.op == "multiply":
        # Seen on an H100 with torch 2.11: the process dies of SIGFPE in the product of two coalesced
        # 2**20 x 2**20 tensors of 2**22 entries, which would end this module's run.
        raise Skip("torch's CUDA sparse * sparse dies of SIGFPE at this size (torch 2.11)")
    conv = torch.from_dlpack if ctx.is_cuda else torch.from_numpy
    (ca, cb), (da, db), shape = case.coords, case.data, case.shape
    ia, ib, va, vb = conv(ca), conv(cb), conv(da), conv(db)

    def make(i, v):
        return torch.sparse_coo_tensor(i, v, shape, check_invariants=False)

    if case.state == "shuffled":
        if case.op == "add":
            def fn():
                return (make(ia, va) + make(ib, vb)).coalesce()
        else:  # torch's mul of uncoalesced operands of this shape dies of SIGFPE on the CPU (torch 2.13)
            def fn():
                return (make(ia, va).coalesce() * make(ib, vb).coalesce()).coalesce()
    else:
        a, b = make(ia, va).coalesce(), make(ib, vb).coalesce()
        fn = (lambda: (a + b).coalesce()) if case.op == "add" else (lambda: (a * b).coalesce())

    def result(t):
        return linearize(t.indices().cpu().numpy(), shape, np), t.values().cpu().numpy()

    return fn, result


def _impl_cupyx(case, ctx):
    csp = need("cupyx.scipy.sparse", "cupyx")
    import cupy
    parts = [as_2d(c, case.shape, cupy) for c in case.coords]
    shape2 = parts[0][2]

    def csr(i):
        r, c, _ = parts[i]
        return csp.coo_matrix((case.data[i], (r, c)), shape=shape2).tocsr()

    if case.state == "shuffled":
        fn = (lambda: csr(0) + csr(1)) if case.op == "add" else (lambda: csr(0).multiply(csr(1)))
    else:
        a, b = csr(0), csr(1)
        fn = (lambda: a + b) if case.op == "add" else (lambda: a.multiply(b))

    def result(m):
        m = m.tocsr()
        indptr = host(m.indptr)
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(indptr))
        return _keys_2d(rows, host(m.indices), m.shape[1]), host(m.data)

    return fn, result


def _implementations(ctx):
    """``(name, factory, kind)`` in running order: gpusparse, then the device's peers (2-D ones reshaped)."""
    if ctx.is_cuda:
        return [("gpusparse", _impl_gpusparse, "ours"), ("torch", _impl_torch, "peer"),
                ("cupyx", _impl_cupyx, "peer")]
    return [("gpusparse", _impl_gpusparse, "ours"), ("scipy", _impl_scipy, "peer"),
            ("pydata", _impl_pydata, "peer"), ("torch", _impl_torch, "peer"),
            ("graphblas", _impl_graphblas, "peer")]


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------

def _floor_bytes(case) -> int:
    entry = 8 + 8  # linear key + float64 value
    return case.n_in * entry + case.n_out * entry


def _add_rates(case, row, t):
    row["entries_per_s"] = case.n_in / t
    _report.add_bandwidth(row, _floor_bytes(case), t)


def run(ctx):
    """Yield one row per (case, implementation); ``ctx.size`` overrides ``k``."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    describe = functools.partial(_report.progress, case_width=24, impl_width=10)
    for label, shape in SHAPES.items():
        for state in STATES:
            for op in OPS:
                case = _Case(label, shape, op, state, k, ctx.xp)
                base = {"bench": NAME, "case": case.name, "shape": list(shape), "shape_label": label,
                        "op": op, "state": state, "entries_a": int(case.keys[0].size),
                        "entries_b": int(case.keys[1].size), "entries_out": case.n_out,
                        "copy_gb_s": _report.copy_gb_s(ctx, case.n_in * 16, copies)}
                yield from _report.run_case(ctx, case, base, _implementations(ctx), _check, describe, _add_rates)
                del case


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def summarize(rows) -> str:
    """One line per case, one column per peer (peer time / gpusparse time)."""
    return _report.summary_table(
        rows, [("entries a + b", lambda r: f"{r['entries_a'] + r['entries_b']:,}"),
               ("entries out", lambda r: f"{r['entries_out']:,}")],
        [("GB/s floor", lambda r: f"{r['gb_s_floor']:.2f}"), ("% copy", lambda r: f"{r['pct_copy_floor']:.0f}")],
        "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), the peer's "
        "median in parentheses. `shuffled` starts from unsorted components (everyone sorts); "
        "`canonical` from sorted, unique operands (SciPy/cupyx CSR, gpusparse CSR for 2-D). "
        "GB/s floor counts `(nA + nB + nC)(8 + 8)` bytes (linear key + value).")


def details(rows) -> str:
    """A Markdown table with every row (:func:`benchmarks._report.floor_details`)."""
    return _report.floor_details(rows)
