"""Sum and max along one and two axes of sparse arrays, against peers.

Inputs are canonical (sorted, unique) arrays of ``k`` entries (2**22 on the
CPU, 2**26 on the GPU; 2**14 / 2**16 with ``--quick``) with float64 values
in [0.5, 1.5), in two layouts:

``2d``
    shape ``(k / 64, 2**20)`` (``(2**16, 2**20)`` on the CPU), gpusparse and
    SciPy/cupyx as CSR; ``uniform`` rows of 64 entries or ``power-law`` rows (Pareto lengths, a
    few rows holding a large share). Axes: ``1`` (per row), ``0`` (per
    column) and ``(0, 1)`` (everything).
``4d``
    shape ``(14371, 91, 109, 91)`` as COO; ``uniform`` coordinates, or
    ``power-law`` ones (the first coordinate Zipf-distributed, so the groups
    of the other axes are skewed). Axes: ``3``, ``0``, ``(2, 3)``, ``(0, 1)``.

Implementations: gpusparse ``gs.sum(x, axis)`` / ``gs.max(x, axis)``
(a sparse result where sparse axes remain, dense otherwise), pydata
``x.sum(axis)`` / ``x.max(axis)``, SciPy ``csr.sum(axis)`` / ``csr.max(axis)``
(2-D), torch ``torch.sparse.sum(x, dim)`` (sum only), GraphBLAS (2-D;
SuiteSparse:GraphBLAS through ``python-graphblas``, as many threads as
gpusparse) ``reduce_rowwise`` / ``reduce_columnwise`` / ``reduce_scalar``
with the ``plus`` or ``max`` monoid; on the GPU torch CUDA
and cupyx ``csr.sum(axis)`` / ``csr.max(axis)``. Every result is checked
against a NumPy oracle (sorted unique keys + ``reduceat`` over the kept keys)
before it is timed; implementations of a case are timed in alternation.

Bandwidth: the floor reads the input once and writes the output,
``k(dI + V) + u(dI + V)`` with the kept coordinates only in the output,
against the copy bandwidth measured in the same run.

Examples
--------
>>> from benchmarks._report import smoke
>>> smoke(run, size=512)
'gpusparse ok in 28 of 28 cases'
"""

from __future__ import annotations

import functools

import numpy as np

from benchmarks import _report
from benchmarks._report import Skip, delinearize, host, linearize, need

__all__ = ["details", "run", "summarize"]

NAME = "reductions"
LAYOUTS = {
    "2d": (None, [1, 0, (0, 1)]),  # (k // 64, 2**20)
    "4d": ((14371, 91, 109, 91), [3, 0, (2, 3), (0, 1)]),
}
DISTRIBUTIONS = ("uniform", "power-law")
OPS = ("sum", "max")
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
SEED = 20240603


def _norm_axes(axis, ndim):
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))


def _sorted_unique(keys):
    """``np.unique(keys)`` by a sort and a comparison (NumPy's hash-based unique is several times slower)."""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys


