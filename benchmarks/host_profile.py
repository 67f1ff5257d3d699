"""Host overhead of small operations: per-call times against peers, and where the Python time goes.

At sizes where the device's work takes microseconds, a call's time is its
host overhead: the Python layers, the launches, the allocations and the
synchronisations. This module times such calls of gpusparse and of its
peers on the same operands, and profiles gpusparse's calls with
:mod:`cProfile`, so that the functions worth slimming are known from one
run on a GPU::

    PYTHONPATH=. python3 -m benchmarks.host_profile --device cuda [--calls 200] [--top 12] [--out FILE]

For every operation (:data:`OPERATIONS`) it prints the first call (an
empty kernel cache makes it NVRTC's compile time on a fresh GPU machine),
the median call of gpusparse and of each peer (timed in alternation,
:func:`benchmarks._timing.time_interleaved`), and the ``--top`` functions
by own time over ``--calls`` profiled calls, in microseconds per call. On
the CPU the peers are SciPy's; on a GPU cupyx's and torch's.

Examples
--------
>>> text = profile_operation("spmv", "cpu", calls=3, top=2)
>>> "spmv on cpu" in text and "scipy" in text
True
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import numpy as np

from benchmarks import _timing

__all__ = ["OPERATIONS", "main", "profile_operation"]

#: Rows of the small matrix, stored entries per row, and the dense operand's columns for SpMM.
ROWS, PER_ROW, COLUMNS = 4096, 16, 8


def _matrix(rows: int, seed: int = 0):
    """A SciPy CSR of ``rows`` rows, ``PER_ROW`` random columns each (canonical, float64)."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.choice(rows, size=(rows, PER_ROW)), axis=1).ravel()
    indptr = np.arange(0, rows * PER_ROW + 1, PER_ROW)
    m = sp.csr_matrix((rng.random(cols.size) + 0.5, cols, indptr), shape=(rows, rows))
    m.sum_duplicates()
    return m


def _peers(device, m, make_cupyx, make_torch, make_scipy):
    """``{name: fn}`` of the peers that exist on ``device``."""
    peers = {}
    if device == "cpu":
        peers["scipy"] = make_scipy(m)
        return peers
    try:
        import cupyx.scipy.sparse as csp
        peers["cupyx"] = make_cupyx(csp, m)
    except Exception:  # noqa: BLE001 (a missing peer is a missing column)
        pass
    try:
        import torch
        if torch.cuda.is_available() and make_torch is not None:
            peers["torch"] = make_torch(torch, m)
    except Exception:  # noqa: BLE001
        pass
    return peers


def _product(operand_shape):
    """The set-up of ``A @ X`` for a dense ``X`` of ``operand_shape(rows)`` (SpMV for 1-D, SpMM for 2-D)."""
    def setup(device, gs, xp, rows):
        m = _matrix(rows)
        a = gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device=device)
        x = xp.ones(operand_shape(rows))
        host_x = np.ones(operand_shape(rows))

        def cupyx_impl(csp, m):
            c = csp.csr_matrix(m)
            return lambda: c @ x

        def torch_impl(torch, m):
            t = torch.sparse_csr_tensor(*(torch.as_tensor(v, device="cuda") for v in (m.indptr, m.indices, m.data)),
                                        size=m.shape)
            xt = torch.from_dlpack(x)
            return lambda: t @ xt

        return (lambda: a @ x), _peers(device, m, cupyx_impl, torch_impl, lambda m: (lambda: m @ host_x))
    return setup


_spmv = _product(lambda rows: (rows,))
_spmm = _product(lambda rows: (rows, COLUMNS))


def _coalesce(device, gs, xp, rows):
    m = _matrix(rows).tocoo()
    order = np.random.default_rng(1).permutation(m.nnz)
    row, col, vals = m.row[order].astype(np.int64), m.col[order].astype(np.int64), m.data[order]
    coords = xp.asarray(np.stack([row, col]))
    data = xp.asarray(vals)

    def cupyx_impl(csp, m):
        r, c, v = xp.asarray(row), xp.asarray(col), xp.asarray(vals)
        return lambda: csp.coo_matrix((v, (r, c)), shape=m.shape).sum_duplicates()

    def torch_impl(torch, m):
        i, v = torch.from_dlpack(coords), torch.from_dlpack(data)
        return lambda: torch.sparse_coo_tensor(i, v, m.shape).coalesce()

    def scipy_impl(m):
        import scipy.sparse as sp
        return lambda: sp.coo_matrix((vals, (row, col)), shape=m.shape).tocsr()

    return ((lambda: gs.COO(coords, data, shape=m.shape, check=False).coalesce()),
            _peers(device, m, cupyx_impl, torch_impl, scipy_impl))


