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
>>> from benchmarks import Context
>>> ctx = Context(device="cpu", quick=True, target_s=0.001, log=lambda m: None, size=512)
>>> rows = list(run(ctx))
>>> {r["status"] for r in rows if r["impl"] == "gpusparse"}
{'ok'}
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from benchmarks._timing import call_once, synchronize, time_call

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


class Skip(Exception):
    """The implementation is unavailable here; the message says why."""


def _import(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return __import__(name, fromlist=["_"])
    except ImportError as exc:
        raise Skip(f"{name} not importable ({exc})") from None


def _build_peer(name, inp):
    shape = (inp.n, inp.n)
    if name.startswith("scipy"):
        sp = _import("scipy.sparse")
        m = sp.csr_array((_host(inp.values), (_host(inp.rows), _host(inp.cols))), shape=shape)
        return m if name == "scipy_csr" else m.tocsc() if name == "scipy_csc" else m.tocoo()
    if name.startswith("cupyx"):
        csp = _import("cupyx.scipy.sparse")
        m = csp.csr_matrix((inp.values, (inp.rows, inp.cols)), shape=shape)
        return m if name == "cupyx_csr" else m.tocsc()
    if name == "pydata":
        sparse = _import("sparse")
        return sparse.COO(_host(inp.coords), _host(inp.values), shape=shape, has_duplicates=False,
                          sorted=True)
    if name == "torch":
        torch = _import("torch")
        if inp.ctx.is_cuda:
            if not torch.cuda.is_available():
                raise Skip("torch has no CUDA")
            idx, val = torch.from_dlpack(inp.coords), torch.from_dlpack(inp.values)
        else:
            idx, val = torch.from_numpy(_host(inp.coords)), torch.from_numpy(_host(inp.values))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.sparse_coo_tensor(idx, val, shape, check_invariants=False).coalesce()
    raise ValueError(name)


def torch_index(inp, arr):
    torch = _import("torch")
    return torch.from_dlpack(arr) if inp.ctx.is_cuda else torch.from_numpy(_host(arr))


# --------------------------------------------------------------------------
# Results in one canonical form, for the checks
# --------------------------------------------------------------------------

def _host(arr):
    if hasattr(arr, "get"):
        return arr.get()
    if type(arr).__module__.startswith("torch"):
        return arr.detach().cpu().numpy()
    return np.asarray(arr)


def canonical(obj):
    """``(shape, coords (d, u) sorted row-major, values)`` on the host, duplicates summed."""
    import gpusparse as gs
    if isinstance(obj, gs.SparseArray):
        c = obj.tocoo().coalesce()
        return tuple(c.shape), _host(c.coords), _host(c.data)
    mod = type(obj).__module__
    if mod.startswith("torch"):
        if obj.layout != __import__("torch").sparse_coo:
            obj = obj.to_sparse_coo()
        obj = obj.coalesce()
        return tuple(obj.shape), _host(obj.indices()), _host(obj.values())
    if mod.startswith("sparse"):
        coords, data = np.asarray(obj.coords, dtype=np.int64), np.asarray(obj.data)
    else:  # scipy / cupyx matrices and arrays
        c = obj.tocoo()
        coords = np.stack([_host(c.row), _host(c.col)]).astype(np.int64)
        data = _host(c.data)
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


def compare(got, expected) -> "str | None":
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

def free(ctx):
    if not ctx.is_cuda:
        return
    import cupy
    synchronize(ctx.device)
    cupy.get_default_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _error_text(exc) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run_cases(ctx, bench, cases, inp):
    """Yield rows for ``cases``: ``(case, [(impl, kind, factory)], extra)``; the first impl is gpusparse.

    ``factory(inp)`` returns a callable (or raises :class:`Skip`). Each
    peer's first result is checked against gpusparse's before timing.
    """
    for case, impls, extra in cases:
        reference, ours = None, None
        for impl, kind, factory in impls:
            row = {"bench": bench, "case": case, "impl": impl, "kind": kind, "status": "ok",
                   "entries": inp.k, "n": inp.n, **extra}
            try:
                fn = factory(inp)
                out, first = call_once(fn, ctx.device)
                row["first_call_s"] = first
                got = canonical(out)
                row["out_entries"] = int(got[1].shape[1])
                if reference is None:
                    reference = got
                else:
                    problem = compare(got, reference)
                    if problem:
                        row.update(status="mismatch", error=problem)
                del out
                if row["status"] == "ok":
                    row.update(time_call(fn, ctx.device, target_s=ctx.target_s, warmed=True).as_dict())
            except Skip as exc:
                row.update(status="skipped", error=str(exc))
            except Exception as exc:  # a failing implementation is a result, not a crash
                row.update(status="error", error=_error_text(exc))
            finally:
                free(ctx)
            row["load_1min"] = _load()
            if "median_s" in row:
                row["entries_per_s"] = inp.k / row["median_s"]
                if kind == "ours":
                    ours = row["median_s"]
                elif ours:
                    row["speedup"] = row["median_s"] / ours
            ctx.log(progress(row))
            yield row


def progress(row) -> str:
    head = f"{row['bench']} {row['case']:<24} {row['impl']:<10}"
    if row["status"] != "ok":
        return f"{head} {row['status']}: {row.get('error', '')}"
    text = f"{head} {row['median_s'] * 1e3:10.2f} ms"
    if "speedup" in row:
        text += f"  speedup {row['speedup']:.2f}"
    return text


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
    host_sel = _host(sel)

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

def ms(seconds) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def summary_table(rows, note) -> str:
    """One line per case: gpusparse's time, then each peer as speedup (time)."""
    cases, peers = {}, []
    for row in rows:
        cases.setdefault(row["case"], {})[row["impl"]] = row
        if row["impl"] != "gpusparse" and row["impl"] not in peers:
            peers.append(row["impl"])
    head = ["case", "entries", "out entries", "gpusparse", "first call"] + peers
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, impls in cases.items():
        ours = impls.get("gpusparse", {})
        ok = ours.get("status") == "ok"
        cells = [name, f"{ours.get('entries', 0):,}", f"{ours.get('out_entries', 0):,}",
                 ms(ours["median_s"]) if ok else ours.get("status", ""), ms(ours.get("first_call_s"))]
        for p in peers:
            r = impls.get(p)
            if r is None:
                cells.append("")
            elif r["status"] != "ok":
                cells.append(r["status"])
            else:
                cells.append(f"{r['speedup']:.2f} ({ms(r['median_s'])})" if "speedup" in r else ms(r["median_s"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", note]
    return "\n".join(lines)


def summarize(rows) -> str:
    return summary_table(rows, "Peer columns: peer time / gpusparse time (above 1: gpusparse is faster), "
                               "the peer's median in parentheses. Selections take 10**5 random rows or "
                               "columns with repeats; slices keep the middle half of the rows and 3/4 "
                               "of the columns.")