class _Input:
    """One canonical array (host coordinates and values) and its device copies."""

    def __init__(self, label, shape, dist, k, xp):
        self.label, self.shape, self.dist = label, shape, dist
        rng = np.random.default_rng([SEED, len(shape), k, DISTRIBUTIONS.index(dist)])
        if len(shape) == 2:
            n_rows, n_cols = shape
            if dist == "uniform":
                lengths = np.full(n_rows, k // n_rows)
            else:
                raw = rng.pareto(1.1, n_rows) + 1
                lengths = np.minimum(np.floor(raw / raw.sum() * k).astype(np.int64), n_cols)
            rows = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
            cols = rng.integers(0, n_cols, rows.size, dtype=np.int64)
            keys = _sorted_unique(rows * n_cols + cols)
        else:
            first = rng.integers(0, shape[0], k) if dist == "uniform" else \
                np.minimum(rng.zipf(1.3, k) - 1, shape[0] - 1)
            rest = [rng.integers(0, s, k) for s in shape[1:]]
            keys = _sorted_unique(linearize(np.stack([first] + rest).astype(np.int64), shape))
        self.keys = keys
        self.coords = delinearize(keys, shape)
        self.values = rng.random(keys.size) + 0.5
        self.d_coords, self.d_values = xp.asarray(self.coords), xp.asarray(self.values)

    @property
    def k(self):
        return int(self.keys.size)

    def oracle(self, op, axis):
        """``(kept keys, values)`` of the reduction: the groups that hold entries."""
        axes = _norm_axes(axis, len(self.shape))
        kept = [a for a in range(len(self.shape)) if a not in axes]
        if not kept:
            value = self.values.sum() if op == "sum" else self.values.max()
            return np.zeros(1, np.int64), np.array([value])
        uniq, starts, vals = self._groups(tuple(kept))
        red = np.add.reduceat(vals, starts) if op == "sum" else np.maximum.reduceat(vals, starts)
        return uniq, red

    @functools.lru_cache(maxsize=8)  # noqa: B019 (a few inputs per run; sum and max share the grouping)
    def _groups(self, kept):
        """``(group keys, group starts, values in group order)`` over the ``kept`` axes."""
        kept = list(kept)
        gkeys = linearize(self.coords[kept], tuple(self.shape[a] for a in kept))
        if gkeys.size > 1 and bool((gkeys[1:] >= gkeys[:-1]).all()):  # kept axes lead: already in order
            vals = self.values
        else:
            order = np.argsort(gkeys, kind="stable")
            gkeys, vals = gkeys[order], self.values[order]
        starts = np.flatnonzero(np.concatenate([[True], gkeys[1:] != gkeys[:-1]])) if gkeys.size else \
            np.zeros(0, np.int64)
        return gkeys[starts], starts, vals


class _Case:
    def __init__(self, inp, op, axis):
        self.inp, self.op, self.axis = inp, op, axis
        self.ref = inp.oracle(op, axis)

    @property
    def name(self):
        axis = self.axis if isinstance(self.axis, int) else "".join(str(a) for a in self.axis)
        return f"{self.inp.label}-{self.inp.dist}-{self.op}-axis{axis}"

    @property
    def kept(self):
        axes = _norm_axes(self.axis, len(self.inp.shape))
        return [a for a in range(len(self.inp.shape)) if a not in axes]


def _check(case, got, row):
    """None if ``got``, a result's ``(keys, values)``, equals the oracle's (explicit zeros dropped)."""
    keys, values = host(got[0]).astype(np.int64).ravel(), host(got[1]).astype(np.float64).ravel()
    nonzero = values != 0
    keys, values = keys[nonzero], values[nonzero]
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    ref_keys, ref_values = case.ref
    if keys.size != ref_keys.size or not np.array_equal(keys, ref_keys):
        return f"{keys.size} result entries or coordinates differ from the oracle ({ref_keys.size})"
    if not np.allclose(values, ref_values, rtol=1e-9, atol=0):
        return "values differ from the oracle"
    return None


def _dense_result(arr, case):
    """(keys, values) of a dense result over the kept axes."""
    flat = host(arr).ravel()
    return np.arange(flat.size, dtype=np.int64), flat


# --------------------------------------------------------------------------
# implementations
# --------------------------------------------------------------------------

def _impl_gpusparse(case, ctx):
    import gpusparse as gs
    from gpusparse.ops import reductions
    inp = case.inp
    x = gs.COO(inp.d_coords, inp.d_values, inp.shape, check=False)
    x = x.tocsr() if len(inp.shape) == 2 else x.coalesce()
    func = getattr(reductions, case.op)

    def fn():
        return func(x, axis=case.axis)

    def result(y):
        if hasattr(y, "fill_value"):
            y = y.tocoo()
            kept_shape = tuple(inp.shape[a] for a in case.kept)
            return linearize(host(y.coords), kept_shape), y.data
        return _dense_result(y, case)

    return fn, result


def _impl_scipy(case, ctx):
    if len(case.inp.shape) != 2:
        raise Skip("SciPy sparse arrays are 2-D")
    sp = need("scipy.sparse", "scipy")
    inp = case.inp
    m = sp.csr_array((inp.values, (inp.coords[0], inp.coords[1])), shape=inp.shape)
    axis = None if case.axis == (0, 1) else case.axis
    fn = (lambda: m.sum(axis=axis)) if case.op == "sum" else (lambda: m.max(axis=axis))

    def result(y):
        if hasattr(y, "toarray"):
            y = y.toarray()
        return _dense_result(np.asarray(y), case)

    return fn, result


def _impl_graphblas(case, ctx):
    if len(case.inp.shape) != 2:
        raise Skip("GraphBLAS matrices are 2-D")
    from benchmarks import _graphblas
    gb = _graphblas.module()
    inp = case.inp
    m = _graphblas.wait(gb.Matrix.from_coo(inp.coords[0], inp.coords[1], inp.values,
                                           nrows=inp.shape[0], ncols=inp.shape[1]))
    monoid = gb.monoid.plus if case.op == "sum" else gb.monoid.max
    if case.axis == (0, 1):
        def fn():
            return m.reduce_scalar(monoid).new()
    elif case.axis == 1:
        def fn():
            return _graphblas.wait(m.reduce_rowwise(monoid).new())
    else:
        def fn():
            return _graphblas.wait(m.reduce_columnwise(monoid).new())

    def result(y):
        if not hasattr(y, "to_coo"):  # a scalar
            return _dense_result(np.asarray([y.value]), case)
        keys, values = y.to_coo()
        return keys.astype(np.int64), values

    return fn, result


def _impl_pydata(case, ctx):
    sparse = need("sparse", "pydata sparse")
    inp = case.inp
    x = sparse.COO(inp.coords, inp.values, shape=inp.shape, has_duplicates=False, sorted=True)
    fn = (lambda: x.sum(axis=case.axis)) if case.op == "sum" else (lambda: x.max(axis=case.axis))

    def result(y):
        if not hasattr(y, "coords"):
            return _dense_result(np.asarray(y), case)
        kept_shape = tuple(inp.shape[a] for a in case.kept)
        if not kept_shape:
            return _dense_result(np.asarray(y.todense()), case)
        return linearize(y.coords.astype(np.int64), kept_shape), y.data

    return fn, result


def _impl_torch(case, ctx):
    if case.op != "sum":
        raise Skip("torch has no sparse max along a dimension")
    torch = need("torch")
    if not ctx.is_cuda:
        from benchmarks._graphblas import hold_torch
        hold_torch(torch)
    if ctx.is_cuda and not torch.cuda.is_available():
        raise Skip("torch has no CUDA")
    inp = case.inp
    conv = torch.from_dlpack if ctx.is_cuda else torch.from_numpy
    t = torch.sparse_coo_tensor(conv(inp.d_coords), conv(inp.d_values), inp.shape,
                                check_invariants=False).coalesce()
    dims = (case.axis,) if isinstance(case.axis, int) else tuple(case.axis)

    def fn():
        return torch.sparse.sum(t, dim=dims)

    def result(y):
        if y.is_sparse:
            y = y.coalesce()
            kept_shape = tuple(inp.shape[a] for a in case.kept)
            return linearize(y.indices().cpu().numpy(), kept_shape), y.values().cpu().numpy()
        return _dense_result(y.cpu().numpy(), case)

    return fn, result


def _impl_cupyx(case, ctx):
    if len(case.inp.shape) != 2:
        raise Skip("cupyx sparse matrices are 2-D")
    csp = need("cupyx.scipy.sparse", "cupyx")
    inp = case.inp
    m = csp.coo_matrix((inp.d_values, (inp.d_coords[0], inp.d_coords[1])), shape=inp.shape).tocsr()
    axis = None if case.axis == (0, 1) else case.axis
    fn = (lambda: m.sum(axis=axis)) if case.op == "sum" else (lambda: m.max(axis=axis))

    def result(y):
        if hasattr(y, "toarray"):
            y = y.toarray()
        return _dense_result(host(y), case)

    return fn, result


def _implementations(ctx):
    """``(name, factory, kind)`` in running order: gpusparse, then the device's peers (2-D ones skip 4-D)."""
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
    d = len(case.inp.shape)
    out = case.ref[0].size * (len(case.kept) * 8 + 8)
    return case.inp.k * (d * 8 + 8) + out


def _add_rates(case, row, t):
    row["entries_per_s"] = case.inp.k / t
    _report.add_bandwidth(row, _floor_bytes(case), t)


def run(ctx):
    """Yield one row per (case, implementation); ``ctx.size`` overrides ``k``."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    describe = functools.partial(_report.progress, case_width=34, impl_width=10)
    for label, (shape, axes) in LAYOUTS.items():
        shape = shape or (max(k // 64, 1), 2**20)
        for dist in DISTRIBUTIONS:
            inp = _Input(label, shape, dist, k, ctx.xp)
            copy = _report.copy_gb_s(ctx, inp.k * (len(shape) * 8 + 8), copies)
            for op in OPS:
                for axis in axes:
                    case = _Case(inp, op, axis)
                    base = {"bench": NAME, "case": case.name, "shape": list(shape), "layout": label,
                            "distribution": dist, "op": op, "axis": str(axis), "entries": inp.k,
                            "groups": int(case.ref[0].size), "copy_gb_s": copy}
                    yield from _report.run_case(ctx, case, base, _implementations(ctx), _check, describe, _add_rates)
            del inp


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def summarize(rows) -> str:
    """One line per case, one column per peer (peer time / gpusparse time)."""
    return _report.summary_table(
        rows, [("entries", lambda r: f"{r['entries']:,}"), ("groups", lambda r: f"{r['groups']:,}")],
        [("GB/s floor", lambda r: f"{r['gb_s_floor']:.2f}"), ("% copy", lambda r: f"{r['pct_copy_floor']:.0f}")],
        "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), the peer's "
        "median in parentheses. Inputs are canonical (CSR for 2-D). GB/s floor counts reading "
        "every entry once and writing every group once.")


def details(rows) -> str:
    """A Markdown table with every row (:func:`benchmarks._report.floor_details`)."""
    return _report.floor_details(rows)