def _add(device, gs, xp, rows):
    m, n = _matrix(rows, 0), _matrix(rows, 1)
    a = gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device=device)
    b = gs.CSR(n.indptr, n.indices, n.data, shape=n.shape, device=device)

    def cupyx_impl(csp, m):
        ca, cb = csp.csr_matrix(m), csp.csr_matrix(n)
        return lambda: ca + cb

    return (lambda: a + b), _peers(device, m, cupyx_impl, None, lambda m: (lambda: m + n))


def _sum_rows(device, gs, xp, rows):
    m = _matrix(rows)
    a = gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device=device)

    def cupyx_impl(csp, m):
        c = csp.csr_matrix(m)
        return lambda: c.sum(axis=1)

    return (lambda: a.sum(axis=1)), _peers(device, m, cupyx_impl, None, lambda m: (lambda: m.sum(axis=1)))


def _bfs_level(device, gs, xp, rows):
    """One BFS level's product: ``mxv`` with ``min_second`` under the complement of the visited set."""
    m = _matrix(rows)
    a = gs.CSR(m.indptr, m.indices, m.data, shape=m.shape, device=device)
    frontier = xp.full(rows, np.iinfo(np.int64).max, dtype=np.int64)
    frontier[:64] = xp.arange(64)
    visited = xp.zeros(rows, dtype=bool)
    visited[:64] = True
    return (lambda: gs.mxv(a, frontier, "min_second", mask=visited, complement=True)), {}


#: name -> set-up ``(device, gpusparse, array module, rows) -> (fn, {peer: fn})``
OPERATIONS = {
    "spmv": _spmv,
    "spmm": _spmm,
    "coalesce": _coalesce,
    "add": _add,
    "sum_rows": _sum_rows,
    "bfs_level": _bfs_level,
}


def profile_operation(name: str, device: str, calls: int, top: int, rows: int = ROWS) -> str:
    """The report of one operation (first call, medians against the peers, top functions by own time)."""
    import gpusparse as gs
    from gpusparse._device import Device, xp_for

    xp = xp_for(Device.parse(device))
    fn, peers = OPERATIONS[name](device, gs, xp, rows)
    _, first = _timing.call_once(fn, device)
    for peer in peers.values():
        _timing.call_once(peer, device)
    timings = _timing.time_interleaved({"gpusparse": fn, **peers}, device, target_s=0.2)
    ours = timings["gpusparse"].median_s
    lines = [f"### {name} on {device}", "",
             f"first call {first * 1e3:.1f} ms; median per call (peer / gpusparse): gpusparse {ours * 1e6:.1f} us"
             + "".join(f", {p} {t.median_s * 1e6:.1f} us ({t.median_s / ours:.2f}x)"
                       for p, t in timings.items() if p != "gpusparse"), ""]
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(calls):
        fn()
    _timing.synchronize(device)
    profiler.disable()
    wall = (time.perf_counter() - start) / calls
    ranked = sorted(pstats.Stats(profiler).stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    lines.append(f"{calls} profiled calls, {wall * 1e6:.1f} us per call under the profiler; "
                 f"top {top} functions by own time (us per call, own / cumulative, calls per call):")
    lines.append("")
    for (path, line, func), (_, ncalls, tottime, cumtime, _) in ranked:
        where = "/".join(path.replace("\\", "/").split("/")[-2:])
        lines.append(f"    {tottime / calls * 1e6:8.1f} {cumtime / calls * 1e6:8.1f} {ncalls / calls:6.1f}"
                     f"  {where}:{line}({func})")
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    """Run the chosen operations; print and return the report (also written to ``--out``)."""
    p = argparse.ArgumentParser(prog="python3 -m benchmarks.host_profile", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--calls", type=int, default=200, help="profiled calls per operation (default %(default)s)")
    p.add_argument("--top", type=int, default=12, help="functions listed per operation (default %(default)s)")
    p.add_argument("--rows", type=int, default=ROWS, help="rows of the square matrices (default %(default)s)")
    p.add_argument("--only", default=",".join(OPERATIONS), help="comma-separated operations (default: all)")
    p.add_argument("--out", default=None, help="also write the report to this file")
    args = p.parse_args(argv)
    if args.device != "cpu":
        from benchmarks import _emulation
        _emulation.install()  # the emulated CUDA device, where GPUSPARSE_CUDA_EMULATION asks for it
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(OPERATIONS))
    if unknown:
        p.error(f"--only: unknown {unknown}; choose from {', '.join(OPERATIONS)}")
    parts = [f"# Host overhead per call ({args.rows} rows, {PER_ROW} entries per row, float64)\n"]
    for name in names:
        try:
            text = profile_operation(name, args.device, args.calls, args.top, args.rows)
        except Exception as exc:  # noqa: BLE001 (one broken operation does not hide the others)
            text = f"### {name} on {args.device}\n\nerror: {type(exc).__name__}: {exc}\n"
        print(text, flush=True)
        parts.append(text)
    report = "\n".join(parts)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(report)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
