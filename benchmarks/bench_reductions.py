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
(2-D), torch ``torch.sparse.sum(x, dim)`` (sum only); on the GPU torch CUDA
and cupyx ``csr.sum(axis)`` / ``csr.max(axis)``. Every result is checked
against a NumPy oracle (``np.unique`` + ``reduceat`` over the kept keys)
before it is timed; implementations of a case are timed in alternation.

Bandwidth: the floor reads the input once and writes the output,
``k(dI + V) + u(dI + V)`` with the kept coordinates only in the output,
against the copy bandwidth measured in the same run.

Examples
--------
>>> from benchmarks import Context
>>> ctx = Context(device="cpu", quick=True, target_s=0.001, log=lambda m: None, size=512)
>>> rows = list(run(ctx))
>>> {r["status"] for r in rows if r["impl"] == "gpusparse"}
{'ok'}
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks._timing import call_once, copy_bandwidth, synchronize, time_call, time_interleaved

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


class _Skip(Exception):
    """The implementation is unavailable here; the message says why."""


def _host(arr):
    return arr.get() if hasattr(arr, "get") else np.asarray(arr)


def _linearize(coords, shape):
    keys = np.zeros(coords.shape[1], dtype=np.int64)
    for k, n in enumerate(shape):
        keys *= n
        keys += coords[k]
    return keys


def _delinearize(keys, shape):
    out = np.empty((len(shape), keys.size), dtype=np.int64)
    for k in reversed(range(len(shape))):
        out[k] = keys % shape[k]
        keys = keys // shape[k]
    return out


def _norm_axes(axis, ndim):
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))


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
            keys = np.unique(rows * n_cols + cols)
        else:
            first = rng.integers(0, shape[0], k) if dist == "uniform" else \
                np.minimum(rng.zipf(1.3, k) - 1, shape[0] - 1)
            rest = [rng.integers(0, s, k) for s in shape[1:]]
            keys = np.unique(_linearize(np.stack([first] + rest).astype(np.int64), shape))
        self.keys = keys
        self.coords = _delinearize(keys, shape)
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
        kept_shape = tuple(self.shape[a] for a in kept)
        gkeys = _linearize(self.coords[kept], kept_shape)
        order = np.argsort(gkeys, kind="stable")
        gkeys, vals = gkeys[order], self.values[order]
        uniq, starts = np.unique(gkeys, return_index=True)
        red = np.add.reduceat(vals, starts) if op == "sum" else np.maximum.reduceat(vals, starts)
        return uniq, red


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


def _check(keys, values, case):
    keys, values = _host(keys).astype(np.int64).ravel(), _host(values).astype(np.float64).ravel()
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
    flat = _host(arr).ravel()
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
            return _linearize(_host(y.coords), kept_shape), y.data
        return _dense_result(y, case)

    return fn, result


def _impl_scipy(case, ctx):
    if len(case.inp.shape) != 2:
        raise _Skip("SciPy sparse arrays are 2-D")
    try:
        import scipy.sparse as sp
    except ImportError as exc:
        raise _Skip(f"scipy not importable ({exc})") from None
    inp = case.inp
    m = sp.csr_array((inp.values, (inp.coords[0], inp.coords[1])), shape=inp.shape)
    axis = None if case.axis == (0, 1) else case.axis
    fn = (lambda: m.sum(axis=axis)) if case.op == "sum" else (lambda: m.max(axis=axis))

    def result(y):
        if hasattr(y, "toarray"):
            y = y.toarray()
        return _dense_result(np.asarray(y), case)

    return fn, result


def _impl_pydata(case, ctx):
    try:
        import sparse
    except ImportError as exc:
        raise _Skip(f"pydata sparse not importable ({exc})") from None
    inp = case.inp
    x = sparse.COO(inp.coords, inp.values, shape=inp.shape, has_duplicates=False, sorted=True)
    fn = (lambda: x.sum(axis=case.axis)) if case.op == "sum" else (lambda: x.max(axis=case.axis))

    def result(y):
        if not hasattr(y, "coords"):
            return _dense_result(np.asarray(y), case)
        kept_shape = tuple(inp.shape[a] for a in case.kept)
        if not kept_shape:
            return _dense_result(np.asarray(y.todense()), case)
        return _linearize(y.coords.astype(np.int64), kept_shape), y.data

    return fn, result


