"""Coalesce (sort and sum duplicates) of N-d COO input, against peers.

Cases: a 2-D shape (2**20, 2**20) and a 4-D shape (14371, 91, 109, 91)
(the shape of pydata/sparse#557), ``k`` entries (2**22 on the CPU, 2**26 on
the GPU, 2**14 and 2**16 with ``--quick``), float32 and float64 values, in
three input orders:

``shuffled``
    Half the entries are random coordinates, the other half copies of
    randomly chosen ones (50 % duplicates), in random order.
``sorted``
    The same entries in row-major order: the already-sorted fast path, which
    only has to sum runs of duplicates.
``coalesced``
    ``k`` distinct coordinates in row-major order, no duplicates (the input
    is not flagged as coalesced, so it is still checked).

Implementations (each times the user-level call from the same int64 inputs,
including its constructor):

* ``gpusparse``: ``gs.COO(coords, data, shape, check=False).coalesce()``.
* CPU peers: ``scipy`` (``coo_array((data, (r, c)), shape).tocsr()``, which
  sums duplicates; the 4-D shape is linearised to the 2-D matrix
  ``(s0*s1, s2*s3)`` inside the timed call), ``pydata``
  (``sparse.COO(coords, data, shape, has_duplicates=True, sorted=False)``:
  construction is what sorts and sums there) and ``torch``
  (``torch.sparse_coo_tensor(coords, data, shape).coalesce()``, invariant
  checks off, as by default).
* GPU peers: ``torch`` on CUDA, ``cupyx`` (``coo_matrix(...).sum_duplicates()``,
  linearised to 2-D like scipy; it casts indices to int32 inside the call).
* Sort-only references, not coalesces: ``numpy.argsort`` / ``cupy.argsort``
  of the precomputed linear keys, the cost of the sort alone.

Every result is checked before it is timed: the number of unique entries
and the coordinates must equal a NumPy/CuPy oracle (``unique`` +
``bincount``) and the values must be allclose to it (after sorting, for a
peer whose output is not sorted). A mismatching implementation is reported,
not timed. The implementations of one case are then timed in alternating
rounds (:func:`benchmarks._timing.time_interleaved`), so that a change in
machine load affects all of them alike.

Rows carry entries/s, the median time, the first-call time (compilation),
the 1-minute load average when measured (a busy machine inflates medians),
``speedup`` (peer time / gpusparse time: above 1 means gpusparse is faster),
and bandwidth against the models of :mod:`benchmarks._models`: the floor
``k(dI+V) + u(dI+V)`` and, for shuffled input, the radix-sort model, each
also as a fraction of the copy bandwidth measured in the same run.

Examples
--------
>>> from benchmarks import Context
>>> ctx = Context(device="cpu", quick=True, target_s=0.001, log=lambda m: None, size=256)
>>> rows = list(run(ctx))
>>> {r["status"] for r in rows if r["impl"] == "gpusparse"}
{'ok'}
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from benchmarks import _models
from benchmarks._timing import call_once, copy_bandwidth, synchronize, time_call, time_interleaved

__all__ = ["details", "run", "summarize"]

NAME = "coalesce"
SHAPES = {"2d": (2**20, 2**20), "4d": (14371, 91, 109, 91)}
ORDERS = ("shuffled", "sorted", "coalesced")
DTYPES = ("float32", "float64")
SIZES = {(False, False): 2**22, (False, True): 2**14, (True, False): 2**26, (True, True): 2**16}
INDEX_BYTES = 8
SEED = 20240601


# --------------------------------------------------------------------------
# inputs and the oracle
# --------------------------------------------------------------------------

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


def _argsort(keys, xp):
    if xp.__name__ == "numpy":
        return np.argsort(keys, kind="stable")
    return xp.argsort(keys)  # CuPy's sort is stable


def _random_coords(rng, shape, n):
    return np.stack([rng.integers(0, s, n, dtype=np.int64) for s in shape])


def _make_coords(shape, k, order, xp):
    """``(d, k')`` int64 coordinates on the device of ``xp`` for one order."""
    rng = np.random.default_rng([SEED, len(shape), k, ORDERS.index(order)])
    if order == "coalesced":
        keys = xp.unique(_linearize(xp.asarray(_random_coords(rng, shape, k)), shape, xp))
        return _delinearize(keys, shape, xp)
    base = _random_coords(rng, shape, k - k // 2)
    copies = base[:, rng.integers(0, base.shape[1], k // 2)]
    coords = np.concatenate([base, copies], axis=1)
    del base, copies
    coords = xp.asarray(np.ascontiguousarray(coords[:, rng.permutation(k)]))
    if order == "sorted":
        coords = xp.ascontiguousarray(coords[:, _argsort(_linearize(coords, shape, xp), xp)])
    return coords


@dataclasses.dataclass
class _Case:
    shape_label: str
    shape: tuple
    order: str
    dtype: str
    coords: object          # (d, k) int64, xp
    data: object            # (k,) dtype, xp
    keys: object            # (k,) int64 linear keys, xp (for the sort references)
    ref_keys: np.ndarray    # (u,) sorted unique keys, host
    ref_sums: np.ndarray    # (u,) float64 sums, host

    @property
    def name(self) -> str:
        return f"{self.shape_label}-{self.order}-{self.dtype}"

    @property
    def k(self) -> int:
        return int(self.coords.shape[1])

    @property
    def u(self) -> int:
        return int(self.ref_keys.size)


def _host(arr) -> np.ndarray:
    return arr.get() if hasattr(arr, "get") else np.asarray(arr)


def _cases(ctx, k):
    """Yield every case; inputs are built once per shape and order."""
    xp = ctx.xp
    for label, shape in SHAPES.items():
        for order in ORDERS:
            coords = _make_coords(shape, k, order, xp)
            keys = _linearize(coords, shape, xp)
            unique, inverse = xp.unique(keys, return_inverse=True)
            ref_keys = _host(unique)
            n = coords.shape[1]
            base = np.random.default_rng([SEED, n]).random(n) + 0.5
            for dtype in DTYPES:
                data = xp.asarray(base.astype(dtype))
                sums = xp.bincount(inverse.ravel(), weights=data.astype(xp.float64), minlength=unique.size)
                yield _Case(label, shape, order, dtype, coords, data, keys, ref_keys, _host(sums))
            del coords, keys, unique, inverse


def _check(keys, values, case, must_be_sorted):
    """None if ``(keys, values)`` is the coalesced input, else what differs."""
    keys, values = _host(keys).astype(np.int64, copy=False), _host(values)
    if keys.size != case.u:
        return f"{keys.size} unique entries, expected {case.u}"
    if keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):
        if must_be_sorted:
            return "output not sorted and unique"
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
    if not np.array_equal(keys, case.ref_keys):
        return "coordinates differ from the oracle"
    rtol = 1e-5 if values.dtype == np.float32 else 1e-12
    got = values.astype(np.float64)
    if not np.allclose(got, case.ref_sums, rtol=rtol, atol=0):
        err = np.max(np.abs(got - case.ref_sums) / np.abs(case.ref_sums))
        return f"values differ from the oracle (max relative error {err:.3g})"
    return None


# --------------------------------------------------------------------------
# implementations: each returns (fn, result) or raises _Skip
# --------------------------------------------------------------------------

class _Skip(Exception):
    """The implementation is unavailable here; the message says why."""


def _as_2d(coords, shape):
    """Rows, columns and 2-D shape of the row-major reshape (split at d // 2)."""
    d = len(shape)
    if d == 2:
        return coords[0], coords[1], shape
    h = d // 2
    xp = _xp_of(coords)
    rows = _linearize(coords[:h], shape[:h], xp)
    cols = _linearize(coords[h:], shape[h:], xp)
    return rows, cols, (math.prod(shape[:h]), math.prod(shape[h:]))


def _xp_of(arr):
    if isinstance(arr, np.ndarray):
        return np
    import cupy
    return cupy


def _impl_gpusparse(case, ctx):
    import gpusparse as gs

    def fn():
        return gs.COO(case.coords, case.data, case.shape, check=False).coalesce()

    def result(y):
        return _linearize(_host(y.coords), case.shape, np), y.data

    return fn, result


def _impl_scipy(case, ctx):
    try:
        import scipy.sparse as sp
    except ImportError as exc:
        raise _Skip(f"scipy not importable ({exc})") from None

    def fn():
        rows, cols, shape2 = _as_2d(case.coords, case.shape)
        return sp.coo_array((case.data, (rows, cols)), shape=shape2).tocsr()

    def result(m):
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return rows * m.shape[1] + m.indices, m.data

    return fn, result


def _impl_pydata(case, ctx):
    try:
        import sparse
    except ImportError as exc:
        raise _Skip(f"pydata sparse not importable ({exc})") from None

    def fn():
        return sparse.COO(case.coords, case.data, shape=case.shape, has_duplicates=True, sorted=False)

    def result(s):
        return _linearize(s.coords.astype(np.int64), case.shape, np), s.data

    return fn, result


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise _Skip(f"torch not importable ({exc})") from None
    return torch


def _impl_torch(case, ctx):
    torch = _import_torch()
    if ctx.is_cuda:
        if not torch.cuda.is_available():
            raise _Skip("torch has no CUDA")
        indices, values = torch.from_dlpack(case.coords), torch.from_dlpack(case.data)
    else:
        indices, values = torch.from_numpy(case.coords), torch.from_numpy(case.data)

    def fn():
        return torch.sparse_coo_tensor(indices, values, case.shape, check_invariants=False).coalesce()

    def result(t):
        coords = t.indices().cpu().numpy()
        return _linearize(coords, case.shape, np), t.values().cpu().numpy()

    return fn, result


def _impl_cupyx(case, ctx):
    try:
        import cupyx.scipy.sparse as csp
    except ImportError as exc:
        raise _Skip(f"cupyx not importable ({exc})") from None

    def fn():
        rows, cols, shape2 = _as_2d(case.coords, case.shape)
        m = csp.coo_matrix((case.data, (rows, cols)), shape=shape2)
        m.sum_duplicates()
        return m

    def result(m):
        rows, cols = _host(m.row).astype(np.int64), _host(m.col).astype(np.int64)
        return rows * m.shape[1] + cols, _host(m.data)

    return fn, result


def _impl_argsort(case, ctx):
    xp = ctx.xp
    return (lambda: xp.argsort(case.keys)), None


def _implementations(ctx):
    """``(name, factory, kind)`` in running order; kind is "ours", "peer" or "reference"."""
    if ctx.is_cuda:
        return [("gpusparse", _impl_gpusparse, "ours"), ("torch", _impl_torch, "peer"),
                ("cupyx", _impl_cupyx, "peer"), ("cupy.argsort", _impl_argsort, "reference")]
    return [("gpusparse", _impl_gpusparse, "ours"), ("scipy", _impl_scipy, "peer"),
            ("pydata", _impl_pydata, "peer"), ("torch", _impl_torch, "peer"),
            ("numpy.argsort", _impl_argsort, "reference")]


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
    """Row and callable of one implementation: the first call, timed and checked.

    The callable is None when the implementation is skipped, fails or
    computes something else; the row says which.
    """
    row = {"impl": name, "kind": kind, "status": "ok"}
    fn = None
    try:
        fn, result = factory(case, ctx)
        out, row["first_call_s"] = call_once(fn, ctx.device)
        if result is not None:
            problem = _check(*result(out), case, must_be_sorted=(kind == "ours"))
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
    """Time the checked callables in alternation (one by one if that fails)."""
    try:
        timings = time_interleaved(fns, ctx.device, target_s=ctx.target_s, warmed=True)
    except Exception:  # e.g. out of memory with every peer's pool held at once
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


def _add_rates(row, case, copy_gb_s):
    if "median_s" not in row:
        return
    t = row["median_s"]
    row["entries_per_s"] = case.k / t
    if row["kind"] == "reference":
        return
    d, v = len(case.shape), np.dtype(case.dtype).itemsize
    floor = _models.coalesce_floor_bytes(case.k, case.u, d, INDEX_BYTES, v)
    row["floor_bytes"] = floor
    row["gb_s_floor"] = floor / t / 1e9
    row["pct_copy_floor"] = 100 * row["gb_s_floor"] / copy_gb_s
    if case.order == "shuffled":
        model = _models.coalesce_sort_bytes(case.k, case.u, d, INDEX_BYTES, v,
                                            _models.key_bits(case.shape))
        row["sort_model_bytes"] = model
        row["gb_s_sort_model"] = model / t / 1e9
        row["pct_copy_sort_model"] = 100 * row["gb_s_sort_model"] / copy_gb_s


def run(ctx):
    """Yield one row per (case, implementation); see the module docstring.

    ``ctx.size`` (when set) overrides the number of entries.
    """
    k = getattr(ctx, "size", None) or SIZES[(ctx.is_cuda, ctx.quick)]
    copies = {}
    for case in _cases(ctx, k):
        d, v = len(case.shape), np.dtype(case.dtype).itemsize
        in_bytes = case.k * (d * INDEX_BYTES + v)
        if in_bytes not in copies:
            copies[in_bytes] = copy_bandwidth(in_bytes, ctx.xp, device=ctx.device,
                                              target_s=min(ctx.target_s, 0.5))
        copy = copies[in_bytes]
        rows, fns = {}, {}
        for name, factory, kind in _implementations(ctx):
            row = {"bench": NAME, "case": case.name, "shape": list(case.shape),
                   "shape_label": case.shape_label, "order": case.order, "dtype": case.dtype,
                   "entries": case.k, "unique": case.u, "copy_gb_s": copy["gb_s"]}
            result, fn = _first_call(name, kind, factory, case, ctx)
            rows[name] = {**row, **result}
            if fn is not None:
                fns[name] = fn
        _time_all(fns, rows, ctx)
        ours = rows.get("gpusparse", {}).get("median_s")
        for row in rows.values():
            row["load_1min"] = _load()
            _add_rates(row, case, copy["gb_s"])
            if row["kind"] != "ours" and ours and "median_s" in row:
                row["speedup"] = row["median_s"] / ours
            ctx.log(_progress(row))
            yield row


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _progress(row) -> str:
    head = f"{row['bench']} {row['case']:<22} {row['impl']:<14}"
    if row["status"] != "ok":
        return f"{head} {row['status']}: {row.get('error', '')}"
    text = f"{head} {row['median_s'] * 1e3:10.2f} ms  {row['entries_per_s'] / 1e6:8.1f} M/s"
    if "pct_copy_floor" in row:
        text += f"  {row['gb_s_floor']:7.2f} GB/s floor ({row['pct_copy_floor']:.0f}% copy)"
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
    """A Markdown table with one line per case and one column per peer."""
    cases, peers = {}, []
    for row in rows:
        cases.setdefault(row["case"], {})[row["impl"]] = row
        if row["impl"] != "gpusparse" and row["impl"] not in peers:
            peers.append(row["impl"])
    head = ["case", "entries", "unique", "gpusparse", "M entries/s", "GB/s floor",
            "% copy", "first call"] + peers
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, impls in cases.items():
        ours = impls.get("gpusparse", {})
        first = next(iter(impls.values()))
        ok = ours.get("status") == "ok"
        cells = [name, f"{first['entries']:,}", f"{first['unique']:,}",
                 _ms(ours["median_s"]) if ok else ours.get("status", ""),
                 f"{ours['entries_per_s'] / 1e6:.1f}" if ok else "",
                 f"{ours['gb_s_floor']:.2f}" if ok else "",
                 f"{ours['pct_copy_floor']:.0f}" if ok else "",
                 _ms(ours.get("first_call_s"))]
        cells += [_cell(impls.get(p)) for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), "
                 "the peer's median in parentheses. `*.argsort` sorts the precomputed linear "
                 "keys only (a sort floor, not a coalesce). GB/s floor counts "
                 "`k(dI+V) + u(dI+V)` bytes; % copy relates it to `dst[...] = src` of the input "
                 "bytes measured in the same run.")
    return "\n".join(lines)


def details(rows) -> str:
    """A Markdown table with every row."""
    head = ["case", "impl", "status", "median", "min", "first call", "repeats", "M entries/s",
            "GB/s floor", "% copy", "GB/s sort model", "% copy (sort)", "speedup", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def f(row, key, fmt):
        return fmt.format(row[key]) if key in row else ""

    for r in rows:
        ok = r["status"] == "ok"
        cells = [r["case"], r["impl"], r["status"], _ms(r["median_s"]) if ok else "",
                 _ms(r["min_s"]) if ok else "",
                 _ms(r["first_call_s"]) if "first_call_s" in r else "", f(r, "repeats", "{}"),
                 f"{r['entries_per_s'] / 1e6:.1f}" if ok else "",
                 f(r, "gb_s_floor", "{:.2f}"), f(r, "pct_copy_floor", "{:.0f}"),
                 f(r, "gb_s_sort_model", "{:.2f}"), f(r, "pct_copy_sort_model", "{:.0f}"),
                 f(r, "speedup", "{:.2f}"), str(r.get("error", "")).replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
