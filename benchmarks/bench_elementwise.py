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
    from ``sparse_coo_tensor``.
``canonical``
    Sorted, unique inputs built outside the timing: gpusparse CSR (2-D) or
    coalesced COO (4-D); SciPy CSR; pydata COO; coalesced torch tensors.

The 4-D shape is linearised to the 2-D matrix ``(s0*s1, s2*s3)`` for SciPy
and cupyx (they are 2-D only). GPU peers: torch CUDA and cupyx CSR
(``+`` / ``.multiply``). Every result is checked against a NumPy oracle on
the linear keys before it is timed; implementations of one case are timed
in alternation (:func:`benchmarks._timing.time_interleaved`).

Bandwidth: the floor of a sorted merge, ``(nA + nB)(K + V) + nC(K + V)``
with 8-byte linear keys ``K`` and values ``V``, against the copy bandwidth
measured in the same run.

Examples
--------
>>> from benchmarks import Context
>>> ctx = Context(device="cpu", quick=True, target_s=0.001, log=lambda m: None, size=512)
>>> rows = list(run(ctx))
>>> {r["status"] for r in rows if r["impl"] == "gpusparse"}
{'ok'}
"""

from __future__ import annotations

import math
import os

import numpy as np

from benchmarks._timing import call_once, copy_bandwidth, synchronize, time_call, time_interleaved

__all__ = ["details", "run", "summarize"]

NAME = "elementwise"
SHAPES = {"2d": (2**20, 2**20), "4d": (14371, 91, 109, 91)}
OPS = ("add", "multiply")
STATES = ("shuffled", "canonical")
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
SEED = 20240602


class _Skip(Exception):
    """The implementation is unavailable here; the message says why."""


def _host(arr):
    return arr.get() if hasattr(arr, "get") else np.asarray(arr)


def _linearize(coords, shape, xp):
    keys = xp.zeros(coords.shape[1], dtype=xp.int64)
    for k, n in enumerate(shape):
        keys *= n
        keys += coords[k]
    return keys


def _delinearize(keys, shape, xp):
    out = xp.empty((len(shape), keys.size), dtype=xp.int64)
    for k in reversed(range(len(shape))):
        out[k] = keys % shape[k]
        keys = keys // shape[k]
    return out


class _Case:
    """Two operands as components on the device, and the oracle on the host."""

    def __init__(self, shape_label, shape, op, state, k, xp):
        self.shape_label, self.shape, self.op, self.state = shape_label, shape, op, state
        rng = np.random.default_rng([SEED, len(shape), k])
        size = math.prod(shape)
        a = np.unique(rng.integers(0, size, k + k // 16, dtype=np.int64))[:k]
        shared = rng.choice(a, k // 2, replace=False)
        extra = np.setdiff1d(np.unique(rng.integers(0, size, k, dtype=np.int64)), a)[: k - k // 2]
        b = np.union1d(shared, extra)
        self.keys = (a, b)
        self.values = (rng.random(a.size) + 0.5, rng.random(b.size) + 0.5)
        ufunc = np.add if op == "add" else np.multiply
        if op == "add":
            ref = np.union1d(a, b)
            va = np.zeros(ref.size)
            vb = np.zeros(ref.size)
        else:
            ref = np.intersect1d(a, b)
            va = np.empty(ref.size)
            vb = np.empty(ref.size)
        va[:] = self._pick(ref, a, self.values[0])
        vb[:] = self._pick(ref, b, self.values[1])
        self.ref_keys, self.ref_values = ref, ufunc(va, vb)
        order = [rng.permutation(a.size), rng.permutation(b.size)] if state == "shuffled" else \
            [np.arange(a.size), np.arange(b.size)]
        self.coords = tuple(xp.asarray(np.ascontiguousarray(_delinearize(kk[o], shape, np)))
                            for kk, o in zip(self.keys, order))
        self.data = tuple(xp.asarray(v[o]) for v, o in zip(self.values, order))

    @staticmethod
    def _pick(ref, keys, values):
        pos = np.searchsorted(keys, ref)
        pos = np.minimum(pos, keys.size - 1)
        return np.where(keys[pos] == ref, values[pos], 0.0)

    @property
    def name(self):
        return f"{self.shape_label}-{self.op}-{self.state}"

    @property
    def n_in(self):
        return int(self.keys[0].size + self.keys[1].size)

    @property
    def n_out(self):
        return int(self.ref_keys.size)


def _check(keys, values, case):
    keys, values = _host(keys).astype(np.int64, copy=False), _host(values).astype(np.float64)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    nonzero = values != 0
    keys, values = keys[nonzero], values[nonzero]
    if keys.size != case.ref_keys.size or not np.array_equal(keys, case.ref_keys):
        return f"{keys.size} stored entries or coordinates differ from the oracle ({case.ref_keys.size})"
    if not np.allclose(values, case.ref_values, rtol=1e-12, atol=0):
        return "values differ from the oracle"
    return None


def _as_2d(coords, shape, xp):
    if len(shape) == 2:
        return coords[0], coords[1], shape
    h = len(shape) // 2
    rows = _linearize(coords[:h], shape[:h], xp)
    cols = _linearize(coords[h:], shape[h:], xp)
    return rows, cols, (math.prod(shape[:h]), math.prod(shape[h:]))


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
        return _linearize(_host(y.coords), shape, np), y.data

    return fn, result


def _impl_scipy(case, ctx):
    try:
        import scipy.sparse as sp
    except ImportError as exc:
        raise _Skip(f"scipy not importable ({exc})") from None
    parts = [_as_2d(c, case.shape, np) for c in case.coords]
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


def _impl_pydata(case, ctx):
    try:
        import sparse
    except ImportError as exc:
        raise _Skip(f"pydata sparse not importable ({exc})") from None
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
        return _linearize(s.coords.astype(np.int64), shape, np), s.data

    return fn, result


def _impl_torch(case, ctx):
    try:
        import torch
    except ImportError as exc:
        raise _Skip(f"torch not importable ({exc})") from None
    if ctx.is_cuda and not torch.cuda.is_available():
        raise _Skip("torch has no CUDA")
    conv = torch.from_dlpack if ctx.is_cuda else torch.from_numpy
    (ca, cb), (da, db), shape = case.coords, case.data, case.shape
    ia, ib, va, vb = conv(ca), conv(cb), conv(da), conv(db)

    def make(i, v):
        return torch.sparse_coo_tensor(i, v, shape, check_invariants=False)

    if case.state == "shuffled":
        if case.op == "add":
            def fn():
                return (make(ia, va) + make(ib, vb)).coalesce()
        else:  # torch's mul of uncoalesced operands of this shape dies of SIGFPE (torch 2.13)
            def fn():
                return (make(ia, va).coalesce() * make(ib, vb).coalesce()).coalesce()
    else:
        a, b = make(ia, va).coalesce(), make(ib, vb).coalesce()
        fn = (lambda: (a + b).coalesce()) if case.op == "add" else (lambda: (a * b).coalesce())

    def result(t):
        return _linearize(t.indices().cpu().numpy(), shape, np), t.values().cpu().numpy()

    return fn, result


def _impl_cupyx(case, ctx):
    try:
        import cupyx.scipy.sparse as csp
    except ImportError as exc:
        raise _Skip(f"cupyx not importable ({exc})") from None
    import cupy
    parts = [_as_2d(c, case.shape, cupy) for c in case.coords]
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
        indptr = _host(m.indptr)
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(indptr))
        return _keys_2d(rows, _host(m.indices), m.shape[1]), _host(m.data)

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
    entry = 8 + 8  # linear key + float64 value
    return case.n_in * entry + case.n_out * entry


def run(ctx):
    """Yield one row per (case, implementation); ``ctx.size`` overrides ``k``."""
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    for label, shape in SHAPES.items():
        for state in STATES:
            for op in OPS:
                case = _Case(label, shape, op, state, k, ctx.xp)
                floor = _floor_bytes(case)
                in_bytes = case.n_in * 16
                if in_bytes not in copies:
                    copies[in_bytes] = copy_bandwidth(in_bytes, ctx.xp, device=ctx.device,
                                                      target_s=min(ctx.target_s, 0.5))
                copy = copies[in_bytes]
                rows, fns = {}, {}
                for name, factory, kind in _implementations(ctx):
                    base = {"bench": NAME, "case": case.name, "shape": list(shape), "shape_label": label,
                            "op": op, "state": state, "entries_a": int(case.keys[0].size),
                            "entries_b": int(case.keys[1].size), "entries_out": case.n_out,
                            "copy_gb_s": copy["gb_s"]}
                    result, fn = _first_call(name, kind, factory, case, ctx)
                    rows[name] = {**base, **result}
                    if fn is not None:
                        fns[name] = fn
                _time_all(fns, rows, ctx)
                ours = rows.get("gpusparse", {}).get("median_s")
                for row in rows.values():
                    row["load_1min"] = _load()
                    if "median_s" in row:
                        row["entries_per_s"] = case.n_in / row["median_s"]
                        row["gb_s_floor"] = floor / row["median_s"] / 1e9
                        row["pct_copy_floor"] = 100 * row["gb_s_floor"] / copy["gb_s"]
                    if row["kind"] != "ours" and ours and "median_s" in row:
                        row["speedup"] = row["median_s"] / ours
                    ctx.log(_progress(row))
                    yield row
                del case


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _progress(row) -> str:
    head = f"{row['bench']} {row['case']:<24} {row['impl']:<10}"
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
    head = ["case", "entries a + b", "entries out", "gpusparse", "GB/s floor", "% copy", "first call"] + peers
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, impls in cases.items():
        ours = impls.get("gpusparse", {})
        first = next(iter(impls.values()))
        ok = ours.get("status") == "ok"
        cells = [name, f"{first['entries_a'] + first['entries_b']:,}", f"{first['entries_out']:,}",
                 _ms(ours["median_s"]) if ok else ours.get("status", ""),
                 f"{ours['gb_s_floor']:.2f}" if ok else "", f"{ours['pct_copy_floor']:.0f}" if ok else "",
                 _ms(ours.get("first_call_s"))]
        cells += [_cell(impls.get(p)) for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), the peer's "
                 "median in parentheses. `shuffled` starts from unsorted components (everyone sorts); "
                 "`canonical` from sorted, unique operands (SciPy/cupyx CSR, gpusparse CSR for 2-D). "
                 "GB/s floor counts `(nA + nB + nC)(8 + 8)` bytes (linear key + value).")
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