def _impl_torch(case, ctx):
    if case.op != "sum":
        raise _Skip("torch has no sparse max along a dimension")
    try:
        import torch
    except ImportError as exc:
        raise _Skip(f"torch not importable ({exc})") from None
    if ctx.is_cuda and not torch.cuda.is_available():
        raise _Skip("torch has no CUDA")
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
            return _linearize(y.indices().cpu().numpy(), kept_shape), y.values().cpu().numpy()
        return _dense_result(y.cpu().numpy(), case)

    return fn, result


def _impl_cupyx(case, ctx):
    if len(case.inp.shape) != 2:
        raise _Skip("cupyx sparse matrices are 2-D")
    try:
        import cupyx.scipy.sparse as csp
    except ImportError as exc:
        raise _Skip(f"cupyx not importable ({exc})") from None
    inp = case.inp
    m = csp.coo_matrix((inp.d_values, (inp.d_coords[0], inp.d_coords[1])), shape=inp.shape).tocsr()
    axis = None if case.axis == (0, 1) else case.axis
    fn = (lambda: m.sum(axis=axis)) if case.op == "sum" else (lambda: m.max(axis=axis))

    def result(y):
        if hasattr(y, "toarray"):
            y = y.toarray()
        return _dense_result(_host(y), case)

    return fn, result


def _implementations(ctx):
    if ctx.is_cuda:
        return [("gpusparse", _impl_gpusparse, "ours"), ("torch", _impl_torch, "peer"),
                ("cupyx", _impl_cupyx, "peer")]
    return [("gpusparse", _impl_gpusparse, "ours"), ("scipy", _impl_scipy, "peer"),
            ("pydata", _impl_pydata, "peer"), ("torch", _impl_torch, "peer")]


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------

def _free(ctx):
    if not ctx.is_cuda:
        return
    import sys

    import cupy
    synchronize(ctx.device)
    cupy.get_default_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _error_text(exc) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def _first_call(name, kind, factory, case, ctx):
    row = {"impl": name, "kind": kind, "status": "ok"}
    fn = None
    try:
        fn, result = factory(case, ctx)
        out, row["first_call_s"] = call_once(fn, ctx.device)
        problem = _check(*result(out), case)
        if problem:
            row.update(status="mismatch", error=problem)
            fn = None
        del out
    except _Skip as exc:
        row.update(status="skipped", error=str(exc))
        fn = None
    except Exception as exc:  # a failing implementation is a result, not a crash
        row.update(status="error", error=_error_text(exc))
        fn = None
    finally:
        _free(ctx)
    return row, fn


def _time_all(fns, rows, ctx):
    try:
        timings = time_interleaved(fns, ctx.device, target_s=ctx.target_s, warmed=True)
    except Exception:
        _free(ctx)
        timings = {}
        for name, fn in fns.items():
            try:
                timings[name] = time_call(fn, ctx.device, target_s=ctx.target_s, warmed=True)
            except Exception as exc:
                rows[name].update(status="error", error=_error_text(exc))
            finally:
                _free(ctx)
    for name, timing in timings.items():
        rows[name].update(timing.as_dict())
    _free(ctx)


def _floor_bytes(case) -> int:
    d = len(case.inp.shape)
    out = case.ref[0].size * (len(case.kept) * 8 + 8)
    return case.inp.k * (d * 8 + 8) + out


def run(ctx):
    """Yield one row per (case, implementation); ``ctx.size`` overrides ``k``."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    for label, (shape, axes) in LAYOUTS.items():
        shape = shape or (max(k // 64, 1), 2**20)
        for dist in DISTRIBUTIONS:
            inp = _Input(label, shape, dist, k, ctx.xp)
            in_bytes = inp.k * (len(shape) * 8 + 8)
            if in_bytes not in copies:
                copies[in_bytes] = copy_bandwidth(in_bytes, ctx.xp, device=ctx.device,
                                                  target_s=min(ctx.target_s, 0.5))
            copy = copies[in_bytes]
            for op in OPS:
                for axis in axes:
                    case = _Case(inp, op, axis)
                    floor = _floor_bytes(case)
                    rows, fns = {}, {}
                    for name, factory, kind in _implementations(ctx):
                        base = {"bench": NAME, "case": case.name, "shape": list(shape), "layout": label,
                                "distribution": dist, "op": op, "axis": str(axis), "entries": inp.k,
                                "groups": int(case.ref[0].size), "copy_gb_s": copy["gb_s"]}
                        result, fn = _first_call(name, kind, factory, case, ctx)
                        rows[name] = {**base, **result}
                        if fn is not None:
                            fns[name] = fn
                    _time_all(fns, rows, ctx)
                    ours = rows.get("gpusparse", {}).get("median_s")
                    for row in rows.values():
                        row["load_1min"] = _load()
                        if "median_s" in row:
                            row["entries_per_s"] = inp.k / row["median_s"]
                            row["gb_s_floor"] = floor / row["median_s"] / 1e9
                            row["pct_copy_floor"] = 100 * row["gb_s_floor"] / copy["gb_s"]
                        if row["kind"] != "ours" and ours and "median_s" in row:
                            row["speedup"] = row["median_s"] / ours
                        ctx.log(_progress(row))
                        yield row
            del inp


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _progress(row) -> str:
    head = f"{row['bench']} {row['case']:<34} {row['impl']:<10}"
    if row["status"] != "ok":
        return f"{head} {row['status']}: {row.get('error', '')}"
    text = f"{head} {row['median_s'] * 1e3:10.2f} ms  {row['gb_s_floor']:7.2f} GB/s floor " \
           f"({row['pct_copy_floor']:.0f}% copy)"
    if "speedup" in row:
        text += f"  speedup {row['speedup']:.2f}"
    return text


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

def _ms(seconds) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def _cell(row) -> str:
    if row is None:
        return ""
    if row["status"] != "ok":
        return row["status"]
    if "speedup" in row:
        return f"{row['speedup']:.2f} ({_ms(row['median_s'])})"
    return _ms(row["median_s"])


def summarize(rows) -> str:
    """One line per case, one column per peer (peer time / gpusparse time)."""
    cases, peers = {}, []
    for row in rows:
        cases.setdefault(row["case"], {})[row["impl"]] = row
        if row["impl"] != "gpusparse" and row["impl"] not in peers:
            peers.append(row["impl"])
    head = ["case", "entries", "groups", "gpusparse", "GB/s floor", "% copy", "first call"] + peers
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, impls in cases.items():
        ours = impls.get("gpusparse", {})
        first = next(iter(impls.values()))
        ok = ours.get("status") == "ok"
        cells = [name, f"{first['entries']:,}", f"{first['groups']:,}",
                 _ms(ours["median_s"]) if ok else ours.get("status", ""),
                 f"{ours['gb_s_floor']:.2f}" if ok else "", f"{ours['pct_copy_floor']:.0f}" if ok else "",
                 _ms(ours.get("first_call_s"))]
        cells += [_cell(impls.get(p)) for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), the peer's "
                 "median in parentheses. Inputs are canonical (CSR for 2-D). GB/s floor counts reading "
                 "every entry once and writing every group once.")
    return "\n".join(lines)


def details(rows) -> str:
    head = ["case", "impl", "status", "median", "min", "first call", "repeats", "GB/s floor", "% copy",
            "speedup", "load", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ok = r["status"] == "ok"
        lines.append("| " + " | ".join([
            r["case"], r["impl"], r["status"], _ms(r.get("median_s")) if ok else "",
            _ms(r.get("min_s")) if ok else "", _ms(r.get("first_call_s")),
            str(r.get("repeats", "")), f"{r['gb_s_floor']:.2f}" if ok else "",
            f"{r['pct_copy_floor']:.0f}" if ok else "", f"{r['speedup']:.2f}" if "speedup" in r else "",
            str(r.get("load_1min", "")), r.get("error", "")]) + " |")
    return "\n".join(lines)
